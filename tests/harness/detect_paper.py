"""A test-only paper for the detectability machinery: a planted gap, a positive control, a
substrate gate and a protocol knob, each set from the Config so a test can move one at a time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.harness import (
    Claim,
    ClaimArms,
    ExperimentConfig,
    SeedOutput,
    SubstrateCheck,
    noninferior,
    paired_claim,
)


@dataclass(frozen=True)
class Config(ExperimentConfig):
    gap: float = 0.2  # the method's planted improvement over the baseline
    noise: float = 0.01  # per-seed noise of the gap
    control_gap: float = 0.0  # what the control (no mechanism) gains over the baseline
    health: float = 1.0  # the substrate's health metric (gate: >= 0.5)
    knob: float = 1.0  # a protocol knob that scales the method's gap (PROTOCOL_KNOBS)

    BOUNDS = {"gap": (None, None), "control_gap": (None, None), "noise": (0.0, None)}

    @classmethod
    def smoke(cls):
        return cls(seeds=(0, 1, 2))

    @classmethod
    def quick(cls):
        return cls(seeds=(0, 1, 2, 3))

    @classmethod
    def full(cls):
        return cls(seeds=(0, 1, 2, 3))


def run(config: Config, seed: int) -> SeedOutput:
    rng = np.random.default_rng(seed)
    base = 1.0 + 0.1 * rng.random()
    noise = config.noise * rng.standard_normal(4)
    return SeedOutput(metrics={
        "baseline": {"score": base, "health": config.health},
        "method": {"score": base + config.gap * config.knob + noise[0]},
        "control": {"score": base + config.control_gap + noise[1]},
        "oracle": {"score": base + 0.2 + noise[2]},  # the claimed effect, planted
    })


SUBSTRATE = (SubstrateCheck("learns", "the substrate learns the task", arm="baseline",
                            metric="health", low=0.5),)

PROTOCOL_KNOBS = {"knob": (1.0, 0.0)}

CLAIMS = (
    paired_claim(id="gap", statement="the method beats the baseline", paper_value="+0.1",
                 metric="score (higher is better)", scale="toy", key="score", method="method",
                 baseline="baseline", control="control", control_description="no mechanism",
                 effect=0.1, effect_source="test", gates=("learns",), positive="oracle"),
    Claim(id="noninf", statement="the method is not worse than the baseline", paper_value="-",
          metric="score", scale="toy", rule="mean - 2 s.e. > -0.05",
          decide=lambda m, c: noninferior(m["method"]["score"], m["baseline"]["score"], margin=0.05),
          control_description="the control through the same rule",
          control=lambda m, c: noninferior([x - 1.0 for x in m["control"]["score"]],
                                           m["baseline"]["score"], margin=0.05),
          arms=ClaimArms(method="method", baselines=("baseline",), control="control"),
          effect=0.05, effect_source="the margin"),
)

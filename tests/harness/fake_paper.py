"""A test-only paper: a coin whose bias the 'method' estimates better than the 'baseline'."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.harness import Claim, ClaimArms, ExperimentConfig, SeedOutput, paired_improvement


@dataclass(frozen=True)
class Config(ExperimentConfig):
    n: int = 200
    noise: float = 0.5
    fail: bool = False
    fail_at_seed: int = -1  # raise in this seed (the earlier seeds complete)
    degrade: bool = False  # the baseline matches the method: the claim must fail
    control_is_baseline: bool = False  # the control arm is a copy of the baseline: POWERLESS
    control_has_effect: bool = False  # the control is as good as the method: explains the effect

    BOUNDS = {"n": (1, None), "noise": (0.0, None), "fail_at_seed": (-1, None)}

    @classmethod
    def smoke(cls):
        return cls(seeds=(0, 1, 2), n=100)

    @classmethod
    def quick(cls):
        return cls(seeds=(0, 1, 2, 3), n=400)

    @classmethod
    def full(cls):
        return cls(seeds=tuple(range(8)), n=2000)


def _error(rng, n, noise):
    x = rng.normal(0.3, noise, size=n)
    return abs(float(x.mean()) - 0.3)


def run(config: Config, seed: int) -> SeedOutput:
    if config.fail or seed == config.fail_at_seed:
        raise RuntimeError("the fake paper was told to fail")
    rng = np.random.default_rng(seed)
    method = _error(rng, config.n, config.noise)
    baseline = method + (-0.1 if config.degrade else 0.1) + 0.01 * rng.random()
    control = baseline + 0.01 * (rng.random() - 0.5)  # lacks the mechanism: like the baseline
    if config.control_is_baseline:
        control = baseline
    if config.control_has_effect:
        control = method - 0.001
    return SeedOutput(
        metrics={"method": {"error": method}, "baseline": {"error": baseline},
                 "control": {"error": control}},
        extras={"curve": [method, baseline]},
    )


METRICS = {("method", "baseline", "control"): ("error",)}

CLAIMS = (
    Claim(
        id="better",
        statement="the method's error is lower than the baseline's",
        paper_value="qualitative",
        metric="absolute error (lower is better)",
        scale="toy",
        rule="method < baseline in every seed and mean gap > 2 s.e.",
        decide=lambda m, c: paired_improvement(m["method"]["error"], m["baseline"]["error"],
                                               higher_is_better=False),
        control_description="the method without its mechanism, through the same rule",
        control=lambda m, c: paired_improvement(m["control"]["error"], m["baseline"]["error"],
                                                higher_is_better=False),
        arms=ClaimArms(method="method", baselines=("baseline",), control="control"),
    ),
)


def plot(config, outputs, outdir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([o.extras["curve"] for o in outputs])
    path = outdir / "curve.png"
    fig.savefig(path)
    plt.close(fig)
    return [path]

"""Claims: what a paper says, and the rule that judges it, declared in code before the run.

A :class:`Claim` holds the paper's statement (in our words), the paper's figure, the metric, the
scale we run at, the decision rule as text *and* as code (``decide``), and a negative control whose
``control`` callable applies the same rule to a run where the mechanism is disabled. The control
must come out as anything but ``reproduced``: a check that cannot fail is not evidence.

``decide`` and ``control`` receive the aggregated metrics ``{arm: {metric: [value per seed]}}``
and the config, and return a :class:`Decision`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._json import to_jsonable

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)

Metrics = Mapping[str, Mapping[str, Sequence[float]]]


@dataclass(frozen=True)
class Decision:
    """The outcome of applying a rule to measured metrics.

    ``ours`` is a short human summary of our number(s) (e.g. ``"0.81 vs 0.62"``), ``evidence`` a
    JSON-able dict with the quantities the rule looked at.
    """

    verdict: str
    ours: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


Rule = Callable[[Metrics, Any], Decision]


@dataclass(frozen=True)
class Claim:
    """A paper's headline claim with its decision rule and negative control.

    Parameters
    ----------
    id : str
        Short identifier, unique within the paper (``"power"``, ``"deficit"``).
    statement : str
        What the paper claims, in our words.
    paper_value : str
        The paper's own figure for it (or ``"qualitative"``), with its source (table/figure).
    metric : str
        The metric and its direction, e.g. ``"test power (higher is better)"``.
    scale : str
        What we run it at ("laptop-scale: ...").
    rule : str
        The decision rule as text, identical in meaning to ``decide``.
    decide : callable
        ``decide(metrics, config) -> Decision``.
    control_description : str
        What the negative control disables.
    control : callable
        ``control(metrics, config) -> Decision``: the same rule applied to the control arm.
    """

    id: str
    statement: str
    paper_value: str
    metric: str
    scale: str
    rule: str
    decide: Rule
    control_description: str
    control: Rule


def judge(claim: Claim, metrics: Metrics, config: Any) -> dict[str, Any]:
    """Apply a claim's rule and its control; return the result-file entry for this claim."""
    decision = claim.decide(metrics, config)
    control = claim.control(metrics, config)
    return {
        "id": claim.id,
        "statement": claim.statement,
        "paper_value": claim.paper_value,
        "metric": claim.metric,
        "scale": claim.scale,
        "rule": claim.rule,
        "verdict": decision.verdict,
        "ours": decision.ours,
        "evidence": to_jsonable(decision.evidence),
        "negative_control": {
            "description": claim.control_description,
            "verdict": control.verdict,
            "ours": control.ours,
            "evidence": to_jsonable(control.evidence),
            # the control must not pass: if it does, the claim's check is powerless
            "passes": control.verdict != REPRODUCED,
        },
    }


# ----------------------------------------------------------------------------------------------
# Reusable rules
# ----------------------------------------------------------------------------------------------


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error (0 for a single value) of finite values."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    se = float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else 0.0
    return float(arr.mean()), se


def paired_improvement(
    method: Sequence[float],
    baseline: Sequence[float],
    *,
    higher_is_better: bool = True,
    min_gap: float = 0.0,
    se_mult: float = 2.0,
    all_seeds: bool = True,
    label: str = "",
) -> Decision:
    """Rule: the method beats the baseline on paired seeds.

    ``reproduced`` when the mean paired gap (oriented so positive = method better) exceeds both
    ``min_gap`` and ``se_mult`` standard errors, and (if ``all_seeds``) the method is better in
    every seed. ``not reproduced`` when the mean gap is <= 0 (or fails the rule with a clear sign);
    ``inconclusive`` when the gap is positive but within noise.
    """
    m = np.asarray(method, dtype=float)
    b = np.asarray(baseline, dtype=float)
    if m.shape != b.shape or m.size == 0:
        raise ValueError(f"paired rule needs equal non-empty per-seed lists, got {m.shape}, {b.shape}")
    sign = 1.0 if higher_is_better else -1.0
    gaps = sign * (m - b)
    mean, se = mean_se(gaps)
    every = bool(np.all(gaps > 0))
    evidence = {
        "method": m.tolist(),
        "baseline": b.tolist(),
        "gap_mean": mean,
        "gap_se": se,
        "better_in_every_seed": every,
        "min_gap": min_gap,
        "se_mult": se_mult,
    }
    ours = f"{label}{m.mean():.4g} vs {b.mean():.4g} (gap {sign * mean:+.3g} ± {se:.2g})"
    passes = mean > min_gap and mean > se_mult * se and (every or not all_seeds)
    if passes:
        return Decision(REPRODUCED, ours, evidence)
    if mean <= 0 or (m.size >= 3 and mean + se_mult * se < min_gap):
        return Decision(NOT_REPRODUCED, ours, evidence)
    return Decision(INCONCLUSIVE, ours, evidence)


def threshold_rule(
    values: Sequence[float],
    *,
    low: float = -math.inf,
    high: float = math.inf,
    label: str = "",
) -> Decision:
    """Rule: the seed-mean lies in ``[low, high]``."""
    mean, se = mean_se(values)
    evidence = {"values": list(map(float, values)), "mean": mean, "se": se, "low": low, "high": high}
    ok = low <= mean <= high
    return Decision(REPRODUCED if ok else NOT_REPRODUCED, f"{label}{mean:.4g} ± {se:.2g}", evidence)


def all_of(*decisions: Decision, ours: str | None = None) -> Decision:
    """Combine decisions: reproduced iff all are; not reproduced if any is; else inconclusive."""
    verdicts = [d.verdict for d in decisions]
    if all(v == REPRODUCED for v in verdicts):
        verdict = REPRODUCED
    elif any(v == NOT_REPRODUCED for v in verdicts):
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    evidence = {f"part{i}": {"verdict": d.verdict, **d.evidence} for i, d in enumerate(decisions)}
    return Decision(verdict, ours if ours is not None else "; ".join(d.ours for d in decisions), evidence)

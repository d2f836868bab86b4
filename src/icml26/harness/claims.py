"""Claims: what a paper says, and the rule that judges it, declared in code before the run.

A :class:`Claim` holds the paper's statement (in our words), the paper's figure, the metric, the
scale we run at, its named arms (:class:`ClaimArms`: the method, the baselines and the negative
control, as arm names of the metrics), the decision rule as text *and* as code (``decide``), and a
negative control whose ``control`` callable applies the same rule to the control arm: the strongest
arm that lacks the mechanism (``../shared/design/CLAIMS.md`` rule 1).

``decide`` and ``control`` receive the aggregated metrics ``{arm: {metric: [value per seed]}}``
and the config, and return a :class:`Decision`. :func:`judge` records which metrics each rule
read; after the run it checks two ways a claim's check can be unable to fail:

* **POWERLESS**: the control arm's per-seed values of every metric the control rule read are
  identical to another arm's (the control is that arm under another name, so the check could
  not fail);
* **explained**: the control passes the rule too. Then the claim's verdict is ``not reproduced``
  and ``explained_by`` names the control arm: the effect is there without the mechanism.

A claim judged per regime of a swept condition returns a :class:`Decision` with ``regimes`` (see
:func:`per_regime`).
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
class Regime:
    """The verdict of a claim in one regime of a swept condition (e.g. ``"norm ratio 0.5"``)."""

    condition: str
    verdict: str
    ours: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


@dataclass(frozen=True)
class Decision:
    """The outcome of applying a rule to measured metrics.

    ``ours`` is a short human summary of our number(s) (e.g. ``"0.81 vs 0.62"``), ``evidence`` a
    JSON-able dict with the quantities the rule looked at, ``regimes`` the per-regime verdicts of a
    claim judged over a swept condition (empty otherwise).
    """

    verdict: str
    ours: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    regimes: tuple[Regime, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


@dataclass(frozen=True)
class ClaimArms:
    """The arms a claim compares, by their names in the metrics ``{arm: {metric: [...]}}``.

    ``method`` carries the paper's mechanism, ``baselines`` are what the paper compares against,
    ``control`` is the strongest arm that lacks the mechanism (CLAIMS.md rule 1). The control must
    differ from the method and from every baseline; an arm may be shared across claims.
    """

    method: str
    control: str
    baselines: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = (self.method, self.control, *self.baselines)
        if not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"arm names must be non-empty strings, got {names}")
        if isinstance(self.baselines, str):
            raise TypeError("baselines must be a tuple of arm names, not a string")
        if self.control == self.method:
            raise ValueError(f"the control arm {self.control!r} is the method arm: it cannot fail")
        if self.control in self.baselines:
            raise ValueError(f"the control arm {self.control!r} is a baseline arm: the rule "
                             "applied to it compares the baseline with itself")

    @property
    def names(self) -> tuple[str, ...]:
        return (self.method, *self.baselines, self.control)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "baselines": list(self.baselines), "control": self.control}


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
        What the negative control arm lacks (and why it is the strongest such arm).
    control : callable
        ``control(metrics, config) -> Decision``: the same rule applied to the control arm.
    arms : ClaimArms
        The arms by name; ``arms.control`` is the arm the ``control`` rule judges.
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
    arms: ClaimArms | None = None


class _Recorder(Mapping):
    """A read-only view of the metrics that records which ``(arm, metric)`` a rule reads."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self.read: set[tuple[str, str]] = set()

    def __getitem__(self, arm: str) -> Mapping[str, Sequence[float]]:
        return _ArmRecorder(arm, self._metrics[arm], self.read)

    def __iter__(self):
        return iter(self._metrics)

    def __len__(self) -> int:
        return len(self._metrics)


class _ArmRecorder(Mapping):
    def __init__(self, arm: str, per_metric: Mapping[str, Sequence[float]],
                 read: set[tuple[str, str]]) -> None:
        self._arm, self._per_metric, self._read = arm, per_metric, read

    def __getitem__(self, name: str) -> Sequence[float]:
        value = self._per_metric[name]
        self._read.add((self._arm, name))
        return value

    def __iter__(self):
        return iter(self._per_metric)

    def __len__(self) -> int:
        return len(self._per_metric)


def _same(a: Sequence[float], b: Sequence[float]) -> bool:
    if len(a) != len(b):
        return False
    return all((x == y) or (isinstance(x, float) and isinstance(y, float) and math.isnan(x)
                            and math.isnan(y)) for x, y in zip(a, b, strict=True))


def identical_arm(metrics: Metrics, arm: str, names: Sequence[str]) -> str | None:
    """The first other arm whose per-seed values equal ``arm``'s on every metric in ``names``.

    ``names`` are the metrics a rule read for ``arm``; an arm that lacks one of them, or that has
    none of them, is not identical. Returns ``None`` when no arm is identical.
    """
    if not names or arm not in metrics:
        return None
    for other, per_metric in metrics.items():
        if other == arm:
            continue
        if all(n in per_metric and _same(metrics[arm][n], per_metric[n]) for n in names):
            return other
    return None


def judge(claim: Claim, metrics: Metrics, config: Any) -> dict[str, Any]:
    """Apply a claim's rule and its control; return the result-file entry for this claim.

    The control rule's reads of the control arm decide the POWERLESS check (see the module
    docstring); a control that passes the rule turns the verdict into ``not reproduced``.
    """
    decision = claim.decide(metrics, config)
    recorder = _Recorder(metrics)
    control = claim.control(recorder, config)
    entry: dict[str, Any] = {
        "id": claim.id,
        "statement": claim.statement,
        "paper_value": claim.paper_value,
        "metric": claim.metric,
        "scale": claim.scale,
        "rule": claim.rule,
        "verdict": decision.verdict,
        "ours": decision.ours,
        "evidence": to_jsonable(decision.evidence),
    }
    if claim.arms is not None:
        entry["arms"] = claim.arms.to_dict()
    if decision.regimes:
        entry["regimes"] = [{"condition": r.condition, "verdict": r.verdict, "ours": r.ours}
                            for r in decision.regimes]
    nc: dict[str, Any] = {
        "description": claim.control_description,
        "verdict": control.verdict,
        "ours": control.ours,
        "evidence": to_jsonable(control.evidence),
        "passes": control.verdict != REPRODUCED,
    }
    if claim.arms is not None:
        arm = claim.arms.control
        nc["arm"] = arm
        read = sorted(n for a, n in recorder.read if a == arm)
        if not read:
            raise ValueError(f"claim {claim.id!r}: the control rule never read its control arm "
                             f"{arm!r} (declared arms and rule disagree)")
        nc["metrics_read"] = read
        twin = identical_arm(metrics, arm, read)
        if twin is not None:
            nc["identical_to"] = twin
            nc["passes"] = False
        if control.verdict == REPRODUCED and decision.verdict == REPRODUCED and twin is None:
            entry["verdict"] = NOT_REPRODUCED
            entry["explained_by"] = arm
            entry["ours"] = f"{decision.ours} [explained by control arm {arm!r}, which passes too]"
    # POWERLESS: the control is another arm under a new name, so the check could not fail. A
    # control that passes is not powerless: with the method passing too it explains the effect
    # (verdict "not reproduced", ``explained_by``); with the method failing, the alternative
    # works where the method does not, which the report says.
    nc["powerless"] = "identical_to" in nc
    entry["negative_control"] = nc
    return entry


def paired_claim(
    *,
    id: str,
    statement: str,
    paper_value: str,
    metric: str,
    scale: str,
    key: str,
    method: str,
    baseline: str,
    control: str,
    control_description: str,
    higher_is_better: bool = True,
    min_gap: float = 0.0,
    extra_baselines: tuple[str, ...] = (),
) -> Claim:
    """The most common claim shape in one call: "``method`` beats ``baseline`` on metric ``key``
    in every seed by more than 2 s.e. (and ``min_gap``)", with the control arm run through the
    same rule against the same baseline. The rule text is generated from the arguments, so the
    text and the code cannot disagree."""
    better = "higher" if higher_is_better else "lower"
    gap = f" and > {min_gap:g}" if min_gap else ""
    rule = (f"{method} {better} than {baseline} on {key} in every seed, mean paired gap > 2 s.e."
            f"{gap}")

    def judge_arm(arm: str) -> Rule:
        return lambda m, c: paired_improvement(m[arm][key], m[baseline][key],
                                               higher_is_better=higher_is_better, min_gap=min_gap,
                                               label=f"{arm} vs {baseline}: ")

    return Claim(id=id, statement=statement, paper_value=paper_value, metric=metric, scale=scale,
                 rule=rule, decide=judge_arm(method), control_description=control_description,
                 control=judge_arm(control),
                 arms=ClaimArms(method=method, baselines=(baseline, *extra_baselines),
                                control=control))


def check_claims(claims: Sequence[Claim], arms_produced: set[str] | None = None) -> None:
    """Refuse claims that cannot be judged: duplicate ids, missing arms, unknown arm names.

    ``arms_produced`` (the arms a run returned) adds the check that every named arm exists.
    """
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"duplicate claim ids {dup}")
    for c in claims:
        if c.arms is None:
            raise ValueError(f"claim {c.id!r} names no arms (Claim(arms=ClaimArms(...)))")
        if arms_produced is not None:
            missing = [a for a in c.arms.names if a not in arms_produced]
            if missing:
                raise ValueError(f"claim {c.id!r} names arms {missing} that the run never produced; "
                                 f"it produced {sorted(arms_produced)}")


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


def per_regime(
    regimes: Sequence[tuple[str, Decision]],
    *,
    require: str | int = "all",
    label: str = "",
) -> Decision:
    """Judge a claim per regime of a swept condition; return one overall decision.

    Parameters
    ----------
    regimes : sequence of (condition, Decision)
        One decision per regime, in sweep order (e.g. ``("norm ratio 2", paired_improvement(...))``).
    require : "all" | "any" | int
        How many regimes must be ``reproduced`` for the overall verdict to be: every one, at least
        one, or at least ``require``. The overall verdict is ``not reproduced`` when that count can
        no longer be reached even if every inconclusive regime were reproduced, else
        ``inconclusive``.

    The summary reads "reproduced in 3 of 5 regimes: wins at a, b, c; loses at d; ties at e"
    (*ties* = inconclusive). The returned decision carries every regime in ``regimes``.
    """
    if not regimes:
        raise ValueError("per_regime needs at least one regime")
    names = [c for c, _ in regimes]
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:  # the evidence is keyed by regime name: a repeat would silently overwrite one
        raise ValueError(f"per_regime: regime names must be distinct, repeated: {dupes}")
    n = len(regimes)
    if require == "all":
        need = n
    elif require == "any":
        need = 1
    elif isinstance(require, int) and not isinstance(require, bool) and 1 <= require <= n:
        need = require
    else:
        raise ValueError(f"require must be 'all', 'any' or an int in [1, {n}], got {require!r}")
    wins = [c for c, d in regimes if d.verdict == REPRODUCED]
    ties = [c for c, d in regimes if d.verdict == INCONCLUSIVE]
    losses = [c for c, d in regimes if d.verdict == NOT_REPRODUCED]
    if len(wins) >= need:
        verdict = REPRODUCED
    elif len(wins) + len(ties) < need:
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    parts = [f"wins at {', '.join(wins)}" if wins else "",
             f"loses at {', '.join(losses)}" if losses else "",
             f"ties at {', '.join(ties)}" if ties else ""]
    ours = f"{label}reproduced in {len(wins)} of {n} regimes (needs {need}): " + \
        "; ".join(p for p in parts if p)
    evidence = {"require": need, "regimes": {c: {"verdict": d.verdict, "ours": d.ours, **d.evidence}
                                             for c, d in regimes}}
    return Decision(verdict, ours, evidence,
                    regimes=tuple(Regime(c, d.verdict, d.ours) for c, d in regimes))

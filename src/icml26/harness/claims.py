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

A protocol must also be able to *succeed* (``../shared/design/CLAIMS.md`` rules 8-10). After the
rule and the control, :func:`judge` downgrades a ``reproduced`` / ``not reproduced`` to
``inconclusive`` and says why (``inconclusive_reason``) when

* **substrate**: a substrate gate the claim depends on (``Claim.gates``, names of the paper's
  :class:`SubstrateCheck` s, measured in the same run) failed;
* **seeds**: the rule reads a standard error (``Decision.uses_se``) and fewer than 3 seeds ran;
* **underpowered**: the rule's minimum detectable effect (``Decision.mde``: the gap that would just
  pass given the s.e. it measured) exceeds the effect the claim is about (``Claim.effect``);
* **positive control**: the claim names an arm with the effect planted by construction
  (``Claim.positive_arm``) and the same rule does not pass it.

When the control passes as well as the method, the method is judged against the control with the
same rule (``Claim.beyond``): beating it is ``reproduced`` with ``beyond_control: true``; otherwise
``not reproduced`` with ``explained_by``. A claim of ``kind="theorem_check"`` (a numerical check of
a formal statement, not a claim about a method) reports ``numerically consistent`` /
``not consistent`` instead of reproduced / not reproduced.
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
NUMERICALLY_CONSISTENT = "numerically consistent"
NOT_CONSISTENT = "not consistent"
RULE_VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)  # what a rule (a Decision) returns
VERDICTS = (*RULE_VERDICTS, NUMERICALLY_CONSISTENT, NOT_CONSISTENT)  # what a result may hold
CLAIM_KINDS = ("method", "theorem_check")
MIN_SE_SEEDS = 3  # a rule that reads an s.e. needs at least this many seeds (CLAIMS.md rule 8)

Metrics = Mapping[str, Mapping[str, Sequence[float]]]


@dataclass(frozen=True)
class Regime:
    """The verdict of a claim in one regime of a swept condition (e.g. ``"norm ratio 0.5"``)."""

    condition: str
    verdict: str
    ours: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in RULE_VERDICTS:
            raise ValueError(f"verdict must be one of {RULE_VERDICTS}, got {self.verdict!r}")


@dataclass(frozen=True)
class Decision:
    """The outcome of applying a rule to measured metrics.

    ``ours`` is a short human summary of our number(s) (e.g. ``"0.81 vs 0.62"``), ``evidence`` a
    JSON-able dict with the quantities the rule looked at, ``regimes`` the per-regime verdicts of a
    claim judged over a swept condition (empty otherwise).

    Detectability (CLAIMS.md rule 8): ``mde`` is the rule's minimum detectable effect in the units
    of its decision (for a paired rule the gap that would just pass given the s.e. it measured;
    ``inf`` when the spread could not be measured, ``0`` for an exact computation), ``n`` the number
    of seeds it read, ``uses_se`` whether the rule reads a standard error (then it needs
    ``MIN_SE_SEEDS`` seeds). The helpers below fill them; a hand-written rule sets them itself.
    ``effect`` is a leg's own built-in effect (a non-inferiority leg's margin), so that
    :func:`all_of` can name the legs that cannot pass given their noise (``weak_legs``).
    """

    verdict: str
    ours: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    regimes: tuple[Regime, ...] = ()
    mde: float | None = None
    n: int | None = None
    uses_se: bool = False
    effect: float | None = None  # a leg's own built-in effect (a non-inferiority margin)
    weak_legs: tuple[str, ...] = ()  # legs of a combined rule whose mde exceeds their own effect

    def __post_init__(self) -> None:
        if self.verdict not in RULE_VERDICTS:
            raise ValueError(f"verdict must be one of {RULE_VERDICTS}, got {self.verdict!r}")
        if self.mde is not None and (math.isnan(self.mde) or self.mde < 0):
            raise ValueError(f"mde must be >= 0 (inf when unmeasurable), got {self.mde!r}")


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
    effect : float
        The effect the claim is about, in the units of the rule's decision (the paper's number
        where it gives one, else the smallest effect that matters); ``effect_source`` says where it
        comes from. The harness compares it with the rule's minimum detectable effect: a protocol
        whose mde exceeds it cannot tell, and its verdict is ``inconclusive (underpowered)``.
    gates : tuple of str
        Names of the paper's :class:`SubstrateCheck` s this claim needs (the policy does the task,
        the field is learnt); a failing one makes the verdict ``inconclusive (substrate)``.
    positive_arm, positive : str, callable
        Optional positive control: an arm with the claimed effect planted by construction, and the
        claim's rule applied to it (``positive(metrics, config) -> Decision``), which must pass.
    beyond : callable
        Optional: the method judged against the control with the same rule, used when the control
        passes too (CLAIMS.md rule 10). Without it a passing control explains the effect.
    kind : "method" | "theorem_check"
        A ``theorem_check`` row is a numerical check of a formal statement: its verdicts read
        ``numerically consistent`` / ``not consistent``.
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
    effect: float | None = None
    effect_source: str = ""
    gates: tuple[str, ...] = ()
    positive_arm: str | None = None
    positive: Rule | None = None
    beyond: Rule | None = None
    kind: str = "method"

    def __post_init__(self) -> None:
        if self.effect is not None and not (isinstance(self.effect, int | float)
                                            and math.isfinite(self.effect) and self.effect > 0):
            raise ValueError(f"claim {self.id!r}: effect must be a finite number > 0, "
                             f"got {self.effect!r}")
        if isinstance(self.gates, str):
            raise TypeError(f"claim {self.id!r}: gates must be a tuple of gate names, not a string")
        if (self.positive is None) != (self.positive_arm is None):
            raise ValueError(f"claim {self.id!r}: a positive control needs both positive_arm and "
                             "positive (the rule applied to it)")
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"claim {self.id!r}: kind must be one of {CLAIM_KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class SubstrateCheck:
    """A health check of the substrate a claim is measured on (CLAIMS.md rule 8).

    Measured in the run from the aggregated metrics: ``value(metrics, config) -> float``, or the
    seed mean of ``metrics[arm][metric]``; it passes when ``low <= value <= high``. Examples: the
    policy's ID success is >= 3x a random policy's, the learnt field's relative error is <= 0.1,
    the model's outlier kurtosis is >= k. A claim names the checks it needs in ``Claim.gates``.
    """

    name: str
    description: str
    arm: str | None = None
    metric: str | None = None
    value: Callable[[Metrics, Any], float] | None = None
    low: float = -math.inf
    high: float = math.inf

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError("a substrate check needs a non-empty name")
        if (self.value is None) == (self.arm is None or self.metric is None):
            raise ValueError(f"substrate check {self.name!r}: give either value= or arm= and metric=")
        if not (self.low <= self.high) or (self.low == -math.inf and self.high == math.inf):
            raise ValueError(f"substrate check {self.name!r}: needs a bound, low <= high")

    @property
    def rule(self) -> str:
        what = f"mean {self.arm}.{self.metric}" if self.value is None else self.description
        if self.high == math.inf:
            return f"{what} >= {self.low:g}"
        if self.low == -math.inf:
            return f"{what} <= {self.high:g}"
        return f"{self.low:g} <= {what} <= {self.high:g}"

    def measure(self, metrics: Metrics, config: Any) -> dict[str, Any]:
        """The gate's entry for the result: ``{name, value, rule, passed, description}``."""
        if self.value is not None:
            v = float(self.value(metrics, config))
        else:
            if self.arm not in metrics or self.metric not in metrics[self.arm]:
                raise ValueError(f"substrate check {self.name!r} reads {self.arm}.{self.metric}, "
                                 "which the run never produced")
            v = float(np.mean(np.asarray(metrics[self.arm][self.metric], dtype=float)))
        passed = math.isfinite(v) and self.low <= v <= self.high
        return {"name": self.name, "value": v if math.isfinite(v) else None, "rule": self.rule,
                "passed": bool(passed), "description": self.description}


def measure_gates(checks: Sequence[SubstrateCheck], metrics: Metrics,
                  config: Any) -> list[dict[str, Any]]:
    """Every substrate check measured on the run's metrics (names must be distinct)."""
    names = [c.name for c in checks]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"duplicate substrate check names {dup}")
    return [c.measure(metrics, config) for c in checks]


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


def _detectable(value: float | None) -> float | None:
    return None if value is None else (value if math.isfinite(value) else None)


def judge(claim: Claim, metrics: Metrics, config: Any,
          gates: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Apply a claim's rule and its control; return the result-file entry for this claim.

    The control rule's reads of the control arm decide the POWERLESS check (see the module
    docstring); a control that passes the rule turns the verdict into ``not reproduced`` unless
    the method also beats the control (``beyond``). ``gates`` are the run's measured substrate
    checks (:func:`measure_gates`); the claim's own gates, its seeds, its mde against its effect
    and its positive control can then turn a verdict into ``inconclusive`` (module docstring).
    """
    decision = claim.decide(metrics, config)
    recorder = _Recorder(metrics)
    control = claim.control(recorder, config)
    entry: dict[str, Any] = {
        "id": claim.id,
        "kind": claim.kind,
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
            # CLAIMS.md rule 10: the control passes too; measure the distance to it
            beyond = claim.beyond(metrics, config) if claim.beyond is not None else None
            if beyond is not None:
                entry["beyond"] = {"verdict": beyond.verdict, "ours": beyond.ours,
                                   "evidence": to_jsonable(beyond.evidence)}
            if beyond is not None and beyond.verdict == REPRODUCED:
                entry["beyond_control"] = True
                entry["control_effect"] = control.ours
                entry["ours"] = (f"{decision.ours} [beyond control {arm!r}, which passes too: "
                                 f"{beyond.ours}]")
            else:
                entry["beyond_control"] = False
                entry["verdict"] = NOT_REPRODUCED
                entry["explained_by"] = arm
                entry["ours"] = (f"{decision.ours} [explained by control arm {arm!r}, which "
                                 "passes too]")
    # POWERLESS: the control is another arm under a new name, so the check could not fail. A
    # control that passes is not powerless: with the method passing too it explains the effect
    # (verdict "not reproduced", ``explained_by``) unless the method beats it; with the method
    # failing, the alternative works where the method does not, which the report says.
    nc["powerless"] = "identical_to" in nc
    entry["negative_control"] = nc

    # ---- can the protocol succeed? (CLAIMS.md rule 8) ----
    reasons: list[str] = []
    by_name = {g["name"]: g for g in gates}
    unknown = [g for g in claim.gates if g not in by_name]
    if unknown:
        raise ValueError(f"claim {claim.id!r} depends on substrate checks {unknown} that the paper "
                         f"does not declare (declared: {sorted(by_name)})")
    entry["gates"] = list(claim.gates)
    failed = [g for g in claim.gates if not by_name[g]["passed"]]
    if failed:
        reasons.append("substrate: " + ", ".join(
            f"{g} ({by_name[g]['rule']}, measured {_fmt(by_name[g]['value'])})" for g in failed))
    if decision.uses_se and decision.n is not None and decision.n < MIN_SE_SEEDS:
        reasons.append(f"seeds: the rule reads an s.e. and {decision.n} < {MIN_SE_SEEDS} seeds ran")
    mde = decision.mde
    det: dict[str, Any] = {"effect": claim.effect, "effect_source": claim.effect_source,
                           "mde": _detectable(mde), "positive_control": None}
    if mde is not None and not math.isfinite(mde):
        det["mde_note"] = ("not measurable: fewer than 2 seeds" if decision.n is not None
                           and decision.n < 2 else "not measurable (see the rule's evidence)")
    if claim.effect is not None and mde is not None and mde > claim.effect:
        reasons.append(f"underpowered: mde {_fmt(mde)} > effect {claim.effect:.3g}")
    if decision.weak_legs:
        det["weak_legs"] = list(decision.weak_legs)
        reasons.append("underpowered: leg(s) " + ", ".join(decision.weak_legs)
                       + " cannot pass given their noise (mde > their margin)")
    if claim.positive is not None:
        pos = claim.positive(metrics, config)
        det["positive_control"] = {"arm": claim.positive_arm, "verdict": pos.verdict,
                                   "ours": pos.ours}
        if pos.verdict != REPRODUCED:
            reasons.append(f"positive control: the rule does not pass {claim.positive_arm!r}, "
                           f"which has the effect by construction ({pos.verdict})")
    entry["detectability"] = det
    entry["verdict_raw"] = entry["verdict"]
    if reasons:
        entry["inconclusive_reason"] = "; ".join(reasons)
        if entry["verdict"] != INCONCLUSIVE:
            entry["verdict"] = INCONCLUSIVE
            entry["ours"] = f"[inconclusive: {entry['inconclusive_reason']}] {entry['ours']}"
    if claim.kind == "theorem_check":
        entry["verdict"] = theorem_verdict(entry["verdict"])
    return entry


def theorem_verdict(verdict: str) -> str:
    """A theorem-check row's wording of a rule verdict."""
    return {REPRODUCED: NUMERICALLY_CONSISTENT, NOT_REPRODUCED: NOT_CONSISTENT}.get(verdict, verdict)


def _fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    return "inf" if math.isinf(x) else f"{x:.3g}"


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
    effect: float | None = None,
    effect_source: str = "",
    gates: tuple[str, ...] = (),
    positive: str | None = None,
) -> Claim:
    """The most common claim shape in one call: "``method`` beats ``baseline`` on metric ``key``
    in every seed by more than 2 s.e. (and ``min_gap``)", with the control arm run through the
    same rule against the same baseline. The rule text is generated from the arguments, so the
    text and the code cannot disagree. ``positive`` names a positive-control arm (the effect planted
    by construction) judged by the same rule; the method is judged against the control by the same
    rule when the control passes too (``beyond``)."""
    better = "higher" if higher_is_better else "lower"
    gap = f" and > {min_gap:g}" if min_gap else ""
    rule = (f"{method} {better} than {baseline} on {key} in every seed, mean paired gap > 2 s.e."
            f"{gap}")

    def judge_arm(arm: str, against: str = baseline) -> Rule:
        return lambda m, c: paired_improvement(m[arm][key], m[against][key],
                                               higher_is_better=higher_is_better, min_gap=min_gap,
                                               label=f"{arm} vs {against}: ")

    return Claim(id=id, statement=statement, paper_value=paper_value, metric=metric, scale=scale,
                 rule=rule, decide=judge_arm(method), control_description=control_description,
                 control=judge_arm(control),
                 arms=ClaimArms(method=method, baselines=(baseline, *extra_baselines),
                                control=control),
                 effect=effect, effect_source=effect_source, gates=tuple(gates),
                 positive_arm=positive, positive=judge_arm(positive) if positive else None,
                 beyond=judge_arm(method, control))


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
    mde = max(min_gap, se_mult * se) if m.size >= 2 else math.inf
    evidence["mde"] = _detectable(mde)
    passes = mean > min_gap and mean > se_mult * se and (every or not all_seeds)
    det = {"mde": mde, "n": int(m.size), "uses_se": True}
    if passes:
        return Decision(REPRODUCED, ours, evidence, **det)
    if mean <= 0 or (m.size >= 3 and mean + se_mult * se < min_gap):
        return Decision(NOT_REPRODUCED, ours, evidence, **det)
    return Decision(INCONCLUSIVE, ours, evidence, **det)


def superior(method: Sequence[float], baseline: Sequence[float], *, margin: float = 0.0,
             higher_is_better: bool = True, se_mult: float = 2.0, label: str = "") -> Decision:
    """Superiority on paired seeds: the mean gap (positive = method better) exceeds ``margin`` and
    ``se_mult`` s.e., and the method is better in every seed (:func:`paired_improvement`). Its
    mde is ``max(margin, se_mult * s.e.)``."""
    return paired_improvement(method, baseline, higher_is_better=higher_is_better, min_gap=margin,
                              se_mult=se_mult, label=label)


def noninferior(method: Sequence[float], baseline: Sequence[float], *, margin: float,
                higher_is_better: bool = True, se_mult: float = 2.0, label: str = "") -> Decision:
    """Non-inferiority on paired seeds: ``mean - se_mult * s.e. > -margin`` (CLAIMS.md rule 8).

    The gap is oriented so positive = method better. ``margin`` is fixed before the run and never
    widened by the noise: a tolerance that grows with the s.e. lets a noisy loss pass. Verdicts:
    ``reproduced`` when the lower bound clears ``-margin``; ``not reproduced`` when the mean gap
    itself is below ``-margin``; ``inconclusive`` otherwise. The mde is ``se_mult * s.e.``: the
    margin must exceed it for an arm exactly as good as the baseline to pass.
    """
    if not (isinstance(margin, int | float) and math.isfinite(margin) and margin > 0):
        raise ValueError(f"noninferior needs a finite margin > 0, got {margin!r}")
    m = np.asarray(method, dtype=float)
    b = np.asarray(baseline, dtype=float)
    if m.shape != b.shape or m.size == 0:
        raise ValueError(f"paired rule needs equal non-empty per-seed lists, got {m.shape}, {b.shape}")
    sign = 1.0 if higher_is_better else -1.0
    mean, se = mean_se(sign * (m - b))
    lower = mean - se_mult * se
    mde = se_mult * se if m.size >= 2 else math.inf
    evidence = {"method": m.tolist(), "baseline": b.tolist(), "gap_mean": mean, "gap_se": se,
                "lower_bound": lower, "margin": margin, "se_mult": se_mult, "mde": _detectable(mde)}
    ours = (f"{label}{m.mean():.4g} vs {b.mean():.4g} (gap {mean:+.3g} ± {se:.2g}; "
            f"lower bound {lower:+.3g} vs -{margin:g})")
    det = {"mde": mde, "n": int(m.size), "uses_se": True, "effect": float(margin)}
    if lower > -margin:
        return Decision(REPRODUCED, ours, evidence, **det)
    if mean < -margin:
        return Decision(NOT_REPRODUCED, ours, evidence, **det)
    return Decision(INCONCLUSIVE, ours, evidence, **det)


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
    # the distance from the bound this mean can resolve: 2 s.e. of the seed mean (inf for one
    # seed, whose spread is unmeasured: use `exact` for a deterministic quantity)
    mde = 2.0 * se if len(values) >= 2 else math.inf
    return Decision(REPRODUCED if ok else NOT_REPRODUCED, f"{label}{mean:.4g} ± {se:.2g}", evidence,
                    mde=mde, n=len(values), uses_se=False)


def exact(ok: bool, ours: str = "", evidence: Mapping[str, Any] | None = None) -> Decision:
    """A deterministic check (a closed form, an exact solver, a theorem's inequality on computed
    numbers): no seed noise, so its minimum detectable effect is 0."""
    return Decision(REPRODUCED if ok else NOT_REPRODUCED, ours, dict(evidence or {}), mde=0.0,
                    n=None, uses_se=False)


def all_of(*decisions: Decision, ours: str | None = None, primary: int = 0) -> Decision:
    """Combine decisions: reproduced iff all are; not reproduced if any is; else inconclusive.

    The combined mde is the ``primary`` leg's (the comparison the claim's effect is stated for);
    it reads an s.e. if any leg does, and its seed count is the smallest leg's."""
    verdicts = [d.verdict for d in decisions]
    if all(v == REPRODUCED for v in verdicts):
        verdict = REPRODUCED
    elif any(v == NOT_REPRODUCED for v in verdicts):
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    if not decisions:
        raise ValueError("all_of needs at least one decision")
    if not 0 <= primary < len(decisions):
        raise ValueError(f"primary must index one of the {len(decisions)} decisions, got {primary}")
    evidence = {f"part{i}": {"verdict": d.verdict, **d.evidence} for i, d in enumerate(decisions)}
    ns = [d.n for d in decisions if d.n is not None]
    weak = [f"part{i}" for i, d in enumerate(decisions)
            if i != primary and d.effect is not None and d.mde is not None and d.mde > d.effect]
    weak += [f"part{i}.{w}" for i, d in enumerate(decisions) for w in d.weak_legs]
    return Decision(verdict, ours if ours is not None else "; ".join(d.ours for d in decisions),
                    evidence, mde=decisions[primary].mde, n=min(ns) if ns else None,
                    uses_se=any(d.uses_se for d in decisions), effect=decisions[primary].effect,
                    weak_legs=tuple(weak))


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
    # the protocol can succeed if `need` regimes can: the need-th smallest regime mde
    mdes = sorted(d.mde for _, d in regimes if d.mde is not None)
    mde = mdes[need - 1] if len(mdes) == n else None
    ns = [d.n for _, d in regimes if d.n is not None]
    return Decision(verdict, ours, evidence,
                    regimes=tuple(Regime(c, d.verdict, d.ours) for c, d in regimes),
                    mde=mde, n=min(ns) if ns else None, uses_se=any(d.uses_se for _, d in regimes))

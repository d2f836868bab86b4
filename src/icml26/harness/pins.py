"""Pinned smoke verdicts: a changed rule, threshold or arm shows up as a diff in review, and the
pin holds on any machine.

``tests/papers/<slug>/expected_smoke.json`` holds, per claim, the verdict, the control's verdict
and POWERLESS flag, the regimes' verdicts, and the numbers the rules read (the numeric leaves of
``evidence``); the paper's smoke test compares a fresh smoke run with it (:func:`assert_pinned`).
The file is rewritten on purpose only, by ``icml26 run SLUG --profile smoke --pin``
(:func:`write_pin`). The smoke profile runs with one torch thread (``ExperimentConfig.
torch_threads``, applied around every seed by the runner), so the thread count of the machine
never enters a pinned number.

How a fresh run is compared with its pin (:func:`pin_differences`)
------------------------------------------------------------------
* **Everything but the numbers exactly**: seeds, every claim's verdict, control verdict,
  POWERLESS flag and regime verdicts -- and any key added to a claim's pin entry later
  (:func:`pin_of`), unless it is listed in :data:`TOLERANT_KEYS`.
* **Each number within a tolerance on the scale of the claim's decision**, never relative to the
  number itself: a gap of two arms near zero moves, across CPUs, by as much as the arms do (float32
  training differs in the last bits between CPU generations and a trained model amplifies that),
  so its own size is no yardstick -- measured: eco's ``int4_finetune`` gap 0.00026 on one machine
  and -0.00068 on another, arms at 2.29; tfmpe's coverage gap -0.104 vs -0.096, arms at 0.88.
  The number at path ``p`` passes when ``|fresh - pinned| <= max(atol, rtol * scale(p))`` with

  ``scale(p) = max(|fresh|, |pinned|, S(group of p))``

  where the *group* of ``p`` is the evidence dict that holds it (one rule's evidence: a claim, a
  ``partN`` of a combined rule, a regime, a gate check; a per-seed list belongs to the dict that
  holds it) and ``S(group)`` is the largest magnitude, fresh or pinned, among the group's
  **decision scales**: its per-seed values (the arms' measurements, lists of numbers) and its
  thresholds and noise scales (keys such as ``tol``, ``min_gap``, ``margin``, ``high``, ``low``,
  ``mde``, ``se``/``gap_se``; :data:`DECISION_SCALE_KEY`), leaving out rule constants that are
  counts or multipliers (``se_mult``, ``require``, ``n_*``; :data:`CONSTANT_KEY`). A group that holds
  no per-seed value (derived statistics only, e.g. a gate's ``gap_mean``/``gap_se``) also takes
  the claim's arm scale: the largest per-seed value anywhere in the claim's evidence.
* ``rtol`` and ``atol`` come from the paper's ``PIN_TOLERANCE`` (:func:`declared_tolerance`): by
  default near exact (``rtol=1e-5`` of the decision's scale: deterministic papers), and
  :data:`TRAINING_TOLERANCE` (5 % of the decision's scale) for papers whose smoke run trains a
  float32 model. So a sign flip of a gap that is tiny next to its arms matches, while a change on
  the decision's scale (a few percent of the arms, or of the threshold) is caught -- and the
  verdicts, which are what the decision produces, are compared exactly anyway.

``tests/harness/test_pins.py`` checks both directions on synthetic pins, and re-runs a training
paper's smoke with another torch thread count against its pin.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .result import atomic_write_json

PIN_NAME = "expected_smoke.json"
RTOL, ATOL = 1e-5, 1e-8
# float32 training through torch's CPU kernels differs in the last bits between CPU generations,
# and a trained model's metrics amplify that (measured between two x86 machines and between one
# and two torch threads: up to 1 % of the arms' magnitude, verdicts unchanged). A paper whose smoke
# run trains a float32 model declares ``PIN_TOLERANCE = TRAINING_TOLERANCE`` in its experiment
# module; ``rtol`` is a fraction of the decision's scale (see the module docstring).
TRAINING_TOLERANCE: dict[str, float] = {"rtol": 5e-2, "atol": 1e-4}
_MAX_NUMBERS = 400

# A claim's pin entry: keys compared with a tolerance (numeric leaves by path); every other key
# is compared exactly.
TOLERANT_KEYS: tuple[str, ...] = ("numbers",)
# Evidence keys that are thresholds or noise scales of the decision: they set the scale of their
# group's numbers (with the per-seed values).
DECISION_SCALE_KEY = re.compile(
    r"^(tol|tolerance|threshold|margin|min_gap|high|low|limit|mde|se|gap_se|binomial_se|"
    r"\w+_tol|\w+_min|min_\w+|max_\w+|\w+_max)$")
# Rule constants that are counts or multipliers: never a scale.
CONSTANT_KEY = re.compile(r"^(se_mult|require|needed|n|n_\w+|\w+_count|count)$")


def _numbers(tree: Any, prefix: str = "") -> dict[str, float | None]:
    """The numeric leaves of a JSON tree, keyed by their path (``a.b[2]``); None for NaN."""
    return {leaf.path: leaf.value for leaf in _leaves(tree, prefix)}


@dataclass(frozen=True)
class _Leaf:
    path: str  # as in a pin's "numbers": ``a.b[2]``
    value: float | None  # None for NaN/inf
    group: str  # the path of the dict that holds it ("" for the top level)
    key: str  # its key in that dict
    per_seed: bool  # an entry of a list of numbers (per-seed values of an arm)


def _leaves(tree: Any, prefix: str = "", group: str = "", key: str = "",
            in_list: bool = False) -> Iterator[_Leaf]:
    """Every numeric leaf of a JSON tree with its group (see the module docstring)."""
    if isinstance(tree, bool):
        return
    if isinstance(tree, int | float):
        value = float(tree) if math.isfinite(float(tree)) else None
        yield _Leaf(prefix, value, group, key, in_list)
    elif isinstance(tree, Mapping):
        for k, v in tree.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k), prefix, str(k))
    elif isinstance(tree, list | tuple):
        for i, v in enumerate(tree):
            yield from _leaves(v, f"{prefix}[{i}]", group, key, True)


def _number_tree(claim: Mapping[str, Any]) -> Any:
    """The tree whose numeric leaves a claim's pin holds."""
    return claim.get("evidence", {})


def decision_scales(claim: Mapping[str, Any],
                    pinned: Mapping[str, float | None] | None = None) -> dict[str, float]:
    """For each numeric leaf of a fresh claim, ``S`` of its group (module docstring), over the
    fresh values and, when given, the pinned ones (a pin's ``numbers``)."""
    pinned = pinned or {}
    leaves = list(_leaves(_number_tree(claim)))

    def magnitudes(leaf: _Leaf) -> list[float]:
        return [abs(v) for v in (leaf.value, pinned.get(leaf.path)) if v is not None]

    group_scale: dict[str, float] = {}
    has_per_seed: set[str] = set()
    arm_scale = 0.0
    for leaf in leaves:
        if CONSTANT_KEY.match(leaf.key):
            continue
        if leaf.per_seed:
            has_per_seed.add(leaf.group)
            arm_scale = max([arm_scale, *magnitudes(leaf)])
        if leaf.per_seed or DECISION_SCALE_KEY.match(leaf.key):
            group_scale[leaf.group] = max([group_scale.get(leaf.group, 0.0), *magnitudes(leaf)])
    scales = {}
    for leaf in leaves:
        s = group_scale.get(leaf.group, 0.0)
        if leaf.group not in has_per_seed:
            s = max(s, arm_scale)
        scales[leaf.path] = s
    return scales


def pin_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned view of a result: verdicts and the numbers the rules read."""
    if result["status"] != "ok":
        raise ValueError(f"cannot pin a run that ended in error:\n{result.get('error', '')}")
    claims = {}
    for c in result["claims"]:
        nc = c["negative_control"]
        numbers = _numbers(_number_tree(c))
        if len(numbers) > _MAX_NUMBERS:
            numbers = dict(list(numbers.items())[:_MAX_NUMBERS])
        claims[c["id"]] = {"verdict": c["verdict"], "control_verdict": nc["verdict"],
                           "powerless": bool(nc.get("powerless", not nc["passes"])),
                           "regimes": [[r["condition"], r["verdict"]] for r in c.get("regimes", [])],
                           "numbers": numbers}
    rtol, atol = declared_tolerance(result["paper"])
    return {"paper": result["paper"], "profile": result["profile"], "seeds": result["seeds"],
            "rtol": rtol, "atol": atol, "claims": claims}


def declared_tolerance(slug: str) -> tuple[float, float]:
    """``(rtol, atol)`` for a paper's pinned numbers: its experiment's ``PIN_TOLERANCE`` (a dict
    with ``rtol``, a fraction of the decision's scale, and ``atol``) or the default, near-exact
    one. Verdicts are always pinned exactly."""
    from .registry import PAPERS

    info = PAPERS.get(slug)
    declared = getattr(info.experiment(), "PIN_TOLERANCE", None) if info and info.implemented else None
    if declared is None:
        return RTOL, ATOL
    rtol, atol = float(declared["rtol"]), float(declared["atol"])
    if not (0 <= rtol < 1 and 0 <= atol):
        raise ValueError(f"{slug}.PIN_TOLERANCE must have 0 <= rtol < 1 and atol >= 0, got {declared}")
    return rtol, atol


def write_pin(result: Mapping[str, Any], folder: str | Path) -> Path:
    """Write ``folder/expected_smoke.json`` from a smoke result; return its path."""
    if result["profile"] != "smoke":
        raise ValueError(f"pins record the smoke profile, got {result['profile']!r}")
    threads = (result.get("config") or {}).get("torch_threads", 1)
    if threads != 1:
        raise ValueError(f"pins record the smoke profile with one torch thread, got {threads!r}")
    path = Path(folder) / PIN_NAME
    atomic_write_json(path, pin_of(result))
    return path


def _number_differences(cid: str, fresh: Mapping[str, float | None],
                        pinned: Mapping[str, float | None], scales: Mapping[str, float],
                        rtol: float, atol: float) -> list[str]:
    diffs = []
    if set(fresh) != set(pinned):
        diffs.append(f"{cid}: evidence keys changed: {sorted(set(fresh) ^ set(pinned))[:8]}")
    for name in sorted(set(fresh) & set(pinned)):
        x, y = fresh[name], pinned[name]
        if x is None or y is None:
            if (x is None) != (y is None):
                diffs.append(f"{cid}: {name} = {x!r}, pinned {y!r}")
            continue
        scale = max(abs(x), abs(y), scales.get(name, 0.0))
        tol = max(atol, rtol * scale)
        if abs(x - y) > tol:
            diffs.append(f"{cid}: {name} = {x!r}, pinned {y!r} (allowed +-{tol:.3g}: "
                         f"{rtol:g} of the decision's scale {scale:.3g})")
    return diffs


def pin_differences(result: Mapping[str, Any], pinned: Mapping[str, Any]) -> list[str]:
    """Human-readable differences between a fresh result and a pin (empty when they agree)."""
    fresh = pin_of(result)
    # the experiment's declaration wins over the file's (one place to say how exact a paper is)
    rtol, atol = fresh["rtol"], fresh["atol"]
    diffs: list[str] = []
    if fresh["seeds"] != pinned.get("seeds"):
        diffs.append(f"seeds {fresh['seeds']} != pinned {pinned.get('seeds')}")
    pinned_claims = pinned.get("claims", {})
    if set(fresh["claims"]) != set(pinned_claims):
        diffs.append(f"claims {sorted(fresh['claims'])} != pinned {sorted(pinned_claims)}")
    evidence = {c["id"]: c for c in result["claims"]}
    for cid in sorted(set(fresh["claims"]) & set(pinned_claims)):
        a, b = fresh["claims"][cid], pinned_claims[cid]
        for key in sorted(set(a) | set(b)):
            if key in TOLERANT_KEYS:
                continue
            if key not in b:
                diffs.append(f"{cid}: {key} is not in the pin (re-pin to record it)")
            elif key not in a:
                diffs.append(f"{cid}: the pin has {key!r}, the run does not")
            elif a[key] != b[key]:
                diffs.append(f"{cid}: {key} {a[key]!r} != pinned {b[key]!r}")
        scales = decision_scales(evidence[cid], b.get("numbers", {}))
        diffs += _number_differences(cid, a["numbers"], b.get("numbers", {}), scales, rtol, atol)
    return diffs


def assert_pinned(result: Mapping[str, Any], test_file: str | Path) -> None:
    """Assert a smoke result matches the pin beside ``test_file`` (a paper's test module).

    Re-pin on purpose with ``icml26 run SLUG --profile smoke --pin`` and review the diff.
    """
    path = Path(test_file).with_name(PIN_NAME)
    if not path.is_file():
        raise AssertionError(f"no pin at {path}: create it with "
                             f"`icml26 run {result['paper']} --profile smoke --pin`")
    diffs = pin_differences(result, json.loads(path.read_text(encoding="utf-8")))
    if diffs:
        raise AssertionError(f"smoke run differs from {path} ({len(diffs)} differences; "
                             "re-pin on purpose if the change is intended):\n  "
                             + "\n  ".join(diffs[:40]))

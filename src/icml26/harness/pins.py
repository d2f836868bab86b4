"""Pinned smoke verdicts: a changed rule, threshold or arm shows up as a diff in review.

``tests/papers/<slug>/expected_smoke.json`` holds, per claim, the verdict, the control's verdict
and POWERLESS flag, and the numbers the rules read (the numeric leaves of ``evidence``); the
paper's smoke test compares a fresh smoke run with it (:func:`assert_pinned`). The file is
rewritten on purpose only, by ``icml26 run SLUG --profile smoke --pin`` (:func:`write_pin`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .result import atomic_write_json

PIN_NAME = "expected_smoke.json"
RTOL, ATOL = 1e-5, 1e-8
# float32 training through torch's CPU kernels differs in the last bits between CPU generations,
# and a trained model's metrics amplify that (measured between two x86 machines: relative
# differences 1e-5..2e-2 in gaps of nearby numbers, verdicts unchanged). A paper whose smoke run
# trains a float32 model declares ``PIN_TOLERANCE = TRAINING_TOLERANCE`` in its experiment module.
TRAINING_TOLERANCE: dict[str, float] = {"rtol": 5e-2, "atol": 1e-4}
_MAX_NUMBERS = 400


def _numbers(tree: Any, prefix: str = "") -> dict[str, float | None]:
    """The numeric leaves of a JSON tree, keyed by their path (``a.b[2]``); None for NaN."""
    out: dict[str, float | None] = {}
    if isinstance(tree, bool):
        return out
    if isinstance(tree, int | float):
        out[prefix] = float(tree) if math.isfinite(float(tree)) else None
    elif isinstance(tree, Mapping):
        for k, v in tree.items():
            out.update(_numbers(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(tree, list | tuple):
        for i, v in enumerate(tree):
            out.update(_numbers(v, f"{prefix}[{i}]"))
    return out


def pin_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned view of a result: verdicts and the numbers the rules read."""
    if result["status"] != "ok":
        raise ValueError(f"cannot pin a run that ended in error:\n{result.get('error', '')}")
    claims = {}
    for c in result["claims"]:
        nc = c["negative_control"]
        numbers = _numbers(c.get("evidence", {}))
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
    with ``rtol`` and ``atol``) or the default, near-exact one. Verdicts are always pinned exactly."""
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
    path = Path(folder) / PIN_NAME
    atomic_write_json(path, pin_of(result))
    return path


def pin_differences(result: Mapping[str, Any], pinned: Mapping[str, Any]) -> list[str]:
    """Human-readable differences between a fresh result and a pin (empty when they agree)."""
    fresh = pin_of(result)
    # the experiment's declaration wins over the file's (one place to say how exact a paper is)
    rtol, atol = fresh["rtol"], fresh["atol"]
    diffs: list[str] = []
    if fresh["seeds"] != pinned["seeds"]:
        diffs.append(f"seeds {fresh['seeds']} != pinned {pinned['seeds']}")
    if set(fresh["claims"]) != set(pinned["claims"]):
        diffs.append(f"claims {sorted(fresh['claims'])} != pinned {sorted(pinned['claims'])}")
    for cid in sorted(set(fresh["claims"]) & set(pinned["claims"])):
        a, b = fresh["claims"][cid], pinned["claims"][cid]
        for key in ("verdict", "control_verdict", "powerless", "regimes"):
            if a[key] != b[key]:
                diffs.append(f"{cid}: {key} {a[key]!r} != pinned {b[key]!r}")
        if set(a["numbers"]) != set(b["numbers"]):
            diffs.append(f"{cid}: evidence keys changed: "
                         f"{sorted(set(a['numbers']) ^ set(b['numbers']))[:8]}")
        for name in sorted(set(a["numbers"]) & set(b["numbers"])):
            x, y = a["numbers"][name], b["numbers"][name]
            if (x is None) != (y is None) or (x is not None and not math.isclose(
                    x, y, rel_tol=rtol, abs_tol=atol)):
                diffs.append(f"{cid}: {name} = {x!r}, pinned {y!r}")
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

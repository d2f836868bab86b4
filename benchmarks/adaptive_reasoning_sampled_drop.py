"""Sampled complex accuracy at T = 0.6: M2 with AdaptThink's estimator vs M2 with TRL's (issue 50).

A review found that switching M2's GRPO estimator from TRL's group-relative one to AdaptThink's
(un-centred advantages, balanced forcing) lowered sampled complex accuracy at T = 0.6 (0.51 -> 0.44,
one seed). This runs the quick profile with ``estimator_ablation=True`` (adds ``m2_trl``: M2's
stage 2 with ``estimator="trl"``, everything else equal), 3 seeds, and writes the per-seed numbers.
A report, not a claim (no rule was fixed for it).

Usage: ``python benchmarks/adaptive_reasoning_sampled_drop.py [--from RESULT.json] [--out JSON]``
(``--from`` reads an existing result of such a run instead of running it).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

KEYS = ("T0.6/complex_accuracy", "T1.0/complex_accuracy", "complex_accuracy", "T0.6/overall/accuracy",
        "T0.6/overall/tokens")


def summarise(result: dict) -> dict:
    m = result["metrics"]
    out = {"seeds": result["seeds"], "profile": result["profile"], "git": result.get("git"),
           "config": {k: result["config"][k] for k in ("estimator_ablation", "n_eval", "n_eval_sampled",
                                                        "grpo_steps", "sft_steps", "sft_base_steps")},
           "arms": {}, "difference_adaptthink_minus_trl": {}}
    for arm in ("m1", "m2", "m2_trl"):
        out["arms"][arm] = {k: [round(float(v), 4) for v in m[arm][k]] for k in KEYS if k in m[arm]}
    for k in KEYS:
        d = np.asarray(m["m2"][k], float) - np.asarray(m["m2_trl"][k], float)
        se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
        out["difference_adaptthink_minus_trl"][k] = {"per_seed": [round(float(x), 4) for x in d],
                                                     "mean": round(float(d.mean()), 4), "se": round(se, 4)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="src", default=None)
    ap.add_argument("--out", default=str(Path(__file__).with_suffix(".json")))
    args = ap.parse_args()
    if args.src:
        result = json.loads(Path(args.src).read_text())
    else:
        from icml26.harness import run_paper

        with tempfile.TemporaryDirectory() as tmp:
            result = run_paper("adaptive_reasoning", "quick", overrides={"estimator_ablation": "true"}, out=tmp)
    if result.get("status") != "ok":
        raise SystemExit(f"run failed: {result.get('error')}")
    summary = summarise(result)
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary["difference_adaptthink_minus_trl"], indent=1))


if __name__ == "__main__":
    main()

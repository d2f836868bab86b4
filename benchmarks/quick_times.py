"""The 19 papers' quick-profile wall times on this kind of machine, and where the time goes.

Reads the latest quick result of every paper under ``--results`` (default ``results/``; made by
``icml26 reproduce --profile quick``) and writes ``benchmarks/quick_times.json`` and a Markdown
table ``benchmarks/quick_times.md``: per paper the wall time, seeds, whether it ran over its budget,
and the time split from the result's ``timing`` record (the core loops' spans summed over seeds,
the named phases, judging, plotting), and how many forked seed workers ran the seeds
(``--seed-jobs``; with 2, the seeds' summed time exceeds the wall time). Regenerate after a
reproduce run:

    python benchmarks/quick_times.py --results results
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path

from icml26.harness.report import collect_latest
from icml26.harness.result import atomic_write_json, atomic_write_text

HERE = Path(__file__).resolve().parent
PAPER_TARGET_S = 90.0  # issue 54: no paper's quick over 90 s
TOTAL_TARGET_S = 20 * 60.0  # issue 54: the 19 quick runs sum to <= 20 min


def rows(results: Path) -> list[dict]:
    out = []
    for slug, (_path, res) in sorted(collect_latest(results, "quick").items()):
        timing = res.get("timing") or {}
        seeds = timing.get("seeds") or []
        loops: dict[str, float] = {}
        phases: dict[str, float] = {}
        for s in seeds:
            for k, v in (s.get("loops_s") or {}).items():
                loops[k] = loops.get(k, 0.0) + v
            for k, v in (s.get("phases_s") or {}).items():
                phases[k] = phases.get(k, 0.0) + v
        out.append({"paper": slug, "runtime_s": round(float(res["runtime_s"]), 1),
                    "seeds": len(res["seeds"]), "seed_jobs": int(res.get("seed_jobs") or 1),
                    "over_budget": bool(res.get("over_budget")),
                    "seed_total_s": round(sum(s.get("total_s", 0.0) for s in seeds), 1),
                    "loops_s": {k: round(v, 1) for k, v in sorted(loops.items())},
                    "phases_s": {k: round(v, 1) for k, v in sorted(phases.items())},
                    "judge_s": timing.get("judge_s"), "plot_s": timing.get("plot_s"),
                    "git": (res.get("git") or {}).get("commit")})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results", type=Path)
    args = ap.parse_args()
    table = rows(args.results)
    total = sum(r["runtime_s"] for r in table)
    data = {"machine": {"cpus": os.cpu_count(), "processor": platform.processor(),
                        "python": platform.python_version()},
            "total_s": round(total, 1), "papers": table}
    atomic_write_json(HERE / "quick_times.json", data)
    commits = sorted({(r["git"] or "?")[:10] for r in table})
    over = [r["paper"] for r in table if r["runtime_s"] > PAPER_TARGET_S]
    md = [f"Quick profile, {len(table)} papers, results of commit(s) {', '.join(commits)}; "
          f"{data['machine']['cpus']} CPUs. Targets (issue 54): each paper <= {PAPER_TARGET_S:.0f} s, "
          f"the sum <= {TOTAL_TARGET_S / 60:.0f} min. Sum {total:.0f} s ({total / 60:.1f} min): "
          f"{'within' if total <= TOTAL_TARGET_S else 'OVER'} target; over {PAPER_TARGET_S:.0f} s: "
          f"{', '.join(over) or 'none'}.",
          "",
          "Phase and loop times are summed over seeds; with more seed workers than cores they are "
          "time-shared wall times, so they add up to more than the wall time.",
          "",
          "| paper | wall s | <= 90 s | seeds | seed jobs | over budget | phases (s) | in core loops (s) "
          "| judge s | plot s |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        loops = ", ".join(f"{k} {v}" for k, v in r["loops_s"].items()) or "—"
        phases = ", ".join(f"{k} {v}" for k, v in r["phases_s"].items()) or "—"
        md.append(f"| {r['paper']} | {r['runtime_s']} | "
                  f"{'yes' if r['runtime_s'] <= PAPER_TARGET_S else 'NO'} | {r['seeds']} | "
                  f"{r['seed_jobs']} | {'yes' if r['over_budget'] else 'no'} | {phases} | "
                  f"{loops} | {r['judge_s']} | {r['plot_s']} |")
    md.append(f"| **total** | **{total:.0f} s ({total / 60:.1f} min)** | | | | | | | | |")
    atomic_write_text(HERE / "quick_times.md", "\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()

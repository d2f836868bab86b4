"""The README's step-time table is rendered from the checked-in benchmark JSON (no hand-typed numbers)."""

import json
from pathlib import Path

from icml26.papers.eco.steptime import END, START, render

ROOT = Path(__file__).resolve().parents[3]


def test_readme_step_time_table_matches_the_benchmark_json():
    res = json.loads((ROOT / "benchmarks" / "eco_step_time.json").read_text(encoding="utf-8"))
    text = (ROOT / "src" / "icml26" / "papers" / "eco" / "README.md").read_text(encoding="utf-8")
    section = text[text.index(START) + len(START):text.index(END)].strip("\n")
    assert section == render(res)
    for m in res["models"].values():  # the ratios are the JSON's own times divided
        base = m["optimizer_step_ms"]["adamw_foreach"]
        for arm, ms in m["optimizer_step_ms"].items():
            assert abs(m["optimizer_step_ratio"][arm] - ms / base) < 0.01

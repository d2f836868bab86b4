"""The README's throughput line is rendered from the committed benchmark JSON (no hand-typed numbers)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _bench():
    spec = importlib.util.spec_from_file_location("rmft_bench", ROOT / "benchmarks" / "iterative_rmft_throughput.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_line_matches_the_committed_json():
    bench = _bench()
    res = json.loads(bench.JSON_PATH.read_text())
    text = bench.README.read_text()
    body = text[text.index(bench.START) + len(bench.START):text.index(bench.END)].strip()
    assert body == bench.render(res)
    assert max(r["pulls_per_s"] for r in res["env"]) >= 1e6   # the target, one core

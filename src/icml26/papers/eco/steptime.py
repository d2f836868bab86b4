"""The step-time table of the eco README, rendered from ``benchmarks/eco_step_time.json``.

``python benchmarks/eco_step_time.py --out benchmarks/eco_step_time.json --readme`` measures and
rewrites the README section between ``<!-- step-time:start -->`` and ``<!-- step-time:end -->``;
a test re-renders it from the checked-in JSON, so the README's numbers cannot drift from it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

START, END = "<!-- step-time:start -->", "<!-- step-time:end -->"
ARMS = (("eco_fp8_sr", "ECOAdamW FP8 SR"), ("eco_fp8_rtn", "ECOAdamW FP8 RTN"),
        ("master_weight_fp8", "FP8 + FP32 master"), ("adamw_fused", "AdamW(fused)"))


def render(res: Mapping[str, Any], source: str = "benchmarks/eco_step_time.json") -> str:
    """Markdown table of optimizer-step times (ms) and ratios to ``AdamW(foreach=True)``."""
    load = ""
    if "loadavg_1min_start" in res:
        load = (f", machine load average {res['loadavg_1min_start']}–{res['loadavg_1min_end']} on "
                f"{res['cpu_count']} cores (shared: absolute times are noisy, ratios less so)")
    lines = [f"Measured by `benchmarks/eco_step_time.py` (torch {res['torch']}, {res['threads']} thread, "
             f"median of {res['steps']} round-robin steps{load}; JSON: `{source}`). Optimizer step alone, "
             "ms (× AdamW(foreach)); last column: whole training step (forward + backward + step) "
             "of ECO-SR, × AdamW's.", "",
             "| model | params (quantized) | AdamW(foreach) | "
             + " | ".join(label for _, label in ARMS) + " | train step ECO-SR |",
             "|---|---|---|" + "---|" * len(ARMS) + "---|"]
    for name, m in res["models"].items():
        ms, ratio = m["optimizer_step_ms"], m["optimizer_step_ratio"]
        cells = [f"{ms[a]:.2f} ({ratio[a]:.2f}×)" if a in ms else "—" for a, _ in ARMS]
        lines.append(f"| {name} | {m['n_params'] / 1e6:.2f}M ({m['n_quantized'] / 1e6:.2f}M) | "
                     f"{ms['adamw_foreach']:.2f} | " + " | ".join(cells)
                     + f" | {m['train_step_ratio']['eco_fp8_sr']:.2f}× |")
    return "\n".join(lines)


def update_readme(json_path: str | Path, readme: str | Path) -> bool:
    """Rewrite the README section from the JSON file; True when the README changed."""
    res = json.loads(Path(json_path).read_text(encoding="utf-8"))
    path = Path(readme)
    text = path.read_text(encoding="utf-8")
    i, j = text.index(START) + len(START), text.index(END)
    new = text[:i] + "\n" + render(res) + "\n" + text[j:]
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


__all__ = ["END", "START", "render", "update_readme"]

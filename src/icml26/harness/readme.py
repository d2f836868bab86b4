"""README tables generated from result files, so that no number in a README is typed by hand.

``icml26 report --readme`` reads the latest results of one profile (quick by default), writes a
compact, checked-in summary (``docs/results/<profile>.json``: per paper the seeds, runtime, git
revision and every claim's verdict, summary, control flag and regimes) and rewrites, from that
summary alone:

* the top-level README's paper table, between ``<!-- papers-table:start -->`` and
  ``<!-- papers-table:end -->``;
* each paper README's claim table, between ``<!-- claims-table:start -->`` and
  ``<!-- claims-table:end -->`` (papers whose README has the markers);
* each paper README's plots, between ``<!-- plots:start -->`` and ``<!-- plots:end -->``: the
  latest result's own plot files, copied to ``docs/plots/<slug>/``.

The quick profile is the README's canonical one (the markers above). Another profile (``--profile
full``) writes ``docs/results/<profile>.json`` and only the paper READMEs that carry that profile's own
markers, ``<!-- claims-table-<profile>:start/end -->`` and ``<!-- plots-<profile>:start/end -->`` (plots
copied to ``docs/plots/<slug>/<profile>/``); the top-level table stays the quick one.

A test re-renders the tables from the checked-in summaries and compares them with the READMEs, so a
table can never drift from the results it was made from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .registry import PAPERS
from .report import _cell, collect_latest, control_flag, detectability_cell, verdict_text
from .result import atomic_write_json, atomic_write_text

TABLE_START, TABLE_END = "<!-- papers-table:start -->", "<!-- papers-table:end -->"
CLAIMS_START, CLAIMS_END = "<!-- claims-table:start -->", "<!-- claims-table:end -->"
PLOTS_START, PLOTS_END = "<!-- plots:start -->", "<!-- plots:end -->"


def summarize(results_dir: str | Path, profile: str = "quick") -> dict[str, Any]:
    """The checked-in summary of the latest completed ``profile`` result of every paper."""
    papers: dict[str, Any] = {}
    for slug, (_path, res) in sorted(collect_latest(Path(results_dir), profile).items()):
        if slug not in PAPERS or PAPERS[slug].module is not None:
            continue  # test-only papers never reach a README
        papers[slug] = {
            "seeds": res["seeds"], "runtime_s": round(float(res["runtime_s"]), 1),
            "git": (res.get("git") or {}).get("commit"), "started_at": res.get("started_at"),
            "claims": [{"id": c["id"], "verdict": c["verdict"], "ours": c.get("ours", ""),
                        "verdict_marks": verdict_text(c)[len(c["verdict"]):],
                        "control_arm": c["negative_control"].get("arm", ""),
                        "control_verdict": c["negative_control"]["verdict"],
                        "control_flag": control_flag(c),
                        "detectability": c.get("detectability"),
                        "gates": c.get("gates", []),
                        "stability": [[s["knob"], s["setting"], s["verdict"]]
                                      for s in c.get("stability", [])],
                        "unstable": c.get("unstable", []),
                        "regimes": [[r["condition"], r["verdict"]] for r in c.get("regimes", [])]}
                       for c in res["claims"]],
            "substrate": [{"name": g["name"], "rule": g["rule"], "value": g["value"],
                           "passed": g["passed"]} for g in res.get("substrate", [])],
        }
    return {"profile": profile, "papers": papers}


def _counts(claims: list[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for c in claims:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    order = ("reproduced", "numerically consistent", "not reproduced", "not consistent",
             "inconclusive")
    text = ", ".join(f"{counts[v]} {v}" for v in order if v in counts)
    weak = sum(c["control_flag"].startswith("POWERLESS") for c in claims)
    return text + (f" ({weak} with a POWERLESS control)" if weak else "")


def render_papers_table(summary: Mapping[str, Any]) -> str:
    """The top-level README's paper table (all 19 papers) from a summary."""
    profile = summary["profile"]
    lines = ["| # | slug | paper | API entry point | "
             f"{profile} verdicts (measured here) |", "|---|---|---|---|---|"]
    for info in PAPERS.values():
        if info.module is not None:
            continue
        row = summary["papers"].get(info.slug)
        link = f"[{info.slug}](src/icml26/papers/{info.slug}/README.md)" if row else info.slug
        api = f"`{info.api}`" if info.api and row else "—"
        if row is None:
            status = "not run" if info.implemented else "not implemented"
        else:
            status = (f"{_counts(row['claims'])}; {len(row['seeds'])} seed"
                      f"{'s' if len(row['seeds']) != 1 else ''}, {row['runtime_s']:.0f} s")
        lines.append(f"| {info.number} | {link} | {_cell(info.short)} | {api} | {status} |")
    return "\n".join(lines)


def render_claims_table(summary: Mapping[str, Any], slug: str) -> str:
    """One paper's claim table from a summary."""
    row = summary["papers"][slug]
    lines = [f"Measured by `icml26 run {slug} --profile {summary['profile']}` (seeds "
             f"{row['seeds']}, {row['runtime_s']:.0f} s, git {str(row['git'])[:10]}):", "",
             "| claim | verdict | ours | control arm | control | detectability | stability |",
             "|---|---|---|---|---|---|---|"]
    for c in row["claims"]:
        stab = "; ".join(f"{k}={v}: {w}" for k, v, w in c.get("stability", [])) or "not swept"
        lines.append(f"| {_cell(c['id'])} | {c['verdict']}{_cell(c.get('verdict_marks', ''))} | "
                     f"{_cell(c['ours'])} | {_cell(c['control_arm'])} | {c['control_verdict']} "
                     f"({_cell(c['control_flag'])}) | {_cell(detectability_cell(c))} | {_cell(stab)} |")
        for cond, verdict in c["regimes"]:
            lines.append(f"| ↳ {_cell(cond)} | {verdict} | | | | | |")
    gates = row.get("substrate") or []
    if gates:
        lines += ["", "Substrate gates: " + "; ".join(
            f"{g['name']} ({g['rule']}): {'passed' if g['passed'] else 'FAILED'}, measured "
            f"{'n/a' if g['value'] is None else format(g['value'], '.3g')}" for g in gates)]
    return "\n".join(lines)


def markers(kind: str, profile: str = "quick") -> tuple[str, str]:
    """``(start, end)`` markers of a paper README's ``kind`` ("claims-table" or "plots") section for
    ``profile``; quick keeps the unsuffixed markers."""
    if kind not in ("claims-table", "plots"):
        raise ValueError(f"kind must be 'claims-table' or 'plots', got {kind!r}")
    name = kind if profile == "quick" else f"{kind}-{profile}"
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def replace_between(text: str, start: str, end: str, body: str) -> str:
    """``text`` with what lies between the ``start`` and ``end`` markers replaced by ``body``."""
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"markers {start} ... {end} not found")
    return pattern.sub(lambda _m: f"{start}\n{body}\n{end}", text, count=1)


def extract_between(text: str, start: str, end: str) -> str | None:
    m = re.search(re.escape(start) + r"\n(.*?)\n" + re.escape(end), text, re.S)
    return m.group(1) if m else None


def write_readmes(summary: Mapping[str, Any], root: str | Path = ".") -> list[Path]:
    """Rewrite the README tables under ``root`` from ``summary``; return the files changed."""
    root = Path(root)
    changed = []
    if summary["profile"] == "quick":
        readme = root / "README.md"
        text = readme.read_text(encoding="utf-8")
        new = replace_between(text, TABLE_START, TABLE_END, render_papers_table(summary))
        if new != text:
            atomic_write_text(readme, new)
            changed.append(readme)
    start, end = markers("claims-table", summary["profile"])
    for slug in summary["papers"]:
        path = root / "src" / "icml26" / "papers" / slug / "README.md"
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if start not in text:
            continue
        new = replace_between(text, start, end, render_claims_table(summary, slug))
        if new != text:
            atomic_write_text(path, new)
            changed.append(path)
    return changed


def copy_plots(results_dir: str | Path, root: str | Path = ".", profile: str = "quick") -> list[Path]:
    """Copy each paper's latest ``profile`` plots to ``docs/plots/<slug>/`` and rewrite the image
    list between ``<!-- plots:start -->`` and ``<!-- plots:end -->`` of papers whose README has
    the markers; return the READMEs changed. Plots in a README are then always a result's own."""
    import shutil

    root = Path(root)
    changed = []
    for slug, (path, res) in sorted(collect_latest(Path(results_dir), profile).items()):
        readme = root / "src" / "icml26" / "papers" / slug / "README.md"
        if not res.get("plots") or not readme.is_file():
            continue
        text = readme.read_text(encoding="utf-8")
        start, end = markers("plots", profile)
        if start not in text:
            continue
        sub = slug if profile == "quick" else f"{slug}/{profile}"
        dest = root / "docs" / "plots" / sub
        dest.mkdir(parents=True, exist_ok=True)
        lines = [f"Plots of `icml26 run {slug} --profile {profile}` (git "
                 f"{str((res.get('git') or {}).get('commit'))[:10]}), copied by `icml26 report --readme`:", ""]
        for rel in res["plots"]:
            src = path.parent / rel
            if src.suffix.lower() not in (".png", ".svg") or not src.is_file():
                continue
            shutil.copyfile(src, dest / src.name)
            lines += [f"![{src.stem.replace('_', ' ')}](../../../../docs/plots/{sub}/{src.name})", ""]
        new = replace_between(text, start, end, "\n".join(lines).rstrip())
        if new != text:
            atomic_write_text(readme, new)
            changed.append(readme)
    return changed


def update_from_results(results_dir: str | Path, root: str | Path = ".",
                        profile: str = "quick") -> tuple[Path, list[Path]]:
    """Merge the latest results into ``docs/results/<profile>.json`` and rewrite the READMEs.

    Papers without a result in ``results_dir`` keep their entry of the existing summary, so
    results gathered on several machines (or runs) merge.
    """
    root = Path(root)
    path = root / "docs" / "results" / f"{profile}.json"
    summary = summarize(results_dir, profile)
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        summary["papers"] = {**old.get("papers", {}), **summary["papers"]}
        summary["papers"] = dict(sorted(summary["papers"].items()))
    atomic_write_json(path, summary)
    changed = write_readmes(summary, root) + copy_plots(results_dir, root, profile)
    return path, list(dict.fromkeys(changed))

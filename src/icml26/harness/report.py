"""The report: every paper's latest result in one Markdown file and one static HTML page."""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .registry import PAPERS
from .result import SchemaError, atomic_write_text, validate_result

_BADGE = {"reproduced": "✅ reproduced", "not reproduced": "❌ not reproduced",
          "inconclusive": "➖ inconclusive", "numerically consistent": "✅ numerically consistent",
          "not consistent": "❌ not consistent"}


def _num(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def detectability_cell(claim: Mapping[str, Any]) -> str:
    """``effect E, mde M`` (+ the positive control's verdict), or what is missing."""
    det = claim.get("detectability")
    if not det:
        return "not declared"
    text = f"effect {_num(det.get('effect'))}, mde {_num(det.get('mde'))}"
    if det.get("mde") is None and det.get("mde_note"):
        text += f" ({det['mde_note']})"
    pc = det.get("positive_control")
    if pc:
        text += f"; positive control `{pc['arm']}`: {pc['verdict']}"
    return text


def verdict_text(claim: Mapping[str, Any]) -> str:
    """The verdict with its marks: why it is inconclusive, beyond the control, unstable knobs."""
    v = claim["verdict"]
    if claim.get("inconclusive_reason") and v == "inconclusive":
        v += f" ({claim['inconclusive_reason'].split(':')[0]})"
    if claim.get("beyond_control"):
        v += " (beyond control)"
    if claim.get("unstable"):
        v += f", unstable ({', '.join(claim['unstable'])})"
    return v


def stability_cell(claim: Mapping[str, Any]) -> str:
    """``knob=a: v; knob=b: v`` over the swept protocol knobs, or ``not swept``."""
    st = claim.get("stability")
    if not st:
        return "not swept"
    return "; ".join(f"{s['knob']}={s['setting']}: {s['verdict']}" for s in st)


def gates_markdown(result: Mapping[str, Any]) -> list[str]:
    gates = result.get("substrate") or []
    if not gates:
        return []
    lines = ["Substrate gates:", "", "| gate | rule | measured | passed |", "|---|---|---|---|"]
    lines += [f"| {_cell(g['name'])} | {_cell(g['rule'])} | {_num(g['value'])} | "
              f"{'yes' if g['passed'] else '**no**'} |" for g in gates]
    return [*lines, ""]


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def control_flag(claim: Mapping[str, Any]) -> str:
    """``ok``, ``POWERLESS (identical to ARM)``, ``explains ...`` or ``control passes: ...``."""
    nc = claim.get("negative_control", {})
    if nc.get("identical_to"):
        return f"POWERLESS (identical to {nc['identical_to']})"
    if claim.get("explained_by"):
        return "explains the effect (control passes too)"
    if nc.get("verdict") == "reproduced":
        return "control passes: the alternative works where the method does not"
    return "ok"


def _control(claim: Mapping[str, Any]) -> str:
    nc = claim.get("negative_control", {})
    arm = f"arm `{nc['arm']}` " if nc.get("arm") else ""
    return f"{arm}{nc.get('verdict', '?')} ({control_flag(claim)})"


def tuning_cell(result: Mapping[str, Any], claim: Mapping[str, Any]) -> str:
    """The tuning record of the claim's arms: grid size, budget, chosen (per seed).

    Records keyed ``ARM@REGIME`` (an arm tuned separately in each regime) are summarised per arm.
    """
    tuning = result.get("tuning") or {}
    arms = claim.get("arms") or {}
    names = [arms.get("method"), *arms.get("baselines", []), arms.get("control")]
    parts = []
    for arm in names:
        if not arm:
            continue
        keys = [k for k in tuning if k == arm or k.startswith(f"{arm}@")]
        if not keys:
            continue
        t = tuning[keys[0]]
        budget = ", ".join(f"{k}={v}" for k, v in (t.get("budget") or {}).items())
        head = f"{arm}: grid {t['grid_size']}" + (f", {budget}" if budget else "")
        if keys == [arm]:
            parts.append(f"{head}, chosen {t['chosen']}")
        else:
            parts.append(f"{head}, tuned in {len(keys)} regimes")
    return "; ".join(parts) if parts else "untuned"


def regimes_markdown(claim: Mapping[str, Any]) -> list[str]:
    if not claim.get("regimes"):
        return []
    lines = [f"Per regime, claim `{claim['id']}`:", "", "| condition | verdict | ours |",
             "|---|---|---|"]
    lines += [f"| {_cell(r['condition'])} | {_BADGE.get(r['verdict'], r['verdict'])} | "
              f"{_cell(r['ours'])} |" for r in claim["regimes"]]
    return [*lines, ""]


def result_markdown(result: Mapping[str, Any]) -> str:
    """A Markdown summary of one result: claims table, metrics table, warnings, error."""
    lines = [f"# {result['paper']} — profile `{result['profile']}`", ""]
    if result.get("title"):
        lines += [f"*{result['title']}*" + (f" (arXiv {result['arxiv']})" if result.get("arxiv") else ""), ""]
    lines += [f"status: **{result['status']}** · seeds: {result['seeds']} · runtime: "
              f"{result['runtime_s']:.1f} s", ""]
    if result["status"] == "error":
        lines += ["```", str(result.get("error", "")).rstrip(), "```", ""]
    if result["claims"]:
        lines += ["| claim | paper | ours | rule | verdict | negative control | detectability | "
                  "gates | stability | tuning |", "|---|---|---|---|---|---|---|---|---|---|"]
        for c in result["claims"]:
            lines.append(f"| {_cell(c['id'])}: {_cell(c['statement'])} | {_cell(c['paper_value'])} | "
                         f"{_cell(c.get('ours', ''))} | {_cell(c['rule'])} | "
                         f"{_cell(_BADGE.get(c['verdict'], '') or c['verdict'])} "
                         f"{_cell(verdict_text(c)[len(c['verdict']):])} | "
                         f"{_cell(c['negative_control']['description'])}: {_cell(_control(c))} | "
                         f"{_cell(detectability_cell(c))} | {_cell(', '.join(c.get('gates', [])) or '—')} | "
                         f"{_cell(stability_cell(c))} | {_cell(tuning_cell(result, c))} |")
        lines.append("")
        lines += gates_markdown(result)
        for c in result["claims"]:
            lines += regimes_markdown(c)
    if result["metrics"]:
        lines += ["| arm | metric | per seed |", "|---|---|---|"]
        for arm, per_metric in result["metrics"].items():
            for name, values in per_metric.items():
                vals = ", ".join("nan" if v is None else f"{v:.4g}" for v in values)
                lines.append(f"| {_cell(arm)} | {_cell(name)} | {vals} |")
        lines.append("")
    for plot in result.get("plots", []):
        lines.append(f"![{plot}]({plot})")
    for warning in result.get("warnings", []):
        lines.append(f"> warning: {warning.splitlines()[0]}")
    return "\n".join(lines) + "\n"


def _rel(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` (``..`` allowed: results merged from other folders)."""
    return os.path.relpath(path, base)


def collect_latest(results_dir: Path | Sequence[Path], profile: str | None = None,
                   name: str = "latest.json") -> dict[str, tuple[Path, dict]]:
    """For each paper, the most recent valid ``name`` (``latest.json``: the last completed run;
    ``latest-error.json``: the last run that raised) of ``profile`` if given, over one results
    folder or several (results gathered on several machines merge: the newest run wins)."""
    dirs = [results_dir] if isinstance(results_dir, str | Path) else list(results_dir)
    found: dict[str, tuple[Path, dict]] = {}
    for path in sorted(p for d in dirs for p in Path(d).glob(f"*/*/{name}")):
        if profile and path.parent.name != profile:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            validate_result(data)
        except (OSError, ValueError, SchemaError):
            continue
        slug = data["paper"]
        stamp = data.get("started_at", "")
        if slug not in found or stamp > found[slug][1].get("started_at", ""):
            found[slug] = (path, data)
    return found


def write_report(results_dir: str | Path = "results", profile: str | None = None,
                 merge: Sequence[str | Path] = ()) -> tuple[Path, Path]:
    """Gather the latest results into ``REPORT.md`` and ``report.html`` in ``results_dir``."""
    results_dir = Path(results_dir)
    dirs = [results_dir, *map(Path, merge)]
    latest = collect_latest(dirs, profile)
    errors = collect_latest(dirs, profile, "latest-error.json")
    md = ["# icml26 reproduction report", "",
          "Every number below was measured by `icml26` at laptop scale (2 CPU cores); the "
          "paper's figure is quoted for reference only. A negative control marked POWERLESS "
          "is identical to another arm or passes the rule itself, so that claim's check could "
          "not fail; a control that *explains* the effect turns the verdict into not reproduced.",
          "",
          "A verdict is evidence only if the protocol could have come out either way: a claim whose "
          "minimum detectable effect (mde) exceeds the effect it is about, whose substrate gate "
          "failed, or whose s.e.-rule ran on fewer than 3 seeds is inconclusive, with the reason.",
          "",
          "| # | paper | claim | paper's figure | ours | verdict | negative control | detectability | stability | tuning | scale | profile | runtime |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    sections: list[str] = []
    for info in PAPERS.values():
        err = errors.get(info.slug)
        newer_error = err is not None and (info.slug not in latest or err[1].get("started_at", "")
                                           > latest[info.slug][1].get("started_at", ""))
        if info.slug not in latest:
            status = "not implemented" if not info.implemented else "not run"
            if newer_error:
                status = _error_status(err[1])
            cells = [info.number, info.slug, "—", "—", "—", status, "—", "—", "—", "—", "—", "—", "—"]
            md.append("| " + " | ".join(_cell(x) for x in cells) + " |")
            continue
        path, res = latest[info.slug]
        rel = _rel(path.parent, results_dir)
        runtime = f"{res['runtime_s']:.0f} s"
        if newer_error:
            erel = _rel(err[0], results_dir)
            cells = [info.number, info.slug, "—", "—", f"a newer run raised: `{erel}`",
                     "⚠️ error (last completed run below)", "—", "—", "—", "—", "—",
                     err[1]["profile"], "—"]
            md.append("| " + " | ".join(_cell(x) for x in cells) + " |")
        for c in res["claims"]:
            cells = [info.number, info.slug, f"{c['id']}: {c['statement']}", c["paper_value"],
                     c.get("ours", ""),
                     (_BADGE.get(c["verdict"], "") or c["verdict"]) + verdict_text(c)[len(c["verdict"]):],
                     f"{c['negative_control']['description']}: {_control(c)}",
                     detectability_cell(c), stability_cell(c),
                     tuning_cell(res, c), c.get("scale", ""), res["profile"], runtime]
            md.append("| " + " | ".join(_cell(x) for x in cells) + " |")
        section = [f"## {info.number}. {info.slug} — {info.title}", "",
                   f"result: `{rel}/latest.json` · status **{res['status']}** · seeds {res['seeds']}", ""]
        if newer_error:
            section += [f"A newer run raised (`{_rel(err[0], results_dir)}`); the table shows "
                        "the last completed run.", ""]
        section += gates_markdown(res)
        for c in res["claims"]:
            section += regimes_markdown(c)
        section += [f"![{p}]({rel}/{p})" for p in res.get("plots", [])]
        sections.append("\n".join(section))
    md += ["", *sections]
    md_path = results_dir / "REPORT.md"
    atomic_write_text(md_path, "\n".join(md) + "\n")
    html_path = results_dir / "report.html"
    atomic_write_text(html_path, _html(latest, errors, results_dir))
    return md_path, html_path


def _html_row(cells: list[Any], cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<tr{attr}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"


_VERDICT_CLASS = {"reproduced": "ok", "not reproduced": "no", "inconclusive": "mid",
                  "numerically consistent": "ok", "not consistent": "no"}
_AS_RULE = {"numerically consistent": "reproduced", "not consistent": "not reproduced"}


def _summary_chart(latest: Mapping[str, tuple[Path, dict]]) -> str:
    """Papers x verdict counts as stacked CSS bars (no script, no CDN)."""
    rows = []
    for info in PAPERS.values():
        if info.slug not in latest:
            continue
        claims = latest[info.slug][1]["claims"]
        if not claims:
            continue
        segs = []
        for verdict in ("reproduced", "inconclusive", "not reproduced"):
            n = sum(_AS_RULE.get(c["verdict"], c["verdict"]) == verdict for c in claims)
            if n:
                segs.append(f'<span class="seg {_VERDICT_CLASS[verdict]}" style="flex:{n}" '
                            f'title="{n} {verdict}">{n}</span>')
        weak = sum(control_flag(c).startswith("POWERLESS") for c in claims)
        flag = f' <span class="flag">{weak} POWERLESS</span>' if weak else ""
        rows.append(f'<div class="bar-row"><a class="bar-label" href="#paper-{info.slug}">'
                    f'{info.number}. {html.escape(info.slug)}</a><div class="bar">{"".join(segs)}'
                    f"</div>{flag}</div>")
    legend = ('<p class="legend"><span class="seg ok">reproduced</span> <span class="seg mid">'
              'inconclusive</span> <span class="seg no">not reproduced</span></p>')
    return f'<section id="summary"><h2>Summary</h2>{legend}{"".join(rows)}</section>'


def _error_status(res: Mapping[str, Any], emoji: bool = True) -> str:
    """A paper without a completed run: skipped before any compute (with why) or an error."""
    if res.get("skipped"):
        reason = str(res.get("error", "")).strip().removeprefix("skipped before any compute: ")
        return f"skipped before any compute: {reason}"
    return ("⚠️ " if emoji else "") + "error (no completed run)"


def _short(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _claim_anchor(slug: str, cid: str) -> str:
    return "claim-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in f"{slug}-{cid}")


def plot_caption(slug: str, rel: str) -> str:
    """A plot's caption: the paper's ``PLOT_CAPTIONS[file stem]`` where it declares one, else the
    file name in words."""
    stem = Path(rel).stem
    info = PAPERS.get(slug)
    captions: Mapping[str, str] = {}
    if info is not None and info.implemented:
        try:
            captions = getattr(info.experiment(), "PLOT_CAPTIONS", {}) or {}
        except Exception:  # a paper that fails to import still gets its plots shown
            captions = {}
    return captions.get(stem) or stem.replace("_", " ").replace("-", " ")


def _claim_card(info: Any, res: Mapping[str, Any], c: Mapping[str, Any]) -> str:
    """One claim as a card: the verdict first, a one-line evidence, the control, detectability
    and stability; the full evidence (rule, numbers, tuning, regimes) expands on demand."""
    flag = control_flag(c)
    cls = _VERDICT_CLASS.get(c["verdict"], "")
    cls += " powerless" if flag.startswith("POWERLESS") else ""
    e = html.escape
    regimes = ""
    if c.get("regimes"):
        body = "".join(_html_row([r["condition"], r["verdict"], r["ours"]],
                                 _VERDICT_CLASS.get(r["verdict"], "")) for r in c["regimes"])
        regimes = ('<div class="scroll"><table class="regimes"><thead><tr><th>condition</th>'
                   f"<th>verdict</th><th>ours</th></tr></thead><tbody>{body}</tbody></table></div>")
    details = (f"<dl><dt>paper's figure</dt><dd>{e(c['paper_value'])}</dd>"
               f"<dt>ours</dt><dd>{e(c.get('ours', ''))}</dd><dt>rule</dt><dd>{e(c['rule'])}</dd>"
               f"<dt>metric</dt><dd>{e(c.get('metric', ''))}</dd>"
               f"<dt>negative control</dt><dd>{e(c['negative_control']['description'])}: "
               f"{e(_control(c))} — {e(c['negative_control'].get('ours', ''))}</dd>"
               f"<dt>gates</dt><dd>{e(', '.join(c.get('gates', [])) or 'none')}</dd>"
               f"<dt>tuning</dt><dd>{e(tuning_cell(res, c))}</dd>"
               f"<dt>scale</dt><dd>{e(c.get('scale', ''))}</dd></dl>{regimes}")
    anchor = _claim_anchor(info.slug, c["id"])
    return (f'<article class="card claim {cls}" id="{anchor}" data-verdict="{e(c["verdict"])}" '
            f'data-claim="{e(c["id"])}">'
            f'<p class="head"><span class="verdict">{e(verdict_text(c))}</span> '
            f"<b>{e(c['id'])}</b>: {e(c['statement'])}</p>"
            f'<p class="line">{e(_short(c.get("ours", "")))}</p>'
            f'<p class="meta"><span class="cflag">control: {e(_control(c))}</span><br>'
            f'<span class="detect">detectability: {e(detectability_cell(c))}</span><br>'
            f"<span>stability: {e(stability_cell(c))}</span></p>"
            f"<details><summary>full evidence</summary>{details}</details>"
            f'<a class="back" href="#paper-{info.slug}">↑ {e(info.slug)}</a> '
            f'<a class="back" href="#toc">↑ contents</a></article>')


def _paper_section(info: Any, path: Path, res: Mapping[str, Any], results_dir: Path,
                   newer_error: Path | None) -> str:
    rel = _rel(path.parent, results_dir)
    cards = "".join(_claim_card(info, res, c) for c in res["claims"])
    gate_rows = "".join(_html_row([g["name"], g["rule"], _num(g["value"]),
                                   "yes" if g["passed"] else "no"], "ok" if g["passed"] else "no")
                        for g in res.get("substrate") or [])
    gates = ""
    if gate_rows:
        gates = ('<h4>substrate gates</h4><div class="scroll"><table class="gates"><thead><tr>'
                 "<th>gate</th><th>rule</th><th>measured</th><th>passed</th></tr></thead>"
                 f"<tbody>{gate_rows}</tbody></table></div>")
    figs = "".join(f'<figure><img src="{html.escape(f"{rel}/{p}")}" alt="{html.escape(plot_caption(info.slug, p))}">'
                   f"<figcaption>{html.escape(plot_caption(info.slug, p))}</figcaption></figure>"
                   for p in res.get("plots", []))
    err = ""
    if newer_error is not None:
        erel = _rel(newer_error, results_dir)
        err = (f'<p class="error">A newer run raised: <a href="{html.escape(str(erel))}">'
               f"{html.escape(str(erel))}</a>. The cards show the last completed run.</p>")
    return (f'<section class="paper" id="paper-{info.slug}"><h2>{info.number}. {html.escape(info.slug)}'
            f" — {html.escape(info.title)}</h2>{err}<p>result: "
            f'<a class="json" href="{html.escape(f"{rel}/latest.json")}">{html.escape(f"{rel}/latest.json")}</a>'
            f" · status <b>{html.escape(res['status'])}</b> · profile {html.escape(res['profile'])} · seeds "
            f"{html.escape(str(res['seeds']))} · {res['runtime_s']:.0f} s · "
            f'<a class="back" href="#toc">↑ contents</a></p>'
            f'<div class="cards">{cards}</div>{gates}<div class="figs">{figs}</div></section>')


def _toc(latest: Mapping[str, tuple[Path, dict]]) -> str:
    items = []
    for info in PAPERS.values():
        if info.slug not in latest:
            continue
        claims = "".join(
            f'<li><a href="#{_claim_anchor(info.slug, c["id"])}" class="{_VERDICT_CLASS.get(c["verdict"], "")}">'
            f'{html.escape(c["id"])}</a></li>' for c in latest[info.slug][1]["claims"])
        items.append(f'<li><a href="#paper-{info.slug}">{info.number}. {html.escape(info.slug)}</a>'
                     f"<ul>{claims}</ul></li>")
    return (f'<nav id="toc"><b>Contents</b> <a href="#summary">summary</a> · '
            f'<a href="#others">others</a><ul>{"".join(items)}</ul></nav>')


_FILTER = """<div id="filter" role="search"><label>filter <input id="q" type="search"
placeholder="text in a claim"></label> <span class="fbtns"><button data-v="">all</button>
<button data-v="reproduced">reproduced</button><button data-v="not reproduced">not reproduced</button>
<button data-v="inconclusive">inconclusive</button></span></div>
<script>(() => {
  let verdict = "";
  const apply = () => {
    const q = document.getElementById("q").value.toLowerCase();
    for (const card of document.querySelectorAll("article.card")) {
      const v = card.dataset.verdict.replace("numerically consistent", "reproduced")
                                    .replace("not consistent", "not reproduced");
      const ok = (!verdict || v === verdict) && (!q || card.textContent.toLowerCase().includes(q));
      card.hidden = !ok;
    }
  };
  document.getElementById("q").addEventListener("input", apply);
  for (const b of document.querySelectorAll("#filter button"))
    b.addEventListener("click", () => { verdict = b.dataset.v; apply(); });
})();</script>"""

_CSS = """*{box-sizing:border-box}body{font-family:system-ui,sans-serif;margin:0;line-height:1.4}
main{padding:1em;min-width:0}.layout{display:flex;align-items:flex-start}
#toc{position:sticky;top:0;max-height:100vh;overflow:auto;width:15em;flex:none;padding:1em;
font-size:13px;background:#fafafa;border-right:1px solid #ddd}#toc ul{padding-left:1.1em;margin:.2em 0}
#toc a.ok{color:#2e7d32}#toc a.no{color:#c62828}#toc a.mid{color:#827717}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,26em),1fr));gap:.7em}
.card{border:1px solid #ccc;border-left:6px solid #999;border-radius:4px;padding:.5em .7em;
font-size:14px;min-width:0;overflow-wrap:anywhere}.card.ok{border-left-color:#2e7d32}
.card.no{border-left-color:#c62828}.card.mid{border-left-color:#9e9d24}
.card .head{margin:.1em 0}.card .verdict{font-weight:bold;padding:1px 5px;border-radius:3px}
.card.ok .verdict{background:#dff3e0}.card.no .verdict{background:#fbe0e0}.card.mid .verdict{background:#f4f0d8}
.card .line{margin:.3em 0;color:#333}.card .meta{margin:.3em 0;font-size:12px;color:#444}
.card.powerless .cflag{background:#c00;color:#fff;padding:1px 4px;font-weight:bold}
details dt{font-weight:bold}details dd{margin:0 0 .4em 0}a.back{font-size:12px}
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;font-size:13px;margin:.5em 0}
td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top}th{background:#f3f3f3}
tr.ok td{background:#f2faf2}tr.no td{background:#fdf2f2}
.figs{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0;max-width:100%}img{max-width:min(460px,100%)}
.bar-row{display:flex;align-items:center;gap:.5em;margin:2px 0;flex-wrap:wrap}.bar-label{width:12em}
.bar{display:flex;width:min(420px,100%)}.seg{color:#fff;text-align:center;font-size:12px;padding:1px 4px}
.seg.ok{background:#2e7d32}.seg.mid{background:#9e9d24}.seg.no{background:#c62828}
.flag{color:#c00;font-weight:bold}.error{color:#c00}#filter{margin:.5em 0}#filter button{margin:1px}
@media (max-width:800px){.layout{display:block}#toc{position:static;width:auto;max-height:none;
border-right:0;border-bottom:1px solid #ddd}}"""


def _html(latest: Mapping[str, tuple[Path, dict]], errors: Mapping[str, tuple[Path, dict]],
          results_dir: Path) -> str:
    """One self-contained offline page: a table of contents (papers and claims, sticky on wide
    screens), the summary chart, a verdict filter, and a card per claim; usable at phone width."""
    sections, missing = [], []
    for info in PAPERS.values():
        if info.slug not in latest:
            status = "not implemented" if not info.implemented else "not run"
            if info.slug in errors:
                status = _error_status(errors[info.slug][1], emoji=False)
            missing.append(f"<li>{info.number}. {html.escape(info.slug)}: {status}</li>")
            continue
        path, res = latest[info.slug]
        err = errors.get(info.slug)
        newer = err[0] if err and err[1].get("started_at", "") > res.get("started_at", "") else None
        sections.append(_paper_section(info, path, res, results_dir, newer))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>icml26 reproduction report</title><style>{_CSS}</style></head>
<body><div class="layout">{_toc(latest)}<main>
<h1>icml26 reproduction report</h1>
<p>Every number was measured by icml26 at laptop scale (2 CPU cores); the paper's figure is quoted
for reference only. A negative control marked POWERLESS is identical, seed for seed, to another arm:
that claim's check could not fail. A control that passes too explains the effect unless the method
beats it as well. A verdict is inconclusive when the protocol could not have succeeded: its minimum
detectable effect (mde) exceeds the effect the claim is about, a substrate gate failed, or an
s.e.-rule ran on fewer than 3 seeds.</p>
{_summary_chart(latest)}
{_FILTER}
{''.join(sections)}
<section id="others"><h2>Papers without a completed result</h2><ul>{''.join(missing)}</ul></section>
</main></div></body></html>
"""

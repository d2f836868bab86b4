"""The ``icml26`` command line.

    icml26 list                      slug, title, status, last verdicts
    icml26 info SLUG                 the paper, its API entry point, its claims
    icml26 run SLUG|all [--profile P] [--seeds 0,1,2] [--set k=v ...] [--out DIR] [--strict]
               [--seed-jobs N|auto]
    icml26 reproduce [SLUG ...] [--profile quick] [--out DIR] [--jobs N] [--seed-jobs N|auto]
    icml26 report [--results DIR] [--profile P]

Before any compute, ``run`` and ``reproduce`` check what the run needs
(:mod:`icml26.harness.preflight`: packages, the output folder, ``--jobs``, ``--seeds``, a named
``--llm`` server or Ray ``--address``); ``--check`` stops after those checks.

Exit status: 0 when every run completed (whatever the verdicts); 1 when a paper's run raised or
a paper of several was skipped for a missing package; 2 on a usage error before anything runs
(unknown slug/profile/key, bad value, paper not implemented, a failed pre-run check); 3 with
``--strict`` when a claim was not reproduced.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .harness.config import PROFILES, ConfigError
from .harness.preflight import PreflightError
from .harness.registry import PAPERS, UnknownPaperError, get_paper, implemented_papers

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_STRICT = 0, 1, 2, 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="icml26", description="The ICML 2026 paper list, runnable.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", help="list the 19 papers with their status and last verdicts",
                   description="List the papers: slug, title, implemented or not, last verdicts.") \
        .add_argument("--results", default="results",
                      help="results folder to read verdicts from (default: results/; papers "
                           "without a result there show the checked-in docs/results/quick.json)")

    info = sub.add_parser("info", help="show one paper: metadata, API entry point, claims",
                          description="Show one paper's metadata, API entry point and claims.")
    info.add_argument("slug", help="paper slug (see `icml26 list`)")

    def add_run_flags(sp: argparse.ArgumentParser, default_profile: str) -> None:
        sp.add_argument("--profile", default=default_profile, metavar="PROFILE",
                        help=f"smoke (<=15 s), quick (<=3 min) or full (<=30 min), or an extra "
                             f"profile a paper names (`icml26 info SLUG`); default {default_profile}")
        sp.add_argument("--seeds", default=None,
                        help="comma-separated distinct seeds >= 0, overriding the profile's "
                             "(e.g. 0,1,2)")
        sp.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field, type- and range-checked (repeatable); "
                             "goes to every selected paper that declares KEY; SLUG.KEY=VALUE "
                             "targets one paper")
        sp.add_argument("--out", default="results", help="results folder (default: results/)")
        sp.add_argument("--strict", action="store_true",
                        help="exit 3 when a claim is not reproduced or inconclusive")
        sp.add_argument("--jobs", type=int, default=1,
                        help="papers to run in parallel processes (>= 1; default 1)")
        sp.add_argument("--seed-jobs", default="auto", type=_seed_jobs, metavar="N|auto",
                        help="run each paper's seeds in up to N forked processes, one torch "
                             "thread each (same numbers as serial); auto (default): serial for "
                             "smoke, on one core and with --jobs > 1, else every seed at once (<= 4 per core)")
        sp.add_argument("--no-progress", action="store_true", help="disable progress bars")
        sp.add_argument("--llm", metavar="URL", default=None,
                        help="OpenAI-compatible server for the papers' LLM roles, e.g. "
                             "http://127.0.0.1:8080/v1 (default: offline models, no network); "
                             "checked with one GET URL/models (10 s) before the run")
        sp.add_argument("--llm-model", metavar="NAME", default=None,
                        help="model name on the --llm server (default: the only one it serves)")
        sp.add_argument("--llm-cache", metavar="DIR", default=None,
                        help="cache LLM replies in DIR; a rerun makes no request")
        sp.add_argument("--device", default=None, choices=("cpu", "cuda", "auto"),
                        help="where training loops run (default: each config's, cpu); a GPU "
                             "changes the numbers, not the code")
        sp.add_argument("--executor", default="local", choices=("local", "ray"),
                        help="local (in process / --jobs N processes) or ray: one Ray task per "
                             "(paper, seed); needs icml26[ray]")
        sp.add_argument("--address", default=None,
                        help="Ray cluster address (auto, HOST:PORT, ray://HOST:PORT; checked "
                             "with a TCP connection, 15 s, before the run); default: a local Ray")
        sp.add_argument("--resume", action="store_true",
                        help="reuse the seeds an earlier run of the same config completed "
                             "(checkpoints under OUT/SLUG/PROFILE/.seeds/)")
        sp.add_argument("--stability", action=argparse.BooleanOptionalAction, default=None,
                        help="re-judge every claim at each setting of the paper's protocol knobs "
                             "(PROTOCOL_KNOBS; default: on for --profile full, off otherwise)")
        sp.add_argument("--timing", action="store_true",
                        help="print where each paper's time went (the result always records it)")
        sp.add_argument("--check", action="store_true",
                        help="only run the pre-run checks (papers, config, packages, --out, "
                             "--llm, --address) and exit: 0 when the run could start")

    run = sub.add_parser("run", help="reproduce one paper (or `all`)",
                         description="Run a paper's reproduction, judge its claims, write results.")
    run.add_argument("slug", help="paper slug, or `all` for every implemented paper")
    add_run_flags(run, "quick")
    run.add_argument("--pin", action="store_true",
                     help="write the run's verdicts and headline numbers to "
                          "tests/papers/SLUG/expected_smoke.json (smoke profile only)")

    rep = sub.add_parser("reproduce", help="run papers (default: all implemented) and write the report",
                         description="Run papers (default all implemented), then write the report.")
    rep.add_argument("slugs", nargs="*", help="paper slugs (default: all implemented)")
    add_run_flags(rep, "quick")

    tool = sub.add_parser("disempowerment", help="analyse your own conversation logs (JSONL, OpenAI "
                          "messages, ShareGPT, CSV) for "
                          "disempowerment potential; `icml26 disempowerment analyze --help`",
                          description="The disempowerment pipeline on a user's logs (JSONL, "
                                      "OpenAI messages, ShareGPT or CSV) "
                                      "(analyze FILE --out DIR [--llm URL]) or a synthetic corpus "
                                      "(generate FILE --n N).", add_help=False)
    tool.add_argument("args", nargs=argparse.REMAINDER)

    report = sub.add_parser("report", help="gather the latest results into REPORT.md and report.html",
                            description="Write DIR/REPORT.md and DIR/report.html from the latest results.")
    report.add_argument("--results", default="results", help="results folder (default: results/)")
    report.add_argument("--merge", action="append", default=[], metavar="DIR",
                        help="also gather results from DIR (repeatable): results made on several "
                             "machines merge, the newest run of each paper wins")
    report.add_argument("--profile", default=None, choices=PROFILES, help="only this profile")
    report.add_argument("--readme", action="store_true",
                        help="also merge the latest results (of --profile, default quick) into "
                             "docs/results/PROFILE.json and regenerate the README tables from it "
                             "(run from the repository root)")
    return p


def _seed_jobs(value: str) -> int | str:
    from .harness.fork_executor import parse_seed_jobs

    try:
        return parse_seed_jobs(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _counts(claims: Sequence[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for c in claims:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    return ", ".join(f"{n} {v}" for v, n in counts.items()) or "no claims"


def _error_line(error: str) -> str:
    """The last line of a traceback: the exception and its message."""
    lines = [ln.strip() for ln in str(error).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "error"


def checked_in_summary(profile: str = "quick") -> tuple[Path, dict[str, Any]] | None:
    """``docs/results/PROFILE.json`` (the README's measured verdicts) from the current folder or
    the source checkout this package runs from; None when neither has it."""
    import json

    here = Path(__file__).resolve().parents[2]  # the checkout root in a src layout
    for root in (Path.cwd(), here):
        path = root / "docs" / "results" / f"{profile}.json"
        if path.is_file():
            try:
                return path, json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
    return None


def _last_verdicts(results: Path) -> tuple[dict[str, str], str | None]:
    """Per paper, its last verdicts (and a newer error next to them); a note naming the
    checked-in summary when some papers' verdicts come from it."""
    from .harness.report import collect_latest

    latest = collect_latest(results) if results.is_dir() else {}
    errors = collect_latest(results, name="latest-error.json") if results.is_dir() else {}
    summary = checked_in_summary("quick")
    out: dict[str, str] = {}
    used_summary = False
    for slug in PAPERS:
        text = ""
        if slug in latest:
            res = latest[slug][1]
            text = f"{res['profile']}: {_counts(res['claims'])}"
        elif summary is not None and slug in summary[1].get("papers", {}):
            text = f"quick: {_counts(summary[1]['papers'][slug]['claims'])} (checked in)"
            used_summary = True
        if slug in errors:
            err = errors[slug][1]
            newer = slug not in latest or (err.get("started_at", "")
                                           > latest[slug][1].get("started_at", ""))
            if newer:
                kind = "skipped" if err.get("skipped") else "error"
                note = f"newer {err['profile']} run: {kind} ({_error_line(err.get('error', ''))})"
                text = f"{text}; {note}" if text else note
        out[slug] = text
    note = None
    if used_summary:
        where = "no results there" if not latest else "papers without a result there"
        note = (f"verdicts from {results}/ ({where}: \"checked in\" = the quick verdicts "
                f"measured for the README, {summary[0]})")
    return out, note


def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    verdicts, note = _last_verdicts(Path(args.results))
    table = Table(title="icml26 — ICML 2026 papers", caption=escape(note) if note else None)
    for col in ("#", "slug", "paper", "status", "last verdicts"):
        table.add_column(col)
    for info in PAPERS.values():
        status = "implemented" if info.implemented else "not implemented"
        table.add_row(str(info.number), info.slug, escape(info.short), status,
                      escape(verdicts.get(info.slug, "")))
    # a terminal: its width; a pipe or a file: wide enough not to cut the table
    Console(width=_width() if sys.stdout.isatty() else max(_width(), 160)).print(table)
    return EXIT_OK


def _width() -> int:
    """The terminal's width (80 when it cannot be told, never under 40)."""
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def _wrap(text: str, indent: str = "", hang: str = "    ") -> str:
    """``text`` wrapped to the terminal's width, the first line after ``indent``, the others
    after ``indent + hang``; a line that already fits is left as it is."""
    width = _width()
    out = []
    for i, line in enumerate(str(text).splitlines() or [""]):
        first = indent if i == 0 else indent + hang
        if len(first + line) <= width:
            out.append(first + line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out.append(textwrap.fill(line.strip(), width=width, initial_indent=first + lead,
                                 subsequent_indent=indent + hang + lead,
                                 break_on_hyphens=False, break_long_words=False))
    return "\n".join(out)


def cmd_info(args: argparse.Namespace) -> int:
    info = get_paper(args.slug)
    print(_wrap(f"{info.number}. {info.slug}: {info.title}"))
    print(_wrap(f"arXiv: {info.url or 'none found'}", "  "))
    print(_wrap(f"code:  {info.code_url or 'none public'}", "  "))
    if not info.implemented:
        print("  status: not implemented")
        return EXIT_OK
    print(_wrap(f"API:   {info.api or info.module_name}", "  "))
    exp = info.experiment()
    for profile in exp.Config.profiles():
        cfg = exp.Config.from_profile(profile)
        print(f"  profile {profile}: seeds {list(cfg.seeds)}, budget {cfg.budget_s:.0f} s")
    gates = {g.name: g for g in getattr(exp, "SUBSTRATE", ())}
    knobs = getattr(exp, "PROTOCOL_KNOBS", {}) or {}
    if knobs:
        print(_wrap("protocol knobs (swept in full): " + "; ".join(
            f"{k} in {list(v)}" for k, v in knobs.items()), "  ", "  "))
    print("  claims:")
    for c in exp.CLAIMS:
        print(_wrap(f"- [{c.id}] {c.statement}", "   ", "  "))
        effect = (f"{c.effect:g} ({c.effect_source})" if c.effect is not None else "not declared")
        needs = "; ".join(f"{g}: {gates[g].rule}" if g in gates else g for g in c.gates) or "none"
        for label, value in (("paper", c.paper_value), ("metric", f"{c.metric}; scale: {c.scale}"),
                             ("rule", c.rule), ("negative control", c.control_description),
                             ("effect", effect), ("gates", needs)):
            print(_wrap(f"{label}: {value}", "       ", "  "))
    if hasattr(exp, "describe"):
        print(_wrap(exp.describe(), "", ""))
    return EXIT_OK


class _RichProgress:
    """Progress on stderr: papers done/total, the current paper's seed and phase, elapsed and
    estimated time (rich bars on a TTY, plain timestamped lines otherwise)."""

    def __init__(self, enabled: bool, n_papers: int = 1) -> None:
        self.tty = enabled and sys.stderr.isatty()
        self.enabled = enabled
        self.n_papers = n_papers
        self._progress = None
        self._overall = None
        self._done: set[str] = set()
        self._t0 = 0.0

    def __enter__(self) -> _RichProgress:
        import time

        self._t0 = time.monotonic()
        if self.tty:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      TextColumn("eta"), TimeRemainingColumn(),
                                      console=Console(stderr=True))
            self._progress.__enter__()
            self._overall = self._progress.add_task("papers", total=self.n_papers)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def _paper_done(self, slug: str) -> None:
        if slug not in self._done:
            self._done.add(slug)
            if self._progress is not None:
                self._progress.update(self._overall, completed=len(self._done))

    def factory(self, slug: str):
        import time

        if not self.enabled:
            return None
        if self._progress is None:
            def plain(msg: str, i: int, n: int) -> None:
                if msg == "done":
                    self._paper_done(slug)
                elapsed = time.monotonic() - self._t0
                papers = f"paper {len(self._done) + (msg != 'done')}/{self.n_papers}"
                with contextlib.suppress(OSError):  # a closed pipe must not stop the run
                    print(f"[{elapsed:7.1f} s] {papers} {slug}: {msg} ({min(i + 1, n)}/{n} seeds)",
                          file=sys.stderr, flush=True)
            return plain
        task = self._progress.add_task(slug, total=None)

        def update(msg: str, i: int, n: int) -> None:
            self._progress.update(task, total=n, completed=i, description=f"  {slug}: {msg}")
            if msg == "done":
                self._paper_done(slug)
        return update


def _timing_lines(res: dict[str, Any]) -> str:
    """Where a paper's time went: per seed its total, core loops and phases; judging, plotting."""
    t = res.get("timing") or {}
    lines = [f"timing {res['paper']} [{res['profile']}]: {res.get('runtime_s', 0):.1f} s wall"]
    for s in t.get("seeds", []):
        loops = ", ".join(f"{k} {v:.1f} s" for k, v in s.get("loops_s", {}).items())
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in s.get("phases_s", {}).items())
        parts = "; ".join(p for p in (loops, phases) if p) or "no instrumented loop"
        lines.append(f"  seed {s['seed']}: {s['total_s']:.1f} s ({parts})")
    extra = ", ".join(f"{k[:-2]} {t[k]:.1f} s" for k in ("judge_s", "plot_s", "stability_s")
                      if t.get(k) is not None)
    if extra:
        lines.append(f"  {extra}")
    return "\n".join(lines)


def _failed_line(res: dict[str, Any], out: str) -> str:
    """The message for a paper whose run raised: what raised, which seeds were kept, where the
    traceback is."""
    kept = res.get("seeds") or [] if res.get("partial") else []
    failed = res.get("failed_seed")
    where = f" in seed {failed}" if failed is not None else ""
    seeds = (f"; seeds {kept} completed and kept (rerun with --resume to continue)" if kept
             else "")
    path = Path(out) / res["paper"] / res["profile"] / "latest-error.json"
    return (f"{res['paper']}: ERROR{where}: {_error_line(res.get('error', ''))}\n"
            f"  latest.json left unchanged{seeds}; full traceback: {path}")


def _run(slugs: list[str], args: argparse.Namespace, write_report: bool) -> int:
    from .core.llm.resolve import apply_llm_settings
    from .harness.preflight import record_skipped
    from .harness.report import control_flag
    from .harness.runner import run_many

    skipped = getattr(args, "skipped", [])
    if skipped:
        record_skipped(skipped, args.out, args.profile)
        for sk in skipped:
            print(f"{sk.slug}: SKIPPED before any compute: {sk.reason}", file=sys.stderr)
        skip = {sk.slug for sk in skipped}
        slugs = [s for s in slugs if s not in skip]
    # env: reaches --jobs workers too; the model the pre-run check found when none was named
    apply_llm_settings(args.llm, args.llm_model or getattr(args, "llm_model_found", None),
                       args.llm_cache)
    with _RichProgress(not args.no_progress, len(slugs)) as bars:
        results = run_many(slugs, args.profile, seeds=args.seeds, overrides=args.overrides,
                           out=args.out, jobs=args.jobs, progress_factory=bars.factory,
                           resume=args.resume, executor=args.executor, address=args.address,
                           stability=args.stability, seed_jobs=args.seed_jobs)
    if args.timing:
        for res in results:
            print(_timing_lines(res), file=sys.stderr)
    code = EXIT_ERROR if skipped else EXIT_OK
    for res in results:
        if res["status"] == "error":
            print(_failed_line(res, args.out), file=sys.stderr)
            code = EXIT_ERROR
            continue
        print(f"{res['paper']} [{res['profile']}] {res['runtime_s']:.1f} s, seeds {res['seeds']}")
        for c in res["claims"]:
            nc = c["negative_control"]
            print(f"  {c['id']:<24} {c['verdict']:<15} ours: {c.get('ours', '')}")
            for r in c.get("regimes", []):
                print(f"  {'':<26}{r['condition']}: {r['verdict']} ({r['ours']})")
            print(f"  {'':<24} control {nc.get('arm', '')}: {nc['verdict']} ({control_flag(c)})")
            if args.strict and c["verdict"] != "reproduced" and code == EXIT_OK:
                code = EXIT_STRICT
        if getattr(args, "pin", False):
            from .harness.pins import write_pin

            print(f"pinned: {write_pin(res, Path('tests') / 'papers' / res['paper'])}")
    for sk in skipped:
        print(f"{sk.slug}: skipped ({sk.reason})", file=sys.stderr)
    if write_report:
        from .harness.report import write_report as _write

        md, html_path = _write(args.out)
        print(f"report: {md} and {html_path}")
    return code


def cmd_run(args: argparse.Namespace) -> int:
    slugs = [p.slug for p in implemented_papers()] if args.slug == "all" else [args.slug]
    if args.pin and args.profile != "smoke":
        raise ConfigError("--pin records smoke verdicts: use it with --profile smoke")
    if args.pin and (args.overrides or args.seeds is not None or getattr(args, "device", None)):
        raise ConfigError("--pin records the smoke profile as the tests run it: drop --set, "
                          "--seeds and --device")
    if args.pin and not (Path("tests") / "papers").is_dir():
        raise FileNotFoundError("--pin writes tests/papers/SLUG/expected_smoke.json: run it from "
                                "the repository root")
    _check_runnable(slugs, args, several=args.slug == "all")
    if args.pin:
        from .harness.preflight import check_writable_dir

        for slug in slugs:
            check_writable_dir(Path("tests") / "papers" / slug, "--pin")
    if args.check:
        return _checked(slugs, args)
    return _run(slugs, args, write_report=False)


def _device_override(args: argparse.Namespace) -> None:
    if getattr(args, "device", None):
        args.overrides = [*args.overrides, f"device={args.device}"]


def cmd_reproduce(args: argparse.Namespace) -> int:
    slugs = args.slugs or [p.slug for p in implemented_papers()]
    _check_runnable(slugs, args, several=len(slugs) > 1)
    if args.check:
        return _checked(slugs, args)
    return _run(slugs, args, write_report=True)


def _checked(slugs: Sequence[str], args: argparse.Namespace) -> int:
    """``--check``: report the pre-run checks and stop."""
    skipped = getattr(args, "skipped", [])
    for sk in skipped:
        print(f"{sk.slug}: would be skipped: {sk.reason}", file=sys.stderr)
    ready = [s for s in slugs if s not in {sk.slug for sk in skipped}]
    print(f"pre-run checks passed: {len(ready)} of {len(slugs)} papers ready to run "
          f"({args.profile} profile, results in {args.out})")
    return EXIT_ERROR if skipped else EXIT_OK


def _check_runnable(slugs: Sequence[str], args: argparse.Namespace, several: bool = False) -> None:
    """Everything is checked before anything runs: unknown slug, not implemented, bad --set or
    --seeds, then the pre-run checks of :mod:`icml26.harness.preflight` (packages, --out, --jobs,
    a named --llm server or Ray --address). With ``several`` papers, one whose package is missing
    is skipped (``args.skipped``) instead of stopping the run."""
    from .harness.preflight import check_run, parse_seeds
    from .harness.runner import build_config, route_overrides

    if isinstance(args.seeds, str):
        try:
            args.seeds = parse_seeds(args.seeds)
        except ValueError as exc:
            raise PreflightError(str(exc)) from None
    _device_override(args)
    for slug in slugs:
        if not get_paper(slug).implemented:
            raise NotImplementedError(f"paper {slug!r} is not implemented yet")
    routed = route_overrides(slugs, args.overrides)
    for slug in slugs:
        build_config(get_paper(slug).experiment(), args.profile, routed[slug], args.seeds)
    from .core.llm.resolve import llm_settings

    env = llm_settings()  # a server named by $ICML26_LLM_BASE_URL is checked like --llm
    checked = check_run(slugs, profile=args.profile, out=args.out, jobs=args.jobs,
                        executor=args.executor, address=args.address,
                        llm=args.llm or env["base_url"],
                        llm_model=args.llm_model or env["model"],
                        llm_cache=args.llm_cache or env["cache_dir"], skip_missing=several)
    args.skipped, args.llm_model_found = checked.skipped, checked.llm_model


def cmd_report(args: argparse.Namespace) -> int:
    from .harness.preflight import check_report_dir, check_writable_dir
    from .harness.report import write_report

    check_report_dir(args.results)
    for extra in args.merge:
        if not Path(extra).is_dir():
            raise FileNotFoundError(f"no results folder {extra!r} to merge")
    if args.readme:
        if not Path("README.md").is_file():
            raise FileNotFoundError("--readme rewrites ./README.md: run it from the repository root")
        check_writable_dir(".", "--readme")
        check_writable_dir(Path("docs") / "results", "--readme")
    md, html_path = write_report(args.results, args.profile, merge=args.merge)
    print(f"report: {md} and {html_path}")
    if args.readme:
        from .harness.readme import update_from_results

        summary, changed = update_from_results(args.results, ".", args.profile or "quick")
        print(f"summary: {summary}; README tables rewritten: {[str(c) for c in changed] or 'none'}")
    return EXIT_OK


def cmd_disempowerment(args: argparse.Namespace) -> int:
    from .papers.disempowerment.__main__ import main as tool_main

    return tool_main(args.args or ["--help"])


COMMANDS = {"list": cmd_list, "info": cmd_info, "run": cmd_run, "reproduce": cmd_reproduce,
            "report": cmd_report, "disempowerment": cmd_disempowerment}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (UnknownPaperError, ConfigError, NotImplementedError, FileNotFoundError,
            PreflightError) as exc:
        print(f"icml26: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

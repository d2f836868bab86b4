"""The ``icml26`` command line.

    icml26 list                      slug, title, status, last verdicts
    icml26 info SLUG                 the paper, its API entry point, its claims
    icml26 run SLUG|all [--profile P] [--seeds 0,1,2] [--set k=v ...] [--out DIR] [--strict]
    icml26 reproduce [SLUG ...] [--profile quick] [--out DIR] [--jobs N] [--strict]
    icml26 report [--results DIR] [--profile P]

Exit status: 0 when every run completed (whatever the verdicts); 1 when a paper's run raised;
2 on a usage error (unknown slug/profile/key, bad value, paper not implemented); 3 with
``--strict`` when a claim was not reproduced.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .harness.config import PROFILES, ConfigError
from .harness.registry import PAPERS, UnknownPaperError, get_paper, implemented_papers

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_STRICT = 0, 1, 2, 3


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds expects comma-separated integers, got {text!r}") from None
    if not seeds or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError("--seeds needs one or more non-negative integers")
    return seeds


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="icml26", description="The ICML 2026 paper list, runnable.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", help="list the 19 papers with their status and last verdicts",
                   description="List the papers: slug, title, implemented or not, last verdicts.") \
        .add_argument("--results", default="results", help="results folder to read verdicts from")

    info = sub.add_parser("info", help="show one paper: metadata, API entry point, claims",
                          description="Show one paper's metadata, API entry point and claims.")
    info.add_argument("slug", help="paper slug (see `icml26 list`)")

    def add_run_flags(sp: argparse.ArgumentParser, default_profile: str) -> None:
        sp.add_argument("--profile", default=default_profile, choices=PROFILES,
                        help=f"smoke (<=15 s), quick (<=3 min) or full (<=30 min); default {default_profile}")
        sp.add_argument("--seeds", type=_seeds, default=None,
                        help="comma-separated seeds, overriding the profile's (e.g. 0,1,2)")
        sp.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field, type- and range-checked (repeatable); "
                             "goes to every selected paper that declares KEY; SLUG.KEY=VALUE "
                             "targets one paper")
        sp.add_argument("--out", default="results", help="results folder (default: results/)")
        sp.add_argument("--strict", action="store_true",
                        help="exit 3 when a claim is not reproduced or inconclusive")
        sp.add_argument("--jobs", type=int, default=1,
                        help="papers to run in parallel processes (default 1)")
        sp.add_argument("--no-progress", action="store_true", help="disable progress bars")
        sp.add_argument("--llm", metavar="URL", default=None,
                        help="OpenAI-compatible server for the papers' LLM roles, e.g. "
                             "http://127.0.0.1:8080/v1 (default: offline models, no network)")
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
                        help="Ray cluster address (auto, ray://host:port); default: a local Ray")
        sp.add_argument("--resume", action="store_true",
                        help="reuse the seeds an earlier run of the same config completed "
                             "(checkpoints under OUT/SLUG/PROFILE/.seeds/)")

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

    tool = sub.add_parser("disempowerment", help="analyse your own conversation logs (JSONL) for "
                          "disempowerment potential; `icml26 disempowerment analyze --help`",
                          description="The disempowerment pipeline on a user's JSONL logs "
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


def _last_verdicts(results: Path, slug: str) -> str:
    from .harness.report import collect_latest

    latest = collect_latest(results).get(slug)
    if latest is None:
        return ""
    res = latest[1]
    if res["status"] == "error":
        return f"{res['profile']}: error"
    counts: dict[str, int] = {}
    for c in res["claims"]:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    return f"{res['profile']}: " + ", ".join(f"{n} {v}" for v, n in counts.items())


def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="icml26 — ICML 2026 papers")
    for col in ("#", "slug", "paper", "status", "last verdicts"):
        table.add_column(col)
    for info in PAPERS.values():
        status = "implemented" if info.implemented else "not implemented"
        table.add_row(str(info.number), info.slug, info.short, status,
                      _last_verdicts(Path(args.results), info.slug))
    Console(width=160).print(table)
    return EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    info = get_paper(args.slug)
    print(f"{info.number}. {info.slug}: {info.title}")
    print(f"  arXiv: {info.url or 'none found'}")
    print(f"  code:  {info.code_url or 'none public'}")
    if not info.implemented:
        print("  status: not implemented")
        return EXIT_OK
    print(f"  API:   {info.api or info.module_name}")
    exp = info.experiment()
    for profile in PROFILES:
        cfg = exp.Config.from_profile(profile)
        print(f"  profile {profile}: seeds {list(cfg.seeds)}, budget {cfg.budget_s:.0f} s")
    print("  claims:")
    for c in exp.CLAIMS:
        print(f"   - [{c.id}] {c.statement}")
        print(f"       paper: {c.paper_value}")
        print(f"       metric: {c.metric}; scale: {c.scale}")
        print(f"       rule: {c.rule}")
        print(f"       negative control: {c.control_description}")
    if hasattr(exp, "describe"):
        print(exp.describe())
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


def _run(slugs: list[str], args: argparse.Namespace, write_report: bool) -> int:
    from .core.llm.resolve import apply_llm_settings
    from .harness.report import control_flag
    from .harness.runner import run_many

    apply_llm_settings(args.llm, args.llm_model, args.llm_cache)  # env: reaches --jobs workers too
    with _RichProgress(not args.no_progress, len(slugs)) as bars:
        results = run_many(slugs, args.profile, seeds=args.seeds, overrides=args.overrides,
                           out=args.out, jobs=args.jobs, progress_factory=bars.factory,
                           resume=args.resume, executor=args.executor, address=args.address)
    code = EXIT_OK
    for res in results:
        if res["status"] == "error":
            seeds = f" (seeds {res['seeds']} completed and kept)" if res.get("partial") else ""
            print(f"{res['paper']}: ERROR{seeds}; latest.json left unchanged\n"
                  f"{res.get('error', '')}", file=sys.stderr)
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
    _check_runnable(slugs, args)
    return _run(slugs, args, write_report=False)


def _device_override(args: argparse.Namespace) -> None:
    if getattr(args, "device", None):
        args.overrides = [*args.overrides, f"device={args.device}"]


def cmd_reproduce(args: argparse.Namespace) -> int:
    slugs = args.slugs or [p.slug for p in implemented_papers()]
    _check_runnable(slugs, args)
    return _run(slugs, args, write_report=True)


def _check_runnable(slugs: Sequence[str], args: argparse.Namespace) -> None:
    """Usage errors surface before anything runs: unknown slug, not implemented, bad --set."""
    from .harness.runner import build_config, route_overrides

    _device_override(args)
    for slug in slugs:
        if not get_paper(slug).implemented:
            raise NotImplementedError(f"paper {slug!r} is not implemented yet")
    routed = route_overrides(slugs, args.overrides)
    for slug in slugs:
        build_config(get_paper(slug).experiment(), args.profile, routed[slug], args.seeds)


def cmd_report(args: argparse.Namespace) -> int:
    from .harness.report import write_report

    if not Path(args.results).is_dir():
        raise FileNotFoundError(f"no results folder {args.results!r}; run `icml26 reproduce` first")
    for extra in args.merge:
        if not Path(extra).is_dir():
            raise FileNotFoundError(f"no results folder {extra!r} to merge")
    md, html_path = write_report(args.results, args.profile, merge=args.merge)
    print(f"report: {md} and {html_path}")
    if args.readme:
        from .harness.readme import update_from_results

        if not Path("README.md").is_file():
            raise FileNotFoundError("--readme rewrites ./README.md: run it from the repository root")
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
    except (UnknownPaperError, ConfigError, NotImplementedError, FileNotFoundError) as exc:
        print(f"icml26: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

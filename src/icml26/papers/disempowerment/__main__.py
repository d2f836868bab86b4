"""Command line: ``python -m icml26.papers.disempowerment analyze FILE --out DIR [--llm URL]``.

Also ``generate OUT.jsonl --n N`` (a synthetic corpus to try the pipeline on). FILE is JSON Lines,
a JSON array or CSV (``--format``), UTF-8 or Latin-1 (``--encoding``). Progress goes to stderr;
the report to ``DIR/report.json`` and ``DIR/report.md``. An interrupted run resumes from
``DIR/.checkpoint.json`` when called again with the same file (``--no-resume`` starts over).

Exit codes: 0 done; 2 bad options or an unreadable input (one line on stderr); 3 the LLM rater
became unavailable (the checkpoint is kept: run again to resume).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):   # one line, exit 2
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _progress(info: dict) -> None:
    tot = info.get("total_bytes")
    pct = f" {100 * info['bytes'] / tot:5.1f}%" if tot else ""
    print(f"\r{info['lines']:,} lines{pct} ({info['conversations_per_s']:,.0f}/s)", end="",
          file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m icml26.papers.disempowerment",
                 description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    a = sub.add_parser("analyze", help="analyse a log file (JSONL, JSON array or CSV)")
    a.add_argument("file")
    a.add_argument("--out", required=True, help="output folder")
    a.add_argument("--format", default="auto", choices=("auto", "jsonl", "json", "csv"))
    a.add_argument("--encoding", default="utf-8", help="utf-8 (default), latin-1 or cp1252")
    a.add_argument("--llm", default=None, help="OpenAI-compatible server URL (opt-in rater)")
    a.add_argument("--llm-model", default=None)
    a.add_argument("--llm-cache", default=None,
                   help="cache folder for LLM replies (must be outside --out: replies can "
                        "quote conversations)")
    a.add_argument("--llm-retries", type=int, default=4, help="client retries per request")
    a.add_argument("--llm-timeout", type=float, default=120.0, help="seconds per request")
    a.add_argument("--min-users", type=int, default=25,
                   help="k_min distinct users per cluster and per table row")
    a.add_argument("--batch-size", type=int, default=2000)
    a.add_argument("--checkpoint-every", type=int, default=50_000, help="records")
    a.add_argument("--checkpoint-seconds", type=float, default=5.0)
    a.add_argument("--no-resume", action="store_true")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--quiet", action="store_true")
    g = sub.add_parser("generate", help="write a synthetic corpus (eval bank) to try the pipeline")
    g.add_argument("file")
    g.add_argument("--n", type=int, default=10_000)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--null", action="store_true", help="no planted trend or approval effect")
    return ap


def _inside(path: str, folder: str) -> bool:
    p, f = Path(path).resolve(), Path(folder).resolve()
    return p == f or f in p.parents


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:   # --help (0) or a usage error (2, message already printed)
        return int(exc.code or 0)

    if args.cmd == "generate":
        from .corpus import WorldSpec, write_corpus

        if args.n < 1:
            print(f"error: --n must be >= 1, got {args.n}", file=sys.stderr)
            return 2
        truth = write_corpus(args.file, args.n, args.seed, WorldSpec.null() if args.null else WorldSpec())
        print(json.dumps({"written": args.file, "n": args.n, "planted": truth.expected}, indent=1))
        return 0

    from .pipeline import AnalyzeAborted, analyze, check_options
    from .readers import InputError, sniff

    try:
        check_options(min_users=args.min_users, batch_size=args.batch_size,
                      checkpoint_every=args.checkpoint_every,
                      checkpoint_seconds=args.checkpoint_seconds)
        if args.llm_retries < 0:
            raise InputError(f"--llm-retries must be >= 0, got {args.llm_retries}")
        if not args.llm_timeout > 0:
            raise InputError(f"--llm-timeout must be > 0 seconds, got {args.llm_timeout}")
        if args.llm_cache and _inside(args.llm_cache, args.out):
            raise InputError("--llm-cache must be outside --out (cached replies can quote "
                             "conversations)")
        sniff(args.file, args.format, args.encoding)   # fail fast, before training anything
    except (InputError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    from .classify import ChatSchemaClassifier, default_classifier

    clf = default_classifier(args.seed)
    if args.llm:
        from icml26.core.llm import resolve_chat_model

        try:
            model = resolve_chat_model(lambda: None, base_url=args.llm, model=args.llm_model,
                                       cache_dir=args.llm_cache, max_retries=args.llm_retries,
                                       timeout=args.llm_timeout)
        except ValueError as exc:
            print(f"error: --llm: {exc}", file=sys.stderr)
            return 2
        clf = ChatSchemaClassifier(model, screener=clf)
    try:
        rep = analyze(args.file, out_dir=args.out, classifier=clf, min_users=args.min_users,
                      batch_size=args.batch_size, checkpoint_every=args.checkpoint_every,
                      checkpoint_seconds=args.checkpoint_seconds, resume=not args.no_resume,
                      seed=args.seed, format=args.format, encoding=args.encoding,
                      progress=None if args.quiet else _progress)
    except (InputError, FileNotFoundError) as exc:
        if not args.quiet:
            print(file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except AnalyzeAborted as exc:
        if not args.quiet:
            print(file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return 3
    if not args.quiet:
        print(file=sys.stderr)
    m = rep["meta"]
    unit = m["source"].get("unit", "line")
    print(f"{m['n_conversations']:,} conversations ({m['n_malformed']} malformed {unit}s skipped"
          + (f", first at {unit} {m['malformed'][0]['line']}" if m["malformed"] else "")
          + f"; {m['n_duplicates']} duplicate ids skipped; {m['llm_failures']} not rated by the "
          f"LLM); report in {args.out}/report.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

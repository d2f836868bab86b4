"""Command line: ``python -m icml26.papers.disempowerment analyze FILE.jsonl --out DIR [--llm URL]``.

Also ``generate OUT.jsonl --n N`` (a synthetic corpus to try the pipeline on). Progress goes to
stderr; the report to ``DIR/report.json`` and ``DIR/report.md``. An interrupted run resumes from
``DIR/.checkpoint.json`` when called again with the same file (``--no-resume`` starts over).
"""

from __future__ import annotations

import argparse
import json
import sys


def _progress(info: dict) -> None:
    tot = info.get("total_bytes")
    pct = f" {100 * info['bytes'] / tot:5.1f}%" if tot else ""
    print(f"\r{info['lines']:,} lines{pct} ({info['conversations_per_s']:,.0f}/s)", end="",
          file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m icml26.papers.disempowerment",
                                 description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analyze", help="analyse a JSONL file of conversations")
    a.add_argument("file")
    a.add_argument("--out", required=True, help="output folder")
    a.add_argument("--llm", default=None, help="OpenAI-compatible server URL (opt-in rater)")
    a.add_argument("--llm-model", default=None)
    a.add_argument("--llm-cache", default=None)
    a.add_argument("--min-users", type=int, default=25, help="k_min distinct users per cluster")
    a.add_argument("--batch-size", type=int, default=2000)
    a.add_argument("--checkpoint-every", type=int, default=50_000)
    a.add_argument("--no-resume", action="store_true")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--quiet", action="store_true")
    g = sub.add_parser("generate", help="write a synthetic corpus (eval bank) to try the pipeline")
    g.add_argument("file")
    g.add_argument("--n", type=int, default=10_000)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--null", action="store_true", help="no planted trend or approval effect")
    args = ap.parse_args(argv)

    if args.cmd == "generate":
        from .corpus import WorldSpec, write_corpus

        truth = write_corpus(args.file, args.n, args.seed, WorldSpec.null() if args.null else WorldSpec())
        print(json.dumps({"written": args.file, "n": args.n, "planted": truth.expected}, indent=1))
        return 0

    from .classify import ChatSchemaClassifier, default_classifier
    from .pipeline import analyze

    clf = default_classifier(args.seed)
    if args.llm:
        from icml26.core.llm import resolve_chat_model

        model = resolve_chat_model(lambda: None, base_url=args.llm, model=args.llm_model,
                                   cache_dir=args.llm_cache)
        clf = ChatSchemaClassifier(model, screener=clf)
    try:
        rep = analyze(args.file, out_dir=args.out, classifier=clf, min_users=args.min_users,
                      batch_size=args.batch_size, checkpoint_every=args.checkpoint_every,
                      resume=not args.no_resume, seed=args.seed,
                      progress=None if args.quiet else _progress)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(file=sys.stderr)
    m = rep["meta"]
    print(f"{m['n_conversations']:,} conversations ({m['n_malformed']} malformed lines skipped"
          + (f", first at line {m['malformed'][0]['line']}" if m["malformed"] else "")
          + f"); report in {args.out}/report.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

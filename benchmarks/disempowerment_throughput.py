"""Throughput and memory of ``icml26.papers.disempowerment.analyze`` with the local classifier.

Generates synthetic JSONL files of increasing size (default 10k, 100k and 1M conversations), runs
``analyze`` on each in a fresh subprocess, and records conversations/s and the subprocess's peak
resident memory (ru_maxrss). Memory is O(batch + max_facets): the facet sample for clustering is
capped, so the peak stops growing once a file has more flagged conversations than the cap (about
1.7% of synthetic conversations are flagged; the default sizes all exceed a cap of 1,500). With the
library default cap of 20,000, a 1M-line file peaked at 316 MB vs 138 MB for 10k lines (the k-means
step on 20,000 facets), bounded by the cap, not the file.
Target (issue 31): >= 2,000 conversations/s on one core.

Usage: ``python benchmarks/disempowerment_throughput.py [--sizes 10000 100000 1000000]
[--out bench.json] [--workdir /tmp/dis_bench]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from icml26.papers.disempowerment import analyze, default_classifier
clf = default_classifier(0)
t0 = time.perf_counter()
rep = analyze(sys.argv[1], out_dir=sys.argv[2], classifier=clf, resume=False,
              max_facets=int(sys.argv[3]))
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "n": rep["meta"]["n_conversations"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--out", default="disempowerment_throughput.json")
    ap.add_argument("--workdir", default="/tmp/disempowerment_bench")
    ap.add_argument("--max-facets", type=int, default=1500,
                    help="facet sample cap (analyze's default is 20000); memory is O(batch + cap), so "
                         "flatness shows once every size has more flagged conversations than the cap")
    args = ap.parse_args()
    from icml26.papers.disempowerment import WorldSpec, write_corpus

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = []
    for n in args.sizes:
        f = work / f"conv_{n}.jsonl"
        if not f.exists():
            t = time.perf_counter()
            write_corpus(f, n, 0, WorldSpec())
            print(f"generated {n:,} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        res = subprocess.run([sys.executable, "-c", CHILD, str(f), str(work / f"out_{n}"),
                              str(args.max_facets)],
                             capture_output=True, text=True, env=env, check=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        r.update({"file_mb": f.stat().st_size / 2**20, "conversations_per_s": r["n"] / r["seconds"]})
        rows.append(r)
        print(json.dumps(r), file=sys.stderr)
    out = {"benchmark": "disempowerment analyze throughput (local TF-IDF classifier, 1 thread)",
           "max_facets": args.max_facets,
           "target_conversations_per_s": 2000, "rows": rows,
           "peak_rss_growth": rows[-1]["peak_rss_mb"] / rows[0]["peak_rss_mb"] if rows else None}
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

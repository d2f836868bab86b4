"""Time the NAMMD/MMD closeness tests and the permutation test at m = 1000, d = 64 (CPU seconds).

Run: ``OMP_NUM_THREADS=1 python benchmarks/nammd_closeness.py`` -> prints JSON.
"""

from __future__ import annotations

import json
import time

import numpy as np

from icml26.papers.nammd import (
    mmd_closeness_test,
    nammd_closeness_test,
    nammd_two_sample_test,
)


def _time(fn, repeat=3):
    best = np.inf
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main(m: int = 1000, d: int = 64) -> dict:
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(m, d)), rng.normal(0.1, size=(m, d))
    out = {
        "m": m,
        "d": d,
        "nammd_closeness_test_cpu_s": _time(lambda: nammd_closeness_test(X, Y, 0.01)),
        "mmd_closeness_test_cpu_s": _time(lambda: mmd_closeness_test(X, Y, 0.01)),
        "nammd_two_sample_test_B200_cpu_s": _time(lambda: nammd_two_sample_test(X, Y, seed=0), repeat=1),
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()

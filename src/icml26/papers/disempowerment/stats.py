"""The statistics the paper reports, computed from counts (so they stream).

- :func:`rate`: a rate with its Wilson 95% interval (:func:`icml26.core.stats.wilson_interval`) and
  its "1 in N" form (the paper reports rates as "1 in 1,300");
- :func:`cochran_armitage`: the Cochran-Armitage test for a linear trend in proportions over
  ordered periods (the paper reports a rise by quarter; our test choice);
- :func:`newcombe_difference`: a difference of two independent proportions with Newcombe's hybrid
  score interval (method 10 of Newcombe 1998, built from Wilson intervals) and the two-proportion
  z-test p-value: the approval effect (thumbs-up rate of moderate+ conversations minus the rate of
  the rest).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _st

from icml26.core.stats import wilson_interval


def one_in_n(count: int, n: int) -> str:
    """``"1 in 1,300"`` (N = n / count rounded to 2 significant digits), or ``"0 in n"``."""
    if n < 1 or count < 0 or count > n:
        raise ValueError(f"need 0 <= count <= n and n >= 1, got {count}/{n}")
    if count == 0:
        return f"0 in {n:,}"
    x = n / count
    digits = max(0, 2 - int(math.floor(math.log10(x))) - 1)
    v = round(x, digits) if x < 100 else int(round(x, -int(math.floor(math.log10(x))) + 1))
    return f"1 in {v:,}" if isinstance(v, int) else f"1 in {v:g}"


def rate(count: int, n: int, alpha: float = 0.05) -> dict:
    """``{count, n, rate, ci_low, ci_high, one_in_n}`` with a Wilson interval."""
    lo, hi = wilson_interval(int(count), int(n), alpha)
    return {"count": int(count), "n": int(n), "rate": count / n, "ci_low": lo, "ci_high": hi,
            "one_in_n": one_in_n(int(count), int(n))}


def cochran_armitage(successes, totals, scores=None) -> dict:
    """Cochran-Armitage trend test of proportions ``successes/totals`` over ordered groups.

    Returns ``{z, p_value, slope}``: ``z`` > 0 for a rising rate, two-sided ``p_value``, and
    ``slope`` the least-squares slope of the rate on the score (per period). Needs >= 2 groups
    with positive totals; a constant-zero or constant-one table gives z = 0, p = 1.
    """
    x = np.asarray(successes, dtype=float)
    n = np.asarray(totals, dtype=float)
    if x.shape != n.shape or x.ndim != 1 or x.size < 2:
        raise ValueError("need equal-length 1-d successes and totals with >= 2 groups")
    if np.any(n <= 0) or np.any(x < 0) or np.any(x > n):
        raise ValueError("need 0 <= successes <= totals and totals > 0")
    t = np.arange(x.size, dtype=float) if scores is None else np.asarray(scores, dtype=float)
    N, X = n.sum(), x.sum()
    p = X / N
    tbar = (n * t).sum() / N
    num = (x * (t - tbar)).sum()
    var = p * (1 - p) * (n * (t - tbar) ** 2).sum()
    w = n / N
    slope = float(((x / n - p) * (t - tbar) * w).sum() / ((t - tbar) ** 2 * w).sum())
    if var <= 0:
        return {"z": 0.0, "p_value": 1.0, "slope": slope}
    z = num / math.sqrt(var)
    return {"z": float(z), "p_value": float(2 * _st.norm.sf(abs(z))), "slope": slope}


def newcombe_difference(x1: int, n1: int, x2: int, n2: int, alpha: float = 0.05) -> dict:
    """``p1 - p2`` with Newcombe's hybrid score interval and the pooled two-proportion z-test."""
    if n1 < 1 or n2 < 1:
        raise ValueError("both groups need at least one observation")
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson_interval(int(x1), int(n1), alpha)
    l2, u2 = wilson_interval(int(x2), int(n2), alpha)
    d = p1 - p2
    lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    pp = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pp * (1 - pp) * (1 / n1 + 1 / n2))
    pval = 1.0 if se == 0 else float(2 * _st.norm.sf(abs(d) / se))
    return {"difference": d, "ci_low": lo, "ci_high": hi, "p_value": pval,
            "rate_group": p1, "rate_rest": p2, "n_group": int(n1), "n_rest": int(n2)}

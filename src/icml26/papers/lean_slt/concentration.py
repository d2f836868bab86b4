"""Small-ball and Gaussian Lipschitz concentration bounds, with exact references and MC bounds.

Paper T1 (``small_ball_prob``), T15 (``lipschitz_cgf_bound``) and T16
(``gaussian_lipschitz_concentration``), arXiv 2602.02285.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import stats

from icml26.core.validation import (
    as_finite_array,
    check_nonnegative,
    check_positive,
    check_positive_int,
)

__all__ = [
    "irwin_hall_cdf",
    "small_ball_bound",
    "gaussian_lipschitz_tail_bound",
    "gaussian_lipschitz_cgf_bound",
    "clopper_pearson",
]


def irwin_hall_cdf(x: float, N: int) -> float:
    """``P(U_1 + … + U_N <= x)`` for iid ``U[0,1]``, in exact rational arithmetic.

    ``F(x) = (1/N!) Σ_{k=0}^{⌊x⌋} (−1)^k C(N,k) (x − k)^N`` for ``0 <= x <= N``. The alternating sum
    is evaluated on the exact rational value of the float ``x``, so there is no cancellation error.
    """
    N = check_positive_int(N, "N")
    x = check_nonnegative(x, "x")
    if x >= N:
        return 1.0
    xf = Fraction(x)
    total = sum((-1) ** k * math.comb(N, k) * (xf - k) ** N for k in range(int(math.floor(x)) + 1))
    return float(total / math.factorial(N))


def small_ball_bound(eps: float, N: int) -> float:
    """Paper T1: ``P(Σ X_i <= εN) <= (eε)^N`` for independent ``X_i >= 0`` with densities ``<= 1``."""
    return (math.e * check_positive(eps, "eps")) ** check_positive_int(N, "N")


def gaussian_lipschitz_tail_bound(t, L: float):
    """Paper T16: ``P(|f(X) − E f(X)| >= t) <= 2 exp(−t²/(2L²))`` for L-Lipschitz f, ``X ~ N(0, I)``."""
    L = check_positive(L, "L")
    t_arr = as_finite_array(t, "t", nonempty=True)
    if np.any(t_arr <= 0):
        raise ValueError("t must be > 0")
    out = 2.0 * np.exp(-(t_arr**2) / (2 * L * L))
    return float(out) if out.ndim == 0 else out


def gaussian_lipschitz_cgf_bound(lam, L: float):
    """Paper T15: ``log E exp(λ(f(X) − E f(X))) <= λ² L² / 2`` for all real λ."""
    L = check_positive(L, "L")
    lam_arr = as_finite_array(lam, "lam")
    out = 0.5 * lam_arr**2 * L * L
    return float(out) if out.ndim == 0 else out


def clopper_pearson(k, m: int, confidence: float = 0.99) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds for ``k`` successes out of ``m``.

    Returns ``(lower, upper)``: each holds with probability ``>= confidence`` on its own side.
    """
    m = check_positive_int(m, "m")
    if not (0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    k = np.asarray(k, dtype=float)
    if np.any(k < 0) or np.any(k > m):
        raise ValueError("k must lie in [0, m]")
    alpha = 1.0 - confidence
    lower = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1e-300), m - k + 1), 0.0)
    upper = np.where(k < m, stats.beta.ppf(1 - alpha, k + 1, np.maximum(m - k, 1e-300)), 1.0)
    return lower, upper

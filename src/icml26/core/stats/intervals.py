"""Confidence-interval helpers: binomial rates (Wilson) and normal intervals for means."""

from __future__ import annotations

import numpy as np
from scipy import stats

from icml26.core.validation import check_probability

__all__ = ["mean_confidence_interval", "wilson_interval"]


def wilson_interval(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (e.g. a rejection rate over repetitions).

    Parameters
    ----------
    successes, trials : int, 0 <= successes <= trials, trials >= 1.
    alpha : float in (0, 1); the interval has nominal coverage 1 - alpha.

    Returns
    -------
    (low, high) : floats in [0, 1].
    """
    alpha = check_probability(alpha, "alpha")
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes}/{trials}")
    z = stats.norm.ppf(1 - alpha / 2)
    p = successes / trials
    den = 1 + z**2 / trials
    centre = (p + z**2 / (2 * trials)) / den
    half = z * np.sqrt(p * (1 - p) / trials + z**2 / (4 * trials**2)) / den
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def mean_confidence_interval(values, alpha: float = 0.05) -> tuple[float, float, float]:
    """Mean and Student-t interval ``(mean, low, high)`` of i.i.d. values (>= 2, finite)."""
    alpha = check_probability(alpha, "alpha")
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size < 2 or not np.all(np.isfinite(x)):
        raise ValueError("need at least 2 finite values")
    mean = float(x.mean())
    half = float(stats.t.ppf(1 - alpha / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return mean, mean - half, mean + half

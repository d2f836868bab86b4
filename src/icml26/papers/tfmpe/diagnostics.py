"""Posterior diagnostics: C2ST against reference samples and SBC-style expected coverage.

``c2st_accuracy`` delegates to the flow core's C2ST (sklearn, 5-fold) with the quadratic
logistic classifier by default: between Gaussian posteriors it is the Bayes-optimal family and
it runs in a fraction of a second, where sbi's MLP classifier takes seconds per call on one core.

Coverage (Talts et al. 2018, arXiv:1804.06788; the "expected coverage" of Hermans et al. 2022):
for each simulated pair ``(theta*, x)`` and each scalar coordinate, ``u`` = fraction of posterior
draws below ``theta*``; the central interval of level ``a`` covers ``theta*`` when
``|u - 1/2| <= a/2``. Calibration error = mean over levels of ``|coverage(a) - a|``.
"""

from __future__ import annotations

import numpy as np

from icml26.core.flows import c2st

LEVELS = np.round(np.arange(0.05, 0.951, 0.05), 2)


def c2st_accuracy(samples, reference, *, seed: int = 0, classifier: str = "quadratic") -> float:
    """C2ST accuracy (0.5 = indistinguishable) of two sample sets ``(n, D)``."""
    return c2st(np.asarray(samples, dtype=float), np.asarray(reference, dtype=float), seed=seed,
                classifier=classifier)


def rank_fractions(samples, truth) -> np.ndarray:
    """``u[k, j]`` = fraction of ``samples[:, k, j]`` below ``truth[k, j]``.

    Parameters
    ----------
    samples : array (n, K, J)
        Posterior draws for K data sets (J scalar coordinates each).
    truth : array (K, J)
    """
    s = np.asarray(samples, dtype=float)
    t = np.asarray(truth, dtype=float)
    if s.ndim != 3 or t.shape != s.shape[1:]:
        raise ValueError(f"samples must be (n, K, J) and truth (K, J), got {s.shape}, {t.shape}")
    if s.shape[0] < 1 or s.shape[1] < 1:
        raise ValueError(f"need at least one draw and one data set, got samples {s.shape}")
    if not np.isfinite(s).all():
        raise ValueError(f"samples contain {int((~np.isfinite(s)).sum())} NaN/inf values")
    if not np.isfinite(t).all():
        raise ValueError("truth contains NaN/inf values")
    return (s < t[None]).mean(0)


def coverage_curve(samples, truth, levels=LEVELS) -> np.ndarray:
    """Empirical coverage of central credible intervals at each level (pooled over coordinates)."""
    lv = np.asarray(levels, dtype=float).reshape(-1)
    if lv.size == 0 or not np.all((lv > 0) & (lv < 1)):
        raise ValueError(f"credible levels must lie in (0, 1), got {lv.tolist()}")
    u = rank_fractions(samples, truth).reshape(-1)
    return np.array([(np.abs(u - 0.5) <= a / 2 + 1e-12).mean() for a in levels])


def expected_coverage_error(samples, truth, levels=LEVELS) -> float:
    """Mean ``|coverage(a) - a|`` over ``levels`` (0 = perfectly calibrated)."""
    return float(np.abs(coverage_curve(samples, truth, levels) - np.asarray(levels)).mean())

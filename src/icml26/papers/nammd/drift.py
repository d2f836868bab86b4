"""Drift detector (alibi-detect ``MMDDrift``-like) that asks "drifted by more than epsilon?"."""

from __future__ import annotations

import math
import numbers

import numpy as np

from icml26.core.stats import GaussianKernel, as_samples, check_positive_int, check_probability

from .closeness import DEFAULT_VARIANCE, nammd_closeness_test
from .statistic import VARIANCES
from .two_sample import DEFAULT_PERMUTATIONS, nammd_two_sample_test

__all__ = ["NAMMDDrift"]


class NAMMDDrift:
    """Fit on reference data, then ``predict(x)`` whether a batch drifted (arXiv 2507.12843).

    With ``epsilon > 0`` it runs the NAMMD closeness test ``H0: NAMMD(ref, batch) <= epsilon``, i.e.
    flags only drift *larger than a tolerance*: the calibrated answer to "with large batches
    everything is significant" (alibi-detect PR #197, TorchDrift #2/#13). With ``epsilon = 0`` it
    runs the NAMMD permutation two-sample test (H0: no drift at all).

    Parameters
    ----------
    x_ref : array, shape (n_ref, d)
        Reference data; the kernel bandwidth (median heuristic) is fitted on it once.
    epsilon : float in [0, 1)
        Tolerance on the NAMMD scale (e.g. from :func:`reference_epsilon` on a benign shift).
    p_val : float in (0, 1)
        Level of the test.
    kernel : callable or None
        Fixed kernel; ``None``: Gaussian, median heuristic on ``x_ref``.
    variance : {"delta", "official", "unbiased-ours", "paper"}
    n_permutations : int
        Only for ``epsilon = 0``.
    random_state : int
        Seed for subsampling the reference to the batch size (closeness test only: its paired
        statistic needs equal sizes; ``meta["n_ref_used"]`` reports how many reference points were
        used) and for the permutations. The two-sample test (``epsilon = 0``) uses every point.

    Every option is validated here, at construction, not at the first ``predict``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> det = NAMMDDrift(rng.normal(size=(500, 3)), epsilon=0.01)
    >>> det.predict(rng.normal(size=(300, 3)))["data"]["is_drift"]
    0
    """

    def __init__(self, x_ref, epsilon: float = 0.0, p_val: float = 0.05, kernel=None,
                 variance: str = DEFAULT_VARIANCE, n_permutations: int = DEFAULT_PERMUTATIONS,
                 random_state: int = 0):
        self.x_ref = as_samples(x_ref, "x_ref")
        if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
            raise TypeError(f"epsilon must be a real number, got {type(epsilon).__name__}")
        self.epsilon = float(epsilon)
        if not (math.isfinite(self.epsilon) and 0.0 <= self.epsilon < 1.0):
            raise ValueError(f"epsilon must lie in [0, 1) (NAMMD <= 1: 1 or more is vacuous), got {epsilon}")
        self.p_val = check_probability(p_val, "p_val")
        if kernel is not None and not callable(kernel):
            raise TypeError(f"kernel must be callable k(A, B) -> Gram matrix, got {type(kernel).__name__}")
        self.kernel = kernel if kernel is not None else GaussianKernel.median(self.x_ref)
        if variance not in VARIANCES:
            raise ValueError(f"variance must be one of {VARIANCES}, got {variance!r}")
        self.variance = variance
        self.n_permutations = check_positive_int(n_permutations, "n_permutations")
        if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral | np.integer) \
                or random_state < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state!r}")
        self.random_state = int(random_state)

    def predict(self, x) -> dict:
        """Test a batch ``x`` (shape (n, d)) against the reference.

        Returns
        -------
        dict ``{"data": {"is_drift", "distance", "p_val", "threshold", "distance_threshold"},
        "meta": {...}}`` as in alibi-detect: ``distance`` is NAMMD_hat, ``threshold`` the level,
        ``distance_threshold`` the rejection threshold on the NAMMD scale.
        """
        x = as_samples(x, "x")
        if x.shape[1] != self.x_ref.shape[1]:
            raise ValueError(f"x has {x.shape[1]} features, the reference has {self.x_ref.shape[1]}")
        if self.epsilon > 0:
            ref = self.x_ref
            if ref.shape[0] != x.shape[0]:
                if ref.shape[0] < x.shape[0]:
                    raise ValueError(f"the closeness test pairs points: the batch ({x.shape[0]}) must not "
                                     f"be larger than the reference ({ref.shape[0]})")
                rng = np.random.default_rng(self.random_state)
                ref = ref[np.sort(rng.choice(ref.shape[0], x.shape[0], replace=False))]
            res = nammd_closeness_test(ref, x, self.epsilon, self.p_val, self.kernel,
                                       self.variance, self.random_state)
            n_ref = ref.shape[0]
        else:
            res = nammd_two_sample_test(self.x_ref, x, self.p_val, self.kernel, self.n_permutations,
                                        self.random_state)
            n_ref = self.x_ref.shape[0]
        return {
            "data": {"is_drift": int(res.reject), "distance": float(res.statistic),
                     "p_val": float(res.pvalue), "threshold": self.p_val,
                     "distance_threshold": float(res.threshold)},
            "meta": {"name": "NAMMDDrift", "method": res.method, "epsilon": self.epsilon,
                     "n": int(res.n), "n_ref_used": int(n_ref), "detector_type": "offline"},
        }

    def __repr__(self) -> str:
        return f"NAMMDDrift(epsilon={self.epsilon}, p_val={self.p_val}, kernel={self.kernel!r})"



"""Kernels on R^d: the Gaussian (RBF) kernel with a median-heuristic or fixed bandwidth.

Convention: ``k(x, y) = exp(-||x - y||^2 / (2 h^2))`` with bandwidth ``h`` (so ``k(x, x) = 1``).
The median heuristic sets ``h^2 = median{||z_i - z_j||^2 : i < j} / 2`` on the pooled sample
(Gretton et al. 2012, JMLR 13; DK-for-TST writes ``exp(-D / sigma)`` with ``sigma`` the median
squared distance, which is the same kernel).
"""

from __future__ import annotations

import numbers

import numpy as np

from icml26.core.validation import as_samples

__all__ = ["GaussianKernel", "median_bandwidth", "pairwise_sq_dists"]


def pairwise_sq_dists(A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """Squared Euclidean distances, vectorized, clipped at 0.

    Parameters
    ----------
    A : array, shape (n, d)
    B : array, shape (p, d), optional (defaults to ``A``)

    Returns
    -------
    D : array, shape (n, p)
        ``D[i, j] = ||A_i - B_j||^2``; the diagonal is exactly 0 when ``B`` is ``A``.
    """
    A = np.asarray(A, dtype=np.float64)
    same = B is None
    B = A if same else np.asarray(B, dtype=np.float64)
    a2 = np.einsum("ij,ij->i", A, A)
    b2 = a2 if same else np.einsum("ij,ij->i", B, B)
    D = a2[:, None] + b2[None, :] - 2.0 * (A @ B.T)
    np.maximum(D, 0.0, out=D)
    if same:
        np.fill_diagonal(D, 0.0)
    return D


def median_bandwidth(Z, *, max_samples: int | None = 2000, random_state: int | None = 0) -> float:
    """Median-heuristic bandwidth ``h = sqrt(median_{i<j} ||z_i - z_j||^2 / 2)``.

    Parameters
    ----------
    Z : array, shape (n, d)
        Pooled sample (n >= 2).
    max_samples : int or None
        Subsample at most this many points (without replacement) before taking the median;
        the median of O(n^2) distances is stable long before n = 2000. ``None`` uses all.
    random_state : int or None
        Seed of the subsampling.

    Returns
    -------
    h : float
        Positive bandwidth. Falls back to 1.0 if all points coincide.
    """
    Z = as_samples(Z, "Z")
    if max_samples is not None and Z.shape[0] > max_samples:
        idx = np.random.default_rng(random_state).choice(Z.shape[0], max_samples, replace=False)
        Z = Z[idx]
    D = pairwise_sq_dists(Z)
    iu = np.triu_indices(Z.shape[0], k=1)
    med = float(np.median(D[iu]))
    if med <= 0.0:
        return 1.0
    return float(np.sqrt(med / 2.0))


class GaussianKernel:
    """Gaussian kernel ``k(x, y) = exp(-||x - y||^2 / (2 h^2))``.

    Parameters
    ----------
    bandwidth : float or None
        Fixed bandwidth ``h > 0``; ``None`` means "median heuristic at :meth:`fit` time".

    Attributes
    ----------
    bandwidth_ : float
        The bandwidth in use (set by ``__init__`` when fixed, by :meth:`fit` otherwise).
    K : float
        ``k(x, x)``, the kernel's constant diagonal (1 for the Gaussian).

    Examples
    --------
    >>> import numpy as np
    >>> k = GaussianKernel(bandwidth=1.0)
    >>> float(k(np.zeros((1, 2)), np.ones((1, 2)))[0, 0])  # exp(-2/2)
    0.36787944117144233
    """

    K: float = 1.0

    def __init__(self, bandwidth: float | None = None):
        if bandwidth is not None:
            if isinstance(bandwidth, bool) or not isinstance(bandwidth, numbers.Real):
                raise TypeError(f"bandwidth must be a positive float or None, got {type(bandwidth).__name__}")
            if not (np.isfinite(bandwidth) and bandwidth > 0):
                raise ValueError(f"bandwidth must be a positive finite float, got {bandwidth}")
            bandwidth = float(bandwidth)
        self.bandwidth = bandwidth
        self.bandwidth_: float | None = bandwidth

    @classmethod
    def median(cls, Z, **kwargs) -> GaussianKernel:
        """A kernel with the median-heuristic bandwidth of ``Z`` (see :func:`median_bandwidth`)."""
        return cls(bandwidth=median_bandwidth(Z, **kwargs))

    def fit(self, Z) -> GaussianKernel:
        """Set ``bandwidth_`` by the median heuristic on ``Z`` (no-op for a fixed bandwidth)."""
        if self.bandwidth is None:
            self.bandwidth_ = median_bandwidth(Z)
        return self

    @property
    def fitted(self) -> bool:
        return self.bandwidth_ is not None

    def __call__(self, A, B=None) -> np.ndarray:
        """Gram matrix ``k(A_i, B_j)``, shape (n, p)."""
        if self.bandwidth_ is None:
            raise ValueError("GaussianKernel has no bandwidth yet: call fit(Z) or pass bandwidth=")
        D = pairwise_sq_dists(A, B)
        return np.exp(-D / (2.0 * self.bandwidth_**2))

    def __repr__(self) -> str:
        return f"GaussianKernel(bandwidth={self.bandwidth_!r})"

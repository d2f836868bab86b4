"""Unbiased MMD^2 estimators, their H1 variance, and closed forms for Gaussian pairs.

References: Gretton et al., "A Kernel Two-Sample Test", JMLR 13 (2012), Lemma 6 (unbiased MMD^2_u);
Liu et al., "Learning Deep Kernels for Non-Parametric Two-Sample Tests", ICML 2020, arXiv 2002.09116
(the paired U-statistic over ``H_ij`` and its H1 variance estimate ``4 (V1 - V2^2)``, Eq. 5).
"""

from __future__ import annotations

import numpy as np

from icml26.core.validation import as_sample_pair, check_square_gram

from .kernels import GaussianKernel

__all__ = [
    "gaussian_kernel_expectation",
    "gram_blocks",
    "h1_variance",
    "h_matrix",
    "mmd2_gaussian",
    "mmd2_paired",
    "mmd2_u",
    "mmd2_unbiased",
    "pooled_gram",
    "u_statistic_variance",
]


def pooled_gram(X, Y, kernel=None) -> tuple[np.ndarray, object]:
    """Gram matrix of the pooled sample ``Z = [X; Y]`` (shape (n+p, n+p)) and the kernel used.

    ``kernel=None`` means a Gaussian kernel with the median-heuristic bandwidth of ``Z``; a
    :class:`GaussianKernel` without a bandwidth is fitted on ``Z``; any callable ``k(A, B)``
    returning a Gram matrix is accepted.
    """
    X, Y = as_sample_pair(X, Y)
    Z = np.vstack([X, Y])
    if kernel is None:
        kernel = GaussianKernel.median(Z)
    elif isinstance(kernel, GaussianKernel) and not kernel.fitted:
        kernel = GaussianKernel.median(Z)
    elif not callable(kernel):
        raise TypeError(f"kernel must be callable k(A, B) -> Gram matrix, got {type(kernel).__name__}")
    return check_square_gram(kernel(Z, Z), "kernel(Z, Z)"), kernel


def gram_blocks(Kzz: np.ndarray, n_x: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split a pooled Gram matrix into ``(Kxx, Kyy, Kxy)`` with ``X`` the first ``n_x`` rows."""
    Kzz = check_square_gram(Kzz, "Kzz")
    if not 0 < n_x < Kzz.shape[0]:
        raise ValueError(f"n_x must lie in (0, {Kzz.shape[0]}), got {n_x}")
    return Kzz[:n_x, :n_x], Kzz[n_x:, n_x:], Kzz[:n_x, n_x:]


def mmd2_unbiased(Kxx: np.ndarray, Kyy: np.ndarray, Kxy: np.ndarray) -> float:
    """Unbiased MMD^2_u of Gretton et al. (2012, Lemma 6); sizes may differ.

    ``MMD^2_u = sum_{i!=j} k(x_i,x_j)/(n(n-1)) + sum_{i!=j} k(y_i,y_j)/(p(p-1)) - 2 mean k(x_i,y_j)``.

    Parameters
    ----------
    Kxx : (n, n), Kyy : (p, p), Kxy : (n, p) Gram blocks, n, p >= 2.
    """
    n, p = Kxx.shape[0], Kyy.shape[0]
    if n < 2 or p < 2 or Kxy.shape != (n, p):
        raise ValueError(f"need n, p >= 2 and Kxy of shape (n, p); got {Kxx.shape}, {Kyy.shape}, {Kxy.shape}")
    sxx = (Kxx.sum() - np.trace(Kxx)) / (n * (n - 1))
    syy = (Kyy.sum() - np.trace(Kyy)) / (p * (p - 1))
    return float(sxx + syy - 2.0 * Kxy.mean())


def h_matrix(Kxx: np.ndarray, Kyy: np.ndarray, Kxy: np.ndarray) -> np.ndarray:
    """``H_ij = k(x_i,x_j) + k(y_i,y_j) - k(x_i,y_j) - k(y_i,x_j)`` for paired samples (m, m)."""
    if not (Kxx.shape == Kyy.shape == Kxy.shape and Kxx.shape[0] == Kxx.shape[1]):
        raise ValueError(f"paired statistic needs equal sample sizes; got {Kxx.shape}, {Kyy.shape}, {Kxy.shape}")
    return Kxx + Kyy - Kxy - Kxy.T


def mmd2_paired(Kxx: np.ndarray, Kyy: np.ndarray, Kxy: np.ndarray) -> float:
    """Paired U-statistic ``sum_{i!=j} H_ij / (m (m-1))`` (Liu et al. 2020, Eq. 2; equal sizes).

    Unbiased for MMD^2 like :func:`mmd2_unbiased`, but the cross term skips ``k(x_i, y_i)``.
    """
    H = h_matrix(Kxx, Kyy, Kxy)
    m = H.shape[0]
    if m < 2:
        raise ValueError("need at least 2 paired samples")
    return float((H.sum() - np.trace(H)) / (m * (m - 1)))


def h1_variance(A: np.ndarray) -> float:
    """Plug-in variance ``4 (V1 - V2^2)`` of a U-statistic with kernel matrix ``A`` (m, m).

    ``V1 = sum_i (sum_j A_ij)^2 / m^3``, ``V2 = sum_ij A_ij / m^2`` (diagonal included, as in
    DK-for-TST's ``h1_mean_var_gram``). ``sqrt(var / m)`` is the standard error of the statistic
    when it is non-degenerate (P != Q); it is not clipped here (may be ~0 or slightly negative).
    """
    A = np.asarray(A, dtype=np.float64)
    m = A.shape[0]
    row = A.sum(axis=1)
    v1 = float(row @ row) / m**3
    v2 = float(row.sum()) / m**2
    return 4.0 * (v1 - v2 * v2)


def u_statistic_variance(A: np.ndarray) -> float:
    """Unbiased estimate of the finite-sample variance of the order-2 U-statistic over ``A``.

    For ``U = sum_{i!=j} A_ij / (m(m-1))`` with a symmetric kernel matrix ``A`` (the diagonal is
    ignored), Hoeffding's decomposition gives the exact variance

        Var(U) = 2 / (m (m-1)) * [2 (m-2) zeta_1 + zeta_2],
        zeta_1 = Cov(h(z1, z2), h(z1, z3)),   zeta_2 = Var(h(z1, z2)),

    and ``zeta_1``, ``zeta_2`` are estimated without bias by sums over distinct index tuples:
    ``E[h12 h13]`` from ``(sum_i r_i^2 - F) / (m(m-1)(m-2))``, ``E[h12^2]`` from ``F / (m(m-1))``
    and ``(E h)^2`` from ``(S^2 - 4 sum_i r_i^2 + 2F) / (m(m-1)(m-2)(m-3))`` with ``r_i`` the
    off-diagonal row sums, ``S = sum_i r_i`` and ``F`` the off-diagonal sum of squares.

    This is the variance the official NAMMD code uses for its closeness tests (the unbiased
    finite-sample variance of MMD^2_u including the second-order term ``zeta_2``; it assembles the
    same quantities from the ``Kxx``, ``Kyy``, ``Kxy`` blocks). Unlike :func:`h1_variance` it is the
    variance of ``U`` itself (not of ``sqrt(m) U``), and it can be slightly negative in small
    samples (it is not clipped here). Needs ``m >= 4``.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix, got shape {A.shape}")
    m = A.shape[0]
    if m < 4:
        raise ValueError(f"the unbiased U-statistic variance needs m >= 4, got {m}")
    A = A.copy()
    np.fill_diagonal(A, 0.0)
    r = A.sum(axis=1)
    S = float(r.sum())
    R2 = float(r @ r)
    F = float(np.sum(A * A))
    e_h12_h13 = (R2 - F) / (m * (m - 1) * (m - 2))
    e_h_sq = F / (m * (m - 1))
    e_h_then_sq = (S * S - 4.0 * R2 + 2.0 * F) / (m * (m - 1) * (m - 2) * (m - 3))
    zeta1 = e_h12_h13 - e_h_then_sq
    zeta2 = e_h_sq - e_h_then_sq
    return float(2.0 / (m * (m - 1)) * (2.0 * (m - 2) * zeta1 + zeta2))


def mmd2_u(X, Y, kernel=None) -> float:
    """Unbiased MMD^2_u (Gretton et al. 2012) between samples ``X`` (n, d) and ``Y`` (p, d).

    ``kernel=None``: Gaussian kernel with the median-heuristic bandwidth of the pooled sample.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(200, 2)), rng.normal(1.0, size=(200, 2))
    >>> mmd2_u(X, Y, GaussianKernel(1.0)) > 0.1
    True
    """
    X, Y = as_sample_pair(X, Y)
    Kzz, _ = pooled_gram(X, Y, kernel)
    return mmd2_unbiased(*gram_blocks(Kzz, X.shape[0]))


def _scalar(value, name: str) -> float:
    """A finite real scalar (per-coordinate variance or bandwidth of the closed forms)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a real scalar, got bool")
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise TypeError(f"{name} must be a scalar (isotropic per-coordinate value), got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must be a real scalar, got dtype {arr.dtype}")
    value = float(arr)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def gaussian_kernel_expectation(mean_a, var_a: float, mean_b, var_b: float, bandwidth: float) -> float:
    """Exact ``E k(x, y)`` for independent ``x ~ N(a, s_a I_d)``, ``y ~ N(b, s_b I_d)``, Gaussian k.

    ``E k = (h^2 / (h^2 + s_a + s_b))^{d/2} exp(-||a - b||^2 / (2 (h^2 + s_a + s_b)))`` with
    ``s_a, s_b`` the per-coordinate *variances* and ``h`` the bandwidth (Gaussian convolution).
    """
    a = np.atleast_1d(np.asarray(mean_a, dtype=np.float64))
    b = np.atleast_1d(np.asarray(mean_b, dtype=np.float64))
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"means must be vectors of equal length, got {a.shape} and {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("means must be finite")
    var_a = _scalar(var_a, "var_a")
    var_b = _scalar(var_b, "var_b")
    bandwidth = _scalar(bandwidth, "bandwidth")
    if var_a < 0 or var_b < 0 or bandwidth <= 0:
        raise ValueError(f"variances must be >= 0 and bandwidth > 0, got var_a={var_a}, var_b={var_b}, "
                         f"bandwidth={bandwidth}")
    s = bandwidth**2 + var_a + var_b
    d = a.shape[0]
    return float((bandwidth**2 / s) ** (d / 2) * np.exp(-np.sum((a - b) ** 2) / (2 * s)))


def mmd2_gaussian(mean_p, var_p: float, mean_q, var_q: float, bandwidth: float) -> dict[str, float]:
    """Population ``||mu_P||^2``, ``||mu_Q||^2``, ``<mu_P, mu_Q>`` and MMD^2 for isotropic Gaussians.

    Returns
    -------
    dict with keys ``norm_p``, ``norm_q``, ``cross``, ``mmd2``.
    """
    npp = gaussian_kernel_expectation(mean_p, var_p, mean_p, var_p, bandwidth)
    nqq = gaussian_kernel_expectation(mean_q, var_q, mean_q, var_q, bandwidth)
    npq = gaussian_kernel_expectation(mean_p, var_p, mean_q, var_q, bandwidth)
    return {"norm_p": npp, "norm_q": nqq, "cross": npq, "mmd2": npp + nqq - 2 * npq}

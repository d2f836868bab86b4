"""NAMMD: norm-adaptive MMD (Zhou, Peng, Tian, Liu; arXiv 2507.12843), estimator and variances.

Definition (paper Def. 1 / Eq. 2), for a kernel with ``0 <= k <= K`` and ``k(x, x) = K``::

    NAMMD(P, Q; k) = MMD^2(P, Q; k) / (4K - ||mu_P||^2 - ||mu_Q||^2)  in [0, 1].

Estimator (ratio of two paired U-statistics over ``z_i = (x_i, y_i)``, equal sizes m)::

    H_ij = k(x_i,x_j) + k(y_i,y_j) - k(x_i,y_j) - k(y_i,x_j),   G_ij = 4K - k(x_i,x_j) - k(y_i,y_j)
    NAMMD_hat = sum_{i!=j} H_ij / sum_{i!=j} G_ij = MMD^2_u / v_hat.

Variance of ``sqrt(m) * NAMMD_hat`` (three options; see :func:`nammd_variance`): ``"official"``,
the official code's estimator exactly (``_asymptotic_values``: ``m * Var_off(MMD^2_u) / v_hat^2``,
:func:`official_mmd_variance`); ``"unbiased-ours"``, the same construction with our exact
distinct-index unbiased estimate of ``Var(MMD^2_u)``; and ``"delta"`` (the default), the delta-method
variance of the ratio.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from icml26.core.stats import (
    GaussianKernel,
    as_sample_pair,
    gram_blocks,
    h1_variance,
    h_matrix,
    mmd2_gaussian,
    pooled_gram,
    u_statistic_variance,
)

__all__ = [
    "NAMMDStats",
    "kernel_diagonal",
    "nammd",
    "nammd_from_gram",
    "nammd_population_gaussian",
    "nammd_variance",
    "official_mmd_variance",
]

VARIANCES = ("delta", "official", "unbiased-ours", "paper")
"""Names accepted by :func:`nammd_variance`; ``"paper"`` is an alias of ``"official"``."""
_VAR_FLOOR = 1e-12  # brief §2.4 guard: a degenerate (P = Q exactly) variance is floored


@dataclass(frozen=True)
class NAMMDStats:
    """Everything the NAMMD and MMD closeness tests need from one pair of paired samples.

    Attributes
    ----------
    nammd : float
        ``NAMMD_hat`` (raw, may be slightly negative when P ~ Q; never clipped before testing).
    mmd2 : float
        Paired unbiased ``MMD^2_u = sum_{i!=j} H_ij / (m(m-1))``.
    denominator : float
        ``v_hat = 4K - ||mu_P||^2_u - ||mu_Q||^2_u = sum_{i!=j} G_ij / (m(m-1))``.
    var_mmd : float
        H1 variance of ``sqrt(m) MMD^2_u``: ``4 (V1 - V2^2)`` on ``H`` (Liu et al. 2020).
    var_mmd_paper : float
        ``m * Var_hat(MMD^2_u)`` with our exact distinct-index unbiased estimate of the U-statistic's
        variance (first- and second-order terms, :func:`~icml26.core.stats.u_statistic_variance`).
        Not the official code's estimator (that is ``var_mmd_official``). Kept under its old name.
    var_paper : float
        ``var_mmd_paper / v_hat^2``: variance ``"unbiased-ours"`` (old name kept; NOT the official one).
    var_mmd_official, var_official : float
        ``m * Var_off(MMD^2_u)`` (:func:`official_mmd_variance`, the official MMD-DCT variance) and
        ``var_mmd_official / v_hat^2`` (the official NAMMD-DCT variance, ``Var_all`` there, times m).
    var_delta : float
        Delta-method variance of the ratio: ``4 (V1 - V2^2)`` on ``A = H - NAMMD_hat G``
        (off-diagonal) divided by ``v_hat^2``.
    m : int
        Number of pairs.
    """

    nammd: float
    mmd2: float
    denominator: float
    var_mmd: float
    var_paper: float
    var_delta: float
    m: int
    var_mmd_paper: float = float("nan")
    var_mmd_official: float = float("nan")
    var_official: float = float("nan")


def official_mmd_variance(Kxx, Kyy, Kxy, off=None):
    r"""The official code's estimate of ``Var(MMD^2_u)`` (not times m), from the Gram blocks.

    Transcribed formula by formula from ``_asymptotic_values`` of the NAMMD paper's official code
    (read through the public code index; formulas carry over, the code does not). With
    ``Kx0, Ky0`` the diagonal-free ``Kxx, Kyy``, ``e`` the ones vector, ``Kxy`` the full cross block,
    ``S_x = |Kx0 e|^2``, ``F_x = |Kx0|_F^2``, ``T_x = e'Kx0 e`` (same for y), ``R = |Kxy e|^2``,
    ``C = |Kxy' e|^2``, ``F = |Kxy|_F^2``, ``T = e'Kxy e``, ``A_x = e'Kx0 Kxy e``, ``A_y = e'Ky0 Kxy' e``::

        xi_x = (S_x - F_x)/(m)_3 - (T_x^2 - 4 (S_x + 2 F_x))/(m)_4          ((m)_k falling factorial)
        D    = (T^2 - C - R + F) / (m^2 (m-1)^2)
        xi1  = xi_x + xi_y + (R - F)/(m^2(m-1)) + (C - F)/(m^2(m-1)) - 2 D
               - 2 A_x/(m^2(m-1)) + 2 (T_x T - 2 A_x)/(m^2 (m-1)(m-2))
               - 2 A_y/(m^2(m-1)) + 2 (T_y T - 2 A_y)/(m^2 (m-1)(m-2))
        xi2  = xi_x + xi_y + 2 F/m^2 - 2 D
               - 4 A_x/(m^2(m-1)) + 4 (T_x T - 2 A_x)/(m^2 (m-1)(m-2))
               - 4 A_y/(m^2(m-1)) + 4 (T_y T - 2 A_y)/(m^2 (m-1)(m-2))
        Var  = 4 (m-2)/(m(m-1)) xi1 + 2/(m(m-1)) xi2.

    It is a plug-in of the order-2 U-statistic variance ``4(m-2)/(m(m-1)) zeta_1 + 2/(m(m-1)) zeta_2``
    assembled from kernel-block moments; it is not the exact distinct-index unbiased estimate
    (``core.stats.u_statistic_variance``, our ``"unbiased-ours"``): the two differ by several to
    tens of per cent per draw at m >= 50 (issue 47's review), not by O(m^-3). Works on numpy arrays
    and on torch tensors (``off`` = the ``1 - I`` mask of the array type; built for numpy if None).
    Needs m >= 4.
    """
    m = Kxx.shape[0]
    if m < 4:
        raise ValueError(f"the official variance needs m >= 4 pairs, got m = {m}")
    if off is None:
        off = 1.0 - np.eye(m)
    Kx0, Ky0 = Kxx * off, Kyy * off
    rx, ry = Kx0.sum(1), Ky0.sum(1)
    r, c = Kxy.sum(1), Kxy.sum(0)
    Sx, Sy = (rx * rx).sum(), (ry * ry).sum()
    Fx, Fy = (Kx0 * Kx0).sum(), (Ky0 * Ky0).sum()
    Tx, Ty = rx.sum(), ry.sum()
    R, C, F, T = (r * r).sum(), (c * c).sum(), (Kxy * Kxy).sum(), r.sum()
    Ax, Ay = (rx * r).sum(), (ry * c).sum()
    m3 = m * (m - 1) * (m - 2)
    m4 = m3 * (m - 3)
    xi_x = (Sx - Fx) / m3 - (Tx * Tx - 4 * (Sx + 2 * Fx)) / m4
    xi_y = (Sy - Fy) / m3 - (Ty * Ty - 4 * (Sy + 2 * Fy)) / m4
    D = (T * T - C - R + F) / (m**2 * (m - 1) ** 2)
    a1, a2 = m**2 * (m - 1), m**2 * (m - 1) * (m - 2)
    cross_x = -Ax / a1 + (Tx * T - 2 * Ax) / a2
    cross_y = -Ay / a1 + (Ty * T - 2 * Ay) / a2
    xi1 = xi_x + xi_y + (R - F) / a1 + (C - F) / a1 - 2 * D + 2 * cross_x + 2 * cross_y
    xi2 = xi_x + xi_y + 2 * F / m**2 - 2 * D + 4 * cross_x + 4 * cross_y
    return 4 * (m - 2) / (m * (m - 1)) * xi1 + 2 / (m * (m - 1)) * xi2


def kernel_diagonal(kernel, Kzz: np.ndarray) -> float:
    """The constant ``K = k(x, x)`` of the kernel (attribute ``K`` if present, else the Gram diagonal).

    Raises ``ValueError`` if the Gram diagonal is not constant (NAMMD needs ``k(x, x) = K``).
    """
    diag = np.diag(Kzz)
    K = getattr(kernel, "K", None)
    if K is None:
        K = float(diag.mean())
    if not np.allclose(diag, K, rtol=1e-8, atol=1e-10):
        raise ValueError("NAMMD needs a kernel with constant diagonal k(x, x) = K (e.g. translation-invariant)")
    if K <= 0:
        raise ValueError(f"kernel diagonal K must be positive, got {K}")
    return float(K)


def nammd_from_gram(Kxx: np.ndarray, Kyy: np.ndarray, Kxy: np.ndarray, K: float = 1.0) -> NAMMDStats:
    """NAMMD and MMD statistics with both variance estimates from the Gram blocks of paired samples.

    Parameters
    ----------
    Kxx, Kyy, Kxy : arrays, shape (m, m)
        ``k(x_i, x_j)``, ``k(y_i, y_j)``, ``k(x_i, y_j)``; m >= 2 (the ``"paper"`` variances need
        m >= 4 and are NaN below).
    K : float
        The kernel's diagonal value ``k(x, x)`` (1 for the Gaussian kernel).
    """
    H = h_matrix(Kxx, Kyy, Kxy)
    m = H.shape[0]
    if m < 2:
        raise ValueError("need at least 2 pairs")
    G = 4.0 * K - Kxx - Kyy
    norm = m * (m - 1)
    sum_h = H.sum() - np.trace(H)
    sum_g = G.sum() - np.trace(G)
    mmd2 = sum_h / norm
    v = sum_g / norm
    r = sum_h / sum_g
    var_mmd = h1_variance(H)
    A = H - r * G
    np.fill_diagonal(A, 0.0)
    var_delta = h1_variance(A) / v**2
    var_mmd_paper = m * u_statistic_variance(H) if m >= 4 else float("nan")
    var_mmd_off = m * float(official_mmd_variance(Kxx, Kyy, Kxy)) if m >= 4 else float("nan")
    return NAMMDStats(float(r), float(mmd2), float(v), float(var_mmd), float(var_mmd_paper / v**2),
                      float(var_delta), m, float(var_mmd_paper), float(var_mmd_off), float(var_mmd_off / v**2))


def nammd_variance(stats: NAMMDStats, variance: str = "delta") -> float:
    """The chosen variance of ``sqrt(m) * NAMMD_hat``, floored at 1e-12 with a warning.

    Parameters
    ----------
    variance : {"delta", "official", "unbiased-ours", "paper"}
        ``"official"`` (alias ``"paper"``): the official code's estimator exactly (``Var_all`` of its
        ``_asymptotic_values`` times m): ``m * Var_off(MMD^2_u) / v_hat^2`` with
        :func:`official_mmd_variance`; it rescales the MMD variance by the estimated denominator and
        ignores the fluctuation of ``v_hat``. ``"unbiased-ours"``: the same construction with our
        exact distinct-index unbiased estimate of ``Var(MMD^2_u)`` from the paired ``H`` matrix
        (``core.stats.u_statistic_variance``). Both estimate the variance of ``MMD^2_u``; they are
        different estimators (per draw they differ by several to tens of per cent at m >= 50,
        issue 47's review), not equal up to O(m^-3) as an earlier docstring said.
        ``"delta"`` (default): the delta-method variance of the ratio of U-statistics (our derivation;
        first-order kernel ``H - NAMMD G``; the official bandwidth selection studentizes NAMMD with
        the same influence function). It is the default because it is the only one of the three that
        accounts for the fluctuation of the denominator ``v_hat``, and it held the size at the null
        boundary on a development pair (README); it agrees with the other two when NAMMD -> 0.
    """
    if variance not in VARIANCES:
        raise ValueError(f"variance must be one of {VARIANCES}, got {variance!r}")
    var = {"delta": stats.var_delta, "official": stats.var_official, "paper": stats.var_official,
           "unbiased-ours": stats.var_paper}[variance]
    if variance != "delta" and not np.isfinite(var):
        raise ValueError(f"the {variance!r} variance needs m >= 4 pairs, got m = {stats.m}")
    if not var > _VAR_FLOOR:
        warnings.warn("NAMMD variance estimate is ~0 (P = Q exactly?); flooring it at 1e-12",
                      RuntimeWarning, stacklevel=3)
        var = _VAR_FLOOR
    return float(var)


def nammd(X, Y, kernel=None) -> float:
    """Estimate NAMMD between paired samples ``X`` and ``Y`` (paper Eq. 2 and its U-statistic ratio).

    Parameters
    ----------
    X, Y : arrays, shape (m, d)
        Equal-size samples from P and Q (m >= 2).
    kernel : callable or None
        ``k(A, B) -> Gram``; ``None``: Gaussian kernel, median-heuristic bandwidth of ``[X; Y]``.

    Returns
    -------
    float
        ``NAMMD_hat`` (raw U-statistic ratio; may be slightly negative when P ~ Q).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> r = nammd(rng.normal(size=(300, 2)), rng.normal(2.0, size=(300, 2)))
    >>> 0 < r < 1
    True
    """
    X, Y = as_sample_pair(X, Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"NAMMD's paired estimator needs equal sizes, got {X.shape[0]} and {Y.shape[0]}")
    Kzz, kernel = pooled_gram(X, Y, kernel)
    K = kernel_diagonal(kernel, Kzz)
    return nammd_from_gram(*gram_blocks(Kzz, X.shape[0]), K=K).nammd


def nammd_population_gaussian(mean_p, var_p: float, mean_q, var_q: float, bandwidth: float) -> dict:
    """Exact population NAMMD, MMD^2 and norms for ``P = N(a, s_p I)``, ``Q = N(b, s_q I)``.

    Gaussian kernel ``exp(-||x-y||^2/(2h^2))`` (K = 1); ``var_p``, ``var_q`` are per-coordinate
    variances. Uses ``E k = (h^2/(h^2+s1+s2))^{d/2} exp(-||a-b||^2/(2(h^2+s1+s2)))``.

    Returns
    -------
    dict with ``norm_p``, ``norm_q``, ``cross``, ``mmd2``, ``denominator``, ``nammd``.
    """
    out = mmd2_gaussian(mean_p, var_p, mean_q, var_q, bandwidth)
    out["denominator"] = 4.0 - out["norm_p"] - out["norm_q"]
    out["nammd"] = out["mmd2"] / out["denominator"]
    return out


def _default_kernel(X, Y):
    return GaussianKernel.median(np.vstack([X, Y]))

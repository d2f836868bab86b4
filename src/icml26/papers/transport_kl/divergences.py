r"""Transport-geometry analogs of the KL divergence between Gaussian (and elliptic) laws.

Stein, Datar & Ay, *Well-Posed KL-Regularized Control via Wasserstein and Kalman-Wasserstein KL
Divergences*, arXiv:2602.02250; Datar & Ay, *Wasserstein KL-divergence for Gaussian
distributions*, arXiv:2503.24022.

The *dynamical formulation* (Datar & Ay, Def. of :math:`D_{\rm WKL}`): if :math:`\nu = (\varphi_1)_\#\mu`
where :math:`\varphi_t` is the flow of the gradient field of a time-independent potential
:math:`f` in a chosen geometry, then

.. math::
    D(\mu\,\|\,\nu) = \int\!\int_0^1 \big[f(\varphi_1(x_0)) - f(\varphi_t(x_0))\big]\,dt\,d\mu(x_0)
                  = \int_0^1 t\,\|\dot\rho_t\|^2_{g(\rho_t)}\,dt .

Fisher-Rao geometry gives the classical KL; the Wasserstein (Otto) metric (velocity
:math:`\nabla f`) gives **WKL**; the Kalman-Wasserstein metric (velocity
:math:`(\mathrm{Cov}(\rho_t)+\varepsilon I)\nabla f`) gives **KWKL**\ :sub:`ε`.

For Gaussians the potential is quadratic, :math:`f(x)=\tfrac12 x^\top A x + b^\top x`, and every
flow below is linear, so all laws along the path stay Gaussian.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import root

from icml26.core.validation import as_psd, as_vector, check_positive, is_singular

__all__ = [
    "bures_map",
    "divergence_path_energy",
    "kl_gaussian",
    "kwkl_gaussian",
    "wasserstein_potential",
    "wkl_elliptic",
    "wkl_gaussian",
]


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _check_pair(m0, S0, m1, S1):
    S0 = as_psd(S0, "S0")
    n = S0.shape[0]
    S1 = as_psd(S1, "S1", n)
    m0 = as_vector(m0, "m0", n)
    m1 = as_vector(m1, "m1", n)
    return m0, S0, m1, S1


def _sym_fun(S: np.ndarray, fun) -> np.ndarray:
    """Apply a scalar function to the eigenvalues of a symmetric matrix."""
    w, U = np.linalg.eigh(0.5 * (S + S.T))
    return (U * fun(w)) @ U.T


def _sqrtm_psd(S: np.ndarray) -> np.ndarray:
    return _sym_fun(S, lambda w: np.sqrt(np.clip(w, 0.0, None)))


_SAME_COV_RTOL = 1e-12


def _same_cov(S0: np.ndarray, S1: np.ndarray) -> bool:
    """Equal covariances, decided *per direction* (not relative to the largest entry).

    Exactly equal matrices are equal. Otherwise, for a non-singular ``S0``, the pair counts as
    equal when the whitened ``S0^{-1/2} S1 S0^{-1/2}`` is the identity to ``1e-12`` in every
    direction, i.e. every eigenvalue of ``S1`` relative to ``S0`` agrees to 12 digits, however small
    the eigenvalue. Near-equal pairs that fail this test go through the general closed form, whose
    series for ``g`` and ``h`` is accurate near ``a = 0``. (An absolute tolerance relative to the
    largest entry treated ``diag(1, 1e-13)`` and ``diag(1, 1e-15)`` as equal, a 70 % error.)
    """
    if np.array_equal(S0, S1):
        return True
    if is_singular(S0) or is_singular(S1):
        return False
    w, U = np.linalg.eigh(S0)
    W = U / np.sqrt(w)
    T = W.T @ S1 @ W
    return bool(np.max(np.abs(T - np.eye(S0.shape[0]))) <= _SAME_COV_RTOL)


def _q(a: np.ndarray) -> np.ndarray:
    r"""q(a) = e^{2a}(2a-1)+1 = \sum_{k>=2} (2a)^k (k-1)/k!, stable for small |a|, q(-inf) = 1."""
    a = np.asarray(a, dtype=float)
    out = np.empty_like(a)
    small = np.abs(a) < 0.5
    x = 2.0 * a[small]
    acc = np.zeros_like(x)
    term = np.ones_like(x)  # x^k / k!
    for k in range(1, 30):
        term = term * x / k
        if k >= 2:
            acc = acc + term * (k - 1)
    out[small] = acc
    big = ~small
    ab = a[big]
    with np.errstate(invalid="ignore", over="ignore"):
        vals = 2.0 * ab * np.exp(2.0 * ab) - np.expm1(2.0 * ab)
    vals = np.where(np.isneginf(ab), 1.0, vals)
    out[big] = vals
    return out


def _g(a: np.ndarray) -> np.ndarray:
    """Covariance weight g(a) = [e^{2a}(2a-1)+1]/4 (g(0)=0, g(-inf)=1/4)."""
    return _q(a) / 4.0


def _h(a: np.ndarray) -> np.ndarray:
    """Mean weight h(a) = [e^{2a}(2a-1)+1] / [4 (e^a - 1)^2] (h(0)=1/2, h(-inf)=1/4)."""
    a = np.asarray(a, dtype=float)
    out = np.empty_like(a)
    tiny = np.abs(a) < 1e-6
    out[tiny] = 0.5 + a[tiny] / 6.0
    rest = ~tiny
    out[rest] = _q(a[rest]) / (4.0 * np.expm1(a[rest]) ** 2)
    return out


# ----------------------------------------------------------------------------------------------
# classical KL
# ----------------------------------------------------------------------------------------------


def kl_gaussian(m0, S0, m1, S1) -> float:
    r"""Classical KL divergence :math:`\mathrm{KL}(\mathcal N(m_0,S_0)\,\|\,\mathcal N(m_1,S_1))`.

    .. math::
        \tfrac12\big[\mathrm{tr}(S_1^{-1}S_0) + \Delta m^\top S_1^{-1}\Delta m - n
        + \ln\det S_1 - \ln\det S_0\big],\qquad \Delta m = m_1 - m_0 .

    Parameters
    ----------
    m0, m1 : array_like, shape (n,)
        Means.
    S0, S1 : array_like, shape (n, n)
        Symmetric positive semi-definite covariances.

    Returns
    -------
    float
        The divergence; ``inf`` under support mismatch (e.g. two Dirac measures at different
        points, or :math:`S_0` not absolutely continuous w.r.t. :math:`S_1`). When both
        covariances are singular with the *same* range and :math:`\Delta m` lies in it, the KL
        of the laws restricted to that affine subspace is returned.

    Examples
    --------
    >>> import numpy as np
    >>> round(kl_gaussian([0.0], [[0.5]], [1.0], [[0.5]]), 12)
    1.0
    """
    m0, S0, m1, S1 = _check_pair(m0, S0, m1, S1)
    dm = m1 - m0
    if not (is_singular(S0) or is_singular(S1)):
        L1 = np.linalg.cholesky(S1)
        sol = np.linalg.solve(L1, dm)
        Z = np.linalg.solve(L1, np.linalg.cholesky(S0))
        logdet1 = 2.0 * np.sum(np.log(np.diag(L1)))
        logdet0 = 2.0 * np.sum(np.log(np.diag(np.linalg.cholesky(S0))))
        n = S0.shape[0]
        return float(0.5 * (np.sum(Z * Z) + sol @ sol - n + logdet1 - logdet0))
    # singular covariances: finite only on a shared affine support
    w1, U1 = np.linalg.eigh(S1)
    w0, U0 = np.linalg.eigh(S0)
    tol = 1e-12 * max(w1[-1], w0[-1], 1e-300)
    R1 = U1[:, w1 > tol]
    R0 = U0[:, w0 > tol]
    P1 = R1 @ R1.T
    P0 = R0 @ R0.T
    if R1.shape[1] != R0.shape[1] or not np.allclose(P0, P1, atol=1e-8):
        return math.inf
    if np.linalg.norm(dm - P1 @ dm) > 1e-10 * max(1.0, np.linalg.norm(dm)):
        return math.inf
    if R1.shape[1] == 0:  # two Dirac measures at the same point
        return 0.0
    return kl_gaussian(R1.T @ m0, R1.T @ S0 @ R1, R1.T @ m1, R1.T @ S1 @ R1)


# ----------------------------------------------------------------------------------------------
# Wasserstein KL
# ----------------------------------------------------------------------------------------------


def bures_map(S0, S1) -> np.ndarray:
    r"""Matrix of the optimal-transport (Bures) map from :math:`\mathcal N(\cdot,S_0)` to :math:`\mathcal N(\cdot,S_1)`.

    .. math::
        M = S_0^{-1/2}\big(S_0^{1/2} S_1 S_0^{1/2}\big)^{1/2} S_0^{-1/2},\qquad M S_0 M = S_1 .

    Equals the matrix ``A`` returned by ``ot.gaussian.bures_wasserstein_mapping``.

    Parameters
    ----------
    S0 : array_like, shape (n, n)
        Symmetric positive definite source covariance.
    S1 : array_like, shape (n, n)
        Symmetric positive semi-definite target covariance.

    Returns
    -------
    ndarray, shape (n, n)
        Symmetric positive semi-definite ``M``.
    """
    S0 = as_psd(S0, "S0", strict=True)
    S1 = as_psd(S1, "S1", S0.shape[0])
    r0 = _sqrtm_psd(S0)
    r0_inv = _sym_fun(S0, lambda w: 1.0 / np.sqrt(w))
    mid = _sqrtm_psd(r0 @ S1 @ r0)
    M = r0_inv @ mid @ r0_inv
    return 0.5 * (M + M.T)


def wasserstein_potential(m0, S0, m1, S1) -> tuple[np.ndarray, np.ndarray]:
    r"""The quadratic potential :math:`f(x)=\tfrac12x^\top Ax+b^\top x` whose gradient flow maps μ to ν.

    The flow :math:`\dot x = Ax + b` gives :math:`\varphi_1(x) = e^{A}x + \Phi_1 b` with
    :math:`\Phi_1=\int_0^1 e^{As}ds`; it pushes :math:`\mathcal N(m_0,S_0)` to
    :math:`\mathcal N(m_1,S_1)` iff :math:`e^{A}` is the Bures map (Datar & Ay, arXiv:2503.24022).

    Parameters
    ----------
    m0, m1 : array_like, shape (n,)
    S0, S1 : array_like, shape (n, n)
        Symmetric positive definite covariances.

    Returns
    -------
    A : ndarray, shape (n, n)
        Symmetric, ``A = logm(bures_map(S0, S1))``.
    b : ndarray, shape (n,)
    """
    m0, S0, m1, S1 = _check_pair(m0, S0, m1, S1)
    as_psd(S1, "S1", strict=True)
    M = bures_map(S0, S1)
    a, U = np.linalg.eigh(M)
    a = np.log(a)
    A = (U * a) @ U.T
    # Phi_1 = U diag((e^a - 1)/a) U^T, b = Phi_1^{-1}(m1 - e^A m0)
    phi = np.where(np.abs(a) < 1e-12, 1.0, np.expm1(a) / np.where(a == 0, 1.0, a))
    rhs = U.T @ (m1 - (U * np.exp(a)) @ U.T @ m0)
    b = U @ (rhs / phi)
    return A, b


def wkl_gaussian(m0, S0, m1, S1) -> float:
    r"""Wasserstein KL divergence :math:`D_{\rm WKL}(\mathcal N(m_0,S_0)\,\|\,\mathcal N(m_1,S_1))`.

    Closed form (derived from the dynamical definition, cf. Datar & Ay arXiv:2503.24022 Thm. 1,
    Stein-Datar-Ay arXiv:2602.02250): with :math:`A=\log M = U\mathrm{diag}(a)U^\top`
    (``M = bures_map(S0, S1)``), :math:`\tilde S = U^\top S_0U`, :math:`\delta = U^\top(m_1-m_0)`,

    .. math::
        D_{\rm WKL} = \sum_i \tilde S_{ii}\, g(a_i) + \sum_i \delta_i^2\, h(a_i),\quad
        g(a) = \frac{e^{2a}(2a-1)+1}{4},\quad h(a) = \frac{e^{2a}(2a-1)+1}{4(e^a-1)^2}.

    Equal covariances give :math:`\tfrac12\|m_1-m_0\|^2` for *any* covariance, including the
    Dirac limit :math:`S\to0` where the classical KL is infinite.

    Parameters
    ----------
    m0, m1 : array_like, shape (n,)
        Means.
    S0, S1 : array_like, shape (n, n)
        Symmetric PSD covariances. ``S0`` must be positive definite unless ``S0 == S1``.
        A singular ``S1`` is the finite limit :math:`a_i\to-\infty` (:math:`g=h=1/4`).

    Returns
    -------
    float
        ``inf`` when ``S0`` is singular and ``S1 != S0`` (a linear flow cannot raise the rank).

    Examples
    --------
    >>> import numpy as np
    >>> round(wkl_gaussian([0, 0], 1e-12 * np.eye(2), [3, 4], 1e-12 * np.eye(2)), 10)
    12.5
    """
    m0, S0, m1, S1 = _check_pair(m0, S0, m1, S1)
    dm = m1 - m0
    if _same_cov(S0, S1):
        return float(0.5 * dm @ dm)
    if is_singular(S0):
        return math.inf
    M = bures_map(S0, S1)
    w, U = np.linalg.eigh(M)
    with np.errstate(divide="ignore"):
        a = np.where(w > 1e-300, np.log(np.clip(w, 1e-300, None)), -np.inf)
    S_tilde = np.einsum("ij,jk,ki->i", U.T, S0, U)
    delta = U.T @ dm
    return float(np.sum(S_tilde * _g(a)) + np.sum(delta**2 * _h(a)))


def wkl_elliptic(m0, S0, m1, S1, *, kappa: float = 1.0) -> float:
    r"""WKL between two elliptic laws of the same generator, :math:`X = m + S^{1/2} R\,U`.

    The OT map between two members of one elliptic family is the same affine map as between the
    Gaussians with the same scatter matrices, the linear gradient flow stays in the family, and the
    path energy only involves first and second moments. Hence

    .. math::
        D_{\rm WKL} = \text{wkl\_gaussian}(m_0, \kappa S_0, m_1, \kappa S_1),
        \qquad \kappa = \mathbb E[R^2]/n ,

    i.e. the covariance term scales with :math:`\kappa` and the mean term is unchanged; finite
    for degenerating equal scatter matrices (paper abstract: "finite for degenerating equal
    covariances between elliptic distributions").

    Parameters
    ----------
    m0, m1 : array_like, shape (n,)
        Location vectors.
    S0, S1 : array_like, shape (n, n)
        Scatter matrices (PSD); the covariance is ``kappa * S``.
    kappa : float, default 1.0
        Second-moment factor of the generator (1 for Gaussians with ``S`` the covariance;
        ``nu / (nu - 2)`` for a Student-t with ``nu > 2`` degrees of freedom).

    Returns
    -------
    float
    """
    kappa = check_positive(kappa, "kappa")
    m0, S0, m1, S1 = _check_pair(m0, S0, m1, S1)
    return wkl_gaussian(m0, kappa * S0, m1, kappa * S1)


# ----------------------------------------------------------------------------------------------
# Kalman-Wasserstein KL
# ----------------------------------------------------------------------------------------------

_GL_T, _GL_W = np.polynomial.legendre.leggauss(96)
_GL_T = 0.5 * (_GL_T + 1.0)
_GL_W = 0.5 * _GL_W


def _kw_direction(s0: float, s1: float, dm: float, eps: float) -> float:
    """KWKL of one decoupled direction: variance s0 -> s1, mean shift dm, regulariser eps."""
    t = _GL_T
    scale = max(s0, s1, eps, 1e-300)
    if abs(s0 - s1) <= 1e-13 * scale:
        c = s0 + eps
        if c <= 0.0:
            return 0.0 if dm == 0.0 else math.inf
        return 0.5 * dm * dm / c
    if s0 <= 0.0:
        return math.inf  # the flow cannot create variance from a point mass
    if s1 <= 0.0:
        raise ValueError("KWKL closed form needs a positive target variance where the source has one")
    if eps > 0.0:
        # (s)' = 2a s (s + eps): logistic, s/(s+eps) = K exp(2 a eps t)
        K = s0 / (s0 + eps)
        a = (math.log(s1 / (s1 + eps)) - math.log(K)) / (2.0 * eps)
        e = K * np.exp(2.0 * a * eps * t)
        s = eps * e / (1.0 - e)
    else:
        a = 0.5 * (1.0 / s0 - 1.0 / s1)
        s = s0 / (1.0 - 2.0 * a * s0 * t)
    c = s + eps
    # u = a m + b obeys u' = a c u, so u(t) = u0 sqrt(s_t / s0)
    ratio = np.sqrt(s / s0)
    u0 = dm / float(np.sum(_GL_W * c * ratio))
    integrand = t * c * (a * a * s + u0 * u0 * s / s0)
    return float(np.sum(_GL_W * integrand))


def kwkl_gaussian(m0, S0, m1, S1, *, eps: float = 0.0, method: str = "auto") -> float:
    r"""Kalman-Wasserstein KL divergence :math:`D_{\rm KWKL,\varepsilon}` between two Gaussians.

    Flow :math:`\dot x = C_\varepsilon(\rho_t)(Ax+b)` with :math:`C_\varepsilon = \mathrm{Cov}(\rho_t)
    + \varepsilon I` (Garbuno-Inigo et al., arXiv:1903.08866, with the ensemble-Kalman
    regularisation :math:`+\varepsilon I`), energy :math:`\|\dot\rho\|^2 = \mathbb E[(Ax+b)^\top
    C_\varepsilon (Ax+b)]`.

    * equal covariances: :math:`\tfrac12\Delta m^\top(S+\varepsilon I)^{-1}\Delta m` (ε = 0 gives
      the classical KL value; :math:`\varepsilon D \to D_{\rm WKL}` as :math:`\varepsilon\to\infty`);
    * commuting covariances: decoupled per eigen-direction, variance logistic in t, evaluated by
      96-node Gauss-Legendre quadrature;
    * general: shooting, see :func:`divergence_path_energy`.

    Parameters
    ----------
    m0, m1 : array_like, shape (n,)
    S0, S1 : array_like, shape (n, n)
        Symmetric PSD covariances.
    eps : float, default 0.0
        Regulariser ε >= 0 (not given by the paper's abstract; the control experiments use 1).
    method : {"auto", "closed_form", "shooting"}
        ``"closed_form"`` raises ``ValueError`` if the covariances do not commute.

    Returns
    -------
    float
    """
    eps = check_positive(eps, "eps", allow_zero=True)
    if method not in ("auto", "closed_form", "shooting"):
        raise ValueError(f"method must be 'auto', 'closed_form' or 'shooting', got {method!r}")
    m0, S0, m1, S1 = _check_pair(m0, S0, m1, S1)
    dm = m1 - m0
    n = S0.shape[0]
    if method == "shooting":
        return divergence_path_energy(m0, S0, m1, S1, geometry="kalman_wasserstein", eps=eps)
    if _same_cov(S0, S1):
        C = S0 + eps * np.eye(n)
        if is_singular(C):
            w, U = np.linalg.eigh(C)
            keep = w > 1e-14 * max(w[-1], 1e-300)
            d = U.T @ dm
            if np.any(np.abs(d[~keep]) > 1e-12 * max(1.0, np.linalg.norm(dm))):
                return math.inf
            return float(0.5 * np.sum(d[keep] ** 2 / w[keep]))
        return float(0.5 * dm @ np.linalg.solve(C, dm))
    scale = max(float(np.max(np.abs(S0))), float(np.max(np.abs(S1))))  # relative, no floor
    if np.allclose(S0 @ S1, S1 @ S0, rtol=0.0, atol=1e-10 * scale * scale):
        # common eigenbasis: diagonalise a generic combination
        _, U = np.linalg.eigh(S0 + math.pi * S1)
        d0 = np.einsum("ij,jk,ki->i", U.T, S0, U)
        d1 = np.einsum("ij,jk,ki->i", U.T, S1, U)
        d = U.T @ dm
        return float(sum(_kw_direction(float(a), float(b), float(c), eps)
                         for a, b, c in zip(d0, d1, d, strict=True)))
    if method == "closed_form":
        raise ValueError("no closed form: S0 and S1 do not commute (use method='shooting')")
    return divergence_path_energy(m0, S0, m1, S1, geometry="kalman_wasserstein", eps=eps)


# ----------------------------------------------------------------------------------------------
# numerical oracle
# ----------------------------------------------------------------------------------------------


def _unpack(theta: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    iu = np.triu_indices(n)
    A = np.zeros((n, n))
    A[iu] = theta[: len(iu[0])]
    A = A + A.T - np.diag(np.diag(A))
    return A, theta[len(iu[0]):]


def _path_rhs(A, b, n, eps, kalman):
    def rhs(t, y):
        m = y[:n]
        S = y[n: n + n * n].reshape(n, n)
        S = 0.5 * (S + S.T)
        C = S + eps * np.eye(n) if kalman else np.eye(n)
        u = A @ m + b
        dm = C @ u
        CAS = C @ A @ S
        dS = CAS + CAS.T
        energy = np.trace(A @ C @ A @ S) + u @ C @ u
        return np.concatenate([dm, dS.ravel(), [t * energy]])

    return rhs


def divergence_path_energy(m0, S0, m1, S1, *, geometry: str = "wasserstein", eps: float = 0.0,
                           rtol: float = 1e-10, tol: float = 1e-9) -> float:
    r"""Numerical oracle :math:`\int_0^1 t\,\|\dot\rho_t\|^2_{g(\rho_t)}\,dt` by shooting.

    Solves for a symmetric :math:`A` and a vector :math:`b` such that the mean-field flow
    (``"wasserstein"``: :math:`\dot x = Ax+b`; ``"kalman_wasserstein"``:
    :math:`\dot x = (\Sigma_t+\varepsilon I)(Ax+b)`) pushes :math:`\mathcal N(m_0,S_0)` to
    :math:`\mathcal N(m_1,S_1)` (``scipy.optimize.root`` on the moment ODE integrated by
    ``scipy.integrate.solve_ivp``), then integrates the time-weighted energy along that path.
    Slow but independent of the closed forms: used by the tests.

    Parameters
    ----------
    m0, m1 : array_like, shape (n,)
    S0, S1 : array_like, shape (n, n)
        Symmetric positive definite covariances (keep them well conditioned).
    geometry : {"wasserstein", "kalman_wasserstein"}
    eps : float, default 0.0
        Kalman-Wasserstein regulariser (ignored for ``"wasserstein"``).
    rtol : float
        ODE tolerance.
    tol : float
        Required relative accuracy of the end-point match; ``RuntimeError`` if not reached.

    Returns
    -------
    float
    """
    if geometry not in ("wasserstein", "kalman_wasserstein"):
        raise ValueError(f"geometry must be 'wasserstein' or 'kalman_wasserstein', got {geometry!r}")
    eps = check_positive(eps, "eps", allow_zero=True)
    m0, S0, m1, S1 = _check_pair(m0, S0, m1, S1)
    as_psd(S0, "S0", strict=True)
    as_psd(S1, "S1", strict=True)
    n = S0.shape[0]
    kalman = geometry == "kalman_wasserstein"
    y0 = np.concatenate([m0, S0.ravel(), [0.0]])
    target = np.concatenate([m1, S1.ravel()])
    scale = np.concatenate([np.full(n, max(1.0, np.abs(m1 - m0).max())),
                            np.full(n * n, max(np.abs(S1).max(), 1e-12))])

    def endpoint(theta):
        A, b = _unpack(theta, n)
        sol = solve_ivp(_path_rhs(A, b, n, eps, kalman), (0.0, 1.0), y0, method="DOP853",
                        rtol=rtol, atol=1e-12)
        return sol.y[:, -1]

    def residual(theta):
        y = endpoint(theta)
        res = (y[: n + n * n] - target) / scale
        A = res[n:].reshape(n, n)
        return np.concatenate([res[:n], A[np.triu_indices(n)]])

    # initial guesses: symmetrised log of S0^{-1/2} S1 S0^{-1/2} scaled by the metric at the
    # midpoint, then a homotopy in the target covariance if the direct solve fails
    C_mid = 0.5 * (S0 + S1) + eps * np.eye(n) if kalman else np.eye(n)
    r0 = _sym_fun(S0, lambda w: 1.0 / np.sqrt(w))
    A0 = 0.5 * _sym_fun(r0 @ S1 @ r0, np.log)
    A0 = np.linalg.solve(C_mid, A0)
    A0 = 0.5 * (A0 + A0.T)
    b0 = np.linalg.solve(C_mid, m1 - m0) - A0 @ (0.5 * (m0 + m1))
    theta = np.concatenate([A0[np.triu_indices(n)], b0])
    full_target = target
    err = np.inf
    for steps in (1, 4, 16):
        theta_k = theta
        for k in range(1, steps + 1):
            lam = k / steps
            target = np.concatenate([(1 - lam) * m0 + lam * m1,
                                     ((1 - lam) * S0 + lam * S1).ravel()])
            sol = root(residual, theta_k, method="hybr", options={"xtol": 1e-13})
            theta_k = sol.x
        target = full_target
        err = float(np.max(np.abs(residual(theta_k))))
        if np.isfinite(err) and err <= tol:
            break
    if not np.isfinite(err) or err > tol:
        raise RuntimeError(f"shooting did not reach the target law (residual {err:.2e}); "
                           "the pair may be too ill-conditioned")
    sol.x = theta_k
    return float(endpoint(sol.x)[-1])

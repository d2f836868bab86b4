"""Least squares: local Gaussian complexity, critical radius, master error bound, ℓ₁-constrained LSE.

Setting of ``SLT/LeastSquares/Defs.lean`` (arXiv 2602.02285 §4; Wainwright 2019, Ch. 13): fixed design
``x_1..x_n``, ``y_i = f*(x_i) + σ w_i`` with ``w ~ N(0, I_n)``, empirical norm
``‖g‖_n = √(n⁻¹ Σ g(x_i)²)``, localised ball ``B_H(δ) = {h ∈ H : ‖h‖_n <= δ}``, local Gaussian
complexity ``G_n(δ; H) = E sup_{h∈B_H(δ)} |n⁻¹ Σ w_i h(x_i)|`` and the critical inequality
``G_n(δ)/δ <= δ/(2σ)`` (paper T18–T22).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import optimize
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from icml26.core.validation import as_finite_array, check_positive, check_positive_int

from .chaining import expected_chi

__all__ = [
    "empirical_norm",
    "linear_class_complexity",
    "linear_critical_radius",
    "formal_linear_critical_radius",
    "FORMAL_LINEAR_C1",
    "FORMAL_LINEAR_C2",
    "local_gaussian_complexity",
    "star_hull_sup",
    "critical_radius",
    "master_error_bound",
    "MasterBound",
    "bad_event_probability_bound",
    "local_complexity_dudley_bound",
    "linear_minimax_rank_bound",
    "LOCAL_COMPLEXITY_CONSTANT",
    "project_l1_ball",
    "L1ConstrainedLeastSquares",
    "l1_constrained_path",
]

FORMAL_DELTA_CONSTANT = 192.0 * math.sqrt(2.0)
"""δ* = 192√2 σ √(d/n) in ``linear_minimax_rate_explicit`` (``LinearRegression/MinimaxRate.lean``)."""
FORMAL_LINEAR_C1 = 16.0 * FORMAL_DELTA_CONSTANT**2  # = 1,179,648 (`linear_C₁`, `linear_C₁_rank`)
FORMAL_LINEAR_C2 = FORMAL_DELTA_CONSTANT**2 / 2.0  # = 36,864 (`linear_C₂`, `linear_C₂_rank`)
LOCAL_COMPLEXITY_CONSTANT = 24.0 * math.sqrt(2.0)
"""24√2 of ``local_gaussian_complexity_bound`` (``LeastSquares/DudleyApplication.lean``)."""


class MasterBound(NamedTuple):
    """A high-probability error bound ``P(‖f̂ − f*‖_n² <= radius_sq) >= probability``.

    ``log_failure`` is ``log(1 − probability)`` computed without cancellation (the failure
    probabilities of the formal bounds are far below double precision's 1e-16).
    """

    radius_sq: float
    probability: float
    log_failure: float


def empirical_norm(values) -> float:
    """``‖g‖_n = √(n⁻¹ Σ g(x_i)²)`` of a vector of function values."""
    v = as_finite_array(values, "values", ndim=1)
    return float(np.sqrt(np.mean(v**2)))


def linear_class_complexity(X, delta: float) -> float:
    """Exact ``G_n(δ)`` of the linear class ``{x ↦ ⟨θ, x⟩}``: ``δ · E χ_r / √n`` with ``r = rank X``.

    The localised ball is the centred ball of radius ``√n δ`` in the column space of ``X`` and the
    supremum of ``|⟨w, v⟩|/n`` over it is ``δ ‖P w‖ / √n`` with ``P`` the projector.
    """
    X = as_finite_array(X, "X", ndim=2)
    delta = check_positive(delta, "delta")
    n = X.shape[0]
    return delta * expected_chi(int(np.linalg.matrix_rank(X))) / math.sqrt(n)


def linear_critical_radius(X, sigma: float) -> float:
    """The smallest δ solving the critical inequality for the linear class: ``2σ E χ_r / √n``."""
    X = as_finite_array(X, "X", ndim=2)
    sigma = check_positive(sigma, "sigma")
    return 2.0 * sigma * expected_chi(int(np.linalg.matrix_rank(X))) / math.sqrt(X.shape[0])


def formal_linear_critical_radius(sigma: float, d: int, n: int) -> float:
    """The formal δ* of ``linear_minimax_rate_explicit``: ``192√2 σ √(d/n)`` (Dudley route, T18/T22)."""
    sigma, d, n = check_positive(sigma, "sigma"), check_positive_int(d, "d"), check_positive_int(n, "n")
    return FORMAL_DELTA_CONSTANT * sigma * math.sqrt(d / n)


def star_hull_sup(H) -> Callable[[np.ndarray, float], np.ndarray]:
    """The localised supremum for the star hull ``{α h_k : α ∈ [0,1]}`` of a finite class.

    Parameters
    ----------
    H : array, shape (K, n)
        Values ``h_k(x_i)``.

    Returns
    -------
    sup_fn : callable
        ``sup_fn(W, δ)`` for noise draws ``W`` of shape (m, n) returns, per draw,
        ``max_k min(1, δ/‖h_k‖_n) |⟨w, h_k⟩| / n``, shape (m,).
    """
    H = as_finite_array(H, "H", ndim=2)
    norms = np.sqrt(np.mean(H**2, axis=1))
    n = H.shape[1]

    def sup_fn(W: np.ndarray, delta: float) -> np.ndarray:
        scale = np.where(norms > 0, np.minimum(1.0, delta / np.where(norms > 0, norms, 1.0)), 0.0)
        return np.max(np.abs(W @ H.T) * scale[None, :], axis=1) / n

    return sup_fn


def local_gaussian_complexity(sup_fn: Callable[[np.ndarray, float], np.ndarray], delta: float, n: int,
                              n_mc: int = 2000, rng: np.random.Generator | None = None,
                              W: np.ndarray | None = None) -> tuple[float, float]:
    """Monte Carlo ``G_n(δ)`` with its standard error.

    Parameters
    ----------
    sup_fn : callable
        ``sup_fn(W, δ) -> (m,)``: the supremum over ``B_H(δ)`` per noise draw (e.g. :func:`star_hull_sup`).
    delta : float > 0
    n : int
        Sample size.
    n_mc : int
        Number of noise draws (ignored when ``W`` is given).
    rng : numpy Generator, optional
    W : array (m, n), optional
        Fixed noise draws (common random numbers across δ).

    Returns
    -------
    (mean, se) : tuple of float
    """
    delta, n = check_positive(delta, "delta"), check_positive_int(n, "n")
    if W is None:
        rng = np.random.default_rng(0) if rng is None else rng
        W = rng.standard_normal((check_positive_int(n_mc, "n_mc", minimum=2), n))
    W = as_finite_array(W, "W", ndim=2)
    if W.shape[1] != n:
        raise ValueError(f"W has {W.shape[1]} columns, expected n = {n}")
    vals = np.asarray(sup_fn(W, delta), dtype=float)
    return float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(vals.size))


def critical_radius(complexity_fn: Callable[[float], float], sigma: float,
                    bracket: tuple[float, float] = (1e-8, 1e4)) -> float:
    """Smallest δ in ``bracket`` with ``G(δ)/δ <= δ/(2σ)`` (root of the critical inequality).

    For star-shaped classes ``G(δ)/δ`` is non-increasing (paper T19), so the solution set is an
    interval ``[δ*, ∞)`` and δ* is found by Brent's method on ``G(δ)/δ − δ/(2σ)``.
    """
    sigma = check_positive(sigma, "sigma")
    lo, hi = (check_positive(bracket[0], "bracket[0]"), check_positive(bracket[1], "bracket[1]"))
    if lo >= hi:
        raise ValueError("bracket must be increasing")

    def gap(delta: float) -> float:
        return complexity_fn(delta) / delta - delta / (2.0 * sigma)

    if gap(lo) <= 0:
        return lo
    if gap(hi) > 0:
        raise ValueError(f"the critical inequality has no solution below {hi}; widen the bracket")
    return float(optimize.brentq(gap, lo, hi, xtol=1e-14, rtol=1e-12))


def master_error_bound(t: float, delta_star: float, n: int, sigma: float) -> MasterBound:
    """Paper T21 (``master_error_bound``): ``P(‖f̂ − f*‖_n² <= 16 t δ*) >= 1 − exp(−n t δ*/(2σ²))``.

    Returns
    -------
    MasterBound
        ``(16 t δ*, 1 − exp(−n t δ*/(2σ²)), −n t δ*/(2σ²))``; needs ``t >= δ* > 0``.
    """
    t, delta_star = check_positive(t, "t"), check_positive(delta_star, "delta_star")
    n, sigma = check_positive_int(n, "n"), check_positive(sigma, "sigma")
    if t < delta_star:
        raise ValueError(f"the master error bound needs t >= delta_star ({t} < {delta_star})")
    log_fail = -n * t * delta_star / (2.0 * sigma**2)
    return MasterBound(16.0 * t * delta_star, -math.expm1(log_fail), log_fail)


def bad_event_probability_bound(u: float, n: int, sigma: float, *, log: bool = False) -> float:
    """Paper T20 (``bad_event_probability_bound``): ``P(A(u)) <= exp(−n u²/(2σ²))`` for ``u >= δ*``."""
    u, n, sigma = check_positive(u, "u"), check_positive_int(n, "n"), check_positive(sigma, "sigma")
    value = -n * u * u / (2.0 * sigma**2)
    return value if log else math.exp(value)


def local_complexity_dudley_bound(entropy_integral: float, n: int) -> float:
    """Paper T18 (``local_gaussian_complexity_bound``): ``G_n(δ; H) <= (24√2/√n) · J(B_H(δ), 2δ)``."""
    n = check_positive_int(n, "n")
    if not (entropy_integral >= 0) or math.isinf(entropy_integral):
        raise ValueError(f"entropy_integral must be finite and >= 0, got {entropy_integral!r}")
    return LOCAL_COMPLEXITY_CONSTANT / math.sqrt(n) * float(entropy_integral)


def linear_minimax_rank_bound(sigma: float, r: int, n: int) -> MasterBound:
    """Paper T25 (``linear_minimax_rate_rank``): ``P(‖f̂ − f*‖_n² <= C₁ σ² r/n) >= 1 − exp(−C₂ r)``.

    ``r`` is the rank of the design; the theorem's existential constants are witnessed in the proof by
    ``linear_C₁_rank = 16 (192√2)²`` and ``linear_C₂_rank = (192√2)²/2``, which are used here.
    """
    sigma, r, n = check_positive(sigma, "sigma"), check_positive_int(r, "r"), check_positive_int(n, "n")
    log_fail = -FORMAL_LINEAR_C2 * r
    return MasterBound(FORMAL_LINEAR_C1 * sigma**2 * r / n, -math.expm1(log_fail), log_fail)


def project_l1_ball(v, radius: float) -> np.ndarray:
    """Euclidean projection onto ``{θ : ‖θ‖₁ <= R}`` (sort-based, Duchi et al. 2008)."""
    v = as_finite_array(v, "v", ndim=1)
    radius = check_positive(radius, "radius", allow_inf=True)
    if math.isinf(radius) or np.abs(v).sum() <= radius:
        return v.copy()
    u = np.sort(np.abs(v))[::-1]
    css = np.cumsum(u)
    k = np.arange(1, u.size + 1)
    rho = int(np.nonzero(u * k > css - radius)[0][-1])
    tau = (css[rho] - radius) / (rho + 1.0)
    return np.sign(v) * np.maximum(np.abs(v) - tau, 0.0)


def l1_constrained_path(X, y, radii) -> np.ndarray:
    """Exact ℓ₁-constrained least squares for several radii at once, from the LARS–lasso path.

    The constrained problem ``argmin_{‖θ‖₁ <= R} ‖y − Xθ‖²`` and the lasso share their solution path
    and ``‖θ̂(λ)‖₁`` is non-increasing in λ, so the solution for radius ``R`` is the point of the
    piecewise-linear lasso path (:func:`sklearn.linear_model.lars_path`, ``method="lasso"``) whose
    ℓ₁ norm is ``R`` (linear interpolation between knots is exact). Radii beyond the path's end
    return its end point, a least-squares solution (an interpolating one when ``d >= n``).

    Parameters
    ----------
    X : array, shape (n, d)
    y : array, shape (n,)
    radii : sequence of float > 0

    Returns
    -------
    coefs : array, shape (len(radii), d)
    """
    from sklearn.linear_model import lars_path

    X = as_finite_array(X, "X", ndim=2)
    y = as_finite_array(y, "y", ndim=1)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    radii = [check_positive(r, "radius") for r in np.atleast_1d(np.asarray(radii, dtype=float))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, _, coefs = lars_path(X, y, method="lasso", max_iter=max(500, 4 * min(X.shape)))
    norms = np.abs(coefs).sum(axis=0)
    out = np.empty((len(radii), X.shape[1]))
    for i, R in enumerate(radii):
        k = int(np.searchsorted(norms, R, side="right"))
        if k >= norms.size:
            out[i] = coefs[:, -1]
        else:
            lo, hi = norms[k - 1], norms[k]
            w = 0.0 if hi <= lo else (R - lo) / (hi - lo)
            out[i] = coefs[:, k - 1] + w * (coefs[:, k] - coefs[:, k - 1])
    return out


class L1ConstrainedLeastSquares(RegressorMixin, BaseEstimator):
    """Least squares over the ℓ₁ ball: ``argmin_{‖θ‖₁ <= R} ‖y − Xθ‖²`` (the paper's sparse-regression LSE).

    Solved by accelerated projected gradient (FISTA) with exact ℓ₁-ball projection and step
    ``n / ‖X‖₂²``. The paper's least-squares theory assumes an *exact* minimiser; ``tol`` controls
    how close we get (relative change of θ).

    Parameters
    ----------
    radius : float > 0, default 1.0
        ℓ₁ radius R (the paper's ``l1Ball``; no default in the paper, 1.0 is ours).
    fit_intercept : bool, default False
        Centre X and y first (the paper's class has no intercept).
    max_iter : int, default 5000
    tol : float, default 1e-8
    warm_start : bool, default False
        Start from the previous ``coef_`` (sklearn convention; FISTA only).
    solver : {"fista", "lars"}, default "fista"
        ``"lars"`` reads the exact solution off the LARS–lasso path (:func:`l1_constrained_path`):
        much faster when ``d >> n``; ``max_iter``/``tol`` are then unused.

    Attributes
    ----------
    coef_ : array, shape (d,)
    intercept_ : float
    n_iter_ : int
    """

    def __init__(self, radius: float = 1.0, fit_intercept: bool = False, max_iter: int = 5000,
                 tol: float = 1e-8, warm_start: bool = False, solver: str = "fista"):
        self.radius = radius
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.solver = solver

    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        radius = check_positive(self.radius, "radius")
        max_iter = check_positive_int(self.max_iter, "max_iter")
        tol = check_positive(self.tol, "tol")
        x_mean = X.mean(axis=0) if self.fit_intercept else np.zeros(X.shape[1])
        y_mean = float(y.mean()) if self.fit_intercept else 0.0
        Xc, yc = X - x_mean, y - y_mean
        n = X.shape[0]
        lip = float(np.linalg.norm(Xc, 2) ** 2) / n
        if self.solver not in ("fista", "lars"):
            raise ValueError(f"solver must be 'fista' or 'lars', got {self.solver!r}")
        if self.solver == "lars":
            self.coef_ = l1_constrained_path(Xc, yc, [radius])[0]
            self.n_iter_ = 0
            self.intercept_ = y_mean - float(x_mean @ self.coef_)
            return self
        theta = np.zeros(X.shape[1])
        if self.warm_start and getattr(self, "coef_", None) is not None and self.coef_.shape == theta.shape:
            theta = project_l1_ball(self.coef_, radius)
        if lip == 0.0:
            self.coef_, self.n_iter_ = theta, 0
        else:
            step = 1.0 / lip
            z, t_k = theta.copy(), 1.0
            it = 0
            while it < max_iter:
                it += 1
                grad = Xc.T @ (Xc @ z - yc) / n
                new = project_l1_ball(z - step * grad, radius)
                t_next = 0.5 * (1 + math.sqrt(1 + 4 * t_k * t_k))
                z = new + ((t_k - 1) / t_next) * (new - theta)
                change = np.linalg.norm(new - theta)
                theta, t_k = new, t_next
                if change <= tol * max(1.0, np.linalg.norm(theta)):
                    break
            else:
                warnings.warn(f"L1ConstrainedLeastSquares did not converge in max_iter={max_iter} "
                              f"iterations (last relative change {change / max(1.0, np.linalg.norm(theta)):.2e} "
                              f"> tol={tol:g}); increase max_iter or tol", ConvergenceWarning, stacklevel=2)
            self.coef_, self.n_iter_ = theta, it
        self.intercept_ = y_mean - float(x_mean @ self.coef_)
        return self

    def predict(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_

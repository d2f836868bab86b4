"""Dudley's entropy integral and bound, the finite-max bound, and exact Gaussian suprema.

Paper T6 (``subGaussian_finite_max_bound``) and T7 (``dudley``), arXiv 2602.02285. The Lean
entropy integral is ``J(s, D) = ∫_{(0, D]} √H(ε, s) dε`` with ``H`` the metric entropy of
:func:`~icml26.papers.lean_slt.covering.metric_entropy` (log N, 0 when N <= 1), and Dudley's bound
reads ``E sup_{t∈s} X_t <= 12√2 · σ · J(s, D)`` for a σ-sub-Gaussian process centred at a point
of ``s`` with ``diam(s) <= D`` (constant checked in ``SLT/Dudley.lean``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy import integrate, special, stats

from icml26.core.validation import check_positive, check_positive_int

__all__ = [
    "DUDLEY_CONSTANT",
    "dudley_integral",
    "dudley_bound",
    "finite_max_bound",
    "expected_chi",
    "expected_max_gaussian_with_zero",
    "expected_max_abs_gaussian",
    "l2_ball_entropy_integral_lower",
    "brownian_entropy_integral",
    "one_step_discretization_rhs",
]

DUDLEY_CONSTANT = 12.0 * math.sqrt(2.0)
"""12√2 ≈ 16.97, the constant of the formal Dudley theorem (``SLT/Dudley.lean``)."""


def dudley_integral(log_cover_fn: Callable[[float], float], D: float, *, lower: float = 0.0,
                    breakpoints: tuple[float, ...] = ()) -> float:
    """``∫_lower^D √max(H(ε), 0) dε`` by adaptive quadrature.

    Parameters
    ----------
    log_cover_fn : callable
        ``ε -> log N(ε)`` (or any upper/lower bound on it; the result inherits that meaning).
        Negative values are treated as 0 (Lean's convention ``H = 0`` when ``N <= 1``).
    D : float > 0
        Upper limit (a bound on the diameter).
    lower : float >= 0
        Lower limit (0 for Dudley's integral; > 0 for truncated variants).
    breakpoints : tuple of float
        Points where ``log_cover_fn`` jumps, passed to the integrator.
    """
    D = check_positive(D, "D")
    if not (0 <= lower < D):
        raise ValueError(f"need 0 <= lower < D, got lower={lower!r}, D={D!r}")

    def integrand(eps: float) -> float:
        h = float(log_cover_fn(eps))
        if math.isnan(h) or math.isinf(h):
            raise ValueError(f"log_cover_fn({eps:.3g}) = {h}: the entropy integral needs finite N")
        return math.sqrt(max(h, 0.0))

    pts = sorted(p for p in breakpoints if lower < p < D)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        value, abserr, info, *msg = integrate.quad(integrand, lower, D, points=pts or None, limit=500,
                                                   epsabs=1e-12, epsrel=1e-10, full_output=1)
    ier = 0 if not msg else 1
    suspicious = ier and (value < 0 or not math.isfinite(value) or abserr > 1e-6 * max(1.0, abs(value))
                          or "divergent" in str(msg[0]))
    if value < 0 or suspicious:
        raise ValueError(f"the entropy integral over [{lower:.3g}, {D:.3g}] does not converge "
                         f"(quadrature returned {value:.4g} ± {abserr:.2g}: {str(msg[0]).splitlines()[0] if msg else ''}); "
                         "J(s, D) must be finite for Dudley's bound (Lean hypothesis `hfinite`)")
    return float(value)


def dudley_bound(sigma: float, entropy_integral: float) -> float:
    """Paper T7: ``12√2 · σ · J``."""
    sigma = check_positive(sigma, "sigma")
    if not (entropy_integral >= 0) or math.isinf(entropy_integral):
        raise ValueError(f"entropy_integral must be finite and >= 0, got {entropy_integral!r}")
    return DUDLEY_CONSTANT * sigma * float(entropy_integral)


def finite_max_bound(sigma: float, diam: float, card: int) -> float:
    """Paper T6: ``E max_{t∈T} X_t <= σ · diam(T) · √(2 log |T|)`` for ``|T| >= 2``."""
    sigma, diam = check_positive(sigma, "sigma"), check_positive(diam, "diam")
    card = check_positive_int(card, "card", minimum=2)
    return sigma * diam * math.sqrt(2.0 * math.log(card))


def one_step_discretization_rhs(local_osc, net_max):
    """Paper T17 (``one_step_discretization_bound``, ``SLT/TDudley.lean``): ``2·localOsc_δ + 2·max_u |X_u − X_u0|``.

    The pathwise bound on the global oscillation ``sup_{x,y∈T} (X_x − X_y)`` when ``U ⊂ T`` is a finite
    δ-net of ``T`` with centres in ``T`` and ``u0 ∈ U``. Arrays are accepted (one value per path).
    """
    local_osc = np.asarray(local_osc, dtype=float)
    net_max = np.asarray(net_max, dtype=float)
    if np.any(~np.isfinite(local_osc)) or np.any(~np.isfinite(net_max)):
        raise ValueError("local_osc and net_max must be finite")
    if np.any(local_osc < 0) or np.any(net_max < 0):
        raise ValueError("oscillations are >= 0")
    out = 2.0 * local_osc + 2.0 * net_max
    return float(out) if out.ndim == 0 else out


def expected_chi(r: int) -> float:
    """``E‖g‖₂ = √2 Γ((r+1)/2) / Γ(r/2)`` for ``g ~ N(0, I_r)`` (``r = 0`` gives 0)."""
    r = check_positive_int(r, "r", minimum=0)
    if r == 0:
        return 0.0
    return math.sqrt(2.0) * math.exp(special.gammaln((r + 1) / 2) - special.gammaln(r / 2))


def expected_max_gaussian_with_zero(m: int) -> float:
    """``E max(0, g_1, …, g_m)`` for iid standard normals: ``∫_0^∞ 1 − Φ(x)^m dx`` (quadrature)."""
    m = check_positive_int(m, "m")
    value, _ = integrate.quad(lambda x: -math.expm1(m * stats.norm.logcdf(x)), 0, np.inf,
                              epsabs=1e-13, epsrel=1e-11, limit=200)
    return float(value)


def expected_max_abs_gaussian(d: int) -> float:
    """``E‖g‖_∞ = ∫_0^∞ 1 − (2Φ(x) − 1)^d dx`` for ``g ~ N(0, I_d)`` (= E sup over B₁^d)."""
    d = check_positive_int(d, "d")
    value, _ = integrate.quad(lambda x: -math.expm1(d * math.log1p(-2 * stats.norm.sf(x))), 0, np.inf,
                              epsabs=1e-13, epsrel=1e-11, limit=200)
    return float(value)


def l2_ball_entropy_integral_lower(d: int, radius: float, D: float) -> float:
    """A closed-form **lower** bound on ``J(B₂^d(R), D)`` from the volume bound ``N(ε) >= (R/ε)^d``.

    ``∫_0^{min(D,R)} √(d log(R/ε)) dε = R √d Γ(3/2) Q(3/2, log(R/min(D,R)))`` with ``Q`` the
    regularised upper incomplete gamma function.
    """
    d, radius, D = check_positive_int(d, "d"), check_positive(radius, "radius"), check_positive(D, "D")
    a = min(D, radius) / radius
    tail = special.gammaincc(1.5, -math.log(a)) if a < 1 else 1.0
    return radius * math.sqrt(d) * math.gamma(1.5) * float(tail)


def brownian_entropy_integral(D: float = 1.0, m_max: int = 1_000_000) -> tuple[float, float]:
    """Bracket ``J([0,1], D)`` for the metric ``d(s,t) = √|s−t|`` (Brownian motion's canonical metric).

    Closed ε-balls are intervals of half-width ε², so ``N(ε) = ⌈1/(2ε²)⌉`` (centres in ℝ); the
    integral is a sum over the plateaus where ``N = m``, summed exactly for ``m <= m_max`` and
    bracketed below that scale by ``√log(1/(2ε²))`` and ``√log(1/(2ε²) + 1)``.

    Returns
    -------
    (lower, upper) : tuple of float
    """
    D = check_positive(D, "D")
    m_max = check_positive_int(m_max, "m_max", minimum=2)
    m = np.arange(2, m_max + 1, dtype=float)
    hi = 1.0 / np.sqrt(2.0 * (m - 1))  # N(ε) = m for ε in [1/√(2m), 1/√(2(m−1)))
    lo = 1.0 / np.sqrt(2.0 * m)
    width = np.clip(np.minimum(hi, D) - lo, 0.0, None)
    body = float(np.sum(np.sqrt(np.log(m)) * width))
    a = min(1.0 / math.sqrt(2.0 * m_max), D)

    def tail(shift: float) -> float:
        v, _ = integrate.quad(lambda e: math.sqrt(math.log(1.0 / (2 * e * e) + shift)), 0, a, limit=200)
        return float(v)

    return body + tail(0.0), body + tail(1.0)

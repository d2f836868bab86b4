"""The theorem catalogue: every formal statement of the paper with a numerical check and a control.

Nothing here machine-checks Lean. Each entry records where the theorem lives in the Lean library
(``YuanheZ/lean-stat-learning-theory`` at commit ``d0f506f``; names and paths as in the paper's
README table) and its hypotheses in words, and carries two Python callables:

``check(rng, n_mc) -> CheckResult``
    evaluates both sides of the inequality on concrete instances that satisfy the hypotheses —
    exactly (enumeration, closed forms, quadrature) where possible, otherwise by Monte Carlo,
    where a violation is declared only when a one-sided 99% confidence bound (Bonferroni-corrected
    over the theorem's instances) crosses the bound.
``control(rng, n_mc) -> CheckResult``
    the same evaluation of a *mutated* statement (a wrong constant, a dropped hypothesis) that is
    false; it must come out violated, otherwise the check has no power.

Tightness is ``bound ÷ truth`` at the tightest instance (1 = sharp).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache, partial
from typing import Any

import numpy as np
from scipy import integrate, special, stats

from . import chaining as ch
from . import concentration as co
from . import covering as cv
from . import functionals as fn
from . import least_squares as ls

__all__ = ["CheckResult", "TheoremSpec", "THEOREMS", "LEAN_REPO", "LEAN_COMMIT", "run_catalogue",
           "catalogue_text"]

LEAN_REPO = "https://github.com/YuanheZ/lean-stat-learning-theory"
LEAN_COMMIT = "d0f506f0a695018265dccb33bcb05e2f5ca1c876"
EXACT_TOL = 1e-10
MC_CONFIDENCE = 0.99


@dataclass(frozen=True)
class CheckResult:
    """Outcome of evaluating one statement (``lhs <= rhs``) on a set of instances.

    Attributes
    ----------
    key : str
        Theorem key (``"T07"``).
    kind : str
        ``"exact"`` or ``"mc"`` (at least one side estimated by Monte Carlo).
    n_instances : int
    max_excess : float
        ``max(lhs_conf − rhs)`` over instances (relative to ``max(1, |rhs|)``, or in log space for
        probability statements); > tolerance means violated. ``lhs_conf`` is the exact value, or
        the lower confidence bound of an MC estimate.
    violated : bool
    tightness : float
        ``min rhs / lhs`` over instances (bound ÷ truth at the tightest instance).
    detail : dict
        Per-instance numbers, JSON-able.
    resolution : float
        The smallest violation the check resolves, in the units of ``max_excess``: the half-width
        of the confidence bound (``lhs − lhs_conf``, scaled like the excess) at the Monte Carlo
        instance whose point estimate is closest to the bound (where a wrong statement shows first
        among the estimated ones). 0 for an exact check (no Monte Carlo noise); ``inf`` when that
        instance's bound is unusable.
    spec_error : float
        Largest relative mismatch, over the row's *spec legs*, between a value the library returns
        (the bound, or an exactly known side) and the same quantity evaluated in the row from the
        statement's own formula or an independent computation (0 without spec legs). A mismatch
        beyond a leg's tolerance makes the row violated: the inequality alone cannot see a
        transcription error hidden by the theorem's slack (issue 47).
    """

    key: str
    kind: str
    n_instances: int
    max_excess: float
    violated: bool
    tightness: float
    detail: dict[str, Any] = field(default_factory=dict)
    resolution: float = 0.0
    spec_error: float = 0.0
    spec_failed: bool = False

    @property
    def status(self) -> str:
        """``exact-pass`` | ``mc-pass`` | ``fail``."""
        return "fail" if self.violated else f"{self.kind}-pass"

    @property
    def verdict_text(self) -> str:
        """``"numerically consistent on N instances"`` or ``"violated on ..."``: never "proved"."""
        if self.violated and self.spec_failed and self.max_excess <= 0:
            return (f"violated (the library differs from the statement's formula by {self.spec_error:.3g} "
                    f"relative on a spec leg; inequality holds on {self.n_instances} instances)")
        if self.violated:
            return f"violated (max excess {self.max_excess:.3g} over {self.n_instances} instances)"
        return f"numerically consistent on {self.n_instances} instances ({self.kind})"


@dataclass(frozen=True)
class TheoremSpec:
    """One formal theorem: Lean metadata, the statement in words, and check/control callables.

    ``detects`` / ``cannot_detect`` say what a wrong statement or a wrong implementation the row
    would flag and what it never can (no numerical row can detect a constant that is too *large*);
    ``can_fail`` is False for rows whose statement no finite computation can falsify (they are kept
    as witnesses). ``lean_terms`` are exact substrings of the vendored Lean conclusion (or of one of
    the vendored ``lean_defs``) that carry the constants the Python code uses; the tests check them.
    """

    key: str
    lean_name: str
    lean_file: str
    source: str
    statement: str
    hypotheses: str
    kind: str
    instances: str
    control_description: str
    check: Callable[[np.random.Generator, int], CheckResult] = field(repr=False, compare=False)
    control: Callable[[np.random.Generator, int], CheckResult] = field(repr=False, compare=False)
    detects: str = ""
    cannot_detect: str = ""
    can_fail: bool = True
    lean_terms: tuple[str, ...] = ()
    lean_defs: tuple[str, ...] = ()


SPEC_RTOL = 1e-9
"""Default relative tolerance of a spec leg (closed forms agree to rounding; quadrature legs pass
their own, looser tolerance)."""


def _spec_errors(spec) -> tuple[float, bool, dict[str, float]]:
    """``spec``: iterable of ``(name, got, want[, rtol])``; returns (max relative error, any leg beyond its
    tolerance, per-leg max relative error)."""
    worst, failed, per = 0.0, False, {}
    for leg in spec or ():
        name, got, want = leg[:3]
        rtol = leg[3] if len(leg) > 3 else SPEC_RTOL
        got = np.asarray(got, dtype=float).ravel()
        want = np.asarray(want, dtype=float).ravel()
        if got.shape != want.shape or got.size == 0:
            raise ValueError(f"spec leg {name!r}: shapes {got.shape} and {want.shape} differ or are empty")
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
        rel = np.where(got == want, 0.0, rel)  # equal infinities agree
        err = float(np.max(np.nan_to_num(rel, nan=np.inf)))
        per[name] = max(per.get(name, 0.0), err if math.isfinite(err) else 1e300)
        worst = max(worst, per[name])
        failed = failed or err > rtol
    return worst, failed, per


def _compare(key: str, kind: str, lhs, rhs, *, lhs_conf=None, log: bool = False,
             tol: float = EXACT_TOL, tightness: float | None = None, spec=None, **detail) -> CheckResult:
    lhs = np.asarray(lhs, dtype=float).ravel()
    rhs = np.asarray(rhs, dtype=float).ravel()
    conf = lhs if lhs_conf is None else np.asarray(lhs_conf, dtype=float).ravel()
    if not (lhs.shape == rhs.shape == conf.shape) or lhs.size == 0:
        raise ValueError(f"{key}: lhs/rhs/conf shapes differ or are empty")
    if np.any(np.isnan(lhs)) or np.any(np.isnan(rhs)) or np.any(np.isnan(conf)):
        raise ValueError(f"{key}: NaN in a side of the inequality")
    if log:
        excess = conf - rhs
        finite = np.isfinite(lhs)
        ratio = np.exp(rhs[finite] - lhs[finite])
    else:
        excess = (conf - rhs) / np.maximum(1.0, np.abs(rhs))
        pos = lhs > 0
        ratio = rhs[pos] / lhs[pos]
    max_excess = float(np.max(excess))
    tight = tightness if tightness is not None else (float(np.min(ratio)) if ratio.size else math.inf)
    spec_err, spec_failed, per_leg = _spec_errors(spec)
    detail = {"lhs": lhs.tolist()[:200], "rhs": rhs.tolist()[:200], "log_domain": log, **detail}
    if per_leg:
        detail["spec_legs"] = per_leg
    return CheckResult(key, kind, int(lhs.size), max_excess, bool(max_excess > tol or spec_failed), tight, detail,
                       _resolution(lhs, conf, rhs, log), spec_err, spec_failed)


def _resolution(lhs, conf, rhs, log: bool) -> float:
    """Half-width of the confidence bound at the Monte Carlo instance closest to the bound (see
    CheckResult); 0 when every instance is exact."""
    scale = np.ones_like(rhs) if log else np.maximum(1.0, np.abs(rhs))
    mc = lhs != conf  # an exact instance has conf == lhs
    if not mc.any():
        return 0.0
    with np.errstate(invalid="ignore"):
        point = np.where(mc, (lhs - rhs) / scale, np.nan)
        width = (lhs - conf) / scale
    finite = np.isfinite(point)
    if not finite.any():
        return math.inf
    i = int(np.flatnonzero(finite)[np.argmax(point[finite])])
    w = float(width[i])
    return w if math.isfinite(w) else math.inf


def _z(n_instances: int) -> float:
    """One-sided normal quantile for a family-wise 99% bound over ``n_instances`` MC instances."""
    return float(stats.norm.ppf(1 - (1 - MC_CONFIDENCE) / max(n_instances, 1)))


# ---------------------------------------------------------------------------------------------
# spec legs: the statements' formulas written out here, independently of the library (issue 47)
# ---------------------------------------------------------------------------------------------

_SQRT2 = math.sqrt(2.0)


def _chi_mean(r: int) -> float:
    """E χ_r from scipy's chi law (independent of ``chaining.expected_chi``)."""
    return float(stats.chi.mean(r)) if r > 0 else 0.0


def _l2_entropy_lower_ref(d: int, radius: float, D: float) -> float:
    """∫_0^{min(D,R)} √(d log(R/ε)) dε by adaptive quadrature (the library uses the incomplete gamma)."""
    top = min(D, radius)
    val, _ = integrate.quad(lambda e: math.sqrt(d * math.log(radius / e)), 0.0, top, limit=200, epsabs=1e-12)
    return float(val)


def _packing_legs(name: str, pts: np.ndarray, sep: float, count: int) -> list[tuple]:
    """A greedy maximal ``sep``-separated subset: separated, maximal, and of the reported size."""
    idx = cv.greedy_net_indices(pts, sep)
    sub = pts[idx]
    if idx.size > 1:
        dist = np.sqrt(np.maximum(np.sum((sub[:, None, :] - sub[None, :, :]) ** 2, axis=2), 0.0))
        min_sep = float(np.min(dist[np.triu_indices(idx.size, 1)]))
    else:
        min_sep = math.inf
    far = float(np.max(np.min(np.sqrt(np.sum((pts[:, None, :] - sub[None, :, :]) ** 2, axis=2)), axis=1)))
    return [(f"{name}: size", [idx.size], [count]),
            (f"{name}: separated (min distance >= sep)", [min(min_sep, sep)], [sep]),
            (f"{name}: maximal (every point within sep)", [max(far, sep)], [sep])]


def _entropy_ref(y: np.ndarray) -> float:
    """Ent(Y) = E[Y log Y] − E Y log E Y under the uniform law (0 log 0 = 0)."""
    y = np.asarray(y, dtype=float).ravel()
    m = y.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        ylogy = np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0)), 0.0)
    return float(ylogy.mean() - (m * math.log(m) if m > 0 else 0.0))


def _weights(probs, shape) -> np.ndarray:
    """Product weights of the coordinate laws ``probs`` (uniform when None)."""
    if probs is None:
        return np.full(shape, 1.0 / math.prod(shape))
    w = np.ones(())
    for p in probs:
        w = np.multiply.outer(w, np.asarray(p, dtype=float))
    return w


def _cond_mean(f: np.ndarray, w1: np.ndarray, axis: int) -> np.ndarray:
    """E^(i) f: the mean over coordinate ``axis`` under its marginal ``w1``, broadcast back."""
    shape = [1] * f.ndim
    shape[axis] = -1
    return np.sum(f * w1.reshape(shape), axis=axis, keepdims=True)


def _marginals(probs, f: np.ndarray) -> list[np.ndarray]:
    return [np.full(k, 1.0 / k) for k in f.shape] if probs is None else [np.asarray(p, float) for p in probs]


def _efron_stein_ref(f, probs=None) -> tuple[float, float]:
    """(Var f, Σ_i E[(f − E^(i) f)²]) by direct weighted sums."""
    f = np.asarray(f, dtype=float)
    w, ps = _weights(probs, f.shape), _marginals(probs, f)
    mean = float(np.sum(w * f))
    rhs = sum(float(np.sum(w * (f - _cond_mean(f, ps[i], i)) ** 2)) for i in range(f.ndim))
    return float(np.sum(w * (f - mean) ** 2)), rhs


def _cond_entropy_sum_ref(f, probs=None) -> float:
    """Σ_i E[Ent^(i) f] by direct weighted sums."""
    f = np.asarray(f, dtype=float)
    w, ps = _weights(probs, f.shape), _marginals(probs, f)
    with np.errstate(divide="ignore", invalid="ignore"):
        flogf = np.where(f > 0, f * np.log(np.where(f > 0, f, 1.0)), 0.0)
    total = 0.0
    for i in range(f.ndim):
        m = _cond_mean(f, ps[i], i)
        with np.errstate(divide="ignore", invalid="ignore"):
            mlogm = np.where(m > 0, m * np.log(np.where(m > 0, m, 1.0)), 0.0)
        total += float(np.sum(w * (_cond_mean(flogf, ps[i], i) - mlogm)))
    return total


def _flip_energy_ref(h) -> float:
    """½ E Σ_j (h(ε) − h(flip_j ε))² on the uniform hypercube (the Lean ``gradientNormSq`` form)."""
    h = np.asarray(h, dtype=float)
    return 0.5 * sum(float(np.mean((h - np.flip(h, axis=j)) ** 2)) for j in range(h.ndim))


# ---------------------------------------------------------------------------------------------
# T1 small ball
# ---------------------------------------------------------------------------------------------

def _t01(rng, n_mc, control=False):
    scale = 2.0 if control else 1.0  # control: U[0, 1/2] has density 2 > 1
    lhs, rhs, ref = [], [], []
    for N in range(1, 21):
        for eps in np.linspace(0.02, 1 / math.e - 0.01, 7):
            p = co.irwin_hall_cdf(min(scale * eps * N, N), N)
            lhs.append(math.log(p))
            rhs.append(math.log(co.small_ball_bound(eps, N)))
            ref.append(N * (1.0 + math.log(eps)))  # log (eε)^N
    spec = None if control else [("bound = (eε)^N", rhs, ref)]
    return _compare("T01", "exact", lhs, rhs, log=True, spec=spec)


# ---------------------------------------------------------------------------------------------
# T2-T5, T23 covering
# ---------------------------------------------------------------------------------------------

def _t02(rng, n_mc, control=False):
    """Greedy ε-nets of growing samples of a totally bounded set stay below one finite number.

    A greedy ε-net of a sample ``S ⊂ s`` is ε-separated, hence at most ``N(ε/2, s)`` points
    (closed ε/2-balls hold one each), and ``N(ε/2, B₂^d(R)) <= (1 + 4R/ε)^d`` (T4): a finite number
    that does not depend on the sample size.
    """
    lhs, rhs, sizes = [], [], []
    for eps in (0.2, 0.1):
        for m in (250, 1000, 4000):
            # control: a heavy-tailed (Cauchy) cloud, not inside B₂²(1), judged with the unit ball's bound
            pts = rng.standard_cauchy((m, 2)) if control else cv.sample_l2_ball(m, 2, 1.0, rng)
            lhs.append(math.log(cv.covering_number_greedy(pts, eps)))
            rhs.append(cv.euclidean_ball_covering_bound(1.0, eps / 2, 2, log=True))
            sizes.append(m)
    return _compare("T02", "exact", lhs, rhs, log=True, sample_sizes=sizes)


def _t03(rng, n_mc, control=False):
    lhs, rhs, spec = [], [], []
    for d in (2, 3, 5):
        pts = cv.sample_l2_ball(1500, d, 1.0, rng)
        for eps in (0.6, 0.4, 0.25):
            idx = cv.greedy_net_indices(pts, eps)
            if control:  # not maximal: keep only the first half of the separated set
                idx = idx[: max(1, idx.size // 2)]
            lhs.append(cv.net_radius(pts[idx], pts))
            rhs.append(eps)
            if not control and d == 2:  # the hypothesis: the set is ε-separated; the radius by brute force
                spec += _packing_legs(f"d={d}, eps={eps}", pts, eps, idx.size)[1:2]
                far = np.min(np.linalg.norm(pts[:, None, :] - pts[idx][None, :, :], axis=2), axis=1)
                spec.append(("net radius = max_x min_t ‖x − t‖", [lhs[-1]], [float(np.max(far))]))
    return _compare("T03", "exact", lhs, rhs, spec=spec or None)


def _t04(rng, n_mc, control=False):
    lhs, rhs, spec = [], [], []
    for d in (1, 2, 3):
        pts = cv.sample_l2_ball(2000, d, 1.0, rng)
        for eps in (0.5, 0.25, 0.1):
            count = cv.packing_number_greedy(pts, 2 * eps)
            lhs.append(math.log(count))  # <= N(eps, B)
            if control:  # exponent d − 1 instead of d
                rhs.append(cv.euclidean_ball_covering_bound(1.0, eps, d - 1, log=True) if d > 1 else 0.0)
            else:
                rhs.append(cv.euclidean_ball_covering_bound(1.0, eps, d, log=True))
                spec.append(("bound = (1 + 2R/ε)^d", [rhs[-1]], [d * math.log(1.0 + 2.0 / eps)]))
                if eps == 0.25:
                    spec += _packing_legs(f"d={d}, 2ε-packing", pts, 2 * eps, count)
    return _compare("T04", "exact", lhs, rhs, log=True, spec=spec or None)


def _t05(rng, n_mc, control=False):
    lhs, rhs, spec = [], [], []
    for d in (2, 3, 5):
        pts = cv.sample_l1_ball(2000, d, 1.0, rng)
        for eps in (0.5, 0.3, 0.2):
            count = cv.packing_number_greedy(pts, 2 * eps)
            lhs.append(math.log(count))
            rhs.append(math.log(2 * d + 1) if control else cv.l1_ball_covering_bound(1.0, eps, d, log=True))
            if not control:
                k = math.ceil(Fraction(1.0) ** 2 / Fraction(eps) ** 2)
                spec.append(("bound = (2d+1)^⌈R²/ε²⌉", [rhs[-1]], [k * math.log(2 * d + 1)]))
                if eps == 0.3:
                    spec += _packing_legs(f"d={d}, 2ε-packing", pts, 2 * eps, count)
    return _compare("T05", "exact", lhs, rhs, log=True, spec=spec or None)


def l1_image_points(X: np.ndarray, radius: float, m: int, rng: np.random.Generator) -> np.ndarray:
    """Points of ``{Xθ/√n : ‖θ‖₁ <= R}``: images of uniform ℓ₁-ball points, of the vertices ``±R e_j``
    and of 2-sparse points ``R(±e_i ± e_j)/2`` (the spread-out part of the set)."""
    n, d = X.shape
    thetas = [cv.sample_l1_ball(m, d, radius, rng), radius * np.vstack([np.eye(d), -np.eye(d)])]
    i, j = np.triu_indices(d, 1)
    for si in (-1.0, 1.0):
        for sj in (-1.0, 1.0):
            t = np.zeros((i.size, d))
            t[np.arange(i.size), i] = si * radius / 2
            t[np.arange(i.size), j] = sj * radius / 2
            thetas.append(t)
    return np.vstack(thetas) @ X.T / math.sqrt(n)


def _t23(rng, n_mc, control=False):
    n, radius = 50, 1.0
    lhs, rhs, found, spec = [], [], [], []
    for d in (10, 20):
        X = rng.standard_normal((n, d))
        X *= math.sqrt(n) / np.linalg.norm(X, axis=0)  # ‖X_j‖₂ = √n (column normalisation)
        pts = l1_image_points(X, radius, 1000, rng)
        for eps in (0.5, 0.3, 0.2):
            lhs.append(math.log(cv.packing_number_greedy(pts, 2 * eps)))  # <= N(ε, image)
            rhs.append(math.log(2 * d + 1) if control else cv.l1_ball_covering_bound(radius, eps, d, log=True))
            if not control:
                k = math.ceil(Fraction(radius) ** 2 / Fraction(eps) ** 2)
                spec.append(("bound = (2d+1)^⌈R²/ε²⌉", [rhs[-1]], [k * math.log(2 * d + 1)]))
            if not control:  # the proof's construction: a Maurey average of k atoms within ε
                w = rng.exponential(size=d)
                theta = radius * rng.choice([-1.0, 1.0], size=d) * w / w.sum()
                _, dist = cv.maurey_net_point(theta, X, eps, rng, radius)
                found.append(bool(dist <= eps))
    return _compare("T23", "exact", lhs, rhs, log=True, spec=spec or None,
                    constructive_found_fraction=float(np.mean(found)) if found else None)


# ---------------------------------------------------------------------------------------------
# T6 finite max, T7 Dudley, T17 one-step discretisation
# ---------------------------------------------------------------------------------------------

def _t06(rng, n_mc, control=False):
    scale = 3.0 if control else 1.0  # control: the process is 3-sub-Gaussian, declared 1
    lhs, conf, rhs, spec = [], [], [], []
    for m in (1, 9, 99, 999):  # T = {0, e_1, …, e_m}: exact E max by quadrature
        v = scale * ch.expected_max_gaussian_with_zero(m)
        lhs.append(v)
        conf.append(v)
        diam = 1.0 if m == 1 else math.sqrt(2.0)
        rhs.append(ch.finite_max_bound(1.0, diam, m + 1))
        spec.append(("bound = σ diam √(2 log|T|)", [rhs[-1]], [diam * math.sqrt(2.0 * math.log(m + 1))]))
        if m == 1:  # E max(0, g) = 1/√(2π)
            spec.append(("E max(0, g) = 1/√(2π)", [v / scale], [1.0 / math.sqrt(2 * math.pi)], 1e-8))
    mc_sets = [(10, 5), (100, 5), (300, 20)]
    z = _z(len(mc_sets))
    for m, dim in mc_sets:  # T = {0} ∪ m Gaussian points in R^dim: MC E max
        T = np.vstack([np.zeros(dim), rng.standard_normal((m, dim))])
        diam = float(np.max(np.linalg.norm(T[:, None, :] - T[None, :, :], axis=2)))
        vals = np.concatenate([np.max(scale * rng.standard_normal((min(n_mc, 20000), dim)) @ T.T, axis=1)
                               for _ in range(max(1, n_mc // 20000))])
        mean, se = vals.mean(), vals.std(ddof=1) / math.sqrt(vals.size)
        lhs.append(mean)
        conf.append(mean - z * se)
        rhs.append(ch.finite_max_bound(1.0, diam, m + 1))
        spec.append(("bound = σ diam √(2 log|T|)", [rhs[-1]], [diam * math.sqrt(2.0 * math.log(m + 1))]))
    return _compare("T06", "mc", lhs, rhs, lhs_conf=conf, tol=0.0, spec=None if control else spec)


def _l1_ball_log_cover_lower(d: int):
    log_vol_ratio = d * math.log(2.0) - special.gammaln(d + 1) + special.gammaln(d / 2 + 1) - d / 2 * math.log(math.pi)

    def f(eps: float) -> float:
        lower = log_vol_ratio - d * math.log(eps)
        if eps < 1 / math.sqrt(2):  # ±e_i are pairwise √2 apart
            lower = max(lower, math.log(2 * d))
        return max(lower, 0.0)

    return f


@cache
def dudley_instances() -> list[dict[str, Any]]:
    """Dudley check instances with exact ``E sup`` and bracketed entropy integrals (σ = 1).

    Returns a list of dicts with keys ``name, e_sup, J_lower, J_upper, D``: ``J_lower`` uses a valid
    lower bound on ``N(ε)`` (so ``12√2·J_lower <= 12√2·J``, a stronger test), ``J_upper`` the
    formal covering bound (T4 for B₂, min(T4, T5) for B₁).
    """
    out = []
    for d in (2, 10, 50):
        J_up = ch.dudley_integral(lambda e, d=d: cv.euclidean_ball_covering_bound(1.0, e, d, log=True), 2.0)
        out.append({"name": f"B2^{d}", "e_sup": ch.expected_chi(d), "D": 2.0,
                    "J_lower": ch.l2_ball_entropy_integral_lower(d, 1.0, 2.0), "J_upper": J_up})
    for d in (2, 10, 50):
        J_lo = ch.dudley_integral(_l1_ball_log_cover_lower(d), 2.0, breakpoints=(1 / math.sqrt(2),))
        J_up = ch.dudley_integral(
            lambda e, d=d: min(cv.euclidean_ball_covering_bound(1.0, e, d, log=True),
                               cv.l1_ball_covering_bound(1.0, e, d, log=True)), 2.0,
            breakpoints=tuple(1 / math.sqrt(k) for k in range(1, 200)))
        out.append({"name": f"B1^{d}", "e_sup": ch.expected_max_abs_gaussian(d), "D": 2.0,
                    "J_lower": J_lo, "J_upper": J_up})
    lo, hi = ch.brownian_entropy_integral(1.0)
    out.append({"name": "Brownian[0,1]", "e_sup": math.sqrt(2 / math.pi), "D": 1.0, "J_lower": lo, "J_upper": hi})
    return out


def _t07(rng, n_mc, control=False):
    inst = dudley_instances()
    lhs = [i["e_sup"] for i in inst]
    # control: constant 1 instead of 12√2 (the bound σ·J with no constant)
    rhs = [i["J_lower"] if control else ch.dudley_bound(1.0, i["J_lower"]) for i in inst]
    spec = None if control else [
        ("bound = 12√2 σ J", rhs, [12.0 * _SQRT2 * i["J_lower"] for i in inst]),
        ("E sup over B₂^d = E χ_d", [i["e_sup"] for i in inst if i["name"].startswith("B2")],
         [_chi_mean(int(i["name"][3:])) for i in inst if i["name"].startswith("B2")], 1e-9),
        ("J lower bound on B₂^d (quadrature)", [i["J_lower"] for i in inst if i["name"].startswith("B2")],
         [_l2_entropy_lower_ref(int(i["name"][3:]), 1.0, i["D"]) for i in inst if i["name"].startswith("B2")], 1e-7)]
    return _compare("T07", "exact", lhs, rhs, names=[i["name"] for i in inst], spec=spec,
                    slack_formal_cover=[ch.dudley_bound(1.0, i["J_upper"]) / i["e_sup"] for i in inst])


def _t17(rng, n_mc, control=False):
    grid = 256
    delta = 0.25  # d(s,t) = √|s−t| <= δ  ⇔  |s−t| <= δ² = 1/16 = 16 steps
    lag = int(round(delta**2 * grid))
    centres = np.arange(lag, grid + 1, 2 * lag)  # δ-net of the grid with centres in T
    n_paths = max(50, n_mc // 100)
    steps = rng.standard_normal((n_paths, grid)) / math.sqrt(grid)
    W = np.hstack([np.zeros((n_paths, 1)), np.cumsum(steps, axis=1)])
    osc = np.max(W, axis=1) - np.min(W, axis=1)
    local = np.max([np.max(np.abs(W[:, h:] - W[:, :-h]), axis=1) for h in range(1, lag + 1)], axis=0)
    u = W[:, centres]
    net_term = np.max(np.abs(u - u[:, :1]), axis=1)
    bound = ch.one_step_discretization_rhs(local, net_term)
    spec = None if control else [("bound = 2 localOsc + 2 max", bound, 2 * local + 2 * net_term)]
    return _compare("T17", "exact", osc, bound / 2 if control else bound, paths=n_paths, spec=spec)


# ---------------------------------------------------------------------------------------------
# T8-T14 functional inequalities
# ---------------------------------------------------------------------------------------------

def _cube_functions(rng, n: int, count: int, positive: bool = False) -> list[np.ndarray]:
    eps = fn.hypercube(n)
    fs = [1.0 + 0.1 * eps[:, 0], eps.sum(axis=1), np.prod(1.0 + 0.3 * eps, axis=1),
          (eps.sum(axis=1) > 0).astype(float) + 0.1, np.abs(eps[:, :3].sum(axis=1))]
    while len(fs) < count:
        kind = len(fs) % 3
        if kind == 0:
            fs.append(rng.standard_normal(2**n))
        elif kind == 1:
            fs.append(rng.standard_normal(2**n) * (rng.random(2**n) < 0.1))
        else:
            w = rng.standard_normal(n)
            fs.append(np.tanh(eps @ w) + 0.05 * rng.standard_normal())
    if positive:
        fs = [np.abs(f) + 1e-3 for f in fs]
    return [f.reshape((2,) * n) for f in fs[:count]]


def _t08(rng, n_mc, control=False):
    lhs, rhs, refs = [], [], []
    for f in _cube_functions(rng, 8, 40):
        lhs.append(fn.variance(f))
        rhs.append(fn.efron_stein_rhs(f) * (0.5 if control else 1.0))
        refs.append(_efron_stein_ref(f))
    probs = [rng.dirichlet(np.ones(3)) for _ in range(5)]
    for _ in range(10):
        f = rng.standard_normal((3,) * 5)
        lhs.append(fn.variance(f, probs))
        rhs.append(fn.efron_stein_rhs(f, probs) * (0.5 if control else 1.0))
        refs.append(_efron_stein_ref(f, probs))
    spec = None if control else [("Var f (direct sum)", lhs, [r[0] for r in refs], 1e-9),
                                 ("Σ_i E[(f − E^(i) f)²] (direct sum)", rhs, [r[1] for r in refs], 1e-9)]
    return _compare("T08", "exact", lhs, rhs, spec=spec)


def _t10(rng, n_mc, control=False):
    lhs, rhs, ref_l, ref_r = [], [], [], []
    for h in _cube_functions(rng, 8, 40):
        lhs.append(fn.entropy(h**2))
        rhs.append(fn.han_rhs(h) * (0.5 if control else 1.0))
        ref_l.append(_entropy_ref(h**2))
        ref_r.append(_cond_entropy_sum_ref(h**2))
    spec = None if control else [("Ent(h²) (direct sum)", lhs, ref_l, 1e-9),
                                 ("Σ_j E Ent^(j)(h²) (direct sum)", rhs, ref_r, 1e-9)]
    return _compare("T10", "exact", lhs, rhs, spec=spec)


def _t11(rng, n_mc, control=False):
    lhs, rhs, spec = [], [], []
    for y in _cube_functions(rng, 6, 20, positive=True):
        ent = fn.entropy(y)
        u_star = fn.optimal_dual_variable(y)
        if control:  # drop the normalisation E e^U = 1
            lhs.append(float(np.mean((u_star + 1.0) * y)))
            rhs.append(ent)
            continue
        lhs.append(ent)  # attained: Ent(Y) <= E[U* Y]
        rhs.append(fn.entropy_dual_objective(y, u_star))
        spec.append(("Ent(Y) (direct sum)", [ent], [_entropy_ref(y)], 1e-9))
        spec.append(("U* = log(Y/EY)", u_star, np.log(y / y.mean()), 1e-9))
        for _ in range(5):  # any admissible U: E[U Y] <= Ent(Y)
            u = rng.standard_normal(y.shape)
            u -= np.log(np.mean(np.exp(u)))
            lhs.append(fn.entropy_dual_objective(y, u))
            rhs.append(ent)
            spec.append(("E[U Y] (direct sum)", [lhs[-1]], [float(np.mean(u * y))], 1e-9))
    return _compare("T11", "exact", lhs, rhs, spec=spec or None)


def _t24(rng, n_mc, control=False):
    lhs, rhs, spec = [], [], []
    for y in _cube_functions(rng, 6, 20, positive=True):
        ent = fn.entropy(y)
        if control:  # the normalisation − log E[T] dropped, T = 2Y/E[Y]: E[Y log T] = Ent + E[Y] log 2
            lhs.append(float(np.mean(y * np.log(2 * y / np.mean(y)))))
            rhs.append(ent)
            continue
        lhs.append(ent)  # attained at T = Y
        rhs.append(fn.entropy_dual_objective_T(y, y))
        spec.append(("Ent(Y) (direct sum)", [ent], [_entropy_ref(y)], 1e-9))
        for k in range(5):  # any admissible T: E[Y(log T − log E T)] <= Ent(Y)
            t = rng.exponential(size=y.shape)
            if k == 4:
                t[t < np.median(t)] = 0.0  # T vanishes where Y > 0: value −∞ in Lean's EReal
            val = fn.entropy_dual_objective_T(y, t)
            lhs.append(val if math.isfinite(val) else -1e300)
            rhs.append(ent)
            if k < 4:  # E[Y(log T − log E T)] with T > 0
                spec.append(("E[Y(log T − log E T)] (direct sum)", [val],
                             [float(np.mean(y * (np.log(t) - math.log(np.mean(t)))))], 1e-9))
    return _compare("T24", "exact", lhs, rhs, spec=spec or None)


def _t12(rng, n_mc, control=False):
    lhs, rhs = [], []
    probs = [rng.dirichlet(np.ones(3)) for _ in range(4)]
    a = rng.uniform(0.5, 2.0, size=(4, 3))
    tables = [np.einsum("i,j,k,l->ijkl", *a)]  # product function: equality case
    tables += [rng.exponential(size=(3,) * 4) for _ in range(15)]
    tables += [rng.exponential(size=(3,) * 4) * (rng.random((3,) * 4) < 0.3) for _ in range(10)]
    ref_r = []
    for f in tables:
        lhs.append(fn.entropy(f, probs))
        rhs.append(fn.conditional_entropy_sum(f, probs) * (0.5 if control else 1.0))
        ref_r.append(_cond_entropy_sum_ref(f, probs))
    spec = None if control else [("Σ_i E Ent^(i) f (direct weighted sum)", rhs, ref_r, 1e-9)]
    return _compare("T12", "exact", lhs, rhs, spec=spec)


def _t13(rng, n_mc, control=False):
    lhs, rhs, ref_l, ref_r = [], [], [], []
    for h in _cube_functions(rng, 8, 40):
        lhs.append(fn.entropy(h**2))
        rhs.append(fn.bernoulli_lsi_rhs(h) * (0.5 if control else 1.0))
        ref_l.append(_entropy_ref(h**2))
        ref_r.append(_flip_energy_ref(h))
    spec = None if control else [("Ent(h²) (direct sum)", lhs, ref_l, 1e-9),
                                 ("½ E gradientNormSq (direct sum)", rhs, ref_r, 1e-9)]
    return _compare("T13", "exact", lhs, rhs, spec=spec)


def _bump(x):
    x = np.asarray(x, dtype=float)
    inside = np.abs(x) < 1
    out = np.zeros_like(x)
    out[inside] = np.exp(-1.0 / (1.0 - x[inside] ** 2))
    return out


def _bump_prime(x):
    x = np.asarray(x, dtype=float)
    inside = np.abs(x) < 1
    out = np.zeros_like(x)
    xi = x[inside]
    out[inside] = np.exp(-1.0 / (1.0 - xi**2)) * (-2.0 * xi / (1.0 - xi**2) ** 2)
    return out


def _t09(rng, n_mc, control=False):
    lhs, rhs = [], []
    cases = []
    for c in (-1.0, 0.0, 0.5, 2.0):
        for w in (0.5, 1.0, 3.0, 6.0):
            cases.append((lambda x, c=c, w=w: _bump((x - c) / w), lambda x, c=c, w=w: _bump_prime((x - c) / w) / w,
                          c - w, c + w))
    for w in (3.0, 6.0, 10.0):  # f(x) = x · bump(x/w), near-linear: nearly sharp
        cases.append((lambda x, w=w: x * _bump(x / w), lambda x, w=w: _bump(x / w) + x * _bump_prime(x / w) / w,
                       -w, w))
    for k in (1.0, 3.0):
        cases.append((lambda x, k=k: np.sin(k * x) * _bump(x / 4), lambda x, k=k: k * np.cos(k * x) * _bump(x / 4)
                      + np.sin(k * x) * _bump_prime(x / 4) / 4, -4.0, 4.0))
    spec = []
    for f, fp, lo, hi in cases:
        var, grad = fn.gaussian_poincare_sides(f, fp, (lo, hi))
        lhs.append(var)
        rhs.append(grad * (0.5 if control else 1.0))
        if not control:  # the same sides by a fine trapezoid rule on the support (smooth integrands)
            x = np.linspace(lo, hi, 20001)
            phi = stats.norm.pdf(x)
            fx, fpx = np.asarray(f(x), dtype=float), np.asarray(fp(x), dtype=float)
            m1, m2 = np.trapezoid(fx * phi, x), np.trapezoid(fx**2 * phi, x)
            spec.append(("Var f(X), E f'(X)² (trapezoid)", [var, grad], [m2 - m1 * m1, np.trapezoid(fpx**2 * phi, x)],
                         1e-6))
    return _compare("T09", "exact", lhs, rhs, spec=spec or None)


def _glsi_ref(g, grad, n: int, nodes: int) -> tuple[float, float]:
    """Ent_γn(g²) and E‖∇g‖² by a tensor Gauss–Hermite rule written here (probabilists' nodes)."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    grids = np.meshgrid(*([x] * n), indexing="ij")
    X = np.stack([gr.ravel() for gr in grids], axis=1)
    W = np.ones(X.shape[0])
    for wg in np.meshgrid(*([w] * n), indexing="ij"):
        W = W * wg.ravel()
    y = g(X) ** 2
    m = float(W @ y)
    with np.errstate(divide="ignore", invalid="ignore"):
        ylogy = np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0)), 0.0)
    return float(W @ ylogy) - m * math.log(m), float(W @ np.sum(grad(X) ** 2, axis=1))


def _t14(rng, n_mc, control=False):
    lhs, rhs, spec = [], [], []
    for n in (1, 2):
        for _ in range(4):
            a = rng.uniform(-1, 1, n)
            b = rng.uniform(-1.5, 1.5, n)
            amp = rng.uniform(0.1, 0.8)
            cases = [  # (g, ∇g)
                (lambda X, a=a: np.exp(X @ a / 2), lambda X, a=a: np.exp(X @ a / 2)[:, None] * a[None, :] / 2),
                (lambda X, b=b, amp=amp: 1 + amp * np.sin(X @ b),
                 lambda X, b=b, amp=amp: amp * np.cos(X @ b)[:, None] * b[None, :]),
                (lambda X, b=b: np.sqrt(1 + (X @ b) ** 2),
                 lambda X, b=b: ((X @ b) / np.sqrt(1 + (X @ b) ** 2))[:, None] * b[None, :]),
            ]
            for g, grad in cases:
                ent, energy = fn.gaussian_lsi_sides(g, grad, n, nodes=80)
                lhs.append(ent)
                rhs.append((1.0 if control else 2.0) * energy)
                if not control:
                    spec.append(("Ent(g²), E‖∇g‖² (tensor Gauss–Hermite, 110 nodes)", [ent, energy],
                                 list(_glsi_ref(g, grad, n, 110)), 1e-3))
    return _compare("T14", "exact", lhs, rhs, spec=spec or None)


# ---------------------------------------------------------------------------------------------
# T15/T16 Gaussian Lipschitz concentration
# ---------------------------------------------------------------------------------------------

def _max_density(x, n):
    return n * stats.norm.pdf(x) * np.exp((n - 1) * stats.norm.logcdf(x))


@cache
def _one_dim_laws():
    """1-Lipschitz functionals of N(0, I_n) with exact 1-D laws: (name, mean, pdf, cdf, sf, support)."""
    laws = [("x1", 0.0, stats.norm.pdf, stats.norm.cdf, stats.norm.sf, (-np.inf, np.inf))]
    for n in (10, 100):
        laws.append((f"norm2_n{n}", ch.expected_chi(n), partial(stats.chi.pdf, df=n), partial(stats.chi.cdf, df=n),
                     partial(stats.chi.sf, df=n), (0.0, np.inf)))
        mean, _ = integrate.quad(lambda x, n=n: x * _max_density(x, n), -np.inf, np.inf, epsabs=1e-13, limit=200)
        laws.append((f"max_n{n}", mean, partial(_max_density, n=n),
                     lambda x, n=n: np.exp(n * stats.norm.logcdf(x)),
                     lambda x, n=n: -np.expm1(n * stats.norm.logcdf(x)), (-np.inf, np.inf)))
    return laws


@cache
def _exact_cgfs() -> tuple[tuple[str, float, float], ...]:
    """``(law, λ, log E exp(λ(f − E f)))`` from the exact 1-D laws (deterministic, cached).

    Composite Simpson on 40001 points of ``[mean − 40, mean + 40]`` (the laws are sub-Gaussian around
    their means, so this window holds all the mass); agrees with adaptive ``quad`` to ~1e-14.
    """
    lams = [x for x in np.linspace(-3, 3, 13) if abs(x) > 1e-12]
    out = []
    for name, mean, pdf, _, _, (lo, hi) in _one_dim_laws():
        if name == "x1":
            out += [(name, float(lam), lam**2 / 2) for lam in lams]
            continue
        x = np.linspace(max(lo, mean - 40.0), min(hi, mean + 40.0), 40001)
        p = pdf(x)
        out += [(name, float(lam), math.log(integrate.simpson(np.exp(lam * (x - mean)) * p, x=x))) for lam in lams]
    return tuple(out)


def _t15(rng, n_mc, control=False):
    """1-Lipschitz functionals at L = 1, and the same functionals scaled by 2 (2-Lipschitz: the CGF of
    2f at λ is the CGF of f at 2λ), so that the L-dependence of the bound is seen (issue 47)."""
    table = {(name, round(lam, 6)): cgf for name, lam, cgf in _exact_cgfs()}
    lhs, rhs, names, spec_got, spec_want = [], [], [], [], []
    for L_true in (1.0, 2.0):
        L = L_true / 2 if control else L_true
        for name, lam, _ in _exact_cgfs():
            key = (name, round(lam * L_true, 6))
            if key not in table:
                continue
            lhs.append(table[key])
            rhs.append(co.gaussian_lipschitz_cgf_bound(lam, L))
            names.append(f"{L_true:g}·{name}@{lam:+.1f}")
            spec_got.append(rhs[-1])
            spec_want.append(lam * lam * L * L / 2)
    spec = None if control else [("bound = λ² L²/2", spec_got, spec_want)]
    return _compare("T15", "exact", lhs, rhs, names=names, spec=spec)


def _t16(rng, n_mc, control=False):
    L = 0.5 if control else 1.0
    ts = np.linspace(0.25, 5.0, 20)
    lhs, conf, rhs, spec_got, spec_want = [], [], [], [], []
    for L_true in (1.0, 2.0):  # f and 2f (2-Lipschitz): P(|2f − E 2f| >= t) = P(|f − E f| >= t/2)
        L_decl = L_true / 2 if control else L_true
        for _name, mean, _, cdf, sf, _ in _one_dim_laws():
            for t in ts:
                p = float(sf(mean + t / L_true) + cdf(mean - t / L_true))
                lhs.append(math.log(p) if p > 0 else -math.inf)
                conf.append(lhs[-1])
                b = co.gaussian_lipschitz_tail_bound(t, L_decl)
                rhs.append(math.log(b))
                spec_got.append(b)
                spec_want.append(2.0 * math.exp(-t * t / (2.0 * L_decl**2)))
    mc_dims = (10, 100)
    m_inst = len(mc_dims) * ts.size
    for n in mc_dims:  # f(x) = ‖x‖₁/√n is 1-Lipschitz; E f = √(2n/π) exactly
        counts = np.zeros(ts.size)
        done = 0
        while done < n_mc:
            b = min(20000, n_mc - done)
            f = np.abs(rng.standard_normal((b, n))).sum(axis=1) / math.sqrt(n)
            dev = np.abs(f - math.sqrt(2 * n / math.pi))
            counts += (dev[:, None] >= ts[None, :]).sum(axis=0)
            done += b
        lower, _ = co.clopper_pearson(counts, n_mc, 1 - (1 - MC_CONFIDENCE) / m_inst)
        for j, t in enumerate(ts):
            p_hat = counts[j] / n_mc
            lhs.append(math.log(p_hat) if p_hat > 0 else -math.inf)
            conf.append(math.log(lower[j]) if lower[j] > 0 else -math.inf)
            rhs.append(math.log(co.gaussian_lipschitz_tail_bound(t, L)))
    spec = None if control else [("bound = 2 exp(−t²/(2L²))", spec_got, spec_want)]
    return _compare("T16", "mc", lhs, rhs, lhs_conf=conf, log=True, tol=0.0, spec=spec)


# ---------------------------------------------------------------------------------------------
# T18-T22 least squares
# ---------------------------------------------------------------------------------------------

def _designs(rng):
    """Gaussian designs ``(X, r)`` with rank ``r``, full-rank and rank-deficient (one with d > n)."""
    out = []
    for n, d, r in ((50, 1, 1), (100, 3, 3), (200, 10, 10), (200, 10, 5), (80, 30, 30), (60, 90, 12)):
        X = rng.standard_normal((n, r)) @ rng.standard_normal((r, d))
        out.append((X, r))
    return out


def _t18(rng, n_mc, control=False):
    lhs, rhs, got, want = [], [], [], []
    for X, r in _designs(rng):
        n = X.shape[0]
        for delta in (0.1, 1.0, 3.0):
            lhs.append(ls.linear_class_complexity(X, delta))
            # image of B_H(δ) in ‖·‖_n is an r-dim Euclidean ball of radius δ; J over [0, 2δ] from below
            J = ch.l2_ball_entropy_integral_lower(r, delta, 2 * delta)
            bound = ls.local_complexity_dudley_bound(J, n)
            rhs.append(bound / ls.LOCAL_COMPLEXITY_CONSTANT * 0.5 if control else bound)
            got.append((lhs[-1], bound, J))
            want.append((delta * _chi_mean(r) / math.sqrt(n), 24.0 * _SQRT2 / math.sqrt(n) * J,
                         _l2_entropy_lower_ref(r, delta, 2 * delta) if delta == 1.0 else J))
    spec = None if control else [("G_n(δ) = δ E χ_r/√n", [g[0] for g in got], [w[0] for w in want], 1e-9),
                                 ("bound = (24√2/√n) J", [g[1] for g in got], [w[1] for w in want]),
                                 ("J lower bound (quadrature)", [g[2] for g in got], [w[2] for w in want], 1e-7)]
    return _compare("T18", "exact", lhs, rhs, spec=spec)


def _t19(rng, n_mc, control=False):
    """Monotonicity of G(δ)/δ with *independent* noise per δ (no common random numbers).

    A violation is declared when a 99% family-wise lower confidence bound on ``G(t)/t − G(δ)/δ``
    (adjacent δ < t on the grid) is > 0.
    """
    n, K = 50, 30
    x = rng.standard_normal((n, 4))
    H = np.maximum(x @ rng.standard_normal((4, K)), 0.0).T * rng.uniform(0.2, 2.0, (K, 1))
    norms = np.sqrt(np.mean(H**2, axis=1))
    deltas = np.sort(np.concatenate([np.linspace(0.05, 3.0, 12), norms[:8] * 1.02]))
    draws = max(400, n_mc // 50)
    if control:  # the finite class itself (not star-shaped): G jumps when a function enters B(δ)
        def sup_fn(W, delta):
            keep = norms <= delta
            if not keep.any():
                return np.zeros(W.shape[0])
            return np.max(np.abs(W @ H[keep].T), axis=1) / n
    else:
        sup_fn = ls.star_hull_sup(H)
    spec = None
    if not control:  # the localised sup against a brute-force maximum over the hull {c h : c ∈ [0, 1]}
        W = np.random.default_rng(19).standard_normal((8, n))  # its own stream: the seed's is not shifted
        cs = np.linspace(0.0, 1.0, 401)
        got, want = [], []
        for dl in (0.1, 0.5, 1.0, 2.0):
            inner = np.abs(W @ H.T) / n  # (8, K)
            feasible = cs[None, :] * norms[:, None] <= dl * (1 + 1e-12)  # (K, C)
            exact_c = np.minimum(1.0, dl / norms)  # the largest feasible c, added to the grid
            best_c = np.maximum(np.max(np.where(feasible, cs[None, :], 0.0), axis=1), exact_c)
            got.append(sup_fn(W, dl))
            want.append(np.max(inner * best_c[None, :], axis=1))
        spec = [("star-hull sup = brute-force max over c h, ‖c h‖ <= δ", np.concatenate(got), np.concatenate(want))]
    est = [ls.local_gaussian_complexity(sup_fn, dl, n, n_mc=draws, rng=rng) for dl in deltas]
    ratio = np.array([m / dl for (m, _), dl in zip(est, deltas, strict=True)])
    se = np.array([e / dl for (_, e), dl in zip(est, deltas, strict=True)])
    z = _z(deltas.size - 1)
    lhs = ratio[1:]
    rhs = ratio[:-1]
    conf = lhs - z * np.sqrt(se[1:] ** 2 + se[:-1] ** 2)
    return _compare("T19", "mc", lhs, rhs, lhs_conf=conf, tol=0.0, draws_per_delta=draws, spec=spec)


def _t20(rng, n_mc, control=False):
    lhs, rhs, want = [], [], []
    n = 100
    for r in (1, 5, 10, 20):
        for sigma in (0.5, 1.0):
            dstar = 2 * sigma * ch.expected_chi(r) / math.sqrt(n)
            for mult in ((0.1, 0.2) if control else (1.0, 1.5, 2.0, 3.0)):
                u = mult * dstar
                # linear class of rank r: P(A(u)) = P(χ_r >= 2u√n/σ) exactly
                lhs.append(float(stats.chi.logsf(2 * u * math.sqrt(n) / sigma, r)))
                rhs.append(ls.bad_event_probability_bound(u, n, sigma, log=True))
                want.append(-n * u * u / (2.0 * sigma**2))
    spec = None if control else [("log bound = −n u²/(2σ²)", rhs, want)]
    return _compare("T20", "exact", lhs, rhs, log=True, spec=spec)


def _t21(rng, n_mc, control=False):
    lhs, rhs, got, want = [], [], [], []
    sigma = 1.0
    for X, r in _designs(rng):
        n = X.shape[0]
        dstar = ls.linear_critical_radius(X, sigma)  # exact δ* = 2σ E χ_r/√n
        got.append(dstar)
        want.append(2.0 * sigma * _chi_mean(r) / math.sqrt(n))
        for mult in (1.0, 2.0, 4.0):
            bound = ls.master_error_bound(mult * dstar, dstar, n, sigma)
            t = mult * dstar
            got += [bound.radius_sq, bound.log_failure]
            want += [16.0 * t * dstar, -n * t * dstar / (2.0 * sigma**2)]
            radius = bound.radius_sq / 16 if control else bound.radius_sq  # control: factor 1 instead of 16
            # ‖f̂ − f*‖_n² = σ² χ²_r / n exactly for least squares on a rank-r linear class
            lhs.append(float(stats.chi2.logsf(radius * n / sigma**2, r)))
            rhs.append(bound.log_failure)
    spec = None if control else [("δ* = 2σ E χ_r/√n; radius 16tδ*; log failure −ntδ*/(2σ²)", got, want, 1e-9)]
    return _compare("T21", "exact", lhs, rhs, log=True, spec=spec)


def _t22(rng, n_mc, control=False):
    lhs, rhs, slack, got, want = [], [], [], [], []
    sigma = 1.0
    for n, d in ((50, 1), (200, 10), (500, 50)):
        if control:  # C1 = C2 = 1: P(‖Δ‖² <= σ² d/n) >= 1 − e^{−d}
            lhs.append(float(stats.chi2.logsf(d, d)))
            rhs.append(-float(d))
        else:
            dstar = ls.formal_linear_critical_radius(sigma, d, n)
            bound = ls.master_error_bound(dstar, dstar, n, sigma)
            lhs.append(float(stats.chi2.logsf(bound.radius_sq * n / sigma**2, d)))
            rhs.append(bound.log_failure)
            slack.append(bound.radius_sq / (sigma**2 * d / n))
            ds_ref = 192.0 * _SQRT2 * sigma * math.sqrt(d / n)  # `linear_δ_star`
            got += [dstar, bound.radius_sq, bound.log_failure]
            want += [ds_ref, 16.0 * ds_ref**2, -n * ds_ref**2 / (2.0 * sigma**2)]
    return _compare("T22", "exact", lhs, rhs, log=True,
                    spec=[("δ* = 192√2 σ √(d/n); radius 16δ*²; log failure −nδ*²/(2σ²)", got, want)] if got else None,
                    tightness=min(slack) if slack else None, radius_over_mean_error=slack)


def _t25(rng, n_mc, control=False):
    """``linear_minimax_rate_rank`` on rank-deficient designs (r < d, one with d > n)."""
    lhs, rhs, slack, ranks, got, want = [], [], [], [], [], []
    sigma = 1.0
    for n, d, r in ((100, 10, 3), (200, 30, 5), (60, 90, 12), (400, 40, 40)):
        X = rng.standard_normal((n, r)) @ rng.standard_normal((r, d))
        rank = int(np.linalg.matrix_rank(X))
        ranks.append(rank)
        if control:  # C1 = C2 = 1 with the rank: P(‖Δ‖² <= σ² r/n) >= 1 − e^{−r}
            lhs.append(float(stats.chi2.logsf(rank, rank)))
            rhs.append(-float(rank))
        else:
            bound = ls.linear_minimax_rank_bound(sigma, rank, n)
            lhs.append(float(stats.chi2.logsf(bound.radius_sq * n / sigma**2, rank)))
            rhs.append(bound.log_failure)
            slack.append(bound.radius_sq / (sigma**2 * rank / n))
            c = 192.0 * _SQRT2  # `linear_δ_star_rank` constant: C₁ = 16 c², C₂ = c²/2
            got += [bound.radius_sq, bound.log_failure]
            want += [16.0 * c * c * sigma**2 * rank / n, -c * c / 2.0 * rank]
    return _compare("T25", "exact", lhs, rhs, log=True, tightness=min(slack) if slack else None,
                    spec=[("radius C₁σ²r/n, log failure −C₂r", got, want)] if got else None,
                    ranks=ranks, radius_over_mean_error=slack)


# ---------------------------------------------------------------------------------------------
# the catalogue
# ---------------------------------------------------------------------------------------------

def _spec(key, lean_name, lean_file, source, statement, hypotheses, kind, instances, control_description, func,
          *, detects, cannot_detect, terms=(), defs=(), can_fail=True):
    return TheoremSpec(key, lean_name, lean_file, source, statement, hypotheses, kind, instances,
                       control_description, check=partial(func, control=False), control=partial(func, control=True),
                       detects=detects, cannot_detect=cannot_detect, can_fail=can_fail, lean_terms=tuple(terms),
                       lean_defs=tuple(defs))


_LARGE = "a constant that is too large (no numerical row can)"

_SPECS = [
    _spec("T01", "small_ball_prob", "SLT/SmallBallProb.lean", "Vershynin Ex. 2.2.10",
          "P(X_1+…+X_N <= εN) <= (eε)^N",
          "X_i independent, >= 0 a.s., each with a density <= 1; ε > 0", "exact",
          "X_i ~ U[0,1]: Irwin–Hall CDF in rational arithmetic, N = 1..20, 7 values of ε in (0, 1/e)",
          "X_i ~ U[0,1/2] (density 2: hypothesis broken)", _t01,
          detects="a base below e·ε at small N (the bound is within a factor e of the truth at N = 1)",
          cannot_detect=f"{_LARGE}; failures for non-uniform densities", terms=("((Real.exp 1 * ε : ℝ) ^ N : ℝ)",)),
    _spec("T02", "coveringNumber_lt_top_of_totallyBounded", "SLT/CoveringNumber.lean", "Vershynin Rem. 4.2.3",
          "N(ε, s) < ∞ (witness: greedy ε-nets of growing samples of s = B₂² stay below N(ε/2, s) <= (1+4/ε)²)",
          "s totally bounded, ε > 0", "exact",
          "samples of 250/1000/4000 points of B₂², ε ∈ {0.2, 0.1}",
          "a Cauchy cloud (heavy-tailed, not inside the unit ball) judged with the unit ball's bound", _t02,
          detects="a greedy-net routine that returns non-separated points (its count then exceeds N(ε/2))",
          cannot_detect="a false finiteness claim: every finite sample is totally bounded, so no computation "
                        "can exhibit N(ε, s) = ∞ (this row cannot be made to fail; it is a witness)",
          terms=("coveringNumber eps s < ⊤",), can_fail=False),
    _spec("T03", "isENet_of_maximal", "SLT/CoveringNumber.lean", "Vershynin Lem. 4.2.6",
          "a maximal ε-separated subset t ⊂ s is an ε-net of s",
          "ε >= 0; every point of s∖t within ε of t", "exact",
          "greedy maximal subsets of 1500 points of B₂^d, d ∈ {2,3,5}, three ε",
          "a non-maximal subset (the first half of the greedy set)", _t03,
          detects="a non-maximal greedy set (an uncovered point at distance > ε)",
          cannot_detect="failures on sets other than the finite samples used", terms=("IsENet t eps s",)),
    _spec("T04", "coveringNumber_euclideanBall_le", "SLT/CoveringNumber.lean", "Vershynin Cor. 4.2.13",
          "N(ε, B₂^d(0,R)) <= (1 + 2R/ε)^d", "R >= 0, ε > 0", "exact",
          "lower bound N(ε) >= greedy 2ε-packing of 2000 points of B₂^d, d ∈ {1,2,3}, ε ∈ {0.5,0.25,0.1}",
          "exponent d−1 instead of d", _t04,
          detects="an exponent one too small (bound/truth ≈ 2.3–2.5 at the tightest instance)",
          cannot_detect=f"{_LARGE}; errors in the base (1 + 2R/ε) smaller than the packing slack",
          terms=("(1 + 2 * R / eps) ^ Fintype.card ι",)),
    _spec("T05", "coveringNumber_l1Ball_le", "SLT/CoveringNumber.lean", "Daras et al. 2021 Thm 2 (Maurey)",
          "N(ε, B₁^d(R)) <= (2d+1)^⌈R²/ε²⌉ (Euclidean metric)", "R >= 0, ε > 0", "exact",
          "lower bound N(ε) >= greedy 2ε-packing of 2000 points of B₁^d, d ∈ {2,3,5}",
          "exponent 1 instead of ⌈R²/ε²⌉", _t05,
          detects="an exponent of 1 (the bound is loose by a factor ~200 otherwise)",
          cannot_detect=f"{_LARGE}; an off-by-one in the ceiling", terms=("(2 * d + 1) ^ (⌈R ^ 2 / eps ^ 2⌉₊)",)),
    _spec("T06", "subGaussian_finite_max_bound", "SLT/SubGaussian.lean", "Wainwright Ex. 2.12",
          "E max_{t∈T} X_t <= σ · diam(T) · √(2 log|T|)",
          "σ-sub-Gaussian process, finite T with |T| >= 2, X_{t0} ≡ 0 at some t0 ∈ T, integrability", "mc",
          "X_t = ⟨g,t⟩: T = {0,e_1..e_m} exact by quadrature (m up to 999); random T by MC, 99% LCB",
          "X_t = 3⟨g,t⟩ declared 1-sub-Gaussian", _t06,
          detects="a sub-Gaussian scale understated by a factor >= 1.7 (bound/truth 1.62)",
          cannot_detect=f"{_LARGE}", terms=("σ * Metric.diam (T : Set A) * sqrt (2 * log T.card)",)),
    _spec("T07", "dudley", "SLT/Dudley.lean", "Boucheron–Lugosi–Massart Cor. 13.2",
          "E sup_{t∈s} X_t <= 12√2 · σ · J(s, D)",
          "σ-sub-Gaussian, s totally bounded, diam(s) <= D, X_{t0} ≡ 0 at t0 ∈ s, measurability, "
          "J(s,D) < ∞, continuous sample paths", "exact",
          "canonical Gaussian process on B₂^d, B₁^d (d ∈ {2,10,50}) and Brownian motion on [0,1] "
          "(d = √|s−t|); exact E sup; J from a valid lower bound on N (stronger than the theorem)",
          "constant 1 instead of 12√2 (the bound σ·J)", _t07,
          detects="a constant below ≈ 1.12 (12√2 ÷ the tightness 15.1)",
          cannot_detect=f"{_LARGE}: 12√2 is ~15× the truth on every set we can compute",
          terms=("(12 * Real.sqrt 2) * σ * entropyIntegral s D",)),
    _spec("T08", "efronStein", "SLT/EfronStein.lean", "BLM Thm 3.1",
          "Var f <= Σ_i E[(f − E^(i) f)²]", "f ∈ L² of n independent coordinates", "exact",
          "40 functions on {±1}^8 and 10 on a non-uniform {0,1,2}^5, exact enumeration",
          "constant 1/2 on the right (linear f is the equality case)", _t08,
          detects="any constant below 1 (equality for additive f)", cannot_detect=_LARGE,
          terms=("∑ i : Fin n, ∫ x, (f x - condExpExceptCoord (μs := μs) i f x)^2 ∂μˢ",)),
    _spec("T09", "gaussianPoincare", "SLT/GaussianPoincare/Limit.lean", "BLM Thm 3.20",
          "Var f(X) <= E f'(X)², X ~ N(0,1)", "f compactly supported and C²", "exact",
          "bump functions (shifted/scaled), x·bump(x/w), sin(kx)·bump(x/4): adaptive quadrature",
          "constant 1/2 on the right (x·bump(x/w) is near-linear)", _t09,
          detects="any constant below ≈ 0.999 (near-equality for x·bump(x/10))", cannot_detect=_LARGE,
          terms=("∫ x, (deriv f x)^2 ∂stdGaussianMeasure",)),
    _spec("T10", "han_inequality", "SLT/GaussianLSI/BernoulliLSI.lean", "BLM Thm 4.1",
          "Ent(h²) <= Σ_j E[Ent^(j)(h²)] on the uniform hypercube", "h : {±1}^n → ℝ", "exact",
          "40 functions on {±1}^8", "constant 1/2 (product functions are the equality case)", _t10,
          detects="any constant below 1 (equality for product functions)", cannot_detect=_LARGE,
          terms=("∑ j : Fin n, ∫ ε, twoPointEntropyCoord j h ε ∂(bernoulliUniform n)",),
          defs=("twoPointEntropyCoord",)),
    _spec("T11", "entropy_duality", "SLT/GaussianLSI/DualityEntropy.lean", "BLM Thm 4.13",
          "Ent(Y) = sup{E[UY] : E e^U = 1}", "Y >= 0, Y and Y log Y integrable", "exact",
          "20 positive tables on {±1}^6: attainment at U* = log(Y/EY) and 5 random admissible U each",
          "U = U* + 1 (normalisation E e^U = 1 dropped)", _t11,
          detects="a sup above Ent (an admissible U beating it) or below it (U* not attaining it)",
          cannot_detect="failures for Y with zeros or unbounded Y (tables are positive and finite)",
          terms=("entropy μ Y = sSup (dualEntropySet μ Y)",)),
    _spec("T12", "entropy_subadditive", "SLT/GaussianLSI/SubAddEnt/Subadditivity.lean", "BLM Thm 4.22",
          "Ent(f) <= Σ_i E[Ent^(i)(f)]", "f >= 0 of n independent coordinates, f and f log f integrable",
          "exact", "26 tables on {0,1,2}^4 with non-uniform marginals (incl. a product function)",
          "constant 1/2 (product functions are the equality case)", _t12,
          detects="any constant below 1 (equality for product functions)", cannot_detect=_LARGE,
          terms=("∑ i : Fin n, ∫ x, condEntExceptCoord (μs := μs) i f x ∂μˢ",)),
    _spec("T13", "bernoulli_logSobolev", "SLT/GaussianLSI/BernoulliLSI.lean", "BLM Thm 5.1",
          "Ent(h²) <= ½ E[Σ_j (h(ε) − h(flip_j ε))²]", "any h : {±1}^n → ℝ (no sign condition)", "exact",
          "40 functions on {±1}^8 incl. signed ones and h = 1 + 0.1 ε_1",
          "constant 1/4 instead of 1/2 (h = 1 + 0.1 ε_1 has ratio ≈ 0.498)", _t13,
          detects="a constant below ≈ 0.498 (h = 1 + 0.1ε₁ is near-extremal)", cannot_detect=_LARGE,
          terms=("(1/2) * ∫ ε, gradientNormSq n h ε ∂(bernoulliUniform n)",), defs=("gradientNormSq",)),
    _spec("T14", "gaussian_logSobolev_W12_pi", "SLT/GaussianLSI/TensorizedGLSI.lean", "BLM Thm 5.4",
          "Ent_γn(g²) <= 2 E‖∇g‖²", "g ∈ W^{1,2}(γ_n), differentiable, continuous partials, g² log g² integrable",
          "exact", "n ∈ {1,2}: exp(⟨a,x⟩/2) (equality case), 1 + c·sin⟨b,x⟩, √(1+⟨b,x⟩²); tensor Gauss–Hermite (80 nodes)",
          "constant 1 instead of 2", _t14,
          detects="any constant below 2 (equality for exp(⟨a,x⟩/2))", cannot_detect=_LARGE,
          terms=("2 * ∫ x, gradNormSq n g x ∂(GaussianMeasure.stdGaussianPi n)",), defs=("gradNormSq",)),
    _spec("T15", "lipschitz_cgf_bound", "SLT/GaussianLipConcen.lean", "BLM Thm 5.5",
          "log E exp(λ(f(X) − E f)) <= λ² L²/2", "f L-Lipschitz on ℝ^n, X ~ N(0, I_n)", "exact",
          "f ∈ {x_1, ‖x‖₂, max_i x_i}, n ∈ {10, 100}, 12 values of λ in [−3, 3]; 1-D quadrature of exact laws",
          "L/2 in place of L", _t15,
          detects="any understated Lipschitz constant (equality for f = x_1)", cannot_detect=_LARGE,
          terms=("t^2 * (L : ℝ)^2 / 2",)),
    _spec("T16", "gaussian_lipschitz_concentration", "SLT/GaussianLipConcen.lean", "BLM Thm 5.6",
          "P(|f(X) − E f| >= t) <= 2 exp(−t²/(2L²))", "f L-Lipschitz on ℝ^n, X ~ N(0, I_n), t > 0", "mc",
          "exact laws of x_1, ‖x‖₂, max_i x_i; MC for ‖x‖₁/√n (n ∈ {10,100}) with 99% Clopper–Pearson LCB",
          "L/2 in place of L", _t16,
          detects="a Lipschitz constant understated by ≈ 25% or more", cannot_detect=_LARGE,
          terms=("2 * exp (-t^2 / (2 * (L : ℝ)^2))",)),
    _spec("T17", "one_step_discretization_bound", "SLT/TDudley.lean", "Wainwright Prop. 5.17",
          "sup_{x,y}(X_x − X_y) <= 2 localOsc_δ + 2 max_{u∈U} |X_u − X_{u0}| (pathwise)",
          "U ⊂ T a finite δ-net of T with centres in T, u0 ∈ U", "exact",
          "Brownian paths on a 257-point grid of [0,1] with d = √|s−t|, δ = 1/4",
          "constants 1 and 1 instead of 2 and 2", _t17,
          detects="both constants halved (bound/truth ≈ 1.3 at the tightest path)", cannot_detect=_LARGE,
          terms=("2 * localOsc X T δ + 2 * (⨆ u ∈ U, |X u - X u₀|)",)),
    _spec("T18", "local_gaussian_complexity_bound", "SLT/LeastSquares/DudleyApplication.lean",
          "Wainwright (5.48), Gaussian case", "G_n(δ; H) <= (24√2/√n) · J(B_H(δ), 2δ)",
          "H star-shaped; image of B_H(δ) totally bounded with finite Dudley integral; side conditions", "exact",
          "linear classes of rank r ∈ {1,3,5,10,12,30} (incl. d > n): exact G_n = δ E χ_r/√n; J from the "
          "volume lower bound", "constant 1/2 instead of 24√2", _t18,
          detects="a constant below ≈ 1.1 (24√2 ÷ the tightness ≈ 30)", cannot_detect=_LARGE,
          terms=("(24 * Real.sqrt 2) / Real.sqrt n * entropyIntegral",)),
    _spec("T19", "gaussian_complexity_monotone", "SLT/LeastSquares/Localization.lean", "Wainwright Lem. 13.6",
          "G_n(t)/t <= G_n(δ)/δ for 0 < δ <= t", "H star-shaped, integrability and boundedness", "mc",
          "star hull of 30 ReLU features, 20 radii (incl. just above each feature's norm), independent MC "
          "noise per radius (no common random numbers), 99% family-wise bound on each increase",
          "the finite class itself (not star-shaped)", _t19,
          detects="a class that is not star-shaped (control) or a localised sup that scales wrongly with δ "
                  "(e.g. min(1, δ/‖h‖)² instead of min(1, δ/‖h‖); see the tests)",
          cannot_detect="for a correct star hull the ratio is non-increasing draw by draw, so the row can only "
                        "fail through a wrong implementation or a non-star-shaped class, never through the "
                        "theorem itself on these classes",
          terms=("LocalGaussianComplexity n H t x / t ≤ LocalGaussianComplexity n H δ x / δ",)),
    _spec("T20", "bad_event_probability_bound", "SLT/LeastSquares/MasterErrorBound.lean", "Wainwright Lem. 13.12",
          "P(A(u)) <= exp(−n u²/(2σ²)) with A(u) = {∃g, ‖g‖_n >= u : |σ n⁻¹ Σ w_i g_i| >= 2‖g‖_n u}",
          "H star-shaped, δ* solves the critical inequality, u >= δ*, empirical sphere non-empty", "exact",
          "linear classes (rank r ∈ {1,5,10,20}, σ ∈ {0.5,1}): P(A(u)) = P(χ_r >= 2u√n/σ) exactly",
          "u = δ*/10 and δ*/5 (hypothesis u >= δ* dropped)", _t20,
          detects="the hypothesis u >= δ* dropped; an exponent overstated by a factor ≳ 5 (tightness ~200 in "
                  "probability)", cannot_detect=_LARGE, terms=("exp (-n * u^2 / (2 * σ^2))",)),
    _spec("T21", "master_error_bound", "SLT/LeastSquares/MasterErrorBound.lean", "Wainwright Thm 13.5",
          "P(‖f̂ − f*‖_n² <= 16 t δ*) >= 1 − exp(−n t δ*/(2σ²))",
          "f* ∈ F, F − f* star-shaped, δ* solves the critical inequality, t >= δ*, exact LSE", "exact",
          "linear classes of rank r ∈ {1,3,5,10,12,30} (rank-deficient and d > n included): "
          "‖f̂ − f*‖_n² = σ² χ²_r / n exactly; exact δ* = 2σ E χ_r/√n; t ∈ {1,2,4}·δ*",
          "factor 1 instead of 16", _t21,
          detects="a radius factor of 1 instead of 16 in master_error_bound (see the tests); through the spec "
                  "leg, any transcription error of 16tδ*, exp(−ntδ*/2σ²) or δ* = 2σ E χ_r/√n",
          cannot_detect=f"{_LARGE}; by the inequality alone, even a doubled exponent in the failure probability "
                        "(the exact failure probabilities are ≥ 1e9 times below the stated ones; the spec leg "
                        "catches it)",
          terms=("16 * t * δ_star", "1 - exp (-n * t * δ_star / (2 * M.σ^2))")),
    _spec("T22", "linear_minimax_rate_explicit", "SLT/LeastSquares/LinearRegression/MinimaxRate.lean",
          "Wainwright Ex. 13.8", "P(‖f̂ − f*‖_n² <= C1 σ² d/n) >= 1 − exp(−C2 d), C1 = 1,179,648, C2 = 36,864",
          "linear predictors on ℝ^d, full-rank design, f* ∈ F", "exact",
          "(n, d) ∈ {(50,1), (200,10), (500,50)}; exact χ² law; tightness = radius ÷ mean error",
          "C1 = C2 = 1", _t22,
          detects="constants 6 orders of magnitude too small (C1 = C2 = 1)",
          cannot_detect=f"{_LARGE}: the radius is 1.18·10⁶ × the mean error",
          terms=("16 * (linear_δ_star M.σ d n)^2", "1 - exp (-n * (linear_δ_star M.σ d n)^2 / (2 * M.σ^2))"),
          defs=("linear_δ_star", "linear_C1", "linear_C₁", "linear_C₂")),
    _spec("T23", "l1BallImage_coveringNumber_le", "SLT/LeastSquares/L1Regression/L1CoveringBound.lean",
          "Raskutti–Wainwright–Yu 2011 Lem. 4",
          "N(ε, {Xθ/√n : ‖θ‖₁ <= R}) <= (2d+1)^⌈R²/ε²⌉",
          "column normalisation ‖X_j‖₂ <= √n, n > 0", "exact",
          "n = 50, d ∈ {10,20}, ε ∈ {0.5,0.3,0.2}: greedy 2ε-packing (a lower bound on N(ε)) of the images of "
          "uniform, vertex and 2-sparse points of B₁^d; Maurey's construction reported",
          "exponent 1 instead of ⌈R²/ε²⌉", _t23,
          detects="an exponent of 1 (the images of 2-sparse points already need more than 2d+1 balls)",
          cannot_detect=f"{_LARGE}; an off-by-one in the ceiling",
          terms=("(2 * d + 1) ^ ⌈R ^ 2 / ε ^ 2⌉₊",)),
    _spec("T24", "entropy_duality_T", "SLT/GaussianLSI/DualEntApp.lean", "BLM Thm 4.13 (T-form)",
          "Ent(Y) = sup{E[Y(log T − log E T)] : T >= 0, integrable, E T > 0} (log 0 = −∞)",
          "Y >= 0, Y and Y log Y integrable", "exact",
          "20 positive tables on {±1}^6: attainment at T = Y, 4 random T > 0 and one T vanishing on half the points",
          "T = 2Y/E[Y] with the normalisation − log E[T] dropped", _t24,
          detects="a dual value above Ent (a wrong normalisation) or no attainment at T = Y",
          cannot_detect="failures for Y with zeros or unbounded Y (tables are positive and finite)",
          terms=("sSup (dualEntropySetT μ Y)",)),
    _spec("T25", "linear_minimax_rate_rank", "SLT/LeastSquares/LinearRegression/MinimaxRate.lean",
          "Wainwright Ex. 13.8 (rank form)",
          "∃ C1, C2 > 0: P(‖f̂ − f*‖_n² <= C1 σ² r/n) >= 1 − exp(−C2 r), r = rank of the design "
          "(witnesses C1 = 16(192√2)², C2 = (192√2)²/2 from the proof)",
          "linear predictors on ℝ^d, f* ∈ F, rank r > 0 (no full-rank assumption)", "exact",
          "rank-deficient designs (n, d, r) ∈ {(100,10,3), (200,30,5), (60,90,12)} and (400,40,40); rank by "
          "numpy; exact χ²_r law of the OLS error",
          "C1 = C2 = 1 with the rank", _t25,
          detects="constants 6 orders of magnitude too small; a rank of 0 (refused by the library)",
          cannot_detect=f"{_LARGE}; using d instead of r (the constants hide it)",
          terms=("C₁ * M.σ^2 * (designMatrixRank M.x) / n", "1 - exp (-C₂ * (designMatrixRank M.x))"),
          defs=("linear_C₁_rank", "linear_C₂_rank")),
]

THEOREMS: dict[str, TheoremSpec] = {s.key: s for s in _SPECS}
"""The paper's formal theorems (README table of the Lean repository), keyed ``T01``–``T25``
(T24 = ``entropy_duality_T``, T25 = ``linear_minimax_rate_rank``)."""


def run_catalogue(rng: np.random.Generator, n_mc: int = 20000,
                  keys: list[str] | None = None) -> dict[str, tuple[CheckResult, CheckResult]]:
    """Run every (or the selected) theorem's check and control with one generator."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy Generator")
    if isinstance(n_mc, bool) or not isinstance(n_mc, int) or n_mc < 100:
        raise ValueError(f"n_mc must be an integer >= 100, got {n_mc!r}")
    out = {}
    for key in keys or list(THEOREMS):
        if key not in THEOREMS:
            raise KeyError(f"unknown theorem {key!r}; known: {', '.join(THEOREMS)}")
        spec = THEOREMS[key]
        out[key] = (spec.check(rng, n_mc), spec.control(rng, n_mc))
    return out


def catalogue_text() -> str:
    """The catalogue as plain text (printed by ``icml26 info lean_slt``)."""
    lines = [f"Theorem catalogue ({len(THEOREMS)} formal results of {LEAN_REPO} @ {LEAN_COMMIT[:7]}).",
             "Numerical checks only: nothing here machine-checks Lean.", ""]
    for s in THEOREMS.values():
        lines += [f"{s.key} {s.lean_name}  [{s.lean_file}; {s.source}]  check: {s.kind}",
                  f"    statement:  {s.statement}",
                  f"    hypotheses: {s.hypotheses}",
                  f"    instances:  {s.instances}",
                  f"    control:    {s.control_description}",
                  f"    detects:    {s.detects}",
                  f"    cannot:     {s.cannot_detect}" + ("" if s.can_fail else "  [cannot be made to fail]")]
    return "\n".join(lines)

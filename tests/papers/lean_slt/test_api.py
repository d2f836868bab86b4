"""Correctness of the lean_slt library: closed forms, slow references, sklearn conventions, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats
from sklearn.linear_model import Lasso
from sklearn.utils.estimator_checks import check_estimator

import icml26.papers.lean_slt as L
from icml26.papers.lean_slt import experiment

# --------------------------------------------------------------------------- concentration


def test_irwin_hall_closed_forms():
    assert L.irwin_hall_cdf(0.3, 1) == pytest.approx(0.3, abs=1e-15)
    assert L.irwin_hall_cdf(0.7, 2) == pytest.approx(0.7**2 / 2, abs=1e-15)
    assert L.irwin_hall_cdf(1.5, 2) == pytest.approx(1 - 0.5**2 / 2, abs=1e-15)
    assert L.irwin_hall_cdf(1.5, 3) == pytest.approx(0.5, abs=1e-15)  # symmetry about N/2
    # against numerical convolution of densities for N = 4
    x = np.linspace(0, 4, 8001)
    dens = np.where(x <= 1, 1.0, 0.0)
    h = x[1] - x[0]
    conv = dens.copy()
    for _ in range(3):
        conv = np.convolve(conv, dens)[: x.size] * h
    cdf = np.cumsum(conv) * h
    assert L.irwin_hall_cdf(1.7, 4) == pytest.approx(np.interp(1.7, x, cdf), abs=5e-3)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.floats(0.0, 1.0))
def test_irwin_hall_symmetry_and_monotone(N, frac):
    x = frac * N
    assert L.irwin_hall_cdf(x, N) + L.irwin_hall_cdf(N - x, N) == pytest.approx(1.0, abs=1e-12)
    assert L.irwin_hall_cdf(x, N) <= L.irwin_hall_cdf(min(N, x + 0.1), N) + 1e-15


def test_small_ball_bound_holds_for_uniform_and_fails_for_density_two():
    for N in (1, 5, 12):
        for eps in (0.05, 0.2, 0.35):
            assert L.irwin_hall_cdf(eps * N, N) <= L.small_ball_bound(eps, N)
    assert L.irwin_hall_cdf(2 * 0.05 * 12, 12) > L.small_ball_bound(0.05, 12)


def test_gaussian_lipschitz_bounds_and_clopper_pearson():
    assert L.gaussian_lipschitz_tail_bound(1.0, 1.0) == pytest.approx(2 * math.exp(-0.5))
    np.testing.assert_allclose(L.gaussian_lipschitz_cgf_bound([-2.0, 1.0], 2.0), [8.0, 2.0])
    lo, hi = L.clopper_pearson(np.array([0, 5, 100]), 100, 0.99)
    assert lo[0] == 0 and hi[2] == 1
    assert lo[1] < 0.05 < hi[1]
    assert hi[1] == pytest.approx(stats.beta.ppf(0.99, 6, 95))


# --------------------------------------------------------------------------- chaining


def test_gaussian_expectations_closed_forms():
    for r in (1, 2, 7, 50):
        assert L.expected_chi(r) == pytest.approx(stats.chi.mean(r), rel=1e-12)
    assert L.expected_max_gaussian_with_zero(1) == pytest.approx(1 / math.sqrt(2 * math.pi), rel=1e-9)
    assert L.expected_max_abs_gaussian(1) == pytest.approx(math.sqrt(2 / math.pi), rel=1e-9)
    g = np.random.default_rng(0).standard_normal((200000, 10))
    assert L.expected_max_abs_gaussian(10) == pytest.approx(np.abs(g).max(axis=1).mean(), abs=0.01)
    assert L.expected_max_gaussian_with_zero(10) == pytest.approx(np.maximum(g.max(axis=1), 0).mean(), abs=0.01)


def test_entropy_integrals():
    assert L.dudley_integral(lambda e: 4.0, 2.0) == pytest.approx(4.0)
    assert L.dudley_integral(lambda e: -3.0, 1.0) == 0.0  # H = 0 when N <= 1
    for d, R, D in ((1, 1.0, 2.0), (5, 2.0, 1.0), (10, 1.0, 0.3)):
        ref = L.dudley_integral(lambda e, d=d, R=R: d * math.log(R / e), min(D, R))
        assert L.l2_ball_entropy_integral_lower(d, R, D) == pytest.approx(ref, rel=1e-8)
    lo, hi = L.brownian_entropy_integral(1.0)
    assert lo <= hi < lo + 5e-3
    # an independent midpoint rule on a geometric grid agrees with the bracket
    edges = np.geomspace(1e-9, 1.0, 2_000_001)
    mid = 0.5 * (edges[1:] + edges[:-1])
    ref = np.sum(np.sqrt(np.log(np.ceil(1 / (2 * mid * mid)))) * np.diff(edges))
    assert lo - 2e-3 <= ref <= hi + 2e-3
    assert L.dudley_bound(2.0, 1.0) == pytest.approx(24 * math.sqrt(2))
    assert L.finite_max_bound(1.0, 2.0, 4) == pytest.approx(2 * math.sqrt(2 * math.log(4)))


# --------------------------------------------------------------------------- covering


def _brute_separated(points, eps):
    chosen = []
    for i, p in enumerate(points):
        if all(np.linalg.norm(p - points[j]) > eps for j in chosen):
            chosen.append(i)
    return chosen


def test_greedy_net_matches_slow_reference_and_is_net():
    rng = np.random.default_rng(1)
    pts = L.sample_l2_ball(300, 2, 1.0, rng)
    idx = L.greedy_net_indices(pts, 0.3)
    assert idx.tolist() == _brute_separated(pts, 0.3)
    assert L.is_eps_net(pts[idx], pts, 0.3)
    assert not L.is_eps_net(pts[idx[: idx.size // 2]], pts, 0.3)
    d = np.linalg.norm(pts[idx][:, None] - pts[idx][None], axis=2)
    assert np.all(d[~np.eye(idx.size, dtype=bool)] > 0.3)
    assert L.packing_number_greedy(pts, 0.2) <= L.euclidean_ball_covering_bound(1.0, 0.1, 2)


def test_covering_bounds_and_conventions():
    assert L.euclidean_ball_covering_bound(1.0, 0.5, 3) == pytest.approx(125.0)
    assert L.euclidean_ball_covering_bound(1.0, 0.5, 3, log=True) == pytest.approx(3 * math.log(5))
    assert L.maurey_sample_size(1.0, 0.1) == 100  # exact rational ceiling, no off-by-one
    assert L.maurey_sample_size(1.0, 0.5) == 4
    assert L.l1_ball_covering_bound(1.0, 0.5, 2) == pytest.approx(5.0**4)
    assert L.l1_ball_covering_bound(0.0, 0.5, 2) == 1.0
    assert L.metric_entropy(1) == 0.0 and L.metric_entropy(math.inf) == 0.0 and L.metric_entropy(0) == 0.0
    assert L.metric_entropy(5) == pytest.approx(math.log(5))


def test_samplers_stay_in_their_balls():
    rng = np.random.default_rng(2)
    assert np.all(np.linalg.norm(L.sample_l2_ball(1000, 4, 2.0, rng), axis=1) <= 2.0)
    assert np.all(np.abs(L.sample_l1_ball(1000, 4, 2.0, rng)).sum(axis=1) <= 2.0)


def test_maurey_variance_matches_monte_carlo():
    rng = np.random.default_rng(3)
    n, d, R, k = 30, 12, 1.5, 5
    X = rng.standard_normal((n, d))
    X *= math.sqrt(n) / np.linalg.norm(X, axis=0)
    theta = rng.standard_normal(d)
    theta *= 1.2 / np.abs(theta).sum()
    exact = L.maurey_expected_sq_error(theta, X, k, R)
    assert exact <= R**2 / k
    probs = np.append(np.abs(theta) / R, 1 - np.abs(theta).sum() / R)
    atoms = np.vstack([((R * np.sign(theta))[None, :] * X / math.sqrt(n)).T, np.zeros((1, n))])
    draws = rng.choice(d + 1, size=(40000, k), p=probs)
    means = atoms[draws].mean(axis=1)
    mc = np.mean(np.sum((means - X @ theta / math.sqrt(n)) ** 2, axis=1))
    assert mc == pytest.approx(exact, rel=0.03)
    _, dist = L.maurey_net_point(theta, X, 0.6, rng, R)
    assert dist <= 0.6


# --------------------------------------------------------------------------- functionals


def _slow_conditional_entropy_sum_cube(y_flat, n):
    pts = list(itertools.product([0, 1], repeat=n))
    table = dict(zip(pts, y_flat, strict=True))
    total = 0.0
    for i in range(n):
        acc = 0.0
        for p in pts:
            q = list(p)
            q[i] = 1 - q[i]
            a, b = table[p], table[tuple(q)]
            m = (a + b) / 2
            ent = (a * math.log(a) + b * math.log(b)) / 2 - m * math.log(m) if m > 0 else 0.0
            acc += ent
        total += acc / len(pts)
    return total


def test_functionals_match_slow_enumeration():
    rng = np.random.default_rng(4)
    n = 4
    h = rng.standard_normal(2**n)
    cube = L.hypercube(n)
    assert cube.shape == (16, 4) and cube[0].tolist() == [-1, -1, -1, -1] and cube[1].tolist() == [-1, -1, -1, 1]
    assert L.han_rhs(h) == pytest.approx(_slow_conditional_entropy_sum_cube(h**2, n), rel=1e-12)
    grad = 0.0
    for idx, p in enumerate(cube):
        for j in range(n):
            q = p.copy()
            q[j] = -q[j]
            jdx = int("".join("1" if v > 0 else "0" for v in q), 2)
            grad += (h[idx] - h[jdx]) ** 2
    assert L.bernoulli_lsi_rhs(h) == pytest.approx(0.5 * grad / 2**n, rel=1e-12)
    y = h**2
    assert L.entropy(y.reshape((2,) * n)) == pytest.approx(np.mean(y * np.log(y)) - y.mean() * math.log(y.mean()))
    assert L.variance(h.reshape((2,) * n)) == pytest.approx(np.var(h))


def test_efron_stein_equality_for_additive_functions_and_weighted_spaces():
    rng = np.random.default_rng(5)
    probs = [rng.dirichlet(np.ones(3)) for _ in range(3)]
    a = rng.standard_normal((3, 3))
    f = a[0][:, None, None] + a[1][None, :, None] + a[2][None, None, :]
    assert L.variance(f, probs) == pytest.approx(L.efron_stein_rhs(f, probs), rel=1e-12)
    # product function: entropy tensorises with equality
    g = np.exp(a[0])[:, None, None] * np.exp(a[1])[None, :, None] * np.exp(a[2])[None, None, :]
    assert L.entropy(g, probs) == pytest.approx(L.conditional_entropy_sum(g, probs), rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=8, max_size=8))
def test_hypercube_inequalities_hold(values):
    h = np.asarray(values).reshape(2, 2, 2)
    assert L.variance(h) <= L.efron_stein_rhs(h) + 1e-10
    assert L.entropy(h**2) <= L.bernoulli_lsi_rhs(h) + 1e-10
    assert L.entropy(h**2) <= L.han_rhs(h) + 1e-10


def test_entropy_duality():
    rng = np.random.default_rng(6)
    y = rng.exponential(size=(2, 2, 2)) + 0.1
    u = L.optimal_dual_variable(y)
    assert L.entropy_dual_objective(y, u) == pytest.approx(L.entropy(y), rel=1e-12)
    with pytest.raises(ValueError, match="E exp"):
        L.entropy_dual_objective(y, u + 1.0)


# --------------------------------------------------------------------------- least squares


def test_linear_complexity_critical_radius_and_master_bound():
    rng = np.random.default_rng(7)
    n, d = 120, 6
    X = rng.standard_normal((n, d))
    delta = 0.7
    Q, _ = np.linalg.qr(X)
    W = rng.standard_normal((20000, n))
    mc = delta * np.linalg.norm(W @ Q, axis=1) / math.sqrt(n)
    assert L.linear_class_complexity(X, delta) == pytest.approx(mc.mean(), abs=4 * mc.std() / math.sqrt(mc.size))
    exact = L.linear_critical_radius(X, 1.3)
    assert exact == pytest.approx(2 * 1.3 * stats.chi.mean(d) / math.sqrt(n))
    numeric = L.critical_radius(lambda dl: L.linear_class_complexity(X, dl), 1.3)
    assert numeric == pytest.approx(exact, rel=1e-10)
    r2, p, log_fail = L.master_error_bound(2 * exact, exact, n, 1.3)
    assert r2 == pytest.approx(32 * exact**2) and p == pytest.approx(1 - math.exp(-n * 2 * exact**2 / (2 * 1.3**2)))
    assert log_fail == pytest.approx(-n * 2 * exact**2 / (2 * 1.3**2))
    tiny = L.master_error_bound(50.0, 1.0, 100, 1.0)  # failure e^{-2500}: kept in log space
    assert tiny.probability == 1.0 and tiny.log_failure == pytest.approx(-2500.0)
    assert L.formal_linear_critical_radius(1.0, 10, 200) == pytest.approx(192 * math.sqrt(2) * math.sqrt(10 / 200))
    assert L.FORMAL_LINEAR_C1 == pytest.approx(1_179_648) and L.FORMAL_LINEAR_C2 == pytest.approx(36_864)


def test_star_hull_complexity_ratio_is_monotone():
    rng = np.random.default_rng(8)
    H = rng.standard_normal((10, 40)) * rng.uniform(0.1, 2, (10, 1))
    sup = L.star_hull_sup(H)
    W = rng.standard_normal((500, 40))
    ratios = [L.local_gaussian_complexity(sup, dl, 40, W=W)[0] / dl for dl in np.linspace(0.05, 3, 25)]
    assert np.all(np.diff(ratios) <= 1e-12)


def _slow_projection(v, R):
    if np.abs(v).sum() <= R:
        return v
    tau = optimize.brentq(lambda t: np.maximum(np.abs(v) - t, 0).sum() - R, 0, np.abs(v).max())
    return np.sign(v) * np.maximum(np.abs(v) - tau, 0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=12), st.floats(0.01, 20))
def test_project_l1_ball_matches_bisection(values, R):
    v = np.asarray(values)
    np.testing.assert_allclose(L.project_l1_ball(v, R), _slow_projection(v, R), atol=1e-9)


def test_l1_lse_matches_lasso_path_and_ols():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((60, 15))
    y = X[:, :3] @ np.array([2.0, -1.0, 0.5]) + 0.3 * rng.standard_normal(60)
    lasso = Lasso(alpha=0.1, fit_intercept=False, tol=1e-12, max_iter=100000).fit(X, y)
    R = float(np.abs(lasso.coef_).sum())
    ours = L.L1ConstrainedLeastSquares(radius=R, max_iter=20000, tol=1e-12).fit(X, y)
    np.testing.assert_allclose(ours.coef_, lasso.coef_, atol=1e-6)
    big = L.L1ConstrainedLeastSquares(radius=1e3, max_iter=20000, tol=1e-13).fit(X, y)
    np.testing.assert_allclose(big.coef_, np.linalg.lstsq(X, y, rcond=None)[0], atol=1e-6)
    assert big.score(X, y) > 0.9


def test_l1_lse_sklearn_conventions():
    check_estimator(L.L1ConstrainedLeastSquares())


# --------------------------------------------------------------------------- catalogue


def test_catalogue_entries_and_describe():
    assert list(L.THEOREMS) == [f"T{i:02d}" for i in range(1, 26)]
    for spec in L.THEOREMS.values():
        assert spec.lean_name and spec.lean_file.endswith(".lean") and spec.kind in {"exact", "mc"}
        assert spec.control_description and spec.detects and spec.cannot_detect
    assert {k for k, s in L.THEOREMS.items() if not s.can_fail} == {"T02"}
    text = experiment.describe()
    assert "dudley" in text and "nothing here machine-checks Lean" in text


@pytest.mark.parametrize("key", ["T01", "T02", "T04", "T08", "T13", "T17", "T20", "T21", "T22", "T23", "T24",
                                 "T25"])
def test_cheap_checks_pass_and_controls_fail(key):
    rng = np.random.default_rng(10)
    res = L.THEOREMS[key].check(rng, 500)
    ctl = L.THEOREMS[key].control(rng, 500)
    assert not res.violated and res.status.endswith("-pass") and res.tightness >= 1 - 1e-9
    assert ctl.violated and ctl.status == "fail"


def test_compare_flags_a_false_statement():
    from icml26.papers.lean_slt.catalogue import _compare

    assert _compare("X", "exact", [1.0, 2.0], [1.0, 2.0 - 1e-6]).violated
    assert not _compare("X", "exact", [1.0, 2.0], [1.0, 2.0 - 1e-12]).violated
    assert not _compare("X", "mc", [2.0], [1.9], lhs_conf=[1.8], tol=0.0).violated


def test_gaussian_poincare_integrals_are_accurate():
    # f(x) = x (not compactly supported, but a check of the quadrature helper): Var = E f'^2 = 1
    var, grad = L.gaussian_poincare_sides(lambda x: x, lambda x: 1.0, (-12, 12))
    assert var == pytest.approx(1.0, abs=1e-10) and grad == pytest.approx(1.0, abs=1e-10)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call", [
    lambda: L.covering_number_greedy(np.zeros((3, 2)), -0.1),
    lambda: L.covering_number_greedy(np.zeros((0, 2)), 0.1),
    lambda: L.covering_number_greedy(np.array([[0.0, np.nan]]), 0.1),
    lambda: L.euclidean_ball_covering_bound(-1.0, 0.1, 2),
    lambda: L.l1_ball_covering_bound(1.0, 0.0, 2),
    lambda: L.metric_entropy(-1),
    lambda: L.dudley_bound(0.0, 1.0),
    lambda: L.dudley_integral(lambda e: 1.0, -1.0),
    lambda: L.dudley_integral(lambda e: math.inf, 1.0),
    lambda: L.dudley_integral(lambda e: e**-4, 1.0),  # divergent: quad alone would return -1.0
    lambda: L.dudley_integral(lambda e: e**-2, 1.0),  # √H = 1/ε: logarithmically divergent
    lambda: L.one_step_discretization_rhs(-1.0, 1.0),
    lambda: L.bad_event_probability_bound(0.0, 10, 1.0),
    lambda: L.local_complexity_dudley_bound(math.inf, 10),
    lambda: L.linear_minimax_rank_bound(1.0, 0, 10),
    lambda: L.entropy_dual_objective_T(np.ones(4), np.zeros(4)),
    lambda: L.entropy_dual_objective_T(np.ones(4), -np.ones(4)),
    lambda: L.gaussian_poincare_sides(math.sin, math.cos, (1.0, -1.0)),
    lambda: L.l1_constrained_path(np.ones((5, 2)), np.ones(4), [1.0]),
    lambda: L.l1_constrained_path(np.ones((5, 2)), np.ones(5), [0.0]),
    lambda: L.L1ConstrainedLeastSquares(solver="cd").fit(np.ones((5, 2)), np.ones(5)),
    lambda: L.finite_max_bound(1.0, 1.0, 1),
    lambda: L.small_ball_bound(-0.1, 3),
    lambda: L.gaussian_lipschitz_tail_bound(1.0, -1.0),
    lambda: L.gaussian_lipschitz_tail_bound(-1.0, 1.0),
    lambda: L.linear_critical_radius(np.ones((5, 2)), 0.0),
    lambda: L.linear_class_complexity(np.ones((5, 2)), -1.0),
    lambda: L.master_error_bound(0.1, 0.2, 10, 1.0),
    lambda: L.master_error_bound(0.3, 0.2, 10, -1.0),
    lambda: L.entropy(np.array([-1.0, 1.0])),
    lambda: L.han_rhs(np.ones(6)),
    lambda: L.project_l1_ball(np.array([1.0, np.inf]), 1.0),
    lambda: L.maurey_expected_sq_error(np.array([1.0, 1.0]), np.ones((3, 2)), 2, radius=1.0),
    lambda: L.L1ConstrainedLeastSquares(radius=-1.0).fit(np.ones((5, 2)), np.ones(5)),
    lambda: L.run_catalogue(np.random.default_rng(0), n_mc=10),
])
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("call", [
    lambda: L.small_ball_bound("0.1", 3),
    lambda: L.euclidean_ball_covering_bound(1.0, 0.1, 2.5),
    lambda: L.expected_chi(True),
    lambda: L.maurey_net_point(np.ones(2), np.ones((3, 2)), 0.5, rng=0, radius=2.0),
    lambda: L.run_catalogue(0),
])
def test_bad_types_raise_type_error(call):
    with pytest.raises(TypeError):
        call()


# --------------------------------------------------------------------------- issue 21 additions


def test_dudley_integral_convergent_cases_still_exact():
    # √log(1/ε) on (0, 1]: ∫ = Γ(3/2) = √π/2
    assert L.dudley_integral(lambda e: math.log(1 / e), 1.0) == pytest.approx(math.sqrt(math.pi) / 2, rel=1e-8)


def test_l1_lse_warns_when_not_converged():
    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 50)), rng.standard_normal(30)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        L.L1ConstrainedLeastSquares(radius=3.0, max_iter=3, tol=1e-12).fit(X, y)


@pytest.mark.parametrize("d", [8, 60])
def test_lars_path_solver_matches_fista(d):
    rng = np.random.default_rng(d)
    X, y = rng.standard_normal((40, d)), rng.standard_normal(40)
    radii = [0.2, 1.0, 2.5]
    path = L.l1_constrained_path(X, y, radii)
    for R, coef in zip(radii, path, strict=True):
        ref = L.L1ConstrainedLeastSquares(radius=R, max_iter=50000, tol=1e-13).fit(X, y).coef_
        obj = lambda c: np.sum((y - X @ c) ** 2)  # noqa: E731
        assert np.abs(coef).sum() <= R * (1 + 1e-9)
        assert obj(coef) == pytest.approx(obj(ref), rel=1e-8)
        lars = L.L1ConstrainedLeastSquares(radius=R, solver="lars").fit(X, y).coef_
        assert np.allclose(lars, coef)


def test_entropy_dual_T_attains_and_bounds():
    rng = np.random.default_rng(3)
    y = rng.exponential(size=(2,) * 5) + 0.01
    ent = L.entropy(y)
    assert L.entropy_dual_objective_T(y, y) == pytest.approx(ent, rel=1e-12)
    assert L.entropy_dual_objective_T(y, 5.0 * y) == pytest.approx(ent, rel=1e-12)  # scale invariant
    for _ in range(20):
        assert L.entropy_dual_objective_T(y, rng.exponential(size=y.shape)) <= ent + 1e-12
    t = np.ones_like(y)
    t.flat[0] = 0.0
    assert L.entropy_dual_objective_T(y, t) == -math.inf
    y0 = y.copy()
    y0.flat[0] = 0.0  # T = 0 where Y = 0 contributes 0, not −∞
    assert math.isfinite(L.entropy_dual_objective_T(y0, np.where(y0 > 0, 1.0, 0.0)))


def test_gaussian_sides_closed_forms():
    # Poincaré sides for a bump: compare with Gauss–Hermite of the same smooth function (both exact)
    var, energy = L.gaussian_poincare_sides(lambda x: math.exp(-x * x), lambda x: -2 * x * math.exp(-x * x),
                                            (-12.0, 12.0))
    m1, m2 = 1 / math.sqrt(3), 1 / math.sqrt(5)  # E e^{-X²}, E e^{-2X²}
    assert var == pytest.approx(m2 - m1**2, rel=1e-9)
    assert energy == pytest.approx(4 * (1 / 5) ** 1.5, rel=1e-9)  # E[4X² e^{-2X²}] = 4·5^{-3/2}
    # LSI sides: g = exp(⟨a,x⟩/2) is the equality case Ent(g²) = 2 E‖∇g‖² = |a|²/2 · e^{|a|²}·…
    a = np.array([0.4, -0.3])
    ent, en = L.gaussian_lsi_sides(lambda X: np.exp(X @ a / 2), lambda X: np.exp(X @ a / 2)[:, None] * a / 2, 2)
    assert ent == pytest.approx(2 * en, rel=1e-10)
    assert en == pytest.approx(a @ a / 4 * math.exp(a @ a / 2), rel=1e-10)


def test_config_bounds_and_extra_checks():
    from icml26.harness import ConfigError

    for bad in ({"sparse_folds": 1}, {"n_mc": 5}, {"sigma": 0.0}, {"ls_rank": 10}, {"sparse_ds": (100, 100, 400)},
                {"sparse_s": 200}):
        with pytest.raises(ConfigError):
            experiment.Config(**bad)
    for profile in ("smoke", "quick", "full"):
        getattr(experiment.Config, profile)()

"""Correctness of the transport_kl API: closed forms vs independent oracles, references, bad input."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm

from icml26.papers.transport_kl import (
    CartPole,
    bures_map,
    closed_loop_cost,
    control_penalty,
    discounted_dlqr,
    divergence_path_energy,
    double_integrator,
    kl_gaussian,
    kl_regularized_lqr,
    kwkl_gaussian,
    simulate_linear,
    stationary_cost,
    wasserstein_potential,
    wkl_elliptic,
    wkl_gaussian,
)


def spd(rng, n, lo=0.3, hi=3.0):
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return (U * rng.uniform(lo, hi, size=n)) @ U.T


# ----------------------------------------------------------------------------------------------
# divergences
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3])
def test_wkl_closed_form_matches_path_energy_oracle(n):
    rng = np.random.default_rng(n)
    S0, S1 = spd(rng, n), spd(rng, n)
    m0, m1 = rng.normal(size=n), rng.normal(size=n)
    ref = divergence_path_energy(m0, S0, m1, S1, geometry="wasserstein")
    assert wkl_gaussian(m0, S0, m1, S1) == pytest.approx(ref, rel=1e-6)


def _mc_defining_integral(m0, A, b, sample, n_t=101):
    """Monte-Carlo of int int_0^1 [f(phi_1(x)) - f(phi_t(x))] dt dmu(x), f = x'Ax/2 + b'x."""
    a, U = np.linalg.eigh(A)
    ts = np.linspace(0.0, 1.0, n_t)

    def f(x):
        return 0.5 * np.einsum("ni,ij,nj->n", x, A, x) + x @ b

    def phi(t, x):
        e = np.exp(a * t)
        integ = np.where(np.abs(a) < 1e-12, t, np.expm1(a * t) / np.where(a == 0, 1, a))
        return (x @ U) * e @ U.T + (U * integ) @ U.T @ b

    f1 = f(phi(1.0, sample))
    vals = np.array([np.mean(f1 - f(phi(t, sample))) for t in ts])
    return float(np.sum(0.5 * (vals[1:] + vals[:-1]) * np.diff(ts)))


def test_wkl_matches_monte_carlo_of_the_defining_double_integral():
    """Unequal covariances: a stub returning 0.5|dm|^2 would fail here."""
    rng = np.random.default_rng(7)
    n = 2
    S0, S1 = spd(rng, n), spd(rng, n)
    m0, m1 = rng.normal(size=n), rng.normal(size=n)
    A, b = wasserstein_potential(m0, S0, m1, S1)
    # the potential's flow reaches nu: e^A S0 e^A = S1
    eA = expm(A)
    np.testing.assert_allclose(eA @ S0 @ eA, S1, atol=1e-10)
    np.testing.assert_allclose(eA, bures_map(S0, S1), atol=1e-10)
    x = rng.multivariate_normal(m0, S0, size=100_000)
    mc = _mc_defining_integral(m0, A, b, x)
    closed = wkl_gaussian(m0, S0, m1, S1)
    assert abs(closed - 0.5 * np.sum((m1 - m0) ** 2)) > 0.05 * closed  # a genuinely unequal pair
    assert mc == pytest.approx(closed, rel=0.01)


def test_wkl_elliptic_matches_monte_carlo_with_student_t():
    rng = np.random.default_rng(3)
    n, nu = 2, 6.0
    S0, S1 = spd(rng, n), spd(rng, n)  # scatter matrices
    m0, m1 = rng.normal(size=n), rng.normal(size=n)
    A, b = wasserstein_potential(m0, S0, m1, S1)
    z = rng.multivariate_normal(np.zeros(n), S0, size=200_000)
    x = m0 + z / np.sqrt(rng.chisquare(nu, size=(200_000, 1)) / nu)
    mc = _mc_defining_integral(m0, A, b, x)
    assert mc == pytest.approx(wkl_elliptic(m0, S0, m1, S1, kappa=nu / (nu - 2)), rel=0.02)


def test_wkl_one_dimensional_formula():
    s0, s1, dm = 0.7, 1.9, 0.8
    expected = (s1**2 * math.log(s1**2 / s0**2) - s1**2 + s0**2) / 4 * (1 + dm**2 / (s1 - s0) ** 2)
    assert wkl_gaussian([0.0], [[s0**2]], [dm], [[s1**2]]) == pytest.approx(expected, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(min_value=-12, max_value=2), seed=st.integers(0, 10_000))
def test_equal_covariances_give_half_squared_distance(scale, seed):
    rng = np.random.default_rng(seed)
    n = 3
    S = 10.0**scale * spd(rng, n)
    m0, m1 = rng.normal(size=n), rng.normal(size=n)
    half = 0.5 * np.sum((m1 - m0) ** 2)
    assert wkl_gaussian(m0, S, m1, S) == pytest.approx(half, rel=1e-12)
    assert wkl_elliptic(m0, S, m1, S, kappa=3.0) == pytest.approx(half, rel=1e-12)
    # Dirac measures: finite WKL, infinite KL
    assert wkl_gaussian(m0, np.zeros((n, n)), m1, np.zeros((n, n))) == pytest.approx(half)
    assert kl_gaussian(m0, np.zeros((n, n)), m1, np.zeros((n, n))) == math.inf


def test_kl_blows_up_wkl_constant_kwkl_saturates():
    dm = np.array([1.0, -2.0])
    half = 0.5 * dm @ dm
    for s in (1.0, 1e-4, 1e-8):
        S = s * np.eye(2)
        assert kl_gaussian(np.zeros(2), S, dm, S) == pytest.approx(half / s)
        assert wkl_gaussian(np.zeros(2), S, dm, S) == pytest.approx(half)
        assert kwkl_gaussian(np.zeros(2), S, dm, S, eps=0.5) == pytest.approx(half / (s + 0.5))
        assert kwkl_gaussian(np.zeros(2), S, dm, S, eps=0.0) == pytest.approx(half / s)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 4))
def test_divergences_nonnegative_and_zero_iff_equal(seed, n):
    rng = np.random.default_rng(seed)
    S0, S1 = spd(rng, n), spd(rng, n)
    m0, m1 = rng.normal(size=n), rng.normal(size=n)
    for fn in (kl_gaussian, wkl_gaussian):
        assert fn(m0, S0, m1, S1) > 0.0
        assert fn(m0, S0, m0, S0) == pytest.approx(0.0, abs=1e-12)
    assert kwkl_gaussian(m0, S0, m0, S0, eps=0.3) == pytest.approx(0.0, abs=1e-12)


def test_wkl_is_asymmetric_and_infinite_from_singular_source():
    rng = np.random.default_rng(1)
    S0, S1 = spd(rng, 2), spd(rng, 2)
    m0, m1 = rng.normal(size=2), rng.normal(size=2)
    assert wkl_gaussian(m0, S0, m1, S1) != pytest.approx(wkl_gaussian(m1, S1, m0, S0), rel=1e-3)
    assert wkl_gaussian(m0, np.diag([1.0, 0.0]), m1, S1) == math.inf


def test_kl_matches_torch_reference():
    torch = pytest.importorskip("torch")
    from torch.distributions import MultivariateNormal, kl_divergence

    rng = np.random.default_rng(2)
    S0, S1 = spd(rng, 3), spd(rng, 3)
    m0, m1 = rng.normal(size=3), rng.normal(size=3)
    ref = kl_divergence(MultivariateNormal(torch.tensor(m0), torch.tensor(S0)),
                        MultivariateNormal(torch.tensor(m1), torch.tensor(S1))).item()
    assert kl_gaussian(m0, S0, m1, S1) == pytest.approx(ref, rel=1e-10)


def test_bures_map_matches_pot():
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(4)
    for n in (1, 2, 4):
        S0, S1 = spd(rng, n), spd(rng, n)
        A, _ = ot.gaussian.bures_wasserstein_mapping(np.zeros(n), np.zeros(n), S0, S1)
        np.testing.assert_allclose(bures_map(S0, S1), A, atol=1e-8)


def test_kwkl_commuting_closed_form_matches_shooting():
    rng = np.random.default_rng(5)
    for eps in (0.0, 0.4, 2.0):
        D0, D1 = np.diag(rng.uniform(0.3, 2.0, 3)), np.diag(rng.uniform(0.3, 2.0, 3))
        m0, m1 = rng.normal(size=3), rng.normal(size=3)
        ref = divergence_path_energy(m0, D0, m1, D1, geometry="kalman_wasserstein", eps=eps)
        assert kwkl_gaussian(m0, D0, m1, D1, eps=eps, method="closed_form") == pytest.approx(
            ref, rel=1e-6)


def test_kwkl_general_case_uses_shooting_and_limits():
    rng = np.random.default_rng(6)
    S0, S1 = spd(rng, 2), spd(rng, 2)
    m0, m1 = rng.normal(size=2), rng.normal(size=2)
    auto = kwkl_gaussian(m0, S0, m1, S1, eps=0.5)
    assert auto == pytest.approx(kwkl_gaussian(m0, S0, m1, S1, eps=0.5, method="shooting"))
    assert auto > 0
    with pytest.raises(ValueError, match="commute"):
        kwkl_gaussian(m0, S0, m1, S1, eps=0.5, method="closed_form")
    # eps * KWKL_eps -> WKL for equal covariances as eps -> infinity
    S = spd(rng, 2)
    big = 1e8
    assert big * kwkl_gaussian(m0, S, m1, S, eps=big) == pytest.approx(
        wkl_gaussian(m0, S, m1, S), rel=1e-6)


# ----------------------------------------------------------------------------------------------
# control
# ----------------------------------------------------------------------------------------------


def _riccati_iteration(A, B, Q, R, gamma, iters=5000):
    """Slow reference: value iteration of the discounted Riccati recursion."""
    P = np.zeros_like(Q)
    for _ in range(iters):
        G = R + gamma * B.T @ P @ B
        P = Q + gamma * A.T @ P @ A - gamma**2 * A.T @ P @ B @ np.linalg.solve(G, B.T @ P @ A)
    K = gamma * np.linalg.solve(R + gamma * B.T @ P @ B, B.T @ P @ A)
    return K, P


@pytest.mark.parametrize("gamma", [0.5, 0.9, 1.0])
def test_discounted_dlqr_matches_riccati_iteration(gamma):
    A, B = double_integrator(dims=2)
    Q = np.eye(4)
    R = np.array([[1.0, 0.2], [0.2, 2.0]])
    K, S, E = discounted_dlqr(A, B, Q, R, gamma)
    K_ref, P_ref = _riccati_iteration(A, B, Q, R, gamma)
    np.testing.assert_allclose(K, K_ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(S, P_ref, rtol=1e-7)
    np.testing.assert_allclose(np.sort(np.abs(E)), np.sort(np.abs(np.linalg.eigvals(A - B @ K))))


@pytest.mark.skipif(importlib.util.find_spec("control") is None, reason="python-control absent")
def test_undiscounted_gain_matches_python_control_dlqr():
    import control

    A, B = double_integrator(dims=2)
    K_ref, S_ref, _ = control.dlqr(A, B, np.eye(4), np.eye(2))
    K, S, _ = discounted_dlqr(A, B, np.eye(4), np.eye(2), 1.0)
    np.testing.assert_allclose(K, K_ref, rtol=1e-8)
    np.testing.assert_allclose(S, S_ref, rtol=1e-8)


def test_double_integrator_reference_numbers():
    """Regression against the brief's independently computed table (R = lam*M with lam = 1)."""
    A, B = double_integrator(dims=2)
    Sw = np.diag([1e-5, 1e-5, 10.0, 10.0])
    expected = {"kl": (1.604, 0.994, 1765), "wkl": (1.759, 0.454, 641), "kwkl": (2.036, 0.454, 702)}
    for name, (fro, rho, cost) in expected.items():
        K, _, E = kl_regularized_lqr(A, B, np.eye(4), Sw, divergence=name, lam=1.0, gamma=0.9,
                                     eps=1.0, half=False)
        assert np.linalg.norm(K) == pytest.approx(fro, abs=2e-3)
        assert np.max(np.abs(E)) == pytest.approx(rho, abs=2e-3)
        J = closed_loop_cost(A, B, K, np.eye(4), np.eye(2), Sw, gamma=0.9)
        assert J == pytest.approx(cost, rel=2e-3)
    # the KL gain on the nearly noiseless axis collapses, the WKL one does not
    K_kl = kl_regularized_lqr(A, B, np.eye(4), Sw, divergence="kl", lam=2.0, gamma=0.9)[0]
    K_w = kl_regularized_lqr(A, B, np.eye(4), Sw, divergence="wkl", lam=2.0, gamma=0.9)[0]
    assert np.linalg.norm(K_kl[0, :2]) < 0.02 * np.linalg.norm(K_w[0, :2])


def test_penalties_and_their_limits():
    A, B = double_integrator(dims=2)
    Q = np.eye(4)
    K_w = [kl_regularized_lqr(A, B, Q, s * np.eye(4), divergence="wkl")[0] for s in (1e-8, 1, 1e3)]
    np.testing.assert_allclose(K_w[0], K_w[1], atol=1e-12)
    np.testing.assert_allclose(K_w[0], K_w[2], atol=1e-12)
    Sw = np.diag([0.3, 0.3, 2.0, 2.0])
    np.testing.assert_allclose(control_penalty(B, Sw, "kwkl", eps=1e-12),
                               control_penalty(B, Sw, "kl"), rtol=1e-9)
    eps = 1e6
    np.testing.assert_allclose(control_penalty(B, 1e-6 * np.eye(4), "kwkl", lam=eps, eps=eps),
                               control_penalty(B, 1e-6 * np.eye(4), "wkl"), rtol=1e-9)
    assert np.allclose(control_penalty(B, Sw, "wkl", lam=3.0, half=False),
                       2 * control_penalty(B, Sw, "wkl", lam=3.0))
    # the penalty equals lam * D(P_u || P_0) for every divergence
    u = np.array([0.7, -0.4])
    x = np.array([0.1, 0.2, -0.3, 0.5])
    for name, fn in (("kl", kl_gaussian), ("wkl", wkl_gaussian)):
        R = control_penalty(B, Sw, name, lam=1.0)
        assert u @ R @ u == pytest.approx(fn(A @ x + B @ u, Sw, A @ x, Sw), rel=1e-10)
    R = control_penalty(B, Sw, "kwkl", lam=1.0, eps=0.7)
    assert u @ R @ u == pytest.approx(kwkl_gaussian(A @ x + B @ u, Sw, A @ x, Sw, eps=0.7))


def test_lyapunov_cost_matches_simulation():
    A, B = double_integrator(dims=2)
    Sw = np.diag([0.05, 0.05, 0.5, 0.5])
    K = kl_regularized_lqr(A, B, np.eye(4), Sw, divergence="wkl", gamma=0.9)[0]
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((4000, 4))
    xs, us = simulate_linear(A, B, K, Sw, x0, 150, rng)
    disc = 0.9 ** np.arange(151)
    per = np.einsum("ntj,ntj->nt", xs, xs) @ disc + np.einsum("ntj,ntj->nt", us, us) @ disc[:-1]
    exact = closed_loop_cost(A, B, K, np.eye(4), np.eye(2), Sw, gamma=0.9)
    se = per.std(ddof=1) / math.sqrt(per.size)
    assert abs(per.mean() - exact) < 4 * se
    # stationary (average) cost
    tail = np.einsum("ntj,ntj->nt", xs[:, 100:], xs[:, 100:]).mean()
    stat = stationary_cost(A, B, K, np.eye(4), np.zeros((2, 2)), Sw)
    assert tail == pytest.approx(stat, rel=0.05)


def test_cartpole_linearization_matches_finite_differences():
    cp = CartPole()
    A, B = cp.linearize()
    h = 1e-6
    x0 = np.zeros(4)
    J = np.column_stack([(cp.step(x0 + h * e, 0.0) - cp.step(x0 - h * e, 0.0)) / (2 * h)
                         for e in np.eye(4)])
    Jb = (cp.step(x0, h) - cp.step(x0, -h)) / (2 * h)
    np.testing.assert_allclose(A, J, atol=1e-8)
    np.testing.assert_allclose(B[:, 0], Jb, atol=1e-8)
    assert cp.terminated(np.array([2.5, 0, 0, 0])) and cp.terminated(np.array([0, 0, 0.25, 0]))
    assert not cp.terminated(np.zeros(4))


def test_cartpole_step_matches_gymnasium_when_installed():
    gym = pytest.importorskip("gymnasium")
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    state = np.array(env.state, dtype=float)
    env.step(1)  # force +10 N
    np.testing.assert_allclose(CartPole().step(state, 10.0), np.array(env.state), rtol=1e-6)


def test_cartpole_lqr_keeps_pole_up():
    cp = CartPole()
    A, B = cp.linearize()
    K = kl_regularized_lqr(A, B, np.diag([1.0, 1.0, 10.0, 1.0]), 1e-6 * np.eye(4),
                           divergence="wkl", lam=2.0, gamma=0.99)[0]
    rng = np.random.default_rng(0)
    out = cp.simulate(K, rng.uniform(-0.05, 0.05, (8, 4)), 300, 1e-6 * np.eye(4), rng)
    assert np.all(out["survival"] == 300)
    out = cp.simulate(np.zeros((1, 4)), rng.uniform(-0.05, 0.05, (8, 4)), 300, 1e-6 * np.eye(4), rng)
    assert np.all(out["survival"] < 300)  # no feedback: the pole falls


# ----------------------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------------------


def test_bad_covariances_raise():
    m = np.zeros(2)
    with pytest.raises(ValueError, match="symmetric"):
        wkl_gaussian(m, [[1.0, 0.5], [0.0, 1.0]], m, np.eye(2))
    with pytest.raises(ValueError, match="semi-definite"):
        kl_gaussian(m, np.diag([1.0, -1.0]), m, np.eye(2))
    with pytest.raises(ValueError, match="positive definite"):
        bures_map(np.diag([1.0, 0.0]), np.eye(2))
    with pytest.raises(ValueError, match="shape"):
        wkl_gaussian(m, np.eye(2), m, np.eye(3))
    with pytest.raises(ValueError, match="length"):
        wkl_gaussian(np.zeros(3), np.eye(2), m, np.eye(2))
    with pytest.raises(ValueError, match="NaN"):
        kl_gaussian(m, np.eye(2), [np.nan, 0.0], np.eye(2))
    with pytest.raises(TypeError):
        wkl_gaussian("ab", np.eye(2), m, np.eye(2))
    with pytest.raises(ValueError, match="eps"):
        kwkl_gaussian(m, np.eye(2), m, np.eye(2), eps=-1.0)
    with pytest.raises(ValueError, match="kappa"):
        wkl_elliptic(m, np.eye(2), m, np.eye(2), kappa=0.0)


def test_bad_control_inputs_raise():
    A, B = double_integrator(dims=2)
    Q = np.eye(4)
    Sw = np.eye(4)
    for gamma in (0.0, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match="gamma"):
            kl_regularized_lqr(A, B, Q, Sw, gamma=gamma)
    with pytest.raises(ValueError, match="controllable"):
        kl_regularized_lqr(A, np.vstack([B[:2, :1], np.zeros((2, 1))]), Q, Sw)
    with pytest.raises(ValueError, match="rows"):
        kl_regularized_lqr(A, B[:3], Q, Sw)
    with pytest.raises(ValueError, match="singular"):
        kl_regularized_lqr(A, B, Q, np.diag([1.0, 0.0, 1.0, 1.0]), divergence="kl")
    with pytest.raises(ValueError, match="divergence"):
        control_penalty(B, Sw, "hellinger")
    with pytest.raises(ValueError, match="lam"):
        control_penalty(B, Sw, "wkl", lam=0.0)
    with pytest.raises(ValueError, match="symmetric"):
        discounted_dlqr(A, B, np.triu(np.ones((4, 4))), np.eye(2))
    with pytest.raises(ValueError, match="positive definite"):
        discounted_dlqr(A, B, Q, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="gamma < 1"):
        closed_loop_cost(A, B, np.zeros((2, 4)), Q, np.eye(2), Sw, gamma=1.0)
    with pytest.raises(TypeError):
        simulate_linear(A, B, np.zeros((2, 4)), Sw, np.zeros(4), 5, rng=0)
    # the singular KL problem is still well posed for the transport penalties
    K = kl_regularized_lqr(A, B, Q, np.diag([0.0, 0.0, 1.0, 1.0]), divergence="wkl")[0]
    assert np.all(np.isfinite(K))


def test_tiny_but_different_covariances_are_not_treated_as_equal():
    """Scale invariance of the Bures map: WKL's mean term must not depend on the overall scale."""
    dm = np.array([1.0, 0.5])
    for scale in (1.0, 1e-12):
        S0, S1 = scale * np.eye(2), 2 * scale * np.eye(2)
        a = math.log(math.sqrt(2.0))
        q = math.exp(2 * a) * (2 * a - 1) + 1
        mean_term = (dm @ dm) * q / (4 * math.expm1(a) ** 2)
        expected = 2 * scale * q / 4 + mean_term
        assert wkl_gaussian(np.zeros(2), S0, dm, S1) == pytest.approx(expected, rel=1e-10)
    with pytest.raises(ValueError, match="symmetric"):
        wkl_gaussian(np.zeros(2), 1e-12 * np.array([[1.0, 0.5], [0.0, 1.0]]), dm, np.eye(2))


def _wkl_1d(s0, s1, dm):
    if s0 == s1:
        return 0.5 * dm * dm
    r0, r1 = math.sqrt(s0), math.sqrt(s1)
    return (s1 * math.log(s1 / s0) - s1 + s0) / 4.0 * (1.0 + dm * dm / (r1 - r0) ** 2)


@pytest.mark.parametrize(("a", "b"), [(1e-13, 1e-15), (1e-9, 1e-13), (1e-6, 1e-12), (1e-13, 1e-11)])
def test_equal_covariance_decided_per_direction(a, b):
    """Issue 20: diag(1, 1e-13) -> diag(1, 1e-15) was treated as equal (0.5|dm|^2, ~70 % off). The
    pair decouples per direction, so the 1-D formula of each direction is the reference."""
    dm = np.array([0.3, 1.0])
    expected = _wkl_1d(1.0, 1.0, dm[0]) + _wkl_1d(a, b, dm[1])
    got = wkl_gaussian(np.zeros(2), np.diag([1.0, a]), dm, np.diag([1.0, b]))
    assert got == pytest.approx(expected, rel=1e-8)
    if a != b and abs(b / a - 1) > 1e-6:
        assert abs(got - 0.5 * dm @ dm) > 0.01 * got
    # KWKL: the same pair decouples; a sum of 1-D KWKL values is the reference, not the equal-cov formula
    eps = 1e-12
    kw = kwkl_gaussian(np.zeros(2), np.diag([1.0, a]), dm, np.diag([1.0, b]), eps=eps)
    per_dir = (kwkl_gaussian(np.zeros(1), np.eye(1), dm[:1], np.eye(1), eps=eps)
               + kwkl_gaussian(np.zeros(1), np.array([[a]]), dm[1:], np.array([[b]]), eps=eps))
    assert kw == pytest.approx(per_dir, rel=1e-8)
    if abs(b / a - 1) > 1e-6:
        equal_formula = 0.5 * dm @ np.linalg.solve(np.diag([1.0, a]) + eps * np.eye(2), dm)
        assert abs(kw - equal_formula) > 0.01 * kw


def test_near_equal_small_covariances_use_the_series():
    """Eigenvalues equal to 9 digits but not exactly: the general path (series for g, h) gives 0.5|dm|^2."""
    dm = np.array([0.3, 1.0])
    got = wkl_gaussian(np.zeros(2), np.diag([1.0, 1e-12]), dm, np.diag([1.0, 1e-12 * (1 + 1e-9)]))
    assert got == pytest.approx(0.5 * dm @ dm, rel=1e-8)


def test_bad_inputs_of_issue_20():
    from icml26.papers.transport_kl import CartPole

    with pytest.raises(TypeError, match="real"):
        wkl_gaussian(np.zeros(2), np.eye(2) * (1 + 1j), np.ones(2), np.eye(2))
    with pytest.raises(TypeError, match="real"):
        kl_gaussian(np.zeros(2) + 0j, np.eye(2), np.ones(2), np.eye(2))
    for fn in (wkl_gaussian, kl_gaussian, kwkl_gaussian):
        with pytest.raises(ValueError, match="NaN"):
            fn(np.array([np.nan, 0.0]), np.eye(2), np.zeros(2), np.eye(2))
    A, B = double_integrator(dims=2)
    with pytest.raises(ValueError, match="NaN"):
        closed_loop_cost(A, B, np.zeros((2, 4)), np.eye(4), np.eye(2), np.eye(4), gamma=0.9,
                         m0=np.array([np.nan, 0, 0, 0]))
    cp = CartPole()
    for T in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="T must be a positive integer"):
            cp.simulate(np.zeros((1, 4)), np.zeros((2, 4)), T, 1e-4 * np.eye(4), np.random.default_rng(0))
    with pytest.raises(ValueError, match="NaN"):
        cp.simulate(np.zeros((1, 4)), np.full((2, 4), np.nan), 5, 1e-4 * np.eye(4), np.random.default_rng(0))


def test_kwkl_weight_matching_is_exact():
    """A mutation of the KWKL penalty (e.g. Sigma_w + eps instead of Sigma_w + eps I, or a lost 1/2) must
    fail: the KWKL penalty at (Sigma_w, eps) equals the KL penalty at Sigma_w + eps I, and a KWKL whose
    λ is scaled by (sigma2 + eps) equals WKL for isotropic noise."""
    from icml26.papers.transport_kl import control_penalty

    rng = np.random.default_rng(3)
    B = rng.normal(size=(4, 2))
    Sw = np.diag([1e-6, 0.3, 2.0, 5.0])
    eps = 0.7
    R_kw = control_penalty(B, Sw, "kwkl", lam=1.3, eps=eps)
    R_kl = control_penalty(B, Sw + eps * np.eye(4), "kl", lam=1.3)
    assert np.allclose(R_kw, R_kl, rtol=1e-12, atol=0)
    assert np.allclose(R_kw, 0.65 * B.T @ np.linalg.solve(Sw + eps * np.eye(4), B), rtol=1e-12, atol=0)
    s2 = 0.01
    R_iso = control_penalty(B, s2 * np.eye(4), "kwkl", lam=2.0 * (s2 + eps), eps=eps)
    assert np.allclose(R_iso, control_penalty(B, s2 * np.eye(4), "wkl", lam=2.0), rtol=1e-12, atol=0)
    # and the same identity holds for the gains the experiment designs
    from icml26.papers.transport_kl import experiment as E

    A, B2 = double_integrator(dims=2)
    K_kw = E._gain("kwkl", A, B2, np.eye(4), s2 * np.eye(4), 2.0 * (s2 + eps), 0.9, eps)
    K_w = E._gain("wkl", A, B2, np.eye(4), s2 * np.eye(4), 2.0, 0.9, eps)
    K_kl = E._gain("kl", A, B2, np.eye(4), s2 * np.eye(4), 2.0 * s2, 0.9, eps)
    assert np.allclose(K_kw, K_w, rtol=1e-9, atol=1e-12) and np.allclose(K_kl, K_w, rtol=1e-9, atol=1e-12)


def test_isotropic_noise_retuned_kl_equals_wkl_but_anisotropic_does_not():
    """The review's point: with isotropic noise every penalty is a multiple of B^T B (a retuned KL *is*
    WKL); with anisotropic or degenerating noise and two inputs no λ makes them equal."""
    from icml26.papers.transport_kl import experiment as E

    A, B = double_integrator(dims=2)
    for structure, equal in (("isotropic", True), ("anisotropic", False), ("degenerating", False)):
        Sw = E.di_noise(structure, 1e-3)
        K_w = E._gain("wkl", A, B, np.eye(4), Sw, 2.0, 0.9, 1.0)
        best = min(np.abs(E._gain("kl", A, B, np.eye(4), Sw, lam, 0.9, 1.0) - K_w).max()
                   for lam in 2.0 * np.logspace(-6, 0, 13))
        assert (best < 1e-6) == equal, structure

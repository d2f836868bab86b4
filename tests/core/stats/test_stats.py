"""Tests of the shared statistics core: kernels, unbiased MMD^2, permutation machinery, CIs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from icml26.core.stats import (
    GaussianKernel,
    gaussian_kernel_expectation,
    gram_blocks,
    h1_variance,
    mean_confidence_interval,
    median_bandwidth,
    mmd2_gaussian,
    mmd2_paired,
    mmd2_u,
    mmd2_unbiased,
    pairwise_sq_dists,
    permutation_indices,
    permutation_pvalue,
    permuted_block_sums,
    u_statistic_variance,
    wilson_interval,
)


def _slow_mmd2_u(X, Y, k):
    n, p = len(X), len(Y)
    sxx = sum(k(X[i], X[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    syy = sum(k(Y[i], Y[j]) for i in range(p) for j in range(p) if i != j) / (p * (p - 1))
    sxy = sum(k(X[i], Y[j]) for i in range(n) for j in range(p)) / (n * p)
    return sxx + syy - 2 * sxy


def test_pairwise_and_kernel_match_scipy():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
    np.testing.assert_allclose(pairwise_sq_dists(A, B), cdist(A, B, "sqeuclidean"), atol=1e-10)
    k = GaussianKernel(0.7)
    np.testing.assert_allclose(k(A, B), np.exp(-cdist(A, B, "sqeuclidean") / (2 * 0.49)), atol=1e-12)
    assert np.allclose(np.diag(k(A, A)), 1.0)


def test_median_bandwidth_definition():
    Z = np.array([[0.0], [1.0], [3.0]])  # squared distances 1, 9, 4 -> median 4 -> h = sqrt(2)
    assert median_bandwidth(Z) == pytest.approx(np.sqrt(2.0))
    k = GaussianKernel().fit(Z)
    assert k.bandwidth_ == pytest.approx(np.sqrt(2.0))


def test_mmd2_u_matches_double_loop():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(9, 2)), rng.normal(0.5, size=(7, 2))
    k = GaussianKernel(1.3)

    def kf(a, b):
        return float(np.exp(-np.sum((a - b) ** 2) / (2 * 1.3**2)))

    assert mmd2_u(X, Y, k) == pytest.approx(_slow_mmd2_u(X, Y, kf), abs=1e-12)


def test_mmd2_paired_matches_double_loop():
    rng = np.random.default_rng(2)
    m = 8
    X, Y = rng.normal(size=(m, 2)), rng.normal(1.0, size=(m, 2))
    k = GaussianKernel(1.0)
    Z = np.vstack([X, Y])
    Kxx, Kyy, Kxy = gram_blocks(k(Z, Z), m)
    ref = 0.0
    for i in range(m):
        for j in range(m):
            if i != j:
                ref += Kxx[i, j] + Kyy[i, j] - Kxy[i, j] - Kxy[j, i]
    assert mmd2_paired(Kxx, Kyy, Kxy) == pytest.approx(ref / (m * (m - 1)), abs=1e-12)


def test_h1_variance_formula():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 6))
    row = A.sum(1)
    expected = 4 * ((row**2).sum() / 6**3 - (A.sum() / 36) ** 2)
    assert h1_variance(A) == pytest.approx(expected)


def test_gaussian_closed_form_matches_monte_carlo():
    rng = np.random.default_rng(4)
    a, b = np.array([0.0, 0.0]), np.array([1.0, -0.5])
    exact = gaussian_kernel_expectation(a, 0.5, b, 0.3, 0.8)
    x = rng.normal(size=(200000, 2)) * np.sqrt(0.5) + a
    y = rng.normal(size=(200000, 2)) * np.sqrt(0.3) + b
    mc = np.exp(-np.sum((x - y) ** 2, 1) / (2 * 0.64)).mean()
    assert mc == pytest.approx(exact, abs=3e-3)
    pop = mmd2_gaussian(a, 0.5, b, 0.3, 0.8)
    assert pop["mmd2"] == pytest.approx(pop["norm_p"] + pop["norm_q"] - 2 * pop["cross"])


def test_mmd2_u_converges_to_closed_form():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2000, 2))
    Y = rng.normal(size=(2000, 2)) * np.sqrt(0.5) + np.array([0.7, 0.0])
    exact = mmd2_gaussian(np.zeros(2), 1.0, np.array([0.7, 0.0]), 0.5, 1.0)["mmd2"]
    assert mmd2_u(X, Y, GaussianKernel(1.0)) == pytest.approx(exact, abs=0.025)  # ~3 s.e. at m = 2000


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 6), st.integers(2, 6), st.integers(0, 10_000))
def test_block_sums_match_direct(n_x, n_y, seed):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n_x + n_y, 2))
    K = GaussianKernel(1.0)(Z, Z)
    perms = permutation_indices(n_x + n_y, 4, rng)
    s = permuted_block_sums(K, n_x, perms)
    for b, p in enumerate(perms):
        Kp = K[np.ix_(p, p)]
        Kxx, Kyy, Kxy = gram_blocks(Kp, n_x)
        assert s.sxx[b] == pytest.approx(Kxx.sum())
        assert s.syy[b] == pytest.approx(Kyy.sum())
        assert s.sxy[b] == pytest.approx(Kxy.sum())
        assert s.tx[b] == pytest.approx(np.trace(Kxx))
        if n_x == n_y:
            assert s.pair[b] == pytest.approx(np.trace(Kxy))
            assert mmd2_paired(Kxx, Kyy, Kxy) == pytest.approx(
                (s.sxx[b] - s.tx[b] + s.syy[b] - s.ty[b] - 2 * (s.sxy[b] - s.pair[b])) / (n_x * (n_x - 1)))
        else:
            assert mmd2_unbiased(Kxx, Kyy, Kxy) == pytest.approx(
                (s.sxx[b] - s.tx[b]) / (n_x * (n_x - 1)) + (s.syy[b] - s.ty[b]) / (n_y * (n_y - 1))
                - 2 * s.sxy[b] / (n_x * n_y))


def test_permutation_pvalue_valid():
    assert permutation_pvalue(10.0, np.zeros(99)) == pytest.approx(0.01)
    assert permutation_pvalue(-1.0, np.zeros(99)) == 1.0
    assert permutation_pvalue(0.0, np.zeros(9)) == 1.0  # ties count


def test_intervals():
    lo, hi = wilson_interval(5, 100)
    assert lo < 0.05 < hi and 0 <= lo and hi <= 1
    assert wilson_interval(0, 10)[0] == 0.0
    mean, lo, hi = mean_confidence_interval([1.0, 2.0, 3.0])
    assert lo < mean == 2.0 < hi
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


@pytest.mark.parametrize(
    ("X", "Y", "exc"),
    [
        (np.zeros((5, 2)), np.zeros((5, 3)), ValueError),
        (np.zeros((1, 2)), np.zeros((5, 2)), ValueError),
        (np.full((5, 2), np.nan), np.zeros((5, 2)), ValueError),
        (np.array([[np.inf, 0]] * 5), np.zeros((5, 2)), ValueError),
        (np.array([["a", "b"]] * 3), np.zeros((3, 2)), TypeError),
        (np.zeros((2, 2, 2)), np.zeros((2, 2)), ValueError),
    ],
)
def test_bad_input(X, Y, exc):
    with pytest.raises(exc):
        mmd2_u(X, Y)


def test_bad_bandwidth():
    with pytest.raises(ValueError):
        GaussianKernel(-1.0)
    with pytest.raises(TypeError):
        GaussianKernel("1")
    with pytest.raises(ValueError):
        GaussianKernel()(np.zeros((2, 1)))
    with pytest.raises(ValueError):
        wilson_interval(1, 10, alpha=1.5)


def test_u_statistic_variance_matches_distinct_index_sums():
    """zeta_1, zeta_2 estimated by explicit sums over distinct index tuples (slow reference)."""
    import itertools

    rng = np.random.default_rng(21)
    m = 7
    A = rng.normal(size=(m, m))
    A = A + A.T
    idx = range(m)
    e13 = np.mean([A[i, j] * A[i, k] for i, j, k in itertools.permutations(idx, 3)])
    e2 = np.mean([A[i, j] ** 2 for i, j in itertools.permutations(idx, 2)])
    e0 = np.mean([A[i, j] * A[k, l] for i, j, k, l in itertools.permutations(idx, 4)])
    expected = 2 / (m * (m - 1)) * (2 * (m - 2) * (e13 - e0) + (e2 - e0))
    assert u_statistic_variance(A) == pytest.approx(expected, rel=1e-12)
    # the diagonal is ignored
    B = A.copy()
    np.fill_diagonal(B, 99.0)
    assert u_statistic_variance(B) == pytest.approx(expected, rel=1e-12)


def test_u_statistic_variance_is_unbiased_monte_carlo():
    rng = np.random.default_rng(22)
    k = GaussianKernel(1.0)
    us, vs = [], []
    for _ in range(1500):
        X, Y = rng.normal(size=(20, 1)), 1.3 * rng.normal(0.5, size=(20, 1))
        Z = np.vstack([X, Y])
        Kxx, Kyy, Kxy = gram_blocks(k(Z, Z), 20)
        H = Kxx + Kyy - Kxy - Kxy.T
        us.append((H.sum() - np.trace(H)) / (20 * 19))
        vs.append(u_statistic_variance(H))
    # the variance of an empirical variance from 1500 draws has ~4% relative s.e.
    assert np.mean(vs) == pytest.approx(np.var(us, ddof=1), rel=0.12)


def test_u_statistic_variance_bad_input():
    with pytest.raises(ValueError, match="m >= 4"):
        u_statistic_variance(np.ones((3, 3)))
    with pytest.raises(ValueError, match="square"):
        u_statistic_variance(np.ones((4, 3)))


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"var_p": float("nan")}, ValueError, "finite"),
        ({"var_p": np.array([1.0, 2.0])}, TypeError, "scalar"),
        ({"var_q": -1.0}, ValueError, ">= 0"),
        ({"bandwidth": 0.0}, ValueError, "bandwidth"),
        ({"mean_p": np.array([np.nan, 0.0])}, ValueError, "finite"),
        ({"var_p": "1"}, TypeError, "real"),
    ],
)
def test_gaussian_closed_form_rejects_bad_input(kwargs, exc, match):
    args = {"mean_p": np.zeros(2), "var_p": 1.0, "mean_q": np.ones(2), "var_q": 1.0, "bandwidth": 1.0}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        mmd2_gaussian(**args)

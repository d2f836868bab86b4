"""Correctness tests of the NAMMD API (arXiv 2507.12843)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.core.stats import GaussianKernel, gram_blocks, permutation_indices
from icml26.papers.nammd import (
    NAMMDDrift,
    mmd_closeness_test,
    mmd_two_sample_test,
    nammd,
    nammd_closeness_test,
    nammd_from_gram,
    nammd_population_gaussian,
    nammd_two_sample_test,
    reference_epsilon,
    select_bandwidth,
)
from icml26.papers.nammd.data import gaussian_pair, matched_test_shift
from icml26.papers.nammd.two_sample import permutation_statistics


def _blocks(X, Y, h=1.0):
    Z = np.vstack([X, Y])
    return gram_blocks(GaussianKernel(h)(Z, Z), len(X))


def test_nammd_equals_independent_gram_formula():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(40, 3)), rng.normal(0.4, 1.3, size=(40, 3))
    Kxx, Kyy, Kxy = _blocks(X, Y)
    m = 40
    off = ~np.eye(m, dtype=bool)
    a = Kxx[off].mean()  # ||mu_P||^2_u
    b = Kyy[off].mean()
    mmd2 = a + b - (Kxy[off].mean() + Kxy.T[off].mean())
    st_ = nammd_from_gram(Kxx, Kyy, Kxy)
    assert st_.mmd2 == pytest.approx(mmd2, abs=1e-12)
    assert st_.nammd == pytest.approx(mmd2 / (4 - a - b), abs=1e-12)
    assert st_.denominator == pytest.approx(4 - a - b, abs=1e-12)
    assert nammd(X, Y, GaussianKernel(1.0)) == pytest.approx(st_.nammd, abs=1e-14)


def test_variances_follow_definitions():
    rng = np.random.default_rng(1)
    m = 30
    X, Y = rng.normal(size=(m, 2)), rng.normal(0.8, size=(m, 2))
    Kxx, Kyy, Kxy = _blocks(X, Y)
    s = nammd_from_gram(Kxx, Kyy, Kxy)
    H = Kxx + Kyy - Kxy - Kxy.T
    G = 4 - Kxx - Kyy

    def h1(A):  # slow loops: 4 (V1 - V2^2)
        v1 = sum(sum(A[i, j] for j in range(m)) ** 2 for i in range(m)) / m**3
        v2 = sum(A[i, j] for i in range(m) for j in range(m)) / m**2
        return 4 * (v1 - v2**2)

    A = H - s.nammd * G
    np.fill_diagonal(A, 0)
    assert s.var_mmd == pytest.approx(h1(H))
    assert s.var_delta == pytest.approx(h1(A) / s.denominator**2)
    # "unbiased-ours" variance: m * unbiased Var(MMD^2_u) (zeta_1, zeta_2 by distinct-index loops) / v^2
    # (not the official estimator: that one is tested in test_issue47.py)
    import itertools

    Hd = H.copy()
    np.fill_diagonal(Hd, 0)
    e13 = np.mean([Hd[i, j] * Hd[i, k] for i, j, k in itertools.permutations(range(m), 3)])
    e2 = np.mean([Hd[i, j] ** 2 for i, j in itertools.permutations(range(m), 2)])
    r = Hd.sum(1)
    e0 = (r.sum() ** 2 - 4 * r @ r + 2 * (Hd**2).sum()) / (m * (m - 1) * (m - 2) * (m - 3))
    var_u = 2 / (m * (m - 1)) * (2 * (m - 2) * (e13 - e0) + (e2 - e0))
    assert s.var_mmd_paper == pytest.approx(m * var_u, rel=1e-10)
    assert s.var_paper == pytest.approx(m * var_u / s.denominator**2, rel=1e-10)


def test_official_variance_tracks_the_sampling_variance_of_nammd():
    """The 'unbiased-ours' variance (sigma_MMD / v, like the official one) estimates the spread of
    sqrt(m) NAMMD_hat at small NAMMD, and underestimates it at NAMMD = 0.5, where the delta method stays
    calibrated (README)."""
    from icml26.papers.nammd.data import boundary_shift

    rng = np.random.default_rng(31)
    for eps, paper_ok in ((0.1, True), (0.5, False)):
        shift = boundary_shift(0.1, eps, 2, 1.0)
        vals, vd, vp = [], [], []
        for _ in range(250):
            X, Y = gaussian_pair(rng, 150, 0.1, 0.1, shift, 2)
            s = nammd_from_gram(*_blocks(X, Y))
            vals.append(s.nammd)
            vd.append(s.var_delta)
            vp.append(s.var_paper)
        emp = np.std(vals) * np.sqrt(150)
        assert np.sqrt(np.mean(vd)) == pytest.approx(emp, rel=0.12)
        assert (abs(np.sqrt(np.mean(vp)) / emp - 1) < 0.08) == paper_ok


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.05, 5.0), st.floats(0.0, 20.0))
def test_population_nammd_in_unit_interval(seed, h, shift):
    rng = np.random.default_rng(seed)
    v1, v2 = rng.uniform(0.01, 3, size=2)
    d = int(rng.integers(1, 5))
    pop = nammd_population_gaussian(np.zeros(d), v1, np.eye(d)[0] * shift, v2, h)
    assert -1e-12 <= pop["nammd"] <= 1.0
    assert pop["nammd"] == pytest.approx(pop["mmd2"] / (4 - pop["norm_p"] - pop["norm_q"]))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_nammd_estimate_bounded_and_dirac_is_one(seed):
    rng = np.random.default_rng(seed)
    X, Y = rng.normal(size=(12, 2)), rng.normal(3, size=(12, 2))
    assert nammd(X, Y) <= 1.0
    # two far-apart Dirac masses: NAMMD = 1 (paper Def. 1 remark)
    Xd, Yd = np.zeros((5, 1)), np.full((5, 1), 1e3)
    assert nammd(Xd, Yd, GaussianKernel(1.0)) == pytest.approx(1.0)


def test_estimator_converges_to_closed_form():
    rng = np.random.default_rng(2)
    X, Y = gaussian_pair(rng, 1500, 0.5, 0.5, 1.0, 2)
    exact = nammd_population_gaussian(np.zeros(2), 0.5, np.array([1.0, 0]), 0.5, 1.0)["nammd"]
    assert nammd(X, Y, GaussianKernel(1.0)) == pytest.approx(exact, abs=0.01)


def test_matched_shift_hits_target():
    target = 0.1
    delta = matched_test_shift(0.09, target, 2, 1.0)
    pop = nammd_population_gaussian(np.zeros(2), 0.09, np.array([delta, 0]), 0.09, 1.0)
    assert pop["mmd2"] == pytest.approx(target, abs=1e-10)


def test_closeness_test_threshold_and_pvalue_consistent():
    rng = np.random.default_rng(3)
    X, Y = gaussian_pair(rng, 300, 1.0, 1.0, 1.0, 2)
    k = GaussianKernel(1.0)
    for eps in (0.005, 0.02, 0.05, 0.2):
        r = nammd_closeness_test(X, Y, eps, kernel=k)
        assert r.reject == (r.statistic > r.threshold) == (r.pvalue < 0.05)
        assert r.threshold == pytest.approx(eps + 1.6448536269514722 * r.std / np.sqrt(300))
        assert r.statistic == pytest.approx(nammd(X, Y, k))
    rm = mmd_closeness_test(X, Y, 0.05, kernel=k)
    assert rm.method == "MMD-DCT" and rm.reject == (rm.pvalue < 0.05)
    # monotone in epsilon
    ps = [nammd_closeness_test(X, Y, e, kernel=k).pvalue for e in (0.001, 0.03, 0.06, 0.1)]
    assert all(np.diff(ps) > 0)
    rp = mmd_closeness_test(X, Y, 0.05, kernel=k, variance="paper")
    assert rp.variance == "paper" and rp.std != rm.std


def test_epsilon_zero_is_refused_and_points_to_the_two_sample_test():
    rng = np.random.default_rng(13)
    X, Y = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))
    for fn in (nammd_closeness_test, mmd_closeness_test):
        with pytest.raises(ValueError, match="two_sample_test"):
            fn(X, Y, 0.0)


def test_boundary_size_small_simulation():
    """At the null boundary the rejection rate is near alpha (coarse check, 150 reps, m=200)."""
    rng = np.random.default_rng(4)
    pop = nammd_population_gaussian(np.zeros(2), 1.0, np.array([1.5, 0]), 1.0, 1.0)
    k = GaussianKernel(1.0)
    rej = 0
    for _ in range(150):
        X, Y = gaussian_pair(rng, 200, 1.0, 1.0, 1.5, 2)
        rej += nammd_closeness_test(X, Y, pop["nammd"], kernel=k).reject
    assert rej / 150 <= 0.12


def test_permutation_statistics_match_direct_and_size():
    rng = np.random.default_rng(5)
    m = 20
    X, Y = rng.normal(size=(m, 2)), rng.normal(0.5, size=(m, 2))
    Z = np.vstack([X, Y])
    k = GaussianKernel(1.0)
    perms = permutation_indices(2 * m, 5, rng)
    s = permutation_statistics(k(Z, Z), m, perms)
    for b, p in enumerate(perms):
        direct = nammd_from_gram(*gram_blocks(k(Z[p], Z[p]), m))
        assert s["nammd"][b] == pytest.approx(direct.nammd, abs=1e-12)
        assert s["mmd2"][b] == pytest.approx(direct.mmd2, abs=1e-12)
    # size under P = Q: exact level
    rej = sum(nammd_two_sample_test(rng.normal(size=(30, 2)), rng.normal(size=(30, 2)), n_permutations=50,
                                    seed=i).reject for i in range(80))
    assert rej / 80 <= 0.14
    assert mmd_two_sample_test(X, Y + 2, seed=0).reject


def test_reference_epsilon_and_drift():
    rng = np.random.default_rng(6)
    Xr, Yr = gaussian_pair(rng, 500, 1.0, 1.0, 0.5, 2)
    k = GaussianKernel(1.0)
    eps = reference_epsilon(Xr, Yr, k)
    assert 0 < eps < 1
    assert reference_epsilon(Xr, Yr, k, "mmd") > eps  # v > 1 here
    det = NAMMDDrift(rng.normal(size=(400, 2)), epsilon=eps, kernel=k)
    far = det.predict(rng.normal(size=(400, 2)) + np.array([3.0, 0]))
    assert far["data"]["is_drift"] == 1 and far["data"]["distance"] > eps
    with pytest.raises(ValueError):
        det.predict(rng.normal(size=(10, 3)))


def test_select_bandwidth_prefers_small_bandwidth_for_local_difference():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(150, 1)) * 0.05 + rng.integers(0, 5, (150, 1)) * 2.0
    Y = rng.normal(size=(150, 1)) * 0.15 + rng.integers(0, 5, (150, 1)) * 2.0
    k = select_bandwidth(X, Y)
    assert k.bandwidth_ < GaussianKernel.median(np.vstack([X, Y])).bandwidth_


@pytest.mark.parametrize(
    ("kwargs", "exc"),
    [
        ({"epsilon": 1.0}, ValueError),
        ({"epsilon": -0.1}, ValueError),
        ({"epsilon": float("nan")}, ValueError),
        ({"epsilon": "0.1"}, TypeError),
        ({"epsilon": 0.1, "alpha": 0.0}, ValueError),
        ({"epsilon": 0.1, "alpha": 1.0}, ValueError),
        ({"epsilon": 0.1, "variance": "bogus"}, ValueError),
    ],
)
def test_bad_parameters(kwargs, exc):
    rng = np.random.default_rng(8)
    with pytest.raises(exc):
        nammd_closeness_test(rng.normal(size=(60, 2)), rng.normal(size=(60, 2)), **kwargs)


@pytest.mark.parametrize(
    ("X", "Y"),
    [
        (np.zeros((60, 2)), np.zeros((60, 3))),
        (np.zeros((1, 2)), np.zeros((1, 2))),
        (np.full((60, 2), np.nan), np.zeros((60, 2))),
        (np.full((60, 2), np.inf), np.zeros((60, 2))),
    ],
)
def test_bad_samples(X, Y):
    with pytest.raises(ValueError):
        nammd_closeness_test(X, Y, 0.1)
    with pytest.raises(ValueError):
        nammd_two_sample_test(X, Y)


def test_unequal_sizes_closeness_warns_permutation_uses_all_points():
    from icml26.core.stats import mmd2_unbiased

    rng = np.random.default_rng(9)
    X, Y = rng.normal(size=(80, 2)), rng.normal(1, size=(60, 2))
    with pytest.warns(UserWarning, match="subsampling 80 points to 60"):
        assert nammd_closeness_test(X, Y, 0.1).n == 60
    with pytest.raises(ValueError):
        nammd(X, Y)
    k = GaussianKernel(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no subsampling warning: every point is used
        res = nammd_two_sample_test(X, Y, kernel=k, n_permutations=30, seed=0)
        rm = mmd_two_sample_test(X, Y, kernel=k, n_permutations=30, seed=0)
    assert (res.n_x, res.n_y) == (80, 60)
    Kxx, Kyy, Kxy = _blocks(X, Y)
    a = (Kxx.sum() - 80) / (80 * 79)
    b = (Kyy.sum() - 60) / (60 * 59)
    assert rm.statistic == pytest.approx(mmd2_unbiased(Kxx, Kyy, Kxy), abs=1e-12)
    assert res.statistic == pytest.approx(mmd2_unbiased(Kxx, Kyy, Kxy) / (4 - a - b), abs=1e-12)
    # a permutation of unequal sizes is still an exact-level test
    rej = sum(nammd_two_sample_test(rng.normal(size=(40, 2)), rng.normal(size=(25, 2)), n_permutations=40,
                                    seed=i).reject for i in range(60))
    assert rej / 60 <= 0.15


def test_degenerate_variance_warns_and_small_m_warns():
    X = np.zeros((60, 1))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nammd_closeness_test(X, X.copy(), 0.1, kernel=GaussianKernel(1.0))
    assert any("variance" in str(x.message) for x in w)
    with pytest.warns(RuntimeWarning, match="m = 10"):
        nammd_closeness_test(np.random.default_rng(0).normal(size=(10, 1)),
                             np.random.default_rng(1).normal(size=(10, 1)), 0.1)


def test_non_constant_diagonal_kernel_rejected():
    def linear(A, B):
        return A @ B.T

    rng = np.random.default_rng(10)
    with pytest.raises(ValueError, match="constant diagonal"):
        nammd(rng.normal(size=(20, 2)), rng.normal(size=(20, 2)), linear)


def test_nammd_permutation_order_equals_unpaired_mmd_order():
    """With k(x,x)=K, NAMMD's within-sum denominator makes NAMMD a monotone map of Gretton's MMD^2_u
    over permutations (README: why the permutation tests coincide with a fixed kernel)."""
    from icml26.core.stats import permuted_block_sums

    rng = np.random.default_rng(11)
    m = 25
    Z = np.vstack([rng.normal(size=(m, 2)), rng.normal(0.3, size=(m, 2))])
    K = GaussianKernel(1.0)(Z, Z)
    perms = permutation_indices(2 * m, 60, rng)
    s = permuted_block_sums(K, m, perms)
    gretton = (s.sxx - s.tx + s.syy - s.ty) / (m * (m - 1)) - 2 * s.sxy / m**2
    a = s.sxx - s.tx + s.syy - s.ty
    nammd_unpaired_pairless = (2 * a - (K.sum() - np.trace(K))) / (4 * m * (m - 1) - a)
    assert np.array_equal(np.argsort(gretton), np.argsort(nammd_unpaired_pairless))


def test_learn_bandwidth_torch_objective_matches_numpy_and_improves():
    import torch

    from icml26.core.stats import pairwise_sq_dists
    from icml26.papers.nammd import learn_bandwidth
    from icml26.papers.nammd.bandwidth import _torch_objective

    rng = np.random.default_rng(12)
    X = rng.normal(size=(80, 1)) * 0.05 + rng.integers(0, 4, (80, 1)) * 2.0
    Y = rng.normal(size=(80, 1)) * 0.15 + rng.integers(0, 4, (80, 1)) * 2.0
    Z = np.vstack([X, Y])
    h = 0.7
    st_ = nammd_from_gram(*gram_blocks(GaussianKernel(h)(Z, Z), 80))
    D = torch.as_tensor(pairwise_sq_dists(Z), dtype=torch.float64)
    j = float(_torch_objective(D, 80, torch.tensor(np.log(h), dtype=torch.float64), "nammd", 0.0, "delta"))
    assert j == pytest.approx(st_.nammd / np.sqrt(st_.var_delta), rel=1e-9)
    k = learn_bandwidth(X, Y, steps=30, lr=0.1)
    h_med = GaussianKernel.median(Z).bandwidth_
    j_med = float(_torch_objective(D, 80, torch.tensor(np.log(h_med), dtype=torch.float64), "nammd", 0.0, "delta"))
    j_learn = float(_torch_objective(D, 80, torch.tensor(np.log(k.bandwidth_), dtype=torch.float64), "nammd",
                                     0.0, "delta"))
    assert j_learn >= j_med
    with pytest.raises(ValueError):
        learn_bandwidth(X, Y, statistic="bogus")
    # numpy integers are integers; bad step counts and rates are refused
    assert learn_bandwidth(X, Y, steps=np.int64(3), lr=np.float32(0.1)).bandwidth_ > 0
    for bad in ({"steps": 0}, {"steps": 2.5}, {"steps": True}, {"lr": 0.0}, {"lr": float("nan")}):
        with pytest.raises(ValueError):
            learn_bandwidth(X, Y, **bad)
    # 'official' (alias 'paper') uses the official code's variance, 'unbiased-ours' ours (issue 47)
    lh = torch.tensor(np.log(h), dtype=torch.float64)
    for name in ("official", "paper"):
        jp = float(_torch_objective(D, 80, lh, "nammd", 0.0, name))
        assert jp == pytest.approx(st_.nammd / np.sqrt(st_.var_official), rel=1e-9)
    ju = float(_torch_objective(D, 80, lh, "nammd", 0.0, "unbiased-ours"))
    assert ju == pytest.approx(st_.nammd / np.sqrt(st_.var_paper), rel=1e-9)


def test_power_proxy_is_the_studentized_statistic_and_select_uses_official_grid():
    from icml26.papers.nammd import power_proxy
    from icml26.papers.nammd.bandwidth import DEFAULT_MULTIPLIERS

    rng = np.random.default_rng(14)
    X, Y = rng.normal(size=(50, 2)), rng.normal(0.5, size=(50, 2))
    s = nammd_from_gram(*_blocks(X, Y, 0.8))
    assert power_proxy(X, Y, 0.8) == pytest.approx(np.sqrt(50) * s.nammd / np.sqrt(s.var_delta))
    assert power_proxy(X, Y, 0.8, "mmd", 0.01) == pytest.approx(np.sqrt(50) * (s.mmd2 - 0.01) / np.sqrt(s.var_mmd))
    assert len(DEFAULT_MULTIPLIERS) == 25
    assert DEFAULT_MULTIPLIERS[0] == pytest.approx(0.1) and DEFAULT_MULTIPLIERS[-1] == pytest.approx(10.0)
    h0 = GaussianKernel.median(np.vstack([X, Y])).bandwidth_
    best = max(DEFAULT_MULTIPLIERS, key=lambda c: power_proxy(X, Y, c * h0))
    assert select_bandwidth(X, Y).bandwidth_ == pytest.approx(best * h0)
    with pytest.raises(ValueError):
        power_proxy(X, Y[:40], 1.0)


def test_drift_detector_validates_options_at_construction():
    rng = np.random.default_rng(15)
    ref = rng.normal(size=(100, 2))
    for kwargs, exc in (({"variance": "bogus"}, ValueError), ({"n_permutations": 0}, ValueError),
                        ({"epsilon": "0.1"}, TypeError), ({"epsilon": float("nan")}, ValueError),
                        ({"epsilon": 1.0}, ValueError), ({"kernel": 3}, TypeError),
                        ({"random_state": -1}, ValueError), ({"p_val": 0.0}, ValueError)):
        with pytest.raises(exc):
            NAMMDDrift(ref, **kwargs)
    det = NAMMDDrift(ref, epsilon=0.05, kernel=GaussianKernel(1.0))
    out = det.predict(rng.normal(size=(60, 2)))
    assert out["meta"]["n_ref_used"] == 60 and out["meta"]["n"] == 60
    with pytest.raises(ValueError, match="larger than the reference"):
        det.predict(rng.normal(size=(150, 2)))
    out0 = NAMMDDrift(ref, epsilon=0.0, n_permutations=20).predict(rng.normal(size=(60, 2)))
    assert out0["meta"]["n_ref_used"] == 100 and out0["meta"]["method"] == "NAMMD-permutation"


def test_experiment_decisions_come_from_the_public_api(monkeypatch):
    """Rule 6: a wrong variance inside the API must move the experiment's NAMMD arm."""
    import dataclasses

    from icml26.papers.nammd import closeness
    from icml26.papers.nammd import experiment as E

    c = dataclasses.replace(E.Config.smoke(), reps=6, epsilons=(0.3,), test_var_factors=(0.25, 1.0))

    def arms(config):
        metrics = {a: {} for a in E.ARMS}
        E._gaussian_section(config, np.random.default_rng(0), metrics, {})
        return metrics

    good = arms(c)
    monkeypatch.setattr(closeness, "nammd_variance", lambda st, variance="delta": 1e4)
    bad = arms(c)
    assert good["nammd"]["dct_power_eps0.3_f0.25"] > 0.5 and bad["nammd"]["dct_power_eps0.3_f0.25"] == 0.0
    assert bad["mmd"]["dct_power_eps0.3_f0.25"] == good["mmd"]["dct_power_eps0.3_f0.25"]

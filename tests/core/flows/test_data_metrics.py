"""Mixture data and its exact velocity (vs Monte Carlo), digits, and the sample-quality metrics."""

import math

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal

from icml26.core.flows import (
    DigitsFeatures,
    GaussianMixture,
    c2st,
    classifier_fid,
    digits,
    frechet_distance,
    frechet_from_features,
    mmd_rbf,
    norm_ratio,
    sliced_wasserstein,
    std_ratio,
    toy2d,
)


def test_marginal_velocity_matches_monte_carlo():
    """v*(x, t) = E[x1 - x0 | x_t = x], estimated by self-normalised importance sampling over x1."""
    gm = GaussianMixture.random(2, 3, mean_scale=1.5, std=0.4, seed=3)
    g = torch.Generator().manual_seed(0)
    x1 = gm.sample(400_000, g)
    for t in (0.1, 0.5, 0.8):
        x = torch.tensor([[0.3, -0.7], [1.0, 0.5]], dtype=torch.float64)
        exact = gm.marginal_velocity(x, torch.full((2,), t, dtype=torch.float64))
        for i in range(2):
            x0 = (x[i] - t * x1) / (1 - t)  # the noise that would put x1 at x at time t
            logw = -0.5 * (x0**2).sum(1)  # p(x_t = x | x1) is proportional to N(x0; 0, I)
            w = torch.softmax(logw, 0)
            mc = (w[:, None] * (x1 - x0)).sum(0)
            torch.testing.assert_close(exact[i], mc, atol=0.03, rtol=0.03)


def test_mixture_log_prob_and_sampling():
    gm = GaussianMixture.random(3, 2, seed=1)
    x = torch.randn(5, 3, dtype=torch.float64)
    ref = np.log(sum(0.5 * multivariate_normal(gm.means[k].numpy(), gm.stds[k].item() ** 2 * np.eye(3)).pdf(x.numpy())
                     for k in range(2)))
    np.testing.assert_allclose(gm.log_prob(x).numpy(), ref, rtol=1e-10)
    s = gm.sample(50_000, torch.Generator().manual_seed(0))
    np.testing.assert_allclose(s.mean(0).numpy(), gm.means.mean(0).numpy(), atol=0.03)
    with pytest.raises(ValueError):
        GaussianMixture(torch.zeros(2, 3), torch.tensor([1.0, -1.0]), torch.ones(2))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        gm.marginal_velocity(x, torch.full((5,), 1.2, dtype=torch.float64))
    v1 = gm.marginal_velocity(x, torch.ones(5, dtype=torch.float64))
    assert torch.isfinite(v1).all()


def test_digits_and_toys():
    d = digits(seed=0)
    assert d["train"].shape == (1197, 64) and d["val"].shape == (300, 64) and d["test"].shape == (300, 64)
    assert float(d["train"].min()) == -1.0 and float(d["train"].max()) == 1.0
    for name in ("8gaussians", "moons", "checkerboard"):
        assert toy2d(name, 100).shape == (100, 2)
    with pytest.raises(ValueError):
        toy2d("spiral", 10)


@pytest.mark.parametrize("p", [1, 2])
def test_sliced_wasserstein_equal_sizes_matches_pot(p):
    """The sorted-samples path (equal sizes) gives POT's number on the same directions."""
    import ot

    rng = np.random.default_rng(p)
    a, b = rng.normal(size=(300, 7)), 0.5 + 2 * rng.standard_t(3, size=(300, 7))
    for seed in (0, 5):
        ref = ot.sliced_wasserstein_distance(a, b, n_projections=64, seed=seed, p=p)
        assert sliced_wasserstein(a, b, n_proj=64, seed=seed, p=p) == pytest.approx(ref, rel=1e-10)
    # unequal sizes are delegated to POT
    ref = ot.sliced_wasserstein_distance(a, b[:200], n_projections=32, seed=1)
    assert sliced_wasserstein(a, b[:200], n_proj=32, seed=1) == pytest.approx(ref, rel=1e-12)
    with pytest.raises(ValueError, match="n_proj"):
        sliced_wasserstein(a, b, n_proj=0)


def test_sliced_wasserstein():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2000, 1))
    assert sliced_wasserstein(a, a, n_proj=8) == pytest.approx(0.0, abs=1e-12)
    # 1-D: W2(N(0,1), N(m,1)) = |m|
    assert sliced_wasserstein(a, a + 1.5, n_proj=8) == pytest.approx(1.5, abs=1e-9)
    with pytest.raises(ValueError, match="dimension"):
        sliced_wasserstein(a, rng.normal(size=(10, 2)))
    with pytest.raises(ValueError, match="NaN"):
        sliced_wasserstein(a, np.full((10, 1), np.nan))


def test_mmd_rbf_against_brute_force():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(30, 2)), rng.normal(1.0, 1.0, size=(40, 2))
    h = 0.8

    def k(x, y):
        return math.exp(-((x - y) ** 2).sum() / (2 * h * h))

    kaa = sum(k(a[i], a[j]) for i in range(30) for j in range(30) if i != j) / (30 * 29)
    kbb = sum(k(b[i], b[j]) for i in range(40) for j in range(40) if i != j) / (40 * 39)
    kab = sum(k(x, y) for x in a for y in b) / (30 * 40)
    assert mmd_rbf(a, b, bandwidth=h) == pytest.approx(kaa + kbb - 2 * kab, rel=1e-10)
    assert mmd_rbf(a, b) > mmd_rbf(a, rng.normal(size=(40, 2)))
    with pytest.raises(ValueError):
        mmd_rbf(a, b, bandwidth=-1.0)


def test_frechet_and_classifier_metrics():
    # diagonal Gaussians: ||mu1 - mu2||^2 + sum (s1 - s2)^2
    fd = frechet_distance(np.zeros(2), np.diag([1.0, 4.0]), np.array([1.0, 2.0]), np.diag([4.0, 1.0]))
    assert fd == pytest.approx(5.0 + 1.0 + 1.0)
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5000, 3))
    assert frechet_from_features(a, rng.normal(size=(5000, 3))) < 0.02
    b = rng.normal(size=(300, 2))
    assert abs(c2st(b, rng.normal(size=(300, 2)), classifier="logistic") - 0.5) < 0.1
    assert c2st(b, b + 4.0, classifier="logistic") > 0.95
    assert norm_ratio(2 * a, a) == pytest.approx(2.0)
    assert std_ratio(0.5 * a, a) == pytest.approx(0.5)


def _random_spd(rng, d):
    a = rng.normal(size=(d, d))
    return a @ a.T + 0.1 * np.eye(d)


@pytest.mark.parametrize("d", [2, 5, 16])
def test_frechet_distance_matches_scipy_on_non_commuting_pairs(d):
    """Against the symmetric closed form tr(C1 + C2 - 2 (C1^1/2 C2 C1^1/2)^1/2) with scipy's
    sqrtm, on random SPD pairs that do not commute (where the shortcut tr(C1^1/2 C2^1/2) that is
    exact only for commuting covariances is wrong)."""
    from scipy import linalg

    rng = np.random.default_rng(d)
    for _ in range(5):
        c1, c2 = _random_spd(rng, d), _random_spd(rng, d)
        assert np.abs(c1 @ c2 - c2 @ c1).max() > 1e-3  # they do not commute
        mu1, mu2 = rng.normal(size=d), rng.normal(size=d)
        r1 = np.real(linalg.sqrtm(c1))
        ref = (((mu1 - mu2) ** 2).sum() + np.trace(c1) + np.trace(c2)
               - 2 * np.trace(np.real(linalg.sqrtm(r1 @ c2 @ r1))))
        fd = frechet_distance(mu1, c1, mu2, c2)
        assert fd == pytest.approx(ref, rel=1e-7, abs=1e-9)
        shortcut = (((mu1 - mu2) ** 2).sum() + np.trace(c1) + np.trace(c2)
                    - 2 * np.trace(r1 @ np.real(linalg.sqrtm(c2))))
        assert abs(shortcut - ref) > 1e-3 * max(1.0, abs(ref))  # the test can tell them apart
        assert frechet_distance(mu2, c2, mu1, c1) == pytest.approx(fd, rel=1e-7)  # symmetric
        assert fd >= -1e-9


def _slow_marginal_velocity(gm, x, t):
    """The textbook form with an (n, K, D) tensor: posterior-weighted conditional means."""
    tt = t[:, None]
    var = (1 - tt) ** 2 + tt**2 * gm.stds[None, :] ** 2
    sq = ((x[:, None, :] - tt[:, :, None] * gm.means[None]) ** 2).sum(-1)
    logp = torch.log(gm.weights)[None] - 0.5 * sq / var - 0.5 * gm.dim * torch.log(2 * math.pi * var)
    post = torch.softmax(logp, dim=1)
    coef = (tt * gm.stds[None, :] ** 2 - (1 - tt)) / var
    cond = gm.means[None] + coef[:, :, None] * (x[:, None, :] - tt[:, :, None] * gm.means[None])
    return (post[:, :, None] * cond).sum(1)


@pytest.mark.parametrize("d", [1, 5, 64])
def test_marginal_velocity_matches_the_textbook_form(d):
    gm = GaussianMixture(torch.randn(4, d, dtype=torch.float64), torch.tensor([0.2, 0.5, 1.0, 0.05],
                         dtype=torch.float64), torch.tensor([1.0, 2.0, 0.5, 1.0], dtype=torch.float64))
    g = torch.Generator().manual_seed(d)
    x = 2 * torch.randn(300, d, generator=g, dtype=torch.float64)
    t = torch.rand(300, generator=g, dtype=torch.float64)
    t[:3] = torch.tensor([0.0, 1.0, 0.999], dtype=torch.float64)
    torch.testing.assert_close(gm.marginal_velocity(x, t), _slow_marginal_velocity(gm, x, t),
                               atol=1e-11, rtol=1e-10)


def test_marginal_velocity_input_errors():
    gm = GaussianMixture.random(3, 2, seed=0)
    x = torch.randn(4, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="NaN"):
        gm.marginal_velocity(x, torch.tensor([0.1, float("nan"), 0.2, 0.3], dtype=torch.float64))
    with pytest.raises(ValueError, match="NaN"):
        gm.marginal_velocity(x * float("nan"), torch.full((4,), 0.5, dtype=torch.float64))
    with pytest.raises(TypeError):
        gm.marginal_velocity(x, torch.zeros(4, dtype=torch.int64))
    with pytest.raises(ValueError, match="shape"):
        gm.marginal_velocity(x, torch.zeros(3, dtype=torch.float64))


def test_digits_features():
    d = digits(seed=0)
    f = DigitsFeatures(seed=0, max_iter=60).fit(d["train"], d["train_y"])
    assert f.features(d["val"]).shape == (300, 64)
    assert f.confidence(d["test"]) > 0.6
    same = classifier_fid(d["val"], d["test"], f.features)
    noise = classifier_fid(torch.rand(300, 64) * 2 - 1, d["test"], f.features)
    assert same < noise


def test_c2st_quadratic_detects_a_variance_change_that_logistic_cannot():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(400, 2)), 2.0 * rng.normal(size=(400, 2))
    assert c2st(a, b, classifier="quadratic") > 0.7
    assert abs(c2st(a, b, classifier="logistic") - 0.5) < 0.1
    assert abs(c2st(a, rng.normal(size=(400, 2)), classifier="quadratic") - 0.5) < 0.1

"""Correctness of the NPPR API: budget, closed forms, slow references, exact AR, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from torch import nn

from icml26.papers.nppr import (
    BicubicDecoder,
    GMMPerturbation,
    NPPREstimator,
    ar_pgd,
    clopper_pearson,
    exact_ar_grid,
    pgd_attack,
    pr_fixed,
    prob_accuracy,
    project_to_ball,
    softplus_margin_loss,
)
from icml26.papers.nppr.models import (
    load_digits_split,
    load_moons_split,
    make_model,
    train_classifier,
)


class Linear(nn.Module):
    """A fixed linear classifier with a ``features`` method (identity on the flat input)."""

    def __init__(self, W, b):
        super().__init__()
        self.W = nn.Parameter(torch.as_tensor(W, dtype=torch.float32))
        self.b = nn.Parameter(torch.as_tensor(b, dtype=torch.float32))

    def features(self, x):
        return x.flatten(1)

    def forward(self, x):
        return x.flatten(1) @ self.W.T + self.b


@pytest.fixture(scope="module")
def digits():
    torch.manual_seed(0)
    Xtr, ytr, Xte, yte = load_digits_split(0, n_train=500)
    model = train_classifier(make_model("cnn", 0), Xtr, ytr, epochs=6, seed=0)
    return model, Xtr, ytr, Xte[:150], yte[:150]


@pytest.fixture(scope="module")
def fitted(digits):
    model, Xtr, ytr, _, _ = digits
    return NPPREstimator(model, model.features, eps=0.1, cond="xy", latent_dim=16, hidden_dim=32,
                         y_emb_dim=16, n_train_samples=4, epochs=2, lr=1e-2, batch_size=64,
                         seed=3).fit(Xtr[:300], ytr[:300])


# ------------------------------------------------------------------------------------- budget
@settings(max_examples=30, deadline=None)
@given(st.floats(1e-3, 2.0), st.sampled_from(["linf", "l2"]), st.integers(0, 10_000),
       st.floats(0.1, 100.0))
def test_project_to_ball_stays_in_ball(eps, norm, seed, scale):
    u = torch.randn(5, 1, 4, 4, generator=torch.Generator().manual_seed(seed)) * scale
    d = project_to_ball(u, eps, norm)
    n = d.flatten(1).abs().amax(1) if norm == "linf" else d.flatten(1).norm(dim=1)
    assert torch.all(n <= eps * (1 + 1e-5))
    if norm == "l2":  # on the sphere
        assert torch.allclose(n, torch.full_like(n, eps), rtol=1e-5)


def test_perturbations_in_ball_and_range(digits, fitted):
    _, _, _, Xte, yte = digits
    d = fitted.perturbations(Xte[:20], yte[:20], n=30)
    assert d.shape == (30, 20, 1, 8, 8)
    assert d.abs().max() <= 0.1 + 1e-6
    xp = Xte[:20].unsqueeze(0) + d
    assert xp.min() >= 0.0 and xp.max() <= 1.0


def test_l2_perturbations_in_ball(digits):
    model, Xtr, ytr, Xte, yte = digits
    est = NPPREstimator(model, model.features, eps=0.5, norm="l2", cond="x", latent_dim=8,
                        hidden_dim=16, n_train_samples=2, epochs=1, batch_size=128).fit(Xtr[:200], ytr[:200])
    d = est.perturbations(Xte[:10], yte[:10], n=8)
    assert d.flatten(2).norm(dim=-1).max() <= 0.5 + 1e-5


def test_fixed_distributions_in_ball():
    model = Linear(torch.randn(3, 16), torch.zeros(3))
    X = torch.rand(40, 16)
    y = model(X).argmax(1)
    for dist in ("uniform", "gaussian", "laplace"):
        for norm, eps in (("linf", 0.1), ("l2", 0.3)):
            r = pr_fixed(model, X, y, eps, norm, dist, n=10, seed=1)
            assert 0 <= r.mean <= 1 and r.n_inputs == 40


# ------------------------------------------------------------------------- closed forms / refs
def test_softplus_margin_loss_matches_loop():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 5, generator=g) * 4
    y = torch.tensor([0, 4, 2, 2])
    ref = 0.0
    for s in range(3):
        for i in range(4):
            z = logits[s, i]
            other = max(float(z[j]) for j in range(5) if j != int(y[i]))
            ref += math.log1p(math.exp(float(z[y[i]]) - other + 1.0))
    assert float(softplus_margin_loss(logits, y, 1.0)) == pytest.approx(ref / 12, rel=1e-5)


def test_single_component_sample_is_gaussian_closed_form():
    mu, ls = torch.randn(2, 1, 3), torch.randn(2, 1, 3) * 0.3
    from icml26.papers.nppr import MixtureParams

    p = MixtureParams(torch.zeros(2, 1), mu, ls)
    z = GMMPerturbation.sample(p, 4000, torch.Generator().manual_seed(0))
    assert torch.allclose(z.mean(0), mu[:, 0], atol=0.1)
    assert torch.allclose(z.std(0), ls[:, 0].exp(), rtol=0.08)
    # the relaxed sample with K = 1 is exactly mu + sigma * xi
    zr = GMMPerturbation.rsample(p, 4000, tau=0.5, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(zr.mean(0), mu[:, 0], atol=0.1)


def test_hard_sample_picks_components_by_weight():
    mu = torch.tensor([[[-10.0], [10.0]]])
    p_logits = torch.log(torch.tensor([[0.25, 0.75]]))
    from icml26.papers.nppr import MixtureParams

    z = GMMPerturbation.sample(MixtureParams(p_logits, mu, torch.full((1, 2, 1), -3.0)), 8000,
                               torch.Generator().manual_seed(1))
    assert float((z > 0).float().mean()) == pytest.approx(0.75, abs=0.02)
    # relaxed sampling at a small temperature approaches the same mixture
    zr = GMMPerturbation.rsample(MixtureParams(p_logits, mu, torch.full((1, 2, 1), -3.0)), 8000,
                                 tau=0.05, generator=torch.Generator().manual_seed(1))
    assert float((zr > 0).float().mean()) == pytest.approx(0.75, abs=0.03)


def test_bicubic_decoder_parameter_free_equals_interpolate():
    dec = BicubicDecoder(16, (1, 8, 8), trainable=False)
    z = torch.randn(3, 5, 16)
    ref = F.interpolate(z.reshape(15, 1, 4, 4), size=(8, 8), mode="bicubic", align_corners=False)
    assert torch.allclose(dec(z), ref.view(3, 5, 1, 8, 8))


def _close(a, b):
    return torch.allclose(a, b, rtol=1e-5, atol=1e-6)


def test_conditioning_structure():
    """Rows that share a condition get the same parameters (up to float rounding: batched
    matrix products may differ per row in the last bits on other BLAS builds)."""
    feats = torch.randn(6, 5)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    none = GMMPerturbation(3, 5, 4, 2, "none").eval()
    p = none(feats, y)
    assert _close(p.mu[0], p.mu[5]) and _close(p.pi_logits[0], p.pi_logits[3])
    ym = GMMPerturbation(3, 5, 4, 2, "y").eval()
    p = ym(feats, y)
    assert _close(p.pi_logits[0], p.pi_logits[1]) and not _close(p.pi_logits[0], p.pi_logits[2])
    assert _close(p.mu[0], p.mu[5])
    xm = GMMPerturbation(3, 5, 4, 2, "x").eval()
    p = xm(feats, y)
    assert not _close(p.mu[0], p.mu[1])
    xy = GMMPerturbation(3, 5, 4, 2, "xy").eval()
    p = xy(feats, y)
    assert _close(p.pi_logits[0], p.pi_logits[1]) and not _close(p.mu[0], p.mu[1])
    lo, hi = xy.logstd_bounds
    big = xy(feats * 1e4, y)
    assert big.log_std.min() >= lo - 1e-6 and big.log_std.max() <= hi + 1e-6


def test_evaluate_equals_slow_reference(digits, fitted):
    model, _, _, Xte, yte = digits
    X, y = Xte[:30], yte[:30]
    res = fitted.evaluate(X, y, n=25, only_correct=False, seed=11)
    # slow reference: draw per input one at a time with the same generator stream
    gen = torch.Generator().manual_seed(11 + 3)
    with torch.no_grad():
        p = fitted.gmm_(model.features(X), y)
        z = GMMPerturbation.sample(p, 25, gen)
        delta = project_to_ball(fitted.decoder_(z), 0.1, "linf", event_ndim=3)
        per = []
        for i in range(30):
            hits = 0
            for s in range(25):
                xp = (X[i] + delta[s, i]).clamp(0, 1).unsqueeze(0)
                hits += int(model(xp).argmax(1).item() == int(y[i]))
            per.append(hits / 25)
    np.testing.assert_allclose(res.per_input, per)
    assert res.mean == pytest.approx(np.mean(per))


def test_pr_fixed_equals_slow_reference():
    torch.manual_seed(0)
    model = Linear(torch.randn(3, 6), torch.randn(3))
    X = torch.rand(12, 6)
    y = model(X).argmax(1)
    r = pr_fixed(model, X, y, 0.3, dist="uniform", n=50, seed=4, only_correct=False)
    gen = torch.Generator().manual_seed(4)
    delta = (torch.rand((50, 12, 6), generator=gen) * 2 - 1) * 0.3
    with torch.no_grad():
        pred = model((X.unsqueeze(0) + delta).clamp(0, 1).flatten(0, 1)).argmax(1).view(50, 12)
    np.testing.assert_allclose(r.per_input, (pred == y).double().mean(0).numpy())


def test_tiny_budget_gives_clean_accuracy(digits):
    model, _, _, Xte, yte = digits
    r = pr_fixed(model, Xte, yte, 1e-6, n=5)
    assert r.mean == 1.0 and r.ci[1] == 1.0


def test_clopper_pearson_matches_scipy():
    for k, n in ((0, 10), (3, 10), (50, 100), (100, 100), (7, 2000)):
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        assert clopper_pearson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_prob_accuracy_closed_form():
    pa = prob_accuracy([1.0, 0.99, 0.9, 0.5, 0.0])
    assert pa == {0.2: 0.6, 0.1: 0.4, 0.05: 0.4, 0.01: 0.2}


def test_pgd_matches_linear_closed_form():
    """Binary linear model: robust under L-inf iff margin > eps * ||w1 - w0||_1."""
    torch.manual_seed(1)
    W = torch.randn(2, 5)
    model = Linear(W, torch.zeros(2))
    X = torch.randn(200, 5)
    y = model(X).argmax(1)
    eps = 0.3
    w = (W[1] - W[0]) * (2 * y.float() - 1).unsqueeze(1)  # oriented towards the true class
    robust = (X * w).sum(1) > eps * (W[1] - W[0]).abs().sum()
    r = ar_pgd(model, X, y, eps, steps=20, clip_range=None, only_correct=False)
    np.testing.assert_array_equal(r.per_input.astype(bool), robust.numpy())
    xa = pgd_attack(model, X, y, eps, clip_range=None)
    assert (xa - X).abs().max() <= eps + 1e-6


def test_pgd_l2_matches_linear_closed_form():
    """Binary linear model, L2 budget (issue 50: no test checked the L2 projection). Every gradient
    points along -w (w = w_y - w_other), so PGD from a zero start walks straight down -w/||w||_2
    and, after ceil(eps / alpha) steps, sits on the sphere: x_adv = x - eps w / ||w||_2 for every
    input, and an input is robust iff its margin exceeds eps ||w||_2."""
    torch.manual_seed(2)
    W = torch.randn(2, 5)
    model = Linear(W, torch.zeros(2))
    X = torch.randn(200, 5)
    y = model(X).argmax(1)
    eps = 0.4
    w = (W[1] - W[0]) * (2 * y.float() - 1).unsqueeze(1)
    xa = pgd_attack(model, X, y, eps, norm="l2", steps=6, random_start=False, clip_range=None)
    expected = X - eps * w / w.norm(dim=1, keepdim=True)
    torch.testing.assert_close(xa, expected, atol=1e-5, rtol=0)
    # from a random start the iterates converge to the same point; robust iff margin > eps ||w||_2
    r = ar_pgd(model, X, y, eps, norm="l2", steps=40, clip_range=None, only_correct=False)
    margin, radius = (X * w).sum(1), eps * (W[1] - W[0]).norm()
    clear = (margin - radius).abs() > 0.02 * radius  # not within 2 % of the boundary
    np.testing.assert_array_equal(r.per_input.astype(bool)[clear.numpy()], (margin > radius)[clear].numpy())
    xr = r.extra["x_adv"]
    assert float((xr - X).norm(dim=1).max()) <= eps * (1 + 1e-5)


def test_pgd_l2_projection_is_per_input_and_radial():
    """The PGD projection onto the L2 ball: an input inside the ball is left alone, one outside is
    scaled back to the sphere along its own direction, each by its own norm (not the batch's)."""
    from icml26.papers.nppr.robustness import _project

    eps = 0.5
    u = torch.randn(3, 1, 4, 4, generator=torch.Generator().manual_seed(0))
    u = u / u.flatten(1).norm(dim=1).view(-1, 1, 1, 1)
    d = u * torch.tensor([0.3, 2.0, 40.0]).view(-1, 1, 1, 1)  # norms 0.3 (inside), 2 and 40
    p = _project(d, eps, "l2")
    torch.testing.assert_close(p[0], d[0])
    torch.testing.assert_close(p[1:], eps * u[1:], atol=1e-6, rtol=0)
    # and through pgd_attack: a zero-gradient classifier leaves the random start, which must be
    # projected per input onto the ball (no input's norm above eps, each direction kept)
    clf = Linear(torch.zeros(3, 16), torch.zeros(3))
    X = torch.zeros(8, 16)
    adv = pgd_attack(clf, X, torch.zeros(8, dtype=torch.long), eps, norm="l2", steps=1, seed=3,
                     clip_range=None)
    start = (torch.rand(X.shape, generator=torch.Generator().manual_seed(3)) * 2 - 1) * eps
    expected = start * torch.clamp(eps / start.norm(dim=1, keepdim=True), max=1.0)
    torch.testing.assert_close(adv, expected, atol=1e-6, rtol=0)


# ------------------------------------------------------------------------- AR <= NPPR, monotone
def test_exact_ar_below_nppr_on_moons():
    Xtr, ytr, Xte, yte = load_moons_split(0, n_train=300, n_test=40)
    model = train_classifier(make_model("moons_mlp", 0), Xtr, ytr, epochs=40, lr=3e-3, seed=0)
    eps = 0.15
    ar = exact_ar_grid(model, Xte, yte, eps, grid=61)
    est = NPPREstimator(model, model.features, eps=eps, cond="x", latent_dim=4, hidden_dim=16,
                        y_emb_dim=8, n_train_samples=4, epochs=5, lr=1e-2, batch_size=32,
                        clip_range=None).fit(Xtr, ytr)
    nppr = est.evaluate(Xte, yte, n=50)
    pr = pr_fixed(model, Xte, yte, eps, n=50, clip_range=None)
    assert np.array_equal(ar.indices, nppr.indices)
    # per input: robust everywhere in the ball => every draw is classified correctly
    assert np.all(nppr.per_input[ar.per_input == 1] == 1.0)
    assert ar.mean <= nppr.mean and ar.mean <= pr.mean
    # the grid agrees with a dense check at the PGD points: PGD-broken inputs are not robust
    pgd = ar_pgd(model, Xte, yte, eps, steps=50, clip_range=None)
    assert np.all(ar.per_input <= pgd.per_input)


def test_monotone_in_eps_linear_model():
    """Coupled draws on a linear model: correct at eps implies correct at every smaller eps."""
    torch.manual_seed(2)
    model = Linear(torch.randn(4, 8), torch.zeros(4))
    X = torch.randn(60, 8)
    y = model(X).argmax(1)
    est = NPPREstimator(model, model.features, eps=0.5, cond="xy", latent_dim=4, hidden_dim=8,
                        y_emb_dim=4, n_train_samples=4, epochs=3, batch_size=32, lr=1e-2,
                        clip_range=None).fit(X, y)
    grid = [0.05, 0.2, 0.5, 1.0, 2.0]
    nppr = [est.evaluate(X, y, n=40, seed=0, eps=e).mean for e in grid]
    assert all(a >= b for a, b in zip(nppr, nppr[1:], strict=False))
    for dist in ("uniform", "gaussian", "laplace"):
        pr = [pr_fixed(model, X, y, e, dist=dist, n=40, seed=0, clip_range=None).mean for e in grid]
        assert all(a >= b for a, b in zip(pr, pr[1:], strict=False))


def test_training_lowers_pr_on_digits(digits, fitted):
    """The trained GMM is more conservative than the untrained one (the mechanism at work)."""
    model, Xtr, ytr, Xte, yte = digits
    init = NPPREstimator(model, model.features, eps=0.1, cond="xy", latent_dim=16, hidden_dim=32,
                         y_emb_dim=16, epochs=0, seed=3).fit(Xtr[:300], ytr[:300])
    assert fitted.evaluate(Xte, yte, n=40).mean < init.evaluate(Xte, yte, n=40).mean
    assert len(fitted.loss_history_) == 2


# ---------------------------------------------------------------------------------- determinism
def test_seeds_give_identical_results(digits):
    model, Xtr, ytr, Xte, yte = digits
    kw = dict(eps=0.1, cond="x", latent_dim=8, hidden_dim=16, n_train_samples=2, epochs=1,
              batch_size=128, seed=5)
    a = NPPREstimator(model, model.features, **kw).fit(Xtr[:200], ytr[:200])
    b = NPPREstimator(model, model.features, **kw).fit(Xtr[:200], ytr[:200])
    ra, rb = a.evaluate(Xte, yte, n=20), b.evaluate(Xte, yte, n=20)
    np.testing.assert_array_equal(ra.per_input, rb.per_input)
    assert pr_fixed(model, Xte, yte, 0.1, seed=2, n=10).mean == pr_fixed(model, Xte, yte, 0.1, seed=2, n=10).mean
    # a fresh sampling seed gives a different Monte-Carlo draw
    assert not np.array_equal(ra.per_input, a.evaluate(Xte, yte, n=20, seed=99).per_input) or \
        ra.per_input.min() == 1.0


# ------------------------------------------------------------------------------------ bad input
def test_bad_inputs(digits, fitted):
    model, Xtr, ytr, Xte, yte = digits
    with pytest.raises(ValueError, match="eps"):
        NPPREstimator(model, model.features, eps=0.0).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="eps"):
        pr_fixed(model, Xte, yte, -0.1)
    with pytest.raises(ValueError, match="norm"):
        NPPREstimator(model, model.features, eps=0.1, norm="l1").fit(Xtr, ytr)
    with pytest.raises(ValueError, match="norm"):
        project_to_ball(torch.zeros(2, 3), 0.1, "linfinity")
    with pytest.raises(ValueError, match="shape"):
        fitted.evaluate(Xte, yte[:-1])
    with pytest.raises(ValueError, match="out of range"):
        pr_fixed(model, Xte, torch.full_like(yte, 10), 0.1)
    with pytest.raises(ValueError, match="out of range"):
        fitted.evaluate(Xte, torch.full_like(yte, 12))
    with pytest.raises(ValueError, match="non-negative"):
        pr_fixed(model, Xte, -torch.ones_like(yte), 0.1)
    bad = Xte.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        fitted.evaluate(bad, yte)
    with pytest.raises(ValueError, match="logits"):
        pr_fixed(lambda x: x.flatten(1)[:, :1].squeeze(1), Xte, yte, 0.1)
    with pytest.raises(ValueError, match="logits"):
        NPPREstimator(lambda x: x[:1].flatten(1), eps=0.1, cond="none").fit(Xtr, ytr)
    with pytest.raises(ValueError, match="cond"):
        NPPREstimator(model, model.features, eps=0.1, cond="z").fit(Xtr, ytr)
    with pytest.raises(ValueError, match="feature_extractor"):
        NPPREstimator(model, None, eps=0.1, cond="x").fit(Xtr, ytr)
    with pytest.raises(ValueError, match="dist"):
        pr_fixed(model, Xte, yte, 0.1, dist="cauchy")
    with pytest.raises(TypeError):
        pr_fixed(model, Xte, yte.float() + 0.5, 0.1)
    with pytest.raises(TypeError):
        pr_fixed(model, "abc", yte, 0.1)
    with pytest.raises(RuntimeError, match="not fitted"):
        NPPREstimator(model, model.features, eps=0.1).evaluate(Xte, yte)
    with pytest.raises(ValueError, match="shape"):
        fitted.evaluate(Xte.view(-1, 64), yte)
    with pytest.raises(ValueError, match="2-D"):
        exact_ar_grid(model, Xte, yte, 0.1)


def test_pgd_moves_pixels_at_the_edge_of_the_range():
    """Pixels at 0 that the random start pushes below 0 must not freeze behind the clamp."""
    from icml26.papers.nppr.robustness import pgd_attack

    X = torch.zeros(8, 16)
    y = torch.zeros(8, dtype=torch.long)
    # class 1's logit grows with every pixel: the loss of label 0 increases with +x everywhere
    clf = torch.nn.Linear(16, 2, bias=False)
    with torch.no_grad():
        clf.weight.copy_(torch.stack([torch.zeros(16), torch.ones(16)]))
    adv = pgd_attack(clf, X, y, eps=0.1, steps=10, backend="internal", seed=0)
    assert torch.allclose(adv, torch.full_like(X, 0.1))


# ------------------------------------------------------ fixed baselines: values from closed forms
def _threshold_model():
    """1-D classifier: class 1 iff x > 0.5 (logits (0.5 - x, x - 0.5))."""
    return Linear(torch.tensor([[-1.0], [1.0]]), torch.tensor([0.5, -0.5]))


@pytest.mark.parametrize("dist", ["uniform", "gaussian", "laplace", "corners"])
def test_fixed_pr_matches_closed_form(dist):
    """PR of x = 0.5 + m (true class 1) is P(delta > -m): a wrong scale or law moves it.

    uniform U[-e, e]: (e + m) / 2e; Gaussian N(0, e^2) clamped: Phi(m / e); Laplace(0, e)
    clamped: 1 - exp(-m / e) / 2; corners (+-e): 1/2 for 0 < m < e.
    """
    eps = 0.2
    margins = np.array([0.02, 0.06, 0.1, 0.15, 0.19])
    X = torch.tensor(0.5 + margins, dtype=torch.float32).view(-1, 1)
    y = torch.ones(len(margins), dtype=torch.long)
    n = 40_000
    r = pr_fixed(_threshold_model(), X, y, eps, dist=dist, n=n, seed=3, only_correct=False)
    expected = {"uniform": (eps + margins) / (2 * eps),
                "gaussian": stats.norm.cdf(margins / eps),
                "laplace": 1 - 0.5 * np.exp(-margins / eps),
                "corners": np.full_like(margins, 0.5)}[dist]
    tol = 4 * np.sqrt(expected * (1 - expected) / n) + 1e-3
    np.testing.assert_array_less(np.abs(r.per_input - expected), tol)


def test_gaussian_baseline_sigma_and_clamp_closed_form():
    """The Gaussian baseline is N(0, eps^2) per coordinate clamped to [-eps, eps]: the mass at
    the clamp is 2 (1 - Phi(1)) = 0.3173 and the standard deviation of the clamped law is
    eps * sqrt(1 - 2 phi(1)) (E[X^2; |X| < 1] = 2 Phi(1) - 1 - 2 phi(1), plus the clamped mass
    2 (1 - Phi(1)) at 1; a sigma of 1, or of eps / 2, fails both)."""
    from icml26.papers.nppr.robustness import fixed_sampler

    eps = 0.1
    d = fixed_sampler("gaussian", eps, "linf", torch.Generator().manual_seed(0))(
        torch.zeros(50, 1, 8, 8), None, 40).flatten().double()
    at_clamp = float((d.abs() >= eps - 1e-7).double().mean())
    assert at_clamp == pytest.approx(2 * (1 - stats.norm.cdf(1.0)), abs=0.005)
    sd = eps * math.sqrt(1 - 2 * stats.norm.pdf(1.0))
    assert float(d.std()) == pytest.approx(sd, rel=0.01)
    lap = fixed_sampler("laplace", eps, "linf", torch.Generator().manual_seed(1))(
        torch.zeros(50, 1, 8, 8), None, 40).flatten().double()
    assert float((lap.abs() >= eps - 1e-7).double().mean()) == pytest.approx(math.exp(-1), abs=0.005)
    uni = fixed_sampler("uniform", eps, "linf", torch.Generator().manual_seed(2))(
        torch.zeros(50, 1, 8, 8), None, 40).flatten().double()
    assert float(uni.var()) == pytest.approx(eps ** 2 / 3, rel=0.02)
    cor = fixed_sampler("corners", eps, "linf", torch.Generator().manual_seed(3))(
        torch.zeros(50, 1, 8, 8), None, 40).flatten().double()
    assert torch.allclose(cor.abs(), torch.full_like(cor, eps), atol=1e-7)
    assert float(cor.mean()) == pytest.approx(0.0, abs=0.01)


# ------------------------------------------------------------- PGD: every iterate is feasible
class _Recorder(nn.Module):
    """Wraps a classifier and records the range of every input it is called with."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.seen = inner, []

    def forward(self, x):
        self.seen.append(x.detach().clone())
        return self.inner(x)


def test_pgd_projects_every_iterate_onto_the_ball_and_range():
    """Every point PGD queries lies in [0, 1] and in the eps-ball around X (per-step projection
    onto both sets, as torchattacks does); a PGD that only projects onto the ball fails here,
    because the random start pushes pixels at 0 below the range."""
    torch.manual_seed(0)
    X = torch.rand(16, 1, 8, 8)
    X[:, :, :2] = 0.0
    X[:, :, -2:] = 1.0
    clf = _Recorder(nn.Sequential(nn.Flatten(), nn.Linear(64, 3)))
    y = torch.randint(0, 3, (16,))
    eps = 0.1
    adv = pgd_attack(clf, X, y, eps, steps=8, backend="internal", seed=1)
    assert len(clf.seen) == 8
    for xq in clf.seen:
        assert float(xq.min()) >= 0.0 and float(xq.max()) <= 1.0
        assert float((xq - X).abs().max()) <= eps + 1e-6
    assert float(adv.min()) >= 0.0 and float(adv.max()) <= 1.0


# ------------------------------------------------------------------------ input range and knobs
def test_inputs_outside_the_clip_range_raise(digits, fitted):
    model, Xtr, ytr, Xte, yte = digits
    X255 = Xte * 255.0
    with pytest.raises(ValueError, match="outside clip_range"):
        pr_fixed(model, X255, yte, 0.1)
    with pytest.raises(ValueError, match="outside clip_range"):
        ar_pgd(model, X255, yte, 0.1)
    with pytest.raises(ValueError, match="outside clip_range"):
        pgd_attack(model, X255, yte, 0.1)
    with pytest.raises(ValueError, match="outside clip_range"):
        fitted.evaluate(X255, yte)
    with pytest.raises(ValueError, match="outside clip_range"):
        NPPREstimator(model, model.features, eps=0.1, epochs=0).fit(Xtr * 255, ytr)
    u8 = (Xte.numpy() * 255).astype(np.uint8)
    with pytest.raises(ValueError, match="outside clip_range"):
        pr_fixed(model, u8, yte, 0.1)
    # the same data declared in its own range is accepted
    r = pr_fixed(model, X255, yte, 0.1 * 255, n=2, clip_range=(0.0, 255.0))
    assert 0.0 <= r.mean <= 1.0


@pytest.mark.parametrize("alpha", [-0.01, 0.0, float("nan"), float("inf")])
def test_pgd_step_must_be_positive_and_finite(digits, alpha):
    model, _, _, Xte, yte = digits
    with pytest.raises(ValueError, match="alpha"):
        pgd_attack(model, Xte[:4], yte[:4], 0.1, alpha=alpha)
    with pytest.raises(ValueError, match="alpha"):
        ar_pgd(model, Xte[:4], yte[:4], 0.1, alpha=alpha)


def test_kappa_and_batch_size_checks(digits):
    model, Xtr, ytr, _, _ = digits
    with pytest.raises(ValueError, match="kappa"):
        NPPREstimator(model, model.features, eps=0.1, kappa=float("nan")).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="kappa"):
        softplus_margin_loss(torch.zeros(1, 2, 3), torch.zeros(2, dtype=torch.long), float("nan"))
    with pytest.raises(ValueError, match="batch_size"):
        NPPREstimator(model, model.features, eps=0.1, batch_size=1).fit(Xtr, ytr)


def test_mixture_weights_are_a_distribution(digits, fitted):
    _, _, _, Xte, yte = digits
    w = fitted.mixture_weights(Xte[:10], yte[:10])
    assert w.shape == (10, fitted.n_components)
    np.testing.assert_allclose(w.sum(1), 1.0, rtol=1e-5)
    assert np.all(w >= 0)


def test_only_correct_false_counts_misclassified_inputs_as_zero():
    """Authors' evaluator convention: every input, a misclassified one with PR 0 at tiny eps."""
    model = _threshold_model()
    X = torch.tensor([[0.9], [0.8], [0.1]])
    y = torch.tensor([1, 1, 1])               # the last one is misclassified
    allr = pr_fixed(model, X, y, 1e-4, n=5, only_correct=False)
    corr = pr_fixed(model, X, y, 1e-4, n=5, only_correct=True)
    assert allr.mean == pytest.approx(2 / 3) and corr.mean == 1.0


def test_shuffled_features_ignore_the_input():
    from icml26.papers.nppr.experiment import ShuffledFeatures

    pool = torch.randn(50, 4)
    f = ShuffledFeatures(lambda x: x * 2, pool, seed=0)
    a = f(torch.zeros(7, 4))
    g = ShuffledFeatures(lambda x: x * 2, pool, seed=0)
    b = g(torch.full((7, 4), 99.0))
    assert torch.equal(a, b)  # same draws whatever the input
    assert all(any(torch.allclose(r, 2 * q) for q in pool) for r in a)


def test_config_bounds():
    from icml26.harness.config import ConfigError
    from icml26.papers.nppr.experiment import Config

    q = Config.quick()
    assert len(q.seeds) >= 3 and len(Config.full().seeds) >= 3
    for bad in ({"eps": 0.0}, {"gmm_batch": 1}, {"n_eval": 0}, {"conds": ("xy", "none")},
                {"conds": ("none", "y", "xy", "z")}, {"n_gmm_train": 5}, {"moons_grid": 1},
                {"gmm_lr": float("nan")}):
        with pytest.raises(ConfigError):
            q.with_overrides({k: ",".join(v) if isinstance(v, tuple) else str(v)
                              for k, v in bad.items()})

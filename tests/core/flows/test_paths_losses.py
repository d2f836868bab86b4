"""Paths and the CFM loss against independent closed-form expressions (torchcfm-style)."""

import pytest
import torch

from icml26.core.flows import CondOTPath, cfm_loss, draw_path, masked_sq_error, sample_t


@pytest.mark.parametrize("sigma_min", [0.0, 0.01, 0.2])
def test_condot_path_matches_formula(sigma_min):
    g = torch.Generator().manual_seed(1)
    x0, x1, t = torch.randn(16, 5, generator=g), torch.randn(16, 5, generator=g), torch.rand(16, generator=g)
    s = CondOTPath(sigma_min).sample(x0, x1, t)
    tt = t[:, None]
    # Lipman et al. (2023) Eq. 20/21: mu_t = t x1, sigma_t = 1 - (1 - sigma_min) t
    torch.testing.assert_close(s.x_t, tt * x1 + (1 - (1 - sigma_min) * tt) * x0)
    torch.testing.assert_close(s.u_t, x1 - (1 - sigma_min) * x0)
    # u_t is the time derivative of x_t
    eps = 1e-3
    s2 = CondOTPath(sigma_min).sample(x0, x1, (t + eps).clamp(max=1.0))
    fd = (s2.x_t - s.x_t) / ((t + eps).clamp(max=1.0) - t)[:, None]
    torch.testing.assert_close(fd, s.u_t, atol=1e-3, rtol=1e-3)


def test_path_endpoints_and_images():
    x0, x1 = torch.randn(3, 1, 4, 4), torch.randn(3, 1, 4, 4)
    s0 = CondOTPath().sample(x0, x1, torch.zeros(3))
    s1 = CondOTPath().sample(x0, x1, torch.ones(3))
    torch.testing.assert_close(s0.x_t, x0)
    torch.testing.assert_close(s1.x_t, x1)


def test_path_bad_input():
    p = CondOTPath()
    x = torch.randn(4, 2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        p.sample(x, x, torch.tensor([0.1, 0.2, 1.5, 0.3]))
    with pytest.raises(ValueError, match="shape"):
        p.sample(x, torch.randn(4, 3), torch.rand(4))
    with pytest.raises(ValueError, match="shape"):
        p.sample(x, x, torch.rand(3))
    with pytest.raises(TypeError, match="floating"):
        p.sample(x, torch.ones(4, 2, dtype=torch.int64), torch.rand(4))
    with pytest.raises(ValueError, match="NaN"):
        p.sample(x, x.clone().fill_(float("nan")), torch.rand(4))
    with pytest.raises(ValueError):
        CondOTPath(sigma_min=1.0)


def test_sample_t():
    g = torch.Generator().manual_seed(0)
    for dist in ("uniform", "logit_normal", "power"):
        t = sample_t(20000, dist, alpha=1.0, generator=g)
        assert t.shape == (20000,) and float(t.min()) >= 0 and float(t.max()) <= 1
    t = sample_t(200000, "power", alpha=1.0, generator=g)
    assert abs(float(t.mean()) - 2 / 3) < 5e-3  # E[U^(1/(1+a))] = (1+a)/(2+a)
    with pytest.raises(ValueError):
        sample_t(10, "beta")
    with pytest.raises(ValueError):
        sample_t(0)


def test_cfm_loss_matches_manual():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2)

    def model(x, t):
        return net(torch.cat([x, t[:, None]], 1))

    x1, x0, t = torch.randn(8, 2), torch.randn(8, 2), torch.rand(8)
    xt = (1 - t[:, None]) * x0 + t[:, None] * x1
    manual = ((model(xt, t) - (x1 - x0)) ** 2).mean()
    torch.testing.assert_close(cfm_loss(model, x1, x0=x0, t=t), manual)
    w = cfm_loss(model, x1, x0=x0, t=t, weight=lambda s: 2 * s)
    manual_w = (((model(xt, t) - (x1 - x0)) ** 2).mean(1) * 2 * t).mean()
    torch.testing.assert_close(w, manual_w)
    per = cfm_loss(model, x1, x0=x0, t=t, reduction="none")
    assert per.shape == (8,)
    mask = torch.tensor([1.0, 0.0])
    masked = cfm_loss(model, x1, x0=x0, t=t, mask=mask)
    torch.testing.assert_close(masked, ((model(xt, t) - (x1 - x0))[:, 0] ** 2).mean())
    with pytest.raises(ValueError, match="weight"):
        cfm_loss(model, x1, x0=x0, t=t, weight=lambda s: s[:3])
    with pytest.raises(ValueError, match="reduction"):
        cfm_loss(model, x1, reduction="sum")


def test_cfm_loss_checks_model_output():
    with pytest.raises(ValueError, match="expected shape"):
        cfm_loss(lambda x, t: x[:, :1], torch.randn(4, 3))
    with pytest.raises(ValueError, match="NaN"):
        cfm_loss(lambda x, t: x * float("nan"), torch.randn(4, 3))


def test_cfm_loss_minimised_by_marginal_field():
    """The exact marginal velocity has a lower CFM loss than a shrunk or inflated version."""
    from icml26.core.flows import GaussianMixture

    gm = GaussianMixture.random(3, 4, seed=0)
    g = torch.Generator().manual_seed(0)
    x1 = gm.sample(20000, g)
    s = draw_path(x1, generator=g)
    v = gm.marginal_velocity(s.x_t, s.t)
    base = masked_sq_error(v, s.u_t).mean()
    for c in (0.9, 1.1):
        assert masked_sq_error(c * v, s.u_t).mean() > base

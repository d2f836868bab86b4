"""Velocity nets and the training loop (determinism, EMA, learning a simple flow)."""

import pytest
import torch

from icml26.core.flows import (
    MLPVelocity,
    TinyConvVelocity,
    VelocityField,
    ema_update,
    integrate,
    sliced_wasserstein,
    tensor_sampler,
    toy2d,
    train_flow,
)


def test_nets_shapes_and_errors():
    m = MLPVelocity(3, hidden=16, depth=2)
    assert isinstance(m, VelocityField)
    assert m(torch.randn(5, 3), torch.rand(5)).shape == (5, 3)
    with pytest.raises(ValueError):
        m(torch.randn(5, 4), torch.rand(5))
    mc = MLPVelocity(3, hidden=16, depth=1, cond_dim=2)
    assert mc(torch.randn(5, 3), torch.rand(5), torch.randn(5, 2)).shape == (5, 3)
    with pytest.raises(ValueError, match="cond"):
        mc(torch.randn(5, 3), torch.rand(5))
    c = TinyConvVelocity(width=16)
    assert c(torch.randn(4, 1, 8, 8), torch.rand(4)).shape == (4, 1, 8, 8)
    assert c(torch.randn(4, 64), torch.rand(4)).shape == (4, 64)
    with pytest.raises(ValueError):
        c(torch.randn(4, 63), torch.rand(4))


def test_ema_update_formula():
    a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    before = a.weight.detach().clone()
    ema_update(a, b, 0.9)
    torch.testing.assert_close(a.weight, 0.9 * before + 0.1 * b.weight.detach())


def test_train_flow_learns_and_is_deterministic():
    data = toy2d("8gaussians", 2000, seed=0)

    def make():
        torch.manual_seed(0)
        return MLPVelocity(2, hidden=64, depth=2, t_embed_dim=16)

    r1 = train_flow(make(), tensor_sampler(data), steps=400, batch_size=128, lr=3e-3, seed=0)
    r2 = train_flow(make(), tensor_sampler(data), steps=30, batch_size=128, lr=3e-3, seed=0)
    r3 = train_flow(make(), tensor_sampler(data), steps=30, batch_size=128, lr=3e-3, seed=0)
    assert r2.losses == r3.losses
    assert r1.losses[0] == r2.losses[0]
    assert sum(r1.losses[-20:]) / 20 < sum(r1.losses[:20]) / 20
    x0 = torch.randn(1000, 2, generator=torch.Generator().manual_seed(1))
    trained = sliced_wasserstein(integrate(r1.ema_model, x0, steps=20), data[:1000])
    untrained = sliced_wasserstein(integrate(make().eval(), x0, steps=20), data[:1000])
    assert trained < untrained
    with pytest.raises(ValueError):
        train_flow(make(), tensor_sampler(data), steps=0)
    with pytest.raises(ValueError):
        tensor_sampler(torch.randn(3))

"""Correctness of the SSC gain, the corrector hook, MAFM, the deficit profile and the tuner."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.core.flows import GaussianMixture, cfm_loss, integrate, tensor_sampler, train_flow
from icml26.papers.velocity_deficit import (
    MAFMLoss,
    ScaleScheduleCorrector,
    magnitude_aware_fm_loss,
    sample_with_ssc,
    shifted_time_grid,
    ssc_gain,
    tune_ssc,
    velocity_magnitude_profile,
)


def small_net():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 3))

    def model(x, t):
        return net(torch.cat([x, t[:, None]], 1))

    return model


def test_gain_closed_form():
    t = torch.tensor([0.0, 0.25, 0.5, 1.0])
    torch.testing.assert_close(ssc_gain(t, 0.4, 2.0), 1 + 0.4 * (1 - t) ** 2)
    torch.testing.assert_close(ssc_gain(t, 0.4, 2.0, "late"), 1 + 0.4 * t**2)
    torch.testing.assert_close(ssc_gain(t, 0.4, 2.0, "constant"), torch.full((4,), 1.4))
    assert float(ssc_gain(1.0, 0.7, 3.0)) == 1.0 and float(ssc_gain(0.0, 0.7, 3.0)) == pytest.approx(1.7)


@settings(max_examples=40, deadline=None)
@given(alpha=st.floats(0, 2), beta=st.floats(0.1, 6), t1=st.floats(0, 1), t2=st.floats(0, 1))
def test_gain_properties(alpha, beta, t1, t2):
    lo, hi = min(t1, t2), max(t1, t2)
    g = ssc_gain(torch.tensor([lo, hi], dtype=torch.float64), alpha, beta)
    assert float(g[0]) >= float(g[1]) >= 1.0  # early boost: >= 1 and non-increasing in t
    assert float(ssc_gain(torch.tensor(1.0, dtype=torch.float64), alpha, beta)) == 1.0


def test_bad_parameters():
    for kw in ({"alpha": -0.1}, {"beta": 0.0}, {"alpha": float("nan")}):
        with pytest.raises(ValueError):
            ScaleScheduleCorrector(**kw)
    with pytest.raises(TypeError):
        ScaleScheduleCorrector(alpha="0.2")
    with pytest.raises(TypeError):
        ScaleScheduleCorrector(alpha=True)
    with pytest.raises(ValueError, match="where"):
        ScaleScheduleCorrector(where="middle")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ssc_gain(torch.tensor([1.2]))
    with pytest.raises(ValueError, match="shape"):
        ScaleScheduleCorrector()(torch.rand(3), torch.randn(4, 2))


def test_alpha_zero_is_bitwise_baseline():
    model = small_net()
    x0 = torch.randn(64, 3)
    for method in ("euler", "heun", "rk4"):
        base = integrate(model, x0, steps=7, method=method)
        ssc = sample_with_ssc(model, x0, steps=7, alpha=0.0, beta=2.0, method=method)
        assert torch.equal(base, ssc)


def test_euler_ssc_equals_one_line_reference():
    """The brief's one-line sampler: x += (1/N) * v * (1 + alpha (1 - t)^beta)."""
    model = small_net()
    x0 = torch.randn(32, 3, dtype=torch.float32)
    n, a, b = 8, 0.3, 2.0
    x = x0.clone()
    with torch.no_grad():
        for k in range(n):
            t = k / n
            v = model(x, torch.full((32,), t))
            v = v * (1 + a * (1 - t) ** b)
            x = x + (1 / n) * v
    torch.testing.assert_close(sample_with_ssc(model, x0, steps=n, alpha=a, beta=b), x)


def test_ssc_with_heun_scales_every_evaluation():
    model = small_net()
    x0 = torch.randn(16, 3)
    a, b, n = 0.5, 1.0, 4
    x = x0.clone()
    with torch.no_grad():
        for k in range(n):
            ta, tb, h = k / n, (k + 1) / n, 1 / n
            v0 = model(x, torch.full((16,), ta)) * (1 + a * (1 - ta) ** b)
            v1 = model(x + h * v0, torch.full((16,), tb)) * (1 + a * (1 - tb) ** b)
            x = x + 0.5 * h * (v0 + v1)
    torch.testing.assert_close(sample_with_ssc(model, x0, steps=n, alpha=a, beta=b, method="heun"), x)
    ssc = ScaleScheduleCorrector(a, b)
    wrapped = integrate(ssc.wrap(model), x0, steps=n, method="heun")
    torch.testing.assert_close(wrapped, x)


def test_constant_field_integrates_the_gain():
    """For v = c, the SSC flow map adds c * int_0^1 gamma = c (1 + alpha / (beta + 1))."""
    c = torch.ones(2, 3, dtype=torch.float64)
    x1 = sample_with_ssc(lambda x, t: torch.ones_like(x), torch.zeros_like(c), steps=400, alpha=0.6,
                         beta=2.0, method="rk4")
    torch.testing.assert_close(x1, c * (1 + 0.6 / 3), atol=1e-8, rtol=1e-8)


def test_mafm_reduces_to_cfm_and_matches_formula():
    model = small_net()
    g = torch.Generator().manual_seed(0)
    x1, x0, t = torch.randn(16, 3, generator=g), torch.randn(16, 3, generator=g), torch.rand(16, generator=g)
    assert torch.equal(magnitude_aware_fm_loss(model, x1, x0=x0, t=t, lam=0.0),
                       cfm_loss(model, x1, x0=x0, t=t))
    assert torch.equal(magnitude_aware_fm_loss(model, x1, x0=x0, t=t, variant="scaled_target", alpha=0.0),
                       cfm_loss(model, x1, x0=x0, t=t))
    xt = (1 - t[:, None]) * x0 + t[:, None] * x1
    v, u = model(xt, t), x1 - x0
    mag = (v.norm(dim=1) - u.norm(dim=1)) ** 2 / 3
    mse = ((v - u) ** 2).mean(1)
    torch.testing.assert_close(magnitude_aware_fm_loss(model, x1, x0=x0, t=t, lam=0.5, beta_w=2.0),
                               (mse + 0.5 * (1 - t) ** 2 * mag).mean())
    torch.testing.assert_close(magnitude_aware_fm_loss(model, x1, x0=x0, t=t, lam=0.5, variant="unweighted"),
                               (mse + 0.5 * mag).mean())
    gam = (1 + 0.2 * (1 - t) ** 2)[:, None]
    torch.testing.assert_close(
        magnitude_aware_fm_loss(model, x1, x0=x0, t=t, variant="scaled_target", alpha=0.2, beta=2.0),
        ((v - gam * u) ** 2).mean(1).mean())
    with pytest.raises(ValueError, match="variant"):
        magnitude_aware_fm_loss(model, x1, variant="hinge")
    with pytest.raises(ValueError):
        magnitude_aware_fm_loss(model, x1, lam=-1.0)


def test_mafm_trains():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.SiLU(), torch.nn.Linear(16, 2))

    def model(x, t):
        return net(torch.cat([x, t[:, None]], 1))

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x, t):
            return model(x, t)

    r = train_flow(Wrap(), tensor_sampler(torch.randn(200, 2)), steps=5, batch_size=16,
                   loss_fn=MAFMLoss(lam=0.3), seed=0)
    assert len(r.losses) == 5 and all(math.isfinite(v) for v in r.losses)


def test_profile_jensen_and_degenerate_cases():
    gm = GaussianMixture.random(8, 4, seed=0)
    data = gm.sample(2000, torch.Generator().manual_seed(0))
    prof = velocity_magnitude_profile(gm.velocity_field(), data, n=512, seed=0)
    assert prof["t"].shape == (21,)
    assert (prof["speed"] <= prof["target_speed"] + 1e-9).all()  # ||E[u|x_t]|| <= E[||u|| | x_t]
    assert prof["deficit"][1] > 0.05
    zero = velocity_magnitude_profile(lambda x, t: torch.zeros_like(x), data, n=64)
    assert (zero["deficit"] == 1.0).all()
    dirac = GaussianMixture(torch.ones(1, 8, dtype=torch.float64), torch.full((1,), 1e-5, dtype=torch.float64),
                            torch.ones(1, dtype=torch.float64))
    dd = velocity_magnitude_profile(dirac.velocity_field(), dirac.sample(100), n=256,
                                    t_grid=[0.0, 0.3, 0.9])
    assert abs(dd["deficit"]).max() < 1e-4  # no posterior spread, no deficit
    with pytest.raises(ValueError):
        velocity_magnitude_profile(gm.velocity_field(), data, t_grid=[0.5, 1.5])


def test_tune_ssc_picks_table_minimum():
    model = small_net()
    x0 = torch.randn(64, 3)

    def energy(x, ref):  # prefers samples with a large norm: the largest alpha and smallest beta win
        return -float(x.norm(dim=1).mean())

    res = tune_ssc(model, x0, None, energy, steps=4, alphas=(0.1, 0.5), betas=(1.0, 3.0))
    assert len(res.table) == 4
    assert res.score == min(r[2] for r in res.table)
    with pytest.raises(ValueError):
        tune_ssc(model, x0, None, energy, alphas=())


def test_shifted_grid():
    g = shifted_time_grid(10, 2.0)
    assert g.shape == (11,) and float(g[0]) == 0.0 and float(g[-1]) == 1.0
    assert float(g[1]) == pytest.approx(0.01)


def test_profile_against_the_exact_field():
    """The exact field against itself has ratio 1 and no error; a field shrunk by 0.8 (a pure
    speed deficit) has ratio 0.8 at every t and a relative error of 0.04."""
    gm = GaussianMixture.random(6, 4, seed=1)
    data = gm.sample(500, torch.Generator().manual_seed(1))
    field = gm.velocity_field()
    self_prof = velocity_magnitude_profile(field, data, n=256, exact_field=field)
    np.testing.assert_allclose(self_prof["speed_ratio"], 1.0, atol=1e-12)
    np.testing.assert_allclose(self_prof["rel_err"], 0.0, atol=1e-20)
    np.testing.assert_allclose(self_prof["exact_deficit"], 0.0, atol=1e-12)
    slow = velocity_magnitude_profile(lambda x, t: 0.8 * field(x, t), data, n=256, exact_field=field)
    np.testing.assert_allclose(slow["speed_ratio"], 0.8, atol=1e-12)
    np.testing.assert_allclose(slow["rel_err"], 0.04, atol=1e-12)
    # the per-pair target is unchanged and is above the exact field's speed (posterior averaging)
    np.testing.assert_allclose(slow["target_speed"], self_prof["target_speed"])
    assert (self_prof["exact_speed"] <= self_prof["target_speed"] + 1e-9).all()
    assert "speed_ratio" not in velocity_magnitude_profile(field, data, n=16)


def test_profile_resamples_cond_with_the_data():
    """A conditional model sees the label of the very row it is profiled on (the review found
    labels drawn independently of the rows)."""
    data = torch.arange(50, dtype=torch.float64)[:, None].repeat(1, 2)
    cond = torch.arange(50, dtype=torch.float64)

    def model(x, t, c):  # x_1 is recoverable at t = 1: x == data row; c must be that row's label
        assert torch.equal(x[:, 0], c), "cond was not resampled with the data"
        return torch.ones_like(x)

    velocity_magnitude_profile(model, data, t_grid=[1.0], n=200, cond=cond)
    with pytest.raises(ValueError, match="one row per row"):
        velocity_magnitude_profile(model, data, n=8, cond=cond[:10])


def test_profile_input_errors():
    data = torch.randn(20, 3)
    f = lambda x, t: x  # noqa: E731
    for kw in ({"n": 0}, {"n": True}, {"t_grid": [0.2, float("nan")]}, {"t_grid": []}):
        with pytest.raises(ValueError):
            velocity_magnitude_profile(f, data, **kw)
    with pytest.raises(TypeError):
        velocity_magnitude_profile(f, torch.zeros(20, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="expected"):
        velocity_magnitude_profile(lambda x, t: x[:, :1], data, n=4)


def test_corrector_validates_at_alpha_zero_and_refuses_integer_velocities():
    off = ScaleScheduleCorrector(alpha=0.0)
    v = torch.randn(4, 2)
    assert off(torch.rand(4), v) is v
    with pytest.raises(ValueError, match="shape"):
        off(torch.rand(3), v)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        off(torch.tensor([0.1, float("nan"), 0.2, 0.3]), v)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ScaleScheduleCorrector(0.5)(torch.full((4,), 1.5), v)
    for corr in (off, ScaleScheduleCorrector(0.5)):
        with pytest.raises(TypeError, match="floating"):
            corr(torch.rand(4), torch.ones(4, 2, dtype=torch.int64))
    # a float64 velocity keeps its precision through the gain
    v64 = torch.ones(3, 1, dtype=torch.float64)
    out = ScaleScheduleCorrector(0.3, 1.0)(torch.zeros(3), v64)
    assert out.dtype == torch.float64 and float(out[0, 0]) == pytest.approx(1.3, abs=1e-15)


def test_mafm_loss_validates_at_construction():
    for kw in ({"lam": -0.1}, {"lam": float("nan")}, {"beta_w": -1.0}, {"variant": "hinge"},
               {"alpha": -0.2}, {"beta": 0.0}):
        with pytest.raises(ValueError):
            MAFMLoss(**kw)
    with pytest.raises(TypeError):
        MAFMLoss(lam="0.1")
    with pytest.raises(TypeError):
        MAFMLoss(lam=True)


def test_tune_ssc_grid_contains_off_and_refuses_all_non_finite():
    model = small_net()
    x0 = torch.randn(32, 3)
    calls = []

    def prefer_off(x, ref):  # every boost increases the score: "off" must win
        calls.append(1)
        return float(x.norm(dim=1).mean())

    res = tune_ssc(model, x0, None, prefer_off, steps=3, betas=(1.0, 2.0))
    assert (res.alpha, res.beta) == (0.0, 1.0)
    assert res.table[0][:2] == (0.0, 1.0) and sum(r[0] == 0 for r in res.table) == 1
    assert len(calls) == 1 + 5 * 2  # alpha = 0 scored once, not once per beta
    with pytest.raises(ValueError, match="non-finite"):
        tune_ssc(model, x0, None, lambda x, ref: float("nan"), steps=2, alphas=(0.0, 0.1), betas=(1.0,))
    with pytest.raises(ValueError):
        tune_ssc(model, x0, None, prefer_off, alphas=(-0.1,), betas=(1.0,))

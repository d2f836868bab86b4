"""ODE solvers: closed-form flows, convergence orders, time grids, hooks and errors."""

import math

import numpy as np
import pytest
import torch

from icml26.core.flows import (
    FIXED_METHODS,
    adaptive_integrate,
    integrate,
    log_prob,
    make_time_grid,
    nfe_of,
    sample,
)


def exp_field(x, t):
    return x  # dx/dt = x  ->  x(1) = e x(0)


def gaussian_field(s):
    """Exact CondOT marginal field for data N(0, s^2 I): v = x d/dt log sqrt(Var_t)."""

    def field(x, t):
        tt = t[:, None]
        var = (1 - tt) ** 2 + tt**2 * s**2
        return x * (-(1 - tt) + tt * s**2) / var

    return field


@pytest.mark.parametrize("method,order", [("euler", 1), ("midpoint", 2), ("heun", 2), ("rk4", 4)])
def test_convergence_order(method, order):
    x0 = torch.ones(2, 3, dtype=torch.float64)
    errs = []
    steps = (4, 8, 16, 32)
    for n in steps:
        x1 = integrate(exp_field, x0, steps=n, method=method)
        errs.append(float((x1 - math.e * x0).abs().max()))
    slope = -np.polyfit(np.log(steps), np.log(errs), 1)[0]
    assert abs(slope - order) < 0.25, (method, slope)


def forced_field(x, t):
    """Non-autonomous linear field dx/dt = 2 t x + t: x(1) = (x0 + 1/2) e - 1/2."""
    tt = t[:, None]
    return 2 * tt * x + tt


def _order(method, field, exact, x0, steps=(4, 8, 16, 32)):
    errs = [float((integrate(field, x0, steps=n, method=method) - exact).abs().max()) for n in steps]
    return -np.polyfit(np.log(steps), np.log(errs), 1)[0]


@pytest.mark.parametrize("method", sorted(FIXED_METHODS))
def test_convergence_order_non_autonomous(method):
    """Every fixed-step solver reaches its order on a field that depends on t: a stage evaluated
    at the wrong time (e.g. midpoint's at t_k instead of t_k + h/2) drops the order to 1."""
    x0 = torch.tensor([[0.3, -1.2, 2.0]], dtype=torch.float64)
    exact = (x0 + 0.5) * math.e - 0.5
    slope = _order(method, forced_field, exact, x0)
    assert abs(slope - FIXED_METHODS[method]) < 0.25, (method, slope)


def test_order_test_detects_a_stage_at_the_wrong_time():
    """The non-autonomous test has power: midpoint with its stage at t_k is first order."""
    x0 = torch.tensor([[0.3, -1.2, 2.0]], dtype=torch.float64)
    exact = (x0 + 0.5) * math.e - 0.5
    errs, steps = [], (4, 8, 16, 32)
    for n in steps:
        x, h = x0.clone(), 1.0 / n
        for k in range(n):
            t = torch.full((1,), k * h, dtype=torch.float64)
            x = x + h * forced_field(x + 0.5 * h * forced_field(x, t), t)  # wrong: stage at t_k
        errs.append(float((x - exact).abs().max()))
    slope = -np.polyfit(np.log(steps), np.log(errs), 1)[0]
    assert abs(slope - 1.0) < 0.25


def test_constant_field_is_exact_and_nfe():
    calls = []

    def field(x, t):
        calls.append(float(t[0]))
        return torch.full_like(x, 2.0)

    x1 = integrate(field, torch.zeros(3, 2), steps=7, method="euler")
    torch.testing.assert_close(x1, torch.full((3, 2), 2.0))
    assert len(calls) == nfe_of("euler", 7) == 7
    calls.clear()
    integrate(field, torch.zeros(3, 2), steps=5, method="rk4")
    assert len(calls) == nfe_of("rk4", 5) == 20


@pytest.mark.parametrize("s", [0.3, 2.0])
def test_gaussian_flow_closed_form(s):
    """The exact flow of N(0, I) -> N(0, s^2 I) maps x0 to s x0."""
    x0 = torch.randn(5, 4, dtype=torch.float64)
    x1 = integrate(gaussian_field(s), x0, steps=40, method="rk4")
    torch.testing.assert_close(x1, s * x0, atol=1e-6, rtol=1e-6)
    ref = adaptive_integrate(gaussian_field(s), x0, method="dopri5", rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(ref.x, s * x0, atol=1e-6, rtol=1e-6)
    assert ref.nfe > 6
    ref8 = integrate(gaussian_field(s), x0, method="dop853", rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(ref8, s * x0, atol=1e-6, rtol=1e-6)


def test_time_grid_and_reverse():
    x0 = torch.randn(4, 2, dtype=torch.float64)
    a = integrate(exp_field, x0, steps=10, method="heun")
    b = integrate(exp_field, x0, time_grid=torch.linspace(0, 1, 11), method="heun")
    torch.testing.assert_close(a, b)
    back = integrate(exp_field, math.e * x0, time_grid=torch.linspace(1, 0, 50), method="rk4")
    torch.testing.assert_close(back, x0, atol=1e-6, rtol=1e-6)
    path = integrate(exp_field, x0, steps=5, return_path=True)
    assert len(path) == 6 and torch.equal(path[0], x0)
    g = make_time_grid(4, power=2.0)
    torch.testing.assert_close(g, torch.tensor([0.0, 1 / 16, 1 / 4, 9 / 16, 1.0]))


def test_velocity_transform_sees_evaluation_times():
    seen = []

    def hook(t, v):
        seen.append(round(float(t[0]), 6))
        return 2 * v

    x = integrate(lambda x, t: torch.ones_like(x), torch.zeros(2, 1), steps=2, method="heun",
                  velocity_transform=hook)
    assert seen == [0.0, 0.5, 0.5, 1.0]
    torch.testing.assert_close(x, torch.full((2, 1), 2.0))


def test_grad_flag():
    w = torch.tensor(1.5, requires_grad=True)

    def field(x, t):
        return w * x

    out = integrate(field, torch.ones(2, 2), steps=3, grad=True)
    out.sum().backward()
    assert w.grad is not None and float(w.grad) > 0
    out2 = integrate(field, torch.ones(2, 2), steps=3)
    assert not out2.requires_grad


def test_solver_errors():
    x = torch.randn(3, 2)
    with pytest.raises(ValueError, match="steps"):
        integrate(exp_field, x, steps=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        integrate(exp_field, x, t1=1.5)
    with pytest.raises(ValueError, match="monotone"):
        integrate(exp_field, x, time_grid=[0.0, 0.5, 0.5, 1.0])
    with pytest.raises(ValueError, match="method"):
        integrate(exp_field, x, method="rk7")
    with pytest.raises(TypeError):
        integrate(exp_field, x.numpy())
    with pytest.raises(ValueError, match="at least 2"):
        integrate(exp_field, torch.randn(3))

    def nan_late(x, t):
        return x * float("nan") if float(t[0]) > 0.5 else x

    with pytest.raises(ValueError, match=r"step 6 \(t=0.6\)"):
        integrate(nan_late, x, steps=10, check_steps=True)
    with pytest.raises(ValueError, match="check_steps=True"):  # default: checked once, at the end
        integrate(nan_late, x, steps=10)
    with pytest.raises(ValueError, match="check_steps=True"):
        integrate(nan_late, x, steps=10, return_path=True)
    with pytest.raises(ValueError, match="expected"):
        integrate(lambda x, t: x[:, :1], x)
    with pytest.raises(ValueError, match="velocity_transform returned"):
        integrate(exp_field, x, velocity_transform=lambda t, v: v[:, :1])
    with pytest.raises(ValueError, match=r"velocity model returned NaN/inf at step 0"):
        integrate(lambda x, t: x * float("nan"), x, steps=3)
    for bad in (True, 2.5, -1):
        with pytest.raises(ValueError, match="steps"):
            integrate(exp_field, x, steps=bad)
    with pytest.raises(ValueError, match="steps"):
        nfe_of("euler", True)
    with pytest.raises(ValueError, match="n must"):
        sample(exp_field, True, (2,))


def test_validation_runs_once_per_solve(monkeypatch):
    """By default NaN/inf checks cost O(1) per solve (inputs, first evaluation, final state); the
    per-evaluation checks are opt-in."""
    calls = []
    real = torch.isfinite
    monkeypatch.setattr(torch, "isfinite", lambda v: calls.append(1) or real(v))
    x = torch.zeros(2, 2)
    integrate(lambda x, t: torch.ones_like(x), x, steps=40, method="heun")
    default = len(calls)
    calls.clear()
    integrate(lambda x, t: torch.ones_like(x), x, steps=40, method="heun", check_steps=True)
    assert default <= 4 and len(calls) >= 80, (default, len(calls))

    def shape_late(x, t):
        return x[:, :1] if float(t[0]) > 0.3 else torch.ones_like(x)

    for check in (False, True):  # shapes are compared at every evaluation (no device sync)
        with pytest.raises(ValueError, match=r"step 2 \(t=0.5\)"):
            integrate(shape_late, torch.zeros(2, 2), steps=4, check_steps=check)


def test_sample_and_log_prob_gaussian():
    s = 1.7
    g = torch.Generator().manual_seed(0)
    xs = sample(gaussian_field(s), 4000, (2,), steps=30, method="rk4", generator=g)
    assert abs(float(xs.std()) - s) < 0.05
    x1 = torch.randn(6, 2, dtype=torch.float64) * s
    lp = log_prob(gaussian_field(s), x1, steps=30)
    exact = -0.5 * (x1**2).sum(1) / s**2 - 2 * math.log(s) - math.log(2 * math.pi)
    torch.testing.assert_close(lp, exact, atol=1e-5, rtol=1e-5)
    lph = log_prob(gaussian_field(s), x1, steps=30, hutchinson=4, generator=g)
    torch.testing.assert_close(lph, exact, atol=1e-5, rtol=1e-5)  # linear field: trace is exact

"""MS-Flow library: operators against independent dense references, exact proxes, reduction to
D-Flow, Jacobian-free vs exact gradients, adjoint gradients, memory scaling, NFE accounting, and
clear errors on bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import ndimage

from icml26.core.flows import GaussianMixture, MLPVelocity, integrate, saved_tensor_bytes
from icml26.papers.ms_flow import (
    TASKS,
    DFlowConfig,
    FlowDPSConfig,
    MSFlowConfig,
    OTODEConfig,
    PnPFlowConfig,
    TikhonovConfig,
    d_flow,
    d_flow_objective,
    flow_dps,
    flow_map,
    make_inpainting,
    make_operator,
    ms_flow,
    ms_flow_objective,
    ot_ode,
    pnp_flow,
    psnr,
    radial_gaussian_reg,
    radial_gaussian_reg_grad,
    segment_map,
    ssim,
    tikhonov,
)
from icml26.papers.ms_flow.solvers import _Counted, _shoot_grad

D = 64


def _mlp(seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    net = MLPVelocity(D, hidden=32, depth=2).to(dtype).eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net


# ---------------------------------------------------------------------------------------------
# operators
# ---------------------------------------------------------------------------------------------


def _dense_reference(task: str, op) -> np.ndarray:
    """The operator's matrix built independently of its torch implementation."""
    if task.startswith("inpaint"):
        keep = np.flatnonzero(op.mask.numpy())
        return np.eye(D)[keep]
    if task.startswith("sr"):
        f = op.factor
        rows = []
        for i in range(0, 8, f):
            for j in range(0, 8, f):
                r = np.zeros((8, 8))
                r[i:i + f, j:j + f] = 1.0 / f**2
                rows.append(r.ravel())
        return np.array(rows)
    if task == "ct":  # a direct rotate-and-sum of each basis image, view by view
        rows = []
        for a in op.angles:
            rows.append(np.array([ndimage.rotate(e.reshape(8, 8), a, reshape=False, order=1).sum(0)
                                  for e in np.eye(D)]).T)
        return np.concatenate(rows)
    if task == "deblur":
        k = op.kernel[0, 0].numpy()
        cols = [ndimage.correlate(e.reshape(8, 8), k, mode="constant").ravel() for e in np.eye(D)]
        return np.array(cols).T
    raise AssertionError(task)


@pytest.mark.parametrize("task", TASKS)
def test_operator_matches_dense_and_adjoint(task):
    op = make_operator(task, 0.05, seed=3)
    H = _dense_reference(task, op)
    np.testing.assert_allclose(op.H.numpy(), H, atol=1e-12)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, D, generator=g, dtype=torch.float64)
    y = torch.randn(5, op.m, generator=g, dtype=torch.float64)
    np.testing.assert_allclose(op.A(x).numpy(), x.numpy() @ H.T, atol=1e-12)
    np.testing.assert_allclose(op.At(y).numpy(), y.numpy() @ H, atol=1e-12)
    assert float((op.A(x) * y).sum()) == pytest.approx(float((x * op.At(y)).sum()), rel=1e-12)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("mu", [1e-3, 0.7, 1e4])
def test_prox_is_exact(task, mu):
    op = make_operator(task, 0.05, seed=1)
    H = _dense_reference(task, op)
    g = torch.Generator().manual_seed(1)
    v = torch.randn(3, D, generator=g, dtype=torch.float64)
    y = torch.randn(3, op.m, generator=g, dtype=torch.float64)
    w = 1 / 0.05**2
    ref = np.linalg.solve(w * H.T @ H + mu * np.eye(D), (w * y.numpy() @ H + mu * v.numpy()).T).T
    tol = 1e-5 if task == "ct" else 1e-9  # CT's normal matrix is singular: the reference is ill-posed at small mu
    # normwise: at small mu the solve is ill-conditioned, and its last bits differ between CPUs
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(op.prox(v, y, mu).numpy(), ref, rtol=tol, atol=tol * scale)
    # the prox minimises its objective: the gradient vanishes there
    x = op.prox(v, y, mu)
    grad = w * op.At(op.A(x) - y) + mu * (x - v)
    assert float(grad.abs().max()) < 1e-7 * max(1.0, w)


@pytest.mark.parametrize("task", ["inpaint_box", "sr_x2", "deblur", "ct"])
def test_measurement_solve_and_pinv(task):
    op = make_operator(task, 0.05)
    H = _dense_reference(task, op)
    r = torch.randn(2, op.m, dtype=torch.float64)
    ref = np.linalg.solve(0.3 * H @ H.T + 0.02 * np.eye(op.m), r.numpy().T).T
    np.testing.assert_allclose(op.solve_meas(r, 0.3, 0.02).numpy(), ref, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(op.pinv(r, delta=0.0).numpy(), r.numpy() @ np.linalg.pinv(H).T, atol=1e-9)


def test_ct_zero_angle_view_is_the_column_sum():
    op = make_operator("ct", 0.05)
    x = torch.randn(3, D, dtype=torch.float64)
    np.testing.assert_allclose(op.A(x)[:, :8].numpy(), x.reshape(3, 8, 8).sum(1).numpy(), atol=1e-12)
    img = x[0].reshape(8, 8).numpy()  # linearity: the matrix applies the rotation to any image
    direct = np.concatenate([ndimage.rotate(img, a, reshape=False, order=1).sum(0) for a in op.angles])
    np.testing.assert_allclose(op.A(x)[0].numpy(), direct, atol=1e-10)


def test_tikhonov_closed_form_on_mask():
    op = make_inpainting((8, 8), 0.1, p=0.5, seed=0)
    y = torch.randn(2, op.m, dtype=torch.float64)
    c = torch.full((D,), -0.5, dtype=torch.float64)
    x = tikhonov(None, op, y, TikhonovConfig(alpha=3.0, center=c)).x
    w = 100.0
    np.testing.assert_allclose(x[:, op.mask].numpy(), ((w * y + 3.0 * -0.5) / (w + 3.0)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(x[:, ~op.mask].numpy(), -0.5)


def test_operator_bad_inputs():
    with pytest.raises(ValueError, match="sigma"):
        make_operator("sr_x2", -0.1)
    op = make_operator("sr_x2", 0.05)
    with pytest.raises(ValueError, match=r"shape \(B, 16\)"):
        op.At(torch.zeros(2, 15))
    with pytest.raises(ValueError, match="NaN"):
        op.check_y(torch.full((1, 16), float("nan")))
    with pytest.raises(ValueError, match="mu"):
        op.prox(torch.zeros(1, D), torch.zeros(1, 16), 0.0)
    with pytest.raises(ValueError, match="weight"):
        make_operator("sr_x2", 0.0).prox(torch.zeros(1, D), torch.zeros(1, 16), 1.0)
    with pytest.raises(ValueError, match="divide"):
        make_operator("sr_x2", 0.05, image_shape=(6, 6)).__class__((6, 6), 4, 0.05)
    with pytest.raises(ValueError, match="unknown task"):
        make_operator("mri", 0.05)


# ---------------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------------


def test_psnr_and_ssim():
    x = torch.zeros(1, D)
    ref = torch.full((1, D), 0.1)
    assert float(psnr(x, ref)) == pytest.approx(10 * math.log10(4 / 0.01))
    a = torch.rand(3, D) * 2 - 1
    np.testing.assert_allclose(ssim(a, a).numpy(), 1.0, atol=1e-12)
    b = torch.rand(3, D) * 2 - 1
    # a direct loop implementation of the same definition
    A, B = a.double().numpy().reshape(3, 8, 8), b.double().numpy().reshape(3, 8, 8)
    c1, c2 = (0.01 * 2) ** 2, (0.03 * 2) ** 2
    vals = []
    for n in range(3):
        s = []
        for i in range(4):
            for j in range(4):
                p, q = A[n, i:i + 5, j:j + 5].ravel(), B[n, i:i + 5, j:j + 5].ravel()
                cov = np.cov(p, q)
                s.append((2 * p.mean() * q.mean() + c1) * (2 * cov[0, 1] + c2)
                         / ((p.mean() ** 2 + q.mean() ** 2 + c1) * (cov[0, 0] + cov[1, 1] + c2)))
        vals.append(np.mean(s))
    np.testing.assert_allclose(ssim(a, b).numpy(), vals, rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# MS-Flow objective and updates
# ---------------------------------------------------------------------------------------------


def test_radial_regulariser_gradient():
    z = torch.randn(4, D, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(radial_gaussian_reg(z).sum(), z)
    np.testing.assert_allclose(radial_gaussian_reg_grad(z.detach()).numpy(), g.numpy(), rtol=1e-10)
    r = math.sqrt(D - 1)  # minimiser of the radius term
    u = torch.randn(1, D, dtype=torch.float64)
    assert float(radial_gaussian_reg_grad(u / u.norm() * r).abs().max()) < 1e-12


def test_k1_objective_equals_dflow_objective():
    """K = 1 with z_1 = T(z_0): the penalty vanishes and the MS-Flow objective is D-Flow's (M4);
    with z_1 the prox of T(z_0) and a growing penalty, it converges to D-Flow's at rate 1/mu."""
    model = _mlp()
    op = make_operator("inpaint_random", 0.05)
    g = torch.Generator().manual_seed(0)
    y = torch.randn(3, op.m, generator=g, dtype=torch.float64)
    z0 = torch.randn(3, D, generator=g, dtype=torch.float64)
    cfg = MSFlowConfig(K=1, n_steps=10, lam=0.3, mu_max=1e6)
    t_z0 = integrate(model, z0, steps=10)
    ms = ms_flow_objective(model, op, y, [z0, t_z0], cfg)
    df = d_flow_objective(model, op, y, z0, DFlowConfig(n_steps=10, lam=0.3))
    np.testing.assert_allclose(ms.detach().numpy(), df.detach().numpy(), rtol=1e-4)
    gaps = []
    for mu in (1e6, 1e8, 1e10):
        z1 = op.prox(t_z0, y, mu)
        env = ms_flow_objective(model, op, y, [z0, z1], cfg, mu=mu)
        gaps.append(float((df - env).abs().max()))
        assert bool((env <= df + 1e-9).all())  # the envelope lies below
    assert gaps[2] < 1e-4 * float(df.abs().max())
    assert gaps[0] / gaps[1] == pytest.approx(100, rel=0.2) and gaps[1] / gaps[2] == pytest.approx(100, rel=0.2)


def test_segments_compose_to_the_flow_map():
    model = _mlp()
    z = torch.randn(2, D, dtype=torch.float64)
    cfg = MSFlowConfig(K=4, n_steps=12)
    x = z
    for k in range(4):
        x = segment_map(model, x, k, cfg)
    np.testing.assert_allclose(x.numpy(), integrate(model, z, steps=12).numpy(), atol=1e-12)


def test_vjp_gradient_matches_autograd_of_the_objective():
    model = _mlp()
    op = make_operator("sr_x2", 0.05)
    g = torch.Generator().manual_seed(2)
    y = torch.randn(2, op.m, generator=g, dtype=torch.float64)
    cfg = MSFlowConfig(K=3, n_steps=6, lam=0.2, jacobian="vjp")
    z = [torch.randn(2, D, generator=g, dtype=torch.float64) for _ in range(4)]
    phi = [segment_map(model, z[k], k, cfg) for k in range(3)]
    mu = 7.0
    for k in (0, 1, 2):
        zz = [t.clone() for t in z]
        zz[k].requires_grad_(True)
        (ref,) = torch.autograd.grad(ms_flow_objective(model, op, y, zz, cfg, mu=mu).sum(), zz[k])
        got = _shoot_grad(_Counted(model), z, phi, k, mu, cfg)
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-8, atol=1e-10)


def test_jacobian_free_is_exact_when_the_flow_is_a_translation():
    """With v(x, t) independent of x every segment map is a translation (J = I): the
    Jacobian-free and VJP variants must take identical steps."""

    def field(x, t, cond=None):
        return torch.sin(3 * t)[:, None] * torch.linspace(-1, 1, x.shape[1], dtype=x.dtype)[None]

    op = make_operator("inpaint_box", 0.1)
    y = torch.randn(2, op.m, dtype=torch.float64)
    base = MSFlowConfig(K=4, n_steps=8, n_outer=6, init="ode")
    a = ms_flow(field, op, y, base)
    b = ms_flow(field, op, y, MSFlowConfig(**{**base.__dict__, "jacobian": "vjp"}))
    for za, zb in zip(a.z, b.z, strict=True):
        np.testing.assert_allclose(za.numpy(), zb.numpy(), atol=1e-12)


def test_ms_flow_stitches_and_fits_the_data_with_an_exact_prior():
    """A unimodal Gaussian prior with its exact velocity: MS-Flow ends on a flow trajectory
    (small stitching residual, the fresh solve from z_0 reproduces z_K) that fits the data."""
    gm = GaussianMixture.random(D, 1, mean_scale=0.6, std=0.5, seed=0)
    field = gm.velocity_field()
    x = gm.sample(4, torch.Generator().manual_seed(1))
    op = make_operator("inpaint_random", 0.05, seed=0)
    y = op.measure(x, torch.Generator().manual_seed(2))
    res = ms_flow(field, op, y, MSFlowConfig(K=4, n_steps=16, n_outer=100, step=1.0))
    assert float(res.stitch_residual.max()) < 1e-2
    assert float((psnr(res.x, x) - psnr(res.x_on_manifold, x)).abs().max()) < 0.5
    resid = (op.A(res.x) - y).norm(dim=1) / y.norm(dim=1)
    assert float(resid.max()) < 0.1
    assert len(res.z) == 5 and res.history["mu"][0] == pytest.approx(1.0)
    assert res.history["mu"][-1] == pytest.approx(1e4)


def test_nosweep_stub_does_not_stitch():
    gm = GaussianMixture.random(D, 4, mean_scale=0.6, std=0.3, seed=0)
    x = gm.sample(4, torch.Generator().manual_seed(1))
    op = make_operator("inpaint_random", 0.05, seed=0)
    y = op.measure(x, torch.Generator().manual_seed(2))
    res = ms_flow(gm.velocity_field(), op, y, MSFlowConfig(K=4, n_steps=16, n_outer=5, step=0.0,
                                                          continuation="fixed"))
    assert float(res.stitch_residual.mean()) > 0.05


def test_ms_flow_bad_inputs():
    model = _mlp()
    op = make_operator("sr_x2", 0.05)
    with pytest.raises(ValueError, match="K"):
        MSFlowConfig(K=0)
    with pytest.raises(ValueError, match="divide"):
        MSFlowConfig(K=3, n_steps=10)
    with pytest.raises(ValueError, match=r"shape \(B, 16\)"):
        ms_flow(model, op, torch.zeros(2, 64, dtype=torch.float64))
    with pytest.raises(ValueError, match="NaN"):
        ms_flow(model, op, torch.full((2, 16), float("nan"), dtype=torch.float64))
    with pytest.raises(ValueError, match="too small"):
        ms_flow(model, op, torch.zeros(1, 16, dtype=torch.float64), MSFlowConfig(n_steps=8, nfe_budget=10))
    with pytest.raises(TypeError, match="LinearOperator"):
        ms_flow(model, "A", torch.zeros(1, 16))
    with pytest.raises(ValueError, match="adjoint"):
        DFlowConfig(method="midpoint", adjoint=True)


# ---------------------------------------------------------------------------------------------
# D-Flow, adjoint and memory
# ---------------------------------------------------------------------------------------------


def test_adjoint_gradient_close_to_backprop():
    model = _mlp()
    op = make_operator("deblur", 0.05)
    y = torch.randn(2, op.m, dtype=torch.float64)
    z = torch.randn(2, D, dtype=torch.float64)
    grads = []
    for adjoint in (False, True):
        zz = z.clone().requires_grad_(True)
        d_flow_objective(model, op, y, zz, DFlowConfig(n_steps=64, adjoint=adjoint)).sum().backward()
        grads.append(zz.grad)
    rel = float((grads[0] - grads[1]).norm() / grads[0].norm())
    assert rel < 2e-2


def test_saved_bytes_scale_with_steps_for_dflow_only():
    model = _mlp(dtype=torch.float32)
    op = make_operator("inpaint_random", 0.05)
    y = torch.randn(1, op.m)
    z = torch.randn(1, D)

    def dflow_bytes(N, adjoint=False):
        def fn():
            zz = z.clone().requires_grad_(True)
            d_flow_objective(model, op, y, zz, DFlowConfig(n_steps=N, adjoint=adjoint)).sum().backward()
        return saved_tensor_bytes(fn).peak_bytes

    def ms_bytes(N, jac="free"):
        cfg = MSFlowConfig(K=5, n_steps=N, n_outer=1, init="ode", jacobian=jac)
        return saved_tensor_bytes(lambda: ms_flow(model, op, y, cfg)).peak_bytes

    b10, b20, b40 = dflow_bytes(10), dflow_bytes(20), dflow_bytes(40)
    assert b20 > b10 and b40 - b10 == 3 * (b20 - b10)  # exactly linear in N
    assert dflow_bytes(40) == b40  # deterministic
    assert dflow_bytes(10, True) == dflow_bytes(40, True)  # adjoint: flat
    assert ms_bytes(10) == ms_bytes(40) == 0  # Jacobian-free: no graph at all
    v10, v20, v40 = ms_bytes(10, "vjp"), ms_bytes(20, "vjp"), ms_bytes(40, "vjp")
    assert v40 - v10 == 3 * (v20 - v10) > 0  # one segment of N/K steps at a time
    assert (v40 - v10) * 4 < (b40 - b10)  # K = 5 segments: about 5x smaller slope


def test_flow_map_adjoint_forward_equals_solver():
    model = _mlp()
    z = torch.randn(2, D, dtype=torch.float64)
    np.testing.assert_allclose(flow_map(model, z, 9, adjoint=True).detach().numpy(),
                               integrate(model, z, steps=9).numpy(), atol=1e-12)


# ---------------------------------------------------------------------------------------------
# NFE accounting and degenerate baselines
# ---------------------------------------------------------------------------------------------


def test_every_solver_respects_the_nfe_budget():
    model = _mlp()
    op = make_operator("sr_x2", 0.05)
    y = torch.randn(2, op.m, dtype=torch.float64)
    B = 120
    r = ms_flow(model, op, y, MSFlowConfig(K=4, n_steps=8, nfe_budget=B))
    assert r.nfe == 16 + ((B - 16) // 8) * 8 and r.nfe <= B
    r = ms_flow(model, op, y, MSFlowConfig(K=2, n_steps=8, nfe_budget=B, jacobian="vjp", init="ode"))
    assert r.nfe == 8 + ((B - 8) // 24) * 24
    for adjoint in (False, True):
        r = d_flow(model, op, y, DFlowConfig(n_steps=8, nfe_budget=B, adjoint=adjoint))
        per = 32 if adjoint else 16
        assert r.nfe == 16 + per * r.info["evals"] and r.nfe <= B
    assert pnp_flow(model, op, y, PnPFlowConfig(nfe_budget=B)).nfe == B
    assert ot_ode(model, op, y, OTODEConfig(nfe_budget=B)).nfe == B
    assert flow_dps(model, op, y, FlowDPSConfig(nfe_budget=B)).nfe == B


def test_guidance_off_is_the_plain_flow():
    model = _mlp()
    op = make_operator("inpaint_box", 0.05)
    y = torch.randn(2, op.m, dtype=torch.float64)
    x0 = torch.Generator().manual_seed(5)
    eps = torch.randn(2, D, generator=x0, dtype=torch.float64)
    r = flow_dps(model, op, y, FlowDPSConfig(steps=10, zeta=0.0, seed=5))
    np.testing.assert_allclose(r.x.numpy(), integrate(model, eps, steps=10).numpy(), atol=1e-12)
    r = ot_ode(model, op, y, OTODEConfig(steps=10, gamma=0.0, seed=5))
    start = 0.2 * op.pinv(y) + 0.8 * eps
    np.testing.assert_allclose(r.x.numpy(), integrate(model, start, t0=0.2, t1=1.0, steps=10).numpy(),
                               atol=1e-12)


# ---------------------------------------------------------------- issue 48: the fixed point
class _GaussianFlow(torch.nn.Module):
    """The exact CondOT velocity of data N(m, diag(sd^2)) from N(0, I) noise: linear in x, so the
    Euler flow map is affine, T(z) = J z + b, and every MAP below has a closed form."""

    def __init__(self, m, sd):
        super().__init__()
        self.m, self.s2 = m, sd**2

    def forward(self, x, t, cond=None):
        t = t.reshape(-1, 1) if t.dim() else t
        return self.m + (t * self.s2 - (1 - t)) / (t**2 * self.s2 + (1 - t) ** 2) * (x - t * self.m)


def test_exact_jacobian_converges_to_the_closed_form_map_and_the_free_scheme_is_biased():
    """On an exactly Gaussian flow prior with R(z) = ||z||^2/2 (deblur, 8x8): ``jacobian="vjp"``
    converges to the MAP argmin D(T z) + lam R(z), which solves (J^T A^T A J / s2 + lam) z =
    J^T A^T r / s2; the Jacobian-free scheme converges instead to the root of
    grad D(T z) + lam grad R(z) = 0, i.e. (A^T A J / s2 + lam) z = A^T r / s2 (the README's
    statement of its bias), which is far from the MAP."""
    dt = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        d, n = 64, 4
        g = torch.Generator().manual_seed(0)
        m = 0.3 * torch.randn(d, generator=g)
        sd = 0.2 + 0.6 * torch.rand(d, generator=g)
        model = _GaussianFlow(m, sd)
        op = make_operator("deblur", 0.05, seed=0)
        y = op.measure(m + sd * torch.randn(2, d, generator=g), g)
        b = integrate(model, torch.zeros(1, d), steps=n, method="euler")
        J = (integrate(model, torch.eye(d), steps=n, method="euler") - b).T
        A = op.A(torch.eye(d)).T
        lam, s2 = 1.0, op.sigma**2
        r = (y - b @ A.T).T
        eye = torch.eye(d)
        z_map = torch.linalg.solve(J.T @ A.T @ A @ J / s2 + lam * eye, J.T @ A.T @ r / s2).T
        z_bias = torch.linalg.solve(A.T @ A @ J / s2 + lam * eye, A.T @ r / s2).T
        gap = float((z_map - z_bias).norm() / z_map.norm())
        assert gap > 0.3  # the bias is not small here

        def run(jac, n_outer):
            cfg = MSFlowConfig(K=2, n_steps=n, init="ode", jacobian=jac, regularizer="gaussian",
                               lam=lam, n_outer=n_outer, mu_max=1e4, step=1.0)
            return ms_flow(model, op, y, cfg).z[0]

        z_vjp = run("vjp", 300)
        z_free = run("free", 100)
        rel = lambda a, b: float((a - b).norm() / b.norm())  # noqa: E731
        assert rel(z_vjp, z_map) < 0.08 < 0.3 < rel(z_vjp, z_bias)
        assert rel(z_free, z_bias) < 0.08 < 0.3 < rel(z_free, z_map)
    finally:
        torch.set_default_dtype(dt)

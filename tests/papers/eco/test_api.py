"""Correctness of the ECO optimizers, the master-weight baseline and the memory accounting."""

import io
import math

import pytest
import torch
from torch import nn

from icml26.core.quant import QuantizedWeight, QuantSpec, dequantize, quantize
from icml26.papers.eco import (
    ECOSGD,
    ECOAdamW,
    MasterWeightOptimizer,
    eco_param_groups,
    run_quadratic_toy,
    static_memory_bytes,
)

FP8 = QuantSpec("fp8_e4m3", "channel", scale_kind="e8m0")


def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))


def _data(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(64, 16, generator=g), torch.randn(64, 4, generator=g)


def _train(model, opt, steps, x, y, lr_fn=None):
    for t in range(steps):
        if lr_fn is not None:
            for g in opt.param_groups:
                g["lr"] = lr_fn(t)
        opt.zero_grad()
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        opt.step()


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_ecoadamw_without_quantization_equals_torch_adamw(wd):
    x, y = _data()
    a, b = _mlp(), _mlp()
    ref = torch.optim.AdamW(a.parameters(), lr=1e-2, betas=(0.9, 0.95), weight_decay=wd, foreach=False)
    ours = ECOAdamW(b.parameters(), lr=1e-2, betas=(0.9, 0.95), weight_decay=wd, weight_format=None)
    _train(a, ref, 30, x, y, lambda t: 1e-2 * (1 - t / 40))
    _train(b, ours, 30, x, y, lambda t: 1e-2 * (1 - t / 40))
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(ref.state[pa]["exp_avg_sq"], ours.state[pb]["exp_avg_sq"])


@pytest.mark.parametrize("kw", [dict(momentum=0.9), dict(momentum=0.9, dampening=0.9, weight_decay=0.01)])
def test_ecosgd_without_quantization_equals_torch_sgd(kw):
    x, y = _data()
    a, b = _mlp(), _mlp()
    ref = torch.optim.SGD(a.parameters(), lr=0.05, **kw)
    ours = ECOSGD(b.parameters(), lr=0.05, weight_format=None, **kw)
    _train(a, ref, 30, x, y)
    _train(b, ours, 30, x, y)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=1e-6, atol=1e-7)


def test_stuck_weight_momentum_identity_sgdm():
    """RTN-ECO with every update rounded away: m_k = g_1/β + ((1-τ)/β) Σ_{i≥2} g_i."""
    beta, tau, lr = 0.9, 0.9, 1e-3
    p = torch.zeros(8, requires_grad=True)
    opt = ECOSGD([p], lr=lr, momentum=beta, dampening=tau, rounding="nearest",
                 weight_format=QuantSpec("int8", "tensor", fixed_scale=1.0))
    gen = torch.Generator().manual_seed(0)
    gs = [torch.rand(8, generator=gen) * 0.5 for _ in range(20)]
    for g in gs:
        p.grad = g.clone()
        opt.step()
        assert torch.equal(p.detach(), torch.zeros(8))  # stuck: |η m̃| < δ/2 throughout
    expected = gs[0] / beta + (1 - tau) / beta * torch.stack(gs[1:]).sum(0)
    torch.testing.assert_close(opt.state[p]["momentum_buffer"], expected, rtol=1e-6, atol=1e-6)


def test_stuck_weight_moves_once_the_accumulated_step_crosses_half_a_grid_step():
    p = torch.zeros(1, requires_grad=True)
    eco = ECOSGD([p], lr=1e-2, momentum=0.9, rounding="nearest",
                 weight_format=QuantSpec("int8", "tensor", fixed_scale=1.0))
    q = torch.zeros(1, requires_grad=True)
    naive = ECOSGD([q], lr=1e-2, momentum=0.9, rounding="nearest", error_feedback=False,
                   weight_format=QuantSpec("int8", "tensor", fixed_scale=1.0))
    for _ in range(300):
        p.grad = torch.tensor([-1.0])
        q.grad = torch.tensor([-1.0])
        eco.step()
        naive.step()
    assert q.item() == 0.0  # naive: η m ≤ 0.1 < 0.5 forever
    assert p.item() >= 2.0  # ECO: ~ η Σ g = 3 after 300 steps


def test_ecoadamw_injection_matches_reference_formula():
    torch.manual_seed(0)
    w = torch.randn(8, 16) * 0.05
    p = nn.Parameter(w.clone())
    opt = ECOAdamW([p], lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, rounding="nearest",
                   weight_format=FP8)
    theta0 = dequantize(quantize(w, FP8))
    g = torch.randn(8, 16)
    p.grad = g.clone()
    opt.step()
    lr, b1c, b2c = 3e-3, 1 - 0.9, 1 - 0.95
    m = (1 - 0.9) * g
    v = (1 - 0.95) * g * g
    D = (v / b2c).sqrt() + 1e-8
    tilde = (1 - lr * 0.1) * theta0 - lr * (m / b1c) / D
    new = dequantize(quantize(tilde, FP8))
    e = tilde - new
    m_ref = m + (1 - lr * 0.1) * (b1c / lr) * (1 - 1 / 0.9) * D * e
    torch.testing.assert_close(p.dequantize(), new)
    torch.testing.assert_close(opt.state[p]["exp_avg"], m_ref, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(p.detach(), new)


@pytest.mark.parametrize("which", ["sgd", "adamw"])
def test_exact_feedback_reproduces_master_weight_trajectory(which):
    x, y = _data()
    a, b = _mlp(), _mlp()
    qa = [a[0].weight, a[2].weight]
    if which == "sgd":
        base = torch.optim.SGD(a.parameters(), lr=0.05, momentum=0.9, weight_decay=0.01)
        ours = ECOSGD(eco_param_groups(b, FP8, exclude=()), lr=0.05, momentum=0.9, rounding="nearest",
                      exact_feedback=True, weight_decay=0.01)
    else:
        base = torch.optim.AdamW(a.parameters(), lr=3e-3, weight_decay=0.01, foreach=False)
        ours = ECOAdamW(eco_param_groups(b, FP8, exclude=()), lr=3e-3, weight_decay=0.01,
                        rounding="nearest", exact_feedback=True)
    mw = MasterWeightOptimizer(base, qa, FP8)
    _train(a, mw, 50, x, y)
    _train(b, ours, 50, x, y)
    for pa, pb in zip(qa, [b[0].weight, b[2].weight], strict=True):
        master = mw.state[pa]["master"]
        transient = pb.dequantize() + ours.state[pb]["error"]
        rel = (master - transient).norm() / master.norm()
        assert rel < 1e-5
        same = (pa.dequantize() == pb.dequantize()).float().mean()
        assert same > 0.995


def test_eco_tracks_master_better_than_naive():
    """With a small lr (updates below half a grid step) ECO follows the master run, naive does not."""
    x, y = _data()
    runs = {}
    for name in ("mw", "eco", "naive"):
        m = _mlp()
        if name == "mw":
            opt = MasterWeightOptimizer(torch.optim.AdamW(m.parameters(), lr=3e-4), [m[0].weight, m[2].weight], FP8)
        else:
            opt = ECOAdamW(eco_param_groups(m, FP8, exclude=()), lr=3e-4, rounding="nearest",
                           error_feedback=name == "eco")
        _train(m, opt, 150, x, y)
        runs[name] = float((m(x) - y).pow(2).mean().detach())
    assert abs(runs["eco"] - runs["mw"]) < abs(runs["naive"] - runs["mw"])


def test_no_float_copy_of_quantized_weights_survives_a_step():
    model = _mlp()
    opt = ECOAdamW(eco_param_groups(model, FP8, exclude=()), lr=1e-3)
    x, y = _data()
    _train(model, opt, 3, x, y)
    for lin in (model[0], model[2]):
        w = lin.weight
        assert isinstance(w, QuantizedWeight) and w.storage_nbytes["float_cache"] == 0
        st = opt.state[w]
        assert set(st) == {"step", "exp_avg", "exp_avg_sq"}
        assert w.qtensor.codes.dtype == torch.float8_e4m3fn
    mem = static_memory_bytes(model, opt, [model[0].weight, model[2].weight])
    n = 16 * 32 + 32 * 4
    assert mem["weights"] == n  # 1 byte per weight: the FP8 codes and nothing else
    assert mem["scales"] == 32 + 4
    assert mem["master"] == 0
    assert mem["states"] == 8 * n + 2 * 4  # exp_avg + exp_avg_sq (fp32) + two step counters
    # the model still runs (weights are materialized transiently by the hook)
    assert model(x).shape == (64, 4)
    # the master-weight baseline pays 4 more bytes per weight
    m2 = _mlp()
    mw = MasterWeightOptimizer(torch.optim.AdamW(m2.parameters(), lr=1e-3), [m2[0].weight, m2[2].weight], FP8)
    _train(m2, mw, 3, x, y)
    mem2 = static_memory_bytes(m2, mw, [m2[0].weight, m2[2].weight])
    assert mem2["master"] == 4 * n
    assert mem["total"] / mem2["total"] < 0.72


def test_keeping_float_weights_is_charged():
    model = _mlp()
    opt = ECOAdamW(eco_param_groups(model, FP8, exclude=()), lr=1e-3, release_weights=False)
    x, y = _data()
    _train(model, opt, 1, x, y)
    mem = static_memory_bytes(model, opt, [model[0].weight])
    assert mem["weights"] == 16 * 32 * 5  # float32 storage + FP8 codes


def test_stochastic_rounding_is_deterministic_for_a_generator():
    outs = []
    for _ in range(2):
        m = _mlp()
        opt = ECOAdamW(eco_param_groups(m, FP8), lr=1e-3, generator=torch.Generator().manual_seed(3))
        x, y = _data()
        _train(m, opt, 5, x, y)
        outs.append(m[0].weight.detach().clone())
    assert torch.equal(outs[0], outs[1])


def test_int4_group_weights_are_packed():
    m = _mlp()
    spec = QuantSpec("int4", "group", group_size=16)
    opt = ECOAdamW(eco_param_groups(m, spec, exclude=()), lr=1e-3)
    x, y = _data()
    _train(m, opt, 2, x, y)
    q = m[0].weight.qtensor
    assert q.codes.dtype == torch.uint8 and q.codes.numel() == 16 * 32 // 2


def test_toy_naive_error_grows_as_lr_shrinks_eco_does_not():
    r = run_quadratic_toy((1e-1, 3e-3), dim=16, steps=400, noise=0.05, lam_range=(0.5, 1.0),
                          arms=("naive_rtn", "eco_rtn"))
    assert r.error["naive_rtn"][1] > 10 * r.error["eco_rtn"][1]
    assert r.error["naive_rtn"][1] > r.error["naive_rtn"][0]


def test_bad_input():
    p = nn.Parameter(torch.randn(4, 4))
    with pytest.raises(ValueError, match="unsupported element format"):
        ECOAdamW([p], weight_format=QuantSpec("fp7"))
    with pytest.raises(ValueError, match="lr must be > 0"):
        ECOAdamW([p], lr=0.0)
    with pytest.raises(ValueError):
        ECOAdamW([p], lr=-1.0, error_feedback=False)
    with pytest.raises(ValueError, match="beta"):
        ECOAdamW([p], betas=(0.0, 0.9))
    with pytest.raises(ValueError, match="momentum"):
        ECOSGD([p], lr=0.1, momentum=0.0)
    with pytest.raises(TypeError):
        ECOAdamW([torch.zeros(3, dtype=torch.long)])
    with pytest.raises(TypeError):
        ECOAdamW([p], weight_format="fp8_e4m3")
    with pytest.raises(ValueError, match="rounding"):
        ECOAdamW([p], rounding="up")
    opt = ECOAdamW([p], lr=1e-3)
    p.grad = torch.full((4, 4), math.nan)
    with pytest.raises(ValueError, match="NaN"):
        opt.step()
    p.grad = torch.ones(4, 4)
    opt.param_groups[0]["lr"] = -1e-3
    with pytest.raises(ValueError, match="learning rate"):
        opt.step()
    with pytest.raises(ValueError):
        run_quadratic_toy((0.0,))


def test_zero_lr_in_a_schedule_leaves_weights_and_momentum_finite():
    p = nn.Parameter(torch.randn(4, 8))
    opt = ECOAdamW([p], lr=1e-3)
    before = p.detach().clone()
    opt.param_groups[0]["lr"] = 0.0
    p.grad = torch.randn(4, 8)
    opt.step()
    assert torch.equal(p.detach(), before)
    assert torch.isfinite(opt.state[p]["exp_avg"]).all()


@pytest.mark.parametrize("spec", [FP8, QuantSpec("int4", "group", group_size=16)])
def test_batched_step_equals_the_per_parameter_step(spec):
    """The foreach-style path is the same update: RTN results identical to the per-parameter loop."""
    x, y = _data()
    runs = []
    for batched in (True, False):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
        opt = ECOAdamW(eco_param_groups(m, spec, exclude=()), lr=3e-3, weight_decay=0.1,
                       rounding="nearest", batched=batched, diagnostics=True)
        _train(m, opt, 20, x, y)
        runs.append((m, opt))
    (a, oa), (b, ob) = runs
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa.detach() if not isinstance(pa, QuantizedWeight) else pa.dequantize(),
                                   pb.detach() if not isinstance(pb, QuantizedWeight) else pb.dequantize(),
                                   rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(oa.state[pa]["exp_avg"], ob.state[pb]["exp_avg"], rtol=1e-5, atol=1e-8)
    assert oa.history["frozen_fraction"] == pytest.approx(ob.history["frozen_fraction"])


def test_flat_buckets_are_views_and_survive_checkpoints():
    """FP8 parameters of equal row length share one buffer for codes, scales and moments; the
    model, the optimizer state and the memory accounting see each parameter's own part, and a
    state_dict loaded into a fresh optimizer continues exactly like the original."""
    x, y = _data()
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
    opt = ECOAdamW(eco_param_groups(m, FP8, exclude=()), lr=3e-3, rounding="stochastic",
                   generator=torch.Generator().manual_seed(0))
    _train(m, opt, 3, x, y)
    w1, w2 = m[2].weight, m[4].weight  # both rows of length 32: one bucket
    assert w1.qtensor.codes.untyped_storage().data_ptr() == w2.qtensor.codes.untyped_storage().data_ptr()
    assert opt.state[w1]["exp_avg"].untyped_storage().data_ptr() == \
        opt.state[w2]["exp_avg"].untyped_storage().data_ptr()
    assert w1.storage_nbytes["codes"] == 32 * 32
    q = [m[0].weight, w1, w2]
    mem = static_memory_bytes(m, opt, q)
    n = sum(p.numel() for p in q)
    # moments (8 B each) + one float32 step counter per parameter; shared buffers counted once
    assert mem["states"] == 8 * n + 4 * len(q) and mem["weights"] == n
    # checkpoint into a fresh model + optimizer; both continue identically
    buf = io.BytesIO()
    torch.save({"model": m.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, weights_only=True)
    sd_m, sd_o = ckpt["model"], ckpt["opt"]
    torch.manual_seed(5)
    m2 = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
    opt2 = ECOAdamW(eco_param_groups(m2, FP8, exclude=()), lr=3e-3, rounding="stochastic",
                    generator=torch.Generator().manual_seed(9))
    m2.load_state_dict(sd_m)
    opt2.load_state_dict(sd_o)
    _train(m, opt, 4, x, y)
    _train(m2, opt2, 4, x, y)
    for a, b in zip(m.parameters(), m2.parameters(), strict=True):
        assert torch.equal(a.dequantize() if isinstance(a, QuantizedWeight) else a.detach(),
                           b.dequantize() if isinstance(b, QuantizedWeight) else b.detach())


def test_flat_path_refreshes_float_copies_and_versions():
    """release_weights=False keeps a float copy: the flat update refreshes it with the new codes."""
    x, y = _data()
    m = _mlp()
    opt = ECOAdamW(eco_param_groups(m, FP8, exclude=()), lr=1e-2, release_weights=False)
    w = m[0].weight
    v0 = w._qversion
    _train(m, opt, 3, x, y)
    assert w._qversion == v0 + 3
    assert torch.equal(w._values(), dequantize(w.qtensor))


def test_sham_feedback_injects_a_permutation_of_the_error():
    """The negative control injects the same error values at permuted coordinates (same
    multiset, different places) and needs error feedback on."""
    with pytest.raises(ValueError, match="sham_feedback"):
        ECOAdamW(_mlp().parameters(), error_feedback=False, sham_feedback=True)
    opt = ECOSGD(_mlp().parameters(), lr=1e-2, momentum=0.9, sham_feedback=True,
                 generator=torch.Generator().manual_seed(0))
    err = torch.arange(64.0).reshape(8, 8)
    out = opt._injected(err, opt.param_groups[0])
    assert out.shape == err.shape and not torch.equal(out, err)
    assert torch.equal(out.reshape(-1).sort().values, err.reshape(-1))
    plain = ECOSGD(_mlp().parameters(), lr=1e-2, momentum=0.9)
    assert plain._injected(err, plain.param_groups[0]) is err
    # a sham run trains (finite, moves) and differs from ECO's
    x, y = _data()
    runs = []
    for sham in (False, True):
        m = _mlp()
        o = ECOAdamW(eco_param_groups(m, FP8), lr=3e-3, rounding="nearest", sham_feedback=sham,
                     generator=torch.Generator().manual_seed(0))
        _train(m, o, 10, x, y)
        runs.append(m[0].weight.dequantize())
    assert torch.isfinite(runs[1]).all() and not torch.equal(runs[0], runs[1])

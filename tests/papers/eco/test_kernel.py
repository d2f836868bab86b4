"""The one-pass C kernel of the ECO-AdamW fast path gives the eager torch path's bits.

Every comparison is exact (``torch.equal`` on the FP8 codes, the E8M0 scales and the float32
moments, and on the generator state afterwards): the kernel claims the same arithmetic in the same
order with the same roundings and the same random words, not an approximation of them.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from icml26.core.quant import QuantSpec
from icml26.core.quant import rows as _rows
from icml26.papers.eco import ECOAdamW, _kernel, eco_param_groups

pytestmark = pytest.mark.skipif(_kernel.kernel() is None, reason="no C compiler: eager path only")

FP8 = QuantSpec("fp8_e4m3", "channel", scale_kind="e8m0")
E5M2 = QuantSpec("fp8_e5m2", "channel", scale_kind="e8m0")


def _model(seed: int = 0) -> nn.Module:
    # row lengths 15 (odd: the chunked kernel path under SR), 32 (two layers: one shared bucket),
    # 33 and 38 (not multiples of 8: the 8-wide kernel's row tails); scales from tiny to large
    # gradients over the steps
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(15, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 33), nn.Tanh(), nn.Linear(33, 38), nn.Tanh(), nn.Linear(38, 4))


def _run(enabled: bool, spec: QuantSpec, rounding: str, ef: bool, wd: float, steps: int = 12,
         lr: float = 3e-3, simd: bool = True, wide: bool = False):
    _kernel.set_enabled(enabled)
    _kernel.set_simd(simd)
    try:
        m = _model()
        if wide:  # magnitudes over twelve decades in every row: many values in the FP8 subnormal range
            g = torch.Generator().manual_seed(3)
            with torch.no_grad():
                for p in m.parameters():
                    p.mul_(torch.pow(10.0, -12 * torch.rand(p.shape, generator=g)))
        gen = torch.Generator().manual_seed(123)
        opt = ECOAdamW(eco_param_groups(m, spec, exclude=()), lr=lr, betas=(0.9, 0.95),
                       weight_decay=wd, rounding=rounding, error_feedback=ef, generator=gen)
        g = torch.Generator().manual_seed(7)
        x, y = torch.randn(64, 15, generator=g), torch.randn(64, 4, generator=g)
        for t in range(steps):
            for grp in opt.param_groups:  # a changing lr: the per-step constants follow it
                grp["lr"] = lr * (1 - t / (2 * steps))
            opt.zero_grad(set_to_none=True)
            ((m(x) - y).pow(2).mean() * (10.0 ** (t % 3 - 1))).backward()
            opt.step()
        return m, opt, gen
    finally:
        _kernel.set_enabled(True)
        _kernel.set_simd(True)


def _state(m: nn.Module, opt: ECOAdamW) -> list[torch.Tensor]:
    out = []
    for p in m.parameters():
        q = getattr(p, "qtensor", None)
        if q is not None:
            out += [q.codes.view(torch.uint8).clone(), q.scale.clone()]
        else:
            out.append(p.detach().clone())
        st = opt.state[p]
        out += [st["exp_avg"].clone(), st["exp_avg_sq"].clone()]
    return out


@pytest.mark.parametrize("simd", [True, False], ids=["8wide", "portable"])
@pytest.mark.parametrize("spec", [FP8, E5M2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("rounding,ef,wd", [("stochastic", True, 0.1), ("nearest", True, 0.0),
                                            ("stochastic", False, 0.0), ("nearest", False, 0.1)])
def test_kernel_step_is_bit_identical_to_the_eager_step(spec, rounding, ef, wd, simd):
    a, oa, ga = _run(True, spec, rounding, ef, wd, simd=simd)
    b, ob, gb = _run(False, spec, rounding, ef, wd)
    sa, sb = _state(a, oa), _state(b, ob)
    assert len(sa) == len(sb)
    for u, v in zip(sa, sb, strict=True):
        assert u.dtype == v.dtype and torch.equal(u, v)
    assert torch.equal(ga.get_state(), gb.get_state())  # the same random words were drawn


@pytest.mark.parametrize("simd", [True, False], ids=["8wide", "portable"])
@pytest.mark.parametrize("spec", [FP8, E5M2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("rounding", ["stochastic", "nearest"])
def test_kernel_step_is_bit_identical_with_fp8_subnormals(spec, rounding, simd):
    a, oa, ga = _run(True, spec, rounding, True, 0.1, simd=simd, wide=True, lr=1e-12)
    b, ob, gb = _run(False, spec, rounding, True, 0.1, wide=True, lr=1e-12)
    codes = torch.cat([p.qtensor.codes.view(torch.uint8).reshape(-1) for p in a.parameters()
                       if getattr(p, "qtensor", None) is not None])
    exp_bits = 0x78 if spec is FP8 else 0x7C
    assert ((codes & exp_bits) == 0).float().mean() > 0.05  # subnormal codes (and zeros) are common
    for u, v in zip(_state(a, oa), _state(b, ob), strict=True):
        assert u.dtype == v.dtype and torch.equal(u, v)
    assert torch.equal(ga.get_state(), gb.get_state())


def test_kernel_sr_path_is_used_for_even_rows_and_the_chunked_path_for_odd_rows(monkeypatch):
    """Both kernel entry points run in the test above: eco_step (even row length) and the
    chunked eco_moments/eco_update pair (odd row length under SR)."""
    lib = _kernel.kernel()
    calls = {"eco_step": 0, "eco_step8": 0, "eco_update": 0}

    class Spy:
        def __getattr__(self, name):
            fn = getattr(lib, name)
            if name in calls:
                def wrapped(*args):
                    calls[name] += 1
                    return fn(*args)
                return wrapped
            return fn

    import icml26.papers.eco.optim as optim
    monkeypatch.setattr(optim._kernel, "kernel", lambda: Spy())
    m = _model()
    opt = ECOAdamW(eco_param_groups(m, FP8, exclude=()), lr=1e-3, rounding="stochastic",
                   generator=torch.Generator().manual_seed(0))
    x = torch.randn(8, 15)
    m(x).pow(2).mean().backward()
    opt.step()
    if _kernel.sqrt_function() is not None and _kernel.mt_ok():
        assert calls["eco_step8" if _kernel.simd() else "eco_step"] >= 1
    assert calls["eco_update"] >= 1


@pytest.mark.parametrize("seed,n", [(0, 1), (3, 624), (5, 1249), (11, 70_001)])
def test_c_generator_draws_torchs_words_and_leaves_its_state(seed, n):
    a, b = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    for _ in range(2):
        ref = _rows.random_bits(n, a)
        got = _kernel.random_bits(n, b)
        assert torch.equal(ref, got)
        assert torch.equal(a.get_state(), b.get_state())


def test_gradient_with_nan_is_refused_by_the_kernel_check():
    m = _model()
    opt = ECOAdamW(eco_param_groups(m, FP8, exclude=()), lr=1e-3)
    m(torch.randn(4, 15)).sum().backward()
    m[2].weight.grad[3, 5] = float("inf")
    with pytest.raises(ValueError, match="NaN or infinite"):
        opt.step()


def test_8wide_kernel_is_used_where_its_sqrt_self_test_passes():
    """The 8-wide step runs exactly when the emulated sqrt matched the library on every input of
    the self-test (three whole binades and samples of every exponent, rare lanes included)."""
    _kernel.set_simd(True)
    if _kernel.kernel().eco_simd() and _kernel.sqrt_function() is not None:
        assert _kernel.sqrt_self_test() >= 0
        assert _kernel.simd() == (_kernel.sqrt_self_test() == 0)
    else:
        assert not _kernel.simd()


@pytest.mark.parametrize("n", [1, 7, 8, 9, 4099])
def test_emulated_sqrt_gives_torchs_bits(n):
    if not _kernel.simd():
        pytest.skip("no 8-wide kernel (or its self-test failed): the library sqrt is called")
    gen = torch.Generator().manual_seed(n)
    x = torch.rand(n, generator=gen) * torch.exp2(torch.randint(-149, 128, (n,), generator=gen).float())
    x[::5] = 0.0
    x[1::7] = torch.tensor(1e-45)  # subnormal
    x[2::11] = torch.tensor(3.4e38)  # above the rare-lane bound
    out = torch.empty(n)
    _kernel.kernel().sqrt_emul(n, x.data_ptr(), out.data_ptr(), _kernel.sqrt_function(), _kernel.VML_MODE)
    assert torch.equal(out.view(torch.int32), torch.sqrt(x).view(torch.int32))
    # a block of 65536 values of one binade (none of them a rare lane)
    y = torch.rand(1 << 16, generator=gen) + 1.0
    out = torch.empty_like(y)
    _kernel.kernel().sqrt_emul(y.numel(), y.data_ptr(), out.data_ptr(), _kernel.sqrt_function(), _kernel.VML_MODE)
    assert torch.equal(out, torch.sqrt(y))


@pytest.mark.parametrize("simd", [True, False], ids=["8wide", "portable"])
@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_c_float_step_is_bit_identical_to_the_foreach_step_and_torchs_adamw(simd, wd):
    """The float group's C step (odd sizes, tails, a tensor over one 4096 chunk, zero gradients)
    gives the foreach ops' bits and torch.optim.AdamW(foreach=True)'s."""
    shapes = [(1,), (7,), (8,), (33,), (4099,), (3, 5, 7), (64,)]

    def run(kernel_on: bool, ref: bool = False):
        _kernel.set_enabled(kernel_on)
        _kernel.set_simd(simd)
        try:
            gen = torch.Generator().manual_seed(5)
            ps = [torch.nn.Parameter(torch.randn(s, generator=gen)) for s in shapes]
            opt = (torch.optim.AdamW(ps, lr=3e-3, betas=(0.9, 0.95), weight_decay=wd, foreach=True) if ref else
                   ECOAdamW(ps, lr=3e-3, betas=(0.9, 0.95), weight_decay=wd, weight_format=None))
            for t in range(6):
                for i, p in enumerate(ps):
                    p.grad = torch.randn(p.shape, generator=gen) * 10.0 ** (t % 3 - 2)
                    if i == 6:
                        p.grad[::3] = 0.0
                opt.step()
            return [p.detach().clone() for p in ps] + [opt.state[p][k].clone() for p in ps
                                                        for k in ("exp_avg", "exp_avg_sq")]
        finally:
            _kernel.set_enabled(True)
            _kernel.set_simd(True)

    a, b, c = run(True), run(False), run(False, ref=True)
    for u, v, w in zip(a, b, c, strict=True):
        assert torch.equal(u, v) and torch.equal(u, w)

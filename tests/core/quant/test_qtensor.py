"""Scales, MX blocks, QTensor storage and nbytes, fake-quant STE."""

import numpy as np
import pytest
import torch

from icml26.core.quant import (
    QuantSpec,
    block_scales,
    dequantize,
    fake_quant,
    grid_values,
    mx_quantize,
    quant_error_stats,
    quantize,
    round_to_format,
)


def _literal_mx(x: np.ndarray, emax_elem: int, fmt: str, block: int = 32) -> np.ndarray:
    """Straightforward MX reference (floor shared exponent, clamp to [-127, 127], saturate)."""
    out = np.empty_like(x)
    for b in range(0, x.size, block):
        blk = x[b:b + block]
        amax = np.abs(blk).max()
        shared = -127 if amax == 0 else int(np.floor(np.log2(amax))) - emax_elem
        shared = min(max(shared, -127), 127)
        scale = 2.0**shared
        out[b:b + block] = round_to_format(torch.tensor(blk / scale), fmt).numpy() * scale
    return out


@pytest.mark.parametrize("fmt,emax", [("fp4_e2m1", 2), ("fp8_e4m3", 8), ("fp6_e3m2", 4), ("fp6_e2m3", 2)])
def test_mx_matches_literal_reference(fmt, emax):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(32 * 16) * np.exp(rng.normal(0, 2, 32 * 16))).astype(np.float64)
    q = mx_quantize(torch.tensor(x, dtype=torch.float32), fmt)
    assert q.scale.dtype == torch.uint8 and q.scale.shape == (16, 1)
    ref = _literal_mx(x.astype(np.float32).astype(np.float64), emax, fmt)
    np.testing.assert_allclose(dequantize(q).double().numpy(), ref, rtol=0, atol=0)


def test_mx_zero_block_and_ceil_mode_never_saturates():
    x = torch.cat([torch.zeros(32), torch.linspace(-5, 7.9, 32)])
    q = mx_quantize(x, "fp4_e2m1")
    assert q.scale[0].item() == 0  # 2^-127 for the zero block
    assert torch.equal(dequantize(q)[:32], torch.zeros(32))
    qc = mx_quantize(x, "fp4_e2m1", scale_mode="ceil")
    s = block_scales(x, QuantSpec("fp4_e2m1", "mx", mx_scale_mode="ceil"))
    assert (x[32:].abs().max() / s[1]).item() <= 6.0
    assert dequantize(qc).abs().max() >= 7.0


@pytest.mark.parametrize("spec,codes_dtype,bytes_per", [
    (QuantSpec("fp8_e4m3", "channel"), torch.float8_e4m3fn, 1.0),
    (QuantSpec("fp8_e5m2", "tensor"), torch.float8_e5m2, 1.0),
    (QuantSpec("int8", "group", group_size=32), torch.int8, 1.0),
    (QuantSpec("int4", "group", group_size=32), torch.uint8, 0.5),
    (QuantSpec("fp4_e2m1", "mx"), torch.uint8, 0.5),
    (QuantSpec("fp6_e3m2", "mx"), torch.uint8, 1.0),
])
def test_storage_dtype_and_nbytes(spec, codes_dtype, bytes_per):
    x = torch.randn(64, 128)
    q = quantize(x, spec)
    assert q.codes.dtype == codes_dtype
    assert q.codes.nbytes == int(x.numel() * bytes_per)
    assert q.nbytes == q.codes.nbytes + q.scale.nbytes
    n_scales = {"tensor": 1, "channel": 64, "group": 64 * 128 // 32, "mx": 64 * 128 // 32}[spec.granularity]
    assert q.scale.numel() == n_scales
    y = dequantize(q)
    assert y.shape == x.shape and y.dtype == torch.float32
    # idempotence: q(dq(q(x))) == q(x)
    assert torch.equal(dequantize(quantize(y, spec)), y)


def test_channel_scale_maps_row_amax_to_max_code():
    x = torch.randn(8, 16)
    q = quantize(x, QuantSpec("fp8_e4m3", "channel", axis=-1))
    np.testing.assert_allclose(q.scale.squeeze(1), x.abs().amax(1) / 448.0, rtol=1e-6)
    assert torch.allclose(dequantize(q).abs().amax(1), x.abs().amax(1), rtol=1e-6)
    q0 = quantize(x, QuantSpec("fp8_e4m3", "channel", axis=0))
    assert q0.scale.numel() == 16 and dequantize(q0).shape == x.shape


def test_int_symmetric_scale_and_error_bound():
    x = torch.randn(4, 64)
    spec = QuantSpec("int8", "channel")
    err = (dequantize(quantize(x, spec)) - x).abs()
    step = x.abs().amax(1, keepdim=True) / 127
    assert torch.all(err <= step / 2 + 1e-7)


def test_fixed_scale_is_a_uniform_grid():
    spec = QuantSpec("int8", "tensor", fixed_scale=2.0**-6)
    x = torch.tensor([0.01, 0.5, -0.3, 3.0])
    y = dequantize(quantize(x, spec))
    assert torch.equal(y, torch.round(x.clamp(-127 / 64, 127 / 64) * 64) / 64)


def test_stochastic_quantize_unbiased_over_draws():
    x = torch.randn(256) * 0.1
    spec = QuantSpec("fp8_e4m3", "tensor", rounding="stochastic")
    gen = torch.Generator().manual_seed(0)
    mean = torch.stack([dequantize(quantize(x, spec, generator=gen)) for _ in range(2000)]).mean(0)
    ulp = (x.abs().max() / 448) * 2.0**-3 * 2**8  # coarse bound of the grid step at amax
    assert (mean - x).abs().max() < 0.1 * ulp


def test_fake_quant_ste_gradient():
    x = torch.randn(10, requires_grad=True)
    spec = QuantSpec("int4", "tensor")
    y = fake_quant(x, spec)
    assert torch.equal(y.detach(), dequantize(quantize(x.detach(), spec)))
    (y * torch.arange(10.0)).sum().backward()
    assert torch.equal(x.grad, torch.arange(10.0))
    assert not fake_quant(x, spec, ste=False).requires_grad


def test_error_stats():
    x = torch.randn(32, 64)
    s8 = quant_error_stats(x, QuantSpec("fp8_e4m3", "channel"))
    s4 = quant_error_stats(x, QuantSpec("fp4_e2m1", "mx"))
    assert s8["sqnr_db"] > s4["sqnr_db"] > 5
    assert s8["bytes_per_elem"] > s4["bytes_per_elem"]
    assert grid_values("fp4_e2m1").numel() == 15


def test_bad_specs_and_inputs():
    with pytest.raises(ValueError):
        QuantSpec("fp3")
    with pytest.raises(ValueError):
        QuantSpec("int8", "row")
    with pytest.raises(ValueError):
        QuantSpec("int8", "group", group_size=0)
    with pytest.raises(ValueError):
        QuantSpec("fp4_e2m1", "mx", fixed_scale=1.0)
    with pytest.raises(ValueError, match="multiple"):
        quantize(torch.randn(4, 30), QuantSpec("fp4_e2m1", "mx"))
    with pytest.raises(ValueError, match="NaN"):
        quantize(torch.tensor([1.0, float("nan")]), QuantSpec())
    with pytest.raises(TypeError):
        quantize(torch.ones(3, dtype=torch.long), QuantSpec())
    with pytest.raises(TypeError):
        quantize(torch.ones(3), "fp8_e4m3")


def test_e8m0_channel_scales_are_powers_of_two_without_saturation():
    x = torch.randn(16, 64) * torch.logspace(-3, 2, 16)[:, None]
    spec = QuantSpec("fp8_e4m3", "channel", scale_kind="e8m0")
    q = quantize(x, spec)
    assert q.scale.dtype == torch.uint8 and q.scale.nbytes == 16
    s = torch.ldexp(torch.ones(16), q.scale.squeeze(1).int() - 127)
    ratio = x.abs().amax(1) / s
    assert torch.all(ratio <= 448) and torch.all(ratio > 224)
    # a small change of the row's largest element leaves the grid (scale) unchanged
    y = x.clone()
    y[0, x[0].abs().argmax()] *= 1.0001
    assert torch.equal(quantize(y, spec).scale, q.scale)


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_native_fp8_cast_equals_exact_round_to_nearest(fmt):
    from icml26.core.quant.formats import encode, get_format

    f = get_format(fmt)
    grid = grid_values(fmt).float()
    mids = (grid[1:] + grid[:-1]) / 2  # exact ties: round half to even
    g = torch.Generator().manual_seed(0)
    x = torch.cat([grid, mids, torch.randn(20_000, generator=g) * torch.exp(torch.randn(20_000, generator=g) * 4)])
    x = x.clamp(-f.max_normal, f.max_normal)
    spec = QuantSpec(fmt, "tensor", fixed_scale=1.0)
    fast = quantize(x, spec).codes.reshape(-1)
    slow = encode(round_to_format(x, fmt, "nearest"), fmt)
    assert torch.equal(fast.view(torch.uint8), slow.view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_lookup_decode_equals_the_cast(dtype):
    from icml26.core.quant.formats import decode

    fmt = "fp8_e4m3" if dtype == torch.float8_e4m3fn else "fp8_e5m2"
    codes = torch.arange(256, dtype=torch.uint8).view(dtype).reshape(16, 16)
    fast, ref = decode(codes, fmt), codes.to(torch.float32)
    assert fast.shape == (16, 16)
    assert torch.equal(fast.isnan(), ref.isnan())
    assert torch.equal(fast[~fast.isnan()], ref[~ref.isnan()])

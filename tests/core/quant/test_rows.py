"""requantize_rows_: the optimizers' fast FP8 path against the reference quantize / round_to_format."""

import pytest
import torch

from icml26.core.quant import QuantSpec, dequantize, grid_step, grid_values, quantize
from icml26.core.quant.rows import (
    decode_rows,
    random_bits,
    requantize_rows_,
    row_scales,
    supports_rows,
)

SPECS = [QuantSpec("fp8_e4m3", "channel", scale_kind="e8m0"), QuantSpec("fp8_e4m3", "channel"),
         QuantSpec("fp8_e5m2", "group", group_size=16, scale_kind="e8m0")]


def _rows(spec, seed=0, rows=64, k=32):
    g = torch.Generator().manual_seed(seed)
    # heavy-tailed magnitudes so that some values fall in the format's subnormal range
    x = torch.randn(rows, k, generator=g) * torch.exp(2 * torch.randn(rows, k, generator=g))
    x[0] = 0.0  # an all-zero row
    return x.reshape(rows, k) if spec.granularity == "channel" else x.reshape(-1, spec.block_size)


def _buffers(x, spec):
    q = quantize(x, spec)  # right dtypes and shapes
    return torch.empty_like(q.codes), torch.empty_like(q.scale)


@pytest.mark.parametrize("spec", SPECS)
def test_round_to_nearest_is_bit_identical_to_quantize(spec):
    assert supports_rows(spec)
    x = _rows(spec)
    codes, scale = _buffers(x, spec)
    err = requantize_rows_(x.clone(), codes, scale, spec, "nearest")
    ref = quantize(x, spec, rounding="nearest")
    assert torch.equal(codes.view(torch.uint8), ref.codes.view(torch.uint8))
    assert torch.equal(scale, ref.scale)
    assert torch.equal(err, x - dequantize(ref).reshape(x.shape))
    assert torch.equal(decode_rows(codes, scale, spec), dequantize(ref).reshape(x.shape))


@pytest.mark.parametrize("spec", SPECS)
def test_stochastic_rounding_hits_grid_neighbours_and_is_unbiased(spec):
    x = _rows(spec, rows=8, k=16)
    codes, scale = _buffers(x, spec)
    gen = torch.Generator().manual_seed(1)
    n = 3000
    total = torch.zeros_like(x, dtype=torch.float64)
    for _ in range(n):
        err = requantize_rows_(x.clone(), codes, scale, spec, "stochastic", gen)
        new = decode_rows(codes, scale, spec)
        assert torch.equal(err, x - new)
        total += new.double()
    s = row_scales(scale, spec)  # the scale does not depend on the draw
    y = x / s
    gap = grid_step(y, spec.fmt) * s  # spacing of the grid around x
    # every draw is one of the two grid neighbours of x
    assert ((new - x).abs() <= gap * (1 + 1e-6)).all()
    if spec.scale_kind == "e8m0":  # power-of-two scales: new / s is exactly a grid value
        assert torch.isin((new / s).double().reshape(-1), grid_values(spec.fmt)).all()
    # unbiased: |mean - x| within 4 sigma of a Bernoulli between the two neighbours
    mean = total / n
    assert ((mean - x.double()).abs() <= 4 * gap.double() / (2 * n**0.5) + 1e-30).all()


def test_stochastic_rounding_of_subnormals_matches_exact_probability():
    """Values in E4M3's subnormal range (grid step 2^-9 under a unit scale): P(up) = frac."""
    spec = QuantSpec("fp8_e4m3", "channel", scale_kind="e8m0")
    row = torch.full((1, 8), 0.0)
    row[0, 0] = 448.0  # fixes the row scale at 2^0
    row[0, 1:] = torch.tensor([0.25, 0.5, 0.75, 1.5, 2.25, 3.0, 100.25]) * 2.0**-9
    gen = torch.Generator().manual_seed(0)
    n = 20000
    total = torch.zeros(8, dtype=torch.float64)
    for _ in range(n // 100):
        x = row.repeat(100, 1)
        codes = torch.empty(100, 8, dtype=torch.float8_e4m3fn)
        scale = torch.empty(100, 1, dtype=torch.uint8)
        requantize_rows_(x, codes, scale, spec, "stochastic", gen)
        total += decode_rows(codes, scale, spec).double().sum(0)
    mean = total / n
    target = row[0].double()
    gap = grid_step(target, "fp8_e4m3")  # 2^-9 in the subnormal range
    assert ((mean - target).abs() <= 4 * gap / (2 * n**0.5)).all()
    assert mean[1] != 0.0  # 0.25 step: rounds up a quarter of the time, not never


def test_random_bits_and_determinism():
    a = random_bits(1001, torch.Generator().manual_seed(3))
    b = random_bits(1001, torch.Generator().manual_seed(3))
    assert a.dtype == torch.int32 and a.numel() == 1001 and torch.equal(a, b)
    low = (a & 0xFFFFF).double()
    assert abs(low.mean().item() / 2**20 - 0.5) < 0.05


def test_bad_rounding():
    spec = SPECS[0]
    x = _rows(spec)
    codes, scale = _buffers(x, spec)
    with pytest.raises(ValueError, match="rounding"):
        requantize_rows_(x, codes, scale, spec, "up")


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_bit_decode_equals_torch_cast_for_every_finite_code(dtype):
    from icml26.core.quant.rows import _decode

    codes = torch.arange(256, dtype=torch.uint8).view(dtype).reshape(16, 16)
    ref = codes.to(torch.float32)
    got = _decode(codes)
    finite = torch.isfinite(ref)
    assert torch.equal(got[finite], ref[finite])
    assert torch.equal(_decode(codes, 0.75)[finite], ref[finite] * 0.75)

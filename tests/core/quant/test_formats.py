"""Element grids vs ml_dtypes, exact RTN/SR, codes and packing."""

import math

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.core.quant import (
    FORMATS,
    code_table,
    get_format,
    grid_values,
    pack_int4,
    round_to_format,
    unpack_int4,
)
from icml26.core.quant.formats import decode, encode, pack_nibbles, unpack_nibbles

ML = {
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
}
FLOATS = list(ML)


def _ml_all_values(fmt):
    bits = FORMATS[fmt].bits
    codes = np.arange(2**bits, dtype=np.uint8)
    return codes.view(ML[fmt]).astype(np.float64)


@pytest.mark.parametrize("fmt", FLOATS)
def test_code_table_equals_ml_dtypes_for_every_bit_pattern(fmt):
    ours = code_table(fmt).numpy()
    ref = _ml_all_values(fmt)
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(ours), finite)
    assert np.array_equal(ours[finite], ref[finite])
    assert np.array_equal(grid_values(fmt).numpy(), np.unique(ref[finite] + 0.0))
    assert grid_values(fmt).max().item() == FORMATS[fmt].max_normal


@pytest.mark.parametrize("fmt", FLOATS)
def test_every_finite_code_is_a_fixed_point_of_rtn_and_sr(fmt):
    g = grid_values(fmt).to(torch.float32)
    assert torch.equal(round_to_format(g, fmt), g)
    assert torch.equal(round_to_format(g, fmt, "stochastic", torch.Generator().manual_seed(0)), g)


@pytest.mark.parametrize("fmt", FLOATS)
def test_rtn_equals_ml_dtypes_cast_with_ties_to_even(fmt):
    f = FORMATS[fmt]
    rng = np.random.default_rng(0)
    g = grid_values(fmt).numpy()
    mids = (g[1:] + g[:-1]) / 2  # exact ties
    x = np.concatenate([rng.normal(0, f.max_normal / 4, 20000), rng.normal(0, 2.0**f.emin, 5000), mids])
    x = x[np.abs(x) <= f.max_normal]
    ours = round_to_format(torch.tensor(x, dtype=torch.float64), fmt).numpy()
    ref = x.astype(ML[fmt]).astype(np.float64)
    assert np.array_equal(ours, ref)


@pytest.mark.parametrize("fmt", [*FLOATS, "int8", "int4"])
def test_saturation(fmt):
    f = get_format(fmt)
    x = torch.tensor([10 * f.max_normal, -10 * f.max_normal, 1e30])
    for mode in ("nearest", "stochastic"):
        y = round_to_format(x, fmt, mode)
        assert y.tolist() == [f.max_normal, -f.max_normal, f.max_normal]


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp4_e2m1", "int4"])
def test_stochastic_rounding_is_unbiased_and_hits_only_neighbours(fmt):
    g = grid_values(fmt)
    rng = np.random.default_rng(1)
    n = 20000
    for x0 in rng.uniform(float(g.min()), float(g.max()), 5):
        x = torch.full((n,), float(x0), dtype=torch.float64)
        y = round_to_format(x, fmt, "stochastic", torch.Generator().manual_seed(3))
        lo = g[g <= x0].max().item()
        hi = g[g >= x0].min().item()
        assert set(torch.unique(y).tolist()) <= {lo, hi}
        p = 0.0 if hi == lo else (x0 - lo) / (hi - lo)
        sd = (hi - lo) * math.sqrt(p * (1 - p) / n) + 1e-12
        assert abs(y.mean().item() - x0) <= 4 * sd


def test_stochastic_rounding_deterministic_for_a_generator():
    x = torch.randn(1000)
    a = round_to_format(x, "fp8_e4m3", "stochastic", torch.Generator().manual_seed(5))
    b = round_to_format(x, "fp8_e4m3", "stochastic", torch.Generator().manual_seed(5))
    assert torch.equal(a, b)


@pytest.mark.parametrize("fmt", ["int8", "int4"])
def test_integer_grid(fmt):
    k = int(get_format(fmt).max_normal)
    assert grid_values(fmt).tolist() == list(range(-k, k + 1))
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, 2.4])
    assert round_to_format(x, fmt).tolist() == [0.0, 2.0, 2.0, -0.0, 2.0]


@pytest.mark.parametrize("fmt", FLOATS)
def test_encode_decode_roundtrip_and_fp8_codes_are_torch_float8(fmt):
    g = grid_values(fmt).to(torch.float32)
    codes = encode(g, fmt)
    if fmt.startswith("fp8"):
        assert codes.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
    else:
        assert codes.dtype == torch.uint8
        # bit patterns equal ml_dtypes' encoding of the same values
        ref = g.numpy().astype(ML[fmt]).view(np.uint8)
        assert np.array_equal(codes.numpy() & ((1 << FORMATS[fmt].bits) - 1), ref & ((1 << FORMATS[fmt].bits) - 1))
    assert torch.equal(decode(codes, fmt), g)


@given(st.lists(st.integers(-8, 7), min_size=1, max_size=41))
@settings(max_examples=50, deadline=None)
def test_pack_int4_roundtrip(vals):
    c = torch.tensor(vals, dtype=torch.int8)
    packed = pack_int4(c)
    assert packed.dtype == torch.uint8 and packed.numel() == (len(vals) + 1) // 2
    assert torch.equal(unpack_int4(packed, len(vals)), c)


def test_pack_nibbles_unsigned():
    c = torch.arange(16, dtype=torch.uint8)
    assert torch.equal(unpack_nibbles(pack_nibbles(c), 16, signed=False), c)


@given(st.floats(-1e3, 1e3, allow_nan=False), st.sampled_from(FLOATS))
@settings(max_examples=100, deadline=None)
def test_rtn_is_nearest_grid_point(x, fmt):
    g = grid_values(fmt)
    f = get_format(fmt)
    y = round_to_format(torch.tensor([x], dtype=torch.float64), fmt).item()
    xc = min(max(x, -f.max_normal), f.max_normal)
    assert y in set(g.tolist())
    assert abs(y - xc) <= (g - xc).abs().min().item() + 1e-12


def test_bad_input():
    with pytest.raises(ValueError, match="unsupported element format"):
        round_to_format(torch.ones(2), "fp7")
    with pytest.raises(TypeError):
        round_to_format(torch.ones(2, dtype=torch.int32), "int8")
    with pytest.raises(ValueError, match="NaN"):
        round_to_format(torch.tensor([float("nan")]), "fp8_e4m3")
    with pytest.raises(ValueError, match="rounding"):
        round_to_format(torch.ones(2), "fp8_e4m3", "up")
    with pytest.raises(ValueError):
        pack_int4(torch.tensor([9], dtype=torch.int8))


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "fp6_e3m2"])
def test_float32_bitwise_stochastic_rounding_is_exact_sr(fmt):
    """The float32 fast path: only the two grid neighbours, unbiased, incl. subnormals, binade
    edges and negative values."""
    f = FORMATS[fmt]
    g = grid_values(fmt)
    tiny = 2.0 ** f.emin
    n = 20000
    points = [0.3 * tiny, -0.7 * tiny, 1.3 * tiny, -2.9, 0.999 * f.max_normal, 1.0 + 2.0**-(f.mbits + 2)]
    for x0 in points:
        x0 = float(np.float32(x0))
        x = torch.full((n,), x0, dtype=torch.float32)
        y = round_to_format(x, fmt, "stochastic", torch.Generator().manual_seed(7)).double()
        lo = g[g <= x0].max().item()
        hi = g[g >= x0].min().item()
        assert set(torch.unique(y).tolist()) <= {lo, hi}, (x0, lo, hi)
        p = 0.0 if hi == lo else (x0 - lo) / (hi - lo)
        sd = (hi - lo) * math.sqrt(p * (1 - p) / n) + 1e-12
        assert abs(y.mean().item() - x0) <= 4 * sd, (x0, y.mean().item())

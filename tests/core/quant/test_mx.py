"""OCP MX v1.0 fake-quant: bit-exact against a slow per-block reference, ml_dtypes element grids,
the microxcaling emulator's rules (a port of its algorithm), and the stored-code path."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
import torch

from icml26.core.quant import quantize_dequantize
from icml26.core.quant.mx import (
    MX_FORMATS,
    mx_elem,
    mx_fake_quant,
    mx_max_scaled_error,
    mx_spec,
    mx_spec_emax,
)

ML = {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2,
      "fp6_e3m2": ml_dtypes.float6_e3m2fn, "fp6_e2m3": ml_dtypes.float6_e2m3fn,
      "fp4_e2m1": ml_dtypes.float4_e2m1fn}
# spec / emulator emax and max of each MX element (OCP MX v1.0 Table 1; microxcaling formats.py
# for the integers, where an INT-k element is n / 2^(k-2))
SPEC = {"mxfp8_e4m3": (8, 448.0), "mxfp8_e5m2": (15, 57344.0), "mxfp6_e3m2": (4, 28.0),
        "mxfp6_e2m3": (2, 7.5), "mxfp4": (2, 6.0), "mxint8": (0, 127 / 64), "mxint4": (0, 7 / 4)}


def reference_mx(x: np.ndarray, name: str) -> np.ndarray:
    """Slow per-block reference in Python floats, written from the spec text.

    X = 2^(floor(log2 amax) - emax) with the exact binary exponent (math.frexp), clamped to
    [2^-127, 2^127], 2^-127 for an all-zero block; element = RNE(v / X) on the element grid with
    saturation, the float grids by an ml_dtypes cast, the integer grids as n / 2^(k-2).
    """
    f = mx_elem(name)
    emax, vmax = SPEC[name]
    out = np.empty_like(x, dtype=np.float64)
    for i, blk in enumerate(x.astype(np.float64).reshape(-1, 32)):
        amax = float(np.abs(blk).max())
        e = (math.frexp(amax)[1] - 1 - emax) if amax > 0 else -127
        e = min(max(e, -127), 127)
        y = np.clip(blk * 2.0 ** (-e), -vmax, vmax)
        if f.is_int:
            frac = 2 ** (f.bits - 2)
            q = np.array([round(v * frac) / frac for v in y])  # Python round: ties to even
        else:
            q = y.astype(ML[f.name]).astype(np.float64)
        out.reshape(-1, 32)[i] = q * 2.0 ** e
    return out.astype(np.float32)


def edge_blocks(rng: np.random.Generator) -> np.ndarray:
    """32-element blocks: zeros, float32 subnormals, saturation, one huge value, ties, powers of two."""
    b = []
    b.append(np.zeros(32))
    b.append(np.full(32, -0.0))
    b.append(rng.standard_normal(32) * 1e-40)                       # float32 subnormals only
    b.append(np.r_[1e-45, np.zeros(31)])                            # the smallest subnormal
    b.append(np.r_[3e38, rng.standard_normal(31)])                  # near float32 max
    b.append(np.r_[1e30, rng.standard_normal(31)])                  # one huge value in a block
    b.append(np.r_[7.9, 6.5, 6.0, 5.0, -7.99, rng.uniform(-8, 8, 27)])  # FP4 saturation zone
    b.append(np.r_[4.0, np.arange(31) * 0.25 - 3.875])              # amax a power of two, ties
    b.append(np.r_[np.nextafter(np.float32(4.0), np.float32(0)), rng.uniform(-4, 4, 31)])
    b.append(np.r_[2.0 ** 20 * (1 - 2.0 ** -24), rng.uniform(-1, 1, 31)])  # log2 rounds up in fp32
    b.append(np.r_[1.0, 0.25, 0.75, 0.125, 0.375, -0.625, 1.25, 1.75, rng.uniform(-1, 1, 24)])
    b.append(np.r_[2.0 ** -130, 2.0 ** -131, 2.0 ** -140, np.zeros(29)])   # below the E8M0 range
    b.append(rng.standard_normal(32) * np.exp(rng.standard_normal(32) * 4))
    return np.stack(b).astype(np.float32)


@pytest.mark.parametrize("name", sorted(MX_FORMATS))
def test_bit_exact_vs_slow_reference_on_edge_and_random_blocks(name):
    rng = np.random.default_rng(0)
    rand = (rng.standard_normal((199, 32)) * np.exp(rng.standard_normal((199, 1)) * 6)).astype(np.float32)
    x = np.concatenate([edge_blocks(rng), rand]).reshape(-1, 64)
    got = mx_fake_quant(torch.from_numpy(x), name).numpy()
    ref = reference_mx(x, name)
    np.testing.assert_array_equal(got.view(np.int32) & 0x7FFFFFFF, ref.view(np.int32) & 0x7FFFFFFF)
    np.testing.assert_array_equal(np.sign(got), np.sign(ref))


@pytest.mark.parametrize("name", sorted(MX_FORMATS))
def test_equals_the_stored_code_path(name):
    torch.manual_seed(1)
    x = torch.randn(32, 128) * torch.exp(torch.randn(32, 128) * 3)
    x[0, :32] = 0
    x[1, 5] = 1e25
    x = torch.cat([x.reshape(-1, 32), torch.from_numpy(edge_blocks(np.random.default_rng(1)))])
    np.testing.assert_array_equal(mx_fake_quant(x, name).numpy(),
                                  quantize_dequantize(x, mx_spec(name)).numpy())


@pytest.mark.parametrize("name", ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4"])
def test_elements_lie_on_the_ml_dtypes_grid(name):
    f = mx_elem(name)
    torch.manual_seed(2)
    x = torch.randn(64, 64) * 10
    q = mx_fake_quant(x, name).reshape(-1, 32).double()
    amax = x.reshape(-1, 32).abs().amax(1, keepdim=True).double()
    scale = 2.0 ** (torch.floor(torch.log2(amax)) - f.emax)
    elems = (q / scale).numpy()
    np.testing.assert_array_equal(elems.astype(ML[f.name]).astype(np.float64), elems)
    assert np.abs(elems).max() <= f.max_normal


def _microxcaling_rules(x: torch.Tensor, name: str, round_mode: str) -> torch.Tensor:
    """The microxcaling emulator's algorithm (mx_ops._quantize_mx + elemwise core), re-derived:
    shared exp = floor(log2(amax)) in float32 minus emax, clamp at -127; per element a private
    exponent, scale to integer mantissa, round ("nearest" = half away from zero, "even" = RNE),
    saturate at max_norm. Written independently from the reading of its source."""
    emax, vmax = SPEC[name]
    f = mx_elem(name)
    blocks = x.reshape(-1, 32)
    amax = blocks.abs().amax(1, keepdim=True)
    shared = torch.floor(torch.log2(amax + (amax == 0).float() * 2.0 ** -126)) - emax
    shared = shared.clamp(min=-127)
    a = blocks / 2.0 ** shared
    if f.is_int:
        bits = f.bits  # microxcaling int-k: mbits = k, scale by 2^(k-2)
        priv = None
    else:
        bits = f.mbits + 2
        priv = torch.floor(torch.log2(a.abs() + (a == 0).float())).clamp(min=2 - 2 ** (f.ebits - 1))
    s = a * 2.0 ** (bits - 2) if priv is None else a / 2.0 ** priv * 2.0 ** (bits - 2)
    if round_mode == "nearest":
        r = torch.sign(s) * torch.floor(s.abs() + 0.5)
    else:
        r = torch.sign(s) * (torch.floor(s.abs() + 0.5) - ((s.abs() - 0.5) % 2 == 0).float())
    out = r / 2.0 ** (bits - 2) if priv is None else r / 2.0 ** (bits - 2) * 2.0 ** priv
    out = out.clamp(-vmax, vmax)
    return (out * 2.0 ** shared).reshape(x.shape)


@pytest.mark.parametrize("name", ["mxfp4", "mxfp6_e2m3", "mxfp8_e4m3", "mxint8", "mxint4"])
def test_agrees_with_the_microxcaling_rules(name):
    torch.manual_seed(3)
    x = torch.randn(256, 64) * torch.exp(torch.randn(256, 1) * 2)
    ours = mx_fake_quant(x, name)
    even = _microxcaling_rules(x, name, "even")
    assert torch.equal(ours, even)  # round="even" is the spec's RNE: identical
    nearest = _microxcaling_rules(x, name, "nearest")
    diff = ours != nearest
    # the emulator's default ("nearest": ties away from zero) differs only at exact ties
    if diff.any():
        assert ((ours - x).abs()[diff] - (nearest - x).abs()[diff]).abs().max() == 0


def test_emulator_float32_log2_quirk_differs_from_the_spec():
    x = torch.zeros(1, 32)
    x[0, 0] = 2.0 ** 20 * (1 - 2.0 ** -24)  # floor(log2) = 19 exactly; float32 log2 rounds to 20
    assert float(torch.floor(torch.log2(x[0, 0]))) == 20.0
    q = mx_fake_quant(x, "mxfp4")
    assert float(q[0, 0]) == 6.0 * 2.0 ** 17  # spec: X = 2^(19-2), element saturates at 6


def test_scaled_error_constant_is_the_worst_case():
    for name in ("mxfp4", "mxint4", "mxfp6_e2m3", "mxfp8_e4m3"):
        top = 2.0 ** mx_spec_emax(name)  # block max that makes the E8M0 scale X = 1
        v = torch.linspace(0, 2 * top * (1 - 1e-7), 31 * 2000).reshape(-1, 31)
        blk = torch.cat([torch.full((len(v), 1), top), v], 1)
        worst = float((mx_fake_quant(blk, name) - blk).abs().max())
        c = mx_max_scaled_error(name)
        assert worst <= c + 1e-9
        assert worst >= 0.99 * c


def test_ste_gradient_is_identity_and_scales_are_detached():
    x = torch.randn(4, 64, requires_grad=True)
    (mx_fake_quant(x, "mxfp4") * torch.arange(64.0)).sum().backward()
    assert torch.equal(x.grad, torch.arange(64.0).expand(4, 64))
    y = mx_fake_quant(x, "mxfp4", ste=False)
    assert not y.requires_grad


def test_bad_inputs_give_clear_errors():
    with pytest.raises(ValueError, match="multiple of the MX block"):
        mx_fake_quant(torch.randn(3, 30), "mxfp4")
    with pytest.raises(ValueError, match="NaN"):
        mx_fake_quant(torch.tensor([float("nan")] * 32), "mxfp4", check_finite=True)
    with pytest.raises(TypeError):
        mx_fake_quant(torch.ones(32, dtype=torch.int32), "mxfp4")
    with pytest.raises(ValueError, match="unknown MX format"):
        mx_fake_quant(torch.randn(32), "mxfp3")
    with pytest.raises(ValueError, match="scale_mode"):
        mx_fake_quant(torch.randn(32), "mxfp4", scale_mode="round")


def test_ceil_mode_never_saturates():
    x = torch.tensor([[7.9] + [0.1] * 31])
    assert float(mx_fake_quant(x, "mxfp4")[0, 0]) == 6.0
    assert float(mx_fake_quant(x, "mxfp4", scale_mode="ceil")[0, 0]) == 8.0

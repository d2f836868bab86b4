"""Fast re-quantization of float32 rows into preallocated FP8 codes and per-row scales.

:func:`requantize_rows_` is :func:`~icml26.core.quant.quantize` for the case optimizers hit on
every step (a 2-D float32 buffer whose rows are the scale blocks, FP8 codes, FP32 or E8M0
scales), written for speed:

* it writes into given ``codes`` / ``scale`` buffers (no new QTensor, no copy afterwards);
* round-to-nearest is torch's native float8 cast (round-to-nearest-even with subnormals and
  saturation at ``±max``: the same codes as :func:`round_to_format`, tested);
* stochastic rounding adds uniform random integers to the float32 bit patterns and clears the
  dropped mantissa bits (exact for the format's normal range, sign included, no ``abs``/
  ``copysign`` pass); the rare elements that land in the subnormal range of the format are
  found on the one-byte codes and redone with the exact uniform-grid rule. Random bits come from
  ``int64`` draws split into two 32-bit words (half the generator calls of ``randint``);
* it returns the dequantized new values, so a caller gets the rounding error with one
  subtraction.

Same values as ``quantize`` for round-to-nearest (bit for bit); stochastic rounding is exact
(``P(up) = (x - lo) / (hi - lo)`` to float32 resolution) but draws its random numbers in another
order than :func:`round_to_format`.
"""

from __future__ import annotations

import torch

from .formats import get_format
from .qtensor import _E8M0_TABLE, QuantSpec, _e8m0_exponent

_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
_FP8_FORMATS = {torch.float8_e4m3fn: get_format("fp8_e4m3"), torch.float8_e5m2: get_format("fp8_e5m2")}


def supports_rows(spec: QuantSpec) -> bool:
    """Whether :func:`requantize_rows_` handles ``spec`` (FP8 codes, FP32/E8M0 absmax scales,
    per-channel or per-group blocks)."""
    return (spec.format.torch_dtype in _FP8 and spec.granularity in ("channel", "group")
            and spec.fixed_scale is None)


def random_bits(n: int, generator: torch.Generator | None = None,
                device: torch.device | str | None = None) -> torch.Tensor:
    """``n`` int32 values whose low 31 bits are uniform random bits (``int64`` draws split in two)."""
    buf = torch.empty((n + 1) // 2, dtype=torch.int64, device=device)
    buf.random_(generator=generator)  # uniform on [0, 2^63): every bit but the top one is uniform
    return buf.view(torch.int32)[:n]


def row_scales(scale: torch.Tensor, spec: QuantSpec) -> torch.Tensor:
    """Float32 scale per row from stored scales (E8M0 bytes or float32), shape of ``scale``."""
    if scale.dtype == torch.uint8:
        table = _E8M0_TABLE if scale.device.type == "cpu" else _E8M0_TABLE.to(scale.device)
        return torch.index_select(table, 0, scale.reshape(-1).to(torch.int32)).reshape(scale.shape)
    return scale


def decode_rows(codes: torch.Tensor, scale: torch.Tensor, spec: QuantSpec,
                factor: float = 1.0) -> torch.Tensor:
    """``factor *`` the float32 values of FP8 ``codes`` (shape (rows, k)) times their row scales.

    ``factor`` is folded into the decode (free); when the scales are powers of two (E8M0) the
    result equals ``(codes * scale) * factor`` exactly.
    """
    return _decode(codes, factor).mul_(row_scales(scale, spec))


def _decode(codes: torch.Tensor, factor: float = 1.0) -> torch.Tensor:
    """``factor *`` the unscaled float32 values of FP8 codes, from their bits.

    An FP8 code ``s eeee mmm`` (E4M3; E5M2 alike) placed at float32 bit positions 31 and
    30-20 (sign-extended int8 shifted left, masked) is a float32 whose value is the code's value
    times ``2^-(127 - bias)`` — for subnormal codes too, as float32 subnormals — so one exact
    multiplication by ``2^(127 - bias)`` decodes it (NaN codes, never stored, decode to finite
    values). Same values as the 256-entry table (tested), without a gather.
    """
    f = _FP8_FORMATS[codes.dtype]
    shift = 23 - f.mbits
    mask = (-(2**31)) | (((1 << (f.ebits + f.mbits)) - 1) << shift)
    bits = codes.view(torch.int8).to(torch.int32).bitwise_left_shift_(shift).bitwise_and_(mask)
    return bits.view(torch.float32).mul_(2.0 ** (127 - f.bias) * factor)


@torch.no_grad()
def requantize_rows_(theta: torch.Tensor, codes: torch.Tensor, scale: torch.Tensor, spec: QuantSpec,
                     rounding: str = "nearest", generator: torch.Generator | None = None) -> torch.Tensor:
    """Quantize the rows of ``theta`` into ``codes`` and ``scale`` in place; return the error.

    Parameters
    ----------
    theta : Tensor (rows, k), float32, contiguous, finite
        One scale block per row. **Consumed**: its buffer is reused for the returned error.
    codes : Tensor (rows, k), float8 (``spec``'s dtype)
    scale : Tensor (rows, 1), uint8 (E8M0, ``spec.scale_kind == "e8m0"``) or float32
    spec : QuantSpec with :func:`supports_rows`
    rounding : {"nearest", "stochastic"}
    generator : torch.Generator, optional

    Returns
    -------
    Tensor (rows, k), float32 (``theta``'s buffer): the rounding error ``theta - q(theta)``.
    """
    f = get_format(spec.fmt)
    amax = torch.maximum(theta.amax(dim=1, keepdim=True), theta.amin(dim=1, keepdim=True).neg_())
    if spec.scale_kind == "e8m0":
        xexp = _e8m0_exponent(amax, f, "ceil", 0)
        scale.copy_(xexp + 127)
        s = torch.ldexp(torch.ones_like(amax), xexp)
        # y = theta / 2^X exactly; |y| <= max_normal. The error is computed on y and scaled back:
        # scaling by a power of two commutes with rounding, so it equals theta - q(theta)
        y = theta.mul_(torch.ldexp(torch.ones_like(amax), -xexp))
    else:
        s = torch.where(amax > 0, amax / f.max_normal, torch.ones_like(amax))
        scale.copy_(s)
        y = (theta / s).clamp_(-f.max_normal, f.max_normal)
    if rounding == "nearest":
        codes.copy_(y)  # native cast: round to nearest even, subnormals included
        new_y = _decode(codes)
    elif rounding == "stochastic":
        new_y = _stochastic_fp8_(y, codes, f, generator)
    else:
        raise ValueError(f"rounding must be 'nearest' or 'stochastic', got {rounding!r}")
    if spec.scale_kind == "e8m0":
        return y.sub_(new_y).mul_(s)
    return theta.sub_(new_y.mul_(s))


def _stochastic_fp8_(y: torch.Tensor, codes: torch.Tensor, f, generator: torch.Generator | None) -> torch.Tensor:
    """Exact stochastic rounding of float32 ``y`` (rows, k), ``|y| <= max_normal``, into FP8
    ``codes``; returns the rounded values (float32)."""
    d = 23 - f.mbits
    mask = (1 << d) - 1
    r = random_bits(y.numel(), generator, y.device).view(y.shape).bitwise_and_(mask)  # uniform on [0, 2^d)
    # normal range: adding r to the magnitude bits and clearing the low d bits rounds the
    # magnitude up with probability (|y| - lo) / ulp; the sign bit is untouched
    t = torch.add(r, y.view(torch.int32)).bitwise_and_(~mask).view(torch.float32)
    # below the smallest normal 2^emin the grid is uniform (step 2^(emin - mbits)) and the bit
    # trick is wrong: in the few rows holding such a value, redo those with the exact rule
    # floor(|y| / step + r 2^-d) step, same random numbers
    a = y.abs()
    rows = (a.amin(dim=1) < 2.0 ** f.emin).nonzero().squeeze(1)
    if rows.numel():
        ar = a[rows]
        sub = ar.mul(2.0 ** (f.mbits - f.emin)).add_(r[rows].to(torch.float32).mul_(2.0 ** -d))
        sub.floor_().mul_(2.0 ** (f.emin - f.mbits))
        t[rows] = torch.where(ar < 2.0 ** f.emin, sub, t[rows].abs()).copysign_(y[rows])
    codes.copy_(t)  # exact: t is on the grid
    return t


__all__ = ["decode_rows", "random_bits", "requantize_rows_", "row_scales", "supports_rows"]

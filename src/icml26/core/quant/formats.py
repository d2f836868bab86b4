"""Element formats (FP8/FP6/FP4/INT8/INT4) and exact rounding onto their grids.

Every format is described by its exponent bits, mantissa bits, exponent bias and largest finite
value; :func:`round_to_format` maps real numbers onto the format's grid (subnormals included) with
round-to-nearest-even or *exact* stochastic rounding, saturating at ``±max_normal``. The grids are
those of the OCP 8-bit floating point spec (E4M3 "fn" variant: no infinities, 0x7F is NaN; E5M2
IEEE-like) and the OCP MX v1.0 spec (FP6 E3M2/E2M3, FP4 E2M1, no inf/NaN); ``ml_dtypes`` is the
test oracle. Integer formats are symmetric: INT-k codes lie in ``[-(2^(k-1)-1), 2^(k-1)-1]``.

Codes (what is really stored): FP8 as ``torch.float8_e4m3fn`` / ``torch.float8_e5m2``; INT8 as
``torch.int8``; FP6 as one ``uint8`` bit pattern per element; FP4 and INT4 as two 4-bit codes per
``uint8`` (see :func:`pack_nibbles`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch

Rounding = Literal["nearest", "stochastic"]


@dataclass(frozen=True)
class ElemFormat:
    """An element format.

    Attributes
    ----------
    name : str
        ``"fp8_e4m3"``, ``"fp8_e5m2"``, ``"fp6_e3m2"``, ``"fp6_e2m3"``, ``"fp4_e2m1"``, ``"int8"``
        or ``"int4"``.
    ebits, mbits : int
        Exponent and mantissa bits (``ebits = 0`` for integers).
    bias : int
        Exponent bias (0 for integers).
    max_normal : float
        Largest finite magnitude (saturation bound).
    is_int : bool
        Integer (uniform) grid.
    bits : int
        Bits per element (sign included).
    """

    name: str
    ebits: int
    mbits: int
    bias: int
    max_normal: float
    is_int: bool
    bits: int

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number (``1 - bias``)."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """``floor(log2(max_normal))``: the element emax of the OCP MX spec."""
        return int(math.floor(math.log2(self.max_normal)))

    @property
    def torch_dtype(self) -> torch.dtype | None:
        """The torch storage dtype of the codes, or ``None`` for bit-pattern (uint8) storage."""
        return _TORCH_DTYPES.get(self.name)


FORMATS: dict[str, ElemFormat] = {
    "fp8_e4m3": ElemFormat("fp8_e4m3", 4, 3, 7, 448.0, False, 8),
    "fp8_e5m2": ElemFormat("fp8_e5m2", 5, 2, 15, 57344.0, False, 8),
    "fp6_e3m2": ElemFormat("fp6_e3m2", 3, 2, 3, 28.0, False, 6),
    "fp6_e2m3": ElemFormat("fp6_e2m3", 2, 3, 1, 7.5, False, 6),
    "fp4_e2m1": ElemFormat("fp4_e2m1", 2, 1, 1, 6.0, False, 4),
    "int8": ElemFormat("int8", 0, 7, 0, 127.0, True, 8),
    "int4": ElemFormat("int4", 0, 3, 0, 7.0, True, 4),
}

_TORCH_DTYPES = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2, "int8": torch.int8}


def get_format(fmt: str | ElemFormat) -> ElemFormat:
    """Look a format up by name; a clear ``ValueError`` for an unknown one."""
    if isinstance(fmt, ElemFormat):
        return fmt
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise ValueError(f"unsupported element format {fmt!r}; choose one of {sorted(FORMATS)}")
    return FORMATS[fmt]


def _check_float(x: torch.Tensor, what: str = "x") -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{what} must be a floating-point tensor, got {x.dtype}")
    if x.numel() and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{what} contains NaN or infinite values")


def grid_step(x: torch.Tensor, fmt: str | ElemFormat) -> torch.Tensor:
    """Spacing of the format's grid at ``x`` (the ulp of the binade containing ``|x|``).

    For floats ``ulp = 2^(max(floor(log2|x|), emin) - mbits)`` (subnormals share the spacing of
    the first binade); 1 for integers. Shape of ``x``.
    """
    f = get_format(fmt)
    if f.is_int:
        return torch.ones_like(x)
    _, e = torch.frexp(x.abs())  # |x| = m 2^e with m in [0.5, 1): floor(log2|x|) = e - 1
    exp = (e - 1).clamp(min=f.emin)
    return torch.ldexp(torch.ones_like(x), exp - f.mbits)


def round_to_format(
    x: torch.Tensor,
    fmt: str | ElemFormat,
    rounding: Rounding = "nearest",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Round ``x`` elementwise onto the grid of ``fmt``, saturating at ``±max_normal``.

    Parameters
    ----------
    x : Tensor, any shape, floating point, finite
    fmt : str or ElemFormat
    rounding : {"nearest", "stochastic"}
        ``"nearest"``: round to nearest, ties to even (IEEE). ``"stochastic"``: with ``lo``/``hi``
        the grid neighbours of ``x``, return ``hi`` with probability ``(x - lo) / (hi - lo)``, so
        ``E[q(x)] = x`` exactly for ``|x| <= max_normal`` (unbiased).
    generator : torch.Generator, optional
        Source of the uniform draws of stochastic rounding.

    Returns
    -------
    Tensor, shape and dtype of ``x``, values on the grid.
    """
    _check_float(x)
    if rounding not in ("nearest", "stochastic"):
        raise ValueError(f"rounding must be 'nearest' or 'stochastic', got {rounding!r}")
    return _round(x, get_format(fmt), rounding, generator)


def _round(x: torch.Tensor, f: ElemFormat, rounding: str, generator: torch.Generator | None) -> torch.Tensor:
    """:func:`round_to_format` without the input checks (callers have checked ``x``)."""
    if rounding == "stochastic" and not f.is_int and x.dtype == torch.float32 and f.mbits < 23:
        return _stochastic_float32(x, f, generator)
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    xc = x.to(work).clamp(-f.max_normal, f.max_normal)
    ulp = grid_step(xc, f)
    y = xc / ulp  # exact: ulp is a power of two
    if rounding == "nearest":
        r = torch.round(y)  # half to even == ties to even mantissa
    else:
        lo = torch.floor(y)
        u = torch.rand(y.shape, generator=generator, dtype=work, device=y.device)
        r = lo + (u < (y - lo)).to(work)
    out = (r * ulp).clamp(-f.max_normal, f.max_normal)
    return out.to(x.dtype)


def _stochastic_float32(x: torch.Tensor, f: ElemFormat, generator: torch.Generator | None) -> torch.Tensor:
    """Exact stochastic rounding of float32 values onto a float format, on the bits.

    For ``|x|`` in the format's normal range, adding a uniform integer ``r ∈ [0, 2^d)`` to the
    float32 bit pattern (``d = 23 - mbits`` dropped mantissa bits) and clearing the low ``d`` bits
    rounds up exactly when ``r ≥ 2^d - low``, i.e. with probability ``(|x| - lo) / ulp`` (a carry
    into the exponent lands on the next binade, which is on the grid). Below the smallest normal
    the grid is uniform (step ``2^(emin - mbits)``) and the same ``r`` is the uniform draw.
    """
    xc = x.clamp(-f.max_normal, f.max_normal)
    a = xc.abs()
    d = 23 - f.mbits
    r = torch.randint(0, 1 << d, a.shape, generator=generator, dtype=torch.int32, device=a.device)
    up = ((a.view(torch.int32) + r) & ~((1 << d) - 1)).view(torch.float32)
    step = 2.0 ** (f.emin - f.mbits)
    sub = torch.floor(a / step + r.to(torch.float32) * 2.0**-d) * step
    out = torch.where(a < 2.0**f.emin, sub, up).clamp_(max=f.max_normal)
    return out.copysign_(xc)


# ----------------------------------------------------------------------------------------------
# bit patterns (FP6 / FP4 / INT4 codes)
# ----------------------------------------------------------------------------------------------


def code_table(fmt: str | ElemFormat) -> torch.Tensor:
    """Value of every bit pattern of a float format, indexed by code (float64, NaN for NaN codes).

    Sign bit first, then ``ebits`` exponent bits, then ``mbits`` mantissa bits; exponent 0 is
    subnormal. E4M3 "fn" uses 0x7F/0xFF as NaN; E5M2 has inf/NaN at exponent 31.
    """
    f = get_format(fmt)
    if f.is_int:
        raise ValueError("code_table is for floating-point formats")
    vals = []
    for c in range(2**f.bits):
        s = (c >> (f.bits - 1)) & 1
        e = (c >> f.mbits) & ((1 << f.ebits) - 1)
        m = c & ((1 << f.mbits) - 1)
        if e == 0:
            v = 2.0 ** f.emin * (m / 2**f.mbits)
        else:
            v = 2.0 ** (e - f.bias) * (1 + m / 2**f.mbits)
        if abs(v) > f.max_normal:
            v = math.nan
        vals.append(-v if s else v)
    return torch.tensor(vals, dtype=torch.float64)


def grid_values(fmt: str | ElemFormat) -> torch.Tensor:
    """Sorted finite values of a format's grid (float64), each value once (``-0`` folded into 0)."""
    f = get_format(fmt)
    if f.is_int:
        k = int(f.max_normal)
        return torch.arange(-k, k + 1, dtype=torch.float64)
    t = code_table(f)
    t = t[torch.isfinite(t)]
    return torch.unique(t + 0.0)


def encode(values: torch.Tensor, fmt: str | ElemFormat) -> torch.Tensor:
    """Codes of values that already lie on the grid of ``fmt`` (same shape).

    FP8 → float8 tensor; INT8/INT4 → int8; FP6/FP4 → uint8 bit patterns (unpacked).
    """
    f = get_format(fmt)
    if f.torch_dtype is not None and not f.is_int:
        return values.to(f.torch_dtype)
    if f.is_int:
        return torch.round(values).to(torch.int8)
    table = code_table(f)
    half = 2 ** (f.bits - 1)
    pos = table[:half]  # increasing magnitudes, code = index
    mag = values.abs().to(torch.float64)
    idx = torch.searchsorted(pos, mag.reshape(-1)).reshape(values.shape)
    sign = (values < 0).to(torch.int64) * half
    return (idx + sign).to(torch.uint8)


def decode(codes: torch.Tensor, fmt: str | ElemFormat, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Inverse of :func:`encode` (unpacked codes → values in ``dtype``)."""
    f = get_format(fmt)
    if f.torch_dtype is not None and not f.is_int:
        if codes.device.type == "cpu" and dtype == torch.float32 and codes.dtype == f.torch_dtype:
            # a 256-entry lookup: same values as the cast (tested), ~6x faster on CPU
            idx = codes.reshape(-1).view(torch.uint8).to(torch.int32)
            return torch.index_select(_fp8_table(f.torch_dtype), 0, idx).reshape(codes.shape)
        return codes.to(dtype)
    if f.is_int:
        return codes.to(dtype)
    return code_table(f).to(dtype)[codes.long()]


_FP8_TABLES: dict[torch.dtype, torch.Tensor] = {}


def _fp8_table(dtype: torch.dtype) -> torch.Tensor:
    """float32 value of each of the 256 bit patterns of a torch float8 dtype (NaN codes → NaN)."""
    if dtype not in _FP8_TABLES:
        _FP8_TABLES[dtype] = torch.arange(256, dtype=torch.uint8).view(dtype).to(torch.float32)
    return _FP8_TABLES[dtype]


def pack_nibbles(codes: torch.Tensor) -> torch.Tensor:
    """Pack 4-bit codes (int8 in [-8, 7] or uint8 in [0, 15]) two per byte, flattened.

    Element ``2i`` goes to the low nibble of byte ``i``, element ``2i+1`` to the high nibble; an
    odd count is padded with a zero nibble. Returns a uint8 tensor of ``ceil(n / 2)`` bytes.
    """
    flat = codes.reshape(-1).to(torch.int16) & 0xF
    if flat.numel() % 2:
        flat = torch.cat([flat, flat.new_zeros(1)])
    return (flat[0::2] | (flat[1::2] << 4)).to(torch.uint8)


def unpack_nibbles(packed: torch.Tensor, numel: int, signed: bool) -> torch.Tensor:
    """Inverse of :func:`pack_nibbles`: ``numel`` codes (int8 two's complement if ``signed``)."""
    p = packed.to(torch.int16)
    out = torch.stack([p & 0xF, (p >> 4) & 0xF], dim=1).reshape(-1)[:numel]
    if signed:
        out = torch.where(out >= 8, out - 16, out)
        return out.to(torch.int8)
    return out.to(torch.uint8)


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """Pack int4 codes (int8 tensor with values in [-8, 7]) two per byte."""
    if codes.dtype != torch.int8:
        raise TypeError(f"pack_int4 expects int8 codes, got {codes.dtype}")
    if codes.numel() and (int(codes.min()) < -8 or int(codes.max()) > 7):
        raise ValueError("int4 codes must lie in [-8, 7]")
    return pack_nibbles(codes)


def unpack_int4(packed: torch.Tensor, numel: int) -> torch.Tensor:
    """Inverse of :func:`pack_int4`."""
    return unpack_nibbles(packed, numel, signed=True)

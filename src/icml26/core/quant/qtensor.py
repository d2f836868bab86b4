"""Scaled quantization: per-tensor/channel/group scales, OCP MX blocks, a quantized tensor type.

``quantize(x, spec)`` splits ``x`` into blocks along ``spec.axis`` (one block per tensor, per
slice = "channel", or per ``group_size`` contiguous elements = "group"/"mx"), computes one scale
per block and stores the element codes in their real low-bit storage (see
:mod:`icml26.core.quant.formats`). ``QTensor.nbytes`` is measured from that storage (codes +
scales), which is what memory accounting should use.

Scales
------
* ``scale_kind="fp32"`` (tensor/channel/group): ``s = amax / max_normal`` per block (``s = 1`` for
  an all-zero block), so that ``amax`` maps onto the largest code (absmax scaling, as in
  torchao's tensorwise/rowwise float8 and symmetric INT-k quantization).
* ``granularity="mx"``: OCP MX v1.0 blocks (default 32 elements) with a shared E8M0 scale
  ``2^X``, ``X = floor(log2 amax) - emax_elem`` ("floor", the spec's rule; elements that
  overflow saturate) or ``X = ceil(log2(amax / max_normal))`` ("ceil", no saturation); ``X`` is
  clamped to [-127, 127] and stored as the uint8 ``X + 127``. MXINT-k follows the spec's
  convention (element ``n / 2^(k-2)``, element emax 0), so the codes ``n`` carry the scale
  ``2^(X - (k-2))``; this matters only where ``X`` is clamped at -127.
* ``scale_kind="e8m0"`` (tensor/channel/group): a power-of-two scale ``2^X`` with
  ``X = ceil(log2(amax / max_normal))`` (never saturates), stored as one uint8 E8M0 byte. The grid
  of a block then stays fixed while its ``amax`` stays in one binade, whereas an FP32 absmax scale
  moves every element of the block whenever the block's largest element changes.
* ``fixed_scale``: one given scale for every block (a uniform grid of known step, used by theory
  toys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from .formats import (
    ElemFormat,
    Rounding,
    _check_float,
    _round,
    decode,
    encode,
    get_format,
    pack_nibbles,
    unpack_nibbles,
)

Granularity = Literal["tensor", "channel", "group", "mx"]


@dataclass(frozen=True)
class QuantSpec:
    """How to quantize a tensor.

    Parameters
    ----------
    fmt : str
        Element format (see :data:`icml26.core.quant.FORMATS`).
    granularity : {"tensor", "channel", "group", "mx"}
        One scale per tensor, per slice along ``axis`` (e.g. per output row of a Linear weight
        with ``axis=-1``), per ``group_size`` contiguous elements along ``axis``, or OCP MX blocks.
    axis : int
        The axis along which elements share a scale (the reduction axis of ``amax``).
    group_size : int, optional
        Block length for "group" (default 128) and "mx" (default 32, the OCP MX block size).
    rounding : {"nearest", "stochastic"}
        Default rounding of :func:`quantize`.
    scale_kind : {"fp32", "e8m0"}
        Scale type of tensor/channel/group quantization (MX blocks are always E8M0).
    mx_scale_mode : {"floor", "ceil"}
        Shared-exponent rule of MX blocks ("floor" is the OCP MX v1.0 rule).
    fixed_scale : float, optional
        Use this scale for every block instead of absmax scaling.
    """

    fmt: str = "fp8_e4m3"
    granularity: Granularity = "channel"
    axis: int = -1
    group_size: int | None = None
    rounding: Rounding = "nearest"
    scale_kind: Literal["fp32", "e8m0"] = "fp32"
    mx_scale_mode: Literal["floor", "ceil"] = "floor"
    fixed_scale: float | None = None

    def __post_init__(self) -> None:
        get_format(self.fmt)
        if self.granularity not in ("tensor", "channel", "group", "mx"):
            raise ValueError(f"granularity must be tensor|channel|group|mx, got {self.granularity!r}")
        if self.rounding not in ("nearest", "stochastic"):
            raise ValueError(f"rounding must be 'nearest' or 'stochastic', got {self.rounding!r}")
        if self.scale_kind not in ("fp32", "e8m0"):
            raise ValueError(f"scale_kind must be 'fp32' or 'e8m0', got {self.scale_kind!r}")
        if self.mx_scale_mode not in ("floor", "ceil"):
            raise ValueError(f"mx_scale_mode must be 'floor' or 'ceil', got {self.mx_scale_mode!r}")
        if self.group_size is not None and (not isinstance(self.group_size, int) or self.group_size < 1):
            raise ValueError(f"group_size must be a positive int, got {self.group_size!r}")
        if self.fixed_scale is not None and not (self.fixed_scale > 0 and self.fixed_scale < float("inf")):
            raise ValueError(f"fixed_scale must be positive and finite, got {self.fixed_scale!r}")
        if self.fixed_scale is not None and self.granularity == "mx":
            raise ValueError("fixed_scale cannot be combined with MX blocks (their scale is E8M0)")

    @property
    def format(self) -> ElemFormat:
        return get_format(self.fmt)

    @property
    def block_size(self) -> int | None:
        if self.granularity == "group":
            return self.group_size or 128
        if self.granularity == "mx":
            return self.group_size or 32
        return None


@dataclass(frozen=True)
class QTensor:
    """A quantized tensor: low-bit ``codes`` + per-block ``scale`` (real storage).

    Attributes
    ----------
    codes : Tensor
        float8 / int8 codes (shape (n_blocks, block_len)) or packed uint8 nibbles (FP4/INT4,
        1-D) or uint8 bit patterns (FP6, (n_blocks, block_len)).
    scale : Tensor, shape (n_blocks, 1)
        float32 scales, or uint8 E8M0 biased exponents for MX.
    spec : QuantSpec
    shape : torch.Size
        Shape of the original tensor.
    """

    codes: torch.Tensor
    scale: torch.Tensor
    spec: QuantSpec
    shape: torch.Size

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        """Bytes of real storage: codes + scales."""
        return int(self.codes.nbytes + self.scale.nbytes)

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return dequantize(self, dtype)


def _moved_shape(shape: torch.Size, axis: int) -> tuple[list[int], int]:
    dims = list(shape)
    ax = axis % len(dims)
    moved = dims[:ax] + dims[ax + 1:] + [dims[ax]]
    return moved, ax


def _blocks(x: torch.Tensor, spec: QuantSpec) -> torch.Tensor:
    if spec.granularity == "tensor" or x.dim() == 0:
        if spec.granularity in ("group", "mx") and x.dim() == 0:
            raise ValueError("group/mx quantization needs a tensor with at least one dimension")
        return x.reshape(1, -1)
    if not -x.dim() <= spec.axis < x.dim():
        raise ValueError(f"axis {spec.axis} out of range for a {x.dim()}-d tensor")
    xt = x.movedim(spec.axis, -1)
    k = xt.shape[-1]
    if spec.granularity == "channel":
        return xt.reshape(-1, k)
    bs = spec.block_size
    assert bs is not None
    if k % bs:
        raise ValueError(f"axis length {k} is not a multiple of the block size {bs}")
    return xt.reshape(-1, bs)


def _unblocks(blocks: torch.Tensor, shape: torch.Size, spec: QuantSpec) -> torch.Tensor:
    if spec.granularity == "tensor" or len(shape) == 0:
        return blocks.reshape(shape)
    moved, ax = _moved_shape(shape, spec.axis)
    return blocks.reshape(moved).movedim(-1, ax)


def mx_int_shift(f: ElemFormat) -> int:
    """Fractional bits of an MXINT element: the spec's MXINT-k element is ``n / 2^(k-2)``.

    The integer grid of :mod:`.formats` holds ``n``; the E8M0 scale ``X`` of the spec (element
    ``emax = 0``) multiplies ``n / 2^(k-2)``, so the float scale of the codes is ``2^(X-(k-2))``.
    0 for float formats.
    """
    return f.bits - 2 if f.is_int else 0


def _e8m0_exponent(amax: torch.Tensor, f: ElemFormat, mode: str, shift: int = 0) -> torch.Tensor:
    """Shared exponent X of MX blocks (int32, the OCP MX v1.0 E8M0 value), clamped to [-127, 127];
    amax == 0 → -127. ``shift``: :func:`mx_int_shift` for MX blocks (the spec's MXINT element
    emax is 0, elements ``n / 2^(k-2)``), 0 otherwise."""
    if mode == "floor":
        _, e = torch.frexp(amax)
        x = (e - 1) - (f.emax - shift)
    else:
        ratio = amax / f.max_normal
        m, e = torch.frexp(ratio)  # ratio = m 2^e, m in [0.5, 1): ceil(log2 ratio) = e - (m == 0.5)
        x = e - (m == 0.5).to(e.dtype) + shift
    x = torch.where(amax > 0, x, torch.full_like(x, -127))
    return x.clamp(-127, 127).to(torch.int32)


def block_scales(x: torch.Tensor, spec: QuantSpec) -> torch.Tensor:
    """The float32 scale per block, shape (n_blocks, 1) (E8M0 scales returned as ``2^X``)."""
    blocks = _blocks(x.to(torch.float32), spec)
    return _scales(blocks, spec)[0]


def _scales(blocks: torch.Tensor, spec: QuantSpec) -> tuple[torch.Tensor, torch.Tensor]:
    f = spec.format
    amax = blocks.abs().amax(dim=1, keepdim=True)
    if spec.fixed_scale is not None:
        s = torch.full_like(amax, spec.fixed_scale)
        return s, s
    if spec.granularity == "mx" or spec.scale_kind == "e8m0":
        mode = spec.mx_scale_mode if spec.granularity == "mx" else "ceil"
        shift = mx_int_shift(f) if spec.granularity == "mx" else 0
        xexp = _e8m0_exponent(amax, f, mode, shift)
        s = torch.ldexp(torch.ones_like(amax), xexp - shift)
        return s, (xexp + 127).to(torch.uint8)
    s = torch.where(amax > 0, amax / f.max_normal, torch.ones_like(amax))
    return s, s


def quantize(
    x: torch.Tensor,
    spec: QuantSpec,
    *,
    rounding: Rounding | None = None,
    generator: torch.Generator | None = None,
) -> QTensor:
    """Quantize ``x`` under ``spec`` into a :class:`QTensor` (codes in real low-bit storage).

    Parameters
    ----------
    x : Tensor, floating point, finite
    spec : QuantSpec
    rounding : {"nearest", "stochastic"}, optional
        Overrides ``spec.rounding``.
    generator : torch.Generator, optional
        For stochastic rounding.
    """
    _check_float(x)
    if not isinstance(spec, QuantSpec):
        raise TypeError(f"spec must be a QuantSpec, got {type(spec).__name__}")
    f = spec.format
    blocks = _blocks(x.detach().to(torch.float32), spec)
    s, stored = _scales(blocks, spec)
    mode = rounding or spec.rounding
    if mode == "nearest" and f.torch_dtype is not None and not f.is_int:
        # torch's float8 cast is round-to-nearest-even with subnormals: the same codes as
        # round_to_format + encode (tested), several times faster
        codes = (blocks / s).clamp_(-f.max_normal, f.max_normal).to(f.torch_dtype)
    else:
        codes = encode(_round(blocks / s, f, mode, generator), f)
    if f.bits == 4:
        codes = pack_nibbles(codes)
    return QTensor(codes=codes, scale=stored.contiguous(), spec=spec, shape=x.shape)


_E8M0_TABLE = torch.ldexp(torch.ones(256), torch.arange(256, dtype=torch.int32) - 127)
"""float32 value 2^(code - 127) of each E8M0 scale byte."""


def dequantize(q: QTensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Values of a :class:`QTensor` (shape ``q.shape``) in ``dtype``."""
    spec, f = q.spec, q.spec.format
    n_blocks = q.scale.shape[0]
    if f.bits == 4:
        codes = unpack_nibbles(q.codes, q.numel, signed=f.is_int).reshape(n_blocks, -1)
    else:
        codes = q.codes
    vals = decode(codes, f, torch.float32)
    if q.scale.dtype == torch.uint8:
        table = _E8M0_TABLE if q.scale.device.type == "cpu" else _E8M0_TABLE.to(q.scale.device)
        s = torch.index_select(table, 0, q.scale.reshape(-1).to(torch.int32)).reshape(q.scale.shape)
        shift = mx_int_shift(f) if spec.granularity == "mx" else 0
        if shift:
            s = s * (2.0 ** -shift)  # exact: a power of two
    else:
        s = q.scale
    return _unblocks(vals * s, q.shape, spec).to(dtype)


def nbytes(q: QTensor) -> int:
    """Bytes of real storage of a :class:`QTensor` (codes + scales)."""
    return q.nbytes


def quantize_dequantize(
    x: torch.Tensor,
    spec: QuantSpec,
    *,
    rounding: Rounding | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``dequantize(quantize(x))`` in the dtype of ``x``."""
    return dequantize(quantize(x, spec, rounding=rounding, generator=generator), x.dtype)


class _STE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, q):  # noqa: D401 - autograd protocol
        return q

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def fake_quant(
    x: torch.Tensor,
    spec: QuantSpec,
    *,
    ste: bool = True,
    rounding: Rounding | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Quantize-dequantize ``x``; with ``ste`` the gradient passes straight through (identity).

    Without ``ste`` the result is detached (zero gradient w.r.t. ``x``).
    """
    q = quantize_dequantize(x.detach(), spec, rounding=rounding, generator=generator)
    return _STE.apply(x, q) if ste else q


def mx_quantize(
    x: torch.Tensor,
    elem: str = "fp4_e2m1",
    block_size: int = 32,
    axis: int = -1,
    scale_mode: Literal["floor", "ceil"] = "floor",
    *,
    rounding: Rounding = "nearest",
    generator: torch.Generator | None = None,
) -> QTensor:
    """OCP MX v1.0 quantization: blocks of ``block_size`` along ``axis`` with an E8M0 scale."""
    spec = QuantSpec(elem, "mx", axis=axis, group_size=block_size, rounding=rounding,
                     mx_scale_mode=scale_mode)
    return quantize(x, spec, generator=generator)


def quant_error_stats(x: torch.Tensor, spec: QuantSpec) -> dict[str, float]:
    """Round-to-nearest error of ``spec`` on ``x``: MSE, SQNR (dB), max abs error, bytes/element."""
    q = quantize(x, spec, rounding="nearest")
    err = (dequantize(q) - x.to(torch.float32))
    mse = float(err.pow(2).mean())
    power = float(x.to(torch.float32).pow(2).mean())
    sqnr = float("inf") if mse == 0 else 10.0 * torch.log10(torch.tensor(power / mse)).item()
    return {"mse": mse, "sqnr_db": sqnr, "max_abs_err": float(err.abs().max()),
            "bytes_per_elem": q.nbytes / max(1, q.numel)}

"""OCP Microscaling (MX v1.0) formats by name and a fast, differentiable MX fake-quantizer.

The OCP MX v1.0 spec (sec. 5-6) defines a block of ``k = 32`` elements sharing one E8M0 scale
``X = 2^(floor(log2 amax) - emax_elem)`` (clamped to the E8M0 range ``[2^-127, 2^127]``); each
element ``v_i / X`` is rounded to the element format with round-to-nearest-even and saturated to
``±max_normal``. The concrete formats (spec Table 1):

=============  ===========  =====  ==========  ===========================================
name           element      emax   max_normal  note
=============  ===========  =====  ==========  ===========================================
mxfp8_e4m3     FP8 E4M3     8      448
mxfp8_e5m2     FP8 E5M2     15     57344
mxfp6_e3m2     FP6 E3M2     4      28
mxfp6_e2m3     FP6 E2M3     2      7.5
mxfp4          FP4 E2M1     2      6
mxint8         INT8         0      1.984375    sign-magnitude, 6 fractional bits (k/64)
mxint4         INT4         0      1.75        not an OCP type; the microxcaling ``int4``
=============  ===========  =====  ==========  ===========================================

MXINT-k stores integer codes ``n`` in ``{-(2^(k-1)-1), ..., 2^(k-1)-1}`` and follows the spec's
convention for the scale: element ``n / 2^(k-2)`` (``n/64`` for INT8) with element emax 0, so the
E8M0 value is ``X = floor(log2 amax)`` (this matters where ``X`` is clamped at -127).

:func:`mx_fake_quant` is the hot path (quantize-dequantize in float32, no code storage, straight-
through gradient with detached scales); it equals
``quantize_dequantize(x, QuantSpec(elem, "mx"))`` of :mod:`.qtensor` bit for bit, which stores the
real codes. Rounding differs from the microxcaling emulator's default ``round="nearest"``
(ties away from zero) only at exact ties; its ``round="even"`` is ours. The emulator takes
``floor(log2 amax)`` in float32, which rounds up for ``amax`` within a few ulps below a power of two;
we use the exact binary exponent (``frexp``), as the spec states it.
"""

from __future__ import annotations

from typing import Literal

import torch

from .formats import ElemFormat, get_format
from .qtensor import QuantSpec, mx_int_shift

#: MX format name -> element format of :mod:`.formats` (OCP MX v1.0 Table 1 + microxcaling int4).
MX_FORMATS: dict[str, str] = {
    "mxfp8_e4m3": "fp8_e4m3",
    "mxfp8_e5m2": "fp8_e5m2",
    "mxfp6_e3m2": "fp6_e3m2",
    "mxfp6_e2m3": "fp6_e2m3",
    "mxfp4": "fp4_e2m1",
    "mxint8": "int8",
    "mxint4": "int4",
}
MX_BLOCK = 32  # OCP MX v1.0: k = 32 for every concrete format


def mx_elem(name: str) -> ElemFormat:
    """The element format of an MX format name (``"mxfp4"`` ...) or of an element name."""
    if isinstance(name, str) and name in MX_FORMATS:
        return get_format(MX_FORMATS[name])
    try:
        return get_format(name)
    except ValueError:
        raise ValueError(f"unknown MX format {name!r}; choose one of {sorted(MX_FORMATS)}") from None


def mx_spec(name: str, block_size: int = MX_BLOCK, axis: int = -1,
            scale_mode: Literal["floor", "ceil"] = "floor") -> QuantSpec:
    """The :class:`QuantSpec` of an MX format (blocks along ``axis``, E8M0 scales)."""
    return QuantSpec(mx_elem(name).name, "mx", axis=axis, group_size=block_size, mx_scale_mode=scale_mode)


_EXP_MASK = 0x7F800000  # float32 exponent field


def _round_elem_(y: torch.Tensor, f: ElemFormat) -> torch.Tensor:
    """Round float32 ``y`` in place onto the grid of ``f``: saturate, then ties-to-even.

    For floats the grid spacing at ``y`` is ``2^(max(floor(log2|y|), emin) - mbits)``; it is read
    from the float32 exponent field (``bits & 0x7F800000``) and its reciprocal is built the same
    way, so ``y / ulp`` is an exact power-of-two scaling and ``torch.round`` (half to even) does the
    rounding. Format subnormals share the spacing of the first binade (clamp at ``emin``).
    """
    y.clamp_(-f.max_normal, f.max_normal)
    if f.is_int:
        return y.round_()
    ulp_bits = (y.view(torch.int32) & _EXP_MASK).sub_(f.mbits << 23)
    ulp_bits.clamp_(min=(f.emin + 127 - f.mbits) << 23)
    inv_bits = torch.sub(254 << 23, ulp_bits)
    return y.mul_(inv_bits.view(torch.float32)).round_().mul_(ulp_bits.view(torch.float32))


class _MXFakeQuant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, q):  # noqa: D401 - autograd protocol
        return q

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def mx_fake_quant(
    x: torch.Tensor,
    fmt: str | ElemFormat = "mxfp4",
    *,
    block_size: int = MX_BLOCK,
    scale_mode: Literal["floor", "ceil"] = "floor",
    ste: bool = True,
    check_finite: bool = True,
) -> torch.Tensor:
    """MX quantize-dequantize of ``x`` along its last axis (OCP MX v1.0, RTN ties-to-even).

    Parameters
    ----------
    x : Tensor, shape (..., K), floating point, K a multiple of ``block_size``
        Blocks are ``block_size`` consecutive elements of the last axis (the GEMM reduction axis
        for activations ``x`` of ``x @ W.T`` and for the rows of ``W``).
    fmt : str or ElemFormat
        An MX name (``"mxfp4"``, ``"mxint8"``, see :data:`MX_FORMATS`) or an element format name.
    scale_mode : {"floor", "ceil"}
        ``floor``: the spec's ``X = floor(log2 amax) - emax`` (the block max may saturate);
        ``ceil``: ``X = ceil(log2(amax / max_normal))`` (never saturates).
    ste : bool
        Straight-through gradient w.r.t. ``x`` (scales and rounding are treated as constants);
        otherwise the output is detached.
    check_finite : bool
        Default ``True``: raise ``ValueError`` on NaN/inf input (one extra pass). ``False`` skips
        the check for speed; a block holding an inf then comes back as 0 or ±max elsewhere and a
        NaN makes its whole block NaN (garbage in, garbage out).

    Returns
    -------
    Tensor, shape and dtype of ``x``.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError("mx_fake_quant expects a floating-point torch.Tensor")
    f = fmt if isinstance(fmt, ElemFormat) else mx_elem(fmt)
    if x.dim() == 0 or x.shape[-1] % block_size:
        raise ValueError(f"last axis of shape {tuple(x.shape)} is not a multiple of the MX block size "
                         f"{block_size}")
    if scale_mode not in ("floor", "ceil"):
        raise ValueError(f"scale_mode must be 'floor' or 'ceil', got {scale_mode!r}")
    if check_finite and x.numel() and not bool(torch.isfinite(x).all()):
        raise ValueError("mx_fake_quant input contains NaN or infinite values")
    xd = x.detach()
    work = xd.float()
    shape = work.shape
    blocks = work.reshape(-1, block_size)
    amax = blocks.abs().amax(dim=1, keepdim=True)
    shift = mx_int_shift(f)  # MXINT-k: spec element n / 2^(k-2), element emax 0
    if scale_mode == "floor":
        _, e = torch.frexp(amax)
        xexp = (e - 1) - (f.emax - shift)
    else:
        m, e = torch.frexp(amax / f.max_normal)
        xexp = e - (m == 0.5).to(e.dtype) + shift
    xexp = torch.where(amax > 0, xexp, torch.full_like(xexp, -127)).clamp_(-127, 127)
    # 2^-X and 2^X are exact float32 numbers for X in [-127, 127] (2^-127 is a subnormal), and
    # multiplying by a power of two is exact here, so y = v / X and the rescale are exact; the
    # MXINT shift is applied as a separate exact factor (2^(X - shift) can be below 2^-127)
    one = torch.ones_like(amax)
    y = blocks * torch.ldexp(one, -xexp)
    if shift:
        y.mul_(2.0 ** shift)
    q = _round_elem_(y, f)
    if shift:
        q.mul_(2.0 ** -shift)
    q = q.mul_(torch.ldexp(one, xexp)).reshape(shape).to(x.dtype)
    if ste and x.requires_grad:
        return _MXFakeQuant.apply(x, q)
    return q


def mx_max_scaled_error(fmt: str | ElemFormat, scale_mode: Literal["floor", "ceil"] = "floor") -> float:
    """``c_f``: the largest element error of an MX block in units of its E8M0 scale ``X``.

    With ``floor`` scaling the scaled elements lie in ``[0, 2^(emax+1))`` (spec emax); the error is
    the larger of half the top-binade spacing and the saturation error ``2^(emax+1) - max``; with
    ``ceil`` nothing saturates and only the half spacing remains. Used by the MX error bound
    ``|Q(v)_i - v_i| <= c_f X``: 2 for FP4 E2M1, 64 for FP8 E4M3, 0.25 for MXINT4 (elements n/4).
    """
    f = fmt if isinstance(fmt, ElemFormat) else mx_elem(fmt)
    if scale_mode not in ("floor", "ceil"):
        raise ValueError(f"scale_mode must be 'floor' or 'ceil', got {scale_mode!r}")
    half = 0.5 if f.is_int else 0.5 * 2.0 ** (f.emax - f.mbits)
    err = half if scale_mode == "ceil" else max(half, 2.0 ** (f.emax + 1) - f.max_normal)
    return err * 2.0 ** -mx_int_shift(f)  # integer codes n are elements n / 2^(k-2)


def mx_spec_emax(fmt: str | ElemFormat) -> int:
    """The element emax of the OCP MX spec (0 for MXINT, whose elements are n / 2^(k-2))."""
    f = fmt if isinstance(fmt, ElemFormat) else mx_elem(fmt)
    return f.emax - mx_int_shift(f)


__all__ = ["MX_BLOCK", "MX_FORMATS", "mx_elem", "mx_fake_quant", "mx_max_scaled_error", "mx_spec",
           "mx_spec_emax"]

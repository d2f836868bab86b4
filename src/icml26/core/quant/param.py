"""A trainable parameter stored only as quantized codes: :class:`QuantizedWeight`.

Design (after torchao's quantized tensor subclasses, e.g. ``AffineQuantizedTensor``: a
"wrapper" ``torch.Tensor`` subclass made with ``_make_wrapper_subclass`` that owns low-bit
inner tensors, implements ``F.linear`` in ``__torch_function__`` and every other op in
``__torch_dispatch__`` by dequantizing):

* The object *is* the parameter (``isinstance(w, nn.Parameter)`` holds, ``requires_grad``,
  ``.grad`` is an ordinary float32 tensor of the same shape). It owns a :class:`QTensor`
  (codes + scales) and no float32 storage at all.
* ``F.linear(x, w, b)`` (hence ``nn.Linear``) dequantizes *this layer's* weight just in time in a
  custom autograd function that saves only ``x``; the backward pass dequantizes again. No float32
  copy of a weight outlives its own matmul, so peak memory never holds one for every layer.
* Every other read-only op (``w.norm()``, ``w @ x``, ``w.sum()``, ``print(w)``, indexing) runs on
  the dequantized values and returns ordinary tensors.
* Writes: ``w.copy_(src)`` (what ``load_state_dict`` does) stores ``q(src)`` with round-to-nearest
  (codes are copied exactly when ``src`` is a ``QuantizedWeight`` of the same spec); every other
  in-place op on ``w`` raises a ``TypeError`` naming the op: a quantized weight is updated by its
  optimizer (:meth:`assign_`), never by float arithmetic that would be silently rounded.
* ``copy.deepcopy``, ``clone``, ``detach`` (aliasing, as for ordinary tensors), ``.to(device)``,
  ``pickle``/``torch.save`` keep the codes; ``torch.load(..., weights_only=True)`` reads them
  back (the rebuild function is registered as a safe global when this module is imported).
* ``keep_float=True`` keeps a float32 copy of the values next to the codes (faster forward, but
  charged as 4 more bytes per weight by memory accounting: the no-saving mode).

:func:`quantize_parameter_` turns an existing float32 parameter into a ``QuantizedWeight`` *in
place* (``torch.utils.swap_tensors``): modules, optimizers and user references keep pointing to
the same Python object.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_map

from .qtensor import QTensor, QuantSpec, dequantize, quantize

aten = torch.ops.aten

_SPEC_FIELDS = ("fmt", "granularity", "axis", "group_size", "rounding", "scale_kind", "mx_scale_mode",
                "fixed_scale")


def spec_to_dict(spec: QuantSpec | None) -> dict | None:
    """A :class:`QuantSpec` as a dict of primitives (safe for ``torch.load(weights_only=True)``)."""
    if spec is None:
        return None
    return {k: getattr(spec, k) for k in _SPEC_FIELDS}


def spec_from_dict(d: dict | QuantSpec | None) -> QuantSpec | None:
    """Inverse of :func:`spec_to_dict` (a ``QuantSpec`` passes through)."""
    if d is None or isinstance(d, QuantSpec):
        return d
    return QuantSpec(**d)


class _QuantLinear(torch.autograd.Function):
    """``F.linear`` with a quantized weight dequantized just in time (forward and backward)."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x)
        ctx.w, ctx.version, ctx.has_bias = w, w._qversion, b is not None
        return F.linear(x, w._values(), b)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        w = ctx.w
        if w._qversion != ctx.version:
            raise RuntimeError("a QuantizedWeight needed for gradient computation was modified "
                               "(optimizer step or copy_) between forward and backward")
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = grad @ w._values()
        g2 = grad.reshape(-1, grad.shape[-1])
        if ctx.needs_input_grad[1]:
            gw = g2.t() @ x.reshape(-1, x.shape[-1])
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = g2.sum(0)
        return gx, gw, gb


def _rebuild_quantized_weight(codes: torch.Tensor, scale: torch.Tensor, spec: dict, shape: tuple,
                              requires_grad: bool, is_param: bool, keep_float: bool) -> QuantizedWeight:
    w = QuantizedWeight(QTensor(codes, scale, QuantSpec(**spec), torch.Size(shape)),
                        requires_grad=requires_grad, keep_float=keep_float)
    if is_param:
        w._is_param = True
    return w


class QuantizedWeight(torch.Tensor):
    """A float32-typed tensor whose only storage is a :class:`QTensor` (see module docstring).

    Parameters
    ----------
    q : QTensor
        Codes + scales (owned, not copied).
    requires_grad : bool
    keep_float : bool
        Also keep the dequantized float32 values (no memory saving; faster reads).
    """

    _q: QTensor
    _cache: torch.Tensor | None
    _qversion: int

    @staticmethod
    def __new__(cls, q: QTensor, requires_grad: bool = False, keep_float: bool = False):
        if not isinstance(q, QTensor):
            raise TypeError(f"QuantizedWeight wraps a QTensor, got {type(q).__name__}")
        t = torch.Tensor._make_wrapper_subclass(cls, q.shape, dtype=torch.float32,
                                                device=q.codes.device, requires_grad=requires_grad)
        t._q = q
        t._cache = dequantize(q) if keep_float else None
        t._qversion = 0
        return t

    def __init__(self, q: QTensor, requires_grad: bool = False, keep_float: bool = False) -> None:
        pass

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_float(cls, x: torch.Tensor, spec: QuantSpec, *, rounding: str = "nearest",
                   generator: torch.Generator | None = None, requires_grad: bool = False,
                   keep_float: bool = False) -> QuantizedWeight:
        """Quantize a float tensor into a new ``QuantizedWeight``."""
        if isinstance(x, QuantizedWeight):
            x = x.dequantize()
        return cls(quantize(x.detach(), spec, rounding=rounding, generator=generator),
                   requires_grad=requires_grad, keep_float=keep_float)

    # -- contents ----------------------------------------------------------------------------
    @property
    def qtensor(self) -> QTensor:
        """The codes and scales (read-only view of the storage)."""
        return self._q

    @property
    def spec(self) -> QuantSpec:
        return self._q.spec

    @property
    def keep_float(self) -> bool:
        return self._cache is not None

    def _values(self) -> torch.Tensor:
        """Dequantized values; shared with the float cache when there is one (do not mutate)."""
        return self._cache if self._cache is not None else dequantize(self._q)

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """A new float tensor with the values (never aliases the codes)."""
        v = self._values()
        return v.to(dtype, copy=True) if self._cache is not None or dtype != torch.float32 else v

    @property
    def storage_nbytes(self) -> dict[str, int]:
        """Bytes held: ``codes``, ``scales`` and ``float_cache`` (0 unless ``keep_float``). The
        codes and scales may be views into a buffer shared with other weights (an optimizer's flat
        bucket): only this weight's part is counted."""
        return {"codes": int(self._q.codes.nbytes),
                "scales": int(self._q.scale.nbytes),
                "float_cache": 0 if self._cache is None else int(self._cache.untyped_storage().nbytes())}

    @torch.no_grad()
    def assign_(self, q: QTensor) -> QuantizedWeight:
        """Store new codes + scales (in place when their layout is unchanged, so aliases see them)."""
        if not isinstance(q, QTensor):
            raise TypeError(f"assign_ expects a QTensor, got {type(q).__name__}")
        if tuple(q.shape) != tuple(self.shape):
            raise ValueError(f"shape mismatch: weight {tuple(self.shape)}, codes of {tuple(q.shape)}")
        old = self._q
        if (q.spec == old.spec and q.codes.shape == old.codes.shape and q.codes.dtype == old.codes.dtype
                and q.scale.shape == old.scale.shape and q.scale.dtype == old.scale.dtype):
            old.codes.copy_(q.codes)
            old.scale.copy_(q.scale)
        else:
            object.__setattr__(self, "_q", q)
        if self._cache is not None:
            self._cache.copy_(dequantize(self._q))
        self._qversion += 1
        return self

    # -- python protocol ----------------------------------------------------------------------
    def __repr__(self, *, tensor_contents=None) -> str:  # noqa: D105
        s = self.spec
        head = (f"QuantizedWeight({s.fmt}, {s.granularity} scales, shape={tuple(self.shape)}"
                f"{', requires_grad=True' if self.requires_grad else ''}), dequantized:\n")
        return head + repr(self.dequantize())

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        q = QTensor(self._q.codes.clone(), self._q.scale.clone(), self._q.spec, self._q.shape)
        new = QuantizedWeight(q, requires_grad=self.requires_grad, keep_float=self.keep_float)
        if getattr(self, "_is_param", False):
            new._is_param = True
        new.__dict__.update({k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()
                             if k not in ("_q", "_cache", "_qversion", "_is_param")})
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, proto):
        return (_rebuild_quantized_weight,
                (self._q.codes, self._q.scale, spec_to_dict(self.spec), tuple(self.shape),
                 self.requires_grad, bool(getattr(self, "_is_param", False)), self.keep_float))

    def __tensor_flatten__(self):
        return ["_codes", "_scale"], (self._q.spec, self._q.shape, self.keep_float)

    @property
    def _codes(self):
        return self._q.codes

    @property
    def _scale(self):
        return self._q.scale

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        spec, shape, keep = ctx
        return QuantizedWeight(QTensor(inner["_codes"], inner["_scale"], spec, shape), keep_float=keep)

    # -- torch protocol -----------------------------------------------------------------------
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.linear or func is torch._C._nn.linear:
            x = args[0] if args else kwargs["input"]
            w = args[1] if len(args) > 1 else kwargs["weight"]
            b = args[2] if len(args) > 2 else kwargs.get("bias")
            if isinstance(w, QuantizedWeight) and not isinstance(x, QuantizedWeight) \
                    and not isinstance(b, QuantizedWeight):
                with torch._C.DisableTorchFunctionSubclass():
                    return _QuantLinear.apply(x, w, b)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten.detach.default or func is aten.alias.default:
            src = args[0]
            out = QuantizedWeight(src._q, requires_grad=False)
            out._cache = src._cache
            return out
        if func is aten.clone.default:
            src = args[0]
            q = QTensor(src._q.codes.clone(), src._q.scale.clone(), src._q.spec, src._q.shape)
            return QuantizedWeight(q, keep_float=src.keep_float)
        if func is aten._to_copy.default and isinstance(args[0], QuantizedWeight):
            src = args[0]
            dtype = kwargs.get("dtype")
            if dtype in (None, torch.float32) and kwargs.get("layout") in (None, torch.strided):
                dev = kwargs.get("device") or src.device
                q = QTensor(src._q.codes.to(dev, copy=True), src._q.scale.to(dev, copy=True),
                            src._q.spec, src._q.shape)
                return QuantizedWeight(q, keep_float=src.keep_float)
        if func is aten.copy_.default:
            dst, src = args[0], args[1]
            if isinstance(dst, QuantizedWeight):
                if isinstance(src, QuantizedWeight) and src.spec == dst.spec:
                    dst.assign_(QTensor(src._q.codes.to(dst.device), src._q.scale.to(dst.device),
                                        src.spec, src._q.shape))
                else:
                    val = src.dequantize() if isinstance(src, QuantizedWeight) else src
                    val = torch.as_tensor(val, dtype=torch.float32, device=dst.device).expand(dst.shape)
                    dst.assign_(quantize(val.contiguous(), dst.spec, rounding="nearest"))
                return dst
            return dst.copy_(src.dequantize())
        schema = func._schema
        if schema.is_mutable:
            flat_args = list(args) + [kwargs.get(a.name) for a in schema.arguments[len(args):]]
            for a, v in zip(schema.arguments, flat_args, strict=False):
                if a.alias_info is not None and a.alias_info.is_write and isinstance(v, QuantizedWeight):
                    raise TypeError(
                        f"in-place op {func} on a QuantizedWeight: its storage is quantized codes; "
                        "update it with its optimizer, with .copy_(float_values) (re-quantized, round "
                        "to nearest) or QuantizedWeight.assign_(qtensor)")

        def unwrap(a: Any):
            return a._values() if isinstance(a, QuantizedWeight) else a

        return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))


torch.serialization.add_safe_globals([_rebuild_quantized_weight])


@torch.no_grad()
def quantize_parameter_(p: torch.Tensor, spec: QuantSpec, *, keep_float: bool = False,
                        rounding: str = "nearest") -> torch.Tensor:
    """Turn the float32 parameter ``p`` into a :class:`QuantizedWeight` in place; return it.

    The Python object is kept (``torch.utils.swap_tensors``), so every module, optimizer and
    user reference to ``p`` now sees the quantized weight. Its values become ``q(p)``.
    """
    if isinstance(p, QuantizedWeight):
        if p.spec != spec:
            raise ValueError(f"parameter is already quantized with {p.spec}, not {spec}")
        return p
    if not isinstance(p, torch.Tensor) or p.dtype != torch.float32:
        raise TypeError(f"only float32 tensors can be quantized in place, got {getattr(p, 'dtype', p)}")
    new = QuantizedWeight.from_float(p.detach(), spec, rounding=rounding, keep_float=keep_float,
                                     requires_grad=p.requires_grad)
    if getattr(p, "_is_param", False) or isinstance(p, torch.nn.Parameter):
        new._is_param = True
    grad = p.grad
    try:
        torch.utils.swap_tensors(p, new)
    except RuntimeError as exc:  # e.g. the parameter is referenced by a live autograd graph
        raise RuntimeError("cannot quantize this parameter in place (it is referenced by a live "
                           f"autograd graph or a weak reference): {exc}") from exc
    if grad is not None:
        p.grad = grad
    return p


__all__ = ["QuantizedWeight", "quantize_parameter_", "spec_from_dict", "spec_to_dict"]

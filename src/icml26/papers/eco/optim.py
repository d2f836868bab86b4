"""ECO optimizers: quantized weights only, the quantization error injected into momentum.

Paper: Nikdan, Zandieh, Alistarh, Mirrokni, *ECO: Quantized Training without Full-Precision
Master Weights*, arXiv:2601.22101 (ICML 2026).

Between steps a quantized parameter exists only as codes + scales: the optimizer turns it into
a :class:`~icml26.core.quant.QuantizedWeight` in place (the model's own parameter, no float32
storage; every torch op sees the dequantized values, ``nn.Linear`` dequantizes just in time). A step computes the transient high-precision
iterate from the *quantized* weight, re-quantizes it and maps the rounding error back into the
momentum so that it is applied later instead of lost:

SGD with momentum (paper Alg. 2; ``buf`` as in ``torch.optim.SGD``, update ``-η buf``)::

    m̃ = β m + (1 - τ) g            θ̃ = θ̂ - η m̃            θ̂' = q(θ̃)      e = θ̃ - θ̂'
    m  = m̃ + (1/η)(1 - 1/β) e

AdamW (paper Alg. 3, as re-derived in third-party ports; ``D = sqrt(v / b2) + ε``)::

    θ̃ = (1 - ηλ) θ̂ - η (m̃ / b1) / D     θ̂' = q(θ̃)     e = θ̃ - θ̂'
    m  = m̃ + (1 - ηλ)(b1/η)(1 - 1/β1) D ⊙ e

The coefficient follows from asking the transient iterate to track the master-weight
trajectory, which needs ``m_t = M*_t - e_t / (β η)``; ECO's only approximation is ``e_t ≈
e_{t+1}`` (the previous error is not stored). ``error_feedback=False`` is *naive master-weight
removal* ``θ̂' = q(θ̂ - η u)``; ``exact_feedback=True`` stores ``e_t`` (one extra buffer) and uses
the exact two-error rule (an ablation that reproduces the master-weight trajectory).
"""

from __future__ import annotations

import ctypes
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

import torch

from icml26.core.quant import (
    QTensor,
    QuantizedWeight,
    QuantSpec,
    dequantize,
    quantize,
    quantize_parameter_,
    spec_from_dict,
    spec_to_dict,
)
from icml26.core.quant.rows import decode_rows, requantize_rows_, supports_rows

from . import _kernel

_CHUNK = 1 << 18
"""Elements per chunk of the flat fast path (1 MB of float32 per temporary)."""
_SUBCHUNK = 1 << 16
"""Elements per call of the chunked C kernel (64 KB per array: the passes of one call stay in L2)."""
_GROUP = 1 << 12
"""Elements per row group of the one-call kernel (16 KB per temporary: L1)."""


def _i64(values: list[int]):
    """A C array of int64 (pointers, sizes) for the kernel."""
    return (ctypes.c_int64 * len(values))(*values)


def _c_float(t: torch.Tensor) -> bool:
    """A contiguous float32 CPU tensor (the C kernels read it as a flat array)."""
    return t.dtype == torch.float32 and t.is_cpu and t.is_contiguous()


def _c_float_group(ps, ms, vs, grads) -> bool:
    """Every parameter, moment and gradient (gradients already checked) a contiguous float32 CPU
    tensor of the parameter's shape: the C float step can run."""
    f32 = torch.float32
    for p, m, v, g in zip(ps, ms, vs, grads, strict=True):
        if not (p.dtype == f32 and m.dtype == f32 and v.dtype == f32 and p.is_cpu and m.is_cpu and v.is_cpu
                and p.is_contiguous() and m.is_contiguous() and v.is_contiguous()
                and p.shape == g.shape == m.shape == v.shape):
            return False
    return True


def _step_values(steps: list[torch.Tensor]) -> list[float]:
    """``[float(t) for t in steps]`` with one tensor read instead of one per step counter."""
    if len(steps) >= 4:
        try:
            return torch.stack(steps).tolist()
        except RuntimeError:  # counters of mixed devices (a loaded state)
            pass
    return [float(t) for t in steps]


DEFAULT_WEIGHT_FORMAT = QuantSpec("fp8_e4m3", granularity="channel", axis=-1, scale_kind="e8m0")
"""FP8 E4M3 with one power-of-two (E8M0) scale per output row. The paper's pre-training runs
store FP8 E4M3 weights; its scale granularity is not verified. Our choice: a power-of-two scale
keeps each row's grid fixed between steps (it moves only when the row's absmax crosses a power
of two), so an update below half a grid step is really lost by naive rounding; an FP32 absmax
scale would rescale the whole row whenever its largest element moves."""


def _check_hparam(name: str, value: Any, low: float = 0.0, high: float = math.inf,
                  low_open: bool = False, high_open: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    bad_low = value <= low if low_open else value < low
    bad_high = value >= high if high_open else value > high
    if bad_low or bad_high:
        raise ValueError(f"{name}={value!r} is out of range")


class _QuantizedWeightOptimizer(torch.optim.Optimizer):
    """Shared machinery: quantized parameters, diagnostics, state_dict with plain specs.

    A parameter of a group whose ``weight_format`` is not ``None`` is turned into a
    :class:`~icml26.core.quant.QuantizedWeight` *in place* when its group is added (at
    construction or by :meth:`add_param_group`): from then on the model's own parameter holds
    only codes + scales, every forward dequantizes one layer at a time, and checkpoints of the
    model carry the codes. The optimizer state holds only momenta (no weight copy).
    """

    def __init__(self, params, defaults: dict[str, Any], *, release_weights: bool,
                 generator: torch.Generator | None, diagnostics: bool, track_error_cosine: bool) -> None:
        self.release_weights = bool(release_weights)
        self.generator = generator
        self.track_error_cosine = bool(track_error_cosine)
        self.track_diagnostics = bool(diagnostics) or self.track_error_cosine
        self.history: dict[str, list[float]] = {"frozen_fraction": [], "error_cosine": [],
                                                "relative_error": []}
        self._flat_buckets: dict[tuple[int, int], _FlatBucket] = {}
        self._float_tmp = torch.empty(4096)  # the C float step's sqrt chunk
        super().__init__(params, defaults)

    # -- quantized storage ---------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group; its parameters are quantized in place when its ``weight_format`` is set."""
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        spec = group["weight_format"] = spec_from_dict(group["weight_format"])
        if spec is not None and not isinstance(spec, QuantSpec):
            raise TypeError(f"weight_format must be a QuantSpec or None, got {type(spec).__name__}")
        if group["rounding"] not in ("nearest", "stochastic"):
            raise ValueError(f"rounding must be 'nearest' or 'stochastic', got {group['rounding']!r}")
        if group.get("sham_feedback") and not group["error_feedback"]:
            raise ValueError("sham_feedback replaces the injected error: it needs error_feedback=True")
        for p in group["params"]:
            if not p.is_floating_point():
                raise TypeError(f"parameters must be floating point, got {p.dtype}")
            if spec is None:
                if isinstance(p, QuantizedWeight):
                    raise TypeError("a group with weight_format=None holds a QuantizedWeight; give "
                                    "its group the weight's format")
                continue
            if p.dtype != torch.float32:
                raise TypeError(f"quantized parameters must be float32 tensors, got {p.dtype}")
            before = None if isinstance(p, QuantizedWeight) else p.detach().clone()
            quantize_parameter_(p, spec, keep_float=not self.release_weights)
            if group.get("exact_feedback") and before is not None:
                # the ablation also knows e_0 = θ_0 - q(θ_0)
                self.state[p]["error"] = before - p.dequantize()

    @staticmethod
    def _quantized_params(group: dict) -> list[torch.Tensor]:
        return list(group["params"]) if group["weight_format"] is not None else []

    # -- checkpoints ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """torch's optimizer state_dict with each ``weight_format`` as a dict of primitives (so
        ``torch.load(weights_only=True)`` reads it) and the rounding generator's state."""
        sd = super().state_dict()
        for g in sd["param_groups"]:
            g["weight_format"] = spec_to_dict(g["weight_format"])
        if self.generator is not None:
            sd["generator_state"] = self.generator.get_state()
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore momenta (and the generator). The weights live in the model: restore them with
        ``model.load_state_dict`` (the codes are saved with the model), in either order."""
        sd = dict(state_dict)
        groups = []
        for mine, saved in zip(self.param_groups, sd["param_groups"], strict=False):
            saved = dict(saved)
            spec = spec_from_dict(saved.get("weight_format"))
            if spec != mine["weight_format"]:
                raise ValueError(f"saved weight_format {spec} differs from this optimizer's "
                                 f"{mine['weight_format']}")
            saved["weight_format"] = spec
            groups.append(saved)
        sd["param_groups"] = groups
        gen_state = sd.pop("generator_state", None)
        super().load_state_dict(sd)
        if gen_state is not None and self.generator is not None:
            self.generator.set_state(gen_state)

    # -- per-parameter quantized update ------------------------------------------------------
    def _requantize(self, p: torch.Tensor, theta_tilde: torch.Tensor, group: dict,
                    stats: list[float]) -> torch.Tensor:
        """Store q(θ̃) as the new weight; return the error e = θ̃ - θ̂' (float32, transient)."""
        q = quantize(theta_tilde, group["weight_format"], rounding=group["rounding"],
                     generator=self.generator)
        new = dequantize(q)
        err = theta_tilde.sub_(new)  # θ̃ is transient: reuse its buffer for the error
        if self.track_diagnostics:
            old = p._values()
            stats[0] += float((new == old).sum())
            stats[1] += new.numel()
            stats[2] += float(err.pow(2).sum())
            stats[3] += float(new.pow(2).sum())
            if self.track_error_cosine:
                state = self.state[p]
                prev = state.get("diag_prev_error")
                if prev is not None:
                    denom = float(prev.norm() * err.norm())
                    if denom > 0:
                        stats[4] += float((prev * err).sum()) / denom
                        stats[5] += 1
                state["diag_prev_error"] = err.clone()
        p.assign_(q)
        return err

    def _finish_step(self, stats: list[float]) -> None:
        if stats[1]:
            self.history["frozen_fraction"].append(stats[0] / stats[1])
            self.history["relative_error"].append(math.sqrt(stats[2] / max(stats[3], 1e-30)))
        if stats[5]:
            self.history["error_cosine"].append(stats[4] / stats[5])

    def diagnostics(self, last_fraction: float = 0.1) -> dict[str, float]:
        """Means over the last ``last_fraction`` of steps of the per-step diagnostics.

        Recorded only with ``diagnostics=True`` (or ``track_error_cosine=True``).
        ``frozen_fraction``: share of quantized weights whose value did not change in a step;
        ``relative_error``: ``||e|| / ||θ̂||``; ``error_cosine`` (with ``track_error_cosine``):
        cosine of consecutive errors ``e_t, e_{t+1}`` (ECO's heuristic assumes they are close).
        """
        out = {}
        for k, v in self.history.items():
            if v:
                n = max(1, int(math.ceil(len(v) * last_fraction)))
                out[k] = float(sum(v[-n:]) / n)
        return out

    def _injected(self, err: torch.Tensor, group: dict) -> torch.Tensor:
        """The error that is injected: ``err`` itself, or with ``sham_feedback`` (a negative
        control) ``err``'s values randomly permuted over the tensor's coordinates: the same
        magnitudes and the same momentum perturbation, no information on where the rounding
        error is."""
        if not group.get("sham_feedback"):
            return err
        perm = torch.randperm(err.numel(), generator=self.generator, device=err.device)
        return err.reshape(-1)[perm].view_as(err)

    @staticmethod
    def _grad(p: torch.Tensor) -> torch.Tensor:
        g = p.grad
        if g.is_sparse:
            raise TypeError("sparse gradients are not supported")
        if not bool(torch.isfinite(g).all()):
            raise ValueError("gradient contains NaN or infinite values")
        return g

    @staticmethod
    def _check_lr(lr: float, group: dict) -> None:
        if isinstance(lr, torch.Tensor):
            raise TypeError("tensor learning rates are not supported")
        if lr < 0 or math.isnan(lr):
            raise ValueError(f"learning rate must be >= 0, got {lr}")

    @staticmethod
    def _theta_hat(p: torch.Tensor) -> torch.Tensor:
        return p.dequantize()


class ECOSGD(_QuantizedWeightOptimizer):
    """SGD with momentum on quantized weights with ECO error feedback (paper Alg. 2).

    The update rule of ``torch.optim.SGD`` (coupled ``weight_decay``, ``dampening``; no Nesterov)
    applied to the quantized weight, with the error injection of the module docstring. With
    ``weight_format=None`` it *is* ``torch.optim.SGD``.

    Parameters
    ----------
    params : iterable of Tensors or param groups
        A group may set its own ``weight_format`` (``None`` = an ordinary float32 parameter).
    lr : float
        Learning rate η > 0 (must be > 0 when ``error_feedback``: the injection divides by η;
        a scheduled η = 0 later just skips the injection, the weight does not move then).
    momentum : float
        β in (0, 1) (ECO needs momentum: its coefficient is ``1 - 1/β``). Default 0.9 (paper's
        SGDM setting is not given in what we could read; the usual value).
    dampening, weight_decay : float
        As in ``torch.optim.SGD``.
    weight_format : QuantSpec or None
        Storage format of the weights (default FP8 E4M3, per-row scales).
    rounding : {"nearest", "stochastic"}
        Rounding of the re-quantization (paper: ECO works with both, SR best).
    error_feedback : bool
        ``False`` = naive master-weight removal ``θ̂' = q(θ̂ - η m)``.
    sham_feedback : bool
        Negative control: inject the error's values randomly permuted over the coordinates of
        each tensor (same magnitudes, no information on where the error is; draws from
        ``generator``). Needs ``error_feedback``.
    exact_feedback : bool
        Ablation: store ``e_t`` and use ``m' = m̃ + e_t/η - e_{t+1}/(βη)`` (exact when η is
        constant: reproduces the master-weight trajectory; costs one float32 buffer).
    release_weights : bool
        Default ``True``: quantized parameters keep only codes + scales (the memory-saving mode;
        each layer is dequantized just in time in its forward/backward). ``False`` also keeps
        a float32 copy of the values (no saving; faster forward).
    generator : torch.Generator, optional
        Randomness of stochastic rounding (its state is saved in ``state_dict``).
    diagnostics : bool
        Record per-step diagnostics (frozen fraction, relative error; costs a few reductions).
    track_error_cosine : bool
        Keep the previous error to log ``cos(e_t, e_{t+1})`` (diagnostic; costs a buffer).
    """

    def __init__(self, params: Iterable, lr: float = 1e-2, momentum: float = 0.9, dampening: float = 0.0,
                 weight_decay: float = 0.0, *, weight_format: QuantSpec | None = DEFAULT_WEIGHT_FORMAT,
                 rounding: str = "stochastic", error_feedback: bool = True, exact_feedback: bool = False,
                 sham_feedback: bool = False, release_weights: bool = True,
                 generator: torch.Generator | None = None,
                 diagnostics: bool = False, track_error_cosine: bool = False) -> None:
        _check_hparam("lr", lr)
        _check_hparam("momentum", momentum, 0.0, 1.0, high_open=True)
        _check_hparam("dampening", dampening, 0.0, 1.0)
        _check_hparam("weight_decay", weight_decay)
        if (error_feedback or exact_feedback) and lr <= 0:
            raise ValueError("error feedback divides by the learning rate: lr must be > 0")
        if (error_feedback or exact_feedback) and momentum <= 0:
            raise ValueError("ECO error feedback needs momentum > 0 (coefficient 1 - 1/momentum)")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        weight_format=weight_format, rounding=rounding,
                        error_feedback=bool(error_feedback), exact_feedback=bool(exact_feedback),
                        sham_feedback=bool(sham_feedback))
        super().__init__(params, defaults, release_weights=release_weights, generator=generator,
                         diagnostics=diagnostics, track_error_cosine=track_error_cosine)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        stats = [0.0] * 6
        for group in self.param_groups:
            lr, beta = group["lr"], group["momentum"]
            self._check_lr(lr, group)
            quantized = group["weight_format"] is not None
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = self._grad(p)
                state = self.state[p]
                theta = self._theta_hat(p) if quantized else p
                if group["weight_decay"]:
                    # coupled decay acts on the weight the run tracks: with exact feedback that is
                    # the master iterate theta_hat + e (so the ablation matches the master run)
                    prev_err = state.get("error") if group["exact_feedback"] else None
                    decayed = theta if prev_err is None else theta + prev_err
                    g = g.add(decayed, alpha=group["weight_decay"])
                first = False
                if beta:
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        first = True
                        buf = state["momentum_buffer"] = g.detach().clone()
                    else:
                        buf.mul_(beta).add_(g, alpha=1 - group["dampening"])
                    direction = buf
                else:
                    direction = g
                if not quantized:
                    p.add_(direction, alpha=-lr)
                    continue
                theta_tilde = theta.add(direction, alpha=-lr)
                prev = state.get("error") if group["exact_feedback"] else None
                if prev is not None and first:
                    # torch's first momentum step is buf = g, so e_0 cannot live in the buffer
                    # (the invariant m_t = M*_t - e_t/(βη)); add it in weight space once
                    theta_tilde.add_(prev)
                err = self._requantize(p, theta_tilde, group, stats)
                if lr > 0 and group["exact_feedback"]:
                    if prev is not None and not first:
                        buf.add_(prev, alpha=1.0 / lr)
                    buf.add_(err, alpha=-1.0 / (beta * lr))
                    state["error"] = err
                elif lr > 0 and group["error_feedback"]:
                    buf.add_(self._injected(err, group), alpha=(1.0 / lr) * (1.0 - 1.0 / beta))
        self._finish_step(stats)
        return loss


class ECOAdamW(_QuantizedWeightOptimizer):
    """AdamW on quantized weights with ECO error feedback (paper Alg. 3); no master weights.

    Same state names and update as ``torch.optim.AdamW`` (``step``, ``exp_avg``,
    ``exp_avg_sq``; decoupled decay; ``denom = sqrt(v)/sqrt(b2) + eps``), applied to the
    dequantized stored weight; after re-quantization the error ``e`` is mapped back through the
    preconditioner into ``exp_avg`` (module docstring). With ``weight_format=None`` it *is*
    ``torch.optim.AdamW``. ECO adds no hyper-parameter (paper); ``lr, betas, eps,
    weight_decay`` are the base optimizer's, defaults as in ``torch.optim.AdamW``.

    Parameters
    ----------
    params : iterable of Tensors or param groups
        A group may set its own ``weight_format`` (``None`` = plain float32 AdamW).
    lr : float
        η > 0 (see :class:`ECOSGD` for η = 0 during a schedule).
    betas : (float, float)
        β1 in (0, 1) (the injection coefficient is ``1 - 1/β1``), β2 in [0, 1).
    eps, weight_decay : float
    weight_format : QuantSpec or None
        Default FP8 E4M3 with per-row FP32 scales.
    rounding : {"nearest", "stochastic"}
        Default "stochastic" (the paper's best frontier is ECO + SR, Fig. 1).
    error_feedback : bool
        ``False`` = naive master-weight removal.
    sham_feedback : bool
        Negative control (see :class:`ECOSGD`); uses the per-parameter path.
    exact_feedback : bool
        Ablation: store ``e_t`` and add it back in weight space, ``θ̃ = (1-ηλ)(θ̂ + e_t) - η u``
        (the exact correction; the momentum form would need the next step's ``D``): reproduces
        the master-weight trajectory; costs one float32 buffer.
    decay_in_injection : bool
        Multiply the injection by ``(1 - ηλ)`` (exact derivation with decoupled decay, as in
        F. L. Cesista's re-derivation; not given in what we could read of the paper).
    release_weights, generator, diagnostics, track_error_cosine
        See :class:`ECOSGD`.
    batched : bool
        Default ``True``: update each quantized group foreach-style. FP8 parameters whose rows
        are their scale blocks share, per row length, one flat buffer for codes, scales,
        ``exp_avg`` and ``exp_avg_sq`` (each parameter's tensors are views of it; re-made after
        ``load_state_dict``), updated in row chunks with
        :func:`~icml26.core.quant.rows.requantize_rows_`; other formats get one quantize call per
        bucket of equal block length. ``False``: one parameter at a time (same update; round to
        nearest gives the same weights, stochastic rounding draws in another order).

    Examples
    --------
    >>> import torch
    >>> lin = torch.nn.Linear(64, 32)
    >>> opt = ECOAdamW([{"params": [lin.weight]},
    ...                 {"params": [lin.bias], "weight_format": None}], lr=1e-3)
    >>> lin(torch.randn(4, 64)).pow(2).mean().backward(); opt.step()
    >>> lin.weight.qtensor.codes.dtype
    torch.float8_e4m3fn
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, *,
                 weight_format: QuantSpec | None = DEFAULT_WEIGHT_FORMAT, rounding: str = "stochastic",
                 error_feedback: bool = True, exact_feedback: bool = False, sham_feedback: bool = False,
                 decay_in_injection: bool = True, release_weights: bool = True,
                 generator: torch.Generator | None = None, diagnostics: bool = False,
                 track_error_cosine: bool = False, batched: bool = True) -> None:
        self.batched = bool(batched)
        _check_hparam("lr", lr)
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise TypeError("betas must be a pair of floats")
        _check_hparam("betas[0]", betas[0], 0.0, 1.0, high_open=True)
        _check_hparam("betas[1]", betas[1], 0.0, 1.0, high_open=True)
        _check_hparam("eps", eps)
        _check_hparam("weight_decay", weight_decay)
        if (error_feedback or exact_feedback) and lr <= 0:
            raise ValueError("error feedback divides by the learning rate: lr must be > 0")
        if error_feedback and betas[0] <= 0:
            raise ValueError("ECO error feedback needs betas[0] > 0 (coefficient 1 - 1/beta1)")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        weight_format=weight_format, rounding=rounding,
                        error_feedback=bool(error_feedback), exact_feedback=bool(exact_feedback),
                        sham_feedback=bool(sham_feedback), decay_in_injection=bool(decay_in_injection))
        super().__init__(params, defaults, release_weights=release_weights, generator=generator,
                         diagnostics=diagnostics, track_error_cosine=track_error_cosine)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        stats = [0.0] * 6
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            self._check_lr(lr, group)
            quantized = group["weight_format"] is not None
            if (quantized and self.batched and not group["exact_feedback"] and not self.track_error_cosine
                    and not group.get("sham_feedback")):
                self._batched_quantized_step(group, stats)
                continue
            if not quantized and self.batched:
                self._batched_float_step(group)
                continue
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = self._grad(p)
                state = self.state[p]
                if "step" not in state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                t = float(state["step"])
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.lerp_(g, 1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                b1 = 1 - beta1**t
                b2 = 1 - beta2**t
                denom = (v.sqrt() / math.sqrt(b2)).add_(eps)
                if not quantized:
                    p.mul_(1 - lr * wd)
                    p.addcdiv_(m, denom, value=-lr / b1)
                    continue
                theta = self._theta_hat(p)
                if group["exact_feedback"] and "error" in state:
                    theta = theta + state["error"]
                theta_tilde = theta.mul_(1 - lr * wd).addcdiv_(m, denom, value=-lr / b1)
                err = self._requantize(p, theta_tilde, group, stats)
                if group["exact_feedback"]:
                    state["error"] = err
                elif lr > 0 and group["error_feedback"]:
                    coeff = (b1 / lr) * (1.0 - 1.0 / beta1)
                    if group["decay_in_injection"]:
                        coeff *= 1 - lr * wd
                    m.add_(denom * self._injected(err, group), alpha=coeff)
        self._finish_step(stats)
        return loss

    def _batched_quantized_step(self, group: dict, stats: list[float]) -> None:
        """The same update for a whole quantized group, foreach-style: moments with
        ``torch._foreach_*``, and one quantize call per bucket of parameters whose blocks have the
        same length (rows of equal width for per-row scales), instead of one per parameter."""
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        spec: QuantSpec = group["weight_format"]
        all_ps = [p for p in group["params"] if p.grad is not None]
        if not all_ps:
            return
        ps = all_ps
        grads = [p.grad for p in ps]
        if any(g.is_sparse for g in grads):
            raise TypeError("sparse gradients are not supported")
        lib = None if self.track_diagnostics or spec.scale_kind != "e8m0" else _kernel.kernel()
        if lib is not None and not all(_c_float(g) for g in grads):
            lib = None
        if lib is not None:  # one read of the gradients, no reduction kernels
            finite = bool(lib.all_finite(_i64([g.data_ptr() for g in grads]),
                                         _i64([g.numel() for g in grads]), len(grads)))
        else:
            finite = bool(torch.isfinite(torch.stack(torch._foreach_norm(grads))).all())
        if not finite:
            raise ValueError("gradient contains NaN or infinite values")
        states = [self.state[p] for p in ps]
        for p, state in zip(ps, states, strict=True):
            if "step" not in state:
                state["step"] = torch.tensor(0.0)
                state["exp_avg"] = torch.zeros(p.shape, device=p.device)
                state["exp_avg_sq"] = torch.zeros(p.shape, device=p.device)
        steps = [st["step"] for st in states]
        torch._foreach_add_(steps, 1.0)
        ts = _step_values(steps)
        # fast path: parameters whose rows are their scale blocks (FP8 codes) live in one flat
        # buffer per block length (codes, scales, moments); one set of whole-buffer ops updates
        # them, or the one-pass C kernel (moments included) where it is available
        flat: dict[int, list[int]] = {}
        for i, p in enumerate(ps):
            k = self._flat_key(p, spec)
            if k > 0:
                flat.setdefault(k, []).append(i)
        jobs = []  # (bucket, indices, kernel?) in bucket order (the order of the random draws)
        for k, idx in flat.items():
            if len({ts[i] for i in idx}) != 1:
                continue  # parameters at different step counts: the general path below
            bucket = self._flat_bucket(group, k, [ps[i] for i in idx])
            jobs.append((bucket, idx, lib is not None and not bucket.has_cache))
        in_kernel = {i for _, idx, use in jobs if use for i in idx}
        upd = [i for i in range(len(ps)) if i not in in_kernel]
        ms = [st["exp_avg"] for st in states]
        vs = [st["exp_avg_sq"] for st in states]
        if upd:
            mu, vu, gu = [ms[i] for i in upd], [vs[i] for i in upd], [grads[i] for i in upd]
            torch._foreach_lerp_(mu, gu, 1 - beta1)
            torch._foreach_mul_(vu, beta2)
            torch._foreach_addcmul_(vu, gu, gu, value=1 - beta2)
        done: set[int] = set()
        for bucket, idx, use in jobs:
            if use:
                self._flat_update_kernel(lib, bucket, group, ts[idx[0]], [grads[i] for i in idx])
            else:
                self._flat_update(bucket, group, ts[idx[0]], stats)
            done.update(idx)
        if done:
            keep = [i for i in range(len(ps)) if i not in done]
            if not keep:
                return
            ps, ms, vs, ts = ([ps[i] for i in keep], [ms[i] for i in keep], [vs[i] for i in keep],
                              [ts[i] for i in keep])
        b1s = [1 - beta1**t for t in ts]
        denoms = torch._foreach_sqrt(vs)
        torch._foreach_div_(denoms, [math.sqrt(1 - beta2**t) for t in ts])
        torch._foreach_add_(denoms, eps)
        # θ̃ = (1 - ηλ) θ̂ - η (m / b1) / D, computed in per-bucket flat buffers
        buckets: dict[int, list[int]] = {}
        for i, p in enumerate(ps):
            buckets.setdefault(self._bucket_key(p, spec), []).append(i)
        errs: list[torch.Tensor | None] = [None] * len(ps)
        for key, idx in buckets.items():
            if key < 0:  # not bucketable: one parameter on its own
                idx_groups = [[i] for i in idx]
            else:
                idx_groups = [idx]
            for ids in idx_groups:
                if len(ids) == 1:
                    flat = ps[ids[0]].dequantize().reshape(-1)
                else:  # one dequantize for the whole bucket
                    flat = self._bucket_values([ps[i] for i in ids], spec, key)
                old = flat.clone() if self.track_diagnostics else None
                views = list(torch.split(flat, [ps[i].numel() for i in ids]))
                if wd:
                    flat.mul_(1 - lr * wd)
                torch._foreach_addcdiv_([v.view(ps[i].shape) for v, i in zip(views, ids, strict=True)],
                                        [ms[i] for i in ids], [denoms[i] for i in ids],
                                        [-lr / b1s[i] for i in ids])
                if len(ids) == 1:
                    q = quantize(flat.view(ps[ids[0]].shape), spec, rounding=group["rounding"],
                                 generator=self.generator)
                    new = dequantize(q).reshape(-1)
                    parts = [q]
                else:
                    k = key
                    q = quantize(flat.view(-1, k), spec, rounding=group["rounding"], generator=self.generator)
                    new = dequantize(q).reshape(-1)
                    parts = self._split_qtensor(q, [ps[i] for i in ids], spec)
                flat.sub_(new)  # the error e = θ̃ - θ̂'
                if old is not None:
                    stats[0] += float((new == old).sum())
                    stats[1] += new.numel()
                    stats[2] += float(flat.pow(2).sum())
                    stats[3] += float(new.pow(2).sum())
                for part, i, v in zip(parts, ids, torch.split(flat, [ps[i].numel() for i in ids]), strict=True):
                    ps[i].assign_(part)
                    errs[i] = v.view(ps[i].shape)
        if lr > 0 and group["error_feedback"]:
            decay = (1 - lr * wd) if group["decay_in_injection"] else 1.0
            coeffs = [decay * (b1 / lr) * (1.0 - 1.0 / beta1) for b1 in b1s]
            torch._foreach_addcmul_(ms, denoms, errs, coeffs)

    def _batched_float_step(self, group: dict) -> None:
        """torch's AdamW update for a float32 group with ``torch._foreach_*`` ops."""
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        ps = [p for p in group["params"] if p.grad is not None]
        if not ps:
            return
        grads = [p.grad for p in ps]
        if any(g.is_sparse for g in grads):
            raise TypeError("sparse gradients are not supported")
        lib = _kernel.kernel()
        c_grads = lib is not None and all(_c_float(g) for g in grads)
        if c_grads:
            finite = bool(lib.all_finite(_i64([g.data_ptr() for g in grads]),
                                         _i64([g.numel() for g in grads]), len(grads)))
        else:
            finite = bool(torch.isfinite(torch.stack(torch._foreach_norm(grads))).all())
        if not finite:
            raise ValueError("gradient contains NaN or infinite values")
        states = [self.state[p] for p in ps]
        for p, state in zip(ps, states, strict=True):
            if "step" not in state:
                state["step"] = torch.tensor(0.0)
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        steps = [st["step"] for st in states]
        torch._foreach_add_(steps, 1.0)
        ts = _step_values(steps)
        ms = [st["exp_avg"] for st in states]
        vs = [st["exp_avg_sq"] for st in states]
        sqrt_fn = _kernel.sqrt_function() if c_grads else None
        if sqrt_fn is not None and _c_float_group(ps, ms, vs, grads):
            # the same ops in C, tensor by tensor in chunks (same bits: tested against the foreach ops)
            n = len(ps)
            lib.adamw_float(n, _i64([p.data_ptr() for p in ps]), _i64([g.data_ptr() for g in grads]),
                            _i64([m.data_ptr() for m in ms]), _i64([v.data_ptr() for v in vs]),
                            _i64([p.numel() for p in ps]),
                            (ctypes.c_float * n)(*[math.sqrt(1 - beta2**t) for t in ts]),
                            (ctypes.c_float * n)(*[-lr / (1 - beta1**t) for t in ts]), 1 - beta1, beta2,
                            1 - beta2, eps, 1 - lr * wd, bool(wd), sqrt_fn, _kernel.VML_MODE, _kernel.simd(),
                            self._float_tmp.data_ptr())
            return
        torch._foreach_lerp_(ms, grads, 1 - beta1)
        torch._foreach_mul_(vs, beta2)
        torch._foreach_addcmul_(vs, grads, grads, value=1 - beta2)
        denoms = torch._foreach_sqrt(vs)
        torch._foreach_div_(denoms, [math.sqrt(1 - beta2**t) for t in ts])
        torch._foreach_add_(denoms, eps)
        if wd:
            torch._foreach_mul_(ps, 1 - lr * wd)
        torch._foreach_addcdiv_(ps, ms, denoms, [-lr / (1 - beta1**t) for t in ts])

    # -- flat buffers (fast path) -------------------------------------------------------------
    def _flat_key(self, p: torch.Tensor, spec: QuantSpec) -> int:
        """Row length when ``p`` can live in a flat FP8 bucket (rows = scale blocks), else -1."""
        if not supports_rows(spec) or not isinstance(p, QuantizedWeight):
            return -1
        k = self._bucket_key(p, spec)
        codes = p.qtensor.codes
        if k < 0 or codes.dim() != 2 or codes.shape[1] != k or p.qtensor.scale.dim() != 2:
            return -1
        return k

    def _flat_bucket(self, group: dict, k: int, params: list[torch.Tensor]) -> _FlatBucket:
        key = (id(group), k)
        bucket = self._flat_buckets.get(key)
        if bucket is None or not bucket.valid(params, self.state):
            bucket = self._flat_buckets[key] = _FlatBucket(params, k, self.state)
        return bucket

    def _flat_update_kernel(self, lib, b: _FlatBucket, group: dict, t: float,
                            grads: list[torch.Tensor]) -> None:
        """:meth:`_flat_update` (moments included) by the one-pass C kernel of
        :mod:`icml26.papers.eco._kernel`: same arithmetic, same float32 roundings, same random
        words in the same chunks, hence the same bits (tested against the eager path)."""
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        spec: QuantSpec = group["weight_format"]
        f = spec.format
        b1, b2 = 1 - beta1**t, 1 - beta2**t
        decay = 1 - lr * wd
        coeff = 0.0
        if lr > 0 and group["error_feedback"]:
            coeff = (b1 / lr) * (1.0 - 1.0 / beta1)
            if group["decay_in_injection"]:
                coeff *= decay
        n_rows, k = b.codes.shape
        step_rows = max(1, _CHUNK // k)
        seg_end = b.seg_end
        seg_ptr = _i64([g.data_ptr() for g in grads])
        stochastic = group["rounding"] == "stochastic"
        sqrt_fn = _kernel.sqrt_function()
        gen = self.generator if self.generator is not None else torch.default_generator
        state = gen.get_state() if stochastic else None
        if (sqrt_fn is not None and (not stochastic or (k % 2 == 0 and _kernel.mt_ok()
                                                       and state.numel() == _kernel.STATE_BYTES))):
            # one call: moments, sqrt, random words and update per group of rows, in cache; with
            # k even the random words do not depend on how the rows are chunked
            g_rows = max(1, _GROUP // k)
            if _kernel.simd():  # 8 lanes, MKL's sqrt sequence in the kernel (self-tested)
                if b.buffers is None:
                    b.buffers = (torch.empty(g_rows * k + 8, dtype=torch.int32), torch.empty(2 * k + 16))
                rbuf, buf = b.buffers
                lib.eco_step8(n_rows, k, g_rows, b.codes.data_ptr(), b.scale.data_ptr(), b.m.data_ptr(),
                              b.v.data_ptr(), seg_end, seg_ptr, None if state is None else state.data_ptr(),
                              sqrt_fn, _kernel.VML_MODE, f.mbits, f.ebits, f.bias, f.max_normal, 1 - beta1,
                              beta2, 1 - beta2, math.sqrt(b2), eps, decay, -lr / b1, coeff, bool(coeff),
                              rbuf.data_ptr(), buf.data_ptr())
                if state is not None:
                    gen.set_state(state)
                b.mark_updated(None)
                return
            sq, rbuf, tmp = torch.empty(g_rows * k), torch.empty(g_rows * k, dtype=torch.int32), torch.empty(k)
            lib.eco_step(n_rows, k, g_rows, b.codes.data_ptr(), b.scale.data_ptr(), b.m.data_ptr(),
                         b.v.data_ptr(), seg_end, seg_ptr, None if state is None else state.data_ptr(),
                         sqrt_fn, _kernel.VML_MODE, f.mbits, f.ebits, f.bias, f.max_normal, 1 - beta1,
                         beta2, 1 - beta2, math.sqrt(b2), eps, decay, -lr / b1, coeff, bool(coeff),
                         sq.data_ptr(), rbuf.data_ptr(), tmp.data_ptr())
            if state is not None:
                gen.set_state(state)
            b.mark_updated(None)
            return
        sub = max(1, _SUBCHUNK // k)  # rows per kernel call: its m, v, g, sqrt rows stay in cache
        tmp, sq = torch.empty(k), torch.empty(sub * k)
        codes, scale, m, v = (b.codes.data_ptr(), b.scale.data_ptr(), b.m.data_ptr(), b.v.data_ptr())
        for r0 in range(0, n_rows, step_rows):
            r1 = min(n_rows, r0 + step_rows)
            rb = _kernel.random_bits((r1 - r0) * k, self.generator) if stochastic else None
            for s0 in range(r0, r1, sub):
                n = min(r1, s0 + sub) - s0
                lib.eco_moments(n, k, m + 4 * s0 * k, v + 4 * s0 * k, seg_end, seg_ptr, s0,
                                1 - beta1, beta2, 1 - beta2)
                out = sq[:n * k].view(n, k)
                torch.sqrt(b.v[s0:s0 + n], out=out)  # torch's own sqrt (MKL: not correctly rounded)
                lib.eco_update(n, k, codes + s0 * k, scale + s0, m + 4 * s0 * k, out.data_ptr(),
                               None if rb is None else rb.data_ptr() + 4 * (s0 - r0) * k, f.mbits,
                               f.ebits, f.bias, f.max_normal, math.sqrt(b2), eps,
                               decay, -lr / b1, coeff, bool(coeff),
                               tmp.data_ptr())
        b.mark_updated(None)

    def _flat_update(self, b: _FlatBucket, group: dict, t: float, stats: list[float]) -> None:
        """The ECO-AdamW update of one flat bucket (moments already updated in place)."""
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        spec: QuantSpec = group["weight_format"]
        b1, b2 = 1 - beta1**t, 1 - beta2**t
        decay = 1 - lr * wd
        coeff = 0.0
        if lr > 0 and group["error_feedback"]:
            coeff = (b1 / lr) * (1.0 - 1.0 / beta1)
            if group["decay_in_injection"]:
                coeff *= decay
        sqrt_b2 = math.sqrt(b2)
        n_rows = b.codes.shape[0]
        step_rows = max(1, _CHUNK // b.codes.shape[1])
        news = []
        for r0 in range(0, n_rows, step_rows):
            # row chunks of ~_CHUNK elements: every temporary stays in cache and is reused by
            # the allocator instead of being a fresh multi-MB allocation (page faults)
            sl = slice(r0, min(n_rows, r0 + step_rows))
            codes, scale, m = b.codes[sl], b.scale[sl], b.m[sl]
            denom = b.v[sl].sqrt()
            denom.div_(sqrt_b2)
            denom.add_(eps)
            old = decode_rows(codes, scale, spec) if self.track_diagnostics else None
            if spec.scale_kind == "e8m0":  # power-of-two scales: (c * decay) * s == (c * s) * decay
                theta = decode_rows(codes, scale, spec, factor=decay)
            else:
                theta = decode_rows(codes, scale, spec)
                if wd:
                    theta.mul_(decay)
            theta.addcdiv_(m, denom, value=-lr / b1)  # θ̃ = (1 - ηλ) θ̂ - η (m / b1) / D
            err = requantize_rows_(theta, codes, scale, spec, group["rounding"], self.generator)  # θ̃ - θ̂'
            new = decode_rows(codes, scale, spec) if old is not None or b.has_cache else None
            if old is not None:
                stats[0] += float((new == old).sum())
                stats[1] += new.numel()
                stats[2] += float(err.pow(2).sum())
                stats[3] += float(new.pow(2).sum())
            if coeff:
                m.addcmul_(denom, err, value=coeff)
            if b.has_cache:
                news.append(new)
        b.mark_updated(torch.cat(news) if news else None)

    @staticmethod
    def _bucket_values(params: list[torch.Tensor], spec: QuantSpec, k: int) -> torch.Tensor:
        """Dequantized values of a bucket of quantized parameters, concatenated (one decode)."""
        from icml26.core.quant import QTensor

        qs = [p.qtensor for p in params]
        codes = qs[0].codes
        if codes.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            cat = torch.cat([q.codes.view(torch.uint8) for q in qs]).view(codes.dtype)
        else:
            cat = torch.cat([q.codes for q in qs])
        scale = torch.cat([q.scale for q in qs])
        n = sum(p.numel() for p in params)
        return dequantize(QTensor(cat, scale, spec, torch.Size([n // k, k]))).reshape(-1)

    @staticmethod
    def _bucket_key(p: torch.Tensor, spec: QuantSpec) -> int:
        """Block length when ``p``'s blocks are contiguous rows of its flattened values (per-row
        or per-group scales along the last axis, byte-aligned codes), else -1."""
        if p.dim() < 2 or spec.axis not in (-1, p.dim() - 1):
            return -1
        if spec.granularity == "channel":
            k = p.shape[-1]
        elif spec.granularity in ("group", "mx"):
            k = spec.block_size
            if p.shape[-1] % k:
                return -1
        else:
            return -1
        if spec.format.bits == 4 and p.numel() % 2:
            return -1
        return k

    @staticmethod
    def _split_qtensor(q, params: list[torch.Tensor], spec: QuantSpec) -> list:
        from icml26.core.quant import QTensor

        out = []
        row = 0
        byte = 0
        half = spec.format.bits == 4
        for p in params:
            n_blocks = q.scale.shape[0] * p.numel() // q.numel
            n_bytes = p.numel() // 2 if half else None
            codes = q.codes[byte:byte + n_bytes] if half else q.codes[row:row + n_blocks]
            out.append(QTensor(codes, q.scale[row:row + n_blocks], spec, p.shape))
            row += n_blocks
            if half:
                byte += n_bytes
        return out


class _FlatBucket:
    """Quantized parameters with equal row length stored in one flat buffer each for codes,
    scales, ``exp_avg`` and ``exp_avg_sq``; every parameter's codes/scales and its optimizer
    state are views into them, so model, checkpoints and ``state_dict`` see ordinary tensors.

    Made on the first step and re-made whenever a view was replaced (``load_state_dict`` of the
    optimizer, a weight re-assigned with another layout): :meth:`valid` compares data pointers.
    """

    def __init__(self, params: list[torch.Tensor], k: int, state) -> None:
        self.params = list(params)
        self.ids = tuple(id(p) for p in params)
        self.rows = [p.numel() // k for p in params]
        n = sum(self.rows)
        q0 = params[0].qtensor
        dev = q0.codes.device
        self.codes = torch.empty(n, k, dtype=q0.codes.dtype, device=dev)
        self.scale = torch.empty(n, 1, dtype=q0.scale.dtype, device=dev)
        self.m = torch.empty(n, k, device=dev)
        self.v = torch.empty(n, k, device=dev)
        r0 = 0
        for p, r in zip(self.params, self.rows, strict=True):
            q, st = p.qtensor, state[p]
            sl = slice(r0, r0 + r)
            self.codes[sl].view(torch.uint8).copy_(q.codes.reshape(r, k).view(torch.uint8))
            self.scale[sl].copy_(q.scale.reshape(r, 1))
            self.m[sl].copy_(st["exp_avg"].reshape(r, k))
            self.v[sl].copy_(st["exp_avg_sq"].reshape(r, k))
            object.__setattr__(p, "_q", QTensor(self.codes[sl], self.scale[sl], q.spec, q.shape))
            st["exp_avg"] = self.m[sl].view(p.shape)
            st["exp_avg_sq"] = self.v[sl].view(p.shape)
            r0 += r
        self.ptrs = self._ptrs(state)
        self.has_cache = any(p._cache is not None for p in self.params)
        self.seg_end = (ctypes.c_int64 * len(self.rows))(*itertools.accumulate(self.rows))  # kernel's row table
        self.buffers: tuple[torch.Tensor, torch.Tensor] | None = None  # the 8-wide kernel's scratch

    def _ptrs(self, state) -> list[tuple[int, ...]]:
        return [(p.qtensor.codes.data_ptr(), p.qtensor.scale.data_ptr(),
                 state[p]["exp_avg"].data_ptr(), state[p]["exp_avg_sq"].data_ptr()) for p in self.params]

    def valid(self, params: list[torch.Tensor], state) -> bool:
        return tuple(id(p) for p in params) == self.ids and self._ptrs(state) == self.ptrs

    def mark_updated(self, new: torch.Tensor | None) -> None:
        """The codes changed in place: bump each weight's version, refresh float caches."""
        r0 = 0
        for p, r in zip(self.params, self.rows, strict=True):
            p._qversion += 1
            if p._cache is not None:
                p._cache.copy_(new[r0:r0 + r].view(p.shape))
            r0 += r

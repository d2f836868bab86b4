"""The master-weight baseline and helpers to pick which parameters are quantized.

``MasterWeightOptimizer(base, quantized_params, weight_format)`` is the usual low-precision
recipe ECO removes: a float32 (or bfloat16) master copy θ of each quantized weight is updated
by any ``torch.optim`` optimizer, and the model computes with ``q(θ)`` (codes stored, as in
FP8 training with FP32 master weights, paper Fig. 1 "FP8 w/ MW").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from icml26.core.quant import QuantSpec, dequantize, quantize

from .optim import DEFAULT_WEIGHT_FORMAT


def linear_weight_names(model: nn.Module, exclude: Iterable[str] = ("head",)) -> list[str]:
    """Names of the ``weight`` of every ``nn.Linear`` whose module name is not in ``exclude``.

    Default: every Linear weight in the transformer blocks; the LM head, embeddings, norms and
    biases stay float32 (as in the third-party ports and FP8 training recipes; laptop choice).
    """
    excl = set(exclude)
    return [f"{name}.weight" for name, mod in model.named_modules()
            if isinstance(mod, nn.Linear) and name not in excl]


def eco_param_groups(model: nn.Module, weight_format: QuantSpec | None = DEFAULT_WEIGHT_FORMAT,
                     exclude: Iterable[str] = ("head",)) -> list[dict]:
    """Two param groups: quantized Linear weights (``weight_format``) and the rest (float32)."""
    names = set(linear_weight_names(model, exclude))
    q = [p for n, p in model.named_parameters() if n in names]
    rest = [p for n, p in model.named_parameters() if n not in names]
    groups = [{"params": q, "weight_format": weight_format}]
    if rest:
        groups.append({"params": rest, "weight_format": None})
    return groups


class MasterWeightOptimizer(torch.optim.Optimizer):
    """Baseline: quantized weights for compute + a high-precision master copy for updates.

    Parameters
    ----------
    base : torch.optim.Optimizer
        The optimizer of the master weights (e.g. ``torch.optim.AdamW`` over the model's params).
    quantized_params : iterable of Tensors
        Parameters (of ``base``) stored quantized; the others are ordinary float32 parameters.
    weight_format : QuantSpec
    master_dtype : torch.dtype
        float32 (default, "FP8 w/ FP32 master") or bfloat16.
    rounding : {"nearest", "stochastic"}
        Rounding of ``q(θ)`` (default nearest, the usual cast).
    release_weights : bool
        Free the parameters' float32 storage between steps (use :meth:`attach`).
    generator : torch.Generator, optional
    """

    def __init__(self, base: torch.optim.Optimizer, quantized_params: Iterable[torch.Tensor],
                 weight_format: QuantSpec = DEFAULT_WEIGHT_FORMAT, *,
                 master_dtype: torch.dtype = torch.float32, rounding: str = "nearest",
                 release_weights: bool = False, generator: torch.Generator | None = None) -> None:
        if not isinstance(base, torch.optim.Optimizer):
            raise TypeError(f"base must be a torch.optim.Optimizer, got {type(base).__name__}")
        if not isinstance(weight_format, QuantSpec):
            raise TypeError("weight_format must be a QuantSpec")
        if master_dtype not in (torch.float32, torch.bfloat16, torch.float64):
            raise ValueError(f"master_dtype must be float32, bfloat16 or float64, got {master_dtype}")
        if rounding not in ("nearest", "stochastic"):
            raise ValueError(f"rounding must be 'nearest' or 'stochastic', got {rounding!r}")
        self.base = base
        # share the base optimizer's groups (a scheduler or a training loop sets lr on them)
        self.defaults = base.defaults
        self.param_groups = base.param_groups
        self._optimizer_step_pre_hooks = {}
        self._optimizer_step_post_hooks = {}
        self._optimizer_state_dict_pre_hooks = {}
        self._optimizer_state_dict_post_hooks = {}
        self._optimizer_load_state_dict_pre_hooks = {}
        self._optimizer_load_state_dict_post_hooks = {}
        self._zero_grad_profile_name = "Optimizer.zero_grad#MasterWeightOptimizer.zero_grad"
        self.state = {}
        self.weight_format, self.rounding, self.generator = weight_format, rounding, generator
        self.release_weights = bool(release_weights)
        base_ids = {id(p) for g in base.param_groups for p in g["params"]}
        self.qparams = list(quantized_params)
        self._released = False
        with torch.no_grad():
            for p in self.qparams:
                if id(p) not in base_ids:
                    raise ValueError("every quantized parameter must belong to the base optimizer")
                if p.dtype != torch.float32 or not p.is_contiguous() or p.storage_offset():
                    raise TypeError("quantized parameters must be contiguous float32 tensors")
                master = p.detach().to(master_dtype).clone()
                q = quantize(master.float(), weight_format, rounding="nearest")
                self.state[p] = {"master": master, "qweight": q}
                p.copy_(dequantize(q))
        if self.release_weights:
            self.release()

    @torch.no_grad()
    def release(self) -> None:
        for p in self.qparams:
            p.untyped_storage().resize_(0)
        self._released = True

    @torch.no_grad()
    def materialize(self) -> None:
        if not self._released:
            return
        for p in self.qparams:
            p.untyped_storage().resize_(p.numel() * p.element_size())
            p.copy_(dequantize(self.state[p]["qweight"]))
        self._released = False

    def attach(self, model: nn.Module):
        """Forward pre-hook that materializes released weights (see ``ECOAdamW.attach``)."""
        return model.register_forward_pre_hook(lambda module, args: self.materialize())

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.base.zero_grad(set_to_none=set_to_none)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None):
        self.materialize()
        for p in self.qparams:
            if p.grad is not None and not bool(torch.isfinite(p.grad).all()):
                raise ValueError("gradient contains NaN or infinite values")
            p.copy_(self.state[p]["master"])  # the base optimizer updates the master copy
        loss = self.base.step(closure)
        for p in self.qparams:
            st = self.state[p]
            st["master"].copy_(p)
            st["qweight"] = quantize(st["master"].float(), self.weight_format, rounding=self.rounding,
                                     generator=self.generator)
            p.copy_(dequantize(st["qweight"]))
        if self.release_weights:
            self.release()
        return loss

    def state_dict(self):
        return {"base": self.base.state_dict(), "master": {i: self.state[p]["master"]
                                                           for i, p in enumerate(self.qparams)}}

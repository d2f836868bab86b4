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

from icml26.core.quant import QuantizedWeight, QuantSpec, quantize, quantize_parameter_

from .optim import DEFAULT_WEIGHT_FORMAT


def linear_weight_names(model: nn.Module, exclude: Iterable[str] = ("head",)) -> list[str]:
    """Names of the ``weight`` of every ``nn.Linear`` whose module name is not in ``exclude``.

    Default: every Linear weight in the transformer blocks; the LM head, embeddings, norms and
    biases stay float32 (as in the third-party ports and FP8 training recipes; laptop choice).
    """
    excl = set(exclude)
    return [f"{name}.weight" if name else "weight" for name, mod in model.named_modules()
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

    The model's quantized parameters become :class:`~icml26.core.quant.QuantizedWeight` (codes
    + scales, as for ECO); the base optimizer updates float master copies that take their place
    in its param groups; after each step the model's weights are re-quantized from the masters.

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
        Default ``True``: the model keeps only codes + scales (``False`` adds a float32 copy).
    generator : torch.Generator, optional
    """

    def __init__(self, base: torch.optim.Optimizer, quantized_params: Iterable[torch.Tensor],
                 weight_format: QuantSpec = DEFAULT_WEIGHT_FORMAT, *,
                 master_dtype: torch.dtype = torch.float32, rounding: str = "nearest",
                 release_weights: bool = True, generator: torch.Generator | None = None) -> None:
        if not isinstance(base, torch.optim.Optimizer):
            raise TypeError(f"base must be a torch.optim.Optimizer, got {type(base).__name__}")
        if not isinstance(weight_format, QuantSpec):
            raise TypeError("weight_format must be a QuantSpec")
        if master_dtype not in (torch.float32, torch.bfloat16, torch.float64):
            raise ValueError(f"master_dtype must be float32, bfloat16 or float64, got {master_dtype}")
        if rounding not in ("nearest", "stochastic"):
            raise ValueError(f"rounding must be 'nearest' or 'stochastic', got {rounding!r}")
        if base.state:
            raise ValueError("the base optimizer must be fresh (no state yet)")
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
        self.qparams = list(quantized_params)
        where = {id(p): (gi, pi) for gi, g in enumerate(base.param_groups) for pi, p in enumerate(g["params"])}
        with torch.no_grad():
            for p in self.qparams:
                if id(p) not in where:
                    raise ValueError("every quantized parameter must belong to the base optimizer")
                if p.dtype != torch.float32 or isinstance(p, QuantizedWeight):
                    raise TypeError("quantized parameters must be float32 (not yet quantized) tensors")
                master = p.detach().to(master_dtype).clone()
                gi, pi = where[id(p)]
                base.param_groups[gi]["params"][pi] = master  # the base optimizer steps the master
                quantize_parameter_(p, weight_format, keep_float=not self.release_weights)
                self.state[p] = {"master": master}

    def master_of(self, p: torch.Tensor) -> torch.Tensor:
        """The master copy of a quantized parameter."""
        return self.state[p]["master"]

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.base.zero_grad(set_to_none=set_to_none)
        for p in self.qparams:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad.zero_()

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for p in self.qparams:
            master = self.state[p]["master"]
            if p.grad is None:
                master.grad = None
                continue
            if not bool(torch.isfinite(p.grad).all()):
                raise ValueError("gradient contains NaN or infinite values")
            master.grad = p.grad.to(master.dtype)
        self.base.step()
        for p in self.qparams:
            master = self.state[p]["master"]
            p.assign_(quantize(master.float(), self.weight_format, rounding=self.rounding,
                               generator=self.generator))
            master.grad = None
        return loss

    def state_dict(self) -> dict:
        """The base optimizer's state (by position, masters included) and the master values."""
        sd = {"base": self.base.state_dict(), "master": [self.state[p]["master"] for p in self.qparams]}
        if self.generator is not None:
            sd["generator_state"] = self.generator.get_state()
        return sd

    @torch.no_grad()
    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the base optimizer and the masters (restore the model's codes with the model's
        own ``load_state_dict``; they are saved with it)."""
        masters = state_dict["master"]
        if len(masters) != len(self.qparams):
            raise ValueError(f"state_dict has {len(masters)} master weights, this optimizer "
                             f"{len(self.qparams)}")
        for p, m in zip(self.qparams, masters, strict=True):
            if m.shape != p.shape:
                raise ValueError(f"master of shape {tuple(m.shape)} for a parameter of {tuple(p.shape)}")
            self.state[p]["master"].copy_(m)
        self.base.load_state_dict(state_dict["base"])
        if state_dict.get("generator_state") is not None and self.generator is not None:
            self.generator.set_state(state_dict["generator_state"])

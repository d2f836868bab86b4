"""ECO with ``transformers.Trainer`` (and TRL trainers, and PEFT/LoRA models).

:class:`~.optim.ECOAdamW` is a ``torch.optim.Optimizer``, so ``Trainer(optimizers=(opt, None))``
drives it as is; the model's quantized weights become
:class:`~icml26.core.quant.QuantizedWeight` parameters (codes + scales only). What a Trainer
cannot do on its own is *checkpoint* such a parameter: ``save_pretrained`` (safetensors) needs
plain tensors with storage. :class:`ECOCheckpointMixin` fixes that in the two places the Trainer
touches weights on disk:

* saving writes the dequantized values into the usual files (``model.safetensors`` or, for PEFT,
  ``adapter_model.safetensors``: readable by ``from_pretrained`` / ``PeftModel.from_pretrained``
  for inference) and the exact codes and scales into ``eco_codes.pt``;
* resuming loads the usual files, then restores the codes and scales exactly, so a resumed run
  continues bit for bit (the optimizer's momenta and its rounding generator are in
  ``optimizer.pt``, the Trainer's own RNG state in ``rng_state.pth``).

Usage (not run here)::

    model = AutoModelForCausalLM.from_pretrained("path/or/name", dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=16, target_modules="all-linear"))   # optional
    opt = eco_adamw(model, lr=1e-4)                        # trainable Linear weights in FP8 E4M3
    ECOTrainer(model=model, args=TrainingArguments(...), train_dataset=ds, optimizers=(opt, None)).train()

With a TRL trainer: ``with_eco_checkpoints(SFTTrainer)(model=..., optimizers=(opt, None), ...)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from icml26.core.lm.hf import HF_INSTALL_HINT
from icml26.core.quant import QTensor, QuantizedWeight, QuantSpec
from icml26.core.quant.param import spec_from_dict, spec_to_dict

from .baselines import linear_weight_names
from .optim import DEFAULT_WEIGHT_FORMAT, ECOAdamW

try:
    import transformers
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"icml26.papers.eco.hf needs transformers: {HF_INSTALL_HINT}") from exc

CODES_FILE = "eco_codes.pt"


def trainable_param_groups(model: nn.Module, weight_format: QuantSpec | None = DEFAULT_WEIGHT_FORMAT,
                           exclude: Iterable[str] = ("lm_head",)) -> list[dict]:
    """ECO param groups over the *trainable* parameters of a ``transformers`` / PEFT model.

    The weight of every ``nn.Linear`` that requires grad is quantized (``weight_format``),
    except modules whose name is in ``exclude`` or ends with ``"." + name`` (default: the LM
    head, as :func:`~.baselines.eco_param_groups` keeps ``head`` in float32); every other
    trainable parameter (embeddings, norms, biases) is a float32 group. Frozen parameters (a
    LoRA model's base weights) are left out. With PEFT/LoRA the quantized weights are the
    adapters' ``lora_A`` / ``lora_B``.
    """
    excl = tuple(exclude)

    def excluded(weight_name: str) -> bool:
        mod = weight_name[: -len(".weight")]
        return any(mod == e or mod.endswith("." + e) for e in excl)

    names = {n for n in linear_weight_names(model, exclude=()) if not excluded(n)}
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        raise ValueError("the model has no trainable parameter")
    q = [p for n, p in trainable if n in names]
    rest = [p for n, p in trainable if n not in names]
    groups = []
    if q:
        groups.append({"params": q, "weight_format": weight_format})
    if rest:
        groups.append({"params": rest, "weight_format": None})
    return groups


def eco_adamw(model: nn.Module, lr: float = 1e-3, *, weight_format: QuantSpec | None = DEFAULT_WEIGHT_FORMAT,
              exclude: Iterable[str] = ("lm_head",), seed: int = 0, **kwargs: Any) -> ECOAdamW:
    """:class:`~.optim.ECOAdamW` over :func:`trainable_param_groups`, with a seeded rounding
    generator (its state is saved in the optimizer's ``state_dict``, so a resumed run draws the
    same stochastic roundings). ``**kwargs`` go to ``ECOAdamW`` (betas, weight_decay, ...)."""
    gen = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    return ECOAdamW(trainable_param_groups(model, weight_format, exclude), lr=lr, generator=gen, **kwargs)


class ECOCheckpointMixin:
    """Mix into a ``transformers.Trainer`` subclass (first base) to checkpoint ECO's quantized
    weights: dequantized values in the standard files, exact codes in ``eco_codes.pt``."""

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        output_dir = output_dir if output_dir is not None else self.args.output_dir
        model = self.accelerator.unwrap_model(self.model)
        if state_dict is None:
            state_dict = model.state_dict()
        state_dict = {k: (v.dequantize() if isinstance(v, QuantizedWeight) else v) for k, v in state_dict.items()}
        super()._save(output_dir, state_dict=state_dict)
        if self.args.should_save:
            codes = {n: {"codes": p.qtensor.codes, "scale": p.qtensor.scale, "spec": spec_to_dict(p.spec),
                         "shape": list(p.shape)}
                     for n, p in model.named_parameters() if isinstance(p, QuantizedWeight)}
            if codes:
                torch.save(codes, os.path.join(output_dir, CODES_FILE))

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: nn.Module | None = None) -> None:
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        path = os.path.join(resume_from_checkpoint, CODES_FILE)
        if not os.path.isfile(path):
            return
        target = self.accelerator.unwrap_model(model if model is not None else self.model)
        load_codes_(target, torch.load(path, map_location="cpu", weights_only=True))


def load_codes_(model: nn.Module, saved: dict[str, dict]) -> None:
    """Restore quantized weights exactly from an ``eco_codes.pt`` mapping (name -> codes, scale,
    spec, shape); every named parameter must already be a ``QuantizedWeight`` of that spec."""
    params = dict(model.named_parameters())
    for name, d in saved.items():
        p = params.get(name)
        if not isinstance(p, QuantizedWeight):
            raise ValueError(f"{name} in the checkpoint is not a quantized parameter of this model "
                             "(build the ECO optimizer before resuming)")
        spec = spec_from_dict(d["spec"])
        if spec != p.spec:
            raise ValueError(f"{name}: saved with {spec}, the optimizer quantizes with {p.spec}")
        p.assign_(QTensor(d["codes"].to(p.device), d["scale"].to(p.device), spec, torch.Size(d["shape"])))


def with_eco_checkpoints(trainer_cls: type) -> type:
    """``trainer_cls`` (``transformers.Trainer`` or a TRL trainer) with :class:`ECOCheckpointMixin`."""
    if not (isinstance(trainer_cls, type) and issubclass(trainer_cls, transformers.Trainer)):
        raise TypeError("with_eco_checkpoints expects a transformers.Trainer subclass")
    return type(f"ECO{trainer_cls.__name__}", (ECOCheckpointMixin, trainer_cls), {})


class ECOTrainer(ECOCheckpointMixin, transformers.Trainer):
    """``transformers.Trainer`` that checkpoints and resumes ECO-quantized weights exactly.
    Pass the optimizer with ``optimizers=(eco_adamw(model, ...), None)``."""


__all__ = ["CODES_FILE", "ECOCheckpointMixin", "ECOTrainer", "eco_adamw", "load_codes_",
           "trainable_param_groups", "with_eco_checkpoints"]

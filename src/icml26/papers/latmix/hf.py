"""LATMiX on Hugging Face causal LMs (Llama / Qwen2 / Mistral style): ``quantize_`` and a round trip.

The method is :mod:`.api`'s, unchanged: the same :class:`~.api.LatmixConfig`, transforms
(:class:`~.transforms.InvertibleAffine`), MX fake-quantizers, distillation objective, calibration
loop and folding (:class:`~.api.MXLinear`). What this module adds is the placement on a
``transformers`` decoder: in every layer with ``self_attn.{q,k,v,o}_proj`` and
``mlp.{gate,up,down}_proj``,

* ``q_proj``, ``k_proj``, ``v_proj`` read the output of ``input_layernorm``: site kind ``"qkv"``
  (T1, shared by the three and, with ``share_t1``, by every layer);
* ``gate_proj``, ``up_proj`` read the output of ``post_attention_layernorm``: kind ``"up"`` (T1);
* ``o_proj`` (kind ``"o"``) and ``down_proj`` (kind ``"down"``) get their own per-layer T2.

Each linear becomes an :class:`~.api.MXLinear` computing ``Q_a(x A + b) Q_w(W A^-T)^T + c'`` with
``x A + b`` online, as in :func:`~.api.quantize_` (a shared T1 is applied once per reading linear:
three times for q/k/v, twice for gate/up; :attr:`~.api.QuantizeReport.online_flops_per_token`
counts every application).

Usage (not run here; on a GPU, load in float32 for calibration)::

    model = AutoModelForCausalLM.from_pretrained("path/or/name", dtype=torch.float32)
    report = quantize_(model, LatmixConfig(weight_fmt="mxfp4", act_fmt="mxfp4"), calib=token_windows)
    save_quantized(model, "out/"); model2 = load_quantized("out/")

Saving: ``save_pretrained`` alone cannot give a model that ``from_pretrained`` rebuilds, because
the quantized layers are not ``nn.Linear`` any more (they carry ``A``, ``b``, ``Q_w(W')``, ``c'``
and the MX formats, and apply the transform online), and no ``transformers`` architecture knows
them. :func:`save_quantized` writes ``save_pretrained``'s files plus ``latmix.json`` (the config
and the quantized sites); :func:`load_quantized` rebuilds the architecture from the config, puts
:class:`~.api.MXLinear` layers at the recorded sites and loads every tensor. The checkpoint
stores fake-quantized float weights (no packed MX storage), next to the original weights.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from icml26.core.lm.hf import HF_INSTALL_HINT

from .api import (
    LatmixConfig,
    MXLinear,
    QuantizeReport,
    _group_key,
    _new_transform,
    _set_module,
    _set_smoothquant_scales,
    _train,
)
from .transforms import InvertibleAffine

try:
    import transformers
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"icml26.papers.latmix.hf needs transformers: {HF_INSTALL_HINT}") from exc

ATTN_SITES = (("q_proj", "qkv"), ("k_proj", "qkv"), ("v_proj", "qkv"), ("o_proj", "o"))
MLP_SITES = (("gate_proj", "up"), ("up_proj", "up"), ("down_proj", "down"))
LATMIX_FILE = "latmix.json"


def decoder_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """``(path, layer)`` of every decoder layer: a module with ``self_attn`` and ``mlp`` children."""
    out = [(name, mod) for name, mod in model.named_modules()
           if isinstance(getattr(mod, "self_attn", None), nn.Module)
           and isinstance(getattr(mod, "mlp", None), nn.Module)]
    if not out:
        raise TypeError("no decoder layer with .self_attn and .mlp found: quantize_ expects a "
                        "Llama/Qwen2/Mistral-style transformers causal LM")
    return out


def find_sites(model: nn.Module) -> dict[str, tuple[int, str, nn.Linear]]:
    """Targetable linears of a Llama/Qwen2/Mistral-style model.

    Returns ``{module path: (layer index, site kind, linear)}`` with kinds ``"qkv"``
    (``q_proj``, ``k_proj``, ``v_proj``), ``"o"`` (``o_proj``), ``"up"`` (``gate_proj``,
    ``up_proj``) and ``"down"`` (``down_proj``), in layer order.
    """
    out: dict[str, tuple[int, str, nn.Linear]] = {}
    for i, (path, layer) in enumerate(decoder_layers(model)):
        for block, names in (("self_attn", ATTN_SITES), ("mlp", MLP_SITES)):
            parent = getattr(layer, block)
            for attr, kind in names:
                lin = getattr(parent, attr, None)
                if not isinstance(lin, nn.Linear):
                    raise TypeError(f"{path}.{block}.{attr} is {type(lin).__name__}, expected nn.Linear "
                                    "(already quantized, or not a Llama/Qwen2/Mistral-style layer)")
                out[f"{path}.{block}.{attr}"] = (i, kind, lin)
    return out


class _Logits(nn.Module):
    """``ids -> logits`` view of a ``transformers`` causal LM (what :func:`.api._train` calls)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=idx, use_cache=False).logits


def _build_transforms(sites: dict[str, tuple[int, str, nn.Linear]], cfg: LatmixConfig) -> nn.ModuleDict:
    groups: dict[str, InvertibleAffine] = {}
    for k, (layer, kind, lin) in enumerate(sites.values()):
        if kind not in cfg.targets:
            continue
        key = _group_key(layer, kind, cfg.share_t1)
        if key not in groups:
            t = _new_transform(lin.in_features, cfg, seed=cfg.seed * 1000 + k)
            if t is not None:
                groups[key] = t
    return nn.ModuleDict({k.replace(".", "_"): v for k, v in groups.items()})


def _check_calib(calib: Any, why: str) -> None:
    if calib is None or not isinstance(calib, torch.Tensor) or calib.dim() != 2 or calib.numel() == 0:
        raise ValueError(f"{why} needs calib: a non-empty (N, T) LongTensor of token ids")


def quantize_(model: nn.Module, config: LatmixConfig, calib: torch.Tensor | None = None,
              *, on_step: Callable[[int, float], None] | None = None) -> QuantizeReport:
    """Quantize a Llama/Qwen2/Mistral-style ``transformers`` causal LM in place (LATMiX).

    Same contract as :func:`icml26.papers.latmix.quantize_` (arXiv 2602.17681): transforms are
    built per :class:`~.api.LatmixConfig`, learned by distillation against the float model when
    the kind is learned, then folded; the targeted ``nn.Linear`` layers (see :func:`find_sites`)
    become folded :class:`~.api.MXLinear` layers. The model's own parameters are not trained.

    Parameters
    ----------
    model : transformers causal LM with float32 weights on the targeted layers
    config : LatmixConfig
    calib : LongTensor (N, T), optional
        Calibration token windows (no padding); required for learned kinds with ``steps > 0`` and
        for ``"smoothquant"``. The teacher's log-probabilities over all of them are held in memory
        (N x T x vocab floats).

    Returns
    -------
    QuantizeReport
    """
    if not isinstance(config, LatmixConfig):
        raise TypeError(f"config must be a LatmixConfig, got {type(config).__name__}")
    sites = find_sites(model)
    for path, (_, kind, lin) in sites.items():
        if kind in config.targets and lin.weight.dtype != torch.float32:
            raise TypeError(f"{path} has {lin.weight.dtype} weights; load the model in float32 for "
                            "calibration (from_pretrained(..., dtype=torch.float32))")
    for p in model.parameters():
        if not bool(torch.isfinite(p).all()):
            raise ValueError("model parameters contain NaN or infinite values")
    train = config.learned and config.steps > 0 and (config.lr > 0 or config.lr_bias > 0)
    if train:
        _check_calib(calib, "a learned transform")
    logits_fn = _Logits(model)
    transforms = _build_transforms(sites, config)
    device = next(model.parameters()).device
    transforms.to(device)
    if config.transform == "smoothquant":
        _check_calib(calib, "smoothquant")
        _set_smoothquant_scales(logits_fn, sites, transforms, calib.to(device), config)
    for p in model.parameters():
        p.requires_grad_(False)
    teacher = None
    if train:
        calib = calib.to(device)
        was = model.training
        model.eval()
        with torch.no_grad():
            teacher = torch.cat([F.log_softmax(logits_fn(calib[i:i + 16]).float(), -1)
                                 for i in range(0, len(calib), 16)])
        model.train(was)
    train_a = config.act_fmt if config.train_act_fmt == "" else config.train_act_fmt
    train_w = config.weight_fmt if config.train_weight_fmt == "" else config.train_weight_fmt
    wrapped: list[MXLinear] = []
    flops = 0
    for path, (layer, kind, lin) in sites.items():
        if kind not in config.targets:
            continue
        key = _group_key(layer, kind, config.share_t1).replace(".", "_")
        t = transforms[key] if key in transforms else None
        m = MXLinear(lin, t, train_a if train else config.act_fmt, train_w if train else config.weight_fmt)
        _set_module(model, path, m.to(device))
        wrapped.append(m)
        if t is not None:
            flops += 2 * lin.in_features ** 2
    report = QuantizeReport(transforms=transforms, online_flops_per_token=flops)
    if train:
        report.losses = _train(logits_fn, transforms, calib, teacher, config, on_step)
        report.steps_run = config.steps
    with torch.no_grad():
        for key, t in transforms.items():
            report.logabsdet[key] = float(t.logabsdet())
            report.condition[key] = t.condition_number()
    for m in wrapped:
        m.set_formats(config.act_fmt, config.weight_fmt)
        m.fold()
    model.latmix_config = config
    return report


# ----------------------------------------------------------------------------------------------
# save / load
# ----------------------------------------------------------------------------------------------


def quantized_sites(model: nn.Module) -> dict[str, dict[str, Any]]:
    """``{path: {"in", "out", "bias", "act_fmt", "weight_fmt", "transform"}}`` of the folded
    :class:`~.api.MXLinear` layers of ``model``."""
    out = {}
    for path, mod in model.named_modules():
        if isinstance(mod, MXLinear):
            if not mod.folded:
                raise ValueError(f"{path} is not folded: quantize_ folds every layer before saving")
            out[path] = {"in": mod.in_features, "out": mod.out_features, "act_fmt": mod.act_fmt,
                         "weight_fmt": mod.weight_fmt, "transform": mod.a_buf is not None}
    return out


def save_quantized(model: nn.Module, directory: str | os.PathLike[str], **save_kwargs: Any) -> None:
    """``model.save_pretrained(directory)`` plus ``latmix.json`` (config and quantized sites)."""
    sites = quantized_sites(model)
    if not sites:
        raise ValueError("the model has no LATMiX-quantized layer (run quantize_ first)")
    model.save_pretrained(directory, **save_kwargs)
    cfg = getattr(model, "latmix_config", None)
    meta = {"format": "icml26.latmix/1", "sites": sites,
            "config": dataclasses.asdict(cfg) if cfg is not None else None}
    with open(os.path.join(directory, LATMIX_FILE), "w") as f:
        json.dump(meta, f, indent=1)


def _skeleton(info: dict[str, Any]) -> MXLinear:
    """A folded MXLinear of the right shapes and formats (its tensors are loaded afterwards)."""
    t = InvertibleAffine(info["in"], "fixed", torch.eye(info["in"]), bias=False) if info["transform"] else None
    m = MXLinear(nn.Linear(info["in"], info["out"], bias=True), t, info["act_fmt"], info["weight_fmt"])
    m.fold()
    return m


def _state_dict_files(directory: str) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    sd: dict[str, torch.Tensor] = {}
    for name in files:
        sd.update(load_file(os.path.join(directory, name)))
    return sd


def load_quantized(directory: str | os.PathLike[str], **config_kwargs: Any) -> nn.Module:
    """Rebuild a model saved by :func:`save_quantized` (no network: the config is read locally).

    The architecture comes from ``config.json`` (``AutoModelForCausalLM.from_config``), the
    :class:`~.api.MXLinear` layers from ``latmix.json``, and every tensor from the safetensors
    file(s); a tied output embedding is re-tied.
    """
    directory = os.fspath(directory)
    with open(os.path.join(directory, LATMIX_FILE)) as f:
        meta = json.load(f)
    config = transformers.AutoConfig.from_pretrained(directory, **config_kwargs)
    model = transformers.AutoModelForCausalLM.from_config(config)
    for path, info in meta["sites"].items():
        _set_module(model, path, _skeleton(info))
    sd = _state_dict_files(directory)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    tied = {"lm_head.weight"} if getattr(config.get_text_config(), "tie_word_embeddings", False) else set()
    if unexpected or set(missing) - tied:
        raise ValueError(f"checkpoint does not match the quantized architecture: missing "
                         f"{sorted(set(missing) - tied)[:5]}, unexpected {sorted(unexpected)[:5]}")
    if tied:
        model.tie_weights()
    if meta.get("config"):
        cfg = dict(meta["config"])
        cfg["targets"] = tuple(cfg["targets"])
        model.latmix_config = LatmixConfig(**cfg)
    return model.eval()


__all__ = ["decoder_layers", "find_sites", "load_quantized", "quantize_", "quantized_sites", "save_quantized"]

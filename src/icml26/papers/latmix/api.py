"""``quantize_(model, LatmixConfig(...), calib=...)``: transforms, MX fake-quant, distillation, folding.

Placement (LATMiX: a *global* transform T1 and *per-block* transforms T2, folded into weights;
the exact sites are not public, ours follow the brief sec. 2.5). In a pre-norm transformer block:

* T1, one transform shared by every layer, on the inputs of the residual-stream readers: the
  fused q/k/v projection (after the first norm) and the MLP up projection (after the second norm).
* T2, one transform per block and site, on the inputs of the attention output projection and of
  the MLP down projection.

A site's linear ``y = x W^T + c`` becomes ``y = Q_a(x A + b) Q_w(W A^-T)^T + (c - W A^-T b)`` (see
:meth:`InvertibleAffine.fold_weight`); ``Q_a`` / ``Q_w`` are MX fake-quantizers along the
reduction axis (32-element blocks, E8M0 scales). After calibration the weights are folded and
quantized once; ``x A + b`` runs online (its cost is reported, not hidden). With both quantizers
off the folded model computes the original function up to float rounding.

Transform kinds (``LatmixConfig.transform``): ``"latmix"`` (learned affine, LU or QR, + bias),
``"rotation"`` (learned rotation, SpinQuant-like), ``"hadamard"`` (global random Hadamard,
QuaRot-like), ``"block_hadamard"`` (32-block Hadamard, MR-GPTQ-like), ``"smoothquant"``
(per-channel scaling ``A = diag(1/s)``, ``s_j = max|x_j|^alpha / max|W_{:,j}|^(1-alpha)`` from the
calibration data, Xiao et al. 2023), ``"identity"`` (RTN-MX).
Learned kinds are trained by end-to-end distillation ``KL(p_FP || p_Q) + lambda_vol sum_T
(log|det A_T|)^2`` with the quantizers in the loop (straight-through estimator, scales detached).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

from icml26.core.quant import QuantSpec, fake_quant
from icml26.core.quant.mx import MX_FORMATS, mx_fake_quant

from .transforms import InvertibleAffine, block_hadamard_matrix, hadamard_matrix

TransformKind = Literal["latmix", "rotation", "hadamard", "block_hadamard", "smoothquant", "identity"]
SITE_KINDS = ("qkv", "up", "o", "down")
#: non-MX quantizers for MX-unaware training (FP32 absmax scales, torch ops, STE)
NON_MX = ("int4_tensor", "int4_group32", "int8_tensor")
MAX_CONDITION = 1e4
"""Default refusal threshold of the fold's condition-number guard: ``cond(A) * 2^-24 <= 6e-4``, a
relative float32 fold error far below the smallest MX rounding step (MXFP8 E4M3: 2^-4 relative
half-spacing), so the guard never refuses a transform whose fold error could matter less than
the quantization it serves. Learned transforms mostly stay near cond 1-10; one grid point of a
full-profile tuning run reached 2.5e8 (issue 46), which the guard refuses."""


class IllConditionedTransform(ValueError):
    """A learned transform's condition number exceeds ``max_condition``: folding it in float32
    would lose about ``cond * 2^-24`` relative accuracy, so the fold is refused. Carries
    ``condition`` and ``key`` (the transform's name, when known)."""

    def __init__(self, message: str, condition: float, key: str | None = None) -> None:
        super().__init__(message)
        self.condition, self.key = float(condition), key


# ----------------------------------------------------------------------------------------------
# quantizers
# ----------------------------------------------------------------------------------------------


def make_quantizer(name: str | None, check_finite: bool = True
                   ) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """A fake-quantizer by name (``None`` = off): an MX format (:data:`MX_FORMATS`) or one of
    ``"int4_tensor"`` / ``"int8_tensor"`` (one FP32 absmax scale per tensor) and ``"int4_group32"``
    (FP32 absmax scale per 32 elements). Straight-through gradient in every case.

    ``check_finite`` (default on): an MX quantizer raises ``ValueError`` on a NaN/inf input
    instead of returning a silently wrong block (an inf makes every other element of its block
    0 or ±max, a NaN the whole block NaN); ``False`` skips that one extra pass (opt-out for
    speed). The non-MX quantizers always check (core ``quantize``)."""
    if name is None:
        return None
    if name in MX_FORMATS:
        return lambda x: mx_fake_quant(x, name, check_finite=check_finite)
    if name in NON_MX:
        fmt = "int8" if name.startswith("int8") else "int4"
        spec = QuantSpec(fmt, "group", group_size=32) if name.endswith("group32") else QuantSpec(fmt, "tensor")
        return lambda x: fake_quant(x, spec)
    raise ValueError(f"unknown quantizer {name!r}; choose an MX format {sorted(MX_FORMATS)} or {NON_MX}")


# ----------------------------------------------------------------------------------------------
# config
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatmixConfig:
    """What :func:`quantize_` does.

    Parameters
    ----------
    weight_fmt, act_fmt : str or None
        MX formats of the weights and of the activations at every targeted site (``None`` = off).
        Default W4A4 MXFP4 (the paper's main low-bit setting).
    transform : {"latmix", "rotation", "hadamard", "block_hadamard", "smoothquant", "identity"}
    smooth_alpha : float in [0, 1]
        Migration strength of ``"smoothquant"`` (0.5: the SmoothQuant paper's default).
    param : {"lu", "qr"}
        Parameterisation of ``"latmix"`` (the paper names both; LU is our default, brief sec. 2.6).
    bias : bool
        Learn the affine bias ``b`` (``"latmix"`` only).
    init : {"hadamard", "identity"}
        Initial ``A`` of learned kinds (random Hadamard = the QuaRot starting point; our choice).
    hadamard_block : int
        Block of ``"block_hadamard"`` (32 = the MX block, as MR-GPTQ).
    share_t1 : bool
        One T1 for all layers (True, "global" as in the paper) or one per layer and site.
    targets : tuple of str
        Which sites get transforms and quantizers (subset of ``("qkv", "up", "o", "down")``).
    train_act_fmt, train_weight_fmt : str or None
        Quantizers used *during calibration* ("" = the evaluation formats). MX-unaware training,
        e.g. ``"int4_tensor"``, is the paper's "MX-unaware" ablation.
    steps, lr, lr_bias, batch_size, lambda_vol, grad_clip : training of learned kinds
        Not given by the paper; defaults are our choice (brief sec. 2.6): AdamW, cosine decay,
        lambda_vol = 1e-2 on ``(log|det A|)^2``.
    seed : int
        Seed of the random Hadamards and of the calibration minibatches.
    max_condition : float
        Condition-number guard of the fold (:data:`MAX_CONDITION` by default; ``math.inf`` turns
        it off): a non-diagonal transform with ``cond(A)`` above it is refused with a
        ``ValueError`` when the model is folded (see :meth:`MXLinear.fold`).
    check_finite : bool
        NaN/inf checks of every MX quantizer's input (default on; ``False``: opt-out for speed).
    """

    weight_fmt: str | None = "mxfp4"
    act_fmt: str | None = "mxfp4"
    transform: TransformKind = "latmix"
    param: Literal["lu", "qr"] = "lu"
    bias: bool = True
    init: Literal["hadamard", "identity"] = "hadamard"
    hadamard_block: int = 32
    smooth_alpha: float = 0.5
    share_t1: bool = True
    targets: tuple[str, ...] = SITE_KINDS
    train_act_fmt: str | None = ""
    train_weight_fmt: str | None = ""
    steps: int = 100
    lr: float = 1e-3
    lr_bias: float = 5e-3
    batch_size: int = 8
    lambda_vol: float = 1e-2
    grad_clip: float = 1.0
    seed: int = 0
    max_condition: float = 1e4
    check_finite: bool = True

    def __post_init__(self) -> None:
        for f in (self.weight_fmt, self.act_fmt):
            make_quantizer(f)
        for f in (self.train_act_fmt, self.train_weight_fmt):
            if f != "":
                make_quantizer(f)
        if self.transform not in ("latmix", "rotation", "hadamard", "block_hadamard", "smoothquant", "identity"):
            raise ValueError(f"unknown transform {self.transform!r}")
        if self.param not in ("lu", "qr"):
            raise ValueError(f"param must be 'lu' or 'qr', got {self.param!r}")
        if self.init not in ("hadamard", "identity"):
            raise ValueError(f"init must be 'hadamard' or 'identity', got {self.init!r}")
        bad = [t for t in self.targets if t not in SITE_KINDS]
        if bad or not self.targets:
            raise ValueError(f"targets must be a non-empty subset of {SITE_KINDS}, got {self.targets}")
        if not 0 <= self.smooth_alpha <= 1:
            raise ValueError(f"smooth_alpha must lie in [0, 1], got {self.smooth_alpha!r}")
        if self.steps < 0 or self.batch_size < 1:
            raise ValueError("steps must be >= 0 and batch_size >= 1")
        for name in ("lr", "lr_bias", "lambda_vol", "grad_clip"):
            v = getattr(self, name)
            if not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
        if isinstance(self.max_condition, bool) or not isinstance(self.max_condition, int | float) \
                or not self.max_condition >= 1:
            raise ValueError(f"max_condition must be a number >= 1 (math.inf: no guard), got "
                             f"{self.max_condition!r}")
        if not isinstance(self.check_finite, bool):
            raise TypeError(f"check_finite must be a bool, got {type(self.check_finite).__name__}")

    @property
    def learned(self) -> bool:
        return self.transform in ("latmix", "rotation")


# ----------------------------------------------------------------------------------------------
# the quantized linear
# ----------------------------------------------------------------------------------------------


class MXLinear(nn.Module):
    """A linear layer reading ``T(x)`` with fake-quantized activations and weights.

    Before :meth:`fold` the folded weights are recomputed from the transform at every call (so
    gradients reach the transform); after it ``A``, ``b``, ``Q_w(W')`` and ``c'`` are buffers.
    """

    def __init__(self, linear: nn.Linear, transform: InvertibleAffine | None,
                 act_fmt: str | None, weight_fmt: str | None, check_finite: bool = True) -> None:
        super().__init__()
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"expected nn.Linear, got {type(linear).__name__}")
        w = linear.weight.detach()
        if not bool(torch.isfinite(w).all()) or (linear.bias is not None
                                                  and not bool(torch.isfinite(linear.bias).all())):
            raise ValueError("the linear layer's weight or bias contains NaN or infinite values")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("w_fp", w.clone())
        self.register_buffer("c_fp", linear.bias.detach().clone() if linear.bias is not None
                             else torch.zeros(self.out_features))
        self.transform = transform
        self.check_finite = bool(check_finite)
        self.set_formats(act_fmt, weight_fmt)
        self.folded = False

    def set_formats(self, act_fmt: str | None, weight_fmt: str | None) -> None:
        """Change the quantizers (before folding)."""
        if act_fmt in MX_FORMATS or weight_fmt in MX_FORMATS:
            if self.in_features % 32:
                raise ValueError(f"in_features={self.in_features} is not a multiple of the MX block 32")
        self.act_fmt, self.weight_fmt = act_fmt, weight_fmt
        self._qa = make_quantizer(act_fmt, self.check_finite)
        self._qw = make_quantizer(weight_fmt, self.check_finite)

    def folded_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(W', c')`` (unquantized)."""
        if self.transform is None:
            return self.w_fp, self.c_fp
        return self.transform.fold_weight(self.w_fp, self.c_fp)

    def transform_input(self, x: torch.Tensor) -> torch.Tensor:
        if self.folded:
            return x if self.a_buf is None else x @ self.a_buf + self.b_buf
        return x if self.transform is None else self.transform(x)

    @torch.no_grad()
    def fold(self, max_condition: float = MAX_CONDITION) -> None:
        """Materialise ``A``, ``b``, ``Q_w(W A^-T)`` and ``c - W A^-T b`` as buffers.

        Refuses (:class:`IllConditionedTransform`, a ``ValueError``) a non-diagonal ``A`` whose condition number exceeds
        ``max_condition``: the folded layer computes ``(x A) (W A^-T)^T`` in float32, whose
        relative error grows like ``cond(A) * 2^-24`` (a fold at cond 2.8e10 changed the output by
        2.7e-3 with nothing reported). A diagonal ``A`` (SmoothQuant) scales and unscales each
        channel exactly up to one rounding each, whatever its condition number, and passes.
        """
        if self.transform is not None and math.isfinite(max_condition):
            a = self.transform.matrix().detach()
            if bool((a - torch.diag(torch.diagonal(a))).any()):
                cond = self.transform.condition_number()
                if not cond <= max_condition:
                    raise IllConditionedTransform(
                        f"transform condition number {cond:.3g} exceeds max_condition="
                        f"{max_condition:g}: the float32 fold would lose ~{cond * 2.0**-24:.1e} "
                        "relative accuracy (regularise the transform, e.g. a larger "
                        "lambda_vol, or raise max_condition knowingly)", cond)
        w, c = self.folded_weights()
        if not bool(torch.isfinite(w).all()):
            raise FloatingPointError("folded weight is not finite (ill-conditioned transform)")
        if self.transform is not None:
            self.register_buffer("a_buf", self.transform.matrix().detach().clone())
            self.register_buffer("b_buf", self.transform.bias_vector().detach().clone())
        else:
            self.a_buf = self.b_buf = None
        self.register_buffer("wq", (self._qw(w) if self._qw else w).detach().clone())
        self.register_buffer("cq", c.detach().clone())
        self.transform = None
        self.folded = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xt = self.transform_input(x)
        if self._qa is not None:
            xt = self._qa(xt)
        if self.folded:
            return F.linear(xt, self.wq, self.cq)
        w, c = self.folded_weights()
        return F.linear(xt, self._qw(w) if self._qw else w, c)

    def extra_repr(self) -> str:
        return (f"in={self.in_features}, out={self.out_features}, act={self.act_fmt}, "
                f"weight={self.weight_fmt}, folded={self.folded}")


# ----------------------------------------------------------------------------------------------
# placement
# ----------------------------------------------------------------------------------------------


def find_sites(model: nn.Module) -> dict[str, tuple[int, str, nn.Linear]]:
    """Targetable linears of a :class:`~icml26.core.lm.model.TinyCausalLM`-like model.

    Returns ``{module path: (layer index, site kind, linear)}`` for ``blocks.i.attn.qkv`` ("qkv"),
    ``blocks.i.mlp.0`` ("up"), ``blocks.i.attn.proj`` ("o") and ``blocks.i.mlp.2`` ("down").
    """
    blocks = getattr(model, "blocks", None)
    if blocks is None:
        raise TypeError("quantize_ expects a TinyCausalLM-like model with .blocks[i].attn.qkv/.proj "
                        "and .blocks[i].mlp[0]/[2]")
    out = {}
    for i, blk in enumerate(blocks):
        for kind, mod in (("qkv", blk.attn.qkv), ("up", blk.mlp[0]), ("o", blk.attn.proj),
                          ("down", blk.mlp[2])):
            path = {"qkv": f"blocks.{i}.attn.qkv", "up": f"blocks.{i}.mlp.0",
                    "o": f"blocks.{i}.attn.proj", "down": f"blocks.{i}.mlp.2"}[kind]
            out[path] = (i, kind, mod)
    return out


def _group_key(layer: int, kind: str, share_t1: bool) -> str:
    if kind in ("qkv", "up"):
        return "T1" if share_t1 else f"T1.{layer}.{kind}"
    return f"T2.{layer}.{kind}"


def _new_transform(dim: int, cfg: LatmixConfig, seed: int) -> InvertibleAffine | None:
    if cfg.transform == "identity":
        return None
    if cfg.transform == "smoothquant":  # the scales are set from calibration data in quantize_
        return InvertibleAffine(dim, "fixed", torch.eye(dim), bias=False)
    if cfg.transform == "block_hadamard":
        return InvertibleAffine(dim, "fixed", block_hadamard_matrix(dim, cfg.hadamard_block, seed=seed),
                                bias=False)
    h = hadamard_matrix(dim, seed=seed) if cfg.init == "hadamard" else torch.eye(dim)
    if cfg.transform == "hadamard":
        return InvertibleAffine(dim, "fixed", h, bias=False)
    if cfg.transform == "rotation":
        return InvertibleAffine(dim, "rotation", h, bias=False)
    return InvertibleAffine(dim, cfg.param, h, bias=cfg.bias)


def build_transforms(model: nn.Module, cfg: LatmixConfig) -> nn.ModuleDict:
    """One transform per group (``"T1"`` shared, ``"T2.<layer>.<site>"``) for the targeted sites."""
    groups: dict[str, InvertibleAffine] = {}
    for k, (layer, kind, lin) in enumerate(find_sites(model).values()):
        if kind not in cfg.targets:
            continue
        key = _group_key(layer, kind, cfg.share_t1)
        if key not in groups:
            t = _new_transform(lin.in_features, cfg, seed=cfg.seed * 1000 + k)
            if t is not None:
                groups[key] = t
    return nn.ModuleDict({k.replace(".", "_"): v for k, v in groups.items()})


def _set_module(model: nn.Module, path: str, module: nn.Module) -> None:
    parent_path, _, name = path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    if isinstance(parent, nn.Sequential) or name.isdigit():
        parent[int(name)] = module
    else:
        setattr(parent, name, module)


# ----------------------------------------------------------------------------------------------
# objective
# ----------------------------------------------------------------------------------------------


def distillation_loss(student_logits: torch.Tensor, teacher_logp: torch.Tensor) -> torch.Tensor:
    """``KL(p_teacher || p_student)`` averaged over tokens (nats).

    Parameters
    ----------
    student_logits : Tensor (..., V)
    teacher_logp : Tensor (..., V), log-probabilities of the FP model
    """
    if student_logits.shape != teacher_logp.shape:
        raise ValueError(f"shape mismatch {tuple(student_logits.shape)} vs {tuple(teacher_logp.shape)}")
    logq = F.log_softmax(student_logits, dim=-1)
    return (teacher_logp.exp() * (teacher_logp - logq)).sum(-1).mean()


def volume_regularizer(transforms: Mapping[str, InvertibleAffine] | nn.ModuleDict) -> torch.Tensor:
    """``sum_T (log|det A_T|)^2``: keeps each transform volume-preserving (|det A| = 1) so that
    the activations cannot be shrunk at the cost of inflating ``A^-1`` and the folded weights."""
    terms = [t.logabsdet() ** 2 for t in transforms.values()]
    return torch.stack(terms).sum() if terms else torch.zeros(())


# ----------------------------------------------------------------------------------------------
# quantize_
# ----------------------------------------------------------------------------------------------


@dataclass
class QuantizeReport:
    """What :func:`quantize_` did: transforms, loss curve, online cost, conditioning."""

    transforms: nn.ModuleDict
    losses: list[float] = field(default_factory=list)
    steps_run: int = 0
    online_flops_per_token: int = 0
    logabsdet: dict[str, float] = field(default_factory=dict)
    condition: dict[str, float] = field(default_factory=dict)


def _forward_logits(model: nn.Module, idx: torch.Tensor) -> torch.Tensor:
    out = model(idx)
    return out[0] if isinstance(out, tuple) else out


def quantize_(model: nn.Module, config: LatmixConfig, calib: torch.Tensor | None = None,
              *, on_step: Callable[[int, float], None] | None = None) -> QuantizeReport:
    """Quantize ``model`` in place (torchao-style): transforms, calibration, folding.

    Parameters
    ----------
    model : nn.Module
        A TinyCausalLM-like model (see :func:`find_sites`); its targeted ``nn.Linear`` layers are
        replaced by folded :class:`MXLinear` modules. The model's parameters are not trained.
    config : LatmixConfig
    calib : LongTensor (N, T), optional
        Calibration token windows; required when the transform is learned and ``steps > 0``.

    Returns
    -------
    QuantizeReport
    """
    if not isinstance(config, LatmixConfig):
        raise TypeError(f"config must be a LatmixConfig, got {type(config).__name__}")
    for p in model.parameters():
        if not bool(torch.isfinite(p).all()):
            raise ValueError("model parameters contain NaN or infinite values")
    train = config.learned and config.steps > 0 and (config.lr > 0 or config.lr_bias > 0)
    if train:
        if calib is None or not isinstance(calib, torch.Tensor) or calib.dim() != 2 or calib.numel() == 0:
            raise ValueError("a learned transform needs calib: a non-empty (N, T) LongTensor of token ids")
    sites = find_sites(model)
    transforms = build_transforms(model, config)
    if config.transform == "smoothquant":
        if calib is None or not isinstance(calib, torch.Tensor) or calib.dim() != 2 or calib.numel() == 0:
            raise ValueError("smoothquant needs calib: a non-empty (N, T) LongTensor of token ids")
        _set_smoothquant_scales(model, sites, transforms, calib, config)
    for p in model.parameters():
        p.requires_grad_(False)
    teacher = None
    if train:
        was = model.training
        model.eval()
        with torch.no_grad():
            teacher = torch.cat([F.log_softmax(_forward_logits(model, calib[i:i + 16]), -1)
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
        m = MXLinear(lin, t, train_a if train else config.act_fmt, train_w if train else config.weight_fmt,
                     check_finite=config.check_finite)
        _set_module(model, path, m)
        wrapped.append(m)
        if t is not None:
            flops += 2 * lin.in_features ** 2
    report = QuantizeReport(transforms=transforms, online_flops_per_token=flops)
    if train:
        report.losses = _train(model, transforms, calib, teacher, config, on_step)
        report.steps_run = config.steps
    with torch.no_grad():
        for key, t in transforms.items():
            report.logabsdet[key] = float(t.logabsdet())
            report.condition[key] = t.condition_number()
    for m in wrapped:  # every guard first: a refused fold leaves no layer half-folded
        if m.transform is not None and math.isfinite(config.max_condition):
            key = next(k for k, t in transforms.items() if t is m.transform)
            a = m.transform.matrix().detach()
            if bool((a - torch.diag(torch.diagonal(a))).any()) and not report.condition[key] <= config.max_condition:
                raise IllConditionedTransform(
                    f"transform {key} has condition number {report.condition[key]:.3g} > "
                    f"max_condition={config.max_condition:g}: refusing to fold (see MXLinear.fold)",
                    report.condition[key], key)
    for m in wrapped:
        m.set_formats(config.act_fmt, config.weight_fmt)
        m.fold(config.max_condition)
    return report


@torch.no_grad()
def _set_smoothquant_scales(model: nn.Module, sites: dict, transforms: nn.ModuleDict, calib: torch.Tensor,
                            cfg: LatmixConfig) -> None:
    """SmoothQuant scales per transform group: ``s_j = max|x_j|^a / max|W_{:,j}|^(1-a)`` with the
    maxima over the calibration tokens and over every site that shares the transform."""
    amax_x: dict[str, torch.Tensor] = {}
    amax_w: dict[str, torch.Tensor] = {}
    hooks = []
    for _path, (layer, kind, lin) in sites.items():
        if kind not in cfg.targets:
            continue
        key = _group_key(layer, kind, cfg.share_t1).replace(".", "_")

        def hook(mod, inp, out, key=key):
            m = inp[0].detach().abs().reshape(-1, inp[0].shape[-1]).amax(0)
            amax_x[key] = torch.maximum(amax_x[key], m) if key in amax_x else m
        hooks.append(lin.register_forward_hook(hook))
        wmax = lin.weight.detach().abs().amax(0)
        amax_w[key] = torch.maximum(amax_w[key], wmax) if key in amax_w else wmax
    was = model.training
    model.eval()
    for i in range(0, len(calib), 16):
        _forward_logits(model, calib[i:i + 16])
    model.train(was)
    for h in hooks:
        h.remove()
    a = cfg.smooth_alpha
    for key, t in transforms.items():
        sc = (amax_x[key].clamp(min=1e-5) ** a / amax_w[key].clamp(min=1e-5) ** (1 - a)).clamp(min=1e-5)
        t.a_fixed.copy_(torch.diag(1.0 / sc))


def _train(model: nn.Module, transforms: nn.ModuleDict, calib: torch.Tensor, teacher: torch.Tensor,
           cfg: LatmixConfig, on_step: Callable[[int, float], None] | None) -> list[float]:
    mats = [p for n, p in transforms.named_parameters() if not n.endswith("bias")]
    biases = [p for n, p in transforms.named_parameters() if n.endswith("bias")]
    groups = [{"params": mats, "lr": cfg.lr}]
    if biases:
        groups.append({"params": biases, "lr": cfg.lr_bias})
    opt = torch.optim.AdamW(groups, weight_decay=0.0)
    base = [g["lr"] for g in opt.param_groups]
    gen = torch.Generator().manual_seed(cfg.seed)
    losses = []
    was = model.training
    model.eval()
    for step in range(cfg.steps):
        f = 0.5 * (1 + math.cos(math.pi * step / cfg.steps))
        for g, lr in zip(opt.param_groups, base, strict=True):
            g["lr"] = lr * f
        idx = torch.randint(0, len(calib), (min(cfg.batch_size, len(calib)),), generator=gen)
        for t in transforms.values():
            t.cache(True)
        logits = _forward_logits(model, calib[idx])
        loss = distillation_loss(logits, teacher[idx]) + cfg.lambda_vol * volume_regularizer(transforms)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite calibration loss at step {step}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for t in transforms.values():
            t.cache(False)
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(transforms.parameters(), cfg.grad_clip)
        opt.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step, losses[-1])
    model.train(was)
    return losses


__all__ = ["MAX_CONDITION", "LatmixConfig", "MXLinear", "NON_MX", "QuantizeReport", "SITE_KINDS", "build_transforms",
           "distillation_loss", "find_sites", "make_quantizer", "quantize_", "volume_regularizer"]

"""A small, deterministic flow-matching training loop with EMA (CPU-first, device-agnostic)."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from ..progress import tick
from .losses import cfm_loss

Sampler = Callable[[int, torch.Generator], "Tensor | tuple[Tensor, Tensor | None]"]
LossFn = Callable[..., Tensor]


@dataclass
class TrainResult:
    """What :func:`train_flow` returns.

    Attributes
    ----------
    model : nn.Module
        The trained network (last iterate).
    ema_model : nn.Module
        Its exponential moving average (what one samples with), in eval mode.
    losses : list of float
        The training loss at every step.
    """

    model: nn.Module
    ema_model: nn.Module
    losses: list[float] = field(default_factory=list)


@torch.no_grad()
def ema_update(ema_model: nn.Module, model: nn.Module, decay: float) -> None:
    """``p_ema <- decay p_ema + (1 - decay) p`` for every parameter and float buffer."""
    for pe, p in zip(ema_model.parameters(), model.parameters(), strict=True):
        pe.mul_(decay).add_(p.detach(), alpha=1.0 - decay)
    for be, b in zip(ema_model.buffers(), model.buffers(), strict=True):
        be.copy_(b)


def _cpu_only(tensors: list[Tensor]) -> bool:
    """Plain float32/64 tensors on the CPU, all of one dtype (where the foreach paths are the
    per-tensor arithmetic)."""
    return bool(tensors) and all(type(t) in (Tensor, nn.Parameter) and t.device.type == "cpu"
                                 and t.dtype == tensors[0].dtype for t in tensors) \
        and tensors[0].dtype in (torch.float32, torch.float64)


@torch.no_grad()
def _clip_grad_norm_cpu(params: list[Tensor], max_norm: float) -> None:
    """``nn.utils.clip_grad_norm_(params, max_norm)`` for CPU tensors of one dtype: its foreach
    path (norm of the per-tensor norms, coefficient ``min(max_norm / (norm + 1e-6), 1)``)."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
    torch._foreach_mul_(grads, torch.clamp(float(max_norm) / (total + 1e-6), max=1.0))


class ForeachEMA:
    """:func:`ema_update` over parameter and buffer lists built once, with foreach kernels (the
    same arithmetic; used by ``train_flow`` on the CPU and by callers that keep their own EMA)."""

    def __init__(self, ema_model: nn.Module, model: nn.Module) -> None:
        self.ema_p, self.p = list(ema_model.parameters()), list(model.parameters())
        self.ema_b, self.b = list(ema_model.buffers()), list(model.buffers())
        if len(self.ema_p) != len(self.p) or len(self.ema_b) != len(self.b):
            raise ValueError("ema_model and model must have the same parameters and buffers")

    @torch.no_grad()
    def __call__(self, decay: float) -> None:
        torch._foreach_mul_(self.ema_p, decay)
        torch._foreach_add_(self.ema_p, self.p, alpha=1.0 - decay)
        for be, b in zip(self.ema_b, self.b, strict=True):
            be.copy_(b)


def train_flow(model: nn.Module, sampler: Sampler, *, steps: int = 5000, batch_size: int = 256,
               lr: float = 1e-3, loss_fn: LossFn = cfm_loss, ema: float = 0.999,
               grad_clip: float | None = 1.0, weight_decay: float = 0.0, cosine: bool = True,
               warmup: int = 0, seed: int = 0, device: str | torch.device = "cpu",
               callback: Callable[[int, float, nn.Module], None] | None = None) -> TrainResult:
    """Train a velocity field with Adam(W) + cosine decay and keep an EMA copy.

    Parameters
    ----------
    model : nn.Module
        Velocity net following :class:`~icml26.core.flows.nets.VelocityField`. Trained in place.
    sampler : callable
        ``sampler(batch_size, generator) -> x1`` or ``-> (x1, cond)``: a data batch.
    steps, batch_size, lr : int, int, float
        Optimisation budget. Defaults (Adam 1e-3, batch 256) follow torchcfm's 2-D tutorials.
    loss_fn : callable, default :func:`cfm_loss`
        ``loss_fn(model, x1, cond, generator=g) -> scalar``.
    ema : float, default 0.999
        EMA decay (SiT uses 0.9999 over 400k+ steps; 0.999 suits a few thousand). The effective
        decay is ``min(ema, (1 + k) / (10 + k))`` at step k so that early EMA is not stuck at init.
    grad_clip : float or None, default 1.0
        Global gradient-norm clip.
    cosine : bool, default True
        Cosine decay of the learning rate to 0 (after ``warmup`` linear steps).
    seed : int
        Seeds the generator used for batches, times and noise (the net's init is the caller's).
    device : str or torch.device
        Where to train.

    Returns
    -------
    TrainResult
    """
    if steps <= 0 or batch_size <= 0 or lr <= 0:
        raise ValueError("steps, batch_size and lr must be positive")
    if not 0.0 <= ema < 1.0:
        raise ValueError(f"ema must be in [0, 1), got {ema}")
    model.to(device).train()
    ema_model = copy.deepcopy(model).eval()
    for p in ema_model.parameters():
        p.requires_grad_(False)
    params = list(model.parameters())
    # on the CPU: the multi-tensor ("foreach") AdamW, clip and EMA over lists built once; the
    # same arithmetic as the per-tensor loops (bit for bit: tests/core), without their per-step
    # Python overhead, which dominates a small net's step
    fast = _cpu_only(params) and _cpu_only(list(ema_model.parameters()))
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=True if fast else None)

    def schedule(k: int) -> float:
        if warmup and k < warmup:
            return (k + 1) / warmup
        if not cosine:
            return 1.0
        frac = (k - warmup) / max(1, steps - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * frac))

    # LambdaLR's rule (lr = base lr x schedule(k) before step k), set directly
    for group in opt.param_groups:
        group["initial_lr"] = group["lr"]
        group["lr"] = group["initial_lr"] * schedule(0)
    ema_step = ForeachEMA(ema_model, model) if fast else None
    gen = torch.Generator().manual_seed(int(seed))
    losses: list[float] = []
    for k in range(steps):
        batch = sampler(batch_size, gen)
        x1, cond = batch if isinstance(batch, tuple) else (batch, None)
        x1 = x1.to(device)
        cond = cond.to(device) if cond is not None else None
        loss = loss_fn(model, x1, cond, generator=gen)
        tick("flow training", k + 1, steps)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training loss is {float(loss)} at step {k}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            if fast:
                _clip_grad_norm_cpu(params, grad_clip)
            else:
                nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()
        for group in opt.param_groups:
            group["lr"] = group["initial_lr"] * schedule(k + 1)
        if fast:
            ema_step(min(ema, (1.0 + k) / (10.0 + k)))
        else:
            ema_update(ema_model, model, min(ema, (1.0 + k) / (10.0 + k)))
        losses.append(float(loss.detach()))
        if callback is not None:
            callback(k, losses[-1], model)
    model.eval()
    return TrainResult(model=model, ema_model=ema_model, losses=losses)


def tensor_sampler(data: Tensor) -> Sampler:
    """A sampler drawing batches with replacement from a fixed data tensor ``(N, *shape)``."""
    if not isinstance(data, Tensor) or data.dim() < 2 or data.shape[0] == 0:
        raise ValueError("data must be a non-empty tensor of shape (N, *shape)")

    def sample(n: int, generator: torch.Generator) -> Tensor:
        idx = torch.randint(0, data.shape[0], (n,), generator=generator)
        return data[idx]

    return sample

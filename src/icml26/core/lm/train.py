"""A plain pretraining loop for :class:`~icml26.core.lm.model.TinyCausalLM` (any torch optimizer).

``train_lm(model, optimizer, data, config)`` draws seeded random windows, minimizes next-token
cross-entropy, sets each param group's learning rate from a warmup + cosine schedule (relative to
the group's initial ``lr``), and evaluates the loss on fixed validation windows. Same seed ⇒ same
batches, same schedule, same result, whatever the optimizer: the arms of an experiment differ
only in the optimizer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.nn import functional as F

from ..progress import tick
from .data import TokenSplit, eval_windows, get_batch


@dataclass(frozen=True)
class TrainConfig:
    """Loop settings.

    ``min_lr_ratio``: the cosine decays the lr to ``min_lr_ratio * lr`` (not to zero).
    ``eval_every = 0``: evaluate only at the end. ``grad_clip = 0``: no clipping.
    """

    steps: int = 200
    batch_size: int = 16
    block_size: int = 64
    warmup_steps: int = 20
    min_lr_ratio: float = 0.1
    eval_every: int = 0
    eval_windows: int = 64
    grad_clip: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.block_size < 1:
            raise ValueError("steps, batch_size and block_size must be positive")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError("min_lr_ratio must lie in [0, 1]")
        if self.warmup_steps < 0 or self.eval_every < 0 or self.grad_clip < 0:
            raise ValueError("warmup_steps, eval_every and grad_clip must be >= 0")


def lr_factor(step: int, config: TrainConfig) -> float:
    """Multiplier of the base lr at ``step`` (0-based): linear warmup then cosine to the minimum."""
    if config.warmup_steps and step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    span = max(1, config.steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / span)
    return config.min_lr_ratio + (1 - config.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def lm_loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (nats/token)."""
    logits, _ = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


@torch.no_grad()
def evaluate_loss(model: torch.nn.Module, tokens: torch.Tensor, block_size: int,
                  max_windows: int = 64, batch_size: int = 32) -> float:
    """Mean cross-entropy on fixed non-overlapping windows of ``tokens`` (deterministic)."""
    was = model.training
    model.eval()
    x, y = eval_windows(tokens, block_size, max_windows)
    total, count = 0.0, 0
    for i in range(0, len(x), batch_size):
        xb, yb = x[i:i + batch_size], y[i:i + batch_size]
        total += float(lm_loss(model, xb, yb)) * yb.numel()
        count += yb.numel()
    model.train(was)
    return total / count


@dataclass
class TrainResult:
    """Training curve and final validation loss (nats/token)."""

    train_loss: list[float] = field(default_factory=list)
    val_steps: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)

    @property
    def final_val_loss(self) -> float:
        return self.val_loss[-1]


def train_lm(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    data: TokenSplit,
    config: TrainConfig,
    *,
    on_step: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Train ``model`` with ``optimizer`` on ``data.train``; return the loss curves.

    Parameters
    ----------
    model : nn.Module
        Maps (B, T) ids to ``(logits, ...)``.
    optimizer : torch.optim.Optimizer
        Any optimizer; its groups' current ``lr`` is the base lr of the schedule.
    data : TokenSplit
    config : TrainConfig
    on_step : callable, optional
        ``on_step(step, train_loss)`` after each optimizer step (diagnostics).
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    gen = torch.Generator().manual_seed(config.seed)
    base = [g["lr"] for g in optimizer.param_groups]
    res = TrainResult()
    model.train()
    for step in range(config.steps):
        tick("lm training", step + 1, config.steps)
        f = lr_factor(step, config)
        for g, lr in zip(optimizer.param_groups, base, strict=True):
            g["lr"] = lr * f
        x, y = get_batch(data.train, config.batch_size, config.block_size, gen)
        loss = lm_loss(model, x, y)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite training loss at step {step}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        res.train_loss.append(float(loss.detach()))
        if on_step is not None:
            on_step(step, float(loss.detach()))
        last = step == config.steps - 1
        if last or (config.eval_every and (step + 1) % config.eval_every == 0):
            res.val_steps.append(step + 1)
            res.val_loss.append(evaluate_loss(model, data.val, config.block_size, config.eval_windows))
    for g, lr in zip(optimizer.param_groups, base, strict=True):
        g["lr"] = lr
    return res

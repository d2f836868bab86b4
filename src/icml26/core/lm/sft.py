"""Supervised fine-tuning with completion-only loss masks and per-example weights (TRL-style).

The loss is the token-level cross-entropy of the completion given the prompt,

    L = - sum_b w_b sum_t m_{b,t} log pi_theta(y_{b,t} | x_b, y_{b,<t}) / sum_b sum_t m_{b,t}

with ``m`` the completion mask (prompt and padding masked out, TRL ``completion_only_loss=True``)
and ``w_b`` an optional per-example weight (all ones gives TRL's mean over completion tokens).

Layout: prompts are left-padded to a fixed ``prompt_length`` and completions right-padded, the
same layout :func:`icml26.core.lm.generate.generate` samples in (see its module docstring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..progress import tick
from .generate import left_pad
from .logprobs import sequence_logprobs


@dataclass(frozen=True)
class SFTConfig:
    """Hyperparameters of :func:`train_sft` (names follow ``trl.SFTConfig``).

    Attributes
    ----------
    learning_rate : float, defaults to 1e-3
        AdamW step size (our choice for tiny models trained from scratch; TRL's 2e-5 is for
        pretrained LLMs).
    per_device_train_batch_size : int, defaults to 32
    max_steps : int, defaults to 500
    weight_decay : float, defaults to 0.0
    max_grad_norm : float, defaults to 1.0
    warmup_steps : int, defaults to 0
    lr_scheduler_type : str, defaults to ``"cosine"`` -- ``"constant"`` or ``"cosine"``
    completion_only_loss : bool, defaults to True -- False also trains on prompt tokens
    seed : int, defaults to 0 -- order of the minibatches
    """

    learning_rate: float = 1e-3
    per_device_train_batch_size: int = 32
    max_steps: int = 500
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    warmup_steps: int = 0
    lr_scheduler_type: str = "cosine"
    completion_only_loss: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.learning_rate > 0:
            raise ValueError("learning_rate must be > 0")
        if self.per_device_train_batch_size < 1 or self.max_steps < 0 or self.warmup_steps < 0:
            raise ValueError("per_device_train_batch_size must be >= 1, max_steps and warmup_steps >= 0")
        if self.lr_scheduler_type not in {"constant", "cosine"}:
            raise ValueError(f"lr_scheduler_type must be 'constant' or 'cosine', got {self.lr_scheduler_type!r}")


@dataclass
class SFTBatch:
    """A padded SFT batch (B examples, P = prompt_length, C = completion_length).

    Attributes
    ----------
    input_ids : Tensor, shape (B, P + C), int64
    attention_mask : Tensor, shape (B, P + C), bool -- real tokens
    completion_mask : Tensor, shape (B, P + C), bool -- tokens whose loss counts
    weights : Tensor, shape (B,), float32
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    completion_mask: torch.Tensor
    weights: torch.Tensor


def build_sft_batch(
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    *,
    pad_id: int,
    prompt_length: int | None = None,
    weights: Sequence[float] | None = None,
    completion_only_loss: bool = True,
) -> SFTBatch:
    """Pad prompt/completion token lists into one batch with a completion-only loss mask.

    Raises
    ------
    ValueError
        Mismatched lengths, an empty prompt or completion, negative or non-finite weights.
    """
    if len(prompts) != len(completions):
        raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions")
    if any(len(c) == 0 for c in completions):
        raise ValueError("empty completion: every completion needs at least one token")
    p_ids, p_mask = left_pad(prompts, pad_id, prompt_length)
    C = max(len(c) for c in completions)
    c_ids = torch.full((len(completions), C), int(pad_id), dtype=torch.long)
    c_mask = torch.zeros((len(completions), C), dtype=torch.bool)
    for i, c in enumerate(completions):
        c_ids[i, :len(c)] = torch.as_tensor(list(c), dtype=torch.long)
        c_mask[i, :len(c)] = True
    if weights is None:
        w = torch.ones(len(prompts), dtype=torch.float32)
    else:
        w = torch.as_tensor(np.asarray(weights, dtype=np.float32))
        if w.shape != (len(prompts),):
            raise ValueError(f"weights must have shape ({len(prompts)},), got {tuple(w.shape)}")
        if not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
            raise ValueError("weights must be finite and >= 0")
    attn = torch.cat([p_mask, c_mask], dim=1)
    loss_mask = torch.cat([p_mask if not completion_only_loss else torch.zeros_like(p_mask), c_mask], dim=1)
    if not completion_only_loss:  # the first real token has no context to be predicted from
        first = p_mask.float().argmax(dim=1)
        loss_mask[torch.arange(len(prompts)), first] = False
    return SFTBatch(torch.cat([p_ids, c_ids], dim=1), attn, loss_mask, w)


def sft_loss(model: torch.nn.Module, batch: SFTBatch) -> torch.Tensor:
    """Weighted completion-token cross-entropy (module docstring), a scalar tensor."""
    _, per_token = sequence_logprobs(model, batch.input_ids, batch.completion_mask,
                                     attention_mask=batch.attention_mask)
    mask = batch.completion_mask[:, 1:].float()
    n = mask.sum()
    if n == 0:
        raise ValueError("the batch has no completion tokens")
    return -(per_token * batch.weights.unsqueeze(1)).sum() / n


def _lr_factor(step: int, config: SFTConfig) -> float:
    if config.warmup_steps and step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    if config.lr_scheduler_type == "constant" or config.max_steps <= config.warmup_steps:
        return 1.0
    frac = (step - config.warmup_steps) / max(1, config.max_steps - config.warmup_steps)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * frac))


def train_sft(
    model: torch.nn.Module,
    dataset: Sequence[dict],
    config: SFTConfig,
    *,
    pad_id: int,
    prompt_length: int | None = None,
    loss_fn: Callable[[torch.nn.Module, list[dict], int], torch.Tensor] | None = None,
) -> list[float]:
    """Fine-tune ``model`` in place on ``dataset``; return the per-step losses.

    Parameters
    ----------
    model : causal LM (``model(idx, attn_mask=...) -> (logits, cache)``)
    dataset : sequence of dicts with ``prompt_ids`` and ``completion_ids`` (token lists) and an
        optional ``weight`` (float >= 0, default 1).
    config : SFTConfig
    pad_id : int
    prompt_length : int, optional
        Fixed left-padded prompt length (default: the longest prompt in ``dataset``).
    loss_fn : callable, optional
        ``loss_fn(model, rows, prompt_length) -> loss`` of a minibatch of examples, in place of
        :func:`sft_loss` on the batch :func:`build_sft_batch` lays out (same minibatch order,
        optimizer, schedule and clipping either way).
    """
    if len(dataset) == 0:
        raise ValueError("empty SFT dataset")
    for key in ("prompt_ids", "completion_ids"):
        if key not in dataset[0]:
            raise KeyError(f"SFT examples need a {key!r} field")
    P = prompt_length or max(len(ex["prompt_ids"]) for ex in dataset)
    rng = np.random.default_rng(config.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=config.learning_rate,
                            weight_decay=config.weight_decay)
    model.train()
    order = rng.permutation(len(dataset))
    pos = 0
    losses: list[float] = []
    bs = config.per_device_train_batch_size
    for step in range(config.max_steps):
        tick("sft", step + 1, config.max_steps)
        if pos + bs > len(order):
            order, pos = rng.permutation(len(dataset)), 0
        idx = order[pos:pos + bs]
        pos += bs
        rows = [dataset[int(i)] for i in idx]
        for g in opt.param_groups:
            g["lr"] = config.learning_rate * _lr_factor(step, config)
        if loss_fn is not None:
            loss = loss_fn(model, rows, P)
        else:
            batch = build_sft_batch([r["prompt_ids"] for r in rows],
                                    [r["completion_ids"] for r in rows], pad_id=pad_id,
                                    prompt_length=P,
                                    weights=[float(r.get("weight", 1.0)) for r in rows],
                                    completion_only_loss=config.completion_only_loss)
            loss = sft_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if config.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
        opt.step()
        losses.append(float(loss.detach()))
    return losses

"""Tie-aware DPO for causal language models: ``train_tie_dpo`` (TRL-like, framework-agnostic math).

The data are pairs of token sequences (prompt + response) that share a prompt, a label per pair
(+1 first preferred, -1 second preferred, 0 tie) and a completion mask marking response tokens.
The reference model's log-probabilities are computed once (TRL's ``precompute_ref_log_probs``).

Sequence log-probabilities are sums over the completion tokens, except for ``loss_type="ipo"``,
where they are divided by the number of completion tokens, as TRL's ``DPOTrainer`` does
(``concatenated_forward``: ``if "ipo" in self.loss_type: all_logps = all_logps /
loss_mask.sum(-1)``, trl/trainer/dpo_trainer.py). See :func:`completion_logps`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from icml26.core.lm.logprobs import sequence_logprobs
from icml26.core.lm.preference import preference_loss

from .tabular import PreferenceConfig, resolve_ties


@dataclass(frozen=True)
class TieDPOConfig(PreferenceConfig):
    """:class:`PreferenceConfig` plus the optimiser settings of the LM trainer.

    Attributes
    ----------
    learning_rate : float
        Adam learning rate (our choice for 0.1M-parameter models: 1e-3).
    batch_size : int
        Pairs per step.
    steps : int
        Optimiser steps.
    """

    learning_rate: float = 1e-3
    batch_size: int = 64
    steps: int = 150


@dataclass
class PairData:
    """Tokenised preference pairs.

    Attributes
    ----------
    first, second : LongTensor, shape (B, T)
        prompt + response token ids of the two responses of each pair.
    completion_mask : Tensor, shape (B, T)
        1 on response tokens (identical layout for both members).
    labels : ndarray, shape (B,)
        +1, -1 or 0 (tie).
    """

    first: torch.Tensor
    second: torch.Tensor
    completion_mask: torch.Tensor
    labels: np.ndarray

    def __post_init__(self) -> None:
        if self.first.shape != self.second.shape or self.first.shape != self.completion_mask.shape:
            raise ValueError("first, second and completion_mask must have the same shape (B, T)")
        if len(self.labels) != self.first.shape[0]:
            raise ValueError(f"{len(self.labels)} labels for {self.first.shape[0]} pairs")


def completion_logps(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor,
                     loss_type: str) -> torch.Tensor:
    """log pi(response | prompt) per sequence as the loss expects it: the sum over completion
    tokens, or for ``ipo`` the per-token mean (TRL's length normalisation of IPO)."""
    total, _ = sequence_logprobs(model, ids, mask)
    if loss_type == "ipo":
        n = mask[:, 1:].sum(1).clamp(min=1).to(total.dtype)
        return total / n
    return total


def train_tie_dpo(policy: torch.nn.Module, ref: torch.nn.Module, data: PairData,
                  config: TieDPOConfig, *, seed: int = 0, checkpoint_every: int = 0,
                  on_checkpoint: Callable[[int, torch.nn.Module], None] | None = None,
                  ) -> torch.nn.Module:
    """Train a copy of ``policy`` with a (tie-aware) DPO-family loss; return the trained copy.

    ``config.tie_handling``: ``model`` feeds ties to a tie-aware loss (``rao_kupper``,
    ``davidson``, ``todo``); ``drop`` discards them; ``random_winner`` assigns coin-flip winners.
    ``on_checkpoint(step, model)`` is called at step 0 and after every ``checkpoint_every``
    steps (and after the last one), in eval mode and without gradients, e.g. to record a
    reward-vs-KL path for comparisons at matched KL.
    """
    if checkpoint_every < 0:
        raise ValueError(f"checkpoint_every must be >= 0, got {checkpoint_every}")
    rng = np.random.default_rng(seed)
    keep, swap, tie = resolve_ties(data.labels, config.tie_handling, rng)
    idx = torch.as_tensor(np.flatnonzero(keep))
    swap_t = torch.as_tensor(swap)[idx].unsqueeze(1)
    chosen = torch.where(swap_t, data.second[idx], data.first[idx])
    rejected = torch.where(swap_t, data.first[idx], data.second[idx])
    mask = data.completion_mask[idx]
    is_tie = torch.as_tensor(tie)[idx]
    model = copy.deepcopy(policy).train()

    def checkpoint(step: int) -> None:
        if on_checkpoint is not None:
            model.eval()
            with torch.no_grad():
                on_checkpoint(step, model)
            model.train()

    checkpoint(0)
    if len(idx) == 0:
        return model.eval()
    with torch.no_grad():
        ref.eval()
        ref_c = completion_logps(ref, chosen, mask, config.loss_type)
        ref_r = completion_logps(ref, rejected, mask, config.loss_type)
    gen = torch.Generator().manual_seed(seed)
    # foreach: the multi-tensor Adam update, the same arithmetic as the per-tensor loop (bit for bit)
    opt = torch.optim.Adam(model.parameters(), lr=config.learning_rate, foreach=True)
    n = len(idx)
    for step in range(1, config.steps + 1):
        b = torch.randint(n, (min(config.batch_size, n),), generator=gen)
        pol_c = completion_logps(model, chosen[b], mask[b], config.loss_type)
        pol_r = completion_logps(model, rejected[b], mask[b], config.loss_type)
        loss = preference_loss(pol_c - ref_c[b], pol_r - ref_r[b], is_tie[b], config.loss_type,
                               config.beta, label_smoothing=config.label_smoothing,
                               tie_prob_at_zero=config.tie_prob_at_zero).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if checkpoint_every and (step % checkpoint_every == 0 or step == config.steps):
            checkpoint(step)
    return model.eval()

"""Log-probabilities of completions under a causal LM: shared by SFT, GRPO and preference losses."""

from __future__ import annotations

import torch
from torch.nn import functional as F


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``log p(targets[b, t] | ...)`` read from ``logits[b, t]``.

    Parameters
    ----------
    logits : Tensor, shape (B, T, V)
    targets : Tensor, shape (B, T), int64

    Returns
    -------
    Tensor, shape (B, T)
    """
    if logits.shape[:2] != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} disagree")
    return torch.gather(F.log_softmax(logits.float(), dim=-1), -1, targets.unsqueeze(-1)).squeeze(-1)


def sequence_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    *,
    attention_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum and per-token log-probs of the completion tokens of ``input_ids``.

    The model predicts token ``t`` from tokens ``< t``; ``completion_mask[b, t] = 1`` marks the
    tokens whose probability counts (the completion, not the prompt or padding).

    Parameters
    ----------
    model : module with ``model(idx) -> (logits, cache)`` (e.g. :class:`TinyCausalLM`)
    input_ids : Tensor, shape (B, T), int64 — prompt followed by completion (right-padded)
    completion_mask : Tensor, shape (B, T), bool or {0, 1}

    Returns
    -------
    total : Tensor, shape (B,) — sum over completion tokens of log p
    per_token : Tensor, shape (B, T - 1) — log p of token t+1, zero where not in the completion
    """
    if input_ids.shape != completion_mask.shape:
        raise ValueError("input_ids and completion_mask must have the same shape")
    if input_ids.shape[1] < 2:
        raise ValueError("need at least two tokens (a prompt token and a completion token)")
    mask = completion_mask[:, 1:].to(torch.float32)
    if attention_mask is not None:
        B, T = input_ids.shape
        keep = attention_mask.bool()
        causal = torch.ones(T, T, dtype=torch.bool, device=input_ids.device).tril()
        attn = (causal.unsqueeze(0) & keep.unsqueeze(1)).unsqueeze(1)  # (B, 1, T, T)
        # a fully masked row (left padding) would give NaN: let it see itself
        attn = attn | torch.eye(T, dtype=torch.bool, device=input_ids.device)
        logits, _ = model(input_ids, attn_mask=attn)
    else:
        logits, _ = model(input_ids)
    per_token = token_logprobs(logits[:, :-1], input_ids[:, 1:]) * mask
    return per_token.sum(dim=1), per_token

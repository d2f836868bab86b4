"""Batched, KV-cached sampling from a causal LM, with forced prefix tokens and stop ids.

Layout convention (shared with :mod:`icml26.core.lm.sft` and :mod:`icml26.core.lm.grpo`): prompts
are **left-padded** to a common ``prompt_length`` and the completion starts at position
``prompt_length``. :class:`~icml26.core.lm.model.TinyCausalLM` uses learned absolute positions,
so a prompt must sit at the same positions in training and in sampling: pass the same
``prompt_length`` to SFT, generation and GRPO (padding keys are masked out of attention).

The returned log-probabilities are those of the *model* distribution (temperature 1, no top-k),
i.e. log pi_theta(token | context) -- the quantity a policy-gradient ratio needs -- also for forced
tokens, which are flagged in ``forced_mask``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.nn import functional as F


@dataclass
class GenerationOutput:
    """What :func:`generate` returns (B prompts, P = prompt_length, T = generated steps).

    Attributes
    ----------
    prompt_ids : Tensor, shape (B, P), int64 -- left-padded prompts
    prompt_mask : Tensor, shape (B, P), bool -- True on real prompt tokens
    completion_ids : Tensor, shape (B, T), int64 -- generated tokens, ``pad_id`` after a stop
    completion_mask : Tensor, shape (B, T), bool -- True on generated tokens (stop token included)
    logprobs : Tensor, shape (B, T), float32 -- log pi(token | context), 0 where masked
    forced_mask : Tensor, shape (B, T), bool -- True where the token was forced, not sampled
    finished : Tensor, shape (B,), bool -- True when the row emitted a stop id
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    logprobs: torch.Tensor
    forced_mask: torch.Tensor
    finished: torch.Tensor

    @property
    def input_ids(self) -> torch.Tensor:
        """Prompt and completion concatenated, shape (B, P + T)."""
        return torch.cat([self.prompt_ids, self.completion_ids], dim=1)

    @property
    def attention_mask(self) -> torch.Tensor:
        """Real-token mask of :attr:`input_ids`, shape (B, P + T), bool."""
        return torch.cat([self.prompt_mask, self.completion_mask], dim=1)

    def completions(self) -> list[list[int]]:
        """The generated token ids of each row, without padding."""
        return [row[m].tolist() for row, m in zip(self.completion_ids, self.completion_mask, strict=True)]


def left_pad(
    sequences: Sequence[Sequence[int]],
    pad_id: int,
    length: int | None = None,
    *,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad token lists to ``length`` (default: the longest).

    Returns
    -------
    ids : Tensor, shape (B, length), int64
    mask : Tensor, shape (B, length), bool -- True on real tokens

    Raises
    ------
    ValueError
        On an empty list, an empty sequence or a sequence longer than ``length``.
    """
    if len(sequences) == 0:
        raise ValueError("need at least one sequence")
    lengths = [len(s) for s in sequences]
    if min(lengths) == 0:
        raise ValueError("empty prompt: every prompt needs at least one token (e.g. <bos>)")
    width = max(lengths) if length is None else int(length)
    if max(lengths) > width:
        raise ValueError(f"a prompt of {max(lengths)} tokens is longer than prompt_length={width}")
    ids = torch.full((len(sequences), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.bool)
    for i, s in enumerate(sequences):
        if len(s):
            ids[i, width - len(s):] = torch.as_tensor(list(s), dtype=torch.long)
            mask[i, width - len(s):] = True
    return ids.to(device), mask.to(device)


def prefill_mask(key_mask: torch.Tensor) -> torch.Tensor:
    """Causal attention mask that also hides padding keys, shape (B, 1, T, T), bool.

    A query on a padding position may see itself only (a fully masked row would give NaN).
    """
    B, T = key_mask.shape
    causal = torch.ones(T, T, dtype=torch.bool, device=key_mask.device).tril()
    attn = causal.unsqueeze(0) & key_mask.bool().unsqueeze(1)
    attn = attn | torch.eye(T, dtype=torch.bool, device=key_mask.device)
    return attn.unsqueeze(1)


def _sample(logits: torch.Tensor, temperature: float, top_k: int | None,
            generator: torch.Generator | None) -> torch.Tensor:
    if temperature == 0.0:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


@torch.no_grad()
def generate(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    pad_id: int,
    stop_ids: Sequence[int] = (),
    temperature: float = 1.0,
    top_k: int | None = None,
    force_prefix: Sequence[Sequence[int] | None] | None = None,
    prompt_length: int | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
) -> GenerationOutput:
    """Sample completions for a batch of prompts, one token per step with a KV cache.

    Parameters
    ----------
    model : module with ``model(idx, past=None, attn_mask=None) -> (logits, present)``
        e.g. :class:`~icml26.core.lm.model.TinyCausalLM`; needs ``model.config.block_size``.
    prompts : sequence of B token-id lists (each non-empty)
    max_new_tokens : int >= 1
        ``prompt_length + max_new_tokens`` must fit in the model's context.
    pad_id : int
        Token used for padding (left of prompts, right of finished completions).
    stop_ids : sequence of int
        Generation of a row ends after it emits one of these (the stop token is kept and masked in).
    temperature : float >= 0
        Softmax temperature of the *sampling* distribution; 0 means greedy (argmax).
    top_k : int or None
        Sample among the ``top_k`` most likely tokens only.
    force_prefix : sequence of B token lists (or None entries), optional
        Tokens written as the first completion tokens of each row instead of being sampled
        (e.g. a thinking-mode token, AdaptThink arXiv:2505.13417 Sec. 3.2). Their model
        log-probabilities are still returned; ``forced_mask`` flags them.
    prompt_length : int, optional
        Left-pad prompts to this length (default: the longest prompt). Use the same value in
        training so that positions agree.
    generator : torch.Generator, optional
        Source of randomness (runs are deterministic for a seeded generator).
    use_cache : bool
        If False, recompute the whole sequence at every step (reference implementation; slow).

    Returns
    -------
    GenerationOutput

    Examples
    --------
    >>> import torch
    >>> from icml26.core.lm.model import LMConfig, TinyCausalLM
    >>> model = TinyCausalLM(LMConfig(vocab_size=8, block_size=16))
    >>> out = generate(model, [[1, 3], [1]], max_new_tokens=4, pad_id=0, temperature=0.0)
    >>> tuple(out.completion_ids.shape), tuple(out.prompt_ids.shape)
    ((2, 4), (2, 2))
    """
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
    if not (temperature >= 0.0) or temperature != temperature:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
    B = len(prompts)
    if force_prefix is not None and len(force_prefix) != B:
        raise ValueError(f"force_prefix has {len(force_prefix)} entries for {B} prompts")
    device = next(model.parameters()).device
    ids, pmask = left_pad(prompts, pad_id, prompt_length, device=device)
    P = ids.shape[1]
    block = int(model.config.block_size)
    if P + max_new_tokens > block:
        raise ValueError(f"prompt_length {P} + max_new_tokens {max_new_tokens} exceeds the model's "
                         f"context of {block} tokens; shorten the prompts or max_new_tokens")
    forced = [list(f) if f is not None else [] for f in (force_prefix or [None] * B)]
    if any(len(f) > max_new_tokens for f in forced):
        raise ValueError("a forced prefix is longer than max_new_tokens")
    max_forced = max((len(f) for f in forced), default=0)
    forced_tok = torch.full((B, max(max_forced, 1)), pad_id, dtype=torch.long, device=device)
    forced_on = torch.zeros((B, max(max_forced, 1)), dtype=torch.bool, device=device)
    for i, f in enumerate(forced):
        if f:
            forced_tok[i, :len(f)] = torch.as_tensor(f, dtype=torch.long)
            forced_on[i, :len(f)] = True
    stops = torch.as_tensor(list(stop_ids), dtype=torch.long, device=device)

    was_training = model.training
    model.eval()
    out_ids = torch.full((B, max_new_tokens), pad_id, dtype=torch.long, device=device)
    out_mask = torch.zeros((B, max_new_tokens), dtype=torch.bool, device=device)
    out_lp = torch.zeros((B, max_new_tokens), dtype=torch.float32, device=device)
    out_forced = torch.zeros((B, max_new_tokens), dtype=torch.bool, device=device)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    key_mask = pmask
    try:
        logits, past = model(ids, attn_mask=prefill_mask(pmask))
        last = logits[:, -1]
        T_used = 0
        for t in range(max_new_tokens):
            logp = F.log_softmax(last.float(), dim=-1)
            tok = _sample(last.float(), temperature, top_k, generator)
            if t < max_forced:
                tok = torch.where(forced_on[:, t], forced_tok[:, t], tok)
                out_forced[:, t] = forced_on[:, t] & ~done
            alive = ~done
            tok = torch.where(alive, tok, torch.full_like(tok, pad_id))
            out_ids[:, t] = tok
            out_mask[:, t] = alive
            out_lp[:, t] = torch.where(alive, logp.gather(-1, tok.unsqueeze(-1)).squeeze(-1),
                                       torch.zeros_like(out_lp[:, t]))
            T_used = t + 1
            if stops.numel():
                done = done | (alive & torch.isin(tok, stops))
            if bool(done.all()) or t == max_new_tokens - 1:
                break
            key_mask = torch.cat([key_mask, alive.unsqueeze(1)], dim=1)
            if use_cache:
                step_mask = key_mask.unsqueeze(1).unsqueeze(1)  # (B, 1, 1, P + t + 1)
                logits, past = model(tok.unsqueeze(1), past=past, attn_mask=step_mask)
                last = logits[:, -1]
            else:
                full = torch.cat([ids, out_ids[:, :t + 1]], dim=1)
                logits, _ = model(full, attn_mask=prefill_mask(key_mask))
                last = logits[:, -1]
    finally:
        model.train(was_training)
    return GenerationOutput(
        prompt_ids=ids,
        prompt_mask=pmask,
        completion_ids=out_ids[:, :T_used],
        completion_mask=out_mask[:, :T_used],
        logprobs=out_lp[:, :T_used],
        forced_mask=out_forced[:, :T_used],
        finished=done,
    )

"""Evaluation: perplexity (nats/char) and likelihood-ranking probe accuracy (lm-eval protocol).

The paper reports WikiText2 perplexity and the average accuracy of seven zero-shot tasks scored
by log-likelihood ranking. Laptop-scale stand-in: held-out char-level text; a probe item is a
context window followed by its true continuation and ``n_choices - 1`` continuations of the same
length taken from other places of the held-out text; the model is right when the true one has the
largest summed log-likelihood.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from icml26.core.lm.train import evaluate_loss


def nats_per_token(model: nn.Module, tokens: torch.Tensor, block_size: int, max_windows: int = 64) -> float:
    """Mean next-token cross-entropy on fixed windows (core.lm's evaluation)."""
    return evaluate_loss(model, tokens, block_size, max_windows)


def make_probes(tokens: torch.Tensor, n_items: int, ctx_len: int, cont_len: int, n_choices: int = 4,
                seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Probe items from held-out ``tokens``.

    Returns
    -------
    seqs : LongTensor (n_items, n_choices, ctx_len + cont_len); choice 0 is the true continuation
    answer : LongTensor (n_items,), the position of the true continuation after a seeded shuffle
    """
    n = len(tokens) - ctx_len - cont_len
    if n < n_items + n_choices or n_items < 1 or n_choices < 2:
        raise ValueError("not enough held-out tokens for the probes")
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, n, (n_items,), generator=g)
    seqs = torch.empty(n_items, n_choices, ctx_len + cont_len, dtype=torch.long)
    answer = torch.empty(n_items, dtype=torch.long)
    for i, s in enumerate(starts.tolist()):
        ctx = tokens[s:s + ctx_len]
        conts = [tokens[s + ctx_len:s + ctx_len + cont_len]]
        while len(conts) < n_choices:
            o = int(torch.randint(0, n, (1,), generator=g)) + ctx_len
            c = tokens[o:o + cont_len]
            if not any(torch.equal(c, c0) for c0 in conts):
                conts.append(c)
        perm = torch.randperm(n_choices, generator=g)
        answer[i] = int((perm == 0).nonzero())
        for j, p in enumerate(perm.tolist()):
            seqs[i, j] = torch.cat([ctx, conts[p]])
    return seqs, answer


@torch.no_grad()
def probe_scores(model: nn.Module, seqs: torch.Tensor, cont_len: int, batch_size: int = 64) -> torch.Tensor:
    """Summed log-likelihood of each choice's continuation, shape (n_items, n_choices).

    The shared context runs once per item; the choices continue from its KV cache (the same
    numbers as scoring each full sequence, at a fraction of the cost; MX blocks run along the
    feature axis of each token, so batching does not change the quantized values).
    """
    n_items, n_choices, L = seqs.shape
    ctx_len = L - cont_len
    out = []
    for i in range(0, n_items, batch_size):
        s = seqs[i:i + batch_size]
        b = len(s)
        ctx, conts = s[:, 0, :ctx_len], s[:, :, ctx_len:]
        if not bool((s[:, :, :ctx_len] == ctx[:, None]).all()):
            raise ValueError("every choice of an item must share its context")
        logits, past = model(ctx)
        first = F.log_softmax(logits[:, -1], -1)  # (b, V): the first continuation token
        score = first.gather(-1, conts[:, :, 0]).clone()  # (b, K)
        if cont_len > 1:
            past = [(k.repeat_interleave(n_choices, 0), v.repeat_interleave(n_choices, 0)) for k, v in past]
            flat = conts.reshape(b * n_choices, cont_len)
            lg, _ = model(flat[:, :-1], past)
            lp = F.log_softmax(lg, -1).gather(-1, flat[:, 1:, None])[..., 0].sum(-1)
            score = score + lp.reshape(b, n_choices)
        out.append(score)
    return torch.cat(out)


@torch.no_grad()
def probe_accuracy(model: nn.Module, seqs: torch.Tensor, answer: torch.Tensor, cont_len: int,
                   batch_size: int = 64) -> float:
    """Fraction of items whose true continuation has the largest summed log-likelihood.

    Parameters
    ----------
    model : maps (B, T) ids (and an optional KV cache) to ``(logits, cache)``
    seqs : LongTensor (n_items, n_choices, ctx_len + cont_len), from :func:`make_probes`
    answer : LongTensor (n_items,)
    cont_len : int
    """
    was = model.training
    model.eval()
    s = probe_scores(model, seqs, cont_len, batch_size)
    model.train(was)
    return float((s.argmax(1) == answer).float().mean())


@torch.no_grad()
def probe_metrics(model: nn.Module, seqs: torch.Tensor, answer: torch.Tensor, cont_len: int,
                  batch_size: int = 64) -> tuple[float, float]:
    """``(accuracy, soft accuracy)`` of one scoring pass. Soft accuracy is the likelihood-based
    version of the same ranking: the mean over items of the probability the model gives the true
    continuation among the choices, ``softmax(summed log-likelihoods)[answer]`` (its expected
    accuracy when sampling a choice in proportion to its likelihood); it moves with every change
    of the scores, not only with a flipped argmax, so it needs far fewer items for the same s.e."""
    was = model.training
    model.eval()
    s = probe_scores(model, seqs, cont_len, batch_size)
    model.train(was)
    acc = float((s.argmax(1) == answer).float().mean())
    soft = float(torch.softmax(s.double(), 1).gather(1, answer[:, None]).mean())
    return acc, soft


__all__ = ["make_probes", "nats_per_token", "probe_accuracy", "probe_metrics", "probe_scores"]

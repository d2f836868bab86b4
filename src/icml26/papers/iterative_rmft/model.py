"""A numerical decision transformer: the history of (action, reward) in, K action logits out.

Input per round t (brief's spec; the paper's exact I/O was not reachable): the one-hot of the
previous action over ``k_max`` slots, the previous reward, and t / T (zeros at t = 0). A linear
embedding, learned position embeddings, pre-norm causal self-attention blocks and a head of
``k_max`` logits; slots beyond the instance's K are masked to -inf, so one model serves several
action-space sizes. Rollouts decode one round at a time with a key/value cache
(:meth:`NumericalDecisionTransformer.step`), equal to the full causal forward (tested). Sizes are
ours (laptop scale): d = 32, 2 layers, 2 heads.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from icml26.core.validation import check_positive_int


class _Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        if d % heads:
            raise ValueError(f"d_model ({d}) must be divisible by n_heads ({heads})")
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, h: torch.Tensor, cache: list | None = None) -> torch.Tensor:
        b, n, d = h.shape
        q, k, v = self.qkv(self.ln1(h)).split(d, dim=-1)
        q, k, v = (z.view(b, n, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            if cache:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[:] = [k, v]
        # a single new query attends to the whole cache; a full sequence is causal
        att = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None and n > 1)
        h = h + self.proj(att.transpose(1, 2).reshape(b, n, d))
        return h + self.mlp(self.ln2(h))


class NumericalDecisionTransformer(nn.Module):
    def __init__(self, k_max: int = 10, d_model: int = 32, n_layers: int = 2, n_heads: int = 2,
                 max_horizon: int = 128) -> None:
        super().__init__()
        self.k_max = check_positive_int(k_max, "k_max", minimum=2)
        self.max_horizon = check_positive_int(max_horizon, "max_horizon")
        self.inp = nn.Linear(self.k_max + 2, d_model)
        self.pos = nn.Embedding(self.max_horizon, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, n_heads) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, self.k_max)

    @staticmethod
    def features(actions: torch.Tensor, rewards: torch.Tensor, horizon: int, k_max: int) -> torch.Tensor:
        """(B, t) previous actions / rewards -> (B, t + 1, k_max + 2) inputs for rounds 0..t."""
        b, t = actions.shape
        x = torch.zeros(b, t + 1, k_max + 2)
        if t:
            x[:, 1:, :k_max] = F.one_hot(actions.long(), k_max).float()
            x[:, 1:, k_max] = rewards.float()
        x[:, :, k_max + 1] = torch.arange(t + 1).float() / horizon
        return x

    def _check(self, x: torch.Tensor, k: int, start: int) -> None:
        if x.ndim != 3 or x.shape[-1] != self.k_max + 2:
            raise ValueError(f"x must have shape (B, L, {self.k_max + 2}), got {tuple(x.shape)}")
        if not 2 <= k <= self.k_max:
            raise ValueError(f"k must lie in [2, {self.k_max}], got {k}")
        if start + x.shape[1] > self.max_horizon:
            raise ValueError(f"sequence length {start + x.shape[1]} exceeds max_horizon {self.max_horizon}")

    def _logits(self, h: torch.Tensor, k: int) -> torch.Tensor:
        logits = self.head(self.norm(h))
        if k < self.k_max:
            logits = logits.masked_fill(torch.arange(self.k_max, device=h.device) >= k, float("-inf"))
        return logits

    def forward(self, x: torch.Tensor, k: int) -> torch.Tensor:
        """Inputs (B, L, k_max + 2) -> logits (B, L, k_max) with slots >= k masked out."""
        self._check(x, k, 0)
        h = self.inp(x) + self.pos(torch.arange(x.shape[1], device=x.device))
        for block in self.blocks:
            h = block(h)
        return self._logits(h, k)

    def new_cache(self) -> list[list]:
        return [[] for _ in self.blocks]

    def step(self, x_t: torch.Tensor, k: int, t: int, cache: list[list]) -> torch.Tensor:
        """One round with a key/value cache: inputs (B, k_max + 2) of round ``t`` -> (B, k_max)."""
        x = x_t[:, None, :]
        self._check(x, k, t)
        h = self.inp(x) + self.pos(torch.tensor([t], device=x.device))
        for block, c in zip(self.blocks, cache, strict=True):
            h = block(h, c)
        return self._logits(h, k)[:, 0]

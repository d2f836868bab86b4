"""A tiny, readable causal transformer (nanoGPT-like) with a KV cache.

Pre-LN decoder blocks (LayerNorm or RMSNorm), learned absolute positions, GELU MLP, untied head.
Built from a config only: no hub, no download. ``forward`` accepts a ``past`` KV cache so that
generation costs one token per step; ``inputs_embeds`` lets numerical inputs replace token
embeddings (for papers whose "tokens" are vectors).

Shapes: ``idx`` (B, T) int64; logits (B, T, vocab_size); ``past``: one ``(k, v)`` per layer,
each (B, n_head, T_past, head_dim).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

KVCache = list[tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class LMConfig:
    """Hyperparameters of :class:`TinyCausalLM` (defaults: a ~0.2M-parameter laptop model)."""

    vocab_size: int = 64
    block_size: int = 128
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0
    bias: bool = True
    norm: str = "layernorm"  # or "rmsnorm"

    def __post_init__(self) -> None:
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} must be divisible by n_head={self.n_head}")
        if min(self.vocab_size, self.block_size, self.n_layer, self.n_head) < 1:
            raise ValueError("vocab_size, block_size, n_layer and n_head must be positive")
        if self.norm not in {"layernorm", "rmsnorm"}:
            raise ValueError(f"norm must be 'layernorm' or 'rmsnorm', got {self.norm!r}")


def _norm(config: LMConfig) -> nn.Module:
    if config.norm == "rmsnorm":
        return nn.RMSNorm(config.n_embd)
    return nn.LayerNorm(config.n_embd, bias=config.bias)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = config.dropout

    def forward(self, x: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None = None,
                attn_mask: torch.Tensor | None = None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        shape = (B, T, self.n_head, C // self.n_head)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        T_total = k.shape[2]
        if attn_mask is None:
            # causal mask for the new queries against all keys (past + new)
            causal = torch.ones(T, T_total, dtype=torch.bool, device=x.device).tril(T_total - T)
            attn_mask = causal
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                           dropout_p=self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y), (k, v)


class Block(nn.Module):
    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        self.ln1 = _norm(config)
        self.attn = CausalSelfAttention(config)
        self.ln2 = _norm(config)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias),
            nn.Dropout(config.dropout),
        )

    def forward(self, x, past=None, attn_mask=None):
        a, present = self.attn(self.ln1(x), past, attn_mask)
        x = x + a
        x = x + self.mlp(self.ln2(x))
        return x, present


class TinyCausalLM(nn.Module):
    """A small GPT. ``forward(idx, past=None) -> (logits, present)``.

    Examples
    --------
    >>> import torch
    >>> model = TinyCausalLM(LMConfig(vocab_size=10, block_size=16))
    >>> logits, cache = model(torch.zeros(2, 5, dtype=torch.long))
    >>> tuple(logits.shape), len(cache)
    ((2, 5, 10), 2)
    """

    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = _norm(config)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2 scaled init of residual projections
            if name.endswith("proj.weight") or name.endswith("mlp.2.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(
        self,
        idx: torch.Tensor | None = None,
        past: KVCache | None = None,
        *,
        inputs_embeds: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        position_offset: int | None = None,
    ) -> tuple[torch.Tensor, KVCache]:
        if (idx is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of idx and inputs_embeds")
        if idx is not None:
            if idx.dim() != 2 or idx.dtype != torch.long:
                raise ValueError(f"idx must be a (B, T) int64 tensor, got {tuple(idx.shape)} {idx.dtype}")
            if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= self.config.vocab_size):
                raise ValueError(f"token ids must lie in [0, {self.config.vocab_size})")
            x = self.tok_emb(idx)
        else:
            x = inputs_embeds
        B, T, _ = x.shape
        start = position_offset if position_offset is not None else (past[0][0].shape[2] if past else 0)
        if start + T > self.config.block_size:
            raise ValueError(f"sequence of {start + T} tokens exceeds block_size={self.config.block_size}")
        pos = torch.arange(start, start + T, device=x.device)
        x = self.drop(x + self.pos_emb(pos))
        present: KVCache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, past[i] if past else None, attn_mask)
            present.append(kv)
        return self.head(self.ln_f(x)), present

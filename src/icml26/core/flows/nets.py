"""Velocity networks: the protocol every net follows, an MLP and a small conv net.

Protocol: ``model(x, t, cond=None) -> v`` with ``x`` of shape ``(B, *shape)``, ``t`` of shape
``(B,)`` in [0, 1] and ``v`` of the same shape as ``x`` (as in torchcfm's models and
``flow_matching``'s ``ModelWrapper``). Anything callable with that signature (an analytic field,
a wrapped pretrained net) works with :func:`~icml26.core.flows.integrate` and the losses.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.modules import module as _m

_FREQS: dict[tuple[int, float], Tensor] = {}


@runtime_checkable
class VelocityField(Protocol):
    """``(x (B, *shape), t (B,), cond=None) -> v (B, *shape)``."""

    def __call__(self, x: Tensor, t: Tensor, cond: Tensor | None = None) -> Tensor: ...


def sinusoidal_embedding(t: Tensor, dim: int, max_period: float = 10_000.0) -> Tensor:
    """Transformer-style sinusoidal embedding of times (DiT/SiT ``TimestepEmbedder``).

    Parameters
    ----------
    t : Tensor, shape (B,)
        Times in [0, 1]; scaled by 1000 first, as SiT does.
    dim : int
        Even embedding size.

    Returns
    -------
    Tensor, shape (B, dim)
    """
    if dim % 2:
        raise ValueError(f"embedding dim must be even, got {dim}")
    key = (int(dim), float(max_period))
    freqs = _FREQS.get(key)
    if freqs is None:  # computed once per (dim, max_period): the same tensor every call
        half = dim // 2
        freqs = _FREQS[key] = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32)
                                        / half)
    args = (1000.0 * t.float()).unsqueeze(1) * freqs  # = 1000 t[:, None] * freqs[None, :]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1).to(t.dtype if t.is_floating_point()
                                                                    else torch.float32)


class MLPVelocity(nn.Module):
    """MLP velocity field ``v(x, t[, cond])`` on flat vectors.

    Parameters
    ----------
    dim : int
        Data dimension ``D``; input ``x`` has shape ``(B, D)``.
    hidden : int, default 256
    depth : int, default 4
        Number of hidden layers.
    t_embed_dim : int, default 64
        Size of the sinusoidal time embedding (concatenated to the input).
    cond_dim : int, default 0
        Size of an optional conditioning vector (concatenated too).
    """

    def __init__(self, dim: int, hidden: int = 256, depth: int = 4, t_embed_dim: int = 64,
                 cond_dim: int = 0) -> None:
        super().__init__()
        if dim <= 0 or hidden <= 0 or depth <= 0 or cond_dim < 0:
            raise ValueError("dim, hidden and depth must be positive and cond_dim >= 0")
        self.dim, self.cond_dim, self.t_embed_dim = dim, cond_dim, t_embed_dim
        layers: list[nn.Module] = []
        width = dim + t_embed_dim + cond_dim
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.SiLU()]
            width = hidden
        layers.append(nn.Linear(width, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor, t: Tensor, cond: Tensor | None = None) -> Tensor:
        if x.dim() != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (B, {self.dim}), got {tuple(x.shape)}")
        if t.dim() == 0:
            t = t.expand(x.shape[0])
        parts = [x, sinusoidal_embedding(t, self.t_embed_dim).to(x.dtype)]
        if self.cond_dim:
            if cond is None or cond.shape != (x.shape[0], self.cond_dim):
                raise ValueError(f"cond must have shape (B, {self.cond_dim})")
            parts.append(cond.to(x.dtype))
        h = torch.cat(parts, dim=-1)
        # the layers' own functions, without nn.Module's call machinery (the same arithmetic; that
        # machinery dominates the cost of a small batch); a hook anywhere, or a layer of another
        # type, takes the module path
        if (_m._global_forward_hooks or _m._global_forward_pre_hooks or _m._global_backward_hooks
                or _m._global_backward_pre_hooks or self.net._forward_hooks
                or self.net._forward_pre_hooks or self.net._backward_hooks
                or self.net._backward_pre_hooks):
            return self.net(h)
        x_in = h
        for layer in self.net._modules.values():
            if (layer._forward_hooks or layer._forward_pre_hooks or layer._backward_hooks
                    or layer._backward_pre_hooks):
                return self.net(x_in)
            kind = type(layer)
            if kind is nn.Linear:
                p = layer._parameters
                h = F.linear(h, p["weight"], p["bias"])
            elif kind is nn.SiLU:
                h = F.silu(h)
            else:
                return self.net(x_in)
        return h


class TinyConvVelocity(nn.Module):
    """A small conv velocity net for ``(B, C, S, S)`` images (8x8 digits, small phantoms).

    Three 3x3 conv blocks with GroupNorm + SiLU; the time embedding is added per channel
    (FiLM-free shift, as in the DDPM U-Net's residual blocks). Accepts flat input
    ``(B, C*S*S)`` too and returns the same shape it was given.

    Parameters
    ----------
    channels : int, default 1
    size : int, default 8
    width : int, default 64
    t_embed_dim : int, default 64
    """

    def __init__(self, channels: int = 1, size: int = 8, width: int = 64,
                 t_embed_dim: int = 64) -> None:
        super().__init__()
        self.channels, self.size, self.t_embed_dim = channels, size, t_embed_dim
        groups = 8 if width % 8 == 0 else 1
        self.inp = nn.Conv2d(channels, width, 3, padding=1)
        self.temb = nn.Sequential(nn.Linear(t_embed_dim, width), nn.SiLU(), nn.Linear(width, width))
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.GroupNorm(groups, width), nn.SiLU(), nn.Conv2d(width, width, 3, padding=1))
            for _ in range(3)
        )
        self.out = nn.Sequential(nn.GroupNorm(groups, width), nn.SiLU(),
                                 nn.Conv2d(width, channels, 3, padding=1))

    def forward(self, x: Tensor, t: Tensor, cond: Tensor | None = None) -> Tensor:
        flat = x.dim() == 2
        c, s = self.channels, self.size
        if flat:
            if x.shape[1] != c * s * s:
                raise ValueError(f"flat x must have {c * s * s} features, got {x.shape[1]}")
            x = x.reshape(-1, c, s, s)
        elif x.shape[1:] != (c, s, s):
            raise ValueError(f"x must have shape (B, {c}, {s}, {s}), got {tuple(x.shape)}")
        if t.dim() == 0:
            t = t.expand(x.shape[0])
        h = self.inp(x)
        emb = self.temb(sinusoidal_embedding(t, self.t_embed_dim).to(x.dtype))[:, :, None, None]
        for block in self.blocks:
            h = h + block(h + emb)
        v = self.out(h)
        return v.reshape(v.shape[0], -1) if flat else v

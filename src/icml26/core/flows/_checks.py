"""Input validation shared by the flow core (clear errors instead of silent wrong answers)."""

from __future__ import annotations

import torch
from torch import Tensor


def check_tensor(x, name: str, *, min_dim: int = 1) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions (batch first), got "
                         f"shape {tuple(x.shape)}")


def check_finite(x: Tensor, name: str) -> None:
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or inf")


def check_time(t, batch: int) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"t must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 1 or t.shape[0] != batch:
        raise ValueError(f"t must have shape ({batch},), got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError("t contains NaN or inf")
    if bool((t < 0).any()) or bool((t > 1).any()):
        raise ValueError(f"t must lie in [0, 1], got range [{float(t.min()):.4g}, "
                         f"{float(t.max()):.4g}]")

"""The conditional flow-matching (CFM) loss with optional time weighting and masks.

    L_CFM(theta) = E_{t, x0, x1} w(t) || v_theta(x_t, t) - u_t(x0, x1) ||^2

(Lipman et al. 2023, arXiv:2210.02747, Eq. 9 and 22; Tong et al. 2024, arXiv:2302.00482, Eq. 10).
The squared error is averaged over the data dimensions, as torchcfm's and SiT's training loops do.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from icml26.core.validation import check_finite, check_tensor

from .paths import CondOTPath, PathSample, sample_t


def draw_path(x1: Tensor, *, path: CondOTPath | None = None, t: Tensor | None = None,
              x0: Tensor | None = None, generator: torch.Generator | None = None) -> PathSample:
    """Draw (or take) ``t`` and ``x0`` for a batch ``x1`` and return the path sample.

    ``t ~ U[0, 1]`` and ``x0 ~ N(0, I)`` unless given.
    """
    check_tensor(x1, "x1", min_dim=2)
    path = CondOTPath() if path is None else path
    if x0 is None:
        x0 = torch.randn(x1.shape, generator=generator, dtype=x1.dtype)
    if t is None:
        t = sample_t(x1.shape[0], generator=generator, dtype=x1.dtype)
    return path.sample(x0, x1, t)


def masked_sq_error(v: Tensor, u: Tensor, mask: Tensor | None = None) -> Tensor:
    """Per-sample mean squared error over the non-batch dimensions.

    Parameters
    ----------
    v, u : Tensor, shape (B, *shape)
    mask : Tensor, optional
        Broadcastable to ``(B, *shape)``; 1 marks entries that count. Each sample's error is the
        mean over its counted entries (a sample with none counts 0).

    Returns
    -------
    Tensor, shape (B,)
    """
    err = (v - u) ** 2
    dims = tuple(range(1, err.dim()))
    if mask is None:
        return err.mean(dim=dims)
    m = torch.broadcast_to(mask.to(err.dtype), err.shape)
    return (err * m).sum(dim=dims) / m.sum(dim=dims).clamp_min(1.0)


def cfm_loss(model: Callable[..., Tensor], x1: Tensor, cond: Tensor | None = None, *,
             path: CondOTPath | None = None, t: Tensor | None = None, x0: Tensor | None = None,
             weight: Callable[[Tensor], Tensor] | None = None, mask: Tensor | None = None,
             generator: torch.Generator | None = None, reduction: str = "mean") -> Tensor:
    """Conditional flow-matching loss of ``model`` on a data batch.

    Parameters
    ----------
    model : callable
        ``model(x_t, t, cond) -> v`` (or ``model(x_t, t)`` when ``cond`` is None).
    x1 : Tensor, shape (B, *shape)
        Data batch.
    cond : Tensor, optional
        Conditioning passed through to the model.
    path : CondOTPath, optional
        Defaults to the straight path (``sigma_min = 0``).
    t : Tensor, shape (B,), optional
        Times; U[0, 1] if omitted.
    x0 : Tensor, shape (B, *shape), optional
        Noise; N(0, I) if omitted.
    weight : callable, optional
        ``w(t) -> (B,)`` non-negative weights of the per-sample errors.
    mask : Tensor, optional
        Entries that count (see :func:`masked_sq_error`).
    generator : torch.Generator, optional
        For ``t`` and ``x0``.
    reduction : {"mean", "none"}
        ``"none"`` returns the per-sample (weighted) losses, shape (B,).

    Returns
    -------
    Tensor
        Scalar (or shape (B,) with ``reduction="none"``).
    """
    if reduction not in ("mean", "none"):
        raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")
    s = draw_path(x1, path=path, t=t, x0=x0, generator=generator)
    v = call_model(model, s.x_t, s.t, cond)
    per = masked_sq_error(v, s.u_t, mask)
    if weight is not None:
        w = weight(s.t)
        if w.shape != per.shape:
            raise ValueError(f"weight(t) must return shape {tuple(per.shape)}, got {tuple(w.shape)}")
        per = per * w
    return per.mean() if reduction == "mean" else per


def call_model(model: Callable[..., Tensor], x: Tensor, t: Tensor, cond: Tensor | None) -> Tensor:
    """Evaluate a velocity field and check that its output has the input's shape and is finite."""
    v = model(x, t) if cond is None else model(x, t, cond)
    if not isinstance(v, Tensor) or v.shape != x.shape:
        shape = tuple(v.shape) if isinstance(v, Tensor) else type(v).__name__
        raise ValueError(f"velocity model returned {shape}, expected shape {tuple(x.shape)}")
    check_finite(v, "velocity model output")
    return v

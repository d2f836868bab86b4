"""Diagnosing the velocity deficit and tuning SSC (Li et al. 2026, arXiv:2605.14819, Fig. 1a)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from icml26.core.flows import CondOTPath, integrate

from .ssc import ScaleScheduleCorrector


def velocity_magnitude_profile(model: Callable[..., Tensor], data: Tensor,
                               t_grid: Sequence[float] | Tensor | None = None, *, n: int = 1024,
                               seed: int = 0, cond: Tensor | None = None) -> dict[str, np.ndarray]:
    """Learned speed ``E||v(x_t, t)||`` against the target speed ``E||x1 - x0||`` over t.

    The same ``n`` pairs ``(x0, x1)`` (``x1`` drawn from ``data`` with replacement) are used at
    every t, so the curves differ only through t.

    Parameters
    ----------
    model : callable
        ``model(x, t[, cond]) -> v``; a net or an exact field.
    data : Tensor, shape (N, *shape)
    t_grid : sequence of float, optional
        Times in [0, 1]; 21 points ``0, 0.05, ..., 1`` by default (the brief's grid).
    n : int, default 1024
    seed : int
        Seed of the pairs.

    Returns
    -------
    dict with arrays ``t`` (T,), ``speed`` (T,), ``target_speed`` (T,) and
    ``deficit = 1 - speed / target_speed`` (T,).
    """
    if not isinstance(data, Tensor) or data.dim() < 2:
        raise ValueError("data must be a tensor of shape (N, *shape)")
    if n <= 0:
        raise ValueError("n must be positive")
    grid = torch.linspace(0, 1, 21) if t_grid is None else torch.as_tensor(t_grid, dtype=torch.float64)
    if grid.dim() != 1 or bool((grid < 0).any()) or bool((grid > 1).any()):
        raise ValueError("t_grid must be a 1-D sequence of times in [0, 1]")
    g = torch.Generator().manual_seed(int(seed))
    x1 = data[torch.randint(0, data.shape[0], (n,), generator=g)]
    x0 = torch.randn(x1.shape, generator=g, dtype=x1.dtype)
    path = CondOTPath()
    speed, target = [], []
    with torch.no_grad():
        for tv in grid.tolist():
            t = torch.full((n,), tv, dtype=x1.dtype)
            s = path.sample(x0, x1, t)
            v = model(s.x_t, t) if cond is None else model(s.x_t, t, cond)
            speed.append(float(v.flatten(1).norm(dim=1).mean()))
            target.append(float(s.u_t.flatten(1).norm(dim=1).mean()))
    sp, tg = np.asarray(speed), np.asarray(target)
    return {"t": grid.numpy().astype(float), "speed": sp, "target_speed": tg, "deficit": 1.0 - sp / tg}


@dataclass(frozen=True)
class SSCTuning:
    """Result of :func:`tune_ssc`: the chosen ``alpha, beta`` and the whole validation table
    ``[(alpha, beta, score), ...]`` (lower score is better)."""

    alpha: float
    beta: float
    score: float
    table: list[tuple[float, float, float]]


def tune_ssc(model: Callable[..., Tensor], x0_val: Tensor, ref_val, metric: Callable[[Tensor, object], float],
             *, steps: int = 10, alphas: Sequence[float] = (0.05, 0.1, 0.2, 0.3, 0.5),
             betas: Sequence[float] = (1.0, 2.0, 3.0, 4.0), method: str = "euler",
             where: str = "early") -> SSCTuning:
    """Pick SSC's ``(alpha, beta)`` on a validation split by grid search.

    Parameters
    ----------
    model : callable
        The velocity field.
    x0_val : Tensor, shape (B, *shape)
        Validation noise (use noise that the final evaluation does not reuse).
    ref_val : array-like
        Held-out data the samples are scored against.
    metric : callable
        ``metric(samples, ref_val) -> float``, lower is better (e.g. classifier-FID, SW).
    steps : int
        NFE budget of the sampler being tuned.
    alphas, betas : sequences
        The grid (default: the brief's grid; the paper's values are not recoverable).

    Returns
    -------
    SSCTuning
    """
    if not alphas or not betas:
        raise ValueError("alphas and betas must be non-empty")
    table: list[tuple[float, float, float]] = []
    for a in alphas:
        for b in betas:
            xs = integrate(model, x0_val, steps=steps, method=method,
                           velocity_transform=ScaleScheduleCorrector(a, b, where))
            score = float(metric(xs, ref_val))
            table.append((float(a), float(b), score if math.isfinite(score) else math.inf))
    best = min(table, key=lambda r: r[2])
    return SSCTuning(alpha=best[0], beta=best[1], score=best[2], table=table)

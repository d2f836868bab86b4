"""The paper's theory contrast on a noisy quadratic: naive removal's error ∝ 1/η, ECO's bounded.

``f(θ) = ½ Σ_i λ_i (θ_i - θ*_i)²`` with gradient noise ``σ ξ``; weights stored on a uniform grid
of step δ (INT8 codes with a fixed scale δ = 2^-6); SGD with momentum β = 0.9 at a *constant*
learning rate η, for each η of a grid. Naive removal stalls as soon as ``|η m| < δ/2``: its
stationary distance to θ* grows like ``δ / (η λ)`` (paper abstract: "an error term that scales
inversely with the learning rate"); ECO converges to a neighbourhood whose radius does not grow
as η shrinks (paper's theorem, stated for a decaying η). ``lr_factor`` gives the decaying
schedule of the theorem; with a constant small η from θ = 0, naive rounding never moves at all
(the easy case), which is why both settings are reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from icml26.core.quant import QuantizedWeight, QuantSpec

from .optim import ECOSGD

TOY_ARMS = {
    "fp32": dict(weight_format=None, error_feedback=False),
    "naive_rtn": dict(rounding="nearest", error_feedback=False),
    "naive_sr": dict(rounding="stochastic", error_feedback=False),
    "eco_rtn": dict(rounding="nearest", error_feedback=True),
    "eco_sr": dict(rounding="stochastic", error_feedback=True),
    # negative control of ECO-RTN: the same injection with the error's values permuted over the
    # coordinates (same magnitudes, no information on where the error is)
    "sham_rtn": dict(rounding="nearest", error_feedback=True, sham_feedback=True),
}


def _values(p: torch.Tensor) -> torch.Tensor:
    return p.dequantize() if isinstance(p, QuantizedWeight) else p.detach()


@dataclass(frozen=True)
class ToyResult:
    """``error[arm]``: mean squared distance ``||θ̂ - θ*||² / d`` over the last quarter of steps,
    one value per learning rate of ``lrs``."""

    lrs: tuple[float, ...]
    error: dict[str, list[float]]


def run_quadratic_toy(lrs: tuple[float, ...], *, dim: int = 256, steps: int = 4000,
                      delta: float = 2.0**-6, noise: float = 0.5, momentum: float = 0.9,
                      lam_range: tuple[float, float] = (0.2, 1.0), seed: int = 0,
                      arms: tuple[str, ...] = tuple(TOY_ARMS),
                      lr_factor: Callable[[int], float] | None = None,
                      tail_fraction: float = 0.25) -> ToyResult:
    """Run every arm at every constant η on the same θ*, curvatures and gradient noise.

    Parameters
    ----------
    lrs : tuple of float
        Constant learning rates η (each a param group of one optimizer per arm).
    dim, steps, delta, noise, momentum, lam_range, seed
        Problem size, steps, grid step δ, gradient noise σ, β, range of curvatures λ_i, seed.
    lr_factor : callable, optional
        ``lr_factor(t)`` multiplies every η at step ``t`` (a decaying schedule: the theorem's
        setting); default constant η.
    tail_fraction : float
        The error is averaged over this last fraction of the steps.
    """
    if not 0 < tail_fraction <= 1:
        raise ValueError("tail_fraction must lie in (0, 1]")
    if not lrs or min(lrs) <= 0:
        raise ValueError("lrs must be a non-empty tuple of positive learning rates")
    unknown = set(arms) - set(TOY_ARMS)
    if unknown:
        raise ValueError(f"unknown toy arms {sorted(unknown)}")
    gen = torch.Generator().manual_seed(seed)
    lam = torch.empty(dim).uniform_(*lam_range, generator=gen)
    target = 0.5 * torch.randn(dim, generator=gen)
    spec = QuantSpec("int8", "tensor", fixed_scale=delta)
    params, opts = {}, {}
    for arm in arms:
        kw = dict(TOY_ARMS[arm])
        fmt = kw.pop("weight_format", spec)
        ps = [torch.zeros(dim, requires_grad=True) for _ in lrs]
        groups = [{"params": [p], "lr": lr} for p, lr in zip(ps, lrs, strict=True)]
        params[arm] = ps
        opts[arm] = ECOSGD(groups, lr=max(lrs), momentum=momentum, weight_format=fmt,
                           generator=torch.Generator().manual_seed(seed + 1), **kw)
    sums = {arm: np.zeros(len(lrs)) for arm in arms}
    tail = steps - max(1, int(round(steps * tail_fraction)))
    for t in range(steps):
        xi = noise * torch.randn(len(lrs), dim, generator=gen)  # same noise for every arm
        if lr_factor is not None:
            f = float(lr_factor(t))
            for arm in arms:
                for g, lr in zip(opts[arm].param_groups, lrs, strict=True):
                    g["lr"] = lr * f
        for arm in arms:
            for i, p in enumerate(params[arm]):
                p.grad = lam * (_values(p) - target) + xi[i]
            opts[arm].step()
            if t >= tail:
                for i, p in enumerate(params[arm]):
                    sums[arm][i] += float((_values(p) - target).pow(2).mean())
    n = steps - tail
    return ToyResult(tuple(lrs), {arm: (s / n).tolist() for arm, s in sums.items()})

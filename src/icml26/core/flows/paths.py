"""Probability paths for flow matching (convention everywhere: t = 0 noise, t = 1 data).

The conditional optimal-transport (CondOT, "rectified flow") path of Lipman et al. (2023,
arXiv:2210.02747, Eq. 20-23) and Liu et al. (2023, arXiv:2209.03003):

    x_t = (1 - (1 - sigma_min) t) x0 + t x1,        u_t = x1 - (1 - sigma_min) x0,

with ``x0 ~ N(0, I)``. ``sigma_min = 0`` gives the plain linear interpolant used by SiT,
torchcfm's ``ConditionalFlowMatcher(sigma=0)`` and ``flow_matching``'s ``CondOTScheduler``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from icml26.core.validation import check_finite, check_tensor, check_time


@dataclass(frozen=True)
class PathSample:
    """A draw from a conditional path.

    Attributes
    ----------
    x_t : Tensor, shape (B, *shape)
        The point on the path at time ``t``.
    u_t : Tensor, shape (B, *shape)
        The conditional target velocity ``d x_t / d t``.
    t : Tensor, shape (B,)
        The times.
    x0, x1 : Tensor, shape (B, *shape)
        The noise and data endpoints.
    """

    x_t: Tensor
    u_t: Tensor
    t: Tensor
    x0: Tensor
    x1: Tensor


class CondOTPath:
    """Conditional OT (linear) path ``x_t = (1 - (1 - sigma_min) t) x0 + t x1``.

    Parameters
    ----------
    sigma_min : float, default 0.0
        Width of the path at ``t = 1`` (Lipman et al. 2023, Eq. 20). ``0`` is the straight
        rectified-flow interpolant (the default of SiT and torchcfm's ``sigma=0``).

    Examples
    --------
    >>> import torch
    >>> path = CondOTPath()
    >>> s = path.sample(torch.zeros(2, 3), torch.ones(2, 3), torch.tensor([0.0, 0.5]))
    >>> s.x_t[1].tolist(), s.u_t[0].tolist()
    ([0.5, 0.5, 0.5], [1.0, 1.0, 1.0])
    """

    def __init__(self, sigma_min: float = 0.0) -> None:
        if not 0.0 <= float(sigma_min) < 1.0:
            raise ValueError(f"sigma_min must be in [0, 1), got {sigma_min!r}")
        self.sigma_min = float(sigma_min)

    def __repr__(self) -> str:
        return f"CondOTPath(sigma_min={self.sigma_min})"

    def mean_coefficients(self, t: Tensor) -> tuple[Tensor, Tensor]:
        """Return ``(a_t, b_t)`` with ``x_t = a_t x0 + b_t x1``; shapes as ``t``."""
        return 1.0 - (1.0 - self.sigma_min) * t, t

    def sample(self, x0: Tensor, x1: Tensor, t: Tensor) -> PathSample:
        """Point and conditional velocity at times ``t``.

        Parameters
        ----------
        x0 : Tensor, shape (B, *shape)
            Noise.
        x1 : Tensor, shape (B, *shape)
            Data.
        t : Tensor, shape (B,)
            Times in [0, 1].
        """
        check_tensor(x1, "x1", min_dim=2)
        check_tensor(x0, "x0", min_dim=2)
        if x0.shape != x1.shape:
            raise ValueError(f"x0 and x1 must have the same shape, got {tuple(x0.shape)} and "
                             f"{tuple(x1.shape)}")
        check_finite(x0, "x0")
        check_finite(x1, "x1")
        check_time(t, x1.shape[0])
        tb = t.to(x1.dtype).reshape(-1, *([1] * (x1.dim() - 1)))
        a, b = self.mean_coefficients(tb)
        x_t = a * x0 + b * x1
        u_t = x1 - (1.0 - self.sigma_min) * x0
        return PathSample(x_t=x_t, u_t=u_t, t=t, x0=x0, x1=x1)

    def target_velocity(self, x0: Tensor, x1: Tensor) -> Tensor:
        """The conditional velocity ``x1 - (1 - sigma_min) x0`` (independent of ``t``)."""
        return x1 - (1.0 - self.sigma_min) * x0


def sample_t(n: int, dist: str = "uniform", *, alpha: float = 0.0, mean: float = 0.0,
             std: float = 1.0, generator: torch.Generator | None = None,
             dtype: torch.dtype = torch.float32) -> Tensor:
    """Draw ``n`` training times in [0, 1].

    Parameters
    ----------
    n : int
        How many.
    dist : {"uniform", "logit_normal", "power"}
        ``uniform``: U[0, 1] (Lipman et al. 2023). ``logit_normal``: ``sigmoid(N(mean, std))``
        (SD3, Esser et al. 2024). ``power``: ``U^(1/(1+alpha))``, the time prior of FMPE
        (Dax et al. 2023, arXiv:2305.17161), which puts more mass near t = 1 for alpha > 0.
    alpha, mean, std : float
        Parameters of ``power`` and ``logit_normal``.
    generator : torch.Generator, optional
        Source of randomness.

    Returns
    -------
    Tensor, shape (n,)
    """
    if not isinstance(n, int) or n <= 0:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if dist == "uniform":
        return torch.rand(n, generator=generator, dtype=dtype)
    if dist == "logit_normal":
        if std <= 0:
            raise ValueError(f"std must be > 0, got {std}")
        return torch.sigmoid(mean + std * torch.randn(n, generator=generator, dtype=dtype))
    if dist == "power":
        if alpha <= -1:
            raise ValueError(f"alpha must be > -1, got {alpha}")
        return torch.rand(n, generator=generator, dtype=dtype) ** (1.0 / (1.0 + alpha))
    raise ValueError(f"unknown time distribution {dist!r}; use uniform, logit_normal or power")

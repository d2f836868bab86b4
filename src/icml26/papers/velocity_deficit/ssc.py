"""The Scale Schedule Corrector (SSC): a training-free, time-dependent gain on the velocity.

Li et al., "The Velocity Deficit: Initial Energy Injection for Flow Matching", ICML 2026,
arXiv:2605.14819. Convention: t = 0 noise, t = 1 data (SiT / torchcfm / flow_matching).

    gamma(t) = 1 + alpha (1 - t)^beta,        v_tilde(x, t) = gamma(t) v_theta(x, t)

The form of gamma comes from two third-party digests of the paper (the paper body could not be
read with our tools; see the README). gamma(1) = 1 leaves the end of the trajectory (the
"beneficial contraction") untouched; gamma(0) = 1 + alpha injects energy at the noise end.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from icml26.core.flows import integrate, make_time_grid

WHERE = ("early", "late", "constant")
#: Placeholders, NOT paper values: the paper's alpha/beta defaults could not be read (searched again
#: for this release: abstract, Fig. 1 caption and third-party digests only). alpha = 0.2, beta = 2
#: lie in the middle of the grid the brief proposes; use :func:`tune_ssc` (alpha = 0 in its grid).
DEFAULT_ALPHA = 0.2
DEFAULT_BETA = 2.0


def _check_params(alpha: float, beta: float) -> None:
    for name, val in (("alpha", alpha), ("beta", beta)):
        if isinstance(val, bool) or not isinstance(val, int | float):
            raise TypeError(f"{name} must be a real number, got {type(val).__name__}")
        if val != val or val in (float("inf"), float("-inf")):
            raise ValueError(f"{name} must be finite, got {val}")
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0 (an energy injection), got {alpha}")
    if beta <= 0:
        raise ValueError(f"beta must be > 0, got {beta}")


def ssc_gain(t: Tensor | float, alpha: float = DEFAULT_ALPHA, beta: float = DEFAULT_BETA,
             where: str = "early") -> Tensor:
    """The SSC gain gamma(t).

    Parameters
    ----------
    t : Tensor or float
        Times in [0, 1] (any shape).
    alpha : float, default 0.2
        Boost strength, >= 0. gamma(0) = 1 + alpha. Placeholder default (paper's not recoverable).
    beta : float, default 2.0
        Decay exponent, > 0: larger beta confines the boost to the first steps. Placeholder default.
    where : {"early", "late", "constant"}
        ``"early"``: the paper's ``1 + alpha (1 - t)^beta``. ``"late"``: the mirrored ablation
        ``1 + alpha t^beta`` (boost at the data end). ``"constant"``: ``1 + alpha`` everywhere.
        The two ablations test the paper's asymmetry claim.

    Returns
    -------
    Tensor, same shape as ``t``.
    """
    _check_params(alpha, beta)
    if where not in WHERE:
        raise ValueError(f"where must be one of {WHERE}, got {where!r}")
    t = torch.as_tensor(t)
    if not torch.is_floating_point(t):
        t = t.to(torch.float32)
    _check_t(t)
    return _gain(t, alpha, beta, where)


def _check_t(t: Tensor) -> None:
    # one reduction, one host sync: NaN fails both comparisons, so it is caught by the negation
    if bool((~((t >= 0) & (t <= 1))).any()):
        raise ValueError("t must lie in [0, 1]")


def _gain(t: Tensor, alpha: float, beta: float, where: str) -> Tensor:
    if where == "early":
        return 1.0 + alpha * (1.0 - t) ** beta
    if where == "late":
        return 1.0 + alpha * t**beta
    return torch.full_like(t, 1.0 + alpha)


class ScaleScheduleCorrector:
    """SSC as a velocity hook: ``corrector(t, v) = gamma(t) v``.

    Plug it into any solver that accepts a per-evaluation velocity transform, e.g.
    ``icml26.core.flows.integrate(model, x0, steps=10, velocity_transform=ScaleScheduleCorrector())``.
    With classifier-free guidance apply it to the guided velocity (after the CFG combination;
    the order is not confirmed by the paper).

    Parameters
    ----------
    alpha : float, default 0.2
        Boost at t = 0 is 1 + alpha. ``alpha = 0`` returns ``v`` itself (bit-for-bit baseline).
    beta : float, default 2.0
        Decay exponent of the boost.
    where : {"early", "late", "constant"}, default "early"
        The paper's schedule, or one of the two ablations (see :func:`ssc_gain`).

    References
    ----------
    Li et al. (2026), arXiv:2605.14819, Sec. "Scale Schedule Corrector".

    Examples
    --------
    >>> import torch
    >>> ssc = ScaleScheduleCorrector(alpha=0.5, beta=1.0)
    >>> ssc(torch.tensor([0.0, 1.0]), torch.ones(2, 3))[:, 0].tolist()
    [1.5, 1.0]
    """

    def __init__(self, alpha: float = DEFAULT_ALPHA, beta: float = DEFAULT_BETA,
                 where: str = "early") -> None:
        _check_params(alpha, beta)
        if where not in WHERE:
            raise ValueError(f"where must be one of {WHERE}, got {where!r}")
        self.alpha, self.beta, self.where = float(alpha), float(beta), where

    def __repr__(self) -> str:
        return f"ScaleScheduleCorrector(alpha={self.alpha}, beta={self.beta}, where={self.where!r})"

    def gain(self, t: Tensor | float) -> Tensor:
        return ssc_gain(t, self.alpha, self.beta, self.where)

    def __call__(self, t: Tensor, v: Tensor) -> Tensor:
        """Scale ``v`` (B, *shape) by gamma(t) with ``t`` of shape (B,) or a scalar.

        Inputs are checked whatever ``alpha`` is (``alpha = 0`` returns ``v`` itself after the
        checks). ``v`` must be floating point: an integer velocity cannot carry the boost.
        """
        if not isinstance(v, Tensor) or v.dim() < 1:
            raise TypeError("v must be a tensor of shape (B, *shape)")
        if not torch.is_floating_point(v):
            raise TypeError(f"v must be a floating-point tensor, got dtype {v.dtype} (an integer "
                            "velocity would silently lose the gain)")
        t = torch.as_tensor(t).to(v.dtype)  # the gain is computed in the velocity's precision
        if t.dim() == 0:
            t = t.expand(v.shape[0])
        if t.shape != (v.shape[0],):
            raise ValueError(f"t must have shape ({v.shape[0]},) or be a scalar, got {tuple(t.shape)}")
        _check_t(t)
        if self.alpha == 0.0:
            return v
        g = _gain(t, self.alpha, self.beta, self.where)
        return v * g.reshape(-1, *([1] * (v.dim() - 1)))

    def wrap(self, model: Callable[..., Tensor]) -> Callable[..., Tensor]:
        """A velocity model whose output is already corrected (for solvers without a hook, e.g.
        ``flow_matching``'s ``ODESolver`` or torchdiffeq)."""

        def corrected(x: Tensor, t: Tensor, *args, **kwargs) -> Tensor:
            return self(t, model(x, t, *args, **kwargs))

        return corrected


def sample_with_ssc(model: Callable[..., Tensor], x0: Tensor, steps: int = 10,
                    alpha: float = DEFAULT_ALPHA, beta: float = DEFAULT_BETA, *,
                    method: str = "euler", where: str = "early", cond: Tensor | None = None,
                    time_grid: Tensor | None = None) -> Tensor:
    """Integrate noise ``x0`` to data with the SSC-corrected field.

    With ``method="euler"`` on the uniform grid this is the paper's one-line sampler:
    ``x <- x + (1/N) gamma(t_k) v_theta(x, t_k)``.

    Parameters
    ----------
    model : callable
        ``model(x, t[, cond]) -> v``.
    x0 : Tensor, shape (B, *shape)
        Noise at t = 0.
    steps : int, default 10
    alpha, beta, where
        See :class:`ScaleScheduleCorrector`.
    method : str, default "euler"
        Any method of :func:`icml26.core.flows.integrate`.

    Returns
    -------
    Tensor, shape (B, *shape)
    """
    corrector = ScaleScheduleCorrector(alpha, beta, where)
    return integrate(model, x0, steps=steps, method=method, cond=cond, time_grid=time_grid,
                     velocity_transform=corrector)


def shifted_time_grid(steps: int, kappa: float) -> Tensor:
    """The shifted-grid baseline: Euler times ``t_k = (k/N)^kappa`` (kappa > 1 = finer steps near
    the noise end). A schedule change at equal NFE, to separate SSC's effect from a re-timing."""
    return make_time_grid(steps, power=kappa)

"""ODE solvers for flow sampling: fixed-step (Euler, midpoint, Heun, RK4) on any time grid, with a
per-evaluation velocity hook, and an adaptive reference (scipy ``solve_ivp``: RK45 = dopri5,
DOP853).

Sampling integrates ``dx/dt = v(x, t)`` from ``t0 = 0`` (noise) to ``t1 = 1`` (data). The
``velocity_transform(t, v) -> v'`` hook is applied to *every* evaluation of the field, at that
evaluation's time, so a time-dependent velocity modifier (a guidance rescale, a gain schedule such
as the velocity-deficit paper's SSC) composes with any solver. This mirrors ``flow_matching``'s
``ODESolver.sample(time_grid=..., method=...)`` with a ``ModelWrapper`` around the net.

Validation costs once per solve, not once per evaluation: NaN/inf are looked for in the inputs,
the first field evaluation (the model's output and the hook's) and the final state;
``check_steps=True`` looks at every evaluation instead and names the step and time of the first
NaN/inf (for debugging; it synchronises with the device at every evaluation). Output shapes are
compared at every evaluation (a Python tuple comparison, no sync), so a broadcastable wrong shape
never passes silently.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from icml26.core.validation import check_finite, check_tensor

VelocityTransform = Callable[[Tensor, Tensor], Tensor]
FIXED_METHODS: dict[str, int] = {"euler": 1, "midpoint": 2, "heun": 2, "rk4": 4}
ADAPTIVE_METHODS: dict[str, str] = {"dopri5": "RK45", "rk45": "RK45", "dop853": "DOP853"}


@dataclass(frozen=True)
class AdaptiveSolution:
    """Result of :func:`adaptive_integrate`: final state and the number of field evaluations."""

    x: Tensor
    nfe: int


def make_time_grid(steps: int, t0: float = 0.0, t1: float = 1.0, *, power: float = 1.0,
                   dtype: torch.dtype = torch.float32) -> Tensor:
    """A grid of ``steps + 1`` times from ``t0`` to ``t1``, uniform in ``s`` with ``t = s^power``.

    ``power = 1`` is uniform; ``power > 1`` puts more (smaller) steps near the start of the
    interval, ``power < 1`` near its end. Only defined for ``0 <= t0 < t1 <= 1`` when
    ``power != 1`` (it warps [0, 1]).
    """
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps <= 0:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if power <= 0:
        raise ValueError(f"power must be > 0, got {power}")
    s = torch.linspace(0.0, 1.0, int(steps) + 1, dtype=torch.float64)
    if power != 1.0:
        if not 0.0 <= t0 < t1 <= 1.0:
            raise ValueError("a warped grid needs 0 <= t0 < t1 <= 1")
        lo, hi = t0 ** (1.0 / power), t1 ** (1.0 / power)
        grid = (lo + (hi - lo) * s) ** power
    else:
        grid = t0 + (t1 - t0) * s
    grid[0], grid[-1] = t0, t1
    return grid.to(dtype)


@functools.lru_cache(maxsize=256)
def _uniform_times(steps: int, t0: float, t1: float) -> tuple[float, ...]:
    """``make_time_grid(steps, t0, t1)`` (float64) as Python floats, built once per grid."""
    return tuple(make_time_grid(steps, t0, t1, dtype=torch.float64).tolist())


def _check_grid(grid: Tensor) -> Tensor:
    if not isinstance(grid, Tensor) or grid.dim() != 1 or grid.numel() < 2:
        raise ValueError("time_grid must be a 1-D tensor with at least 2 times")
    if not bool(torch.isfinite(grid).all()):
        raise ValueError("time_grid contains NaN or inf")
    if bool((grid < 0).any()) or bool((grid > 1).any()):
        raise ValueError(f"time_grid must lie in [0, 1], got [{float(grid.min())}, {float(grid.max())}]")
    d = grid[1:] - grid[:-1]
    if not (bool((d > 0).all()) or bool((d < 0).all())):
        raise ValueError("time_grid must be strictly monotone (no zero or reversed steps)")
    return grid


class _Field:
    """Evaluates model + hook; counts evaluations. Shapes are checked at every evaluation (cheap,
    no device sync); NaN/inf at the first evaluation only, or at every one with ``check_every``
    (the error names the step and time)."""

    def __init__(self, model, cond, transform, check_every: bool = False) -> None:
        self.model, self.cond, self.transform = model, cond, transform
        self.check_every = bool(check_every)
        self.nfe = 0

    @staticmethod
    def _check(v, x: Tensor, who: str, step: int, t: float, finite: bool) -> None:
        if not isinstance(v, Tensor) or v.shape != x.shape:
            shape = tuple(v.shape) if isinstance(v, Tensor) else type(v).__name__
            raise ValueError(f"{who} returned {shape} at step {step} (t={t:.6g}); "
                             f"expected {tuple(x.shape)}")
        if finite and not bool(torch.isfinite(v).all()):
            raise ValueError(f"{who} returned NaN/inf at step {step} (t={t:.6g})")

    def __call__(self, x: Tensor, t: float, step: int) -> Tensor:
        tt = torch.full((x.shape[0],), float(t), dtype=x.dtype, device=x.device)
        v = self.model(x, tt) if self.cond is None else self.model(x, tt, self.cond)
        finite = self.check_every or self.nfe == 0
        self.nfe += 1
        self._check(v, x, "velocity model", step, t, finite)
        if self.transform is not None:
            v = self.transform(tt, v)
            self._check(v, x, "velocity_transform", step, t, finite)
        return v


def _check_final(x: Tensor) -> None:
    if not bool(torch.isfinite(x).all()):
        raise ValueError("the solve produced NaN/inf (the first field evaluation was finite); rerun "
                         "with check_steps=True to find the step and time where it appears")


def integrate(model: Callable[..., Tensor], x: Tensor, *, t0: float = 0.0, t1: float = 1.0,
              steps: int = 10, method: str = "euler", time_grid: Tensor | Sequence[float] | None = None,
              cond: Tensor | None = None, velocity_transform: VelocityTransform | None = None,
              return_path: bool = False, grad: bool = False, rtol: float = 1e-5,
              atol: float = 1e-5, check_steps: bool = False) -> Tensor | list[Tensor]:
    """Integrate ``dx/dt = T(t, v(x, t))`` from ``t0`` to ``t1``.

    Parameters
    ----------
    model : callable
        ``model(x, t[, cond]) -> v`` with ``x`` (B, *shape), ``t`` (B,).
    x : Tensor, shape (B, *shape)
        Initial state at ``t0`` (noise when sampling).
    t0, t1 : float
        Interval (either direction); ignored when ``time_grid`` is given.
    steps : int, default 10
        Number of steps of a fixed-step method on a uniform grid (NFE = steps x evaluations per
        step: 1 Euler, 2 midpoint/Heun, 4 RK4).
    method : {"euler", "midpoint", "heun", "rk4", "dopri5", "rk45", "dop853"}
        Fixed-step explicit Runge-Kutta methods, or scipy's adaptive ``solve_ivp`` (``dopri5`` and
        ``rk45`` are both Dormand-Prince 5(4)); adaptive methods never keep a graph.
    time_grid : Tensor or sequence, optional
        Strictly monotone times in [0, 1] (overrides ``t0, t1, steps``). For adaptive methods the
        grid is the set of output times.
    cond : Tensor, optional
        Passed to the model.
    velocity_transform : callable, optional
        ``T(t (B,), v) -> v'`` applied to every field evaluation at its own time.
    return_path : bool, default False
        Return the list of states at every grid time (first = ``x``) instead of the last one.
    grad : bool, default False
        Keep the autograd graph (fixed-step methods only); otherwise run under ``no_grad``.
    rtol, atol : float
        Tolerances of adaptive methods.
    check_steps : bool, default False
        Check every field evaluation (shape, NaN/inf) and name the step and time of the first bad
        one. By default only the first evaluation and the final state are checked (once per
        solve), which keeps the solver's overhead over a bare loop small.

    Returns
    -------
    Tensor (B, *shape), or list of Tensors when ``return_path``.

    Raises
    ------
    ValueError
        Bad shapes, times outside [0, 1], non-monotone grids, non-positive (or bool) ``steps``, a
        NaN/inf velocity at the first evaluation (any evaluation with ``check_steps``; the message
        names the step and the time), or a NaN/inf final state.
    """
    check_tensor(x, "x", min_dim=2)
    check_finite(x, "x")
    if method not in FIXED_METHODS and method not in ADAPTIVE_METHODS:
        raise ValueError(f"unknown method {method!r}; use one of "
                         f"{sorted(FIXED_METHODS) + sorted(ADAPTIVE_METHODS)}")
    times = None
    if time_grid is None:
        for name, val in (("t0", t0), ("t1", t1)):
            if not 0.0 <= float(val) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {val}")
        if float(t0) == float(t1):
            raise ValueError("t0 and t1 must differ")
        if method in FIXED_METHODS and type(steps) is int:  # (bools and floats: validated below)
            times = _uniform_times(steps, float(t0), float(t1))
        else:
            grid = make_time_grid(steps, float(t0), float(t1), dtype=torch.float64)
    else:
        grid = _check_grid(torch.as_tensor(time_grid, dtype=torch.float64))
    if method in ADAPTIVE_METHODS:
        if grad:
            raise ValueError("grad=True is only supported by fixed-step methods")
        return _adaptive(model, x, grid, method, cond, velocity_transform, return_path, rtol, atol,
                         check_steps).x
    field = _Field(model, cond, velocity_transform, check_steps)
    ctx = torch.enable_grad() if grad else torch.no_grad()
    if times is None:
        times = grid.tolist()
    with ctx:
        path = [x]
        for k in range(len(times) - 1):
            ta, tb = times[k], times[k + 1]
            h = tb - ta
            if method == "euler":
                x = x + h * field(x, ta, k)
            elif method == "midpoint":
                v0 = field(x, ta, k)
                x = x + h * field(x + 0.5 * h * v0, ta + 0.5 * h, k)
            elif method == "heun":
                v0 = field(x, ta, k)
                v1 = field(x + h * v0, tb, k)
                x = x + 0.5 * h * (v0 + v1)
            else:  # rk4
                k1 = field(x, ta, k)
                k2 = field(x + 0.5 * h * k1, ta + 0.5 * h, k)
                k3 = field(x + 0.5 * h * k2, ta + 0.5 * h, k)
                k4 = field(x + h * k3, tb, k)
                x = x + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
            if return_path:
                path.append(x)
    if not check_steps:
        _check_final(x)
    return path if return_path else x


def _adaptive(model, x, grid, method, cond, transform, return_path, rtol, atol, check_steps=False):
    from scipy.integrate import solve_ivp

    field = _Field(model, cond, transform, check_steps)
    shape, dtype = x.shape, x.dtype
    step = [0]

    def rhs(t, y):
        xt = torch.from_numpy(np.ascontiguousarray(y)).reshape(shape).to(dtype)
        with torch.no_grad():
            v = field(xt, float(t), step[0])
        step[0] += 1
        return v.reshape(-1).double().numpy()

    times = grid.numpy()
    sol = solve_ivp(rhs, (float(times[0]), float(times[-1])), x.detach().reshape(-1).double().numpy(),
                    method=ADAPTIVE_METHODS[method], t_eval=times, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"adaptive solver failed: {sol.message}")
    states = [torch.from_numpy(sol.y[:, i].copy()).reshape(shape).to(dtype) for i in range(len(times))]
    _check_final(states[-1])
    return AdaptiveSolution(x=states if return_path else states[-1], nfe=field.nfe)


def adaptive_integrate(model: Callable[..., Tensor], x: Tensor, *, method: str = "dopri5",
                       t0: float = 0.0, t1: float = 1.0, cond: Tensor | None = None,
                       velocity_transform: VelocityTransform | None = None, rtol: float = 1e-5,
                       atol: float = 1e-5, check_steps: bool = False) -> AdaptiveSolution:
    """Adaptive reference solve (scipy ``solve_ivp``) that also reports the NFE used."""
    if method not in ADAPTIVE_METHODS:
        raise ValueError(f"adaptive method must be one of {sorted(ADAPTIVE_METHODS)}")
    check_tensor(x, "x", min_dim=2)
    check_finite(x, "x")
    grid = _check_grid(torch.tensor([t0, t1], dtype=torch.float64))
    return _adaptive(model, x, grid, method, cond, velocity_transform, False, rtol, atol, check_steps)


def nfe_of(method: str, steps: int) -> int:
    """Number of field evaluations of a fixed-step method with ``steps`` steps."""
    if method not in FIXED_METHODS:
        raise ValueError(f"nfe_of needs a fixed-step method, got {method!r}")
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps <= 0:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    return FIXED_METHODS[method] * int(steps)


def sample(model: Callable[..., Tensor], n: int, shape: Sequence[int], *, steps: int = 10,
           generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32,
           **kwargs) -> Tensor:
    """Draw ``x0 ~ N(0, I)`` of shape ``(n, *shape)`` and integrate it to ``t = 1``.

    Extra keyword arguments go to :func:`integrate` (method, time_grid, velocity_transform...).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"n must be a positive int, got {n!r}")
    x0 = torch.randn((n, *shape), generator=generator, dtype=dtype)
    return integrate(model, x0, steps=steps, **kwargs)


def log_prob(model: Callable[..., Tensor], x1: Tensor, *, cond: Tensor | None = None, steps: int = 50,
             method: str = "rk4", hutchinson: int | None = None,
             generator: torch.Generator | None = None) -> Tensor:
    """Log-density of a continuous normalising flow at data points (instantaneous change of
    variables, Chen et al. 2018, arXiv:1806.07366, Thm. 1).

    Integrates ``(x, l)`` backwards from ``t = 1`` to ``0`` with ``dl/dt = div v``, then
    ``log p_1(x1) = log N(x0; 0, I) - int_0^1 div v(x_t, t) dt``.

    Parameters
    ----------
    x1 : Tensor, shape (B, D)
        Flat data points.
    steps : int
        Fixed steps of ``method`` ("euler", "midpoint", "heun" or "rk4").
    hutchinson : int, optional
        Number of Rademacher probes for an unbiased trace estimate; exact trace (D backward
        passes) when None.

    Returns
    -------
    Tensor, shape (B,)
    """
    check_tensor(x1, "x1", min_dim=2)
    if x1.dim() != 2:
        raise ValueError("log_prob expects flat data of shape (B, D)")
    if method not in FIXED_METHODS:
        raise ValueError(f"log_prob needs a fixed-step method, got {method!r}")
    b, d = x1.shape
    probes = None
    if hutchinson is not None:
        if hutchinson <= 0:
            raise ValueError("hutchinson must be a positive number of probes")
        probes = torch.randint(0, 2, (hutchinson, b, d), generator=generator).to(x1.dtype) * 2 - 1

    def aug(z: Tensor, t: float) -> Tensor:
        with torch.enable_grad():
            xz = z[:, :d].detach().requires_grad_(True)
            tt = torch.full((b,), float(t), dtype=x1.dtype)
            v = model(xz, tt) if cond is None else model(xz, tt, cond)
            if probes is None:
                div = torch.zeros(b, dtype=x1.dtype)
                for i in range(d):
                    div = div + torch.autograd.grad(v[:, i].sum(), xz, retain_graph=True)[0][:, i]
            else:
                div = torch.zeros(b, dtype=x1.dtype)
                for e in probes:
                    div = div + (torch.autograd.grad((v * e).sum(), xz, retain_graph=True)[0] * e).sum(1)
                div = div / probes.shape[0]
        return torch.cat([v.detach(), div.detach()[:, None]], dim=1)

    def field(z, t):
        return aug(z, float(t[0]))

    z = torch.cat([x1, torch.zeros(b, 1, dtype=x1.dtype)], dim=1)
    zT = integrate(field, z, t0=1.0, t1=0.0, steps=steps, method=method)
    x0, int_div = zT[:, :d], -zT[:, d]  # integrating backwards gives -int_0^1 div dt
    logp0 = -0.5 * (x0**2).sum(1) - 0.5 * d * float(np.log(2 * np.pi))
    return logp0 - int_div

"""MS-Flow (multiple shooting with a flow prior) and the baselines it is compared with, all with
one signature: ``method(model, op, y, config=None) -> result``.

Conventions (``icml26.core.flows``): ``model(x, t) -> v`` with ``t = 0`` noise and ``t = 1`` data;
``op`` is a :class:`~icml26.papers.ms_flow.operators.LinearOperator`; ``y`` has shape ``(B, m)``;
images are flat ``(B, d)``. The data term is ``D(x) = ||A x - y||^2 / (2 sigma^2)`` everywhere.
``nfe`` counts velocity evaluations per image; a backward pass through an evaluation counts as one
more evaluation (the brief's accounting), so every method can be run at the same NFE budget
(``nfe_budget``).

MS-Flow (Denker, Eliasof, Kereta, Schoenlieb, ICML 2026, arXiv:2602.08538). The paper's exact
equations could not be read; what is implemented is the standard multiple-shooting formulation
that fits every stated ingredient (K shooting points, data consistency, radial Gaussian latent
regulariser, trajectory-stitching penalties, alternating minimisation whose shooting-point step is
coordinate descent with a Jacobian-free gradient), ``shared/papers/ms_flow.md`` section 2.2:

    min_{z_0..z_K}  D(z_K) + lam R(z_0) + mu/2 sum_k ||z_{k+1} - Phi_k(z_k)||^2,
    R(z) = ||z||^2 / 2 - (d - 1) log ||z||          (negative log chi density, as in D-Flow)

where ``Phi_k`` integrates the flow from ``tau_k = k/K`` to ``tau_{k+1}`` with ``N/K`` solver steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import torch
from torch import Tensor

from icml26.core.flows import FIXED_METHODS, integrate

from .operators import LinearOperator

# ----------------------------------------------------------------------------------------------
# shared pieces
# ----------------------------------------------------------------------------------------------


class _Counted:
    """Wraps a velocity model and counts its (batched) evaluations: NFE per image."""

    def __init__(self, model) -> None:
        self.model = model
        self.nfe = 0

    def __call__(self, x: Tensor, t: Tensor, cond: Tensor | None = None) -> Tensor:
        self.nfe += 1
        return self.model(x, t) if cond is None else self.model(x, t, cond)


def radial_gaussian_reg(z: Tensor) -> Tensor:
    """``R(z) = ||z||^2 / 2 - (d - 1) log ||z||`` per row, shape (B,).

    The negative log-density (up to a constant) of the radius of a standard Gaussian in ``d``
    dimensions (a chi distribution), minimised at ``||z|| = sqrt(d - 1)``. D-Flow's regulariser
    (Ben-Hamu et al. 2024; PnP-Flow benchmark code ``pnpflow/methods/d_flow.py``).
    """
    if z.dim() != 2:
        raise ValueError(f"z must have shape (B, d), got {tuple(z.shape)}")
    r = z.norm(dim=1).clamp_min(1e-12)
    return 0.5 * r**2 - (z.shape[1] - 1) * torch.log(r)


def radial_gaussian_reg_grad(z: Tensor) -> Tensor:
    """Gradient of :func:`radial_gaussian_reg`: ``z - (d - 1) z / ||z||^2``."""
    r2 = (z**2).sum(1, keepdim=True).clamp_min(1e-24)
    return z - (z.shape[1] - 1) * z / r2


@dataclass
class ReconResult:
    """A reconstruction and what it cost.

    Attributes
    ----------
    x : Tensor (B, d)
        The reconstruction.
    nfe : int
        Velocity evaluations per image used by the solve (backward passes counted).
    method : str
    info : dict
        Method-specific extras (iterations, history...).
    """

    x: Tensor
    nfe: int
    method: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class MSFlowResult(ReconResult):
    """:func:`ms_flow`'s result.

    Attributes
    ----------
    x : Tensor (B, d)
        ``z_K``, the data-consistent endpoint.
    x_on_manifold : Tensor (B, d)
        A fresh ODE solve ``T(z_0)`` with all ``N`` steps from the optimised noise ``z_0``
        (not counted in ``nfe``): the reconstruction as a genuine flow sample.
    z : list of K + 1 Tensors (B, d)
        The shooting states ``z_0 .. z_K``.
    stitch_residual : Tensor (B,)
        ``sqrt(sum_k ||z_{k+1} - Phi_k(z_k)||^2 / sum_k ||z_{k+1}||^2)`` per image at the end.
    history : dict of lists
        Per outer iteration: ``mu``, ``data`` (mean D), ``stitch`` (mean relative residual),
        ``reg`` (mean R(z_0)), ``objective`` (mean of the MS-Flow objective at that mu).
    """

    x_on_manifold: Tensor | None = None
    z: list[Tensor] = field(default_factory=list)
    stitch_residual: Tensor | None = None
    history: dict[str, list[float]] = field(default_factory=dict)


def _check_inputs(op: LinearOperator, y: Tensor) -> None:
    if not isinstance(op, LinearOperator):
        raise TypeError(f"op must be a LinearOperator, got {type(op).__name__}")
    op.check_y(y)


def _check_budget(nfe_budget: int | None) -> None:
    if nfe_budget is not None and (not isinstance(nfe_budget, int) or nfe_budget <= 0):
        raise ValueError(f"nfe_budget must be a positive int or None, got {nfe_budget!r}")


def _solve(model, x: Tensor, t0: float, t1: float, steps: int, method: str, grad: bool = False) -> Tensor:
    return integrate(model, x, t0=t0, t1=t1, steps=steps, method=method, grad=grad)


def _noise(shape, like: Tensor, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(int(seed))
    return torch.randn(shape, generator=g, dtype=like.dtype)


def blend_init(model, op: LinearOperator, y: Tensor, *, n_steps: int, method: str, alpha: float,
               seed: int) -> Tensor:
    """D-Flow's initialisation ``z = sqrt(alpha) T^{-1}(A^+ y) + sqrt(1 - alpha) eps``.

    ``T^{-1}`` is the backward ODE solve from t = 1 to 0 with the same fixed-step solver (the
    PnP-Flow benchmark uses dopri5; a fixed-step solve keeps the NFE count exact). ``A^+ y`` (the
    pseudo-inverse) replaces ``A^T y`` so that super-resolution starts at the right intensity.
    """
    x_init = op.pinv(y)
    z_inv = _solve(model, x_init, 1.0, 0.0, n_steps, method)
    eps = _noise(z_inv.shape, z_inv, seed)
    return math.sqrt(alpha) * z_inv + math.sqrt(1.0 - alpha) * eps


# ----------------------------------------------------------------------------------------------
# MS-Flow
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MSFlowConfig:
    """Settings of :func:`ms_flow`. The paper's values could not be read; these defaults are the
    brief's starting points (``shared/papers/ms_flow.md`` section 2.3) unless marked "ours".

    Attributes
    ----------
    K : int, default 4
        Number of segments (K + 1 shooting states z_0..z_K).
    n_steps : int, default 20
        Total solver steps N of the time discretisation (N / K per segment; K must divide N).
    method : str, default "euler"
        Fixed-step solver of each segment.
    mu0, mu_max : float, default 1, 1e4
        Stitching penalty: geometric continuation from ``mu0`` to ``mu_max`` over the outer
        iterations (``continuation="geometric"``), or fixed at ``mu0`` (``"fixed"``).
    n_outer : int, default 50
        Outer iterations (sweep + data step); derived from ``nfe_budget`` when that is given.
    n_inner : int, default 1
        Updates of each shooting point per sweep.
    lam : float, default 0.01
        Weight of the radial Gaussian regulariser on z_0 (D-Flow's default).
    step : float, default 0.5
        Shooting-point step ``eta_z = step / mu`` (brief: 0.5 / mu); 0 switches the sweep off
        (only the data step runs: a degenerate control, not a solver).
    reg_on : {"z0", "all"}
        Regularise only z_0 (default) or every z_k after rescaling by the marginal radius
        ``sqrt((1 - tau_k)^2 + tau_k^2)`` of the path (a Gaussian-data approximation: ours).
    jacobian : {"free", "vjp"}
        ``"free"``: the Jacobian of a segment map is replaced by the identity (no autograd at all:
        memory independent of N). Its fixed point is biased (issue 48): as ``mu -> inf`` the
        stationarity conditions of the scheme chain to ``grad D(z_K) + lam grad R(z_0) = 0``,
        not the objective's ``J^T grad D(T(z_0)) + lam grad R(z_0) = 0`` (``J = dT/dz_0``), so
        with ``lam > 0`` and a non-orthogonal flow map it converges to a point that is not the
        MAP. ``"vjp"``: the exact gradient, one vector-Jacobian product ``J_k^T r`` through one
        segment (3x the NFE of a sweep, memory growing with N / K); it converges to the MAP
        (tested in closed form on an exactly Gaussian flow prior).
    regularizer : {"radial", "gaussian"}
        ``R``: the radial Gaussian (chi) regulariser of D-Flow (default) or ``||z||^2 / 2``
        (a standard Gaussian latent; the closed-form MAP test uses it).
    sweep : {"forward", "backward", "jacobi"}
        Gauss-Seidel order over k, or a Jacobi sweep (all k from the same states).
    init : {"blend", "ode"}
        ``"blend"``: D-Flow's blended inversion of ``A^+ y`` (same as :func:`d_flow`); ``"ode"``:
        ``z_0 ~ N(0, I)``. Either way z_1..z_K start on the ODE trajectory of z_0 (zero residual).
    alpha : float, default 0.1
        Blend weight of ``init="blend"`` (D-Flow's default).
    seed : int
        Seed of the initial noise.
    nfe_budget : int, optional
        Velocity evaluations per image for the whole solve (initialisation included); sets
        ``n_outer``.
    """

    K: int = 4
    n_steps: int = 20
    method: str = "euler"
    mu0: float = 1.0
    mu_max: float = 1e4
    continuation: Literal["geometric", "fixed"] = "geometric"
    n_outer: int = 50
    n_inner: int = 1
    lam: float = 0.01
    step: float = 0.5
    reg_on: Literal["z0", "all"] = "z0"
    jacobian: Literal["free", "vjp"] = "free"
    regularizer: Literal["radial", "gaussian"] = "radial"
    sweep: Literal["forward", "backward", "jacobi"] = "forward"
    init: Literal["blend", "ode"] = "blend"
    alpha: float = 0.1
    seed: int = 0
    nfe_budget: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.K, int) or self.K < 1:
            raise ValueError(f"K (number of segments) must be an int >= 1, got {self.K!r}")
        if not isinstance(self.n_steps, int) or self.n_steps < 1:
            raise ValueError(f"n_steps must be an int >= 1, got {self.n_steps!r}")
        if self.n_steps % self.K:
            raise ValueError(f"K={self.K} must divide n_steps={self.n_steps}")
        if self.method not in FIXED_METHODS:
            raise ValueError(f"method must be one of {sorted(FIXED_METHODS)}, got {self.method!r}")
        if not (self.mu0 > 0 and self.mu_max >= self.mu0 and math.isfinite(self.mu_max)):
            raise ValueError(f"need 0 < mu0 <= mu_max < inf, got mu0={self.mu0}, mu_max={self.mu_max}")
        if self.continuation not in ("geometric", "fixed"):
            raise ValueError(f"continuation must be 'geometric' or 'fixed', got {self.continuation!r}")
        if self.n_outer < 1 or self.n_inner < 1:
            raise ValueError("n_outer and n_inner must be >= 1")
        if self.lam < 0 or not 0 <= self.step <= 1:
            raise ValueError(f"need lam >= 0 and 0 <= step <= 1, got lam={self.lam}, step={self.step}")
        for name, val, allowed in (("reg_on", self.reg_on, ("z0", "all")),
                                   ("jacobian", self.jacobian, ("free", "vjp")),
                                   ("regularizer", self.regularizer, ("radial", "gaussian")),
                                   ("sweep", self.sweep, ("forward", "backward", "jacobi")),
                                   ("init", self.init, ("blend", "ode"))):
            if val not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {val!r}")
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        _check_budget(self.nfe_budget)

    @property
    def steps_per_segment(self) -> int:
        return self.n_steps // self.K

    @property
    def evals_per_step(self) -> int:
        return FIXED_METHODS[self.method]

    def sweep_nfe(self) -> int:
        """NFE per image of one outer iteration."""
        seg = self.steps_per_segment * self.evals_per_step
        per_segment = 3 * seg if self.jacobian == "vjp" else seg
        return self.K * self.n_inner * per_segment

    def init_nfe(self) -> int:
        full = self.n_steps * self.evals_per_step
        return 2 * full if self.init == "blend" else full

    def resolved_outer(self) -> int:
        """``n_outer``, or the number of outer iterations that fit in ``nfe_budget``."""
        if self.nfe_budget is None:
            return self.n_outer
        n = (self.nfe_budget - self.init_nfe()) // self.sweep_nfe()
        if n < 1:
            raise ValueError(f"nfe_budget={self.nfe_budget} is too small for one MS-Flow iteration "
                             f"(init {self.init_nfe()} + one sweep {self.sweep_nfe()} NFE)")
        return int(n)


def shooting_grid(K: int) -> list[float]:
    """``tau_k = k / K`` for k = 0..K."""
    return [k / K for k in range(K + 1)]


def segment_map(model, z: Tensor, k: int, config: MSFlowConfig, grad: bool = False) -> Tensor:
    """``Phi_k(z)``: integrate from ``tau_k`` to ``tau_{k+1}`` with ``N / K`` steps."""
    tau = shooting_grid(config.K)
    return _solve(model, z, tau[k], tau[k + 1], config.steps_per_segment, config.method, grad=grad)


def _reg_scale(k: int, K: int) -> float:
    tau = k / K
    return math.sqrt((1 - tau) ** 2 + tau**2)


def ms_flow_objective(model, op: LinearOperator, y: Tensor, z: list[Tensor], config: MSFlowConfig,
                      mu: float | None = None) -> Tensor:
    """The MS-Flow objective per image, shape (B,) (module docstring), at penalty ``mu``
    (default ``config.mu_max``).

    With ``K = 1`` and ``z_1 = T(z_0)`` the penalty vanishes and this equals
    :func:`d_flow_objective` at ``z_0``.
    """
    _check_inputs(op, y)
    if len(z) != config.K + 1:
        raise ValueError(f"need K + 1 = {config.K + 1} states, got {len(z)}")
    mu = config.mu_max if mu is None else float(mu)
    obj = op.data_fidelity(z[-1], y)
    obj = obj + config.lam * _reg_terms(z, config)
    for k in range(config.K):
        obj = obj + 0.5 * mu * ((z[k + 1] - segment_map(model, z[k], k, config, grad=True)) ** 2).sum(1)
    return obj


def _reg_fns(config: MSFlowConfig):
    if config.regularizer == "gaussian":
        return (lambda z: 0.5 * (z**2).sum(1)), (lambda z: z)
    return radial_gaussian_reg, radial_gaussian_reg_grad


def _reg_terms(z: list[Tensor], config: MSFlowConfig) -> Tensor:
    reg, _ = _reg_fns(config)
    if config.reg_on == "z0":
        return reg(z[0])
    out = reg(z[0])
    for k in range(1, config.K):
        out = out + reg(z[k] / _reg_scale(k, config.K))
    return out


def _reg_grad(zk: Tensor, k: int, config: MSFlowConfig) -> Tensor:
    _, grad = _reg_fns(config)
    if k == 0:
        return grad(zk)
    if config.reg_on == "all":
        s = _reg_scale(k, config.K)
        return grad(zk / s) / s
    return torch.zeros_like(zk)


def _stitch(z: list[Tensor], phi: list[Tensor]) -> Tensor:
    num = sum(((z[k + 1] - phi[k]) ** 2).sum(1) for k in range(len(phi)))
    den = sum((z[k + 1] ** 2).sum(1) for k in range(len(phi)))
    return torch.sqrt(num / den.clamp_min(1e-24))


def _mu_schedule(config: MSFlowConfig, n_outer: int) -> list[float]:
    if config.continuation == "fixed" or n_outer == 1:
        return [config.mu0] * n_outer if config.continuation == "fixed" else [config.mu_max]
    ratio = config.mu_max / config.mu0
    return [config.mu0 * ratio ** (i / (n_outer - 1)) for i in range(n_outer)]


def ms_flow(model, op: LinearOperator, y: Tensor, config: MSFlowConfig | None = None,
            callback=None) -> MSFlowResult:
    """Solve ``y = A x + noise`` with a flow prior by multiple shooting (MS-Flow).

    Alternating minimisation of the objective in the module docstring; outer iteration ``it``:

    1. shooting-point sweep (coordinate descent over k, order ``config.sweep``): with
       ``r_in = z_k - Phi_{k-1}(z_{k-1})`` and ``r_out = z_{k+1} - Phi_k(z_k)``, the exact gradient
       in ``z_k`` is ``mu r_in - mu J_k^T r_out + lam grad R``; the Jacobian-free version sets
       ``J_k = I`` (valid for short segments, ``Phi(z) ~ z + dt v``). ``z_k <- z_k - (step / mu) g``.
       Only forward evaluations: no autograd graph is ever built (``jacobian="free"``).
    2. data step on the endpoint, exact:
       ``z_K <- argmin_x D(x) + mu/2 ||x - Phi_{K-1}(z_{K-1})||^2`` (``op.prox``).
    3. ``mu`` grows geometrically from ``mu0`` to ``mu_max`` (continuation: ours, from the brief).

    Parameters
    ----------
    model : callable
        ``model(x, t) -> v`` (``icml26.core.flows.VelocityField``).
    op : LinearOperator
    y : Tensor, shape (B, m)
    config : MSFlowConfig, optional
    callback : callable, optional
        ``callback(it, z_list)`` after each outer iteration.

    Returns
    -------
    MSFlowResult
    """
    cfg = config or MSFlowConfig()
    _check_inputs(op, y)
    counted = _Counted(model)
    n_outer = cfg.resolved_outer()
    K, N = cfg.K, cfg.n_steps
    tau = shooting_grid(K)
    with torch.no_grad():
        if cfg.init == "blend":
            z0 = blend_init(counted, op, y, n_steps=N, method=cfg.method, alpha=cfg.alpha, seed=cfg.seed)
        else:
            z0 = _noise((y.shape[0], op.d), y, cfg.seed)
        z = [z0]
        for k in range(K):
            z.append(_solve(counted, z[k], tau[k], tau[k + 1], cfg.steps_per_segment, cfg.method))
        phi = [zz.clone() for zz in z[1:]]  # phi[k] = Phi_k(z_k)
    hist: dict[str, list[float]] = {"mu": [], "data": [], "stitch": [], "reg": [], "objective": []}
    order = list(range(K))
    if cfg.sweep == "backward":
        order = order[::-1]
    for it, mu in enumerate(_mu_schedule(cfg, n_outer)):
        eta = cfg.step / mu
        if cfg.sweep == "jacobi":
            grads = [_shoot_grad(counted, z, phi, k, mu, cfg) for k in order]
            with torch.no_grad():
                for k, g in zip(order, grads, strict=True):
                    z[k] = z[k] - eta * g
                for k in order:
                    phi[k] = segment_map(counted, z[k], k, cfg)
        else:
            for k in order:
                for _ in range(cfg.n_inner):
                    g = _shoot_grad(counted, z, phi, k, mu, cfg)
                    with torch.no_grad():
                        z[k] = z[k] - eta * g
                        phi[k] = segment_map(counted, z[k], k, cfg)
        with torch.no_grad():
            z[K] = op.prox(phi[K - 1], y, mu)
            data = op.data_fidelity(z[K], y)
            reg = _reg_terms(z, cfg)
            pen = sum(((z[k + 1] - phi[k]) ** 2).sum(1) for k in range(K))
            hist["mu"].append(float(mu))
            hist["data"].append(float(data.mean()))
            hist["stitch"].append(float(_stitch(z, phi).mean()))
            hist["reg"].append(float(reg.mean()))
            hist["objective"].append(float((data + cfg.lam * reg + 0.5 * mu * pen).mean()))
        if callback is not None:
            callback(it, [zz.detach() for zz in z])
    nfe = counted.nfe
    with torch.no_grad():
        fresh = _solve(model, z[0], 0.0, 1.0, N, cfg.method)
        resid = _stitch(z, phi)
    return MSFlowResult(x=z[K].detach(), nfe=int(nfe), method="ms_flow",
                        info={"n_outer": n_outer, "K": K, "n_steps": N, "jacobian": cfg.jacobian},
                        x_on_manifold=fresh, z=[zz.detach() for zz in z], stitch_residual=resid,
                        history=hist)


def _shoot_grad(model, z: list[Tensor], phi: list[Tensor], k: int, mu: float,
                cfg: MSFlowConfig) -> Tensor:
    """Gradient (exact in the penalty of segment k-1, Jacobian-free or VJP in segment k) in z_k."""
    with torch.no_grad():
        g = torch.zeros_like(z[k])
        if k > 0:
            g = g + mu * (z[k] - phi[k - 1])
        if cfg.lam > 0:
            g = g + cfg.lam * _reg_grad(z[k], k, cfg)
    if cfg.jacobian == "free":
        with torch.no_grad():
            return g - mu * (z[k + 1] - phi[k])
    zk = z[k].detach().requires_grad_(True)
    with torch.enable_grad():
        out = segment_map(model, zk, k, cfg, grad=True)
        r_out = (z[k + 1] - out).detach()
        (jt_r,) = torch.autograd.grad(out, zk, grad_outputs=r_out)
        model.nfe += cfg.steps_per_segment * cfg.evals_per_step  # the backward pass
    return (g - mu * jt_r).detach()


# ----------------------------------------------------------------------------------------------
# D-Flow (single shooting): backprop through the solver, or the adjoint method
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DFlowConfig:
    """Settings of :func:`d_flow` (Ben-Hamu et al., ICML 2024, arXiv:2402.14017).

    Defaults follow the PnP-Flow benchmark code (``annegnx/PnP-Flow``, ``d_flow.yaml``): LBFGS with
    history 100 and a strong-Wolfe line search, ``lam = 0.01``, blended init with ``alpha = 0.1``.
    ``n_steps`` / ``method`` default to MS-Flow's discretisation (20 Euler steps) so that both
    solve the same ODE (the benchmark uses 6 midpoint steps). ``max_evals`` (objective + gradient
    evaluations) is derived from ``nfe_budget`` when given: one evaluation costs 2 N NFE (forward
    and backward through N steps), 4 N with the adjoint (forward, reverse-time reconstruction,
    and a VJP per step).
    """

    n_steps: int = 20
    method: str = "euler"
    lam: float = 0.01
    alpha: float = 0.1
    lr: float = 1.0
    history_size: int = 100
    max_evals: int = 400
    adjoint: bool = False
    seed: int = 0
    nfe_budget: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.n_steps, int) or self.n_steps < 1:
            raise ValueError(f"n_steps must be an int >= 1, got {self.n_steps!r}")
        if self.method not in FIXED_METHODS:
            raise ValueError(f"method must be one of {sorted(FIXED_METHODS)}, got {self.method!r}")
        if self.adjoint and self.method != "euler":
            raise ValueError("the adjoint variant is implemented for method='euler' only")
        if self.lam < 0 or self.lr <= 0 or self.max_evals < 1 or not 0 <= self.alpha <= 1:
            raise ValueError("need lam >= 0, lr > 0, max_evals >= 1 and alpha in [0, 1]")
        _check_budget(self.nfe_budget)

    def eval_nfe(self) -> int:
        full = self.n_steps * FIXED_METHODS[self.method]
        return 4 * full if self.adjoint else 2 * full

    def resolved_evals(self) -> int:
        if self.nfe_budget is None:
            return self.max_evals
        full = self.n_steps * FIXED_METHODS[self.method]
        n = (self.nfe_budget - 2 * full) // self.eval_nfe()  # init inversion + final forward
        if n < 1:
            raise ValueError(f"nfe_budget={self.nfe_budget} is too small for one D-Flow evaluation")
        return int(n)


class _EulerAdjoint(torch.autograd.Function):
    """Euler solve from t = 0 to 1 whose backward pass is the adjoint method: the state is
    reconstructed by integrating the ODE backwards in time (one evaluation per step) and the
    adjoint is carried back with one VJP per step. Saves only the final state: memory is constant
    in the number of steps (like ``torchdiffeq.odeint_adjoint``)."""

    @staticmethod
    def forward(ctx, z0, model, n_steps):
        with torch.no_grad():
            x1 = _solve(model, z0, 0.0, 1.0, n_steps, "euler")
        ctx.model, ctx.n_steps = model, n_steps
        ctx.save_for_backward(x1)
        return x1

    @staticmethod
    def backward(ctx, grad_out):
        (x1,) = ctx.saved_tensors
        model, n = ctx.model, ctx.n_steps
        h = 1.0 / n
        a = grad_out
        x = x1.detach()
        for k in range(n - 1, -1, -1):
            t_k = k * h
            with torch.no_grad():
                tt = torch.full((x.shape[0],), (k + 1) * h, dtype=x.dtype)
                x_prev = x - h * model(x, tt)  # reverse-time Euler step (state reconstruction)
            with torch.enable_grad():
                xp = x_prev.detach().requires_grad_(True)
                tt = torch.full((x.shape[0],), t_k, dtype=x.dtype)
                x_next = xp + h * model(xp, tt)
                (a,) = torch.autograd.grad(x_next, xp, grad_outputs=a)
                if hasattr(model, "nfe"):
                    model.nfe += 1  # the VJP's backward pass
            x = x_prev
        return a, None, None


def flow_map(model, z0: Tensor, n_steps: int, method: str = "euler", *, adjoint: bool = False) -> Tensor:
    """``T(z0)`` with a graph: backprop through every step, or the adjoint method (Euler)."""
    if adjoint:
        if method != "euler":
            raise ValueError("the adjoint variant is implemented for method='euler' only")
        return _EulerAdjoint.apply(z0, model, n_steps)
    return _solve(model, z0, 0.0, 1.0, n_steps, method, grad=True)


def d_flow_objective(model, op: LinearOperator, y: Tensor, z0: Tensor, config: DFlowConfig | None = None,
                     ) -> Tensor:
    """``D(T(z0)) + lam R(z0)`` per image, shape (B,) (paper Eq. 1 with D-Flow's regulariser)."""
    cfg = config or DFlowConfig()
    _check_inputs(op, y)
    x = flow_map(model, z0, cfg.n_steps, cfg.method, adjoint=cfg.adjoint)
    return op.data_fidelity(x, y) + cfg.lam * radial_gaussian_reg(z0)


def d_flow(model, op: LinearOperator, y: Tensor, config: DFlowConfig | None = None) -> ReconResult:
    """D-Flow: optimise the initial noise by LBFGS, backpropagating through the ODE solver
    (or through the adjoint method, ``config.adjoint``). The batch is one LBFGS problem (the
    objectives of the images are summed; they are independent)."""
    cfg = config or DFlowConfig()
    _check_inputs(op, y)
    counted = _Counted(model)
    n_evals = cfg.resolved_evals()
    per_forward = cfg.n_steps * FIXED_METHODS[cfg.method]
    with torch.no_grad():
        z0 = blend_init(counted, op, y, n_steps=cfg.n_steps, method=cfg.method, alpha=cfg.alpha,
                        seed=cfg.seed)
    z = z0.clone().requires_grad_(True)
    opt = torch.optim.LBFGS([z], lr=cfg.lr, max_iter=n_evals, max_eval=n_evals,
                            history_size=cfg.history_size, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-10, tolerance_change=1e-14)
    losses: list[float] = []

    def closure():
        opt.zero_grad()
        loss = d_flow_objective(counted, op, y, z, cfg).sum()
        loss.backward()
        if not cfg.adjoint:
            counted.nfe += per_forward  # backward pass through N steps
        losses.append(float(loss.detach()) / y.shape[0])
        return loss

    opt.step(closure)
    with torch.no_grad():
        x = _solve(counted, z.detach(), 0.0, 1.0, cfg.n_steps, cfg.method)
    return ReconResult(x=x, nfe=int(counted.nfe), method="d_flow_adjoint" if cfg.adjoint else "d_flow",
                       info={"evals": len(losses), "losses": losses, "z0": z.detach()})


# ----------------------------------------------------------------------------------------------
# guidance / plug-and-play baselines
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PnPFlowConfig:
    """Settings of :func:`pnp_flow` (Martin et al., ICLR 2025, arXiv:2410.02423).

    Defaults from the PnP-Flow benchmark config: ``lr = 1.0`` in units of ``sigma^2`` (the step on
    the data term is ``lr sigma^2 (1 - t)^gamma_alpha grad D``), ``gamma_alpha = 0.5``,
    ``n_avg = 5`` noise draws per step, 100 steps (or ``nfe_budget // n_avg``).
    """

    steps: int = 100
    lr: float = 1.0
    gamma_alpha: float = 0.5
    n_avg: int = 5
    seed: int = 0
    nfe_budget: int | None = None

    def __post_init__(self) -> None:
        if self.steps < 1 or self.n_avg < 1 or self.lr < 0 or self.gamma_alpha < 0:
            raise ValueError("need steps >= 1, n_avg >= 1, lr >= 0, gamma_alpha >= 0")
        _check_budget(self.nfe_budget)

    def resolved_steps(self) -> int:
        return self.steps if self.nfe_budget is None else max(1, self.nfe_budget // self.n_avg)


def pnp_flow(model, op: LinearOperator, y: Tensor, config: PnPFlowConfig | None = None) -> ReconResult:
    """PnP-Flow: forward-backward splitting with the flow's time-dependent denoiser.

    For ``t_j = j / steps``: ``z = x - lr_t grad D(x)``; ``x = mean_i D_t(t z + (1 - t) eps_i)``
    with ``D_t(u) = u + (1 - t) v(u, t)``. Starts from ``A^+ y``.
    """
    cfg = config or PnPFlowConfig()
    _check_inputs(op, y)
    counted = _Counted(model)
    steps = cfg.resolved_steps()
    g = torch.Generator().manual_seed(int(cfg.seed))
    with torch.no_grad():
        x = op.pinv(y)
        for j in range(steps):
            t = j / steps
            lr_t = cfg.lr * op.sigma**2 * (1.0 - t) ** cfg.gamma_alpha
            zz = x - lr_t * op.grad_data(x, y) if cfg.lr > 0 else x
            tt = torch.full((x.shape[0],), t, dtype=x.dtype)
            acc = torch.zeros_like(x)
            for _ in range(cfg.n_avg):
                u = t * zz + (1.0 - t) * torch.randn(x.shape, generator=g, dtype=x.dtype)
                acc = acc + u + (1.0 - t) * counted(u, tt)
            x = acc / cfg.n_avg
    return ReconResult(x=x, nfe=int(counted.nfe), method="pnp_flow", info={"steps": steps})


@dataclass(frozen=True)
class OTODEConfig:
    """Settings of :func:`ot_ode` (Pokle et al., TMLR 2024, arXiv:2310.04432): start time 0.2,
    constant guidance weight ``gamma`` (1 = the Bayes-consistent weight), Euler steps; each step
    costs 2 NFE (a VJP through the network), so ``steps = nfe_budget // 2``."""

    steps: int = 100
    t_start: float = 0.2
    gamma: float = 1.0
    seed: int = 0
    nfe_budget: int | None = None

    def __post_init__(self) -> None:
        if self.steps < 1 or not 0 < self.t_start < 1 or self.gamma < 0:
            raise ValueError("need steps >= 1, 0 < t_start < 1, gamma >= 0")
        _check_budget(self.nfe_budget)

    def resolved_steps(self) -> int:
        return self.steps if self.nfe_budget is None else max(1, self.nfe_budget // 2)


def ot_ode(model, op: LinearOperator, y: Tensor, config: OTODEConfig | None = None) -> ReconResult:
    """OT-ODE: the conditional velocity ``v + gamma (1 - t)/t grad_x log p(y | x_t)`` with the
    PiGDM likelihood approximation ``p(y | x_t) = N(A xhat_1, r_t^2 A A^T + sigma^2 I)``,
    ``xhat_1 = x + (1 - t) v``, ``r_t^2 = (1 - t)^2 / (t^2 + (1 - t)^2)``.

    ``(1 - t)/t`` converts a score correction into a velocity correction on the straight path
    (Tweedie: ``E[x_1 | x_t] = (x_t + (1 - t)^2 grad log p_t) / t``). Starts from
    ``x_{t0} = t0 A^+ y + (1 - t0) eps``.
    """
    cfg = config or OTODEConfig()
    _check_inputs(op, y)
    counted = _Counted(model)
    steps = cfg.resolved_steps()
    t0 = cfg.t_start
    eps = _noise((y.shape[0], op.d), y, cfg.seed)
    x = t0 * op.pinv(y) + (1 - t0) * eps
    h = (1.0 - t0) / steps
    sig2 = max(op.sigma**2, 1e-8)
    for j in range(steps):
        t = t0 + j * h
        tt = torch.full((x.shape[0],), t, dtype=x.dtype)
        if cfg.gamma > 0:
            with torch.enable_grad():
                xg = x.detach().requires_grad_(True)
                v = counted(xg, tt)
                x1 = xg + (1 - t) * v
                r2 = (1 - t) ** 2 / (t**2 + (1 - t) ** 2)
                u = op.solve_meas((y - op.A(x1)).detach(), r2, sig2)
                (gx,) = torch.autograd.grad(x1, xg, grad_outputs=op.At(u))
                counted.nfe += 1
            v = v.detach() + cfg.gamma * (1 - t) / t * gx
        else:
            with torch.no_grad():
                v = counted(x, tt)
        x = (x + h * v).detach()
    return ReconResult(x=x, nfe=int(counted.nfe), method="ot_ode", info={"steps": steps})


@dataclass(frozen=True)
class FlowDPSConfig:
    """Settings of :func:`flow_dps`, a FlowDPS-style sampler (Kim et al., 2025, arXiv:2503.08136):
    at each Euler step the clean estimate takes a data-consistency gradient step and the state is
    rebuilt from it and the noise estimate. Deterministic (no noise re-injection: ours). ``zeta``
    is the step in units of ``sigma^2`` (``zeta sigma^2 grad D = zeta A^T (A x - y)``)."""

    steps: int = 100
    zeta: float = 1.0
    seed: int = 0
    nfe_budget: int | None = None

    def __post_init__(self) -> None:
        if self.steps < 1 or self.zeta < 0:
            raise ValueError("need steps >= 1 and zeta >= 0")
        _check_budget(self.nfe_budget)

    def resolved_steps(self) -> int:
        return self.steps if self.nfe_budget is None else self.nfe_budget


def flow_dps(model, op: LinearOperator, y: Tensor, config: FlowDPSConfig | None = None) -> ReconResult:
    """FlowDPS-style guided sampling from ``x_0 ~ N(0, I)`` (seeded by ``config.seed``):
    ``xhat_1 = x + (1 - t) v``, ``xhat_0 = x - t v``, ``xhat_1 <- xhat_1 - zeta sigma^2 grad D(xhat_1)``,
    ``x_{t+h} = (t + h) xhat_1 + (1 - t - h) xhat_0``."""
    cfg = config or FlowDPSConfig()
    _check_inputs(op, y)
    counted = _Counted(model)
    steps = cfg.resolved_steps()
    x = _noise((y.shape[0], op.d), y, cfg.seed)
    h = 1.0 / steps
    with torch.no_grad():
        for j in range(steps):
            t = j * h
            v = counted(x, torch.full((x.shape[0],), t, dtype=x.dtype))
            x1 = x + (1 - t) * v
            x0 = x - t * v
            if cfg.zeta > 0:
                x1 = x1 - cfg.zeta * op.sigma**2 * op.grad_data(x1, y)
            x = (t + h) * x1 + (1 - t - h) * x0
    return ReconResult(x=x, nfe=int(counted.nfe), method="flow_dps", info={"steps": steps})


@dataclass(frozen=True)
class TikhonovConfig:
    """``argmin_x D(x) + alpha/2 ||x - center||^2`` (exact, ``op.prox``); ``center`` defaults to 0
    (the experiment passes the training mean image)."""

    alpha: float = 1.0
    center: Tensor | None = None

    def __post_init__(self) -> None:
        if not self.alpha > 0:
            raise ValueError(f"alpha must be > 0, got {self.alpha}")


def tikhonov(model, op: LinearOperator, y: Tensor, config: TikhonovConfig | None = None) -> ReconResult:
    """Tikhonov reference (no generative prior; ``model`` is ignored, kept for the signature)."""
    cfg = config or TikhonovConfig()
    _check_inputs(op, y)
    c = torch.zeros(y.shape[0], op.d, dtype=y.dtype) if cfg.center is None else \
        cfg.center.to(y.dtype).reshape(1, -1).expand(y.shape[0], -1)
    return ReconResult(x=op.prox(c, y, cfg.alpha), nfe=0, method="tikhonov")


METHODS = {"ms_flow": (ms_flow, MSFlowConfig), "d_flow": (d_flow, DFlowConfig),
           "pnp_flow": (pnp_flow, PnPFlowConfig), "ot_ode": (ot_ode, OTODEConfig),
           "flow_dps": (flow_dps, FlowDPSConfig), "tikhonov": (tikhonov, TikhonovConfig)}


def with_budget(config, nfe_budget: int):
    """A copy of a solver config with ``nfe_budget`` set (Tikhonov has none: returned as is)."""
    return replace(config, nfe_budget=nfe_budget) if hasattr(config, "nfe_budget") else config

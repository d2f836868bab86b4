"""Hierarchical SIR with function-valued observations at irregular times (the brief's T3), and
its reference posterior from the exact likelihood.

Model (a hierarchical version of sbibm's ``sir``; constants are laptop-scale choices):
``g = log beta ~ N(log 0.5, 0.25^2)`` (global infection rate), ``l_m = log gamma_m ~
N(log 0.2, 0.2^2)`` (per-site recovery rate), and per site ``K`` observation times
``s_{m,1..K} ~ U(0, horizon)`` drawn independently for every site (irregular), with
``y_{m,k} = I_m(s_{m,k}) + N(0, noise^2)`` where ``(S, I)`` solve
``S' = -beta S I``, ``I' = beta S I - gamma_m I`` from ``S(0) = 1 - i0``, ``I(0) = i0``
(fractions of the population). The ODE is solved with :func:`scipy.integrate.solve_ivp`
(RK45, rtol = 1e-7, atol = 1e-9), a batch of parameter pairs stacked into one vectorised system, on a
fine time grid; values at the observation times are read off by linear interpolation (grid step
``horizon / 600``; the interpolation error is below 1e-4, far below the noise).

The times are the functional inputs of the ``y`` tokens (``func_inputs={"y": times}``).

Reference posterior: ``p(g, l_{1:M} | y, s) ∝ p(g) prod_m p(l_m) p(y_m | g, l_m, s_m)`` with
the exact Gaussian likelihood, computed on a ``n_grid x n_grid`` grid of ``(g, l)`` (the ODE
solution on the grid does not depend on the observation, so it is solved once): ``g`` is drawn
from its grid marginal, each ``l_m`` from its grid conditional given ``g`` (sites are
conditionally independent given ``g``), both jittered uniformly within their grid cell.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from scipy.integrate import solve_ivp
from torch import Tensor

from .hierarchical import HierarchicalSimulator

_N_FINE = 601


def _sir_rhs(beta: np.ndarray, gamma: np.ndarray):
    def f(_t, z):
        s, i = z[: beta.size], z[beta.size:]
        inf = beta * s * i
        return np.concatenate([-inf, inf - gamma * i])
    return f


def sir_infected(beta: np.ndarray, gamma: np.ndarray, horizon: float, i0: float) -> np.ndarray:
    """Infected fraction ``I(t)`` on ``_N_FINE`` equally spaced times in ``[0, horizon]`` for
    each pair ``(beta[j], gamma[j])``: shape ``(len(beta), _N_FINE)`` (one scipy solve)."""
    beta = np.asarray(beta, dtype=float).ravel()
    gamma = np.asarray(gamma, dtype=float).ravel()
    if beta.shape != gamma.shape or not (np.all(beta > 0) and np.all(gamma > 0)):
        raise ValueError("beta and gamma must be positive arrays of equal length")
    grid = np.linspace(0.0, horizon, _N_FINE)
    z0 = np.concatenate([np.full(beta.size, 1.0 - i0), np.full(beta.size, i0)])
    sol = solve_ivp(_sir_rhs(beta, gamma), (0.0, horizon), z0, t_eval=grid, rtol=1e-7,
                    atol=1e-9)
    if not sol.success:  # pragma: no cover - the SIR system is smooth and bounded
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return sol.y[beta.size:]


def _interp(curves: np.ndarray, times: np.ndarray, horizon: float) -> np.ndarray:
    """``curves`` (..., _N_FINE) on the fine grid read at ``times`` (..., K) (broadcast)."""
    u = np.clip(times / horizon * (_N_FINE - 1), 0.0, _N_FINE - 1 - 1e-9)
    j = np.floor(u).astype(int)
    w = u - j
    c0 = np.take_along_axis(curves, np.broadcast_to(j, curves.shape[:-1] + j.shape[-1:]), -1)
    c1 = np.take_along_axis(curves, np.broadcast_to(j + 1, curves.shape[:-1] + j.shape[-1:]), -1)
    return (1 - w) * c0 + w * c1


class HierarchicalSIR(HierarchicalSimulator):
    """Hierarchical SIR: global ``g = log beta``, local ``l_m = log gamma_m``, observations
    ``y_m`` (``n_obs`` noisy infected fractions) at irregular times ``t_obs_m``.

    ``simulate`` returns ``{"y": (n, M, K), "t_obs": (n, M, K)}``: ``t_obs`` are the functional
    inputs of ``y`` (not an observation variable; :attr:`obs_names` is ``("y",)``).
    """

    global_names = ("g",)
    local_names = ("l",)
    obs_names = ("y",)

    def __init__(self, n_obs: int = 5, horizon: float = 30.0, noise: float = 0.03,
                 i0: float = 0.01, g_mean: float = float(np.log(0.5)), g_sd: float = 0.25,
                 l_mean: float = float(np.log(0.2)), l_sd: float = 0.2) -> None:
        super().__init__()
        if n_obs < 1 or horizon <= 0 or noise <= 0 or not 0 < i0 < 1 or g_sd <= 0 or l_sd <= 0:
            raise ValueError("need n_obs >= 1, horizon > 0, noise > 0, 0 < i0 < 1, sds > 0")
        self.n_obs, self.horizon, self.noise, self.i0 = int(n_obs), float(horizon), float(noise), i0
        self.g_mean, self.g_sd, self.l_mean, self.l_sd = g_mean, g_sd, l_mean, l_sd

    def _global(self, n, gen):
        return {"g": self.g_mean + self.g_sd * torch.randn(n, 1, generator=gen)}

    def _local(self, glob, m, gen):
        n = glob["g"].shape[0]
        return {"l": self.l_mean + self.l_sd * torch.randn(n, m, 1, generator=gen)}

    def _simulate_sites(self, theta, gen):
        g, loc = theta["g"], theta["l"]
        n, m = loc.shape[:2]
        beta = np.exp(g.double().numpy()[:, 0]).repeat(m)
        gamma = np.exp(loc.double().numpy().reshape(-1))
        curves = sir_infected(beta, gamma, self.horizon, self.i0)  # (n*m, fine)
        times = torch.rand(n * m, self.n_obs, generator=gen, dtype=torch.float64) * self.horizon
        times = torch.sort(times, -1).values
        vals = _interp(curves, times.numpy(), self.horizon)
        y = torch.from_numpy(vals) + self.noise * torch.randn(vals.shape, generator=gen,
                                                              dtype=torch.float64)
        return {"y": y.reshape(n, m, self.n_obs).float(),
                "t_obs": times.reshape(n, m, self.n_obs).float()}

    # ---------------------------------------------------------------- reference posterior
    def grid(self, n_grid: int = 120, width: float = 4.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(g grid, l grid, I curves (n_grid, n_grid, fine))`` over ``mean +- width sd``
        (cached per settings)."""
        return _grid(self.g_mean, self.g_sd, self.l_mean, self.l_sd, self.horizon, self.i0,
                     n_grid, width)

    def posterior_sample(self, y: Tensor, t_obs: Tensor, n: int, gen: np.random.Generator,
                         n_grid: int = 120) -> dict[str, np.ndarray]:
        """``n`` reference posterior draws ``{"g": (n, 1), "l": (n, M, 1)}`` given ``y`` and
        ``t_obs`` of shape (M, K), from the exact likelihood on the grid."""
        y = np.asarray(y, dtype=float)
        t_obs = np.asarray(t_obs, dtype=float)
        if y.ndim != 2 or y.shape != t_obs.shape:
            raise ValueError(f"y and t_obs must both have shape (M, K), got {y.shape}, {t_obs.shape}")
        gg, ll, curves = self.grid(n_grid)
        m = y.shape[0]
        # log p(y_m | g_i, l_j): (M, n_g, n_l)
        u = np.clip(t_obs / self.horizon * (_N_FINE - 1), 0.0, _N_FINE - 1 - 1e-9)
        j = np.floor(u).astype(int)
        w = u - j
        pred = np.stack([(1 - w[k]) * curves[..., j[k]] + w[k] * curves[..., j[k] + 1]
                         for k in range(m)])  # (M, n_g, n_l, K)
        loglik = -0.5 * (((y[:, None, None, :] - pred) / self.noise) ** 2).sum(-1)
        log_pl = -0.5 * ((ll - self.l_mean) / self.l_sd) ** 2
        site = loglik + log_pl[None, None, :]  # (M, n_g, n_l)
        site_max = site.max(-1, keepdims=True)
        log_marg = (site_max[..., 0] + np.log(np.exp(site - site_max).sum(-1)))  # (M, n_g)
        log_pg = -0.5 * ((gg - self.g_mean) / self.g_sd) ** 2 + log_marg.sum(0)
        pg = np.exp(log_pg - log_pg.max())
        pg /= pg.sum()
        dg, dl = gg[1] - gg[0], ll[1] - ll[0]
        gi = gen.choice(gg.size, size=n, p=pg)
        out_l = np.empty((n, m))
        for k in range(m):
            cond = site[k, gi]  # (n, n_l)
            p = np.exp(cond - cond.max(-1, keepdims=True))
            cdf = np.cumsum(p, -1)
            u = gen.random(n)[:, None] * cdf[:, -1:]
            lj = np.minimum((cdf < u).sum(-1), ll.size - 1)
            out_l[:, k] = ll[lj] + (gen.random(n) - 0.5) * dl
        g = gg[gi] + (gen.random(n) - 0.5) * dg
        return {"g": g[:, None], "l": out_l[:, :, None]}

    def flat_prior(self, n_sites: int):
        """Independent normal prior of the flattened ``[g, l_1, ..., l_M]`` (for sbi)."""
        mean = torch.tensor([self.g_mean] + [self.l_mean] * n_sites, dtype=torch.float32)
        sd = torch.tensor([self.g_sd] + [self.l_sd] * n_sites, dtype=torch.float32)
        return torch.distributions.Independent(torch.distributions.Normal(mean, sd), 1)


@lru_cache(maxsize=4)
def _grid(g_mean, g_sd, l_mean, l_sd, horizon, i0, n_grid, width):
    gg = np.linspace(g_mean - width * g_sd, g_mean + width * g_sd, n_grid)
    ll = np.linspace(l_mean - width * l_sd, l_mean + width * l_sd, n_grid)
    b, c = np.meshgrid(np.exp(gg), np.exp(ll), indexing="ij")
    curves = sir_infected(b.ravel(), c.ravel(), horizon, i0).reshape(n_grid, n_grid, _N_FINE)
    return gg, ll, curves

"""Hierarchical simulators with a simulator-call counter, the hierarchical Gaussian linear task
with its exact posterior, and likelihood-factorised (LF) training (TFMPE, arXiv:2604.20723).

Model: global ``g ~ p(g)``, sites ``m = 1..M`` with local ``l_m ~ p(l | g)`` and observations
``y_m ~ p(y | g, l_m)``. LF training (the official ``fit_bottom_up``, first round, in
``tfmpe/estimators/training/bottom_up.py`` of github.com/mrc-ide/tfmpe):

1. simulate ``N`` single-site tuples ``(g_i, l_i, y_i)`` (N simulator calls, no multi-site call);
2. train a per-site likelihood surrogate ``q(y | g, l)`` with TFMPE itself (targets ``y``,
   conditions ``g, l``: the official code uses the same estimator class with the roles swapped);
3. draw synthetic sets: ``g ~ p(g)``, ``M ~ U{min_sites..max_sites}``, ``l_{1:M} ~ p(l | g)``,
   ``y_m ~ q(y | g, l_m)`` (ODE samples of the surrogate, no simulator calls);
4. train the posterior TFMPE on the synthetic sets, mixed with the real single-site tuples as
   ``M = 1`` examples (the official code concatenates them when one model serves both fits).

Differences from the official code, on purpose: one round only (the official multi-round variant
refines the proposal with truncated SIR around one observation; we amortise over observations);
``M`` is drawn per synthetic set (the official code uses a fixed ``n_groups``) so that the
posterior covers any number of sites; the number of synthetic sets ``n_synthetic`` is a knob
(the official code uses one per simulated global draw, ``n_synthetic = N``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from .estimator import TFMPE
from .tokens import Labeller


@dataclass
class CallCounter:
    """Simulator calls: ``site_calls`` = single sites simulated in total, ``multisite_calls`` =
    calls that simulated more than one site at once (a full hierarchical data set),
    ``by_sites`` = number of data sets simulated per number of sites."""

    site_calls: int = 0
    multisite_calls: int = 0
    by_sites: dict[int, int] = field(default_factory=dict)

    def record(self, n: int, m: int) -> None:
        self.site_calls += n * m
        if m > 1:
            self.multisite_calls += n
        self.by_sites[m] = self.by_sites.get(m, 0) + n


class HierarchicalSimulator:
    """Base class: subclasses implement ``_global``, ``_local`` and ``_simulate_sites``.

    ``simulate(glob, loc)`` is the (counted) simulator: it maps a batch of parameters with ``M``
    sites to observations of ``M`` sites and records ``n * M`` site simulations.
    """

    global_names: tuple[str, ...] = ()
    local_names: tuple[str, ...] = ()
    obs_names: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.counter = CallCounter()

    @property
    def labeller(self) -> Labeller:
        return Labeller([*self.obs_names, *self.global_names, *self.local_names])

    def sample_global(self, n: int, gen: torch.Generator | None = None) -> dict[str, Tensor]:
        return self._global(n, gen)

    def sample_local(self, glob: dict[str, Tensor], n_sites: int,
                     gen: torch.Generator | None = None) -> dict[str, Tensor]:
        if n_sites < 1:
            raise ValueError(f"n_sites must be >= 1, got {n_sites}")
        return self._local(glob, n_sites, gen)

    def prior(self, n: int, n_sites: int, gen: torch.Generator | None = None) -> dict[str, Tensor]:
        """Joint prior draw ``{global..., local...}`` with ``n_sites`` sites."""
        g = self.sample_global(n, gen)
        return {**g, **self.sample_local(g, n_sites, gen)}

    def simulate(self, theta: dict[str, Tensor], gen: torch.Generator | None = None) -> dict[str, Tensor]:
        """Counted simulator call on ``theta`` (globals ``(n, ...)``, locals ``(n, M, ...)``)."""
        m = int(theta[self.local_names[0]].shape[1])
        n = int(theta[self.local_names[0]].shape[0])
        self.counter.record(n, m)
        return self._simulate_sites(theta, gen)

    def _global(self, n, gen):  # pragma: no cover - abstract
        raise NotImplementedError

    def _local(self, glob, m, gen):  # pragma: no cover - abstract
        raise NotImplementedError

    def _simulate_sites(self, theta, gen):  # pragma: no cover - abstract
        raise NotImplementedError


class HierarchicalGaussianLinear(HierarchicalSimulator):
    """``g ~ N(0, I_D)``, ``l_m | g ~ N(g, tau^2 I_D)``, ``y_m | l_m ~ N(l_m, sigma^2 I_D)``.

    A hierarchical version of sbibm's ``gaussian_linear`` (brief's T1: D = 2, tau = 1,
    sigma = 0.5). The joint posterior of ``(g, l_{1:M})`` is Gaussian (:meth:`posterior`).
    """

    global_names = ("g",)
    local_names = ("l",)
    obs_names = ("y",)

    def __init__(self, dim: int = 2, tau: float = 1.0, sigma: float = 0.5) -> None:
        super().__init__()
        if dim < 1 or tau <= 0 or sigma <= 0:
            raise ValueError("dim >= 1, tau > 0 and sigma > 0 are required")
        self.dim, self.tau, self.sigma = int(dim), float(tau), float(sigma)

    def _global(self, n, gen):
        return {"g": torch.randn(n, self.dim, generator=gen)}

    def _local(self, glob, m, gen):
        g = glob["g"]
        return {"l": g[:, None, :] + self.tau * torch.randn(g.shape[0], m, self.dim, generator=gen)}

    def _simulate_sites(self, theta, gen):
        loc = theta["l"]
        return {"y": loc + self.sigma * torch.randn(loc.shape, generator=gen)}

    def posterior(self, y: Tensor) -> tuple[np.ndarray, np.ndarray]:
        """Exact posterior of ``theta = (g, l_1, ..., l_M)`` flattened as ``[g, l_1, ..., l_M]``
        (each a D-vector) given ``y`` of shape (M, D): ``(mean (D(M+1),), cov (D(M+1), D(M+1)))``.

        Per coordinate (the model is isotropic) the prior of ``(g, l_1..l_M)`` has covariance
        ``P = 1 1^T + tau^2 diag(0, 1, ..., 1)`` and ``y = H theta + noise`` with
        ``H = [0, I_M]``: ``Sigma = (P^-1 + H^T H / sigma^2)^-1``, ``mu = Sigma H^T y / sigma^2``.
        """
        y = np.asarray(y.detach().double() if isinstance(y, Tensor) else y, dtype=float)
        if y.ndim != 2 or y.shape[1] != self.dim:
            raise ValueError(f"y must have shape (M, {self.dim}), got {y.shape}")
        m = y.shape[0]
        p = np.ones((m + 1, m + 1)) + self.tau**2 * np.diag([0.0] + [1.0] * m)
        h = np.hstack([np.zeros((m, 1)), np.eye(m)])
        prec = np.linalg.inv(p) + h.T @ h / self.sigma**2
        cov1 = np.linalg.inv(prec)
        mean1 = cov1 @ h.T @ y / self.sigma**2  # (M+1, D): one column per coordinate
        cov = np.kron(cov1, np.eye(self.dim))  # order [g_1..g_D, l_11..l_1D, ...]
        return mean1.reshape(-1), cov

    def posterior_sample(self, y: Tensor, n: int, gen: np.random.Generator) -> dict[str, np.ndarray]:
        """``n`` exact posterior draws ``{"g": (n, D), "l": (n, M, D)}``."""
        mean, cov = self.posterior(y)
        s = gen.multivariate_normal(mean, cov, size=n)
        return {"g": s[:, :self.dim], "l": s[:, self.dim:].reshape(n, -1, self.dim)}

    def flat_prior(self, n_sites: int):
        """The joint prior of the flattened ``[g, l_1, ..., l_M]`` as a torch distribution (for
        sbi's flat baselines)."""
        m = n_sites
        p = np.ones((m + 1, m + 1)) + self.tau**2 * np.diag([0.0] + [1.0] * m)
        cov = torch.tensor(np.kron(p, np.eye(self.dim)), dtype=torch.float32)
        return torch.distributions.MultivariateNormal(torch.zeros(cov.shape[0]), cov)


def simulate_multisite(sim: HierarchicalSimulator, site_budget: int, min_sites: int,
                       max_sites: int, gen: torch.Generator) -> list[tuple[dict, dict]]:
    """Real multi-site data sets with ``M ~ U{min_sites..max_sites}`` until ``site_budget``
    single-site simulations are spent (the last set is shrunk to fit). Returns ``[(theta, x)]``
    grouped by ``M``."""
    if not 1 <= min_sites <= max_sites or site_budget < 1:
        raise ValueError("need 1 <= min_sites <= max_sites and a positive budget")
    ms, left = [], site_budget
    while left > 0:
        m = int(torch.randint(min_sites, max_sites + 1, (1,), generator=gen))
        m = min(m, left)
        ms.append(m)
        left -= m
    out = []
    for m in sorted(set(ms)):
        n = ms.count(m)
        theta = sim.prior(n, m, gen)
        out.append((theta, sim.simulate(theta, gen)))
    return out


@dataclass
class LFResult:
    """What :func:`lf_train` returns: the posterior, the surrogate, and the simulator calls
    spent (``site_calls`` single-site simulations, ``multisite_calls`` multi-site ones)."""

    posterior: TFMPE
    surrogate: TFMPE
    site_calls: int
    multisite_calls: int
    n_synthetic: int


def lf_train(sim: HierarchicalSimulator, n_sims: int, n_synthetic: int, max_sites: int, *,
             min_sites: int = 1, mix_real: bool = True, shuffle_surrogate: bool = False,
             surrogate_kwargs: dict | None = None, posterior_kwargs: dict | None = None,
             surrogate_train: dict | None = None, posterior_train: dict | None = None,
             sample_steps: int = 16, seed: int = 0) -> LFResult:
    """Likelihood-factorised TFMPE training from ``n_sims`` single-site simulations.

    Parameters
    ----------
    sim : HierarchicalSimulator
        Its counter records the calls; this function only ever calls it with ``M = 1``.
    n_sims : int
        Single-site simulator calls (the budget).
    n_synthetic : int
        Synthetic multi-site sets drawn from the surrogate.
    max_sites, min_sites : int
        Range of ``M`` of the synthetic sets.
    mix_real : bool, default True
        Add the real single-site tuples to the posterior's training set as ``M = 1`` examples.
    shuffle_surrogate : bool, default False
        Train the surrogate on ``y`` shuffled across tuples (a negative control: it keeps the
        marginal of ``y`` and destroys its dependence on ``(g, l)``).
    surrogate_kwargs, posterior_kwargs : dict
        ``model_kwargs`` of the two TFMPEs; ``surrogate_train``, ``posterior_train``: ``train()``
        keyword arguments.
    sample_steps : int
        Midpoint steps of the surrogate's ODE sampler.
    """
    if n_sims < 2 or n_synthetic < 1:
        raise ValueError("n_sims >= 2 and n_synthetic >= 1 are required")
    gen = torch.Generator().manual_seed(seed)
    before = (sim.counter.site_calls, sim.counter.multisite_calls)
    local = (*sim.local_names, *sim.obs_names)
    theta1 = sim.prior(n_sims, 1, gen)
    y1 = sim.simulate(theta1, gen)
    y_train = y1
    if shuffle_surrogate:
        perm = torch.randperm(n_sims, generator=gen)
        y_train = {k: v[perm] for k, v in y1.items()}
    lab = sim.labeller
    surrogate = TFMPE(local=local, labeller=lab, model_kwargs=surrogate_kwargs, seed=seed + 1)
    surrogate.append_simulations(y_train, theta1).train(**(surrogate_train or {}))

    posterior = TFMPE(lambda n, m: sim.prior(n, m), local=local, labeller=lab,
                      model_kwargs=posterior_kwargs, seed=seed + 2)
    ms = torch.randint(min_sites, max_sites + 1, (n_synthetic,), generator=gen)
    for m in sorted(set(ms.tolist())):
        n = int((ms == m).sum())
        theta = sim.prior(n, m, gen)
        # one surrogate draw per (set, site): condition on (g, l_m) with M = 1
        cond = {k: (v.reshape(n * m, 1, *v.shape[2:]) if k in sim.local_names
                    else v.repeat_interleave(m, 0)) for k, v in theta.items()}
        draws = surrogate.sample_batched(1, cond, steps=sample_steps, generator=gen)
        y = {k: v[0].reshape(n, m, *v.shape[3:]) for k, v in draws.items()}
        posterior.append_simulations(theta, y)
    if mix_real:
        posterior.append_simulations(theta1, y1)
    posterior.train(**(posterior_train or {}))
    return LFResult(posterior=posterior, surrogate=surrogate,
                    site_calls=sim.counter.site_calls - before[0],
                    multisite_calls=sim.counter.multisite_calls - before[1],
                    n_synthetic=n_synthetic)

"""Batched online decision-making environments with exact regret accounting.

Every environment holds B independent task instances and advances them in lock-step, the unit
an LM-agent or a vectorised policy works in. ``step`` returns the observed rewards and records the
*pseudo-regret* of the chosen actions against the true means (stochastic bandits), the dynamic
regret against the per-round best arm (non-stationary bandits), or the external regret against
the best fixed action in hindsight (full-information experts), as defined in Park et al. (arXiv
2511.04393, Sec. 2) and Lattimore & Szepesvári (2020, Ch. 4):

* stochastic MAB: ``Regret(T) = sum_t (max_a mu_a - mu_{a_t})``;
* non-stationary MAB: ``D-Regret(T) = sum_t (max_a mu_{t,a} - mu_{t,a_t})``;
* experts: ``Regret(T) = max_a sum_t R_{t,a} - sum_t <pi_t, R_t>``.

Arms beyond ``K`` of a padded action space (``k_max``) are never valid: choosing one is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from icml26.core.validation import check_positive, check_positive_int, check_real


def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _check_actions(actions: np.ndarray, batch: int, k: int) -> np.ndarray:
    a = np.asarray(actions)
    if a.shape != (batch,):
        raise ValueError(f"actions must have shape ({batch},), got {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"actions must be integers, got dtype {a.dtype}")
    if a.size and (a.min() < 0 or a.max() >= k):
        raise ValueError(f"actions must lie in [0, {k}), got range [{a.min()}, {a.max()}]")
    return a


@dataclass
class BanditBatch:
    """B stochastic K-armed bandits with horizon T; Bernoulli or Gaussian rewards.

    Parameters
    ----------
    means : array (B, K)
        True arm means; Bernoulli needs them in [0, 1].
    horizon : int
        T, the number of rounds.
    noise : "bernoulli" | "gaussian"
    sigma : float
        Reward standard deviation of the Gaussian process.
    """

    means: np.ndarray
    horizon: int
    noise: str = "bernoulli"
    sigma: float = 0.5
    seed: int | None = 0
    t: int = field(default=0, init=False)
    regret: np.ndarray = field(init=False)  # (B, T) per-round pseudo-regret

    def __post_init__(self) -> None:
        self.means = np.asarray(self.means, dtype=float)
        if self.means.ndim != 2 or self.means.shape[0] < 1 or self.means.shape[1] < 2:
            raise ValueError(f"means must have shape (B, K) with K >= 2, got {self.means.shape}")
        if not np.all(np.isfinite(self.means)):
            raise ValueError("means must be finite")
        self.horizon = check_positive_int(self.horizon, "horizon")
        if self.noise not in ("bernoulli", "gaussian"):
            raise ValueError(f"noise must be 'bernoulli' or 'gaussian', got {self.noise!r}")
        if self.noise == "bernoulli" and (self.means.min() < 0 or self.means.max() > 1):
            raise ValueError("Bernoulli means must lie in [0, 1]")
        check_positive(self.sigma, "sigma")
        self._rng = _rng(self.seed)
        self.regret = np.zeros((self.batch, self.horizon))

    @property
    def batch(self) -> int:
        return self.means.shape[0]

    @property
    def k(self) -> int:
        return self.means.shape[1]

    def mean_at(self, t: int) -> np.ndarray:
        """(B, K) arm means in round ``t`` (constant for a stationary bandit)."""
        return self.means

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._rng = _rng(seed)
        self.t = 0
        self.regret[:] = 0.0

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Pull one arm per instance; return the (B,) observed rewards and record regret."""
        if self.t >= self.horizon:
            raise RuntimeError(f"the episode is over (horizon {self.horizon}); call reset()")
        a = _check_actions(actions, self.batch, self.k)
        mu = self.mean_at(self.t)
        chosen = mu[np.arange(self.batch), a]
        self.regret[:, self.t] = mu.max(axis=1) - chosen
        if self.noise == "bernoulli":
            rewards = (self._rng.random(self.batch) < chosen).astype(float)
        else:
            rewards = chosen + self.sigma * self._rng.standard_normal(self.batch)
        self.t += 1
        return rewards

    def cumulative_regret(self) -> np.ndarray:
        """(B, t) cumulative regret of the rounds played so far."""
        return np.cumsum(self.regret[:, : self.t], axis=1)


@dataclass
class NonStationaryBanditBatch(BanditBatch):
    """Bernoulli bandits whose means drift: ``means_path`` (B, T, K) gives the means per round.

    ``variation`` (B,) is the variation budget ``V_T = sum_t ||mu_{t+1} - mu_t||_inf``. The
    regret recorded is the dynamic regret against the best arm of each round.
    """

    means_path: np.ndarray = field(default_factory=lambda: np.zeros((1, 1, 2)))

    def __post_init__(self) -> None:
        path = np.asarray(self.means_path, dtype=float)
        if path.ndim != 3 or path.shape[1] != self.horizon:
            raise ValueError(f"means_path must have shape (B, T={self.horizon}, K), got {path.shape}")
        self.means_path = path
        self.means = path[:, 0, :]
        super().__post_init__()
        if path.min() < 0 or path.max() > 1:
            raise ValueError("Bernoulli means must lie in [0, 1]")

    def mean_at(self, t: int) -> np.ndarray:
        return self.means_path[:, t, :]

    @property
    def variation(self) -> np.ndarray:
        return np.abs(np.diff(self.means_path, axis=1)).max(axis=2).sum(axis=1)


def sample_bandits(n: int, k: int, horizon: int, *, noise: str = "bernoulli", sigma: float = 0.5,
                   seed: int | None = 0) -> BanditBatch:
    """``n`` task instances with means drawn uniformly from [0, 1] (the usual MAB task prior)."""
    n, k = check_positive_int(n, "n"), check_positive_int(k, "k", minimum=2)
    rng = _rng(seed)
    return BanditBatch(rng.random((n, k)), horizon, noise=noise, sigma=sigma,
                       seed=int(rng.integers(2**31)))


def sample_nonstationary(n: int, k: int, horizon: int, *, variation: float = 1.0,
                         seed: int | None = 0) -> NonStationaryBanditBatch:
    """Bernoulli bandits whose means are redrawn at ``round(variation)`` uniformly placed change
    points (piecewise-constant drift, budget ~ ``variation``)."""
    n, k = check_positive_int(n, "n"), check_positive_int(k, "k", minimum=2)
    check_positive(variation, "variation", allow_zero=True)
    rng = _rng(seed)
    path = np.empty((n, horizon, k))
    changes = int(round(variation))
    for b in range(n):
        points = np.sort(rng.choice(np.arange(1, horizon), size=min(changes, horizon - 1),
                                    replace=False)) if horizon > 1 else np.array([], int)
        start, mu = 0, rng.random(k)
        for p in [*points.tolist(), horizon]:
            path[b, start:p] = mu
            start, mu = p, rng.random(k)
    return NonStationaryBanditBatch(means=path[:, 0], horizon=horizon, means_path=path,
                                    seed=int(rng.integers(2**31)))


@dataclass
class ExpertsBatch:
    """Full-information online learning: B reward sequences ``rewards`` (B, T, K) in [0, 1].

    Each round the agent plays a distribution ``pi`` (B, K) and sees the whole reward vector.
    """

    rewards: np.ndarray
    t: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        r = np.asarray(self.rewards, dtype=float)
        if r.ndim != 3 or r.shape[2] < 2:
            raise ValueError(f"rewards must have shape (B, T, K) with K >= 2, got {r.shape}")
        if not np.all(np.isfinite(r)):
            raise ValueError("rewards must be finite")
        self.rewards = r
        self.gained = np.zeros(r.shape[:2])

    @property
    def batch(self) -> int:
        return self.rewards.shape[0]

    @property
    def horizon(self) -> int:
        return self.rewards.shape[1]

    @property
    def k(self) -> int:
        return self.rewards.shape[2]

    def reset(self) -> None:
        self.t = 0
        self.gained[:] = 0.0

    def step(self, pi: np.ndarray) -> np.ndarray:
        """Play distributions ``pi`` (B, K); return the revealed (B, K) reward vectors."""
        if self.t >= self.horizon:
            raise RuntimeError("the episode is over; call reset()")
        pi = np.asarray(pi, dtype=float)
        if pi.shape != (self.batch, self.k):
            raise ValueError(f"pi must have shape ({self.batch}, {self.k}), got {pi.shape}")
        if np.any(pi < -1e-12) or not np.allclose(pi.sum(axis=1), 1.0, atol=1e-8):
            raise ValueError("each row of pi must be a probability distribution")
        r = self.rewards[:, self.t]
        self.gained[:, self.t] = (pi * r).sum(axis=1)
        self.t += 1
        return r

    def regret(self) -> np.ndarray:
        """(B,) external regret of the rounds played so far."""
        best = self.rewards[:, : self.t].sum(axis=1).max(axis=1)
        return best - self.gained[:, : self.t].sum(axis=1)


def sample_experts(n: int, k: int, horizon: int, *, gap: float = 0.1, seed: int | None = 0) -> ExpertsBatch:
    """Stochastic experts: Bernoulli rewards, one arm ``gap`` better than the others' base rate.

    Base rates are uniform on [0.2, 0.7], so ``gap`` must lie in [0, 0.3] (a larger gap would give
    a rate above 1, a negative one would make the best arm the worst)."""
    n, k = check_positive_int(n, "n"), check_positive_int(k, "k", minimum=2)
    horizon = check_positive_int(horizon, "horizon")
    if not 0.0 <= check_real(gap, "gap") <= 0.3:
        raise ValueError(f"gap must be a number in [0, 0.3] (base rates lie in [0.2, 0.7]), got {gap!r}")
    rng = _rng(seed)
    base = rng.uniform(0.2, 0.7, size=(n, 1, k))
    best = rng.integers(k, size=n)
    base[np.arange(n), 0, best] += gap
    return ExpertsBatch((rng.random((n, horizon, k)) < base).astype(float))


class SingleBanditEnv:
    """A gymnasium-style single-instance view of a stochastic bandit.

    ``reset(seed=None) -> (obs, info)`` and ``step(action) -> (obs, reward, terminated,
    truncated, info)`` with ``obs = (last action, last reward, t / T)``; no gymnasium import is
    needed (the signature is mimicked), and ``info["regret"]`` is the step's pseudo-regret.
    """

    def __init__(self, means, horizon: int, noise: str = "bernoulli", sigma: float = 0.5) -> None:
        self._env = BanditBatch(np.asarray(means, dtype=float)[None], horizon, noise=noise, sigma=sigma)

    def reset(self, seed: int | None = None):
        self._env.reset(seed)
        return np.array([-1.0, 0.0, 0.0]), {}

    def step(self, action: int):
        r = float(self._env.step(np.array([int(action)]))[0])
        t = self._env.t
        obs = np.array([float(action), r, t / self._env.horizon])
        return obs, r, t >= self._env.horizon, False, {"regret": float(self._env.regret[0, t - 1])}

"""Classical online-learning baselines, batched over task instances.

Each policy acts on B instances at once: ``act(rng) -> (B,) actions`` then
``update(actions, rewards)``. Definitions follow Lattimore & Szepesvári, *Bandit Algorithms*
(2020): UCB1 (Auer et al. 2002: index ``mean + sqrt(2 log t / n)``, each arm once first),
Thompson sampling with Beta(1, 1) priors for Bernoulli rewards (Gaussian N(0, 1) prior with unit
noise otherwise), epsilon-greedy, sliding-window UCB (Garivier & Moulines 2011, window ``tau``),
and Hedge for full information (exponential weights, learning rate ``sqrt(8 log K / T)``, the
rate of Cesa-Bianchi & Lugosi 2006, Thm 2.2, which gives regret <= sqrt(T log K / 2)).
"""

from __future__ import annotations

import math

import numpy as np

from icml26.core.validation import check_positive, check_positive_int

from .bandits import BanditBatch, ExpertsBatch


class _CountingPolicy:
    def __init__(self, batch: int, k: int) -> None:
        self.batch, self.k = check_positive_int(batch, "batch"), check_positive_int(k, "k", minimum=2)
        self.counts = np.zeros((batch, k))
        self.sums = np.zeros((batch, k))
        self.t = 0

    def update(self, actions: np.ndarray, rewards: np.ndarray) -> None:
        idx = np.arange(self.batch)
        self.counts[idx, actions] += 1
        self.sums[idx, actions] += rewards
        self.t += 1

    def _untried(self) -> np.ndarray | None:
        """The first untried arm per instance, or None once every arm was tried everywhere."""
        untried = self.counts == 0
        if not untried.any():
            return None
        return np.where(untried.any(axis=1), untried.argmax(axis=1), -1)


class UCB1(_CountingPolicy):
    """UCB1: index ``mean + sqrt(c log t / n)``; ``c = 2`` is Auer et al.'s constant (default),
    ``c = 0`` is greedy after one pull of each arm (a tuning grid's "off" setting)."""

    def __init__(self, batch: int, k: int, c: float = 2.0) -> None:
        super().__init__(batch, k)
        self.c = check_positive(c, "c", allow_zero=True)

    def act(self, rng: np.random.Generator) -> np.ndarray:
        first = self._untried()
        means = self.sums / np.maximum(self.counts, 1)
        bonus = np.sqrt(self.c * math.log(max(self.t, 1)) / np.maximum(self.counts, 1))
        a = np.argmax(means + bonus, axis=1)
        return a if first is None else np.where(first >= 0, first, a)


class EpsilonGreedy(_CountingPolicy):
    def __init__(self, batch: int, k: int, epsilon: float = 0.1) -> None:
        super().__init__(batch, k)
        self.epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
        if self.epsilon > 1:
            raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")

    def act(self, rng: np.random.Generator) -> np.ndarray:
        first = self._untried()
        greedy = np.argmax(self.sums / np.maximum(self.counts, 1), axis=1)
        explore = rng.random(self.batch) < self.epsilon
        a = np.where(explore, rng.integers(self.k, size=self.batch), greedy)
        return a if first is None else np.where(first >= 0, first, a)


class ThompsonSampling(_CountingPolicy):
    def __init__(self, batch: int, k: int, bernoulli: bool = True) -> None:
        super().__init__(batch, k)
        self.bernoulli = bernoulli

    def act(self, rng: np.random.Generator) -> np.ndarray:
        if self.bernoulli:
            draws = rng.beta(1.0 + self.sums, 1.0 + self.counts - self.sums)
        else:  # N(0, 1) prior, unit-variance likelihood: posterior N(S / (n + 1), 1 / (n + 1))
            draws = self.sums / (self.counts + 1) + rng.standard_normal(self.sums.shape) / np.sqrt(self.counts + 1)
        return np.argmax(draws, axis=1)


class SlidingWindowUCB:
    """UCB over the last ``window`` rounds only (for drifting means)."""

    def __init__(self, batch: int, k: int, window: int = 20, c: float = 2.0) -> None:
        self.batch, self.k = batch, check_positive_int(k, "k", minimum=2)
        self.window = check_positive_int(window, "window")
        self.c = check_positive(c, "c")
        self.history: list[tuple[np.ndarray, np.ndarray]] = []

    def act(self, rng: np.random.Generator) -> np.ndarray:
        recent = self.history[-self.window:]
        counts = np.zeros((self.batch, self.k))
        sums = np.zeros((self.batch, self.k))
        idx = np.arange(self.batch)
        for a, r in recent:
            counts[idx, a] += 1
            sums[idx, a] += r
        untried = counts == 0
        index = sums / np.maximum(counts, 1) + np.sqrt(
            self.c * math.log(max(min(len(self.history), self.window), 1)) / np.maximum(counts, 1))
        index[untried] = np.inf
        return np.argmax(index, axis=1)

    def update(self, actions: np.ndarray, rewards: np.ndarray) -> None:
        self.history.append((np.asarray(actions), np.asarray(rewards, dtype=float)))


class UniformRandom:
    def __init__(self, batch: int, k: int) -> None:
        self.batch, self.k = batch, k

    def act(self, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(self.k, size=self.batch)

    def update(self, actions: np.ndarray, rewards: np.ndarray) -> None:
        pass


def run_policy(policy, env: BanditBatch, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Play ``policy`` on every instance of ``env`` for its horizon; return the (B, T) actions
    and the (B, T) rewards it observed (``env.regret`` then holds the per-round regret)."""
    for attr in ("batch", "k"):  # a policy sized for another environment is refused, not clipped
        have = getattr(policy, attr, None)
        if have is not None and have != getattr(env, attr):
            raise ValueError(f"the policy has {attr}={have} but the environment has "
                             f"{attr}={getattr(env, attr)}")
    rng = np.random.default_rng(seed)
    env.reset(seed)
    actions = np.empty((env.batch, env.horizon), dtype=np.int64)
    rewards = np.empty((env.batch, env.horizon))
    for t in range(env.horizon):
        a = policy.act(rng)
        r = env.step(a)
        policy.update(a, r)
        actions[:, t], rewards[:, t] = a, r
    return actions, rewards


def hedge(env: ExpertsBatch, lr: float | None = None) -> np.ndarray:
    """Run Hedge on every instance; return the (B,) external regret."""
    env.reset()
    lr = math.sqrt(8 * math.log(env.k) / env.horizon) if lr is None else check_positive(lr, "lr")
    cum = np.zeros((env.batch, env.k))
    for _ in range(env.horizon):
        w = np.exp(lr * (cum - cum.max(axis=1, keepdims=True)))
        r = env.step(w / w.sum(axis=1, keepdims=True))
        cum += r
    return env.regret()

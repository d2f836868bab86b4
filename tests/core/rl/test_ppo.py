"""PPO in core.rl: GAE against a hand computation, bad input, and learning a tiny task."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.core.rl import PPOConfig, gae, train_ppo
from icml26.core.rl.ppo import PPO


class Corridor:
    """A batched corridor of length L: start at 0, action 1 moves right, 0 moves left; reward 1
    on reaching the end (which ends the episode), horizon 2L. Optimal return: 1 in L steps."""

    num_actions = 2

    def __init__(self, num_envs=16, length=5, seed=0):
        self.num_envs, self.L = num_envs, length
        self.obs_dim = length + 1
        self.pos = np.zeros(num_envs, int)
        self.t = np.zeros(num_envs, int)
        self.ret = np.zeros(num_envs)

    def _obs(self):
        o = np.zeros((self.num_envs, self.obs_dim), np.float32)
        o[np.arange(self.num_envs), self.pos] = 1
        return o

    def reset(self):
        self.pos[:] = 0
        self.t[:] = 0
        return self._obs()

    def step(self, a):
        self.pos = np.clip(self.pos + np.where(a == 1, 1, -1), 0, self.L)
        self.t += 1
        r = (self.pos == self.L).astype(np.float32)
        self.ret += r
        done = (self.pos == self.L) | (self.t >= 2 * self.L)
        info = {}
        if done.any():
            info = {"return": self.ret[done].copy()}
            self.pos[done], self.t[done], self.ret[done] = 0, 0, 0
        return self._obs(), r, done, info


def test_gae_matches_hand_computation():
    r = np.array([[1.0], [0.0], [2.0]])
    v = np.array([[0.5], [0.2], [0.1]])
    d = np.array([[0.0], [1.0], [0.0]])
    last = np.array([0.3])
    g, lam = 0.9, 0.5
    d2 = 2.0 + g * 0.3 - 0.1
    d1 = 0.0 - 0.2                      # the episode ends at t=1: no bootstrap
    d0 = 1.0 + g * 0.2 - 0.5
    expect = np.array([d0 + g * lam * d1, d1, d2])
    adv, ret = gae(r, v, d, last, g, lam)
    np.testing.assert_allclose(adv[:, 0], expect, rtol=1e-6)
    np.testing.assert_allclose(ret, adv + v, rtol=1e-6, atol=1e-6)


def test_ppo_config_rejects_bad_values():
    with pytest.raises(ValueError):
        PPOConfig(gamma=1.5)
    with pytest.raises(ValueError):
        PPOConfig(lr=0.0)
    with pytest.raises(TypeError):
        PPOConfig(num_steps=2.5)


def test_ppo_learns_corridor_to_optimal_return():
    env = Corridor(num_envs=16, length=5)
    cfg = PPOConfig(num_steps=32, hidden=32, lr=3e-3, ent_coef=0.0, gamma=0.9, gae_lambda=0.9)
    agent, curve = train_ppo(env, cfg, total_steps=16 * 32 * 40, seed=0)
    # random policy: reaching the end within 10 steps is rare; the optimum returns 1 every episode
    assert np.nanmean(curve[:3]) < 0.6
    assert np.nanmean(curve[-5:]) > 0.95
    obs = env.reset()
    for _ in range(5):
        a, _, _ = agent.act(obs, greedy=True)
        obs, r, d, _ = env.step(a)
    assert d.all() and (r == 1).all()  # the greedy policy walks straight to the end


# -- time limits: a truncated episode is bootstrapped, not taught as terminal -----------------
class _Forever:
    """Reward 1 on every step, no terminal state, a time limit of ``limit`` steps: the true value
    of every state is 1 / (1 - gamma). Reports truncations as core.rl.ppo documents (or not)."""

    num_actions, obs_dim = 2, 3

    def __init__(self, num_envs: int, limit: int, report: bool = True) -> None:
        self.num_envs, self.limit, self.report = num_envs, limit, report
        self.t = np.arange(num_envs) % limit  # staggered episodes

    def reset(self):
        return np.ones((self.num_envs, 3), np.float32)

    def step(self, actions):
        self.t += 1
        done = self.t >= self.limit
        info = {}
        if done.any():
            idx = np.flatnonzero(done)
            info = {"slot": idx, "return": np.full(len(idx), float(self.limit))}
            if self.report:
                info["truncated"] = np.ones(len(idx), bool)
                info["final_obs"] = np.ones((len(idx), 3), np.float32)
            self.t[idx] = 0
        return (np.ones((self.num_envs, 3), np.float32), np.ones(self.num_envs, np.float32),
                done, info)


def _constant_critic(ppo, value: float) -> None:
    head = ppo.net.critic[-1]
    with torch.no_grad():
        head.weight.zero_()
        head.bias.fill_(value)


@pytest.mark.parametrize("limit", [1, 3, 5])
def test_timeouts_are_bootstrapped_to_the_known_value(limit):
    """With V at the true value 1 / (1 - gamma), GAE(lambda=1) returns equal it at every step
    (the Bellman fixed point) when time-outs are bootstrapped; treated as terminal they fall
    short of it at every step."""
    gamma = 0.9
    truth = 1 / (1 - gamma)
    cfg = PPOConfig(num_steps=12, gamma=gamma, gae_lambda=1.0, hidden=8)
    for report, exact in ((True, True), (False, False)):
        ppo = PPO(cfg, 3, 2, seed=0)
        _constant_critic(ppo, truth)
        env = _Forever(4, limit, report=report)
        batch = ppo.rollout(env, env.reset())
        if exact:
            np.testing.assert_allclose(batch["returns"], truth, rtol=1e-5)
            np.testing.assert_allclose(batch["advantages"], 0.0, atol=1e-4)
        else:
            assert (batch["returns"] < truth - 0.5).any()


def test_a_truncation_report_without_final_obs_is_refused():
    ppo = PPO(PPOConfig(num_steps=2, hidden=8), 3, 2)
    with pytest.raises(ValueError, match="final_obs"):
        ppo._bootstrap_timeouts(np.ones(2, np.float32),
                                {"slot": np.array([0]), "truncated": np.array([True])})

"""Vectorised PPO (Schulman et al. 2017) with GAE (Schulman et al. 2016) for discrete actions.

Reusable by any paper whose environment follows the batched protocol :class:`VecEnv`:
``num_envs``, ``obs_dim``, ``num_actions``, ``reset() -> obs (B, D)`` and
``step(actions) -> (obs, reward, done, info)`` with auto-reset (``obs`` after a done is the first
observation of the next episode). The clipped surrogate, value loss, entropy bonus, advantage
normalisation per minibatch, global gradient-norm clipping and linear learning-rate annealing follow
the CleanRL/PureJaxRL PPO reference. Time limits: an env that reports, in the ``info`` of a step,
``slot`` (the slots that finished), ``truncated`` (per finished slot: the episode hit its time limit
without terminating) and ``final_obs`` (per finished slot: the observation it was cut at) is
bootstrapped -- the truncated step's reward gets ``gamma * V(final_obs)`` added in the training
batch, as Stable-Baselines3 does (Pardo et al. 2018, "Time limits in RL"), so a time-out is not
taught as a terminal state. An env that does not report them is treated as terminating (as in
PureJaxRL's Craftax PPO).

``PPO(cfg, obs_dim, num_actions)`` then ``batch = ppo.rollout(env, obs)`` and ``ppo.update(batch)``;
or :func:`train_ppo` for the plain loop. ``rollout`` also returns the advantages, so that
curriculum methods can score levels (positive value loss, MaxMC) from the same batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from icml26.core.progress import tick
from icml26.core.validation import check_positive, check_positive_int


class VecEnv(Protocol):
    num_envs: int
    obs_dim: int
    num_actions: int

    def reset(self) -> np.ndarray: ...

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]: ...


@dataclass(frozen=True)
class PPOConfig:
    """PPO hyperparameters (defaults: the DiCode brief's laptop-scale values)."""

    num_steps: int = 64          # rollout length per env
    epochs: int = 4
    minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.8
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 1.0
    lr: float = 3e-4
    anneal_lr: bool = True
    hidden: int = 128
    layers: int = 2

    def __post_init__(self) -> None:
        for k in ("num_steps", "epochs", "minibatches", "hidden", "layers"):
            check_positive_int(getattr(self, k), k)
        for k in ("lr", "clip"):
            check_positive(getattr(self, k), k)
        for k in ("gamma", "gae_lambda"):
            v = getattr(self, k)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{k} must lie in [0, 1], got {v}")
        for k in ("ent_coef", "vf_coef", "max_grad_norm"):
            check_positive(getattr(self, k), k, allow_zero=True)


class ActorCritic(nn.Module):
    """Separate MLP actor and critic with tanh activations and orthogonal init (CleanRL)."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int = 128, layers: int = 2) -> None:
        super().__init__()

        def mlp(out: int, gain: float) -> nn.Sequential:
            mods: list[nn.Module] = []
            d = obs_dim
            for _ in range(layers):
                lin = nn.Linear(d, hidden)
                nn.init.orthogonal_(lin.weight, np.sqrt(2))
                nn.init.zeros_(lin.bias)
                mods += [lin, nn.Tanh()]
                d = hidden
            head = nn.Linear(d, out)
            nn.init.orthogonal_(head.weight, gain)
            nn.init.zeros_(head.bias)
            return nn.Sequential(*mods, head)

        self.actor = mlp(num_actions, 0.01)
        self.critic = mlp(1, 1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.actor(obs), self.critic(obs).squeeze(-1)


def gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, last_value: np.ndarray,
        gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation over a (T, B) rollout.

    ``dones[t]`` marks that the episode ended at step t (so ``values[t + 1]`` belongs to a new
    episode and is not bootstrapped). Returns ``(advantages, returns = advantages + values)``.
    """
    T = len(rewards)
    adv = np.zeros_like(rewards, dtype=np.float64)
    last = np.zeros(rewards.shape[1:], dtype=np.float64)
    for t in reversed(range(T)):
        nxt = last_value if t == T - 1 else values[t + 1]
        nonterm = 1.0 - dones[t]
        delta = rewards[t] + gamma * nxt * nonterm - values[t]
        last = delta + gamma * lam * nonterm * last
        adv[t] = last
    return adv.astype(np.float32), (adv + values).astype(np.float32)


class PPO:
    """A PPO learner; the env is passed to :meth:`rollout`, so one agent can train on changing
    environments (curricula)."""

    def __init__(self, cfg: PPOConfig, obs_dim: int, num_actions: int, seed: int = 0,
                 total_updates: int | None = None, device: str = "cpu") -> None:
        self.cfg = cfg
        torch.manual_seed(seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.device = torch.device(device)
        self.net = ActorCritic(obs_dim, num_actions, cfg.hidden, cfg.layers).to(self.device)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=cfg.lr, eps=1e-5)
        self.total_updates = total_updates
        self.updates = 0
        self.env_steps = 0

    @torch.no_grad()
    def act(self, obs: np.ndarray, greedy: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        logits, value = self.net(torch.as_tensor(obs, device=self.device))
        if greedy:
            a = logits.argmax(-1)
        else:
            a = torch.multinomial(torch.softmax(logits, -1), 1, generator=self.gen).squeeze(-1)
        logp = torch.log_softmax(logits, -1).gather(-1, a[:, None]).squeeze(-1)
        return a.cpu().numpy(), logp.cpu().numpy(), value.cpu().numpy()

    def rollout(self, env: VecEnv, obs: np.ndarray, num_steps: int | None = None,
                record: Any = None) -> dict[str, Any]:
        """Collect ``num_steps`` steps from every env; return the batch (with GAE advantages),
        the next observation (``batch["next_obs"]``) and the env infos per step. ``record(env)``,
        if given, is called before every step and its (B,) results are stacked into
        ``batch["record"]`` (T, B) (e.g. which level each env is playing)."""
        T = num_steps or self.cfg.num_steps
        n = len(obs)
        buf = {k: [] for k in ("obs", "actions", "logp", "values", "rewards", "dones")}
        infos, recs = [], []
        for _ in range(T):
            if record is not None:
                recs.append(np.asarray(record(env)))
            a, logp, v = self.act(obs)
            nobs, r, d, info = env.step(a)
            r = self._bootstrap_timeouts(r, info)
            for k, x in zip(buf, (obs, a, logp, v, r, d), strict=True):
                buf[k].append(x)
            infos.append(info)
            obs = nobs
        batch = {k: np.stack(v) for k, v in buf.items()}
        batch["dones"] = batch["dones"].astype(np.float32)
        _, _, last_v = self.act(obs)
        batch["advantages"], batch["returns"] = gae(batch["rewards"], batch["values"], batch["dones"],
                                                    last_v, self.cfg.gamma, self.cfg.gae_lambda)
        batch["next_obs"], batch["infos"] = obs, infos
        if record is not None:
            batch["record"] = np.stack(recs)
        self.env_steps += T * n
        return batch

    @torch.no_grad()
    def _bootstrap_timeouts(self, reward: np.ndarray, info: dict) -> np.ndarray:
        """``reward`` with ``gamma * V(final_obs)`` added on the slots whose episode was truncated
        by a time limit (see the module docstring); unchanged when the env reports none."""
        trunc = info.get("truncated") if info else None
        if trunc is None:
            return reward
        trunc = np.asarray(trunc, bool)
        if not trunc.any():
            return reward
        if "final_obs" not in info or "slot" not in info:
            raise ValueError("an env that reports `truncated` must also report `slot` and "
                             "`final_obs` for the finished slots")
        slots = np.asarray(info["slot"])[trunc]
        final = np.asarray(info["final_obs"], dtype=np.float32)[trunc]
        _, value = self.net(torch.as_tensor(final, device=self.device))
        out = np.array(reward, dtype=np.float32, copy=True)
        out[slots] += self.cfg.gamma * value.cpu().numpy().astype(np.float32)
        return out

    def update(self, batch: dict[str, Any], mask: np.ndarray | None = None) -> dict[str, float]:
        """PPO epochs over the batch. ``mask`` (T, B) of {0, 1} drops transitions from the loss
        (e.g. robust PLR's exploratory levels)."""
        c = self.cfg
        if self.total_updates and c.anneal_lr:
            frac = max(1.0 - self.updates / self.total_updates, 0.0)
            for g in self.opt.param_groups:
                g["lr"] = c.lr * frac
        flat = {k: torch.as_tensor(batch[k].reshape(-1, *batch[k].shape[2:]), device=self.device)
                for k in ("obs", "actions", "logp", "values", "advantages", "returns")}
        keep = np.ones(len(flat["obs"]), bool) if mask is None else mask.reshape(-1) > 0
        idx_all = np.flatnonzero(keep)
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "approx_kl": 0.0}
        if len(idx_all) == 0:
            self.updates += 1
            return stats
        mb = max(len(idx_all) // c.minibatches, 1)
        count = 0
        for _ in range(c.epochs):
            perm = idx_all[torch.randperm(len(idx_all), generator=self.gen).numpy()]
            for start in range(0, len(perm) - mb + 1, mb):
                i = torch.as_tensor(perm[start:start + mb])
                logits, v = self.net(flat["obs"][i])
                logp_all = torch.log_softmax(logits, -1)
                logp = logp_all.gather(-1, flat["actions"][i][:, None]).squeeze(-1)
                ratio = torch.exp(logp - flat["logp"][i])
                adv = flat["advantages"][i]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(adv) > 1 else adv
                pg = torch.max(-adv * ratio, -adv * ratio.clamp(1 - c.clip, 1 + c.clip)).mean()
                v_old = flat["values"][i]
                v_clip = v_old + (v - v_old).clamp(-c.clip, c.clip)
                ret = flat["returns"][i]
                vl = 0.5 * torch.max((v - ret) ** 2, (v_clip - ret) ** 2).mean()
                ent = -(logp_all.exp() * logp_all).sum(-1).mean()
                loss = pg + c.vf_coef * vl - c.ent_coef * ent
                self.opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.net.parameters(), c.max_grad_norm)
                self.opt.step()
                with torch.no_grad():
                    stats["approx_kl"] += float(((ratio - 1) - (logp - flat["logp"][i])).mean())
                stats["policy_loss"] += float(pg.detach())
                stats["value_loss"] += float(vl.detach())
                stats["entropy"] += float(ent.detach())
                count += 1
        self.updates += 1
        return {k: v / max(count, 1) for k, v in stats.items()}


def episode_returns(infos: list[dict]) -> list[float]:
    """Returns of the episodes that finished in a rollout (infos with a ``"return"`` array)."""
    return [float(x) for info in infos if info and "return" in info for x in info["return"]]


def train_ppo(env: VecEnv, cfg: PPOConfig, total_steps: int, seed: int = 0,
              device: str = "cpu") -> tuple[PPO, list[float]]:
    """Plain PPO on one environment; returns the agent and the mean finished-episode return of
    each update (NaN when no episode finished)."""
    check_positive_int(total_steps, "total_steps")
    updates = max(total_steps // (cfg.num_steps * env.num_envs), 1)
    agent = PPO(cfg, env.obs_dim, env.num_actions, seed=seed, total_updates=updates, device=device)
    obs = env.reset()
    curve = []
    for k in range(updates):
        tick("ppo", k + 1, updates)
        batch = agent.rollout(env, obs)
        obs = batch["next_obs"]
        agent.update(batch)
        rets = episode_returns(batch["infos"])
        curve.append(float(np.mean(rets)) if rets else float("nan"))
    return agent, curve

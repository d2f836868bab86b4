"""Full-information (experts) track of RMFT with the numerical decision transformer.

Each round the model outputs logits over K actions; its policy is pi_t = softmax(logits / temp),
then the whole reward vector R_t is revealed. Following the brief (Sec. 2), a *played* action
a_t ~ pi_t is sampled so that the L rollouts of one reward sequence differ: the model sees
[R_{t-1} (K slots of k_max), R_{t-1}[a_{t-1}], t / T] and the SFT step imitates the played
actions of the kept trajectories. Two regrets (``core.rl.ExpertsBatch``, external regret against
the best fixed action in hindsight):

* the filter ranks a rollout by the regret of its played actions, max_a sum_t R_{t,a} - sum_t R_{t,a_t};
* evaluation reports the paper's FOL regret of the policy, max_a sum_t R_{t,a} - sum_t <pi_t, R_t>.

The input layout and the played-action device are ours (the paper's FOL I/O was not reachable).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch.nn import functional as F

from icml26.core.rl import ExpertsBatch

from .model import NumericalDecisionTransformer
from .rmft import RMFTConfig, RMFTHistory, Trajectories, _entropy, select, sft


def experts_features(reward_vectors: torch.Tensor, played: torch.Tensor, horizon: int,
                     k_max: int) -> torch.Tensor:
    """(B, t, K) revealed rewards and (B, t) played actions -> (B, t + 1, k_max + 2) inputs."""
    b, t, k = reward_vectors.shape
    if played.shape != (b, t):
        raise ValueError(f"played must have shape {(b, t)}, got {tuple(played.shape)}")
    if k > k_max:
        raise ValueError(f"K={k} exceeds k_max={k_max}")
    x = torch.zeros(b, t + 1, k_max + 2)
    if t:
        x[:, 1:, :k] = reward_vectors.float()
        x[:, 1:, k_max] = reward_vectors.float().gather(-1, played.long().unsqueeze(-1)).squeeze(-1)
    x[:, :, k_max + 1] = torch.arange(t + 1).float() / horizon
    return x


@torch.no_grad()
def experts_rollout(model: NumericalDecisionTransformer, env: ExpertsBatch, *, temperature: float = 1.0,
                    seed: int = 0) -> tuple[Trajectories, np.ndarray]:
    """Play ``model`` on every reward sequence of ``env``: returns the trajectories (played
    actions, their rewards, the played-action regret, the reward vectors) and the (B,) policy
    regret recorded by ``env``."""
    model.eval()
    env.reset()
    gen = torch.Generator().manual_seed(seed)
    b, horizon, k = env.batch, env.horizon, env.k
    actions = torch.zeros(b, horizon, dtype=torch.long)
    cache = model.new_cache()
    rv = torch.from_numpy(env.rewards).float()
    for t in range(horizon):
        x_t = torch.zeros(b, model.k_max + 2)
        if t:
            x_t[:, :k] = rv[:, t - 1]
            x_t[:, model.k_max] = rv[torch.arange(b), t - 1, actions[:, t - 1]]
        x_t[:, model.k_max + 1] = t / horizon
        logits = model.step(x_t, k, t, cache)[:, :k]
        pi = F.softmax(logits / temperature, dim=-1)
        actions[:, t] = torch.multinomial(pi, 1, generator=gen)[:, 0]
        env.step(pi.double().numpy() / pi.double().numpy().sum(axis=1, keepdims=True))
    a = actions.numpy()
    played = np.take_along_axis(env.rewards, a[:, :, None], axis=2)[:, :, 0]
    best = env.rewards.sum(axis=1).max(axis=1)
    traj = Trajectories(a, played, best - played.sum(axis=1), np.arange(b), k, horizon,
                        env.rewards.copy())
    return traj, env.regret()


def iterative_rmft_experts(model: NumericalDecisionTransformer,
                           task_sampler: Callable[[int, int], ExpertsBatch], config: RMFTConfig, *,
                           seed: int = 0) -> RMFTHistory:
    """Iterative RMFT on full-information tasks, in place on ``model``: L rollouts per reward
    sequence, keep ``top_k`` per task by ``config.selection`` (played-action regret for
    ``"regret"``), fine-tune on the kept played actions. ``continue_from="previous"`` only."""
    if config.continue_from != "previous":
        raise ValueError("the experts loop supports continue_from='previous' only")
    rng = np.random.default_rng(seed)
    hist = RMFTHistory()
    for _ in range(config.iterations):
        tasks = task_sampler(config.tasks_per_iter, int(rng.integers(2**31)))
        env = ExpertsBatch(np.repeat(tasks.rewards, config.rollouts_per_task, axis=0))
        traj, policy_regret = experts_rollout(model, env, temperature=config.temperature,
                                              seed=int(rng.integers(2**31)))
        traj.task = np.repeat(np.arange(config.tasks_per_iter), config.rollouts_per_task)
        kept = select(traj, config.tasks_per_iter, config.top_k, config.selection, rng)
        hist.rollout_regret.append(float(policy_regret.mean()))
        hist.kept_regret.append(float(kept.regret.mean()))
        hist.entropy.append(_entropy(traj.actions, traj.k))
        hist.rollout_steps += traj.actions.size
        hist.sft_examples += kept.actions.size
        hist.sft_loss.append(sft(model, [kept], epochs=config.sft_epochs, lr=config.lr,
                                 batch_size=config.batch_size, seed=int(rng.integers(2**31))))
    return hist


def evaluate_experts(model: NumericalDecisionTransformer, env: ExpertsBatch, *, seed: int = 0) -> np.ndarray:
    """(B,) FOL regret of the model's policy, max_a sum_t R_{t,a} - sum_t <pi_t, R_t>."""
    return experts_rollout(model, env, seed=seed)[1]

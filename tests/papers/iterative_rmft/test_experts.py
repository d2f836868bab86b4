"""iterative_rmft experts track: features, regret accounting of the policy and of the played
actions, the loop's wiring and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from icml26.core.rl import ExpertsBatch, sample_experts
from icml26.papers.iterative_rmft import NumericalDecisionTransformer, RMFTConfig
from icml26.papers.iterative_rmft.experts import (
    evaluate_experts,
    experts_features,
    experts_rollout,
    iterative_rmft_experts,
)


def _model(seed=0):
    torch.manual_seed(seed)
    return NumericalDecisionTransformer(k_max=6, d_model=16, n_layers=2, n_heads=2, max_horizon=40)


def test_features_encode_the_revealed_vector_the_played_reward_and_time():
    rv = torch.tensor([[[0.0, 1.0, 0.5], [1.0, 0.0, 0.0]]])
    x = experts_features(rv, torch.tensor([[1, 2]]), 4, 5)
    assert x.shape == (1, 3, 7)
    assert x[0, 0, :6].abs().sum() == 0
    torch.testing.assert_close(x[0, 1, :3], rv[0, 0])
    assert x[0, 1, 5] == 1.0 and x[0, 2, 5] == 0.0 and x[0, 2, 6] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="played"):
        experts_features(rv, torch.tensor([[1]]), 4, 5)
    with pytest.raises(ValueError, match="k_max"):
        experts_features(rv, torch.tensor([[1, 2]]), 4, 2)


def test_policy_and_played_regret_match_closed_forms():
    m = _model()
    env = sample_experts(7, 4, 9, seed=3)
    traj, policy_regret = experts_rollout(m, env, seed=0)
    # the policy the rollout played, recomputed by a full causal forward on the same inputs
    with torch.no_grad():
        pi = F.softmax(m(traj.features(m.k_max), 4)[..., :4], dim=-1).double().numpy()
    best = env.rewards.sum(1).max(1)
    np.testing.assert_allclose(policy_regret, best - (pi * env.rewards).sum((1, 2)), atol=1e-5)
    played = np.take_along_axis(env.rewards, traj.actions[:, :, None], 2)[:, :, 0]
    np.testing.assert_allclose(traj.regret, best - played.sum(1), atol=1e-12)
    np.testing.assert_allclose(evaluate_experts(m, env, seed=0), policy_regret)


def test_loop_keeps_low_regret_played_trajectories_and_fine_tunes():
    m = _model(1)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    cfg = RMFTConfig(iterations=2, rollouts_per_task=4, top_k=1, tasks_per_iter=3, sft_epochs=1)
    h = iterative_rmft_experts(m, lambda n, s: sample_experts(n, 3, 6, seed=s), cfg, seed=0)
    assert len(h.rollout_regret) == 2 and h.sft_examples == 2 * 3 * 6 and h.rollout_steps == 2 * 12 * 6
    assert any(not torch.equal(before[k], v) for k, v in m.state_dict().items())
    with pytest.raises(ValueError, match="previous"):
        iterative_rmft_experts(m, lambda n, s: sample_experts(n, 3, 6, seed=s),
                               RMFTConfig(iterations=1, continue_from="base"))


def test_experts_env_rejects_bad_policies():
    env = ExpertsBatch(np.zeros((2, 3, 2)))
    with pytest.raises(ValueError, match="probability"):
        env.step(np.array([[0.7, 0.7], [0.5, 0.5]]))

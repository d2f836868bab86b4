"""iterative_rmft: the model's cache, the filter, the SFT step and the loop's wiring."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.core.rl import BanditBatch, sample_bandits
from icml26.papers.iterative_rmft import (
    NumericalDecisionTransformer,
    RMFTConfig,
    Trajectories,
    distill_policy,
    evaluate_regret,
    iterative_rmft,
    rollout,
    select,
    sft,
)


def _model(seed=0, **kw):
    torch.manual_seed(seed)
    return NumericalDecisionTransformer(k_max=6, d_model=16, n_layers=2, n_heads=2, max_horizon=40, **kw)


def test_cached_steps_equal_the_full_causal_forward():
    m = _model()
    a, r = torch.randint(4, (3, 11)), torch.rand(3, 11)
    x = m.features(a, r, 20, m.k_max)
    full = m(x, 4)[..., :4]
    cache = m.new_cache()
    inc = torch.stack([m.step(x[:, t], 4, t, cache) for t in range(x.shape[1])], dim=1)[..., :4]
    torch.testing.assert_close(inc, full, atol=1e-5, rtol=1e-5)


def test_causality_future_inputs_do_not_change_past_logits():
    m = _model()
    x = m.features(torch.randint(4, (2, 9)), torch.rand(2, 9), 20, m.k_max)
    y = x.clone()
    y[:, 6:] = torch.randn_like(y[:, 6:])
    torch.testing.assert_close(m(x, 4)[:, :6], m(y, 4)[:, :6])


def test_features_encode_previous_action_reward_and_time():
    x = NumericalDecisionTransformer.features(torch.tensor([[2, 0]]), torch.tensor([[1.0, 0.0]]), 4, 5)
    assert x.shape == (1, 3, 7)
    assert x[0, 0, :6].abs().sum() == 0 and x[0, 0, 6] == 0
    assert x[0, 1, 2] == 1 and x[0, 1, 5] == 1 and x[0, 1, 6] == pytest.approx(0.25)
    assert x[0, 2, 0] == 1 and x[0, 2, 5] == 0 and x[0, 2, 6] == pytest.approx(0.5)


def test_rollout_never_picks_a_masked_arm_and_regret_matches_env():
    m = _model()
    env = sample_bandits(200, 3, 12, seed=1)
    traj = rollout(m, env, seed=0)
    assert traj.actions.max() < 3
    mu = env.means[np.arange(200)[:, None], traj.actions]
    np.testing.assert_allclose(traj.regret, (env.means.max(1)[:, None] - mu).sum(1), atol=1e-9)


def _traj(regret, rewards_total, tasks):
    n = len(regret)
    rewards = np.zeros((n, 2))
    rewards[:, 0] = rewards_total
    return Trajectories(np.zeros((n, 2), dtype=np.int64), rewards, np.asarray(regret, float),
                        np.asarray(tasks), 2, 2)


def test_select_keeps_exactly_the_k_lowest_regret_per_task():
    t = _traj([5, 1, 3, 2, 9, 0, 4, 7], [0, 1, 2, 3, 4, 5, 6, 7], [0, 0, 0, 0, 1, 1, 1, 1])
    kept = select(t, 2, 2, "regret", np.random.default_rng(0))
    assert sorted(kept.regret[kept.task == 0]) == [1, 2]
    assert sorted(kept.regret[kept.task == 1]) == [0, 4]
    by_reward = select(t, 2, 2, "reward", np.random.default_rng(0))
    assert sorted(by_reward.rewards[by_reward.task == 0, 0]) == [2, 3]
    rand = select(t, 2, 2, "random", np.random.default_rng(0))
    assert np.bincount(rand.task).tolist() == [2, 2]
    with pytest.raises(ValueError, match="exceeds"):
        select(t, 2, 5, "regret", np.random.default_rng(0))


def test_sft_imitates_the_kept_actions():
    m = _model()
    n, horizon = 64, 8
    acts = np.full((n, horizon), 2, dtype=np.int64)
    data = Trajectories(acts, np.zeros((n, horizon)), np.zeros(n), np.arange(n), 4, horizon)
    loss = sft(m, [data], epochs=30, lr=3e-3, batch_size=32)
    assert loss < 0.05
    greedy = rollout(m, sample_bandits(20, 4, horizon, seed=0), greedy=True, seed=0)
    assert (greedy.actions == 2).all()


def _fixed_sampler(n, seed):
    return BanditBatch(np.tile([0.9, 0.1], (n, 1)), 10, seed=seed)


def test_regret_filter_drives_learning_where_random_selection_cannot():
    """Arm 0 is always best: keeping low-regret rollouts teaches 'pull arm 0'; random k does not."""
    cfg = dict(iterations=6, rollouts_per_task=8, top_k=2, tasks_per_iter=16, sft_epochs=4, lr=3e-3)
    out = {}
    for how in ("regret", "random"):
        m = _model(seed=3)
        iterative_rmft(m, _fixed_sampler, RMFTConfig(selection=how, **cfg), seed=1)
        out[how] = evaluate_regret(m, _fixed_sampler(200, 5), seed=2)[:, -1].mean()
    assert out["regret"] < 0.5 * out["random"]


def test_history_counts_compute_and_base_restarts():
    m = _model()
    cfg = RMFTConfig(iterations=3, rollouts_per_task=4, top_k=1, tasks_per_iter=5, sft_epochs=1,
                     continue_from="base")
    h = iterative_rmft(m, _fixed_sampler, cfg, seed=0)
    assert h.rollout_steps == 3 * 5 * 4 * 10
    assert h.sft_examples == (1 + 2 + 3) * 5 * 10  # the union of kept data grows each round
    assert len(h.rollout_regret) == len(h.entropy) == 3
    m2 = _model()
    h2 = distill_policy(m2, lambda b, k: __import__("icml26.core.rl", fromlist=["UCB1"]).UCB1(b, k),
                        _fixed_sampler, RMFTConfig(iterations=2, tasks_per_iter=5, top_k=1,
                                                   sft_epochs=1), seed=0)
    assert h2.sft_examples == 2 * 5 * 1 * 10


@pytest.mark.parametrize("kwargs", [{"top_k": 9, "rollouts_per_task": 4}, {"iterations": 0},
                                    {"temperature": -1.0}, {"selection": "best"},
                                    {"continue_from": "scratch"}])
def test_config_errors(kwargs):
    with pytest.raises(ValueError):
        RMFTConfig(**kwargs)


def test_model_input_errors():
    m = _model()
    with pytest.raises(ValueError, match="shape"):
        m(torch.zeros(2, 3, 5), 3)
    with pytest.raises(ValueError, match="k must"):
        m(torch.zeros(2, 3, 8), 7)
    with pytest.raises(ValueError, match="max_horizon"):
        m(torch.zeros(1, 41, 8), 3)
    with pytest.raises(ValueError, match="divisible"):
        NumericalDecisionTransformer(d_model=10, n_heads=3)

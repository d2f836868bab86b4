"""iterative_rmft baselines (issue 49): equal-effort tuning of the classical knobs on dev
instances, the prior-strength Thompson sampler, and the statistics of the generalises claim."""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml26.core.rl import UCB1, ThompsonSampling, run_policy, sample_bandits
from icml26.papers.iterative_rmft.baselines import (
    GRID_SIZE,
    GRIDS,
    PriorThompson,
    best_arm_share,
    exponent_rounds,
    growth_exponent,
    make_policy,
    policy_for,
    policy_stats,
    tune,
)


def test_grids_are_equal_and_contain_the_textbook_and_off_settings():
    for name, (_, grid, textbook) in GRIDS.items():
        assert len(grid) == GRID_SIZE and textbook in grid and list(grid) == sorted(grid), name
    assert GRIDS["ucb1"][1][0] == 0.0 and GRIDS["eps_greedy"][1][0] == 0.0   # greedy is in the grid
    assert GRIDS["sw_ucb"][1][-1] >= 128                                     # no window is in the grid


def test_prior_thompson_at_a_1_is_thompson_sampling():
    env = sample_bandits(50, 4, 30, seed=1)
    a1, _ = run_policy(PriorThompson(50, 4, a=1.0), env, seed=3)
    a2, _ = run_policy(ThompsonSampling(50, 4), env, seed=3)
    np.testing.assert_array_equal(a1, a2)
    genv = sample_bandits(50, 4, 30, noise="gaussian", sigma=1.0, seed=1)
    g1, _ = run_policy(PriorThompson(50, 4, bernoulli=False, a=1.0), genv, seed=3)
    g2, _ = run_policy(ThompsonSampling(50, 4, bernoulli=False), genv, seed=3)
    np.testing.assert_array_equal(g1, g2)
    with pytest.raises(ValueError, match="a"):
        PriorThompson(2, 2, a=0.0)


def test_prior_thompson_draws_from_the_beta_posterior_with_prior_a():
    pol = PriorThompson(1, 2, a=3.0)
    pol.counts[:] = [[4.0, 0.0]]
    pol.sums[:] = [[1.0, 0.0]]
    rng = np.random.default_rng(0)
    # arm 0 ~ Beta(3 + 1, 3 + 3), arm 1 ~ Beta(3, 3): its pick rate is P(Beta(4, 6) > Beta(3, 3))
    picks = np.array([pol.act(rng)[0] for _ in range(4000)])
    ref = np.random.default_rng(1)
    p_ref = (ref.beta(4, 6, 200_000) > ref.beta(3, 3, 200_000)).mean()
    assert (picks == 0).mean() == pytest.approx(p_ref, abs=0.025)


def test_make_policy_uses_the_knob_and_refuses_unknown_names():
    assert make_policy("ucb1", 0.5, 3, 4).c == 0.5
    assert make_policy("ucb1", None, 3, 4).c == 2.0
    assert make_policy("eps_greedy", 0.2, 3, 4).epsilon == 0.2
    assert make_policy("sw_ucb", 30, 3, 4).window == 30
    assert make_policy("thompson", 2.0, 3, 4, gaussian=True).bernoulli is False
    env = sample_bandits(3, 4, 5, noise="gaussian", sigma=0.5, seed=0)
    assert policy_for("thompson", None, env).bernoulli is False and policy_for("uniform", None, env).k == 4
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("exp3", None, 3, 4)


def test_tune_picks_the_grid_argmin_on_dev_with_common_random_numbers():
    dev = sample_bandits(200, 5, 25, seed=9)
    out = tune("ucb1", dev, seed=4)
    assert out["grid"] == list(GRIDS["ucb1"][1]) and out["budget"] == {"settings": 6, "dev_episodes": 1200}
    # each score is the dev regret of that setting, recomputed independently
    for c, score in zip(out["grid"], out["dev_regret"], strict=True):
        run_policy(UCB1(200, 5, c=c), dev, seed=4)
        assert score == pytest.approx(dev.cumulative_regret()[:, -1].mean(), abs=1e-12)
    assert out["chosen"] == out["grid"][int(np.argmin(out["dev_regret"]))]
    assert out["best_dev_regret"] == min(out["dev_regret"])


def test_growth_exponent_closed_forms():
    t = np.arange(1, 101, dtype=float)
    assert growth_exponent(0.25 * t, (25, 50, 100)) == pytest.approx(1.0, abs=1e-12)
    assert growth_exponent(3 * np.sqrt(t), (25, 50, 100)) == pytest.approx(0.5, abs=1e-12)
    assert growth_exponent(np.log(t + 1), (25, 50, 100)) < 0.3
    assert exponent_rounds(25, 100) == (25, 50, 100)
    with pytest.raises(ValueError, match="rounds"):
        growth_exponent(t, (25, 101))
    with pytest.raises(ValueError, match="long horizon"):
        exponent_rounds(25, 25)


def test_best_arm_share_splits_new_and_old_best_arms():
    means = np.array([[0.1, 0.2, 0.9], [0.9, 0.2, 0.1], [0.1, 0.3, 0.2]])
    actions = np.array([[2, 2, 0, 0], [0, 1, 1, 1], [1, 1, 1, 1]])
    new, old = best_arm_share(actions, means, k_train=2)
    assert new == pytest.approx(0.5) and old == pytest.approx((0.25 + 1.0) / 2)
    new, old = best_arm_share(actions[1:], means[1:], k_train=2)
    assert math.isnan(new)


def test_policy_stats_linear_regret_and_arm_avoidance():
    """A policy that never pulls the new arms has best_share_new 0 (uniform would have 1/K), and
    its regret on the long horizon is linear (exponent 1 up to noise)."""
    env = sample_bandits(300, 8, 100, seed=2)
    old_only = make_policy("uniform", None, 300, 5)

    class OldArms:
        batch, k = 300, 8

        def act(self, rng):
            return old_only.act(rng)

        def update(self, a, r):
            pass
    actions, _ = run_policy(OldArms(), env, seed=0)
    s = policy_stats("long_T", actions, env, k_train=5, ts=(25, 50, 100))
    assert s["best_share_new"] == 0.0 and s["growth_exponent"] == pytest.approx(1.0, abs=0.02)
    actions, _ = run_policy(UCB1(300, 8), env, seed=0)
    s = policy_stats("long_T", actions, env, k_train=5, ts=(25, 50, 100))
    assert s["best_share_new"] > 2 / 8 and s["growth_exponent"] < 0.9   # UCB1 finds new best arms
    assert set(policy_stats("in", actions, env, k_train=8)) == {"regret_in"}  # no new arms, no share


def test_baseline_table_renders_the_result_file(tmp_path):
    from icml26.papers.iterative_rmft.baselines import (
        TABLE_END,
        TABLE_START,
        baseline_table,
        write_readme_table,
    )

    result = {"profile": "quick", "seeds": [0, 1], "git": "abc",
              "metrics": {"rmft": {"regret_in_dist": [6.0, 7.0], "best_share_new": [0.5, float("nan")]},
                          "ucb1_tuned": {"regret_in_dist": [3.0, 3.0]}, "other": {"x": [1.0]}},
              "extras": [{"tuning": {n: {"chosen": g[2]} for n, g in GRIDS.items()}, "teacher": "ucb1"}] * 2}
    table = baseline_table(result)
    assert "| rmft | 6.50 ± 0.50 | — | — | — | — | — | 0.50 ± 0.00 |" in table
    assert "| ucb1_tuned | 3.00 ± 0.00 |" in table and "other" not in table
    assert "ucb1 c = 2, 2" in table and "teacher of `ad_best` and `best_tuned`: ucb1, ucb1" in table
    import json
    (tmp_path / "r.json").write_text(json.dumps(result))
    readme = tmp_path / "README.md"
    readme.write_text(f"a\n{TABLE_START}\nold\n{TABLE_END}\nb\n")
    assert write_readme_table(str(tmp_path / "r.json"), str(readme))
    assert table in readme.read_text() and not write_readme_table(str(tmp_path / "r.json"), str(readme))

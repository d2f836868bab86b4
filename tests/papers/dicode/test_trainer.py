"""Trainer wiring: slot allocation, equal env steps across arms, archive diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.core.rl import PPOConfig
from icml26.papers.dicode.trainer import ARMS, CurriculumConfig, _allocate, run_arm

TINY = CurriculumConfig(num_envs=16, sessions=3, updates_per_session=2, score_window=2,
                        levels_per_session=2, parents_per_evolution=2, n_worlds=2,
                        original_train_worlds=16, eval_envs=8, eval_max_steps=20, plr_buffer=8)
PPO_TINY = PPOConfig(num_steps=8, hidden=16, epochs=1, minibatches=1)


def test_allocate_original_share():
    a = _allocate(10, 2, 0.2)
    assert (a == 0).sum() == 2 and (a == 1).sum() == 4 and (a == 2).sum() == 4
    assert (_allocate(8, 0, 0.2) == 0).all()


def test_every_arm_runs_with_equal_env_steps():
    steps = {}
    for arm in ARMS:
        out = run_arm(arm, TINY, PPO_TINY, seed=0)
        m = out["metrics"]
        steps[arm] = m["env_steps"]
        assert 0 <= m["deepest_tier_success"] <= 1 and np.isfinite(m["return"])
        assert len(out["curve"]) == TINY.sessions
    assert len(set(steps.values())) == 1, steps
    assert "accel" in steps and steps["accel"] == steps["plr_robust"] == steps["ppo"]
    d = run_arm("dicode", TINY, PPO_TINY, seed=0)["diagnostics"]
    assert d["compile_rate"] == 1.0 or d["levels_generated"] == 0


def test_unknown_arm():
    with pytest.raises(ValueError, match="unknown arm"):
        run_arm("accel_plus", TINY, PPO_TINY, seed=0)


def test_oracle_curriculum_walks_the_tech_tree_in_order():
    from icml26.papers.dicode.generators import read_spec
    from icml26.papers.dicode.trainer import oracle_levels
    from icml26.papers.dicode.world import ACHIEVEMENTS, TIER

    plan = oracle_levels(6, 6)
    goals = [[read_spec(c)["relevant_achievements"][0] for c in s] for s in plan]
    assert all(TIER[g] == 1 for g in goals[0][:4]) and "defeat_guardian" in goals[-1]
    firsts = [min(TIER[g] for g in s) for s in goals]
    assert firsts == sorted(firsts)  # never steps back down the tree
    assert {g for s in goals for g in s} == set(ACHIEVEMENTS)
    for s in plan:  # scaffolded from scratch: nothing compressed into the start state
        assert all(read_spec(c)["completed_achievements"] == () for c in s)


def test_archive_arm_children_are_distinct_and_the_gate_selects():
    """With a small active set (capacity 2 < 4 seeds + children) the learnability gate's
    compare-and-swap acts (refuses or evicts), and no two levels of the archive share a spec."""
    from dataclasses import replace

    cfg = replace(TINY, sessions=5, parents_per_evolution=4, active_capacity=2,
                  evolution_interval=1)
    d = run_arm("dicode", cfg, PPO_TINY, seed=1)["diagnostics"]
    assert d["duplicate_levels"] == 0
    assert d["levels_generated"] >= 8
    assert d["gate_acted"] == d["gate_rejected"] + d["gate_evicted"] >= 1

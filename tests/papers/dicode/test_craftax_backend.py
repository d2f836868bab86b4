"""The optional Craftax backend: a clear error without it, a tiny rollout where installed."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.papers.dicode.craftax_backend import CraftaxVecEnv, craftax_available


def test_clear_error_or_tiny_rollout():
    if not craftax_available():
        with pytest.raises(ImportError, match="pip install craftax jax"):
            CraftaxVecEnv(2)
        return
    env = CraftaxVecEnv(2, name="Craftax-Classic-Symbolic-v1")
    obs = env.reset()
    for _ in range(3):
        obs, r, d, _ = env.step(np.zeros(2, np.int64))
    assert obs.shape == (2, env.obs_dim) and r.shape == (2,)


needs_craftax = pytest.mark.skipif(not craftax_available(),
                                   reason="optional: pip install 'icml26[craftax]'")


def test_levels_that_classic_lacks_are_refused_by_name():
    from icml26.papers.dicode.craftax_backend import NotInClassicError, classic_goal_indices

    with pytest.raises(NotInClassicError, match="defeat_guardian"):
        classic_goal_indices(["collect_wood", "defeat_guardian"])


@pytest.mark.slow
@needs_craftax
def test_a_generated_level_builds_resets_and_steps_on_craftax_classic():
    """Issue 44: a dreamed level program runs on the real game -- its edits are in the world,
    its completed achievements are pre-filled, and the same PPO trains on it."""
    from icml26.core.rl.ppo import PPO, PPOConfig
    from icml26.papers.dicode.craftax_backend import ClassicLevelEnv
    from icml26.papers.dicode.generators import (
        Feedback,
        ProgrammaticDreamer,
        read_spec,
        seed_levels,
    )

    seeds = seed_levels()
    child, _ = ProgrammaticDreamer(0).propose(seeds[3], Feedback(sr=0.9))
    spec = read_spec(child)
    env = ClassicLevelEnv([None, seeds[0], child], 3, slot_levels=[0, 1, 2], seed=0, bonus=5.0)
    obs = env.reset()
    assert obs.shape == (3, env.obs_dim) and env.num_actions == 17
    goal = obs[:, -22:]
    assert goal[0].sum() == 22 and goal[1].sum() == len(read_spec(seeds[0])["relevant_achievements"])
    ach = np.asarray(env.state.achievements)
    assert ach[2].sum() == len(spec["completed_achievements"]) and not ach[0].any()
    assert int(np.asarray(env.state.inventory.wood)[2]) == spec["inventory"].get("wood", 0)
    # the seed level's trees are within its placement distance of the player
    from craftax.craftax_classic.constants import BlockType
    m, p = np.asarray(env.state.map)[1], np.asarray(env.state.player_position)[1]
    near = m[p[0] - 3:p[0] + 4, p[1] - 3:p[1] + 4]
    assert (near == BlockType.TREE.value).any()
    ppo = PPO(PPOConfig(num_steps=4, hidden=16, epochs=1, minibatches=1), env.obs_dim,
              env.num_actions)
    batch = ppo.rollout(env, obs)
    ppo.update(batch)
    assert np.isfinite(batch["returns"]).all()
    with pytest.raises(ValueError, match="actions"):
        env.step(np.array([17, 0, 0]))

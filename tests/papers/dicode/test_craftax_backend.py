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


# A hand-written level program on the world-builder API: every edit has a known place, so the
# test can read it back from the Craftax state. Frame coordinates: the player is at (6, 6).
_PROBE = """
class Level(BaseLevel):
    relevant_achievements = ('collect_wood',)
    completed_achievements = ()

    def params(self):
        return LevelParams(max_steps=40.0)

    def generate_world(self, rng, builder):
        builder.set_inventory({'wood': 3, 'stone': 2, 'pickaxe': 2, 'sword': 1})
        builder.fill_area('stone', 0, 0, 1, 11)
        for r, c in ((5, 6), (7, 6), (6, 5), (6, 7)):
            builder.place_block('tree', r, c)
        builder.place_block('diamond', 10, 2)
        builder.add_mob_near('cow', 2, 2, 4)
        builder.add_mob_near('zombie', 1, 5, 6)
        builder.set_needs(health=7, food=5, drink=4)
        return builder.build()
"""
# The same world without the zombie, but wood already collected (no reward for it) and a table
# to place.
_PROBE_DONE = _PROBE.replace("completed_achievements = ()",
                             "completed_achievements = ('collect_wood',)").replace(
    "relevant_achievements = ('collect_wood',)", "relevant_achievements = ('place_table',)").replace(
    "builder.add_mob_near('zombie', 1, 5, 6)", "pass")  # no zombie: it runs to the time limit


@pytest.mark.slow
@needs_craftax
def test_level_program_edits_rewards_and_achievements_on_craftax_classic():
    """Issue 44: what a level program writes is in the Craftax-Classic state (blocks, inventory,
    mobs, needs, pre-completed achievements), the game's rewards and achievements map onto the
    level's goal and completion bonus, and invalid actions are refused with a clear error."""
    from craftax.craftax_classic.constants import Achievement, Action, BlockType

    from icml26.papers.dicode.craftax_backend import FRAME, ClassicLevelEnv

    bonus = 5.0
    env = ClassicLevelEnv([None, _PROBE, _PROBE_DONE], 3, slot_levels=[0, 1, 2], seed=3,
                          bonus=bonus)
    obs = env.reset()
    n_ach = len(Achievement)
    goal = obs[:, -n_ach:]
    wood, table = Achievement.COLLECT_WOOD.value, Achievement.PLACE_TABLE.value
    assert goal[0].sum() == n_ach
    assert np.flatnonzero(goal[1]).tolist() == [wood]
    assert np.flatnonzero(goal[2]).tolist() == [table]
    st = env.state
    maps, pos = np.asarray(st.map), np.asarray(st.player_position)
    for i in (1, 2):
        m, p = maps[i], pos[i]
        o = p - FRAME // 2
        assert (m[o[0]:o[0] + 2, o[1]:o[1] + FRAME] == BlockType.STONE.value).all()
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            assert m[p[0] + dr, p[1] + dc] == BlockType.TREE.value
        assert m[o[0] + 10, o[1] + 2] == BlockType.DIAMOND.value
        inv = st.inventory
        assert [int(np.asarray(getattr(inv, k))[i]) for k in
                ("wood", "stone", "coal", "wood_pickaxe", "stone_pickaxe", "iron_pickaxe",
                 "wood_sword", "stone_sword")] == [3, 2, 0, 1, 1, 0, 1, 0]
        assert (int(np.asarray(st.player_health)[i]), int(np.asarray(st.player_food)[i]),
                int(np.asarray(st.player_drink)[i])) == (7, 5, 4)
        for mobs, n, lo, hi in ((st.cows, 2, 2, 4), (st.zombies, 2 - i, 5, 6)):
            mask = np.asarray(mobs.mask)[i]
            assert mask.sum() == n
            d = np.abs(np.asarray(mobs.position)[i][mask] - p).sum(1)
            assert ((d >= lo) & (d <= hi)).all()
            assert np.asarray(st.mob_map)[i][tuple(np.asarray(mobs.position)[i][mask].T)].all()
    ach = np.asarray(st.achievements)
    assert not ach[0].any() and not ach[1].any()
    assert np.flatnonzero(ach[2]).tolist() == [wood]
    # One DO facing a tree: the game's +1 for collect_wood on level 1 (its goal: success, the
    # completion bonus, the episode ends); no reward on level 2 (pre-completed), but its wood
    # goes up and the episode goes on.
    obs, r, d, info = env.step(np.array([Action.NOOP.value, Action.DO.value, Action.DO.value]))
    assert r[1] == pytest.approx(1.0 + bonus) and r[2] == pytest.approx(0.0)
    assert d.tolist() == [False, True, False]
    assert info["slot"].tolist() == [1] and info["success"].tolist() == [True]
    assert info["unlocked"][0, wood] and info["return"][0] == pytest.approx(1.0 + bonus)
    assert not info["truncated"].any()
    assert int(np.asarray(env.state.inventory.wood)[2]) == 4
    # slot 1 was reset onto a fresh world of its level: achievements cleared, wood back to 3
    assert not np.asarray(env.state.achievements)[1].any()
    assert int(np.asarray(env.state.inventory.wood)[1]) == 3
    # the time limit is a truncation with the final observation (level 2: 40 steps)
    for _ in range(38):
        obs, r, d, info = env.step(np.zeros(3, np.int64))
        assert not d[2]
    obs, r, d, info = env.step(np.zeros(3, np.int64))
    assert d[2] and 2 in info["slot"].tolist()
    k = info["slot"].tolist().index(2)
    assert info["truncated"][k] and not info["success"][k] and info["length"][k] == 40
    assert info["final_obs"].shape[1] == env.obs_dim
    for bad in (np.array([17, 0, 0]), np.array([-1, 0, 0]), np.array([0, 0]),
                np.array([0.0, 1.0, 2.0]), np.array([True, False, True])):
        with pytest.raises(ValueError, match="actions must be 3 integers in \\[0, 17\\)"):
            env.step(bad)


@pytest.mark.slow
@needs_craftax
def test_a_guardian_or_armour_level_is_refused_by_name():
    from icml26.papers.dicode.craftax_backend import ClassicLevelEnv, NotInClassicError

    guardian = _PROBE.replace("('collect_wood',)", "('defeat_guardian',)", 1)
    with pytest.raises(NotInClassicError, match="defeat_guardian"):
        ClassicLevelEnv([guardian], 1)
    armour = _PROBE.replace("'sword': 1}", "'sword': 1, 'armour': 1}")
    with pytest.raises(NotInClassicError, match="armour"):
        ClassicLevelEnv([armour], 1)


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
    # the same PPO trains a few updates on the Classic level envs
    import torch

    ppo = PPO(PPOConfig(num_steps=8, hidden=16, epochs=2, minibatches=2), env.obs_dim,
              env.num_actions, seed=0)
    before = [p.detach().clone() for p in ppo.net.parameters()]
    for _ in range(3):
        batch = ppo.rollout(env, obs)
        obs = batch["next_obs"]
        stats = ppo.update(batch)
        assert np.isfinite(batch["returns"]).all() and np.isfinite(list(stats.values())).all()
    assert batch["rewards"].shape == (8, 3)
    assert any(not torch.equal(a, b) for a, b in zip(before, ppo.net.parameters(), strict=True))
    with pytest.raises(ValueError, match="actions"):
        env.step(np.array([17, 0, 0]))


@pytest.mark.slow
@needs_craftax
def test_classic_env_worlds_by_index_time_limit_and_reassign():
    """The curriculum trainer's interface on Classic: a world sampler's world index ``w`` is the
    game's world of ``fold_in(PRNGKey(world_seed), w)`` (PLR replays it), the original game ends
    at ``original_max_steps`` by the game's own termination, and ``reassign`` keeps the slots it
    is told to keep (their step count goes on) and rebuilds the others on their new level."""
    import jax

    from icml26.papers.dicode.craftax_backend import ClassicLevelEnv, _classic_game

    env = ClassicLevelEnv([None], 2, seed=0, original_max_steps=5, world_seed=11,
                          world_sampler=lambda idx, rng: (np.zeros(len(idx)), np.full(len(idx), 7)))
    game = _classic_game()
    _, ref = game["reset1"](jax.random.fold_in(jax.random.PRNGKey(11), 7), env.params)
    assert env.world.tolist() == [7, 7]
    for i in range(2):
        assert (np.asarray(env.state.map)[i] == np.asarray(ref.map)).all()
    assert int(env.params.max_timesteps) == 5
    for t in range(5):
        _, _, d, info = env.step(np.zeros(2, np.int64))
        assert d.all() == (t == 4)
    assert info["length"].tolist() == [5, 5] and not info["truncated"].any()
    env = ClassicLevelEnv([None, _PROBE], 2, slot_levels=[0, 0], seed=1)
    env.step(np.zeros(2, np.int64))
    env.reassign([None, _PROBE], [1, 0], keep=[False, True])
    assert env.t.tolist() == [0, 1] and env.level.tolist() == [1, 0]
    assert int(np.asarray(env.state.inventory.wood)[0]) == 3  # the probe level's inventory

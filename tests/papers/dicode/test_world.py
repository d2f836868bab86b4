"""MicroCraft mechanics: crafting chain, rewards, pre-completed achievements, termination."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.papers.dicode import BaseLevel, LevelParams, MicroCraftEnv, OriginalLevel, make_bank
from icml26.papers.dicode.world import ACTIONS, TIER, B, WorldBuilder, obs_dim

ACT = {a: i for i, a in enumerate(ACTIONS)}


class Craft(BaseLevel):
    relevant_achievements = ("make_wood_pickaxe",)
    completed_achievements = ("collect_wood",)

    def params(self):
        return LevelParams(max_steps=50)

    def generate_world(self, rng, builder):
        builder.set_inventory({"wood": 3})
        builder.place_block("tree", 6, 7)       # right of the player at (6, 6)
        return builder.build()


def _env(level, n=2):
    bank = make_bank(level, 2, 0, 12)
    env = MicroCraftEnv([bank], n, seed=0, bonus=5.0)
    env.assign(np.zeros(n, np.int64))
    return env


def test_craft_chain_rewards_and_success():
    env = _env(Craft())
    assert env.unlocked[:, 0].all()             # collect_wood pre-filled
    _, r, d, _ = env.step(np.full(2, ACT["right"]))  # faces the tree, cannot walk into it
    assert (env.pos == [6, 6]).all() and (r == 0).all() and not d.any()
    _, r, _, _ = env.step(np.full(2, ACT["do"]))     # wood again: no reward (pre-completed)
    assert (r == 0).all() and (env.inv[:, 0] == 4).all()
    _, r, _, _ = env.step(np.full(2, ACT["make_pickaxe"]))  # no table nearby: nothing
    assert (r == 0).all()
    env.step(np.full(2, ACT["left"]))                # face left (moves to (6, 5))
    _, r, _, _ = env.step(np.full(2, ACT["place_table"]))
    assert (r == TIER["place_table"]).all() and (env.inv[:, 0] == 2).all()
    _, r, d, info = env.step(np.full(2, ACT["make_pickaxe"]))
    # pickaxe reward + the completion bonus; success ends the episode
    assert r == pytest.approx(np.full(2, TIER["make_wood_pickaxe"] + 5.0))
    assert d.all() and info["success"].all()
    assert (env.t == 0).all()                       # auto-reset


def test_timeout_and_observation_shape():
    env = _env(Craft(), n=3)
    for _ in range(49):
        obs, _, d, _ = env.step(np.zeros(3, np.int64))
        assert not d.any()
    before = env.observe()
    obs, _, d, info = env.step(np.zeros(3, np.int64))
    assert d.all() and not info["success"].any()
    assert obs.shape == (3, obs_dim())
    # a time-out is reported as a truncation with the observation it was cut at (PPO bootstraps it)
    assert info["truncated"].all()
    # noop: the cut observation is the previous one up to one step of needs depletion, and it is
    # not the reset observation the env returns
    np.testing.assert_allclose(info["final_obs"], before, atol=0.01)
    assert np.abs(info["final_obs"] - obs).max() > 0.05


def test_success_and_death_are_not_truncations():
    env = _env(Craft())
    for a in ("right", "do", "left", "place_table"):
        env.step(np.full(2, ACT[a]))
    _, _, d, info = env.step(np.full(2, ACT["make_pickaxe"]))
    assert d.all() and info["success"].all() and not info["truncated"].any()
    assert "final_obs" not in info


@pytest.mark.parametrize("bad, err", [
    (np.array([11, 0]), ValueError), (np.array([-1, 0]), ValueError),
    (np.zeros(3, np.int64), ValueError), (np.zeros((2, 1), np.int64), ValueError),
    (np.array([0.0, 1.0]), TypeError), (np.array([True, False]), TypeError),
])
def test_step_refuses_invalid_actions(bad, err):
    env = _env(Craft())
    with pytest.raises(err, match="action"):
        env.step(bad)


def test_original_level_has_every_resource_and_is_deterministic():
    a = make_bank(OriginalLevel(), 4, 1, 12)
    b = make_bank(OriginalLevel(), 4, 1, 12)
    np.testing.assert_array_equal(a.blocks, b.blocks)
    for blk in ("tree", "stone", "coal", "iron", "diamond", "water"):
        assert (a.blocks == B[blk]).any(axis=(1, 2)).all(), blk
    assert (a.mobs == 3).sum(axis=(1, 2)).tolist() == [1, 1, 1, 1]   # one guardian each
    assert a.relevant.all()


def test_builder_rejects_unknown_names():
    bld = WorldBuilder(8, np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown block"):
        bld.place_block("gold", 1, 1)
    with pytest.raises(ValueError, match="unknown item"):
        bld.set_inventory({"gold": 1})
    with pytest.raises(ValueError, match="unknown mob"):
        bld.add_mob_near("dragon")


def test_env_rejects_bad_assignment():
    env = _env(Craft())
    with pytest.raises(ValueError, match="level indices"):
        env.assign(np.array([0, 3]))


class Guardian(BaseLevel):
    relevant_achievements = ("defeat_guardian",)

    def __init__(self, inventory):
        self.inventory = inventory

    def generate_world(self, rng, builder):
        builder.set_inventory(self.inventory)
        builder.add_mob_near("guardian", 1, 1, 1)
        return builder.build()


@pytest.mark.parametrize("inventory, wins", [({"sword": 2}, False), ({"sword": 3}, True),
                                             ({"sword": 2, "armour": 1}, True), ({}, False)])
def test_guardian_needs_iron_sword_or_armour(inventory, wins):
    env = _env(Guardian(inventory), n=1)
    r0, c0 = np.argwhere(env.mobs[0] == 3)[0]
    dr, dc = r0 - env.pos[0, 0], c0 - env.pos[0, 1]
    face = {(0, -1): "left", (0, 1): "right", (-1, 0): "up", (1, 0): "down"}[(int(dr), int(dc))]
    env.step(np.array([ACT[face]]))
    for _ in range(10):
        _, _, d, info = env.step(np.array([ACT["do"]]))
        if d.any():
            break
    assert d.any() and bool(info["success"][0]) == wins

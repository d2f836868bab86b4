"""ACCEL tile edits on MicroCraft worlds and the accel arm's buffer logic (hand-made cases)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from icml26.papers.dicode import OriginalLevel, make_bank
from icml26.papers.dicode.mutators import (
    MUTABLE_BLOCKS,
    append_worlds,
    bank_world,
    editable_cells,
    mutate_world,
)
from icml26.papers.dicode.trainer import CurriculumConfig, SessionStats, run_accel_arm, run_plr_arm
from icml26.papers.dicode.world import ITEMS, B, M, WorldState

MUTABLE = {B[b] for b in MUTABLE_BLOCKS}


def _hand_world() -> WorldState:
    """4x4: player at (1, 1) on grass; a cow at (0, 3); a table at (3, 3); lava at (3, 0);
    everything else grass except a tree at (0, 0) and iron at (2, 2)."""
    blocks = np.full((4, 4), B["grass"], np.int8)
    blocks[0, 0], blocks[2, 2], blocks[3, 3], blocks[3, 0] = B["tree"], B["iron"], B["table"], B["lava"]
    mobs = np.zeros((4, 4), np.int8)
    mobs[0, 3] = M["cow"]
    hp = np.zeros((4, 4), np.float32)
    hp[0, 3] = 1.0
    return WorldState(blocks=blocks, mobs=mobs, mob_hp=hp, player=np.array([1, 1]),
                      inventory=np.zeros(len(ITEMS), np.float32),
                      needs=np.array([9.0, 9.0, 9.0], np.float32))


def test_editable_cells_exclude_player_mobs_and_structures():
    cells = {tuple(c) for c in editable_cells(_hand_world())}
    # 16 cells minus the player (1,1), the cow (0,3), the table (3,3) and the lava (3,0)
    assert len(cells) == 12
    assert not cells & {(1, 1), (0, 3), (3, 3), (3, 0)}


@pytest.mark.parametrize("n", [1, 3, 12])
def test_exact_edit_count_and_untouched_fields(n):
    w = _hand_world()
    before = {k: np.array(getattr(w, k), copy=True) for k in w.__dataclass_fields__}
    child = mutate_world(w, np.random.default_rng(5), n)
    changed = np.argwhere(child.blocks != w.blocks)
    assert len(changed) == n                                   # exactly n distinct cells change
    assert not {tuple(c) for c in changed} & {(1, 1), (0, 3), (3, 3), (3, 0)}
    assert all(child.blocks[r, c] in MUTABLE for r, c in changed)
    for k, v in before.items():                                # the parent is not modified
        np.testing.assert_array_equal(getattr(w, k), v)
    for k in ("mobs", "mob_hp", "player", "inventory", "needs"):
        np.testing.assert_array_equal(getattr(child, k), getattr(w, k))
    assert child.blocks[1, 1] == B["grass"] and child.mobs[1, 1] == 0


def test_deterministic_for_a_seed():
    w = _hand_world()
    a = mutate_world(w, np.random.default_rng(3), 4)
    b = mutate_world(w, np.random.default_rng(3), 4)
    np.testing.assert_array_equal(a.blocks, b.blocks)
    others = [mutate_world(w, np.random.default_rng(s), 4).blocks for s in range(4, 10)]
    assert any((o != a.blocks).any() for o in others)


@pytest.mark.parametrize("bad", [0, -1, 13, 2.0, True, "3", None])
def test_invalid_n_edits(bad):
    with pytest.raises(ValueError, match="n_edits"):
        mutate_world(_hand_world(), np.random.default_rng(0), bad)


def test_bad_world_and_rng():
    w = _hand_world()
    with pytest.raises(ValueError, match="player"):
        mutate_world(replace(w, player=np.array([4, 0])), np.random.default_rng(0), 1)
    with pytest.raises(TypeError, match="Generator"):
        mutate_world(w, 0, 1)


def test_bank_round_trip_and_append():
    bank = make_bank(OriginalLevel(), 3, 0, 12)
    w = bank_world(bank, 1)
    child = mutate_world(w, np.random.default_rng(0), 5)
    big = append_worlds(bank, [child])
    assert big.n == 4 and bank.n == 3
    for k in ("blocks", "mobs", "mob_hp", "player", "inventory", "needs"):
        np.testing.assert_array_equal(getattr(big, k)[:3], getattr(bank, k))
        np.testing.assert_array_equal(getattr(big, k)[3], getattr(child, k))
    assert (big.blocks[3] != bank.blocks[1]).sum() == 5
    with pytest.raises(IndexError):
        bank_world(bank, 3)
    with pytest.raises(ValueError, match="size"):
        append_worlds(bank, [_hand_world()])


class _FakeRunner:
    """Stands in for :class:`Runner`: each session resets ``resets`` slots through the world
    sampler and scores every world by ``score(world)``; records the training masks."""

    def __init__(self, cfg, resets, score):
        self.cfg, self.seed, self.env = cfg, 0, None
        self.original = make_bank(OriginalLevel(), cfg.original_train_worlds, 0, cfg.size)
        self.resets, self.score = resets, score
        self.log = []  # per session: (worlds drawn, replayed flags from record)

    def session(self, banks, slot_levels=None, world_sampler=None, train_mask=None, record=None):
        _, worlds = world_sampler(np.arange(self.resets), np.random.default_rng(0))
        flags = record(None) if record is not None else None
        self.log.append((worlds.copy(), None if flags is None else flags[:self.resets].copy()))
        st = SessionStats()
        st.world_adv.append((worlds.copy(), np.array([self.score(w) for w in worlds])))
        return st


def test_accel_children_come_from_top_replayed_worlds():
    cfg = CurriculumConfig(num_envs=8, sessions=3, original_train_worlds=10, plr_buffer=4,
                           plr_replay_prob=0.5, accel_children=2, accel_edits=3)
    r = _FakeRunner(cfg, resets=8, score=lambda w: float(w))   # higher world index = higher score
    d = run_accel_arm(r)
    (w0, f0), (w1, f1), (w2, f2) = r.log
    assert not f0.any()                  # the empty buffer never replays
    replayed1 = sorted({int(w) for w, f in zip(w1, f1, strict=True) if f}, reverse=True)
    assert replayed1                     # the full buffer replays in session 1
    n_children = min(2, len(replayed1))
    # children of session 1 are appended after the 10 training worlds (+ those of session 0: none)
    first = 10
    for k, parent in enumerate(replayed1[:n_children]):
        child = r.original.blocks[first + k]
        assert (child != r.original.blocks[parent]).sum() == 3
    # session 2: the first non-replayed resets play the queued children, without gradient
    fresh2 = [int(w) for w, f in zip(w2, f2, strict=True) if not f]
    assert fresh2[:n_children] == list(range(first, first + n_children))
    assert d["children"] >= n_children and d["children_played"] >= min(n_children, len(fresh2))


def test_plr_arm_is_unchanged_by_the_accel_hooks():
    cfg = CurriculumConfig(num_envs=8, sessions=3, original_train_worlds=10, plr_buffer=4)
    r = _FakeRunner(cfg, resets=8, score=lambda w: float(w))
    d = run_plr_arm(r, robust=True)
    assert r.original.n == 10 and set(d) == {"replay_fraction", "buffer_size"}
    assert all(0 <= w < 10 for ws, _ in r.log for w in ws)

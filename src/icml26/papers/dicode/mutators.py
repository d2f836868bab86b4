"""ACCEL-style world mutations (Parker-Holder et al. 2022, "Evolving Curricula with Regret-Based
Environment Design"), the edit operator of the ``accel`` baseline arm.

ACCEL keeps robust PLR's level buffer and, after training on replayed (high-regret) levels,
applies a few small random edits to them to make new levels, which are scored on play (no
gradient) and enter the buffer like any new level. The DiCode repository ships such tile-swap
mutators (``baselines/mutators.py``, ``--use_accel``) but does not plot ACCEL (brief §3).

Our edit, on a MicroCraft :class:`~.world.WorldState`: pick ``n_edits`` distinct cells that are
not the player's start cell, hold no mob and carry a *mutable* block (terrain and resources:
grass, tree, stone, coal, iron, diamond, water, path), and set each to a different mutable block,
chosen uniformly. This places and removes resources (grass -> coal, iron -> grass, ...) and
reshapes terrain; it never creates lava, tables or furnaces, never touches mobs, the inventory or
the needs, so every world invariant that :class:`~.world.WorldBuilder` guarantees (a walkable,
non-lava, mob-free start cell; mobs only where they were placed) still holds. Exactly
``n_edits`` cells change.
"""

from __future__ import annotations

import numbers

import numpy as np

from .world import BLOCKS, MOBS, B, Bank, WorldState

MUTABLE_BLOCKS = ("grass", "tree", "stone", "coal", "iron", "diamond", "water", "path")
_MUTABLE_IDS = np.array([B[b] for b in MUTABLE_BLOCKS], dtype=np.int64)


def _check_world(world: WorldState) -> int:
    if not isinstance(world, WorldState):
        raise TypeError(f"world must be a WorldState, got {type(world).__name__}")
    blocks = np.asarray(world.blocks)
    if blocks.ndim != 2 or blocks.shape[0] != blocks.shape[1]:
        raise ValueError(f"world.blocks must be a square grid, got shape {blocks.shape}")
    s = blocks.shape[0]
    if np.asarray(world.mobs).shape != (s, s) or np.asarray(world.mob_hp).shape != (s, s):
        raise ValueError("world.mobs and world.mob_hp must have the shape of world.blocks")
    if blocks.min() < 0 or blocks.max() >= len(BLOCKS):
        raise ValueError("world.blocks holds an unknown block id")
    if np.asarray(world.mobs).min() < 0 or np.asarray(world.mobs).max() >= len(MOBS):
        raise ValueError("world.mobs holds an unknown mob id")
    p = np.asarray(world.player)
    if p.shape != (2,) or p.min() < 0 or p.max() >= s:
        raise ValueError(f"world.player must be a (row, col) inside the {s}x{s} grid, got {p}")
    return s


def editable_cells(world: WorldState) -> np.ndarray:
    """(k, 2) cells an edit may touch: a mutable block, no mob, not the player's cell (row-major)."""
    _check_world(world)
    ok = np.isin(world.blocks, _MUTABLE_IDS) & (np.asarray(world.mobs) == 0)
    ok[int(world.player[0]), int(world.player[1])] = False
    return np.argwhere(ok)


def mutate_world(world: WorldState, rng: np.random.Generator, n_edits: int) -> WorldState:
    """A copy of ``world`` with exactly ``n_edits`` distinct editable cells changed to another
    mutable block (see the module docstring). ``world`` is not modified."""
    if isinstance(n_edits, bool) or not isinstance(n_edits, numbers.Integral) or n_edits < 1:
        raise ValueError(f"n_edits must be a positive integer, got {n_edits!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    cells = editable_cells(world)
    if n_edits > len(cells):
        raise ValueError(f"n_edits={n_edits} exceeds the {len(cells)} editable cells of the world")
    blocks = np.array(world.blocks, copy=True)
    for r, c in cells[rng.choice(len(cells), size=int(n_edits), replace=False)]:
        others = _MUTABLE_IDS[_MUTABLE_IDS != blocks[r, c]]
        blocks[r, c] = others[rng.integers(len(others))]
    return WorldState(blocks=blocks, mobs=np.array(world.mobs, copy=True),
                      mob_hp=np.array(world.mob_hp, copy=True),
                      player=np.array(world.player, copy=True),
                      inventory=np.array(world.inventory, copy=True),
                      needs=np.array(world.needs, copy=True))


def bank_world(bank: Bank, i: int) -> WorldState:
    """World ``i`` of ``bank`` as a :class:`WorldState` (copies)."""
    if not 0 <= int(i) < bank.n:
        raise IndexError(f"world {i} is outside the bank's {bank.n} worlds")
    return WorldState(blocks=bank.blocks[i].copy(), mobs=bank.mobs[i].copy(),
                      mob_hp=bank.mob_hp[i].copy(), player=bank.player[i].copy(),
                      inventory=bank.inventory[i].copy(), needs=bank.needs[i].copy())


def append_worlds(bank: Bank, worlds: list[WorldState]) -> Bank:
    """A new bank: ``bank``'s worlds (same indices) followed by ``worlds``; same params and masks."""
    if not worlds:
        return bank
    s = bank.blocks.shape[1]
    for w in worlds:
        if _check_world(w) != s:
            raise ValueError(f"a world of size {w.blocks.shape[0]} cannot join a bank of size {s}")
    cat = lambda k, dt: np.concatenate([getattr(bank, k), np.stack([getattr(w, k) for w in worlds])  # noqa: E731
                                        .astype(dt)])
    return Bank(blocks=cat("blocks", np.int8), mobs=cat("mobs", np.int8),
                mob_hp=cat("mob_hp", np.float32), player=cat("player", np.int64),
                inventory=cat("inventory", np.float32), needs=cat("needs", np.float32),
                params=bank.params, relevant=bank.relevant, completed=bank.completed)

"""Optional Craftax backend (``pip install "icml26[craftax]"``: craftax and jax).

- :class:`CraftaxVecEnv`: the original Craftax game (full or Classic) behind the batched
  :class:`~icml26.core.rl.ppo.VecEnv` protocol, so the same PPO and evaluation code runs on it.
- :class:`ClassicLevelEnv` + :class:`ClassicWorldBuilder`: DiCode's levels as code on the real
  Craftax-Classic -- the level programs MicroCraft runs (the same world-builder API) edit a
  Classic world, with their goals, pre-completed achievements, completion bonus and time limit.
  Full Craftax's levels (floors, spells, enchantments) would need a builder over its larger
  ``EnvState``; not implemented.

Importing this module does not import jax; :func:`craftax_available` checks for it. Tested with
craftax 1.6.1 and jax/jaxlib 0.10.2 (CPU). CPU throughput is measured by
``benchmarks/dicode_craftax_throughput.py`` (JSON next to it): far below MicroCraft's, which is
why MicroCraft is the CPU default and a Classic curriculum run is meant for a GPU.
"""

from __future__ import annotations

import importlib.util

import numpy as np


def craftax_available() -> bool:
    return importlib.util.find_spec("craftax") is not None and importlib.util.find_spec("jax") is not None


class CraftaxVecEnv:
    """``num_envs`` Craftax worlds (``Craftax-Symbolic-v1`` by default) with auto-reset."""

    def __init__(self, num_envs: int, seed: int = 0, name: str = "Craftax-Symbolic-v1") -> None:
        if not craftax_available():
            raise ImportError("the Craftax backend needs the optional packages craftax and jax "
                              "(pip install craftax jax)")
        import jax
        from craftax.craftax_env import make_craftax_env_from_name

        self._jax = jax
        self.env = make_craftax_env_from_name(name, auto_reset=True)
        self.params = self.env.default_params
        self.num_envs = int(num_envs)
        self.num_actions = int(self.env.action_space(self.params).n)
        self.key = jax.random.PRNGKey(seed)
        self._reset = jax.jit(jax.vmap(self.env.reset, in_axes=(0, None)))
        self._step = jax.jit(jax.vmap(self.env.step, in_axes=(0, 0, 0, None)))
        self.state = None
        self.ret = np.zeros(self.num_envs, np.float32)
        obs = self.reset()
        self.obs_dim = int(obs.shape[1])

    def _keys(self):
        self.key, sub = self._jax.random.split(self.key)
        return self._jax.random.split(sub, self.num_envs)

    def reset(self) -> np.ndarray:
        obs, self.state = self._reset(self._keys(), self.params)
        self.ret[:] = 0
        return np.asarray(obs, dtype=np.float32).reshape(self.num_envs, -1)

    def step(self, actions: np.ndarray):
        obs, self.state, r, d, _ = self._step(self._keys(), self.state,
                                              self._jax.numpy.asarray(actions), self.params)
        r, d = np.asarray(r, np.float32), np.asarray(d, bool)
        self.ret += r
        info = {}
        if d.any():
            info = {"return": self.ret[d].copy(), "slot": np.flatnonzero(d)}
            self.ret[d] = 0
        return np.asarray(obs, np.float32).reshape(self.num_envs, -1), r, d, info


# ----------------------------------------------------------------------------------------------
# Levels as code on Craftax-Classic (issue 44): DiCode's level programs on the real game
# ----------------------------------------------------------------------------------------------

# MicroCraft names -> Craftax-Classic enum names. MicroCraft's guardian, armour and their
# achievements do not exist in Classic: a level that needs them is refused with the reason.
CLASSIC_BLOCKS = {"grass": "GRASS", "tree": "TREE", "stone": "STONE", "coal": "COAL",
                  "iron": "IRON", "diamond": "DIAMOND", "water": "WATER",
                  "table": "CRAFTING_TABLE", "furnace": "FURNACE", "lava": "LAVA", "path": "PATH"}
NOT_IN_CLASSIC = ("make_armour", "defeat_guardian")
FRAME = 12  # MicroCraft's world size: level programs address a 12 x 12 frame around the player


class NotInClassicError(ValueError):
    """A level program uses something Craftax-Classic does not have (guardian, armour)."""


def load_level(source: str):
    """The ``Level`` class of a level program, executed with only the level API and safe builtins
    (the source must pass :func:`.sandbox.static_check`, the sandbox's first layer)."""
    import builtins

    from . import world as W
    from .sandbox import SAFE_BUILTINS, static_check

    ok, reason = static_check(source)
    if not ok:
        raise ValueError(f"level program refused: {reason}")
    safe = {k: getattr(builtins, k) for k in SAFE_BUILTINS}
    safe["__build_class__"] = builtins.__build_class__
    ns = {"__builtins__": safe, "__name__": "level", "BaseLevel": W.BaseLevel,
          "LevelParams": W.LevelParams, "ACHIEVEMENTS": W.ACHIEVEMENTS}
    exec(compile(source, "<level>", "exec"), ns)  # noqa: S102 - statically checked above
    return ns["Level"]


class ClassicWorldBuilder:
    """DiCode's world-builder API (the one MicroCraft levels call) over a Craftax-Classic world.

    It starts from the game's own procedural world (``base``, an ``EnvState`` from the game's
    reset) and applies the level's edits around the player: positions in ``place_block`` /
    ``fill_area`` / ``set_player`` address the 12 x 12 frame centred on the player (MicroCraft's
    world), distances in ``place_near`` / ``add_mob_near`` are Manhattan distances from the player
    as in MicroCraft, and ``scatter`` places within that frame. Cows and zombies go into the
    game's mob slots (3 each in Classic: extra ones are not placed; the count placed is
    returned). A pickaxe or sword level ``k`` gives the first ``k`` tiers of that tool (Classic
    keeps one item per tier). Mechanic settings (``LevelParams`` damage and depletion multipliers)
    have no Classic counterpart and are not applied; ``max_steps`` is the episode's time limit."""

    def __init__(self, base, rng: np.random.Generator) -> None:
        from craftax.craftax_classic.constants import BlockType

        self._base, self.rng, self._BT = base, rng, BlockType
        self.map = np.array(base.map)
        self.player = np.array(base.player_position, dtype=np.int64)
        self.origin = self.player - FRAME // 2
        self.inventory: dict[str, int] = {}
        self.needs = (9, 9, 9)
        self.mobs: dict[str, list[tuple[int, int]]] = {"cow": [], "zombie": []}
        self.guardian_health = 12.0

    # -- helpers --------------------------------------------------------------------------------
    def _block(self, name: str) -> int:
        if name not in CLASSIC_BLOCKS:
            raise ValueError(f"unknown block {name!r}; blocks are {tuple(CLASSIC_BLOCKS)}")
        return self._BT[CLASSIC_BLOCKS[name]].value

    def _cell(self, row: int, col: int) -> tuple[int, int]:
        r = int(np.clip(self.origin[0] + int(row) % FRAME, 0, self.map.shape[0] - 1))
        c = int(np.clip(self.origin[1] + int(col) % FRAME, 0, self.map.shape[1] - 1))
        return r, c

    def _occupied(self) -> set[tuple[int, int]]:
        return {p for ps in self.mobs.values() for p in ps} | {tuple(self.player)}

    def _cells_near(self, dmin: int, dmax: int) -> np.ndarray:
        h, w = self.map.shape
        rr, cc = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
        d = np.abs(rr - self.player[0]) + np.abs(cc - self.player[1])
        ok = (d >= max(int(dmin), 1)) & (d <= int(dmax)) & (self.map == self._BT.GRASS.value)
        cells = np.argwhere(ok)
        taken = self._occupied()
        return np.array([c for c in cells if tuple(c) not in taken], dtype=np.int64).reshape(-1, 2)

    # -- the API ----------------------------------------------------------------------------------
    def set_player(self, row: int, col: int) -> None:
        self.player = np.array(self._cell(row, col), dtype=np.int64)

    def set_inventory(self, items: dict) -> None:
        from .world import ITEMS

        for k, v in dict(items).items():
            if k == "armour":
                raise NotInClassicError("Craftax-Classic has no armour")
            if k not in ITEMS:
                raise ValueError(f"unknown item {k!r}; items are {ITEMS}")
            hi = 3 if k in ("pickaxe", "sword") else 9
            self.inventory[k] = min(max(int(v), 0), hi)

    def set_needs(self, health: float = 9, food: float = 9, drink: float = 9) -> None:
        self.needs = tuple(int(np.clip(round(float(x)), 1, 9)) for x in (health, food, drink))

    def place_block(self, name: str, row: int, col: int) -> None:
        r, c = self._cell(row, col)
        if (r, c) != tuple(self.player):
            self.map[r, c] = self._block(name)

    def fill_area(self, name: str, row0: int, col0: int, row1: int, col1: int) -> None:
        b = self._block(name)
        (r0, c0), (r1, c1) = self._cell(row0, col0), self._cell(row1, col1)
        r0, r1 = sorted((r0, r1))
        c0, c1 = sorted((c0, c1))
        self.map[r0:r1 + 1, c0:c1 + 1] = b

    def place_near(self, name: str, count: int = 1, min_dist: int = 1, max_dist: int = 4) -> int:
        b = self._block(name)
        cells = self._cells_near(min_dist, max_dist)
        n = min(int(count), len(cells))
        for r, c in cells[self.rng.choice(len(cells), size=n, replace=False)] if n else []:
            self.map[r, c] = b
        return n

    def scatter(self, name: str, count: int) -> int:
        return self.place_near(name, count, 1, FRAME)

    def add_mob_near(self, name: str, count: int = 1, min_dist: int = 2, max_dist: int = 6) -> int:
        if name == "guardian":
            raise NotInClassicError("Craftax-Classic has no guardian")
        if name not in self.mobs:
            raise ValueError(f"unknown mob {name!r}; Classic mobs are cow, zombie")
        slots = {"cow": 3, "zombie": 3}[name] - len(self.mobs[name])
        cells = self._cells_near(min_dist, max_dist)
        n = max(min(int(count), len(cells), slots), 0)
        for r, c in cells[self.rng.choice(len(cells), size=n, replace=False)] if n else []:
            self.mobs[name].append((int(r), int(c)))
        return n

    def build(self, completed: tuple[str, ...] = ()):
        """The edited ``EnvState`` (``completed`` achievements pre-filled: no reward for them)."""
        import jax.numpy as jnp
        from craftax.craftax_classic.constants import Achievement
        from craftax.craftax_classic.envs.craftax_state import Inventory, Mobs

        pr, pc = self.player
        if self.map[pr, pc] not in (self._BT.GRASS.value, self._BT.PATH.value,
                                    self._BT.SAND.value):
            self.map[pr, pc] = self._BT.GRASS.value
        inv = self.inventory
        tools = {f"{t}_{k}": int(inv.get(k, 0) >= i + 1)
                 for k in ("pickaxe", "sword") for i, t in enumerate(("wood", "stone", "iron"))}
        inventory = Inventory(wood=inv.get("wood", 0), stone=inv.get("stone", 0),
                              coal=inv.get("coal", 0), iron=inv.get("iron", 0),
                              diamond=inv.get("diamond", 0), sapling=0,
                              wood_pickaxe=tools["wood_pickaxe"], stone_pickaxe=tools["stone_pickaxe"],
                              iron_pickaxe=tools["iron_pickaxe"], wood_sword=tools["wood_sword"],
                              stone_sword=tools["stone_sword"], iron_sword=tools["iron_sword"])
        base = self._base
        mob_map = np.zeros(self.map.shape, bool)

        def mobs(old, placed, health):
            pos, mask = np.array(old.position), np.zeros(len(old.mask), bool)
            hp = np.array(old.health)
            for j, (r, c) in enumerate(placed):
                pos[j], mask[j], hp[j] = (r, c), True, health
                mob_map[r, c] = True
            return Mobs(position=jnp.asarray(pos, jnp.int32), health=jnp.asarray(hp),
                        mask=jnp.asarray(mask), attack_cooldown=old.attack_cooldown)

        cows = mobs(base.cows, self.mobs["cow"], 3)
        zombies = mobs(base.zombies, self.mobs["zombie"], 5)
        ach = np.zeros(len(Achievement), bool)
        for a in completed:
            ach[Achievement[a.upper()].value] = True
        health, food, drink = self.needs
        return base.replace(map=jnp.asarray(self.map, base.map.dtype), mob_map=jnp.asarray(mob_map),
                            player_position=jnp.asarray(self.player, base.player_position.dtype),
                            inventory=inventory, cows=cows, zombies=zombies,
                            achievements=jnp.asarray(ach), player_health=health,
                            player_food=food, player_drink=drink)


def classic_goal_indices(names) -> np.ndarray:
    """Craftax-Classic achievement indices of MicroCraft achievement names (refusing the ones
    Classic lacks)."""
    bad = [a for a in names if a in NOT_IN_CLASSIC]
    if bad:
        raise NotInClassicError(f"Craftax-Classic has no {', '.join(bad)}")
    from craftax.craftax_classic.constants import Achievement

    return np.array([Achievement[a.upper()].value for a in names], dtype=np.int64)


_CLASSIC: dict = {}


def _classic_game():
    """The Classic game (no auto-reset) and its jitted reset, vmapped step and vmapped
    observation, built once per process: every :class:`ClassicLevelEnv` shares them, so the JIT
    runs once per batch shape, not once per env."""
    if not _CLASSIC:
        import jax
        from craftax.craftax_classic.envs.craftax_symbolic_env import (
            CraftaxClassicSymbolicEnvNoAutoReset,
        )

        env = CraftaxClassicSymbolicEnvNoAutoReset()
        _CLASSIC.update(env=env, reset1=jax.jit(env.reset_env),
                        step=jax.jit(jax.vmap(env.step_env, in_axes=(0, 0, 0, None))),
                        obs=jax.jit(jax.vmap(env.get_obs)))
    return _CLASSIC


def classic_achievements() -> tuple[str, ...]:
    """Craftax-Classic's 22 achievement names (lower case, in the game's enum order)."""
    from craftax.craftax_classic.constants import Achievement

    return tuple(a.name.lower() for a in sorted(Achievement, key=lambda a: a.value))


class ClassicLevelEnv:
    """Level programs on Craftax-Classic behind the batched ``VecEnv`` protocol of core.rl.ppo.

    ``levels``: level program sources (or ``None`` for the original game: the game's own world,
    every achievement relevant, the game's own termination, whose time limit is
    ``original_max_steps``, Craftax's ``max_timesteps``: 10000 by default). Slot ``i`` plays
    ``levels[slot_levels[i]]``; every reset builds a fresh world (the game's procedural world from
    a new key, then the program's edits). A level's episode ends on the game's death/lava, on
    success (every relevant achievement unlocked, as in DiCode: plus the completion ``bonus``) or
    at its ``max_steps`` (a truncation, reported with the final observation so PPO bootstraps it).
    Done infos also carry the final ``health`` (the game's reward is +1 per achievement plus 0.1 x
    the health change). Observation: Classic's symbolic observation and the multi-hot of the
    level's relevant achievements (22 Classic achievements; DiCode's ``one_hot`` conditioning). The game steps are
    one jitted, vmapped call; resets build worlds in Python (slow, fine for tiny budgets; a GPU
    profile would jit the builder).

    The curriculum trainer's interface (as :class:`.world.MicroCraftEnv`): ``assign(slots)``,
    ``reassign(levels, slots, keep)`` (slots with ``keep`` continue their episode), ``level`` /
    ``world`` per slot (what the slot plays now) and ``world_sampler(slots, rng) -> (levels,
    worlds)``: when set, it picks every reset's level and *world index*, and world ``w`` is the
    game's world of the key ``fold_in(PRNGKey(world_seed), w)`` (PLR replays worlds by index);
    without it, a world comes from the env's own key stream (``world`` is -1)."""

    def __init__(self, levels, num_envs: int, slot_levels=None, seed: int = 0,
                 bonus: float = 0.0, original_max_steps: int = 10_000, world_sampler=None,
                 world_seed: int = 0) -> None:
        if not craftax_available():
            raise ImportError("levels on Craftax-Classic need the optional packages craftax and "
                              "jax (pip install craftax jax)")
        import jax
        from craftax.craftax_classic.constants import Achievement

        game = _classic_game()
        self._jax = jax
        self.env = game["env"]
        if int(original_max_steps) < 1:
            raise ValueError(f"original_max_steps must be >= 1, got {original_max_steps}")
        self.params = self.env.default_params.replace(max_timesteps=int(original_max_steps))
        self.num_envs = int(num_envs)
        self.num_actions = int(self.env.num_actions)
        self.n_ach = len(Achievement)
        self.bonus = float(bonus)
        self.rng = np.random.default_rng(seed)
        self.key = jax.random.PRNGKey(seed)
        self.world_key = jax.random.PRNGKey(world_seed)
        self.world_sampler = world_sampler
        self._parsed: dict = {}
        self.levels = [self._parse(src) for src in levels]
        slots = np.zeros(self.num_envs, np.int64) if slot_levels is None else np.asarray(slot_levels)
        self._check_slots(slots)
        self.slot_level = slots.astype(np.int64)
        self.level = self.slot_level.copy()
        self.world = np.full(self.num_envs, -1, np.int64)
        self._reset1, self._step, self._obs = game["reset1"], game["step"], game["obs"]
        self.state = None
        self.t = np.zeros(self.num_envs, np.int64)
        self.ret = np.zeros(self.num_envs, np.float32)
        self.obs_dim = int(self.reset().shape[1])

    def _parse(self, src):
        """``(level object or None, goal indices, completed names, time limit)`` of a source."""
        from .world import LevelParams

        if src is None:
            return (None, np.arange(self.n_ach), (), float("inf"))
        if src not in self._parsed:
            cls = load_level(src)
            lv = cls()
            p = lv.params() if hasattr(lv, "params") else LevelParams()
            lo, hi = LevelParams.RANGES["max_steps"]
            self._parsed[src] = (lv, classic_goal_indices(cls.relevant_achievements),
                                 tuple(a for a in cls.completed_achievements
                                       if a not in NOT_IN_CLASSIC),
                                 float(min(max(p.max_steps, lo), hi)))
        return self._parsed[src]

    def _check_slots(self, slots: np.ndarray) -> None:
        if slots.shape != (self.num_envs,) or slots.min() < 0 or slots.max() >= len(self.levels):
            raise ValueError(f"slot_levels needs {self.num_envs} indices in [0, {len(self.levels)})")

    def _goal(self, slot: int) -> np.ndarray:
        g = np.zeros(self.n_ach, np.float32)
        g[self.levels[self.level[slot]][1]] = 1.0
        return g

    def _build(self, slot: int):
        level, _, completed, _ = self.levels[self.level[slot]]
        if self.world[slot] >= 0:
            sub = self._jax.random.fold_in(self.world_key, int(self.world[slot]))
        else:
            self.key, sub = self._jax.random.split(self.key)
        _, base = self._reset1(sub, self.params)
        if level is None:
            return base
        builder = ClassicWorldBuilder(base, self.rng)
        level.generate_world(self.rng, builder)
        return builder.build(completed)

    def _stack(self, states):
        return self._jax.tree.map(lambda *x: self._jax.numpy.stack(x), *states)

    def _observe(self) -> np.ndarray:
        obs = np.asarray(self._obs(self.state), np.float32).reshape(self.num_envs, -1)
        goals = np.stack([self._goal(i) for i in range(self.num_envs)])
        return np.concatenate([obs, goals], axis=1)

    def _pick(self, idx: np.ndarray) -> None:
        """Level and world of the slots ``idx`` about to reset."""
        if self.world_sampler is not None:
            lv, wd = self.world_sampler(idx, self.rng)
            self.level[idx], self.world[idx] = np.asarray(lv, np.int64), np.asarray(wd, np.int64)
        else:
            self.level[idx], self.world[idx] = self.slot_level[idx], -1

    def _reset_slots(self, idx: np.ndarray) -> None:
        self._pick(idx)
        fresh = self._stack([self._build(i) for i in idx])
        if self.state is None or len(idx) == self.num_envs:
            self.state = fresh
        else:
            ii = self._jax.numpy.asarray(idx)
            self.state = self._jax.tree.map(lambda s, f: s.at[ii].set(f), self.state, fresh)
        self.t[idx] = 0
        self.ret[idx] = 0

    def reset(self) -> np.ndarray:
        self.state = None
        self._reset_slots(np.arange(self.num_envs))
        return self._observe()

    def assign(self, slot_levels) -> np.ndarray:
        """Set every slot's level and reset every slot."""
        slots = np.asarray(slot_levels, dtype=np.int64)
        self._check_slots(slots)
        self.slot_level = slots.copy()
        return self.reset()

    def reassign(self, levels, slot_levels, keep) -> np.ndarray:
        """A new level list and slot levels; slots with ``keep`` continue their episode (their
        level must mean the same program before and after), the others reset."""
        self.levels = [self._parse(src) for src in levels]
        slots = np.asarray(slot_levels, dtype=np.int64)
        self._check_slots(slots)
        self.slot_level = slots.copy()
        keep = np.asarray(keep, bool)
        self.level[keep] = slots[keep]
        idx = np.flatnonzero(~keep)
        if len(idx):
            self._reset_slots(idx)
        return self._observe()

    def step(self, actions: np.ndarray):
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or not np.issubdtype(a.dtype, np.integer) \
                or a.dtype == bool or (a.size and (a.min() < 0 or a.max() >= self.num_actions)):
            raise ValueError(f"actions must be {self.num_envs} integers in [0, {self.num_actions})")
        self.key, sub = self._jax.random.split(self.key)
        keys = self._jax.random.split(sub, self.num_envs)
        _, self.state, r, dead, _ = self._step(keys, self.state, self._jax.numpy.asarray(a),
                                               self.params)
        r, dead = np.asarray(r, np.float32).copy(), np.asarray(dead, bool)
        ach = np.asarray(self.state.achievements, bool)
        self.t += 1
        success = np.array([ach[i, self.levels[self.level[i]][1]].all()
                            and self.levels[self.level[i]][0] is not None
                            for i in range(self.num_envs)])
        timeout = self.t >= np.array([self.levels[s][3] for s in self.level])
        r += success * self.bonus
        self.ret += r
        done = dead | success | timeout
        info = {}
        if done.any():
            idx = np.flatnonzero(done)
            truncated = (timeout & ~dead & ~success)[idx]
            info = {"slot": idx, "level": self.level[idx].copy(), "world": self.world[idx].copy(),
                    "return": self.ret[idx].copy(), "success": success[idx].copy(),
                    "unlocked": ach[idx].copy(), "length": self.t[idx].copy(),
                    "health": np.asarray(self.state.player_health, np.float32)[idx].copy(),
                    "truncated": truncated}
            if truncated.any():
                info["final_obs"] = self._observe()[idx]
            self._reset_slots(idx)
        return self._observe(), r, done, info

"""MicroCraft: a NumPy-vectorised crafter-like world whose levels are Python programs.

The laptop-scale stand-in for Craftax (brief §5.2). A grid of ``size x size`` blocks, one player,
static mobs (cow, zombie, guardian), an inventory, tools and needs. The tech tree has depth 6:

    wood -> table -> wood pickaxe / sword -> stone -> stone pickaxe / sword -> coal -> furnace
    -> iron -> iron pickaxe / sword / armour -> diamond -> defeat the guardian

plus side achievements (drink, eat cow, defeat zombie). Reward: the tier weight of each newly
unlocked achievement (like Craftax's 1/3/5/8 weights), the level's completion bonus on success.
An episode ends on death, timeout, or success (every relevant achievement unlocked), as in DiCode.
Combat: a zombie (5 HP) takes 1 + sword level per hit and deals 0.5 per step (p = 0.5) when
adjacent; the guardian (12 HP by default) takes 2 sword - 1 per hit (nothing without a sword) and
deals 3 per step when adjacent, 0.75 with armour: with 9 health it needs an iron sword or armour.

A *level* is a :class:`BaseLevel` subclass: ``relevant_achievements``, ``completed_achievements``,
``params() -> LevelParams`` and ``generate_world(rng, builder) -> WorldState`` written against
:class:`WorldBuilder`. Worlds are generated ahead of time into a *bank* (untrusted level code runs
only in the sandbox subprocess, :mod:`.sandbox`); :class:`MicroCraftEnv` samples resets from banks.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

BLOCKS = ("grass", "tree", "stone", "coal", "iron", "diamond", "water", "table", "furnace", "lava",
          "path")
B = {name: i for i, name in enumerate(BLOCKS)}
MOBS = ("none", "cow", "zombie", "guardian")
M = {name: i for i, name in enumerate(MOBS)}
MATERIALS = ("wood", "stone", "coal", "iron", "diamond")
TOOLS = ("pickaxe", "sword", "armour")
ITEMS = MATERIALS + TOOLS
ACHIEVEMENTS = ("collect_wood", "place_table", "make_wood_pickaxe", "make_wood_sword",
                "collect_drink", "eat_cow", "collect_stone", "make_stone_pickaxe",
                "make_stone_sword", "collect_coal", "defeat_zombie", "place_furnace",
                "collect_iron", "make_iron_pickaxe", "make_iron_sword", "make_armour",
                "collect_diamond", "defeat_guardian")
A = {name: i for i, name in enumerate(ACHIEVEMENTS)}
# depth on the tech tree (1 = needs nothing); the reward weight of an achievement is its tier
TIER = {"collect_wood": 1, "place_table": 1, "make_wood_pickaxe": 2, "make_wood_sword": 2,
        "collect_drink": 1, "eat_cow": 1, "collect_stone": 2, "make_stone_pickaxe": 3,
        "make_stone_sword": 3, "collect_coal": 3, "defeat_zombie": 3, "place_furnace": 4,
        "collect_iron": 4, "make_iron_pickaxe": 5, "make_iron_sword": 5, "make_armour": 5,
        "collect_diamond": 6, "defeat_guardian": 6}
TIER_W = np.array([TIER[a] for a in ACHIEVEMENTS], dtype=np.float32)
DEEPEST_TIER = max(TIER.values())
# direct prerequisites (the knowledge base the dreamer reads; cf. DiCode's game knowledge prompt)
PREREQS = {"collect_wood": (), "place_table": ("collect_wood",),
           "make_wood_pickaxe": ("place_table",), "make_wood_sword": ("place_table",),
           "collect_drink": (), "eat_cow": (), "collect_stone": ("make_wood_pickaxe",),
           "make_stone_pickaxe": ("collect_stone",), "make_stone_sword": ("collect_stone",),
           "collect_coal": ("make_wood_pickaxe",), "defeat_zombie": ("make_wood_sword",),
           "place_furnace": ("collect_stone",),
           "collect_iron": ("make_stone_pickaxe",),
           "make_iron_pickaxe": ("collect_iron", "collect_coal", "place_furnace"),
           "make_iron_sword": ("collect_iron", "collect_coal", "place_furnace"),
           "make_armour": ("collect_iron", "collect_coal", "place_furnace"),
           "collect_diamond": ("make_iron_pickaxe",),
           "defeat_guardian": ("make_iron_sword", "make_armour")}
ACTIONS = ("noop", "left", "right", "up", "down", "do", "place_table", "place_furnace",
           "make_pickaxe", "make_sword", "make_armour")
N_ACTIONS = len(ACTIONS)
_DIRS = np.array([[0, 0], [0, -1], [0, 1], [-1, 0], [1, 0]], dtype=np.int64)  # (row, col) deltas
WALKABLE = np.zeros(len(BLOCKS), dtype=bool)
WALKABLE[[B["grass"], B["path"], B["lava"]]] = True
VIEW = 2  # the egocentric view is (2 VIEW + 1)^2


def ancestors(achievement: str) -> set[str]:
    """Every achievement on the tech tree below ``achievement`` (excluding itself)."""
    out: set[str] = set()
    stack = list(PREREQS[achievement])
    while stack:
        a = stack.pop()
        if a not in out:
            out.add(a)
            stack.extend(PREREQS[a])
    return out


@dataclass(frozen=True)
class LevelParams:
    """Mechanic knobs of a level (cf. DiCode's ``TaskParams``); clamped to safe ranges."""

    zombie_damage: float = 1.0
    guardian_damage: float = 1.0
    guardian_health: float = 12.0
    needs_depletion: float = 1.0
    health_recover: float = 1.0
    max_steps: float = 300.0

    RANGES = {"zombie_damage": (0.0, 3.0), "guardian_damage": (0.0, 3.0),
              "guardian_health": (1.0, 40.0), "needs_depletion": (0.0, 3.0),
              "health_recover": (0.0, 3.0), "max_steps": (20.0, 1000.0)}

    def clamped(self) -> np.ndarray:
        vals = []
        for f in fields(self):
            lo, hi = self.RANGES[f.name]
            v = float(getattr(self, f.name))
            vals.append(min(max(v if np.isfinite(v) else lo, lo), hi))
        return np.asarray(vals, dtype=np.float32)


PARAM_NAMES = tuple(f.name for f in fields(LevelParams))


@dataclass
class WorldState:
    """One initial world: blocks and mobs (size x size), mob health, player (row, col),
    inventory (len(ITEMS)), needs (health, food, drink)."""

    blocks: np.ndarray
    mobs: np.ndarray
    mob_hp: np.ndarray
    player: np.ndarray
    inventory: np.ndarray
    needs: np.ndarray


class WorldBuilder:
    """The world-building API levels call inside ``generate_world`` (one world at a time).

    Starts from an all-grass ``size x size`` world with the player in the centre, full needs and
    an empty inventory. Placement helpers never overwrite the player's tile."""

    def __init__(self, size: int, rng: np.random.Generator) -> None:
        self.size, self.rng = int(size), rng
        self.blocks = np.zeros((size, size), dtype=np.int8)
        self.mobs = np.zeros((size, size), dtype=np.int8)
        self.mob_hp = np.zeros((size, size), dtype=np.float32)
        self.player = np.array([size // 2, size // 2])
        self.inventory = np.zeros(len(ITEMS), dtype=np.float32)
        self.needs = np.array([9.0, 9.0, 9.0], dtype=np.float32)
        self.guardian_health = 12.0

    # -- state --------------------------------------------------------------------------------
    def set_player(self, row: int, col: int) -> None:
        self.player = np.array([int(row) % self.size, int(col) % self.size])

    def set_inventory(self, items: dict) -> None:
        for k, v in dict(items).items():
            if k not in ITEMS:
                raise ValueError(f"unknown item {k!r}; items are {ITEMS}")
            hi = 3 if k in ("pickaxe", "sword") else 1 if k == "armour" else 9
            self.inventory[ITEMS.index(k)] = min(max(int(v), 0), hi)

    def set_needs(self, health: float = 9, food: float = 9, drink: float = 9) -> None:
        self.needs = np.clip(np.array([health, food, drink], dtype=np.float32), 1, 9)

    # -- blocks -------------------------------------------------------------------------------
    def _block(self, name: str) -> int:
        if name not in B:
            raise ValueError(f"unknown block {name!r}; blocks are {BLOCKS}")
        return B[name]

    def place_block(self, name: str, row: int, col: int) -> None:
        r, c = int(row) % self.size, int(col) % self.size
        if (r, c) != tuple(self.player):
            self.blocks[r, c] = self._block(name)
            self.mobs[r, c] = 0

    def fill_area(self, name: str, row0: int, col0: int, row1: int, col1: int) -> None:
        b = self._block(name)
        r0, r1 = sorted((max(0, int(row0)), min(self.size - 1, int(row1))))
        c0, c1 = sorted((max(0, int(col0)), min(self.size - 1, int(col1))))
        self.blocks[r0:r1 + 1, c0:c1 + 1] = b
        self.mobs[r0:r1 + 1, c0:c1 + 1] = 0
        pr, pc = self.player
        if r0 <= pr <= r1 and c0 <= pc <= c1:
            self.blocks[pr, pc] = B["grass"]

    def _cells_near(self, dmin: int, dmax: int, free_only: bool) -> np.ndarray:
        rr, cc = np.meshgrid(np.arange(self.size), np.arange(self.size), indexing="ij")
        d = np.abs(rr - self.player[0]) + np.abs(cc - self.player[1])
        ok = (d >= max(int(dmin), 1)) & (d <= int(dmax))
        if free_only:
            ok &= (self.blocks == B["grass"]) & (self.mobs == 0)
        return np.argwhere(ok)

    def place_near(self, name: str, count: int = 1, min_dist: int = 1, max_dist: int = 4) -> int:
        """Place ``count`` blocks on free grass cells at Manhattan distance in [min, max] from the
        player; returns how many were placed."""
        b = self._block(name)
        cells = self._cells_near(min_dist, max_dist, True)
        n = min(int(count), len(cells))
        for r, c in cells[self.rng.choice(len(cells), size=n, replace=False)] if n else []:
            self.blocks[r, c] = b
        return n

    def scatter(self, name: str, count: int) -> int:
        """Place ``count`` blocks anywhere on free grass (not on the player)."""
        return self.place_near(name, count, 1, 2 * self.size)

    def add_mob_near(self, name: str, count: int = 1, min_dist: int = 2, max_dist: int = 6) -> int:
        if name not in M or name == "none":
            raise ValueError(f"unknown mob {name!r}; mobs are {MOBS[1:]}")
        cells = self._cells_near(min_dist, max_dist, True)
        n = min(int(count), len(cells))
        hp = {"cow": 1.0, "zombie": 5.0, "guardian": self.guardian_health}[name]
        for r, c in cells[self.rng.choice(len(cells), size=n, replace=False)] if n else []:
            self.mobs[r, c] = M[name]
            self.mob_hp[r, c] = hp
        return n

    def build(self) -> WorldState:
        pr, pc = self.player
        if not WALKABLE[self.blocks[pr, pc]] or self.blocks[pr, pc] == B["lava"]:
            self.blocks[pr, pc] = B["grass"]
        self.mobs[pr, pc] = 0
        return WorldState(self.blocks.copy(), self.mobs.copy(), self.mob_hp.copy(),
                          self.player.copy(), self.inventory.copy(), self.needs.copy())


class BaseLevel:
    """A level program. Subclasses set the class attributes and override the two methods.

    ``relevant_achievements``: success means all unlocked (and ends the episode);
    ``completed_achievements``: pre-filled at reset (no reward for them)."""

    relevant_achievements: tuple = ()
    completed_achievements: tuple = ()

    def params(self) -> LevelParams:
        return LevelParams()

    def generate_world(self, rng: np.random.Generator, builder: WorldBuilder) -> WorldState:
        raise NotImplementedError


class OriginalLevel(BaseLevel):
    """The original game: a full procedural world, default params, every achievement relevant."""

    relevant_achievements = ACHIEVEMENTS
    completed_achievements = ()

    def generate_world(self, rng, builder):
        s = builder.size
        # a stone region in one random corner quadrant, with coal, iron and a little diamond
        top, left = rng.integers(2), rng.integers(2)
        r0, c0 = (0 if top else s // 2), (0 if left else s // 2)
        builder.fill_area("stone", r0, c0, r0 + s // 2 - 1, c0 + s // 2 - 1)
        cells = [(r, c) for r in range(r0, r0 + s // 2) for c in range(c0, c0 + s // 2)]
        rng.shuffle(cells)
        for name, n in (("coal", 4), ("iron", 3), ("diamond", 1), ("path", 6)):
            for _ in range(n):
                r, c = cells.pop()
                builder.place_block(name, r, c)
        # the player starts in the grass half diagonally opposite the stone
        builder.set_player(int(rng.integers(s // 2)) + (s // 2 if top else 0),
                           int(rng.integers(s // 2)) + (s // 2 if left else 0))
        builder.scatter("tree", s)
        builder.scatter("water", 3)
        builder.add_mob_near("cow", 2, 2, s)
        builder.add_mob_near("zombie", 2, 4, s)
        builder.add_mob_near("guardian", 1, s // 2, 2 * s)
        return builder.build()


@dataclass
class Bank:
    """Pre-generated initial worlds of one level plus its params and achievement masks."""

    blocks: np.ndarray      # (n, s, s) int8
    mobs: np.ndarray        # (n, s, s) int8
    mob_hp: np.ndarray      # (n, s, s) float32
    player: np.ndarray      # (n, 2) int64
    inventory: np.ndarray   # (n, len(ITEMS)) float32
    needs: np.ndarray       # (n, 3) float32
    params: np.ndarray      # (len(PARAM_NAMES),) float32
    relevant: np.ndarray    # (len(ACHIEVEMENTS),) bool
    completed: np.ndarray   # (len(ACHIEVEMENTS),) bool

    @property
    def n(self) -> int:
        return len(self.blocks)

    def to_json(self) -> dict:
        return {k: getattr(self, k).tolist() for k in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, d: dict, size: int) -> Bank:
        """Rebuild a bank from untrusted JSON (the sandbox's output), checking shapes and ranges."""
        blocks = np.asarray(d["blocks"], dtype=np.int64)
        n = len(blocks)
        spec = {"blocks": (n, size, size), "mobs": (n, size, size), "mob_hp": (n, size, size),
                "player": (n, 2), "inventory": (n, len(ITEMS)), "needs": (n, 3),
                "params": (len(PARAM_NAMES),), "relevant": (len(ACHIEVEMENTS),),
                "completed": (len(ACHIEVEMENTS),)}
        arrs = {k: np.asarray(d[k], dtype=np.float64) for k in spec}
        for k, shape in spec.items():
            if arrs[k].shape != shape or not np.all(np.isfinite(arrs[k])):
                raise ValueError(f"bank field {k} has shape {arrs[k].shape}, expected {shape}")
        if n < 1 or arrs["blocks"].min() < 0 or arrs["blocks"].max() >= len(BLOCKS) \
                or arrs["mobs"].min() < 0 or arrs["mobs"].max() >= len(MOBS) \
                or arrs["player"].min() < 0 or arrs["player"].max() >= size:
            raise ValueError("bank values out of range")
        return cls(blocks=arrs["blocks"].astype(np.int8), mobs=arrs["mobs"].astype(np.int8),
                   mob_hp=arrs["mob_hp"].astype(np.float32), player=arrs["player"].astype(np.int64),
                   inventory=np.clip(arrs["inventory"], 0, 9).astype(np.float32),
                   needs=np.clip(arrs["needs"], 1, 9).astype(np.float32),
                   params=arrs["params"].astype(np.float32), relevant=arrs["relevant"] > 0.5,
                   completed=arrs["completed"] > 0.5)


def _mask(names, what: str) -> np.ndarray:
    out = np.zeros(len(ACHIEVEMENTS), dtype=bool)
    for a in names:
        if a not in A:
            raise ValueError(f"unknown achievement {a!r} in {what}")
        out[A[a]] = True
    return out


def make_bank(level: BaseLevel, n: int, seed: int | np.random.SeedSequence, size: int) -> Bank:
    """Generate ``n`` worlds of ``level`` (trusted or sandboxed code) and check each one."""
    rel = _mask(level.relevant_achievements, "relevant_achievements")
    if not rel.any():
        raise ValueError("a level needs at least one relevant achievement")
    comp = _mask(level.completed_achievements, "completed_achievements")
    p = level.params()
    if not isinstance(p, LevelParams):
        raise TypeError(f"params() must return LevelParams, got {type(p).__name__}")
    params = p.clamped()
    worlds = []
    for child in np.random.SeedSequence(seed).spawn(n) if not isinstance(seed, np.random.SeedSequence) \
            else seed.spawn(n):
        rng = np.random.default_rng(child)
        builder = WorldBuilder(size, rng)
        builder.guardian_health = float(params[PARAM_NAMES.index("guardian_health")])
        w = level.generate_world(rng, builder)
        if not isinstance(w, WorldState):
            raise TypeError(f"generate_world must return builder.build(), got {type(w).__name__}")
        if w.blocks.shape != (size, size):
            raise ValueError("generate_world returned a world of the wrong size")
        worlds.append(w)
    st = lambda k: np.stack([getattr(w, k) for w in worlds])  # noqa: E731
    return Bank(blocks=st("blocks").astype(np.int8), mobs=st("mobs").astype(np.int8),
                mob_hp=st("mob_hp").astype(np.float32), player=st("player").astype(np.int64),
                inventory=st("inventory").astype(np.float32), needs=st("needs").astype(np.float32),
                params=params, relevant=rel, completed=comp)


def obs_dim() -> int:
    v = (2 * VIEW + 1) ** 2
    return v * (len(BLOCKS) + len(MOBS) - 1) + len(ITEMS) + 3 + 4 + len(ACHIEVEMENTS)


class MicroCraftEnv:
    """``num_envs`` MicroCraft worlds stepped together in NumPy, with auto-reset.

    Each env slot plays one level (an index into ``banks``); ``assign(levels)`` sets the slots'
    levels and resets them. ``step`` returns ``obs, reward, done, info`` where ``info`` holds the
    finished episodes (slot, level, world, return, success, unlocked achievements).
    The observation: a (2 VIEW + 1)^2 egocentric one-hot view of blocks and mobs, the inventory,
    the needs, the facing direction and the multi-hot vector of the level's relevant achievements
    (DiCode's ``one_hot`` conditioning)."""

    def __init__(self, banks: list[Bank], num_envs: int, seed: int = 0, size: int | None = None,
                 bonus: float = 0.0, world_sampler=None) -> None:
        if not banks:
            raise ValueError("MicroCraftEnv needs at least one level bank")
        self.banks = list(banks)
        self.size = size or banks[0].blocks.shape[1]
        self.n = int(num_envs)
        self.rng = np.random.default_rng(seed)
        self.bonus = float(bonus)
        self.world_sampler = world_sampler  # optional fn(slots, rng) -> (levels, worlds)
        s, n = self.size, self.n
        self.blocks = np.zeros((n, s, s), np.int8)
        self.mobs = np.zeros((n, s, s), np.int8)
        self.mob_hp = np.zeros((n, s, s), np.float32)
        self.pos = np.zeros((n, 2), np.int64)
        self.facing = np.ones(n, np.int64)
        self.inv = np.zeros((n, len(ITEMS)), np.float32)
        self.needs = np.zeros((n, 3), np.float32)
        self.params = np.zeros((n, len(PARAM_NAMES)), np.float32)
        self.relevant = np.zeros((n, len(ACHIEVEMENTS)), bool)
        self.unlocked = np.zeros((n, len(ACHIEVEMENTS)), bool)
        self.t = np.zeros(n, np.int64)
        self.ret = np.zeros(n, np.float32)
        self.level = np.zeros(n, np.int64)
        self.world = np.zeros(n, np.int64)
        self.slot_level = np.zeros(n, np.int64)
        self._ar = np.arange(n)
        off = np.arange(-VIEW, VIEW + 1)
        self._vr, self._vc = np.meshgrid(off, off, indexing="ij")

    @property
    def obs_dim(self) -> int:
        return obs_dim()

    num_actions = N_ACTIONS

    def assign(self, levels) -> np.ndarray:
        levels = np.asarray(levels, dtype=np.int64)
        if levels.shape != (self.n,) or levels.min() < 0 or levels.max() >= len(self.banks):
            raise ValueError(f"assign needs {self.n} level indices in [0, {len(self.banks)})")
        self.slot_level = levels.copy()
        self._reset_slots(self._ar)
        return self.observe()

    def reassign(self, banks: list[Bank], levels, keep: np.ndarray) -> np.ndarray:
        """Swap in a new list of banks and slot levels; slots with ``keep`` True continue their
        episode (their level must mean the same bank before and after), the others reset."""
        self.banks = list(banks)
        levels = np.asarray(levels, dtype=np.int64)
        if levels.shape != (self.n,) or levels.min() < 0 or levels.max() >= len(self.banks):
            raise ValueError(f"reassign needs {self.n} level indices in [0, {len(self.banks)})")
        self.slot_level = levels.copy()
        idx = np.flatnonzero(~np.asarray(keep, bool))
        if len(idx):
            self._reset_slots(idx)
        self.level[keep] = levels[keep]
        return self.observe()

    def reset(self) -> np.ndarray:
        return self.assign(self.slot_level)

    def _reset_slots(self, idx: np.ndarray) -> None:
        if self.world_sampler is not None:
            lv, wd = self.world_sampler(idx, self.rng)
            lv, wd = np.asarray(lv, np.int64), np.asarray(wd, np.int64)
        else:
            lv = self.slot_level[idx]
            wd = np.array([self.rng.integers(self.banks[k].n) for k in lv], np.int64)
        for i, k, w in zip(idx, lv, wd, strict=True):
            bk = self.banks[k]
            self.blocks[i], self.mobs[i], self.mob_hp[i] = bk.blocks[w], bk.mobs[w], bk.mob_hp[w]
            self.pos[i], self.inv[i], self.needs[i] = bk.player[w], bk.inventory[w], bk.needs[w]
            self.params[i], self.relevant[i], self.unlocked[i] = bk.params, bk.relevant, bk.completed
        self.level[idx], self.world[idx] = lv, wd
        self.t[idx] = 0
        self.ret[idx] = 0.0
        self.facing[idx] = 4

    def observe(self) -> np.ndarray:
        s = self.size
        rr = self.pos[:, 0, None, None] + self._vr
        cc = self.pos[:, 1, None, None] + self._vc
        inside = (rr >= 0) & (rr < s) & (cc >= 0) & (cc < s)
        rr, cc = np.clip(rr, 0, s - 1), np.clip(cc, 0, s - 1)
        ar = self._ar[:, None, None]
        blk = np.where(inside, self.blocks[ar, rr, cc], B["lava"])  # outside reads as lava
        mob = np.where(inside, self.mobs[ar, rr, cc], 0)
        v = (2 * VIEW + 1) ** 2
        oh_b = (blk.reshape(self.n, v, 1) == np.arange(len(BLOCKS))).reshape(self.n, -1)
        oh_m = (mob.reshape(self.n, v, 1) == np.arange(1, len(MOBS))).reshape(self.n, -1)
        face = np.zeros((self.n, 4), np.float32)
        face[self._ar, self.facing - 1] = 1
        return np.concatenate([oh_b, oh_m, self.inv / np.array([9, 9, 9, 9, 9, 3, 3, 1]),
                               self.needs / 9.0, face, self.relevant], axis=1).astype(np.float32)

    def _near(self, block: int) -> np.ndarray:
        s = self.size
        found = np.zeros(self.n, bool)
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                r, c = self.pos[:, 0] + dr, self.pos[:, 1] + dc
                ok = (r >= 0) & (r < s) & (c >= 0) & (c < s)
                found |= ok & (self.blocks[self._ar, np.clip(r, 0, s - 1), np.clip(c, 0, s - 1)] == block)
        return found

    def step(self, actions: np.ndarray):
        a = np.asarray(actions)
        if a.shape != (self.n,):
            raise ValueError(f"step needs one action per env: shape ({self.n},), got {a.shape}")
        if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"actions must be integers in [0, {N_ACTIONS}), got dtype {a.dtype}")
        if a.size and (a.min() < 0 or a.max() >= N_ACTIONS):
            raise ValueError(f"actions must lie in [0, {N_ACTIONS}), got values in "
                             f"[{a.min()}, {a.max()}]")
        a = a.astype(np.int64, copy=False)
        n, s, ar, inv = self.n, self.size, self._ar, self.inv
        new = np.zeros((n, len(ACHIEVEMENTS)), bool)
        P = {k: self.params[:, i] for i, k in enumerate(PARAM_NAMES)}
        # movement: turn to face; move if the target is walkable and free of mobs
        mv = (a >= 1) & (a <= 4)
        self.facing = np.where(mv, a, self.facing)
        tr = np.clip(self.pos[:, 0] + _DIRS[self.facing, 0], 0, s - 1)
        tc = np.clip(self.pos[:, 1] + _DIRS[self.facing, 1], 0, s - 1)
        tb = self.blocks[ar, tr, tc]
        tm = self.mobs[ar, tr, tc]
        go = mv & WALKABLE[tb] & (tm == 0)
        self.pos[go, 0], self.pos[go, 1] = tr[go], tc[go]
        # interact with the faced tile
        do = a == 5
        pick = inv[:, ITEMS.index("pickaxe")]
        sword = inv[:, ITEMS.index("sword")]
        for blk, item, need in (("tree", "wood", 0), ("stone", "stone", 1), ("coal", "coal", 1),
                                ("iron", "iron", 2), ("diamond", "diamond", 3)):
            hit = do & (tm == 0) & (tb == B[blk]) & (pick >= need)
            if hit.any():
                j = ITEMS.index(item)
                inv[hit, j] = np.minimum(inv[hit, j] + 1, 9)
                new[hit, A[f"collect_{item}"]] = True
                if blk != "tree":
                    self.blocks[ar[hit], tr[hit], tc[hit]] = B["path"]
        drink = do & (tm == 0) & (tb == B["water"])
        self.needs[drink, 2] = np.minimum(self.needs[drink, 2] + 3, 9)
        new[drink, A["collect_drink"]] = True
        cow = do & (tm == M["cow"])
        self.needs[cow, 1] = np.minimum(self.needs[cow, 1] + 6, 9)
        new[cow, A["eat_cow"]] = True
        self.mobs[ar[cow], tr[cow], tc[cow]] = 0
        fight = do & ((tm == M["zombie"]) | (tm == M["guardian"]))
        if fight.any():
            g = tm == M["guardian"]
            dmg = np.where(g, np.maximum(2 * sword - 1, 0), 1 + sword)
            hp = self.mob_hp[ar, tr, tc] - np.where(fight, dmg, 0)
            self.mob_hp[ar[fight], tr[fight], tc[fight]] = hp[fight]
            dead = fight & (hp <= 0)
            self.mobs[ar[dead], tr[dead], tc[dead]] = 0
            new[dead & ~g, A["defeat_zombie"]] = True
            new[dead & g, A["defeat_guardian"]] = True
        # crafting and placing
        free = (tb == B["grass"]) & (tm == 0) & ((tr != self.pos[:, 0]) | (tc != self.pos[:, 1]))
        table = self._near(B["table"])
        furnace = self._near(B["furnace"])
        pt = (a == 6) & free & (inv[:, 0] >= 2)
        inv[pt, 0] -= 2
        self.blocks[ar[pt], tr[pt], tc[pt]] = B["table"]
        new[pt, A["place_table"]] = True
        pf = (a == 7) & free & table & (inv[:, 1] >= 1)
        inv[pf, 1] -= 1
        self.blocks[ar[pf], tr[pf], tc[pf]] = B["furnace"]
        new[pf, A["place_furnace"]] = True
        for act, tool, names in ((8, "pickaxe", ("make_wood_pickaxe", "make_stone_pickaxe",
                                                 "make_iron_pickaxe")),
                                 (9, "sword", ("make_wood_sword", "make_stone_sword",
                                               "make_iron_sword"))):
            j = ITEMS.index(tool)
            lvl = inv[:, j]
            want = (a == act) & table
            w1 = want & (lvl == 0) & (inv[:, 0] >= 1)
            w2 = want & (lvl == 1) & (inv[:, 0] >= 1) & (inv[:, 1] >= 1)
            w3 = want & (lvl == 2) & furnace & (inv[:, 0] >= 1) & (inv[:, 2] >= 1) & (inv[:, 3] >= 1)
            for k, w in enumerate((w1, w2, w3)):
                inv[w, 0] -= 1
                if k >= 1:
                    inv[w, 1 if k == 1 else 2] -= 1
                if k == 2:
                    inv[w, 3] -= 1
                inv[w, j] = k + 1
                new[w, A[names[k]]] = True
        arm = (a == 10) & table & furnace & (inv[:, 7] == 0) & (inv[:, 3] >= 1) & (inv[:, 2] >= 1)
        inv[arm, 3] -= 1
        inv[arm, 2] -= 1
        inv[arm, 7] = 1
        new[arm, A["make_armour"]] = True
        # needs, damage, health
        self.needs[:, 1:] = np.maximum(self.needs[:, 1:] - 0.03 * P["needs_depletion"][:, None], 0)
        starving = (self.needs[:, 1] <= 0) | (self.needs[:, 2] <= 0)
        armour = np.where(inv[:, 7] > 0, 0.25, 1.0)
        adj_z = np.zeros(n, bool)
        adj_g = np.zeros(n, bool)
        for d in range(1, 5):
            r = np.clip(self.pos[:, 0] + _DIRS[d, 0], 0, s - 1)
            c = np.clip(self.pos[:, 1] + _DIRS[d, 1], 0, s - 1)
            m = self.mobs[ar, r, c]
            adj_z |= m == M["zombie"]
            adj_g |= m == M["guardian"]
        dmg = (adj_z * 0.5 * P["zombie_damage"] * (self.rng.random(n) < 0.5)
               + adj_g * 3.0 * P["guardian_damage"]) * armour
        on_lava = self.blocks[ar, self.pos[:, 0], self.pos[:, 1]] == B["lava"]
        h = self.needs[:, 0] - dmg - starving * 0.1 + (~starving) * 0.02 * P["health_recover"]
        self.needs[:, 0] = np.minimum(h, 9)
        dead = (self.needs[:, 0] <= 0) | on_lava
        # rewards and termination
        new &= ~self.unlocked
        self.unlocked |= new
        reward = (new * TIER_W).sum(1)
        self.t += 1
        success = (self.unlocked | ~self.relevant).all(1)
        reward = reward + success * self.bonus
        self.ret += reward
        timeout = self.t >= P["max_steps"]
        done = dead | success | timeout
        info = {}
        if done.any():
            idx = np.flatnonzero(done)
            # a time-out that neither killed nor solved is a truncation: the learner bootstraps
            # it from the observation it was cut at (core.rl.ppo)
            truncated = (timeout & ~dead & ~success)[idx]
            info = {"slot": idx, "level": self.level[idx].copy(), "world": self.world[idx].copy(),
                    "return": self.ret[idx].copy(), "success": success[idx].copy(),
                    "unlocked": self.unlocked[idx].copy(), "length": self.t[idx].copy(),
                    "truncated": truncated}
            if truncated.any():
                info["final_obs"] = self.observe()[idx]
            self._reset_slots(idx)
        return self.observe(), reward.astype(np.float32), done, info

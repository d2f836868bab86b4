"""``Tabletop2D``: a vectorised image + instruction tabletop world (NumPy rasterisation, gymnasium-style API).

Laptop-scale substitute for SyVLA's real-robot tasks (brief §5.1; sizes shrunk for CPU: a 24x24 RGB
image, 4 objects, 2 target zones, step 0.1, horizon 24, action chunk 4). [inferred] everything.

* Objects: distinct colours from COLORS, shapes from SHAPES. Zones: two coloured squares.
* Actions ``(dx, dy, grip)`` in [-1, 1]^3; the effector moves ``STEP * (dx, dy)``; ``grip > 0`` closes the
  gripper, which attaches the nearest object within ``GRASP_R``; a held object moves with the effector.
* Tasks: ``touch the C S`` (success: a press, the effector within ``TOUCH_R`` of the object with the gripper
  closed; the closed gripper halves what a random walk gets from passing by) and
  ``put the C S in the Z zone`` (success: object within ``ZONE_R`` of the zone centre).
* Splits: ``id``; ``ood_visual`` (a held-out colour-shape combination as target, +1 distractor, and a
  lighting shift: every object and zone colour is multiplied by ``LIGHT`` and the background is tinted, so the
  object tokens themselves change; no ID-visual scene, i.e. ``id``, ``ood_lang`` or ``ood_pos``, ever shows a
  held-out combination, not even as a distractor); ``ood_lang`` (instruction uses synonyms seen only in VL data); ``ood_pos`` (target starts
  in the held-out top-right quadrant, which ID never uses for targets).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.core.validation import check_positive_int

COLORS = ("red", "green", "blue", "yellow", "purple")
RGB = {"red": (1.0, 0.1, 0.1), "green": (0.1, 0.9, 0.1), "blue": (0.15, 0.25, 1.0),
       "yellow": (1.0, 0.95, 0.1), "purple": (0.7, 0.1, 0.9)}
SHAPES = ("circle", "square", "triangle")
COLOR_SYN = {"red": "crimson", "green": "emerald", "blue": "azure", "yellow": "golden", "purple": "violet"}
SHAPE_SYN = {"circle": "orb", "square": "box", "triangle": "wedge"}
HELDOUT_COMBOS = (("red", "triangle"), ("blue", "circle"), ("yellow", "square"))
SPLITS = ("id", "ood_visual", "ood_lang", "ood_pos")
STEP, GRASP_R, TOUCH_R, ZONE_R, OBJ_R = 0.1, 0.1, 0.08, 0.1, 0.075
IMG, HORIZON, CHUNK, N_OBJ = 24, 24, 4, 4
LIGHT = np.array([0.85, 0.7, 0.55], np.float32)  # ood_visual: warm, dimmer light on every object and zone


def scene_rgb(color: str, split: str) -> np.ndarray:
    """The rendered colour of ``color`` on ``split`` (``ood_visual`` scenes are lit by ``LIGHT``)."""
    rgb = np.asarray(RGB[color], np.float32)
    return rgb * LIGHT if split == "ood_visual" else rgb


def _in_heldout_quadrant(p: np.ndarray) -> np.ndarray:
    return (p[..., 0] > 0.55) & (p[..., 1] > 0.55)


@dataclass
class Scene:
    """One episode's layout (object colours/shapes/positions, zones, target, task)."""

    colors: list
    shapes: list
    pos: np.ndarray      # (n_obj, 2)
    zone_colors: list
    zone_pos: np.ndarray  # (2, 2)
    target: int
    goal: int            # zone index, -1 for touch
    effector: np.ndarray  # (2,)
    split: str

    def instruction(self) -> str:
        c, s = self.colors[self.target], self.shapes[self.target]
        if self.split == "ood_lang":
            c, s = COLOR_SYN[c], SHAPE_SYN[s]
        if self.goal < 0:
            return f"touch the {c} {s}"
        z = self.zone_colors[self.goal]
        if self.split == "ood_lang":
            z = COLOR_SYN[z]
        return f"put the {c} {s} in the {z} zone"


def quadrant_words(p: np.ndarray) -> tuple[str, str]:
    return ("left" if p[0] < 0.5 else "right"), ("bottom" if p[1] < 0.5 else "top")


def reasoning_string(scene: Scene) -> str:
    """The expert's reasoning: ``C S qx qy Z zx zy`` in canonical words (coarse, no coordinates)."""
    c, s = scene.colors[scene.target], scene.shapes[scene.target]
    qx, qy = quadrant_words(scene.pos[scene.target])
    if scene.goal < 0:
        return f"{c} {s} {qx} {qy} none none none"
    zx, zy = quadrant_words(scene.zone_pos[scene.goal])
    return f"{c} {s} {qx} {qy} {scene.zone_colors[scene.goal]} {zx} {zy}"


def _dist(p: np.ndarray, q: np.ndarray) -> float:
    """``np.linalg.norm(p - q)`` of two float 2-vectors by the same arithmetic (its ``sqrt(x.dot(x))``)
    without its argument handling (issue 54: scene sampling calls it ~30 times a scene)."""
    d = p - q
    return np.sqrt(d.dot(d))


# target combinations and distractor shapes per colour, for ood_visual (True) and the other splits (False):
# targets on ood_visual are the held-out combinations, elsewhere never; distractors: any shape on ood_visual,
# elsewhere never a held-out combination (ID never shows one)
_TARGETS = {v: [(c, sh) for c in COLORS for sh in SHAPES if ((c, sh) in HELDOUT_COMBOS) == v] for v in (False, True)}
_DISTRACTOR_SHAPES = {v: {c: [sh for sh in SHAPES if v or (c, sh) not in HELDOUT_COMBOS] for c in COLORS}
                      for v in (False, True)}


def sample_scene(rng: np.random.Generator, split: str = "id", *, task: str | None = None) -> Scene:
    """Draw a scene for ``split`` (see module doc)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    n = N_OBJ + (1 if split == "ood_visual" else 0)
    combos, ok = _TARGETS[split == "ood_visual"], _DISTRACTOR_SHAPES[split == "ood_visual"]
    tc, ts = combos[int(rng.integers(0, len(combos)))]
    others = [c for c in COLORS if c != tc]
    colors = [tc] + [others[i] for i in rng.choice(len(others), size=n - 1, replace=False)]
    shapes = [ts] + [ok[c][int(rng.integers(0, len(ok[c])))] for c in colors[1:]]
    pts: list = []
    while len(pts) < n + 2:  # objects then zones, pairwise >= 0.2 apart (sequential rejection)
        if not pts and split == "ood_pos":
            p = rng.uniform(0.6, 0.9, size=2)
        else:
            p = rng.uniform(0.1, 0.9, size=2)
            if not pts and _in_heldout_quadrant(p):
                continue
        if all(_dist(p, q) >= 0.2 for q in pts):
            pts.append(p)
    pos, zone_pos = np.array(pts[:n]), np.array(pts[n:])
    zc = [COLORS[i] for i in rng.choice(len(COLORS), size=2, replace=False)]
    kind = task if task is not None else ("touch" if rng.random() < 0.3 else "put")
    goal = -1 if kind == "touch" else int(rng.integers(0, 2))
    perm = rng.permutation(n)  # the target need not be object 0 in the arrays
    inv = int(np.argmax(perm == 0))
    return Scene([colors[i] for i in perm], [shapes[i] for i in perm], pos[perm], zc, zone_pos, inv, goal,
                 rng.uniform(0.1, 0.9, size=2), split)


_GRID = (np.stack(np.meshgrid(np.arange(IMG), np.arange(IMG), indexing="xy"), -1) + 0.5) / IMG  # (H, W, 2) x,y


def _shape_mask(shape: str, dx: np.ndarray, dy: np.ndarray, r: float) -> np.ndarray:
    if shape == "circle":
        return dx ** 2 + dy ** 2 <= r ** 2
    if shape == "square":
        return (np.abs(dx) <= 0.8 * r) & (np.abs(dy) <= 0.8 * r)
    return (dy >= -0.8 * r) & (dy <= r) & (np.abs(dx) <= (r - dy) * 0.55)  # triangle pointing up


def render_static(scene: Scene) -> np.ndarray:
    """Background + zones (the part of the image that never moves), (IMG, IMG, 3) float32 in [0, 1]."""
    img = np.full((IMG, IMG, 3), 0.25 if scene.split != "ood_visual" else 0.0, np.float32)
    if scene.split == "ood_visual":
        img[:] = (0.3, 0.2, 0.35)  # background tint shift
    for zc, zp in zip(scene.zone_colors, scene.zone_pos, strict=True):
        dx, dy = _GRID[..., 0] - zp[0], _GRID[..., 1] - zp[1]
        ring = (np.maximum(np.abs(dx), np.abs(dy)) <= ZONE_R) & (np.maximum(np.abs(dx), np.abs(dy)) > ZONE_R - 0.05)
        img[ring] = scene_rgb(zc, scene.split) * 0.6
    return img


_DRAWS: dict = {}  # (split, task, seed, n) -> (scenes, generator state after the draw): see Tabletop2DEnv._draw


class Tabletop2DEnv:
    """Batched Tabletop2D: ``reset() -> (obs, info)``, ``step(actions) -> (obs, reward, terminated, truncated,
    info)`` with gymnasium VectorEnv semantics except that finished episodes stay finished (no autoreset) until
    the next ``reset``.

    ``obs`` is a dict: ``image`` (B, IMG, IMG, 3) float32, ``state`` (B, 3) (x, y, grip), ``instruction``
    (list of B strings). Reward: 1 on the success step, -0.001 per step otherwise.
    """

    action_low, action_high = -1.0, 1.0

    def __init__(self, num_envs: int = 64, split: str = "id", seed: int = 0, *, task: str | None = None,
                 horizon: int = HORIZON) -> None:
        self.num_envs = check_positive_int(num_envs, "num_envs")
        self.horizon = check_positive_int(horizon, "horizon")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if task not in (None, "touch", "put"):
            raise ValueError(f"task must be None, 'touch' or 'put', got {task!r}")
        self.split, self.task = split, task
        self.rng = np.random.default_rng(seed)
        self.scenes: list[Scene] = []
        self._layer, self._layer_obj = None, None

    def _draw(self, seed, n: int) -> list[Scene]:
        """``n`` scenes from ``self.rng``. After a seeded reset the draw is remembered per (split, task, seed,
        n) with the generator's state after it (issue 54: every arm is evaluated on the same seeded episodes,
        so each seeded set is drawn once per process; a hit leaves the env exactly as a fresh draw does).
        Scenes are never modified after the draw (the env copies what it changes)."""
        key = (self.split, self.task, int(seed), n) if isinstance(seed, (int, np.integer)) else None
        hit = _DRAWS.get(key) if key is not None else None
        if hit is not None:
            self.rng.bit_generator.state = hit[1]
            return hit[0]
        base = [sample_scene(self.rng, self.split, task=self.task) for _ in range(n)]
        if key is not None:
            if len(_DRAWS) >= 256:
                _DRAWS.clear()
            _DRAWS[key] = (base, self.rng.bit_generator.state)
        return base

    def reset(self, seed: int | None = None, *, group_size: int = 1, scenes: list[Scene] | None = None):
        """New episodes; ``group_size`` G repeats each drawn scene G times (GRPO-style groups)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        g = check_positive_int(group_size, "group_size")
        if scenes is None:
            if self.num_envs % g:
                raise ValueError(f"num_envs={self.num_envs} must be divisible by group_size={g}")
            scenes = [s for s in self._draw(seed, self.num_envs // g) for _ in range(g)]
        if len(scenes) != self.num_envs:
            raise ValueError(f"need {self.num_envs} scenes, got {len(scenes)}")
        self.scenes = scenes
        B, n = self.num_envs, max(len(s.colors) for s in scenes)
        self.obj = np.full((B, n, 2), -10.0)
        self.nobj = np.array([len(s.colors) for s in scenes])
        for i, s in enumerate(scenes):
            self.obj[i, : len(s.colors)] = s.pos
        self.eff = np.stack([s.effector for s in scenes]).astype(float)
        self.grip = np.zeros(B)
        self.held = np.full(B, -1)
        self.target = np.array([s.target for s in scenes])
        self.goal_pos = np.array([s.zone_pos[s.goal] if s.goal >= 0 else (np.nan, np.nan) for s in scenes])
        self.is_touch = np.array([s.goal < 0 for s in scenes])
        self.t = 0
        self.done = np.zeros(B, bool)
        self.success = np.zeros(B, bool)
        self._static = np.stack([render_static(s) for s in scenes])
        self._layer, self._layer_obj = None, None
        self._instr = [s.instruction() for s in scenes]
        self._colors = np.zeros((B, n, 3), np.float32)
        self._shape_id = np.zeros((B, n), int)
        for i, s in enumerate(scenes):
            for j, (c, sh) in enumerate(zip(s.colors, s.shapes, strict=True)):
                self._colors[i, j] = scene_rgb(c, s.split)
                self._shape_id[i, j] = SHAPES.index(sh)
        return self._obs(), {"instruction": [s.instruction() for s in scenes]}

    def _render_objects(self, rows: np.ndarray) -> np.ndarray:
        """Static layer + objects of the envs ``rows`` (B', IMG, IMG, 3) (each row on its own)."""
        img = self._static[rows]
        obj = self.obj[rows]
        gx, gy = _GRID[None, None, ..., 0], _GRID[None, None, ..., 1]  # (1,1,H,W)
        dx = gx - obj[:, :, None, None, 0]
        dy = gy - obj[:, :, None, None, 1]
        r = OBJ_R
        circ = dx ** 2 + dy ** 2 <= r ** 2
        sq = (np.abs(dx) <= 0.8 * r) & (np.abs(dy) <= 0.8 * r)
        tri = (dy >= -0.8 * r) & (dy <= r) & (np.abs(dx) <= (r - dy) * 0.55)
        sid = self._shape_id[rows][:, :, None, None]
        mask = np.where(sid == 0, circ, np.where(sid == 1, sq, tri))  # (B', n, H, W)
        n = mask.shape[1]
        top = n - 1 - np.argmax(mask[:, ::-1], axis=1)  # (B', H, W): the last-drawn object on each pixel
        col = np.take_along_axis(self._colors[rows], top.reshape(len(img), -1)[..., None], axis=1).reshape(img.shape)
        return np.where(mask.any(1)[..., None], col, img)

    def _render(self) -> np.ndarray:
        # the object layer is redrawn only for envs whose objects moved since the last frame (issue 54: most
        # steps move none); every row is drawn by the same per-pixel arithmetic either way
        if self._layer is None:
            self._layer = self._render_objects(np.arange(self.num_envs))
        else:
            moved = np.flatnonzero((self.obj != self._layer_obj).any((1, 2)))
            if moved.size:
                self._layer[moved] = self._render_objects(moved)
        self._layer_obj = self.obj.copy()
        img = self._layer.copy()
        ex = np.clip((self.eff * IMG).astype(int), 0, IMG - 1)
        b = np.arange(self.num_envs)
        img[b, ex[:, 1], ex[:, 0]] = np.where(self.grip[:, None] > 0, 0.6, 1.0)
        return img

    def _obs(self) -> dict:
        state = np.concatenate([self.eff, self.grip[:, None]], 1).astype(np.float32)
        return {"image": self._render(), "state": state, "instruction": list(self._instr)}

    def step(self, actions):
        if not self.scenes:
            raise RuntimeError("call reset() before step()")
        a = np.asarray(actions, dtype=float)
        if a.shape != (self.num_envs, 3):
            raise ValueError(f"actions must have shape ({self.num_envs}, 3), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError("actions must be finite")
        if np.any(np.abs(a) > 1.0 + 1e-6):
            raise ValueError(f"actions must lie in [-1, 1]^3 (the action box), got range [{a.min():.3g}, {a.max():.3g}]")
        live = ~self.done
        b = np.arange(self.num_envs)
        new_eff = np.clip(self.eff + STEP * a[:, :2], 0.0, 1.0)
        self.eff = np.where(live[:, None], new_eff, self.eff)
        grip = (a[:, 2] > 0).astype(float)
        self.grip = np.where(live, grip, self.grip)
        release = (self.grip <= 0) & (self.held >= 0)
        self.held[release] = -1
        d = np.linalg.norm(self.obj - self.eff[:, None], axis=-1)  # (B, n)
        near = np.argmin(d, 1)
        grab = live & (self.grip > 0) & (self.held < 0) & (d[b, near] <= GRASP_R)
        self.held[grab] = near[grab]
        h = self.held >= 0
        self.obj[b[h], self.held[h]] = self.eff[h]
        tgt = self.obj[b, self.target]
        touched = (np.linalg.norm(tgt - self.eff, axis=-1) <= TOUCH_R) & (self.grip > 0)  # a press
        placed = np.linalg.norm(tgt - np.nan_to_num(self.goal_pos, nan=9.0), axis=-1) <= ZONE_R
        succ = live & np.where(self.is_touch, touched, placed)
        self.success |= succ
        self.t += 1
        reward = np.where(succ, 1.0, np.where(live, -0.001, 0.0))
        terminated = succ.copy()
        truncated = live & ~succ & (self.t >= self.horizon)
        self.done |= terminated | truncated
        return self._obs(), reward, terminated, truncated, {"success": self.success.copy()}


class ScriptedExpert:
    """Waypoint controller: move to the target (closing the gripper on arrival for ``put``), carry it to the
    goal zone; Gaussian action noise ``sigma``. ``act(env)`` reads the true state (privileged, expert only)."""

    def __init__(self, sigma: float = 0.1, seed: int = 0) -> None:
        if sigma < 0:
            raise ValueError(f"sigma must be >= 0, got {sigma}")
        self.sigma = sigma
        self.rng = np.random.default_rng(seed)

    def act(self, env: Tabletop2DEnv) -> np.ndarray:
        b = np.arange(env.num_envs)
        tgt = env.obj[b, env.target]
        holding = env.held == env.target
        way = np.where(holding[:, None] & ~env.is_touch[:, None], np.nan_to_num(env.goal_pos), tgt)
        delta = (way - env.eff) / STEP
        close = np.linalg.norm(tgt - env.eff, axis=-1) <= GRASP_R * 0.9
        grip = np.where(holding | close, 1.0, -1.0)  # put: grasp; touch: press (gripper closed on it)
        a = np.concatenate([np.clip(delta, -1, 1), grip[:, None]], 1)
        a[:, :2] += self.sigma * self.rng.standard_normal((env.num_envs, 2))
        return np.clip(a, -1.0, 1.0)

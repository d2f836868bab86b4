"""Generated data: expert demonstrations (chunks with reasoning strings) and VQA pairs on the same world.

VQA questions use canonical words or (half of the time) the synonyms of the OOD-language split, so the
synonym <-> pixel grounding lives only in the VL data [brief §5.1]. Answers are single canonical tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .env import (
    CHUNK,
    COLOR_SYN,
    HORIZON,
    SHAPE_SYN,
    SHAPES,
    ScriptedExpert,
    Tabletop2DEnv,
    reasoning_string,
    sample_scene,
)
from .model import NUMBERS


@dataclass
class DemoData:
    image: np.ndarray        # (N, IMG, IMG, 3)
    state: np.ndarray        # (N, 3)
    instruction: list        # N strings
    reasoning: list          # N strings
    actions: np.ndarray      # (N, CHUNK, 3)
    target: np.ndarray | None = None  # (N, 2): the true target position at the chunk's start (measurement)

    def __len__(self) -> int:
        return len(self.instruction)

    def subset(self, idx) -> DemoData:
        idx = np.asarray(idx)
        return DemoData(self.image[idx], self.state[idx], [self.instruction[i] for i in idx],
                        [self.reasoning[i] for i in idx], self.actions[idx],
                        None if self.target is None else self.target[idx])


def make_demo_dataset(n_episodes: int, seed: int = 0, split: str = "id", batch: int = 64,
                      sigma: float = 0.1, *, task: str | None = None, horizon: int = HORIZON) -> DemoData:
    """Roll the scripted expert and cut its trajectories into chunks of ``CHUNK`` actions (padded with
    zero motion and the last grip after the episode ends). Only successful episodes are kept. ``task`` and
    ``horizon`` as in :class:`Tabletop2DEnv`."""
    rng = np.random.default_rng(seed)
    expert = ScriptedExpert(sigma, seed=seed + 1)
    out = {k: [] for k in ("image", "state", "instruction", "reasoning", "actions", "target")}
    done_eps = 0
    while done_eps < n_episodes:
        env = Tabletop2DEnv(batch, split, int(rng.integers(1 << 31)), task=task, horizon=horizon)
        obs, _ = env.reset()
        reason = [reasoning_string(s) for s in env.scenes]
        frames, acts = [], []
        alive = []
        while not env.done.all():
            frames.append((obs["image"], obs["state"], env.obj[np.arange(env.num_envs), env.target].copy()))
            alive.append(~env.done)
            a = expert.act(env)
            a[env.done, :2] = 0.0
            acts.append(a)
            obs, *_ = env.step(a)
        acts = np.stack(acts, 1)  # (B, T, 3)
        T = acts.shape[1]
        pad = (-T) % CHUNK
        acts = np.concatenate([acts, np.repeat(acts[:, -1:], pad, 1) * np.array([0, 0, 1.0])], 1)
        keep = env.success
        for t in range(0, T, CHUNK):
            live = alive[t] & keep
            img, st, tg = frames[t]
            out["image"].append(img[live])
            out["target"].append(tg[live])
            out["state"].append(st[live])
            out["actions"].append(acts[live, t: t + CHUNK])
            out["instruction"] += [obs["instruction"][i] for i in np.flatnonzero(live)]
            out["reasoning"] += [reason[i] for i in np.flatnonzero(live)]
        done_eps += int(keep.sum())
    return DemoData(np.concatenate(out["image"]).astype(np.float32), np.concatenate(out["state"]),
                    out["instruction"], out["reasoning"], np.concatenate(out["actions"]).astype(np.float32),
                    np.concatenate(out["target"]).astype(np.float32))


def _word(rng, w: str, table: dict, p_syn: float) -> str:
    return table[w] if rng.random() < p_syn else w


def vqa_for_scene(scene, rng: np.random.Generator, p_syn: float = 0.5) -> tuple[str, str]:
    """One (question, single-word answer) pair about ``scene``."""
    kind = int(rng.integers(0, 5))
    j = int(rng.integers(0, len(scene.colors)))
    c = _word(rng, scene.colors[j], COLOR_SYN, p_syn)
    if kind == 0:
        return f"what shape is the {c} object", scene.shapes[j]
    if kind == 1:
        s = SHAPES[int(rng.integers(0, 3))]
        return f"how many {_word(rng, s, SHAPE_SYN, p_syn)}", NUMBERS[scene.shapes.count(s)]
    if kind == 2:
        return f"is the {c} object left or right", "left" if scene.pos[j][0] < 0.5 else "right"
    if kind == 3:
        return f"is the {c} object top or bottom", "bottom" if scene.pos[j][1] < 0.5 else "top"
    z = int(rng.integers(0, 2))
    zc = _word(rng, scene.zone_colors[z], COLOR_SYN, p_syn)
    if rng.random() < 0.5:
        return f"is the {zc} zone left or right", "left" if scene.zone_pos[z][0] < 0.5 else "right"
    d = np.linalg.norm(scene.zone_pos - scene.pos[j], axis=1)
    return f"which zone is nearer the {c} object", scene.zone_colors[int(np.argmin(d))]


@dataclass
class VQAData:
    image: np.ndarray
    question: list
    answer: list

    def __len__(self) -> int:
        return len(self.question)


def make_vl_dataset(n: int, seed: int = 0, p_syn: float = 0.5) -> VQAData:
    """``n`` VQA pairs on random scenes of every split (all colour-shape combinations, tints, quadrants)."""
    rng = np.random.default_rng(seed)
    splits = ("id", "ood_visual", "ood_pos")
    scenes = [sample_scene(rng, splits[int(rng.integers(0, 3))]) for _ in range(n)]
    env = Tabletop2DEnv(n, "id", seed)
    obs, _ = env.reset(scenes=scenes)
    qa = [vqa_for_scene(s, rng, p_syn) for s in scenes]
    return VQAData(obs["image"], [q for q, _ in qa], [a for _, a in qa])

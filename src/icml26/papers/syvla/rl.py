"""Similar-sample guided RL [inferred around the known fact "expert samples enter with advantage 1.0",
brief §2.5]: advantage-weighted flow matching (AW-FM) on on-policy chunks with group-normalised advantages,
plus expert demo chunks retrieved by k-NN, each with advantage exactly 1.

"Similar" means similar for action (issue 43 item 2): the retrieval key (:func:`retrieval_key`) holds the
instruction (target colour, shape, task, goal zone: what to do), the target's position as the visual
tokeniser sees it and the robot's state (where the effector is relative to it, gripper), so the retrieved
expert chunk is an expert acting on the same task from a nearby state. (The first version retrieved by the
mean query state alone: on held-out rollouts its experts matched the rollout's task and target no more often
than random ones.)

The RL stage updates the flow action expert on cached intents ``c`` (the VLM and query tokens are frozen in
S2 at laptop scale, so VL ability cannot change during RL and every arm pays the same cost).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import torch

from .env import COLOR_SYN, COLORS, RGB, SHAPE_SYN, SHAPES

EXPERT_ADVANTAGE = 1.0


def group_advantages(returns, group_size: int, eps: float = 1e-6) -> np.ndarray:
    """``(R_i - mean_G R) / (std_G R + eps)`` within consecutive groups of ``group_size`` episodes."""
    r = np.asarray(returns, dtype=float)
    if not np.all(np.isfinite(r)):
        raise ValueError("returns must be finite (got NaN or inf)")
    if group_size < 1 or r.size % group_size:
        raise ValueError(f"{r.size} returns do not split into groups of {group_size}")
    g = r.reshape(-1, group_size)
    return ((g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + eps)).reshape(-1)


def advantage_weights(adv, w_max: float = 2.0) -> torch.Tensor:
    """``w(A) = clip(A, 0, w_max)``: negative advantages weigh 0 (AW-FM never pushes actions down)."""
    a = torch.as_tensor(np.asarray(adv, dtype=np.float32) if not isinstance(adv, torch.Tensor) else adv,
                        dtype=torch.float32)
    if not torch.isfinite(a).all():
        raise ValueError("advantages must be finite (got NaN or inf)")
    if not w_max > 0:
        raise ValueError(f"w_max must be > 0, got {w_max}")
    return a.clamp(0.0, w_max)


def advantage_weighted_fm_loss(per_sample_loss: torch.Tensor, adv, w_max: float = 2.0) -> torch.Tensor:
    """``mean_i w(A_i) * L_FM,i`` (normalised by the batch size, so zero-weight samples count as zero)."""
    w = advantage_weights(adv, w_max).to(per_sample_loss.device)
    if w.shape != per_sample_loss.shape:
        raise ValueError(f"advantages {tuple(w.shape)} do not match losses {tuple(per_sample_loss.shape)}")
    return (w * per_sample_loss).mean()


_CANON = {**{w: c for c, w in COLOR_SYN.items()}, **{w: s for s, w in SHAPE_SYN.items()},
          **{c: c for c in COLORS}, **{s: s for s in SHAPES}}
INSTRUCTION_WEIGHT = 10.0  # instruction one-hots dominate the key: same task first, then the nearest state


def instruction_features(instructions) -> torch.Tensor:
    """One-hot instruction embedding (B, 16): target colour (5), target shape (3), task touch/put (1),
    goal-zone colour (5, zero for touch) and the "touch"/"put" verb (2); synonyms map to their canonical word."""
    out = torch.zeros(len(instructions), 16)
    for i, text in enumerate(instructions):
        words = [_CANON.get(w, w) for w in re.findall(r"[a-z]+", text.lower())]
        cols = [w for w in words if w in COLORS]
        shp = [w for w in words if w in SHAPES]
        if not cols or not shp or words[0] not in ("touch", "put"):
            raise ValueError(f"not a Tabletop2D instruction: {text!r}")
        out[i, COLORS.index(cols[0])] = 1.0
        out[i, 5 + SHAPES.index(shp[0])] = 1.0
        out[i, 8] = float(words[0] == "put")
        if words[0] == "put" and len(cols) > 1:
            out[i, 9 + COLORS.index(cols[1])] = 1.0
        out[i, 14 + int(words[0] == "put")] = 1.0
    return out


def perceived_target(images, instructions) -> torch.Tensor:
    """The target's centroid (B, 2) in [0, 1]^2 as the object tokeniser sees it: the visual token whose colour
    is nearest to the instruction's target colour (colours are distinct within a scene)."""
    from .model import check_images, object_tokens

    feats, valid = object_tokens(check_images(images))
    want = torch.tensor([RGB[COLORS[int(j)]] for j in instruction_features(instructions)[:, :5].argmax(1)])
    d = ((feats[..., :3] - want[:, None]) ** 2).sum(-1).masked_fill(~valid, float("inf"))
    j = d.argmin(1)
    return feats[torch.arange(len(j)), j, 4:6] + 0.5


def retrieval_key(images, state, instructions) -> torch.Tensor:
    """The similar-sample key (B, 21): ``[10 x instruction one-hots (16) | perceived target xy | target - effector
    | gripper]``: two samples are near when they are the same task and the robot stands in the same place
    relative to the same target (everything from the observation: no privileged state)."""
    st = torch.as_tensor(np.asarray(state), dtype=torch.float32)
    if st.dim() != 2 or st.shape[1] != 3 or st.shape[0] != len(instructions):
        raise ValueError(f"state must be ({len(instructions)}, 3), got {tuple(st.shape)}")
    tgt = perceived_target(images, instructions)
    return torch.cat([INSTRUCTION_WEIGHT * instruction_features(instructions), tgt, tgt - st[:, :2], st[:, 2:]], 1)


class SimilarSampleBuffer:
    """Expert samples with embeddings; ``retrieve(queries, k)`` returns the indices of the ``k`` nearest expert
    samples per query (exact, brute force; ``metric="cosine"``: largest cosine similarity, ``"euclidean"``:
    smallest distance); ``random(n)`` the random-expert control."""

    def __init__(self, embeddings, k: int = 4, seed: int = 0, metric: str = "cosine") -> None:
        e = torch.as_tensor(embeddings, dtype=torch.float32)
        if e.dim() != 2 or e.shape[0] < 1:
            raise ValueError(f"embeddings must be (N, D) with N >= 1, got {tuple(e.shape)}")
        if k < 1 or k > e.shape[0]:
            raise ValueError(f"k must lie in [1, {e.shape[0]}], got {k}")
        if metric not in ("cosine", "euclidean"):
            raise ValueError(f"metric must be 'cosine' or 'euclidean', got {metric!r}")
        if not torch.isfinite(e).all():
            raise ValueError("embeddings must be finite")
        self.metric = metric
        self.e = torch.nn.functional.normalize(e, dim=1) if metric == "cosine" else e
        self.k = k
        self.rng = np.random.default_rng(seed)

    def retrieve(self, queries, k: int | None = None) -> torch.Tensor:
        k = self.k if k is None else k
        q = torch.as_tensor(queries, dtype=torch.float32)
        if q.dim() != 2 or q.shape[1] != self.e.shape[1]:
            raise ValueError(f"queries must be (B, {self.e.shape[1]}), got {tuple(q.shape)}")
        if self.metric == "cosine":
            return torch.topk(torch.nn.functional.normalize(q, dim=1) @ self.e.T, k, dim=1).indices
        return torch.topk(-torch.cdist(q, self.e), k, dim=1).indices

    def random(self, n: int) -> torch.Tensor:
        return torch.as_tensor(self.rng.integers(0, self.e.shape[0], size=n))


@dataclass
class SSGRLConfig:
    """S2 settings. ``experts``: "none" (on-policy AW-FM), "similar" (SSG-RL), "random" (control),
    or "sft" (continued SFT on random demo chunks, no on-policy term)."""

    iters: int = 8
    group_size: int = 8
    num_envs: int = 64
    k: int = 1
    updates_per_iter: int = 8
    batch: int = 64
    lr: float = 3e-4
    w_max: float = 2.0
    noise_scale: float = 1.0
    experts: str = "similar"
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.experts not in ("none", "similar", "random", "sft"):
            raise ValueError(f"experts must be none|similar|random|sft, got {self.experts!r}")


@torch.no_grad()
def rollout(policy, env, *, group_size: int = 1, seed: int = 0, noise_scale: float = 1.0,
            generator: torch.Generator | None = None, record_key: bool = False) -> dict:
    """One batched episode per env: think once at reset, then one chunk per ``CHUNK`` steps.
    Returns per-chunk ``state``, ``c`` (intent), ``actions``, ``env`` (env index), ``target`` (the true target
    position, for measuring retrieval only) and, with ``record_key``, ``key`` (:func:`retrieval_key`), and
    per-episode ``returns``, ``success``."""
    obs, _ = env.reset(seed=seed, group_size=group_size)
    r = policy.think(obs["image"], obs["instruction"])
    rec = {"state": [], "c": [], "actions": [], "env": [], "target": [], "key": []}
    ret = np.zeros(env.num_envs)
    while not env.done.all():
        live = ~env.done
        a, c, _ = policy.act(obs, r, noise_scale=noise_scale, generator=generator, return_intent=True)
        idx = np.flatnonzero(live)
        rec["state"].append(torch.as_tensor(obs["state"][idx]))
        rec["c"].append(c[idx].cpu())
        rec["actions"].append(a[idx].cpu())
        rec["env"].append(idx)
        rec["target"].append(torch.as_tensor(env.obj[idx, env.target[idx]], dtype=torch.float32))
        if record_key:
            rec["key"].append(retrieval_key(obs["image"][idx], obs["state"][idx],
                                            [obs["instruction"][i] for i in idx]))
        an = a.cpu().numpy()
        for h in range(an.shape[1]):
            if env.done.all():
                break
            obs, rew, *_ = env.step(an[:, h])
            ret += rew
    out = {"state": torch.cat(rec["state"]), "c": torch.cat(rec["c"]), "actions": torch.cat(rec["actions"]),
           "env": np.concatenate(rec["env"]), "target": torch.cat(rec["target"]), "returns": ret,
           "success": env.success.copy(), "instruction": [env.scenes[i].instruction() for i in range(env.num_envs)]}
    if record_key:
        out["key"] = torch.cat(rec["key"])
    return out


TARGET_MATCH_RADIUS = 0.1  # a retrieved expert "matches the target" when its target lies this close


def match_rates(query_instr, query_target, demo_instr, demo_target, idx) -> dict:
    """How often the expert chunks ``idx`` (B, k) match their query chunk: ``task`` (the same instruction:
    task, target object, goal) and ``target`` (the same instruction and the expert's target within
    ``TARGET_MATCH_RADIUS`` of the query's true target position). Measurement only (true positions)."""
    idx = torch.as_tensor(idx).reshape(len(query_instr), -1)
    task = np.array([[demo_instr[int(j)] == q for j in row] for q, row in zip(query_instr, idx, strict=True)])
    dist = torch.linalg.norm(torch.as_tensor(demo_target)[idx] - torch.as_tensor(query_target)[:, None], dim=-1)
    near = (dist <= TARGET_MATCH_RADIUS).numpy()
    return {"task": float(task.mean()), "target": float((task & near).mean())}


class SSGRLTrainer:
    """AW-FM on on-policy chunks plus expert chunks (advantage 1.0) chosen by ``config.experts``.

    ``demo`` is a dict of tensors ``state`` (N, 3), ``c`` (N, M, d), ``actions`` (N, H, 3) and ``key`` (N, D,
    :func:`retrieval_key` of the expert chunks; intents cached from the frozen VLM); optional ``instruction``
    (N strings) and ``target`` (N, 2) let each iteration record how often its expert chunks match the task and
    the target of the on-policy chunks they join (``history[i]["task_match"]``, ``["target_match"]``).
    """

    def __init__(self, policy, env, demo: dict, config: SSGRLConfig, seed: int = 0) -> None:
        self.policy, self.env, self.demo, self.cfg, self.seed = policy, env, demo, config, seed
        self.buffer = SimilarSampleBuffer(demo["key"], k=config.k, seed=seed, metric="euclidean")
        self.opt = torch.optim.Adam(policy.expert.parameters(), lr=config.lr, foreach=True)
        self.gen = torch.Generator().manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.history: list = []

    def batch_loss(self, onp: dict | None, adv: np.ndarray | None, exp_idx: torch.Tensor | None):
        """AW-FM loss of on-policy chunks (weights ``w(adv)``) and expert chunks (advantage 1.0)."""
        parts, advs = [], []
        if onp is not None:
            parts.append((onp["state"], onp["c"], onp["actions"]))
            advs.append(torch.as_tensor(adv, dtype=torch.float32))
        if exp_idx is not None and len(exp_idx):
            d = self.demo
            parts.append((d["state"][exp_idx], d["c"][exp_idx], d["actions"][exp_idx]))
            advs.append(torch.full((len(exp_idx),), EXPERT_ADVANTAGE))
        state = torch.cat([p[0] for p in parts])
        c = torch.cat([p[1] for p in parts])
        act = torch.cat([p[2] for p in parts])
        per = self.policy.action_loss(state, c, act, reduction="none", generator=self.gen)
        return advantage_weighted_fm_loss(per, torch.cat(advs), self.cfg.w_max)

    def iteration(self, it: int) -> dict:
        cfg = self.cfg
        roll = rollout(self.policy, self.env, group_size=cfg.group_size, seed=self.seed * 1000 + it,
                       noise_scale=cfg.noise_scale, generator=self.gen, record_key=cfg.experts == "similar")
        ep_adv = group_advantages(roll["returns"], cfg.group_size)
        chunk_adv = ep_adv[roll["env"]]
        n = len(chunk_adv)
        onpolicy_frac = float(np.mean(chunk_adv > 0))
        matches = []
        for _ in range(cfg.updates_per_iter):
            if cfg.experts == "sft":
                loss = self.batch_loss(None, None, self.buffer.random(cfg.batch))
            else:
                sel = self.rng.integers(0, n, size=cfg.batch)
                onp = {k: roll[k][sel] for k in ("state", "c", "actions")}
                exp_idx = None
                if cfg.experts == "similar":
                    exp_idx = self.buffer.retrieve(roll["key"][sel]).reshape(-1)
                elif cfg.experts == "random":
                    exp_idx = self.buffer.random(cfg.batch * cfg.k)
                if exp_idx is not None and "instruction" in self.demo and "target" in self.demo:
                    matches.append(match_rates([roll["instruction"][e] for e in roll["env"][sel]],
                                               roll["target"][sel], self.demo["instruction"], self.demo["target"],
                                               exp_idx.reshape(cfg.batch, -1)))
                loss = self.batch_loss(onp, chunk_adv[sel], exp_idx)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        rec = {"iter": it, "rollout_success": float(roll["success"].mean()), "positive_adv_frac": onpolicy_frac,
               "loss": float(loss.detach())}
        if matches:
            rec["task_match"] = float(np.mean([m["task"] for m in matches]))
            rec["target_match"] = float(np.mean([m["target"] for m in matches]))
        self.history.append(rec)
        return rec

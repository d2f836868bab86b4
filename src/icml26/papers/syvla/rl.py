"""Similar-sample guided RL [inferred around the known fact "expert samples enter with advantage 1.0",
brief §2.5]: advantage-weighted flow matching (AW-FM) on on-policy chunks with group-normalised advantages,
plus expert demo chunks retrieved by k-NN (cosine) in the intent embedding, each with advantage exactly 1.

The RL stage updates the flow action expert on cached intents ``c`` (the VLM and query tokens are frozen in
S2 at laptop scale, so VL ability cannot change during RL and every arm pays the same cost).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

EXPERT_ADVANTAGE = 1.0


def group_advantages(returns, group_size: int, eps: float = 1e-6) -> np.ndarray:
    """``(R_i - mean_G R) / (std_G R + eps)`` within consecutive groups of ``group_size`` episodes."""
    r = np.asarray(returns, dtype=float)
    if group_size < 1 or r.size % group_size:
        raise ValueError(f"{r.size} returns do not split into groups of {group_size}")
    g = r.reshape(-1, group_size)
    return ((g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + eps)).reshape(-1)


def advantage_weights(adv, w_max: float = 2.0) -> torch.Tensor:
    """``w(A) = clip(A, 0, w_max)``: negative advantages weigh 0 (AW-FM never pushes actions down)."""
    return torch.as_tensor(adv, dtype=torch.float32).clamp(0.0, w_max)


def advantage_weighted_fm_loss(per_sample_loss: torch.Tensor, adv, w_max: float = 2.0) -> torch.Tensor:
    """``mean_i w(A_i) * L_FM,i`` (normalised by the batch size, so zero-weight samples count as zero)."""
    w = advantage_weights(adv, w_max).to(per_sample_loss.device)
    if w.shape != per_sample_loss.shape:
        raise ValueError(f"advantages {tuple(w.shape)} do not match losses {tuple(per_sample_loss.shape)}")
    return (w * per_sample_loss).mean()


class SimilarSampleBuffer:
    """Expert samples with embeddings; ``retrieve(queries, k)`` returns the indices of the ``k`` most
    cosine-similar expert samples per query (exact, brute force); ``random(n)`` the random-expert control."""

    def __init__(self, embeddings, k: int = 4, seed: int = 0) -> None:
        e = torch.as_tensor(embeddings, dtype=torch.float32)
        if e.dim() != 2 or e.shape[0] < 1:
            raise ValueError(f"embeddings must be (N, D) with N >= 1, got {tuple(e.shape)}")
        if k < 1 or k > e.shape[0]:
            raise ValueError(f"k must lie in [1, {e.shape[0]}], got {k}")
        self.e = torch.nn.functional.normalize(e, dim=1)
        self.k = k
        self.rng = np.random.default_rng(seed)

    def retrieve(self, queries, k: int | None = None) -> torch.Tensor:
        k = self.k if k is None else k
        q = torch.nn.functional.normalize(torch.as_tensor(queries, dtype=torch.float32), dim=1)
        return torch.topk(q @ self.e.T, k, dim=1).indices

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
            generator: torch.Generator | None = None) -> dict:
    """One batched episode per env: think once at reset, then one chunk per ``CHUNK`` steps.
    Returns per-chunk ``state``, ``c`` (intent), ``actions``, ``env_index`` and per-episode ``returns``,
    ``success``."""
    obs, _ = env.reset(seed=seed, group_size=group_size)
    r = policy.think(obs["image"], obs["instruction"])
    rec = {"state": [], "c": [], "actions": [], "env": []}
    ret = np.zeros(env.num_envs)
    while not env.done.all():
        live = ~env.done
        a, c, _ = policy.act(obs, r, noise_scale=noise_scale, generator=generator, return_intent=True)
        idx = np.flatnonzero(live)
        rec["state"].append(torch.as_tensor(obs["state"][idx]))
        rec["c"].append(c[idx].cpu())
        rec["actions"].append(a[idx].cpu())
        rec["env"].append(idx)
        an = a.cpu().numpy()
        for h in range(an.shape[1]):
            if env.done.all():
                break
            obs, rew, *_ = env.step(an[:, h])
            ret += rew
    return {"state": torch.cat(rec["state"]), "c": torch.cat(rec["c"]), "actions": torch.cat(rec["actions"]),
            "env": np.concatenate(rec["env"]), "returns": ret, "success": env.success.copy()}


class SSGRLTrainer:
    """AW-FM on on-policy chunks plus expert chunks (advantage 1.0) chosen by ``config.experts``.

    ``demo`` is a dict of tensors ``state`` (N, 3), ``c`` (N, M, d), ``actions`` (N, H, 3) and ``emb`` (N, D)
    for the expert chunks (intents cached from the frozen VLM).
    """

    def __init__(self, policy, env, demo: dict, config: SSGRLConfig, seed: int = 0) -> None:
        self.policy, self.env, self.demo, self.cfg, self.seed = policy, env, demo, config, seed
        self.buffer = SimilarSampleBuffer(demo["emb"], k=config.k, seed=seed)
        self.opt = torch.optim.Adam(policy.expert.parameters(), lr=config.lr)
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
                       noise_scale=cfg.noise_scale, generator=self.gen)
        ep_adv = group_advantages(roll["returns"], cfg.group_size)
        chunk_adv = ep_adv[roll["env"]]
        n = len(chunk_adv)
        onpolicy_frac = float(np.mean(chunk_adv > 0))
        for _ in range(cfg.updates_per_iter):
            if cfg.experts == "sft":
                loss = self.batch_loss(None, None, self.buffer.random(cfg.batch))
            else:
                sel = self.rng.integers(0, n, size=cfg.batch)
                onp = {k: roll[k][sel] for k in ("state", "c", "actions")}
                exp_idx = None
                if cfg.experts == "similar":
                    emb = self.policy.intent_embedding(onp["c"])
                    exp_idx = self.buffer.retrieve(emb).reshape(-1)
                elif cfg.experts == "random":
                    exp_idx = self.buffer.random(cfg.batch * cfg.k)
                loss = self.batch_loss(onp, chunk_adv[sel], exp_idx)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        rec = {"iter": it, "rollout_success": float(roll["success"].mean()), "positive_adv_frac": onpolicy_frac,
               "loss": float(loss.detach())}
        self.history.append(rec)
        return rec

"""ECGR1Tiny: modality-decoupled signal + image encoders, mlp2x_gelu projectors, a report head.

Laptop-scale stand-in for the paper's Qwen3-VL + ECG-CoCa model (brief §2.2): each modality has its
own encoder and ``mlp2x_gelu`` projector (Linear, GELU, Linear; official ``register.py``); the two
projected tokens fill two ordered slots (a missing modality is a learned "absent" token, so either can
be missing and the order can be swapped, as IMD needs); a small fusion MLP feeds a *classifier-with-
evidence head* (multi-label diagnoses + the six numbers the report states) instead of a token decoder.
The report text is then written by the six-step template (:func:`reports.render_report`), so the
evaluated output is text, parsed by the same rewards and hallucination metric as any LLM output.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .imd import MODALITIES
from .protocol import LABELS
from .reports import NUMBER_FIELDS, render_report


def mlp2x_gelu(d_in: int, d: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d), nn.GELU(), nn.Linear(d, d))


class ECGR1Tiny(nn.Module):
    def __init__(self, n_features: int, image_shape: tuple[int, int], d_model: int = 128) -> None:
        super().__init__()
        self.sig_enc = nn.Sequential(nn.Linear(n_features, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU())
        # ViT-style patch embedding: one 10 x 10 patch per lead x 0.4 s, then per-patch GELU features
        self.img_enc = nn.Sequential(nn.Conv2d(1, 16, 10, stride=10), nn.GELU(), nn.AdaptiveAvgPool2d((12, 16)),
                                     nn.Flatten())
        self.sig_proj = mlp2x_gelu(256, d_model)
        self.img_proj = mlp2x_gelu(16 * 12 * 16, d_model)
        self.absent = nn.Parameter(torch.zeros(d_model))
        self.type_emb = nn.Parameter(torch.zeros(2, d_model))
        self.fuse = nn.Sequential(nn.Linear(2 * d_model, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU())
        self.label_head = nn.Linear(256, len(LABELS))
        self.number_head = nn.Linear(256, len(NUMBER_FIELDS))
        self.register_buffer("feat_mu", torch.zeros(n_features))
        self.register_buffer("feat_sd", torch.ones(n_features))
        self.register_buffer("num_mu", torch.zeros(len(NUMBER_FIELDS)))
        self.register_buffer("num_sd", torch.ones(len(NUMBER_FIELDS)))

    def forward(self, feats, images, has_sig, has_img, swapped):
        s = self.sig_proj(self.sig_enc((feats - self.feat_mu) / self.feat_sd)) + self.type_emb[0]
        i = self.img_proj(self.img_enc(images[:, None])) + self.type_emb[1]
        s = torch.where(has_sig[:, None], s, self.absent)
        i = torch.where(has_img[:, None], i, self.absent)
        first = torch.where(swapped[:, None], i, s)
        second = torch.where(swapped[:, None], s, i)
        h = self.fuse(torch.cat([first, second], dim=1))
        return self.label_head(h), self.number_head(h)


def modality_masks(n: int, transform, rng: np.random.Generator | None = None) -> tuple[np.ndarray, ...]:
    """Apply a collate transform (IMD or a control; ``None`` = keep both) to n two-modality samples."""
    if transform is None:
        return np.ones(n, bool), np.ones(n, bool), np.zeros(n, bool)
    out = transform([{"ecg": 1, "image": 1, "order": MODALITIES} for _ in range(n)])
    return (np.array([o["ecg"] is not None for o in out]), np.array([o["image"] is not None for o in out]),
            np.array([o["order"][0] == "image" for o in out]))


def train_model(model: ECGR1Tiny, feats, images, labels, nums, num_mask, *, epochs: int, lr: float = 2e-3,
                batch_size: int = 64, transform=None, seed: int = 0) -> dict:
    """SFT of the report head (BCE on labels + masked MSE on the stated numbers); returns the budget."""
    g = torch.Generator().manual_seed(seed)
    f, im = torch.as_tensor(feats), torch.as_tensor(images)
    y, yn, mk = torch.as_tensor(labels), torch.as_tensor(nums), torch.as_tensor(num_mask)
    model.feat_mu.copy_(f.mean(0))
    model.feat_sd.copy_(f.std(0) + 1e-3)
    cnt = mk.sum(0).clamp(min=1)
    mu = (yn * mk).sum(0) / cnt
    model.num_mu.copy_(mu)
    model.num_sd.copy_((((yn - mu) ** 2 * mk).sum(0) / cnt).sqrt() + 1e-3)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    n, steps = f.shape[0], 0
    for _ in range(epochs):
        order = torch.randperm(n, generator=g)
        for b in range(0, n, batch_size):
            idx = order[b:b + batch_size]
            hs, hi, sw = (torch.as_tensor(a) for a in modality_masks(idx.numel(), transform))
            lo, no = model(f[idx], im[idx], hs, hi, sw)
            loss = nn.functional.binary_cross_entropy_with_logits(lo, y[idx])
            z = (yn[idx] - model.num_mu) / model.num_sd
            loss = loss + ((no - z) ** 2 * mk[idx]).sum() / mk[idx].sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
    return {"epochs": epochs, "steps": steps, "lr": lr, "batch_size": batch_size}


@torch.no_grad()
def generate_reports(model: ECGR1Tiny, feats, images, modality: str = "both") -> list[str]:
    """Write the report text for each record from ``modality`` in {"both", "signal", "image"}."""
    if modality not in ("both", "signal", "image"):
        raise ValueError(f"modality must be 'both', 'signal' or 'image', got {modality!r}")
    model.eval()
    n = len(feats)
    hs = torch.full((n,), modality in ("both", "signal"))
    hi = torch.full((n,), modality in ("both", "image"))
    lo, no = model(torch.as_tensor(feats), torch.as_tensor(images), hs, hi, torch.zeros(n, dtype=torch.bool))
    model.train()
    nums = (no * model.num_sd + model.num_mu).numpy()
    out = []
    for i in range(n):
        labs = [LABELS[j] for j in np.where(lo[i].numpy() > 0)[0]]
        numbers = {k: float(nums[i, j]) for j, k in enumerate(NUMBER_FIELDS)}
        if "atrial fibrillation" in labs:
            numbers["pr"] = None
        out.append(render_report(numbers, labs))
    return out


def grpo_finetune(model: ECGR1Tiny, feats, images, solutions: list[str], reward_funcs, *, steps: int,
                  batch_size: int = 16, num_generations: int = 6, lr: float = 3e-4, number_std: float = 0.3,
                  transform=None, seed: int = 0) -> dict:
    """GRPO on the report head with TRL-signature rewards (laptop-scale RL stage, brief §2.4).

    Policy: per-label Bernoulli(sigmoid(logit)) and per-number Gaussian(mean, ``number_std`` in
    standardised units); each sample is rendered to report text and scored by the sum of ``reward_funcs``.
    Official settings kept: G = 6 generations, beta = 0 (no KL), group-normalised advantages, groups with
    zero reward variance dropped (DAPO dynamic sampling). One on-policy update per batch, so the PPO ratio is
    1 and the clip-higher bounds (0.2/0.3) are inactive: the update is the group-normalised policy gradient.
    """
    if steps < 0 or num_generations < 2 or number_std <= 0:
        raise ValueError("need steps >= 0, num_generations >= 2 and number_std > 0")
    rng = np.random.default_rng(seed)
    g = torch.Generator().manual_seed(seed)
    f, im = torch.as_tensor(feats), torch.as_tensor(images)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    kept = 0
    for _ in range(steps):
        idx = torch.as_tensor(rng.choice(len(feats), size=min(batch_size, len(feats)), replace=False))
        hs, hi, sw = (torch.as_tensor(a) for a in modality_masks(idx.numel(), transform))
        lo, no = model(f[idx], im[idx], hs, hi, sw)
        probs = torch.sigmoid(lo)
        logps, texts = [], []
        for _k in range(num_generations):
            lab = torch.bernoulli(probs.detach(), generator=g)
            num = no.detach() + number_std * torch.randn(no.shape, generator=g)
            lp = (lab * torch.log(probs + 1e-6) + (1 - lab) * torch.log(1 - probs + 1e-6)).sum(1)
            lp = lp - ((num - no) ** 2).sum(1) / (2 * number_std ** 2)
            logps.append(lp)
            vals = (num * model.num_sd + model.num_mu).numpy()
            for i in range(idx.numel()):
                labs = [LABELS[j] for j in np.where(lab[i].numpy() > 0.5)[0]]
                numbers = {k: float(vals[i, j]) for j, k in enumerate(NUMBER_FIELDS)}
                if "atrial fibrillation" in labs:
                    numbers["pr"] = None
                texts.append(render_report(numbers, labs))
        sols = [solutions[int(i)] for i in idx] * num_generations
        r = np.sum([rf(texts, sols) for rf in reward_funcs], axis=0).reshape(num_generations, idx.numel())
        r = torch.as_tensor(r, dtype=torch.float32)
        std = r.std(0)
        adv = (r - r.mean(0)) / (std + 1e-4)
        keep = std > 0
        if not keep.any():
            continue
        kept += 1
        loss = -(adv[:, keep] * torch.stack(logps)[:, keep]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"rl_steps": steps, "updates": kept, "num_generations": num_generations, "batch_size": batch_size,
            "lr": lr}

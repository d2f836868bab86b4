"""Intention Decoupling [inferred from "gradient-norm masking", brief §2.4], as functions on any ``nn.Module``.

* :func:`importance_update` / :func:`protect_masks` / :func:`masked_combine` — **ID-P**: an EMA of the
  VL/reasoning gradient magnitude per parameter entry, ``I = beta I + (1 - beta) |g_vl|``; the action
  gradient is zeroed on the ``protect_ratio`` fraction of entries with the largest ``I`` (per tensor), then
  ``g = g_vl + M * g_act`` (optionally rescaled so ``||M * g_act|| <= norm_guard * ||g_vl||``).
* ID-T is the ``detach_context`` path of :meth:`TinyVLM.intent` (query tokens read stop-gradient
  context keys/values); :func:`token_grad_mask` is the same idea for any hidden-state tensor.
* KI (knowledge insulation, the reference alternative) stops all action gradient at the backbone.

:class:`IntentionDecoupler` wires them into one ``backward(action_loss, vl_loss)`` call.
"""

from __future__ import annotations

import torch
from torch import nn

MODES = ("none", "stop_grad", "token_mask", "grad_norm_mask")


def token_grad_mask(h: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Identity in the forward pass; in the backward pass the gradient reaches ``h`` only at positions where
    ``keep`` (broadcastable to ``h.shape[:-1]``) is True."""
    k = keep.to(h.dtype).unsqueeze(-1)
    return h * k + h.detach() * (1 - k)


def importance_update(importance: dict, params, grads, ema: float = 0.99) -> None:
    """``I = ema * I + (1 - ema) * |g|`` per parameter (in place; first call initialises to ``|g|``)."""
    for p, g in zip(params, grads, strict=True):
        if g is None:
            continue
        a = g.detach().abs()
        if p not in importance:
            importance[p] = a.clone()
        else:
            importance[p].mul_(ema).add_(a, alpha=1 - ema)


def protect_masks(importance: dict, params, protect_ratio: float) -> list:
    """Per tensor, 1 where the action gradient may pass (importance at or below the ``1 - protect_ratio``
    quantile), 0 on the ``protect_ratio`` most VL-important entries. ``protect_ratio=0`` masks nothing."""
    if not 0.0 <= protect_ratio <= 1.0:
        raise ValueError(f"protect_ratio must lie in [0, 1], got {protect_ratio}")
    out = []
    for p in params:
        imp = importance.get(p)
        if imp is None or protect_ratio == 0.0:
            out.append(torch.ones_like(p))
            continue
        n_protect = int(round(protect_ratio * imp.numel()))
        if n_protect == 0:
            out.append(torch.ones_like(p))
            continue
        flat = imp.flatten()
        idx = torch.topk(flat, n_protect).indices
        m = torch.ones_like(flat)
        m[idx] = 0.0
        out.append(m.view_as(p))
    return out


def masked_combine(g_vl, g_act, masks, norm_guard: float | None = None) -> list:
    """``g_vl + M * g_act`` per tensor (None treated as zero); with ``norm_guard`` the masked action gradient
    is scaled so that its global norm is at most ``norm_guard`` times the VL gradient's global norm."""
    ma = [None if ga is None else ga * m for ga, m in zip(g_act, masks, strict=True)]
    if norm_guard is not None:
        na = torch.sqrt(sum((x ** 2).sum() for x in ma if x is not None) or torch.tensor(0.0))
        nv = torch.sqrt(sum((x ** 2).sum() for x in g_vl if x is not None) or torch.tensor(0.0))
        if na > norm_guard * nv and na > 0:
            ma = [None if x is None else x * (norm_guard * nv / na) for x in ma]
    out = []
    for gv, x in zip(g_vl, ma, strict=True):
        if gv is None and x is None:
            out.append(None)
        else:
            out.append((0 if gv is None else gv) + (0 if x is None else x))
    return out


class IntentionDecoupler:
    """Applies a decoupling ``mode`` to the backbone parameters of a module when both losses are given.

    ``mode``: ``"none"`` (naive joint gradient), ``"stop_grad"`` (KI: set by the forward pass, here the plain
    sum), ``"token_mask"`` (ID-T: also set by the forward pass) or ``"grad_norm_mask"`` (ID-P, done here).
    ``backward`` fills ``.grad`` of every parameter; call ``optimizer.step()`` afterwards.
    """

    def __init__(self, module: nn.Module, backbone_params, mode: str = "grad_norm_mask",
                 protect_ratio: float = 0.5, ema: float = 0.99, norm_guard: float | None = 1.0) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not 0.0 <= ema < 1.0:
            raise ValueError(f"ema must lie in [0, 1), got {ema}")
        self.module, self.mode, self.protect_ratio, self.ema, self.norm_guard = module, mode, protect_ratio, ema, norm_guard
        self.backbone = list(backbone_params)
        ids = {id(p) for p in self.backbone}
        self.others = [p for p in module.parameters() if id(p) not in ids and p.requires_grad]
        self.importance: dict = {}

    def backward(self, action_loss: torch.Tensor, vl_loss: torch.Tensor) -> dict:
        if self.mode != "grad_norm_mask":
            (action_loss + vl_loss).backward()
            return {}
        bb = self.backbone
        g_vl = torch.autograd.grad(vl_loss, bb, retain_graph=True, allow_unused=True)
        g_act_all = torch.autograd.grad(action_loss, bb + self.others, allow_unused=True)
        g_act, g_other = g_act_all[: len(bb)], g_act_all[len(bb):]
        importance_update(self.importance, bb, g_vl, self.ema)
        masks = protect_masks(self.importance, bb, self.protect_ratio)
        for p, g in zip(bb, masked_combine(g_vl, g_act, masks, self.norm_guard), strict=True):
            p.grad = None if g is None else g.detach()
        for p, g in zip(self.others, g_other, strict=True):
            p.grad = None if g is None else g.detach()
        kept = sum(float(m.sum()) for m in masks) / max(1, sum(m.numel() for m in masks))
        return {"kept_fraction": kept}

"""Function-preserving outlier injection (laptop-scale stand-in for LLM outlier channels).

Tiny LMs rarely develop the heavy activation channels of LLMs that make low-bit quantization
hard. :func:`inject_outliers` creates them without changing the FP function (brief sec. 5.2):

* residual-stream readers: multiply the RMSNorm gain of a few channels ``j`` by ``alpha`` and
  divide column ``j`` of the consuming weight (``qkv`` after ``ln1``, MLP-up after ``ln2``) by
  ``alpha``; ``(g_j alpha) x_j (W_{:,j} / alpha) = g_j x_j W_{:,j}``.
* attention output: multiply the value rows ``j`` of ``qkv`` (and their bias) by ``alpha`` and
  divide column ``j`` of the output projection; attention mixes values linearly (rows of the
  softmax sum to 1), so the product is unchanged.

The quantized activations then carry channel outliers while the unquantized model is the same
(up to float rounding, tested).
"""

from __future__ import annotations

import torch
from torch import nn


@torch.no_grad()
def inject_outliers(model: nn.Module, frac: float = 0.03, alpha: float = 32.0, seed: int = 0,
                    sites: tuple[str, ...] = ("ln1", "ln2", "v")) -> dict[str, list[int]]:
    """Scale a fraction ``frac`` of channels by ``alpha`` at each site, in place; FP-preserving.

    Parameters
    ----------
    model : TinyCausalLM with ``norm="rmsnorm"`` (or LayerNorm with no bias)
    frac : float in (0, 1]
        Fraction of channels per site (at least one).
    alpha : float > 0
    seed : int
    sites : subset of ("ln1", "ln2", "v")

    Returns
    -------
    ``{"<layer>.<site>": [channel indices]}``.
    """
    if not 0 < frac <= 1:
        raise ValueError(f"frac must lie in (0, 1], got {frac!r}")
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, got {alpha!r}")
    g = torch.Generator().manual_seed(seed)
    out: dict[str, list[int]] = {}
    for i, blk in enumerate(model.blocks):
        d = blk.attn.qkv.in_features
        k = max(1, round(frac * d))
        for site in sites:
            idx = torch.randperm(d, generator=g)[:k]
            out[f"{i}.{site}"] = sorted(int(j) for j in idx)
            if site in ("ln1", "ln2"):
                norm = blk.ln1 if site == "ln1" else blk.ln2
                consumer = blk.attn.qkv if site == "ln1" else blk.mlp[0]
                if getattr(norm, "bias", None) is not None:
                    norm.bias[idx] *= alpha
                norm.weight[idx] *= alpha
                consumer.weight[:, idx] /= alpha
            elif site == "v":
                rows = 2 * d + idx
                blk.attn.qkv.weight[rows] *= alpha
                if blk.attn.qkv.bias is not None:
                    blk.attn.qkv.bias[rows] *= alpha
                blk.attn.proj.weight[:, idx] /= alpha
            else:
                raise ValueError(f"unknown site {site!r}")
    return out


__all__ = ["inject_outliers"]

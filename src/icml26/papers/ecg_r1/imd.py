"""Interleaved Modality Dropout (IMD) as a collate transform, and its non-interleaved control.

Official procedure (``ecg_r1/register.py``, ``_maybe_interleave_and_dropout``; training only):
1. with probability ``p_drop`` (``MODALITY_DROPOUT_PROB`` = 0.5) and at least one modality present,
   remove one present modality chosen uniformly;
2. with probability ``p_swap`` (``INTERLEAVE_PROB`` = 0.1) swap the order of the modalities;
3. if both ended up missing, restore the original.

A sample is a dict with optional ``"ecg"`` and ``"image"`` entries (``None`` = absent) and an
``"order"`` tuple of the modality names in prompt order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MODALITIES = ("ecg", "image")


def _check_p(p: float, name: str) -> float:
    if not (isinstance(p, (int, float)) and 0.0 <= p <= 1.0):
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    return float(p)


class InterleavedModalityDropout:
    """Collate transform: ``imd(batch) -> batch`` with one present modality dropped w.p. ``p_drop``."""

    def __init__(self, p_drop: float = 0.5, p_swap: float = 0.1, seed: int | None = None) -> None:
        self.p_drop, self.p_swap = _check_p(p_drop, "p_drop"), _check_p(p_swap, "p_swap")
        self.rng = np.random.default_rng(seed)

    def apply(self, sample: dict) -> dict:
        out = dict(sample)
        out.setdefault("order", MODALITIES)
        present = [m for m in MODALITIES if out.get(m) is not None]
        if present and self.rng.random() < self.p_drop:
            out[present[self.rng.integers(len(present))]] = None
        if self.rng.random() < self.p_swap:
            out["order"] = tuple(reversed(out["order"]))
        if all(out.get(m) is None for m in MODALITIES):  # restore (official: prefer image)
            out = dict(sample)
            out.setdefault("order", MODALITIES)
        return out

    def __call__(self, batch: Sequence[dict]) -> list[dict]:
        return [self.apply(s) for s in batch]


class RandomModalityDropout(InterleavedModalityDropout):
    """Control: each modality dropped independently, no order interleaving, same marginal drop rate.

    IMD with both modalities present drops each one with probability ``p_drop / 2``; here each is
    dropped independently with that probability (both dropped -> restored), and the order never swaps.
    """

    def __init__(self, p_drop: float = 0.5, seed: int | None = None) -> None:
        super().__init__(p_drop=p_drop, p_swap=0.0, seed=seed)

    def apply(self, sample: dict) -> dict:
        out = dict(sample)
        out.setdefault("order", MODALITIES)
        for m in MODALITIES:
            if out.get(m) is not None and self.rng.random() < self.p_drop / 2:
                out[m] = None
        if all(out.get(m) is None for m in MODALITIES):
            out = dict(sample)
            out.setdefault("order", MODALITIES)
        return out

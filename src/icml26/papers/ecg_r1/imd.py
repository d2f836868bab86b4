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
    """Control: each modality dropped independently at IMD's marginal rate, never interleaved.

    IMD with both modalities present drops each one with probability ``p_drop / 2`` (0.25 at the
    official 0.5). Here each present modality is dropped independently with probability
    ``q = r / (1 - r)``, ``r = p_drop / 2``, and a draw that drops every modality is redrawn (a sample
    always keeps one), so each modality is dropped with probability exactly ``r`` (``q / (1 + q) = r``).
    (The earlier version restored both-dropped samples instead of redrawing, which dropped each modality
    with probability ``r - r**2`` = 0.1875, not the stated 0.25.) With two modalities present any such
    scheme has IMD's joint distribution (25 % signal-only, 25 % image-only, 50 % both at ``p_drop`` 0.5),
    so this control differs from IMD only in drawing the drops independently and in never swapping
    the order: it isolates the interleaving. At ``p_drop = 1`` one modality is dropped uniformly.
    """

    def __init__(self, p_drop: float = 0.5, seed: int | None = None) -> None:
        super().__init__(p_drop=p_drop, p_swap=0.0, seed=seed)

    @property
    def q(self) -> float:
        """Per-modality independent drop probability before redrawing (``r / (1 - r)``)."""
        r = self.p_drop / 2
        return r / (1.0 - r)

    def apply(self, sample: dict) -> dict:
        out = dict(sample)
        out.setdefault("order", MODALITIES)
        present = [m for m in MODALITIES if out.get(m) is not None]
        if not present:
            return out
        if len(present) == 1:  # a lone modality is never dropped (IMD would restore it)
            return out
        if self.q >= 1.0:
            out[present[self.rng.integers(len(present))]] = None
            return out
        while True:
            drop = [m for m in present if self.rng.random() < self.q]
            if len(drop) < len(present):
                break
        for m in drop:
            out[m] = None
        return out

"""Simulated labelers with a capability (noise) and a resolution limit (ties).

The paper's framework (arXiv abstract, ICML 2026 poster 62768): a labeler whose quality difference
between two responses falls below its *discriminative resolution* is allowed to stay silent (a
tie) instead of being forced to pick. The paper's own annotation protocol is not public; this is
our operational model of it (the brief's §2, "silent labeler"): the labeler perceives
``q_i = r*(x, y_i) + noise * eps_i`` and

* silent-aware (``resolution`` set): tie if ``|q_1 - q_2| < resolution``, else prefers the larger q;
* forced choice (``resolution=None``): always prefers the larger q.

``disagreement`` adds a per-pair perturbation of the perceived gap (a different rater per pair
perceives the gap differently), our stand-in for the brief's "expert-forced (disagreeing raters)".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WIN_FIRST, WIN_SECOND, TIE = 1, -1, 0


@dataclass(frozen=True)
class SimulatedLabeler:
    """A labeler with perception noise and an optional resolution limit.

    Parameters
    ----------
    noise : float
        Standard deviation of the perception noise on each response's reward (>= 0).
    resolution : float or None
        Silent-aware labelers declare a tie below this perceived gap; ``None`` forces a choice.
    disagreement : float
        Standard deviation of an extra per-pair perturbation of the perceived gap (>= 0).
    name : str
        Label used in reports.
    """

    noise: float
    resolution: float | None = None
    disagreement: float = 0.0
    name: str = "labeler"

    def __post_init__(self) -> None:
        if not (np.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"noise must be a finite number >= 0, got {self.noise}")
        if self.resolution is not None and not (np.isfinite(self.resolution) and self.resolution > 0):
            raise ValueError(f"resolution must be > 0 or None, got {self.resolution}")
        if not self.disagreement >= 0:
            raise ValueError(f"disagreement must be >= 0, got {self.disagreement}")

    @property
    def allows_ties(self) -> bool:
        return self.resolution is not None

    def annotate(self, r1: np.ndarray, r2: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Labels of pairs with true rewards ``r1``, ``r2`` (shape (B,)): +1, -1 or 0 (tie)."""
        r1 = np.asarray(r1, dtype=float)
        r2 = np.asarray(r2, dtype=float)
        if r1.shape != r2.shape or r1.ndim != 1:
            raise ValueError(f"r1 and r2 must be 1-D arrays of equal length, got {r1.shape}, {r2.shape}")
        if not (np.isfinite(r1).all() and np.isfinite(r2).all()):
            raise ValueError("rewards contain NaN or inf")
        gap = (r1 - r2) + self.noise * (rng.standard_normal(r1.shape) - rng.standard_normal(r1.shape))
        if self.disagreement > 0:
            gap = gap + self.disagreement * rng.standard_normal(r1.shape)
        labels = np.where(gap > 0, WIN_FIRST, WIN_SECOND)
        exact_tie = gap == 0  # only with noise 0 and equal rewards: break at random
        labels[exact_tie] = rng.choice([WIN_FIRST, WIN_SECOND], size=int(exact_tie.sum()))
        if self.resolution is not None:
            labels[np.abs(gap) < self.resolution] = TIE
        return labels.astype(np.int8)


def label_noise(labels: np.ndarray, r1: np.ndarray, r2: np.ndarray, near_tie: float) -> dict[str, float]:
    """Wrong-label rates w.r.t. the true rewards, on near-ties (|dr| < near_tie) and clear pairs.

    A label is wrong when it prefers the response with the lower true reward; ties are neither
    right nor wrong and are counted in ``tie_rate``.
    """
    labels = np.asarray(labels)
    dr = np.asarray(r1, dtype=float) - np.asarray(r2, dtype=float)
    decided = labels != TIE
    wrong = decided & (np.sign(dr) * labels < 0)
    near = np.abs(dr) < near_tie

    def rate(mask: np.ndarray) -> float:
        m = mask & decided
        return float(wrong[m].mean()) if m.any() else float("nan")

    return {
        "wrong_rate_near_ties": rate(near),
        "wrong_rate_clear": rate(~near),
        "wrong_rate_all": rate(np.ones_like(near)),
        "tie_rate": float((~decided).mean()),
        "near_tie_fraction": float(near.mean()),
    }

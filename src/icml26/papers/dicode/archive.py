"""Scores, the level archive, parent selection, the active set, and a jaxued-style level buffer.

Rules follow the DiCode code (``src/dicode/scoring.py``, ``selection.py``,
``evolution_efficient.py``, ``task_utils.py``; brief §2.2-2.3):

- success rate SR = successes / finished episodes over the scoring window; -1 if none finished;
- learnability L = clip(SR, 0, 1) (1 - clip(SR, 0, 1)) (so 0 for SR in {-1, 0, 1});
- status: A if SR >= 0.75, B if 0.5 <= SR < 0.75, C if 0.25 <= SR < 0.5, D otherwise;
- strict parent selection: eligible = status A or B, fewer than ``max_children`` (5) children, and
  no child of status A, B or C (the parent "graduates" once a child is learnable); sort by L
  descending, take the top K, replicate to fill K; if none is eligible, fall back to A levels;
  "unrestricted" (the ablation) samples K scored levels uniformly without replacement, replicated
  to fill K (DiCode shuffles the replicated list; we keep it in order);
- compare-and-swap: while the active set has room, a new level enters if L >= the minimum entry
  score (0); when full, it replaces the active level with the lowest L if L_new >= L_worst;
- active-set sampling (PLR): rank weights (1 / rank)^(1/T), staleness weights proportional to
  sessions since last trained, mixed (1 - rho) w_s + rho w_c, sampled without replacement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from icml26.core.validation import check_positive, check_positive_int

STATUSES = ("A", "B", "C", "D")


def learnability(sr: float | np.ndarray) -> float | np.ndarray:
    """p (1 - p) with p = clip(SR, 0, 1); SR = -1 (no finished episode) scores 0."""
    p = np.clip(np.asarray(sr, dtype=float), 0.0, 1.0)
    out = p * (1.0 - p)
    return float(out) if out.ndim == 0 else out


def status_from_sr(sr: float) -> str:
    if sr >= 0.75:
        return "A"
    if sr >= 0.5:
        return "B"
    if sr >= 0.25:
        return "C"
    return "D"


def pvl_score(advantages: np.ndarray) -> float:
    """Positive value loss: the mean of max(GAE advantage, 0) (PLR's default score)."""
    a = np.asarray(advantages, dtype=float)
    return float(np.maximum(a, 0).mean()) if a.size else 0.0


def maxmc_score(returns: np.ndarray, values: np.ndarray, max_return: float) -> float:
    """MaxMC: mean of (highest return seen on the level - V(s))."""
    v = np.asarray(values, dtype=float)
    return float((max_return - v).mean()) if v.size else 0.0


def rank_staleness_weights(scores: Sequence[float], last_seen: Sequence[float], now: float,
                           temperature: float = 1.0, staleness_coeff: float = 0.3) -> np.ndarray:
    """jaxued's ``level_weights`` with rank prioritisation: w_s ∝ (1 / rank)^(1 / T) (rank 1 =
    highest score, ties by order), w_c ∝ now - last_seen, w = (1 - rho) w_s + rho w_c."""
    s = np.asarray(scores, dtype=float)
    n = len(s)
    if n == 0:
        return np.zeros(0)
    check_positive(temperature, "temperature")
    order = np.argsort(-s, kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(1, n + 1)
    ws = (1.0 / ranks) ** (1.0 / temperature)
    ws /= ws.sum()
    stale = np.maximum(now - np.asarray(last_seen, dtype=float), 0.0)
    wc = stale / stale.sum() if stale.sum() > 0 else np.full(n, 1.0 / n)
    return (1.0 - staleness_coeff) * ws + staleness_coeff * wc


@dataclass
class LevelRecord:
    id: int
    code: str
    parent: int | None = None
    children: list[int] = field(default_factory=list)
    sr: float = -1.0
    score: float = 0.0
    status: str = "D"
    scored: bool = False
    active: bool = False
    last_trained: int = 0
    created: int = 0
    description: str = ""
    operator: str = ""
    per_achievement: dict[str, float] = field(default_factory=dict)
    history: list[float] = field(default_factory=list)


class LevelArchive:
    """Every level ever generated (a lineage tree: parent -> children) and the active set."""

    def __init__(self, capacity: int = 32, min_entry_score: float = 0.0) -> None:
        self.capacity = check_positive_int(capacity, "capacity")
        self.min_entry_score = float(min_entry_score)
        self.records: dict[int, LevelRecord] = {}

    def add(self, code: str, parent: int | None = None, session: int = 0, **kw) -> LevelRecord:
        rec = LevelRecord(id=len(self.records), code=code, parent=parent, created=session, **kw)
        self.records[rec.id] = rec
        if parent is not None:
            self.records[parent].children.append(rec.id)
        return rec

    def update_score(self, rid: int, sr: float, session: int,
                     per_achievement: dict[str, float] | None = None) -> None:
        r = self.records[rid]
        r.sr, r.score, r.status, r.scored = float(sr), learnability(sr), status_from_sr(sr), True
        r.last_trained = session
        r.history.append(float(sr))
        if per_achievement is not None:
            r.per_achievement = dict(per_achievement)

    @property
    def active(self) -> list[int]:
        return [r.id for r in self.records.values() if r.active]

    def depth(self, rid: int) -> int:
        d, r = 0, self.records[rid]
        while r.parent is not None:
            d, r = d + 1, self.records[r.parent]
        return d


def select_parents(archive: LevelArchive, k: int, mode: str = "strict",
                   rng: np.random.Generator | None = None, max_children: int = 5) -> list[int]:
    """Parent ids for the next evolution step (see the module docstring)."""
    check_positive_int(k, "k")
    scored = [r for r in archive.records.values() if r.scored]
    if mode == "unrestricted":
        if not scored:
            return []
        rng = rng or np.random.default_rng(0)
        picked = [scored[i].id for i in rng.choice(len(scored), size=min(k, len(scored)),
                                                    replace=False)]
        return [picked[i % len(picked)] for i in range(k)]
    if mode != "strict":
        raise ValueError(f"mode must be 'strict' or 'unrestricted', got {mode!r}")
    recs = archive.records
    eligible = [r for r in scored if r.status in ("A", "B") and len(r.children) < max_children
                and not any(recs[c].scored and recs[c].status in ("A", "B", "C")
                            for c in r.children)]
    if not eligible:
        eligible = [r for r in scored if r.status == "A"]
    if not eligible:
        return []
    eligible.sort(key=lambda r: (-r.score, r.id))
    top = [r.id for r in eligible[:k]]
    return [top[i % len(top)] for i in range(k)]


def try_activate(archive: LevelArchive, rid: int) -> int | None:
    """Compare-and-swap a newly scored level into the active set. Returns the evicted id (None if
    nothing was evicted); ``archive.records[rid].active`` says whether it entered."""
    rec = archive.records[rid]
    active = [archive.records[i] for i in archive.active if i != rid]
    if len(active) < archive.capacity:
        rec.active = rec.score >= archive.min_entry_score
        return None
    worst = min(active, key=lambda r: (r.score, -r.id))
    if rec.score >= worst.score:
        worst.active, rec.active = False, True
        return worst.id
    rec.active = False
    return None


def sample_active_levels(archive: LevelArchive, n: int, session: int, rng: np.random.Generator,
                         temperature: float = 1.0, staleness_coeff: float = 0.3,
                         uniform: bool = False) -> list[int]:
    """``n`` active levels without replacement (PLR rank + staleness weights, or uniform)."""
    ids = archive.active
    n = min(n, len(ids))
    if n <= 0:
        return []
    if uniform:
        p = np.full(len(ids), 1.0 / len(ids))
    else:
        recs = [archive.records[i] for i in ids]
        p = rank_staleness_weights([r.score for r in recs], [r.last_trained for r in recs],
                                   session, temperature, staleness_coeff)
    return [ids[i] for i in rng.choice(len(ids), size=n, replace=False, p=p)]


class LevelSampler:
    """A prioritised level replay buffer in the style of jaxued's ``LevelSampler``.

    ``insert`` adds a level with a score (replacing the lowest-scored one when full, if the new
    score is higher); ``sample_replay_decision`` replays with probability ``replay_prob`` once the
    buffer is at least ``minimum_fill_ratio`` full; ``sample_replay_levels`` draws by
    :func:`rank_staleness_weights` (``prioritization="rank"``) or a softmax over the top-k scores
    (``"topk"``, as DiCode's ``_calculate_score_weights``), mixed with staleness."""

    def __init__(self, capacity: int, replay_prob: float = 0.5, staleness_coeff: float = 0.3,
                 minimum_fill_ratio: float = 1.0, prioritization: str = "rank",
                 temperature: float = 1.0, topk_k: int = 4) -> None:
        self.capacity = check_positive_int(capacity, "capacity")
        if not 0.0 <= replay_prob <= 1.0 or not 0.0 <= staleness_coeff <= 1.0:
            raise ValueError("replay_prob and staleness_coeff must lie in [0, 1]")
        if prioritization not in ("rank", "topk"):
            raise ValueError(f"prioritization must be 'rank' or 'topk', got {prioritization!r}")
        self.replay_prob, self.staleness_coeff = replay_prob, staleness_coeff
        self.minimum_fill_ratio, self.prioritization = minimum_fill_ratio, prioritization
        self.temperature, self.topk_k = temperature, topk_k
        self.levels: list = []
        self.scores: list[float] = []
        self.last_sampled: list[int] = []
        self.time = 0

    def __len__(self) -> int:
        return len(self.levels)

    def insert(self, level, score: float) -> int | None:
        if len(self.levels) < self.capacity:
            self.levels.append(level)
            self.scores.append(float(score))
            self.last_sampled.append(self.time)
            return len(self.levels) - 1
        worst = int(np.argmin(self.scores))
        if score > self.scores[worst]:
            self.levels[worst], self.scores[worst], self.last_sampled[worst] = level, float(score), self.time
            return worst
        return None

    def insert_batch(self, levels, scores) -> list[int | None]:
        return [self.insert(lv, s) for lv, s in zip(levels, scores, strict=True)]

    def update(self, idx: int, score: float) -> None:
        self.scores[idx] = float(score)

    def update_batch(self, idxs, scores) -> None:
        for i, s in zip(idxs, scores, strict=True):
            self.update(int(i), s)

    def level_weights(self) -> np.ndarray:
        if self.prioritization == "topk":
            n = len(self.scores)
            sc = np.asarray(self.scores, dtype=float)
            top = np.argsort(-sc, kind="stable")[:min(self.topk_k, n)]
            w = np.zeros(n)
            w[top] = np.exp(sc[top] - sc[top].max())  # softmax over the top-k scores (DiCode)
            ws = w / w.sum()
            stale = self.time - np.asarray(self.last_sampled, float)
            wc = stale / stale.sum() if stale.sum() > 0 else np.full(n, 1.0 / n)
            return (1 - self.staleness_coeff) * ws + self.staleness_coeff * wc
        return rank_staleness_weights(self.scores, self.last_sampled, self.time,
                                      self.temperature, self.staleness_coeff)

    def sample_replay_decision(self, rng: np.random.Generator) -> bool:
        full = len(self.levels) >= self.minimum_fill_ratio * self.capacity
        return bool(full and rng.random() < self.replay_prob)

    def sample_replay_levels(self, rng: np.random.Generator, n: int) -> list[int]:
        self.time += 1
        n = min(n, len(self.levels))
        idx = rng.choice(len(self.levels), size=n, replace=False, p=self.level_weights())
        for i in idx:
            self.last_sampled[i] = self.time
        return [int(i) for i in idx]

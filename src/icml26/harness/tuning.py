"""Equal-effort tuning: every arm's knobs chosen on a validation split, with the same grid size
and budget, before the test split is scored (``../shared/design/CLAIMS.md`` rule 2).

The experiment owns the data; this module owns the protocol. ``tune`` only ever sees a
*validation* scorer, so the test split cannot leak into the choice; ``tune_arms`` tunes several
arms and refuses unequal effort (grid sizes, budgets) unless the difference is declared.

Usage inside ``run(config, seed)``::

    tuned = tune_arms({
        "ssc":   TuningSpec(grid=[{"alpha": a} for a in (0.0, 0.2, 0.5, 1.0)],
                            validate=lambda p: fid(sample_ssc(val_noise, **p)), maximize=False,
                            budget={"nfe": 8}),
        "shift": TuningSpec(grid=[{"shift": s} for s in (1.0, 1.5, 2.0, 3.0)], ...),
    })
    test_score = fid(sample_ssc(test_noise, **tuned["ssc"].chosen))
    return SeedOutput(metrics=..., tuning=tuned)

The runner gathers each seed's ``tuning`` into the result's top-level ``"tuning"`` record:
``{arm: {"grid_size": int, "budget": {...}, "chosen": [per seed], "val_score": [per seed]}}``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._json import to_jsonable

Params = Mapping[str, Any]


@dataclass(frozen=True)
class Tuned:
    """The outcome of tuning one arm: the chosen setting and what choosing it cost."""

    chosen: dict[str, Any]
    val_score: float
    scores: tuple[float, ...]
    grid_size: int
    budget: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"chosen": to_jsonable(self.chosen), "val_score": self.val_score,
                "scores": list(self.scores), "grid_size": self.grid_size,
                "budget": to_jsonable(self.budget)}


@dataclass(frozen=True)
class TuningSpec:
    """One arm's tuning problem: its grid, a validation scorer, the direction and the budget.

    ``budget`` is what one run of the arm costs in the paper's unit (steps, NFE, simulator calls,
    KL to the reference...); it is recorded per arm and compared across arms by ``tune_arms``.
    A grid of one setting is an untuned arm, and is recorded as such.
    """

    grid: Sequence[Params]
    validate: Callable[[Params], float]
    maximize: bool = True
    budget: Mapping[str, float] = field(default_factory=dict)


def tune(grid: Sequence[Params], validate: Callable[[Params], float], *, maximize: bool = True,
         budget: Mapping[str, float] | None = None) -> Tuned:
    """Score every setting of ``grid`` with ``validate`` and return the best one.

    Ties go to the earliest setting in the grid (put the "off" setting first to prefer it on a
    tie). Non-finite scores are never chosen; if every score is non-finite this raises.
    """
    grid = list(grid)
    if not grid:
        raise ValueError("tune needs a non-empty grid")
    if not all(isinstance(g, Mapping) for g in grid):
        raise TypeError("each grid point must be a mapping of knob -> value")
    scores = []
    for params in grid:
        value = float(validate(dict(params)))
        scores.append(value)
    finite = [i for i, v in enumerate(scores) if math.isfinite(v)]
    if not finite:
        raise ValueError(f"every validation score is non-finite: {scores}")
    sign = 1.0 if maximize else -1.0
    best = max(finite, key=lambda i: (sign * scores[i], -i))
    return Tuned(chosen=dict(grid[best]), val_score=scores[best], scores=tuple(scores),
                 grid_size=len(grid), budget=dict(budget or {}))


def tune_arms(specs: Mapping[str, TuningSpec], *, allow_unequal: Sequence[str] = ()) -> dict[str, Tuned]:
    """Tune several arms with equal effort; return ``{arm: Tuned}``.

    Every arm must have the same grid size and the same budget, except the arms named in
    ``allow_unequal`` (e.g. an arm with no knob, whose grid is its single setting: say so).
    """
    if not specs:
        raise ValueError("tune_arms needs at least one arm")
    checked = {a: s for a, s in specs.items() if a not in allow_unequal}
    sizes = {a: len(list(s.grid)) for a, s in checked.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"unequal tuning effort: grid sizes {sizes} (CLAIMS.md rule 2)")
    budgets = {a: dict(s.budget) for a, s in checked.items()}
    if len({tuple(sorted(b.items())) for b in budgets.values()}) > 1:
        raise ValueError(f"unequal tuning effort: budgets {budgets} (CLAIMS.md rule 2)")
    return {arm: tune(s.grid, s.validate, maximize=s.maximize, budget=s.budget)
            for arm, s in specs.items()}


def gather_tuning(per_seed: Sequence[Mapping[str, Tuned]]) -> dict[str, dict[str, Any]]:
    """The result file's ``"tuning"`` record from each seed's ``{arm: Tuned}``."""
    out: dict[str, dict[str, Any]] = {}
    for seed_tuning in per_seed:
        for arm, t in seed_tuning.items():
            rec = out.setdefault(arm, {"grid_size": t.grid_size, "budget": to_jsonable(t.budget),
                                       "chosen": [], "val_score": []})
            if rec["grid_size"] != t.grid_size:
                raise ValueError(f"arm {arm!r}: grid size changed between seeds")
            rec["chosen"].append(to_jsonable(t.chosen))
            rec["val_score"].append(t.val_score if math.isfinite(t.val_score) else None)
    return out

"""Declared metrics: the names a paper's arms write and its claims read, checked at both ends.

A paper declares, at module level next to ``CLAIMS``::

    METRICS = {
        "naive": ("success_id", "success_ood_*"),
        ("rmft", "ucb1"): ("regret_T*",),
    }

Each key is an arm name, a tuple of arm names, or a glob (``fnmatch``, case-sensitive); each value
is the metric names (or globs) that arm produces. A ``*`` stands for the part of a name that a
profile varies (a horizon, a noise level, a regime index), never for the name itself.

The runner enforces the declaration:

* **writing** -- every seed's metrics are checked as the seed returns
  (:meth:`MetricSchema.check`); an undeclared arm or metric fails the run with the names, so a
  typo never becomes a silently missing metric;
* **reading** -- claims, controls and substrate gates see the metrics through
  :meth:`MetricSchema.guard`, which refuses an undeclared name with
  :class:`UndeclaredMetricError` and a declared-but-absent one with a ``KeyError`` that says so.

``run()`` may also write through a :class:`MetricTable`, which refuses an undeclared name at the
line that writes it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

__all__ = ["MetricSchema", "MetricTable", "UndeclaredMetricError", "metric_schema"]


class UndeclaredMetricError(KeyError):
    """A metric (or arm) that the paper's ``METRICS`` does not declare was written or read."""

    def __str__(self) -> str:  # KeyError quotes its argument; say it plainly
        return str(self.args[0]) if self.args else "undeclared metric"


def _match(name: str, pattern: str) -> bool:
    """A name matches itself literally (an arm called ``"T01 [mutated]"`` is not a character
    class) or the pattern as an ``fnmatch`` glob."""
    return name == pattern or fnmatchcase(name, pattern)


def _names(key: Any, what: str) -> tuple[str, ...]:
    items = (key,) if isinstance(key, str) else tuple(key)
    if not items or not all(isinstance(s, str) and s for s in items):
        raise TypeError(f"METRICS: {what} must be a non-empty string or a tuple of them, got {key!r}")
    return items


@dataclass(frozen=True)
class MetricSchema:
    """``((arm patterns, metric patterns), ...)``: which arm writes which metrics."""

    entries: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]

    @classmethod
    def of(cls, decl: Mapping[Any, Sequence[str] | str]) -> MetricSchema:
        if not isinstance(decl, Mapping) or not decl:
            raise TypeError(f"METRICS must be a non-empty mapping {{arm: metric names}}, got {decl!r}")
        return cls(tuple((_names(arm, "an arm key"), _names(names, f"METRICS[{arm!r}]"))
                         for arm, names in decl.items()))

    def arm_declared(self, arm: str) -> bool:
        return any(_match(arm, p) for arms, _ in self.entries for p in arms)

    def declares(self, arm: str, metric: str) -> bool:
        return any(_match(metric, q) for arms, names in self.entries
                   if any(_match(arm, p) for p in arms) for q in names)

    def metrics_of(self, arm: str) -> list[str]:
        return sorted({q for arms, names in self.entries
                       if any(_match(arm, p) for p in arms) for q in names})

    def refuse(self, arm: str, metric: str | None, where: str) -> UndeclaredMetricError:
        if not self.arm_declared(arm):
            arms = sorted({p for a, _ in self.entries for p in a})
            return UndeclaredMetricError(f"{where}: arm {arm!r} is not declared in METRICS "
                                         f"(declared arms: {arms})")
        return UndeclaredMetricError(f"{where}: metric {arm}/{metric} is not declared in METRICS "
                                     f"(declared for {arm!r}: {self.metrics_of(arm)})")

    def check(self, metrics: Mapping[str, Mapping[str, Any]], where: str = "run()") -> None:
        """Raise :class:`UndeclaredMetricError` naming every undeclared ``arm/metric`` written."""
        bad = [(a, n) for a, per in metrics.items() for n in per if not self.declares(a, n)]
        if bad:
            shown = ", ".join(f"{a}/{n}" for a, n in bad[:8]) + (" ..." if len(bad) > 8 else "")
            first = self.refuse(*bad[0], where)
            raise UndeclaredMetricError(f"{where} wrote {len(bad)} undeclared metric(s): {shown}; "
                                        f"{first}")

    def guard(self, metrics: Mapping[str, Mapping[str, Sequence[float]]]) -> _Guarded:
        """A read-only view of ``metrics`` that refuses undeclared names (see the module doc)."""
        return _Guarded(self, metrics)


class _Guarded(Mapping):
    def __init__(self, schema: MetricSchema, metrics: Mapping[str, Mapping[str, Any]]) -> None:
        self._schema, self._metrics = schema, metrics

    def __getitem__(self, arm: str) -> _GuardedArm:
        if not self._schema.arm_declared(arm):
            raise self._schema.refuse(arm, None, "a rule read")
        if arm not in self._metrics:
            raise KeyError(f"arm {arm!r} is declared in METRICS but this run did not produce it "
                           f"(arms produced: {sorted(self._metrics)})")
        return _GuardedArm(self._schema, arm, self._metrics[arm])

    def get(self, arm: str, default: Any = None) -> Any:  # Mapping.get would swallow a refusal
        return self[arm] if arm in self._metrics or not self._schema.arm_declared(arm) else default

    def __contains__(self, arm: object) -> bool:  # membership only: never refuses
        return arm in self._metrics

    def __iter__(self) -> Iterator[str]:
        return iter(self._metrics)

    def __len__(self) -> int:
        return len(self._metrics)


class _GuardedArm(Mapping):
    def __init__(self, schema: MetricSchema, arm: str, per: Mapping[str, Any]) -> None:
        self._schema, self._arm, self._per = schema, arm, per

    def __getitem__(self, name: str) -> Any:
        if not self._schema.declares(self._arm, name):
            raise self._schema.refuse(self._arm, name, "a rule read")
        if name not in self._per:
            raise KeyError(f"metric {self._arm}/{name} is declared in METRICS but this run did not "
                           f"write it")
        return self._per[name]

    def get(self, name: str, default: Any = None) -> Any:  # Mapping.get would swallow a refusal
        if not self._schema.declares(self._arm, name):
            raise self._schema.refuse(self._arm, name, "a rule read")
        return self._per.get(name, default)

    def __contains__(self, name: object) -> bool:  # membership only: never refuses
        return name in self._per

    def __iter__(self) -> Iterator[str]:
        return iter(self._per)

    def __len__(self) -> int:
        return len(self._per)


class MetricTable:
    """What ``run()`` writes for one seed, refusing an undeclared name where it is written::

        table = MetricTable(METRICS)
        table["naive"]["success_id"] = 0.42
        table.record("naive", success_ood_visual=0.31)
        return SeedOutput(metrics=table.to_dict())
    """

    def __init__(self, decl: Mapping[Any, Sequence[str] | str] | MetricSchema) -> None:
        self.schema = decl if isinstance(decl, MetricSchema) else MetricSchema.of(decl)
        self._metrics: dict[str, dict[str, float]] = {}

    def __getitem__(self, arm: str) -> _ArmWriter:
        if not self.schema.arm_declared(arm):
            raise self.schema.refuse(arm, None, "run() wrote")
        return _ArmWriter(self, arm)

    def record(self, arm: str, **values: float) -> None:
        writer = self[arm]
        for name, value in values.items():
            writer[name] = value

    def to_dict(self) -> dict[str, dict[str, float]]:
        return {a: dict(m) for a, m in self._metrics.items()}


class _ArmWriter:
    def __init__(self, table: MetricTable, arm: str) -> None:
        self._table, self._arm = table, arm

    def __setitem__(self, name: str, value: float) -> None:
        if not self._table.schema.declares(self._arm, name):
            raise self._table.schema.refuse(self._arm, name, "run() wrote")
        self._table._metrics.setdefault(self._arm, {})[name] = float(value)

    def __getitem__(self, name: str) -> float:
        return self._table._metrics[self._arm][name]


def metric_schema(experiment: Any) -> MetricSchema | None:
    """The paper's declared :class:`MetricSchema`, or ``None`` when it declares no ``METRICS``."""
    decl = getattr(experiment, "METRICS", None)
    if decl is None:
        return None
    return decl if isinstance(decl, MetricSchema) else MetricSchema.of(decl)

"""One progress hook for long loops (training, sampling), cheap enough to call every step.

A loop calls ``tick("sft", step + 1, steps)``; nothing happens unless a caller installed a sink
with :func:`progress_sink` (the harness does, around each seed, and forwards to the command
line's bars or periodic lines). A tick costs one context-variable read and, with a sink, one
clock read; the sink is called at most every ``every_s`` seconds per sink, and on the last step.
Cores call ``tick`` and never import the harness (core -> papers -> harness).

Timing uses the same calls: inside :func:`timing_scope`, each tick label's span (first to last
tick) is recorded, and :func:`phase` times a named block (data generation, evaluation), so a
result can say where a seed's time went without any extra instrumentation of the core loops.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

Sink = Callable[[str, int, int], None]


@dataclass
class _State:
    sink: Sink
    every_s: float
    last: float = -1e18


_CURRENT: contextvars.ContextVar[_State | None] = contextvars.ContextVar("icml26_progress",
                                                                         default=None)


@dataclass
class Timing:
    """Where time went inside a :func:`timing_scope`: loop spans (seconds from a label's first
    to its last tick, summed over separate runs of the loop) and named phases (seconds)."""

    loops: dict[str, float]
    phases: dict[str, float]
    total_s: float = 0.0
    _open: dict[str, tuple[float, float, int]] | None = None

    def to_dict(self) -> dict[str, object]:
        loops = dict(self.loops)
        for label, (first, last, _) in (self._open or {}).items():
            loops[label] = loops.get(label, 0.0) + (last - first)
        return {"total_s": round(self.total_s, 3),
                "loops_s": {k: round(v, 3) for k, v in sorted(loops.items())},
                "phases_s": {k: round(v, 3) for k, v in sorted(self.phases.items())}}


_TIMING: contextvars.ContextVar[Timing | None] = contextvars.ContextVar("icml26_timing",
                                                                        default=None)


def _time_tick(timing: Timing, label: str, done: int, now: float) -> None:
    assert timing._open is not None
    span = timing._open.get(label)
    if span is None:
        timing._open[label] = (now, now, done)
        return
    first, last, last_done = span
    if done < last_done:  # a new run of the same loop: close the old span
        timing.loops[label] = timing.loops.get(label, 0.0) + (last - first)
        first = now
    timing._open[label] = (first, now, done)


def tick(label: str, done: int, total: int) -> None:
    """Report that ``done`` of ``total`` units of the loop ``label`` are complete."""
    timing = _TIMING.get()
    state = _CURRENT.get()
    if state is None and timing is None:
        return
    now = time.monotonic()
    if timing is not None:
        _time_tick(timing, label, done, now)
    if state is None:
        return
    if done < total and now - state.last < state.every_s:
        return
    state.last = now
    state.sink(label, int(done), int(total))


@contextmanager
def progress_sink(sink: Sink | None, every_s: float = 5.0) -> Iterator[None]:
    """Send the ticks of the loops run inside this block to ``sink(label, done, total)``."""
    if every_s < 0:
        raise ValueError(f"every_s must be >= 0, got {every_s}")
    token = _CURRENT.set(_State(sink, every_s) if sink is not None else None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


@contextmanager
def timing_scope() -> Iterator[Timing]:
    """Record the loop spans and phases of the code run inside; ``total_s`` is set on exit."""
    timing = Timing(loops={}, phases={}, _open={})
    token = _TIMING.set(timing)
    t0 = time.perf_counter()
    try:
        yield timing
    finally:
        timing.total_s = time.perf_counter() - t0
        _TIMING.reset(token)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time a named block (``with phase("data"): ...``) inside a :func:`timing_scope`."""
    timing = _TIMING.get()
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if timing is not None:
            timing.phases[name] = timing.phases.get(name, 0.0) + time.perf_counter() - t0

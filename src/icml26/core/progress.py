"""One progress hook for long loops (training, sampling), cheap enough to call every step.

A loop calls ``tick("sft", step + 1, steps)``; nothing happens unless a caller installed a sink
with :func:`progress_sink` (the harness does, around each seed, and forwards to the command
line's bars or periodic lines). A tick costs one context-variable read and, with a sink, one
clock read; the sink is called at most every ``every_s`` seconds per sink, and on the last step.
Cores call ``tick`` and never import the harness (core -> papers -> harness).
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


def tick(label: str, done: int, total: int) -> None:
    """Report that ``done`` of ``total`` units of the loop ``label`` are complete."""
    state = _CURRENT.get()
    if state is None:
        return
    now = time.monotonic()
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

"""Usage accounting: what every chat-model call of a run cost (tokens, calls, cache hits, time).

Every backend records each call into the *active* trackers: :func:`track_usage` pushes a
:class:`UsageTracker` for the duration of a ``with`` block (nested blocks all record, so a paper
can count one arm while the runner counts the whole run). The harness wraps each paper's run in
one and writes its totals under the result key ``llm_usage``, per ``backend:model``.

The active trackers live in a :mod:`contextvars` variable; :meth:`ChatModel.complete_many`
copies the caller's context into its worker threads, so batched calls are counted too.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

_ACTIVE: contextvars.ContextVar[tuple[UsageTracker, ...]] = contextvars.ContextVar(
    "icml26_llm_usage", default=())


@dataclass
class UsageStats:
    """Totals of one ``backend:model``.

    Attributes
    ----------
    calls : completions returned (cache hits included)
    cache_hits : completions served from the disk cache (no request, no tokens counted)
    requests : HTTP requests sent, retries included (0 for local backends)
    retries : requests that were retries (429, 5xx, timeout, connection error)
    errors : calls that raised after their retries
    prompt_tokens, completion_tokens : as reported by the backend (uncached calls only)
    latency_s : wall time of uncached calls, retries and back-off included
    """

    calls: int = 0
    cache_hits: int = 0
    requests: int = 0
    retries: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    def add(self, other: UsageStats) -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["latency_s"] = round(d["latency_s"], 6)
        d["total_tokens"] = self.prompt_tokens + self.completion_tokens
        return d


_FIELDS = frozenset(UsageStats.__dataclass_fields__)


class UsageTracker:
    """Thread-safe totals per ``backend:model`` name.

    Examples
    --------
    >>> from icml26.core.llm import ScriptedChat, track_usage
    >>> with track_usage() as usage:
    ...     _ = ScriptedChat(lambda m: "ok", name="echo").complete([{"role": "user", "content": "hi"}])
    >>> usage.totals().calls
    1
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_model: dict[str, UsageStats] = {}

    def record(self, name: str, **counts: float) -> None:
        """Add ``counts`` (fields of :class:`UsageStats`) to the totals of ``name``."""
        unknown = counts.keys() - _FIELDS
        if unknown:
            raise KeyError(f"unknown usage field {sorted(unknown)[0]!r}")
        with self._lock:
            stats = self._by_model.get(name)
            if stats is None:
                stats = self._by_model[name] = UsageStats()
            d = stats.__dict__
            for k, v in counts.items():
                d[k] += v

    def by_model(self) -> dict[str, UsageStats]:
        """A copy of the per-``backend:model`` totals."""
        with self._lock:
            return {k: UsageStats(**asdict(v)) for k, v in self._by_model.items()}

    def totals(self) -> UsageStats:
        """The sum over every backend and model."""
        total = UsageStats()
        for stats in self.by_model().values():
            total.add(stats)
        return total

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{"backend:model": {calls, cache_hits, ..., total_tokens}}`` (JSON-able)."""
        return {k: v.to_dict() for k, v in sorted(self.by_model().items())}


@contextlib.contextmanager
def track_usage(tracker: UsageTracker | None = None) -> Iterator[UsageTracker]:
    """Record every chat-model call inside the block into ``tracker`` (a new one by default)."""
    tracker = UsageTracker() if tracker is None else tracker
    token = _ACTIVE.set(_ACTIVE.get() + (tracker,))
    try:
        yield tracker
    finally:
        _ACTIVE.reset(token)


def record_usage(name: str, **counts: float) -> None:
    """Add ``counts`` to every active tracker (no-op outside :func:`track_usage`)."""
    for tracker in _ACTIVE.get():
        tracker.record(name, **counts)

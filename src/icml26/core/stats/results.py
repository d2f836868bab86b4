"""Test results that unpack like scipy's: ``statistic, pvalue = result``.

scipy.stats returns result objects that behave as a 2-tuple ``(statistic, pvalue)`` and carry
extra fields as attributes (``TtestResult``). :class:`ScipyLikeResult` gives a frozen dataclass
with ``statistic`` and ``pvalue`` fields the same behaviour: iteration, ``len`` and indexing
see the pair only; every other field stays an attribute.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class ScipyLikeResult:
    """Mixin for a dataclass with ``statistic`` and ``pvalue``: unpacks as ``(statistic, pvalue)``."""

    __slots__ = ()

    def _pair(self) -> tuple[Any, Any]:
        return (self.statistic, self.pvalue)  # type: ignore[attr-defined]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._pair())

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int | slice) -> Any:
        return self._pair()[index]

"""An in-process cache of trained priors, keyed by their training config and seed.

A reproduction trains one flow prior per seed and reuses it for every arm, regime and tuning
candidate (and across repeated runs in the same process, e.g. a smoke test after a unit test).
The key is the JSON of the config mapping plus the seed, so two configs that differ in any field
train two priors. Nothing is written to disk: results never depend on a stale file.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from torch import nn


def _key(config: Mapping[str, Any], seed: int) -> str:
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping of JSON-able values, got {type(config).__name__}")
    try:
        return json.dumps({"config": dict(config), "seed": int(seed)}, sort_keys=True)
    except TypeError as exc:
        raise TypeError(f"config must hold JSON-able values only: {exc}") from None


class PriorCache:
    """LRU cache ``(config, seed) -> trained model``.

    Parameters
    ----------
    maxsize : int, default 8
        Number of priors kept; the least recently used is dropped first.

    Examples
    --------
    >>> cache = PriorCache()
    >>> model = cache.get_or_train({"steps": 10}, 0, lambda: nn.Linear(2, 2))
    >>> cache.get_or_train({"steps": 10}, 0, lambda: nn.Linear(2, 2)) is model
    True
    """

    def __init__(self, maxsize: int = 8) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        self.maxsize = int(maxsize)
        self._store: OrderedDict[str, nn.Module] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get_or_train(self, config: Mapping[str, Any], seed: int,
                     train: Callable[[], nn.Module]) -> nn.Module:
        """The cached prior for ``(config, seed)``, or ``train()``'s result (cached)."""
        key = _key(config, seed)
        if key in self._store:
            self.hits += 1
            self._store.move_to_end(key)
            return self._store[key]
        self.misses += 1
        model = train()
        if not isinstance(model, nn.Module):
            raise TypeError(f"train() must return an nn.Module, got {type(model).__name__}")
        self._store[key] = model
        while len(self._store) > self.maxsize:
            self._store.popitem(last=False)
        return model

    def __contains__(self, item: tuple[Mapping[str, Any], int]) -> bool:
        config, seed = item
        return _key(config, seed) in self._store

    def __len__(self) -> int:
        return len(self._store)

    def clear(self) -> None:
        self._store.clear()
        self.hits = self.misses = 0


#: The process-wide cache that experiments share.
PRIORS = PriorCache()


def cached_prior(config: Mapping[str, Any], seed: int, train: Callable[[], nn.Module]) -> nn.Module:
    """``PRIORS.get_or_train(config, seed, train)``: one trained prior per config and seed."""
    return PRIORS.get_or_train(config, seed, train)

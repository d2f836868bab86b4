"""saved_tensor_bytes (exact byte counts on known graphs, peak vs total) and the prior cache."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from icml26.core.flows import PriorCache, saved_tensor_bytes


def test_known_graph_bytes():
    x = torch.randn(10, requires_grad=True)  # 40 bytes
    s = saved_tensor_bytes(lambda: torch.sin(torch.sin(x)).sum().backward())
    assert s.peak_bytes == 80 and s.total_bytes == 80 and s.n_saved == 2  # x and sin(x)


def test_chain_is_linear_and_deterministic():
    w = torch.randn(16, 16, requires_grad=True)
    x = torch.randn(4, 16)

    def chain(n):
        h = x
        for _ in range(n):
            h = torch.tanh(h @ w)
        h.sum().backward()

    b = [saved_tensor_bytes(chain, n).peak_bytes for n in (2, 4, 8)]
    step = 4 * 16 * 4  # one (4, 16) float32 activation per layer (w is saved once: one storage)
    assert b[0] == 16 * 16 * 4 + 4 * 16 * 4 + 2 * step  # w, x and two tanh outputs
    assert [b[1] - b[0], b[2] - b[1]] == [2 * step, 4 * step]
    assert saved_tensor_bytes(chain, 8).peak_bytes == b[2]


def test_peak_counts_live_tensors_only():
    x = torch.randn(100, requires_grad=True)  # 400 bytes

    def two_graphs():
        torch.exp(x).sum().backward()  # saves exp(x): 400 bytes, freed by backward
        torch.exp(x).sum().backward()

    s = saved_tensor_bytes(two_graphs)
    assert s.total_bytes == 800 and s.peak_bytes == 400


def test_no_graph_no_bytes_and_result_returned():
    x = torch.randn(5)
    s = saved_tensor_bytes(lambda: (x * 2).sum())
    assert s.peak_bytes == 0 and float(s.result) == pytest.approx(float(x.sum() * 2))
    with pytest.raises(TypeError, match="callable"):
        saved_tensor_bytes(3)


def test_prior_cache_hits_misses_and_eviction():
    cache = PriorCache(maxsize=2)
    calls = []

    def make(tag):
        def train():
            calls.append(tag)
            return nn.Linear(1, 1)
        return train

    a = cache.get_or_train({"steps": 1}, 0, make("a"))
    assert cache.get_or_train({"steps": 1}, 0, make("a2")) is a
    b = cache.get_or_train({"steps": 1}, 1, make("b"))  # another seed: another prior
    assert b is not a
    cache.get_or_train({"steps": 2}, 0, make("c"))  # evicts the least recently used ({"steps":1}, 0)
    assert ({"steps": 1}, 0) not in cache and ({"steps": 1}, 1) in cache
    assert calls == ["a", "b", "c"] and cache.hits == 1 and cache.misses == 3
    with pytest.raises(TypeError, match="JSON"):
        cache.get_or_train({"f": object()}, 0, make("d"))
    with pytest.raises(TypeError, match="nn.Module"):
        cache.get_or_train({"x": 1}, 0, lambda: 3)
    with pytest.raises(ValueError):
        PriorCache(0)

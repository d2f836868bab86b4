"""Memory that autograd keeps for the backward pass, measured with
``torch.autograd.graph.saved_tensors_hooks`` (deterministic on any device, unlike peak allocator
statistics), plus the process's peak RSS as a coarse secondary number.

Used by ms_flow (D-Flow backpropagates through every solver step; multiple shooting does not) and
by any paper that claims a memory saving of a solver or a training loop.
"""

from __future__ import annotations

import resource
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor


@dataclass(frozen=True)
class SavedTensorStats:
    """What :func:`saved_tensor_bytes` measured.

    Attributes
    ----------
    peak_bytes : int
        The largest number of bytes held at once by tensors saved for backward (each distinct
        storage counted once while at least one saved reference to it is alive). This is the
        activation memory a method needs; it is the number to compare across solvers.
    total_bytes : int
        Bytes of every save, summed over the call (a tensor saved twice counts twice).
    n_saved : int
        Number of pack-hook calls.
    result : Any
        What ``fn`` returned.
    peak_rss_delta_kb : int
        Growth of the process's peak resident set size during the call (``getrusage``;
        kilobytes on Linux). Coarse: 0 unless the call pushed the process to a new peak.
    """

    peak_bytes: int
    total_bytes: int
    n_saved: int
    result: Any = None
    peak_rss_delta_kb: int = 0


def _rss_kb() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r // 1024) if sys.platform == "darwin" else int(r)  # macOS reports bytes


class _Tracker:
    def __init__(self) -> None:
        self.live: dict[tuple[int, int], list[int]] = {}  # storage key -> [refcount, nbytes]
        self.current = 0
        self.peak = 0
        self.total = 0
        self.n = 0

    def pack(self, t: Tensor) -> _Handle:
        nbytes = t.untyped_storage().nbytes() if t.layout == torch.strided else t.element_size() * t.numel()
        key = (t.untyped_storage().data_ptr(), t.device.index or 0) if t.layout == torch.strided else (id(t), -1)
        self.total += t.element_size() * t.numel()
        self.n += 1
        entry = self.live.get(key)
        if entry is None:
            self.live[key] = [1, nbytes]
            self.current += nbytes
            self.peak = max(self.peak, self.current)
        else:
            entry[0] += 1
        return _Handle(t, key, self)

    def release(self, key) -> None:
        entry = self.live.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] == 0:
            self.current -= entry[1]
            del self.live[key]


class _Handle:
    __slots__ = ("tensor", "key", "tracker")

    def __init__(self, tensor: Tensor, key, tracker: _Tracker) -> None:
        self.tensor, self.key, self.tracker = tensor, key, tracker

    def __del__(self) -> None:
        self.tracker.release(self.key)


def saved_tensor_bytes(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> SavedTensorStats:
    """Run ``fn(*args, **kwargs)`` and measure the tensors autograd saves for backward.

    Every tensor that autograd packs inside the call (in the forward pass, and in any backward
    pass ``fn`` runs itself) is counted while its saved reference is alive, so
    ``peak_bytes`` is the activation memory of the call: it grows linearly with the number of
    solver steps when one backpropagates through an unrolled ODE solve, and stays flat for the
    adjoint method or a Jacobian-free update. Storages are counted once (views and repeated
    saves of one tensor share a storage), at their full storage size.

    Parameters
    ----------
    fn : callable
        The work to measure, e.g. ``lambda: loss(z).backward()``. Call ``backward`` inside ``fn``
        so that the graph (and its saved tensors) is freed before the call returns.

    Returns
    -------
    SavedTensorStats

    Examples
    --------
    >>> x = torch.randn(10, requires_grad=True)
    >>> saved_tensor_bytes(lambda: torch.sin(torch.sin(x)).sum().backward()).peak_bytes
    80
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    tracker = _Tracker()

    def unpack(h: _Handle) -> Tensor:
        return h.tensor

    rss0 = _rss_kb()
    with torch.autograd.graph.saved_tensors_hooks(tracker.pack, unpack):
        result = fn(*args, **kwargs)
    return SavedTensorStats(peak_bytes=int(tracker.peak), total_bytes=int(tracker.total),
                            n_saved=int(tracker.n), result=result,
                            peak_rss_delta_kb=max(0, _rss_kb() - rss0))

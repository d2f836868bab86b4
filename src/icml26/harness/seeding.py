"""Seed every random number generator a paper may touch (python, numpy, torch); limit threads."""

from __future__ import annotations

import contextlib
import importlib.util
import random
from collections.abc import Iterator

import numpy as np


def seed_everything(seed: int) -> None:
    """Seed python's ``random``, numpy's legacy global RNG and torch (if installed).

    Experiments should still draw from explicit generators (``np.random.default_rng(seed)``,
    ``torch.Generator().manual_seed(seed)``); this guards code that uses the global ones.
    """
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)  # noqa: NPY002 - legacy global RNG, seeded on purpose
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.manual_seed(int(seed))


def torch_generator(seed: int, device: str = "cpu"):
    """A seeded ``torch.Generator``."""
    import torch

    return torch.Generator(device=device).manual_seed(int(seed))


@contextlib.contextmanager
def limit_torch_threads(n: int | None) -> Iterator[None]:
    """Run a block with ``torch.set_num_threads(n)`` and restore the previous value after.

    ``None`` leaves torch alone. For the laptop-scale models here one intra-op thread is as fast
    as two and avoids oversubscription when processes share the 2 cores.
    """
    if n is None or importlib.util.find_spec("torch") is None:
        yield
        return
    if n < 1:
        raise ValueError(f"torch_threads must be >= 1 or None, got {n}")
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@contextlib.contextmanager
def default_torch_device(device: str) -> Iterator[None]:
    """Run a block with ``torch.set_default_device(device)`` (restored after); ``cpu`` is a no-op.

    This is how ``--device cuda`` reaches every training loop without changing its code: tensors
    and modules created inside the block without an explicit device land on ``device``. Numbers
    change on a GPU (other kernels), the code does not.
    """
    if device == "cpu":
        yield
        return
    import torch

    previous = torch.get_default_device()
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(previous)

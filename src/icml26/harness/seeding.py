"""Seed every random number generator a paper may touch (python, numpy, torch)."""

from __future__ import annotations

import importlib.util
import random

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

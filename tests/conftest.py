"""Test-wide fixtures: every test starts from seeded RNGs and torch limited to 2 threads."""

from __future__ import annotations

import importlib.util

import pytest

from icml26.harness.seeding import seed_everything


@pytest.fixture(autouse=True)
def _seeded():
    seed_everything(0)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(2)
    yield

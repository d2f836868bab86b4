"""Test-wide fixtures: every test starts from seeded RNGs and torch on one intra-op thread.

One thread, not two: the models under test are tiny, and two threads measured 4-10x more CPU
time than one on a shared 2-core machine (thread synchronisation, no speed-up).
"""

from __future__ import annotations

import importlib.util

import pytest

from icml26.harness.seeding import seed_everything


@pytest.fixture(autouse=True)
def _seeded():
    seed_everything(0)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(1)
    yield

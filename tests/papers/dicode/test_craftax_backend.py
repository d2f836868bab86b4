"""The optional Craftax backend: a clear error without it, a tiny rollout where installed."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.papers.dicode.craftax_backend import CraftaxVecEnv, craftax_available


def test_clear_error_or_tiny_rollout():
    if not craftax_available():
        with pytest.raises(ImportError, match="pip install craftax jax"):
            CraftaxVecEnv(2)
        return
    env = CraftaxVecEnv(2, name="Craftax-Classic-Symbolic-v1")
    obs = env.reset()
    for _ in range(3):
        obs, r, d, _ = env.step(np.zeros(2, np.int64))
    assert obs.shape == (2, env.obs_dim) and r.shape == (2,)

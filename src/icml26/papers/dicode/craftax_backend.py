"""Optional Craftax backend (``pip install craftax jax``): the original Craftax game behind the
batched :class:`~icml26.core.rl.ppo.VecEnv` protocol, so the same PPO and evaluation code runs on
it (e.g. on a GPU). Only the *original game* is wrapped: Craftax levels as code would need a
world builder over Craftax's ``EnvState`` (DiCode's ``WorldBuilder``), which is not implemented
here. Importing this module does not import jax; :func:`craftax_available` checks for it.

Measured on the 2-core CPU machine (brief §5.1): 0.1-6k steps/s and 6-45 s of JIT per program,
which is why MicroCraft is the default.
"""

from __future__ import annotations

import importlib.util

import numpy as np


def craftax_available() -> bool:
    return importlib.util.find_spec("craftax") is not None and importlib.util.find_spec("jax") is not None


class CraftaxVecEnv:
    """``num_envs`` Craftax worlds (``Craftax-Symbolic-v1`` by default) with auto-reset."""

    def __init__(self, num_envs: int, seed: int = 0, name: str = "Craftax-Symbolic-v1") -> None:
        if not craftax_available():
            raise ImportError("the Craftax backend needs the optional packages craftax and jax "
                              "(pip install craftax jax)")
        import jax
        from craftax.craftax_env import make_craftax_env_from_name

        self._jax = jax
        self.env = make_craftax_env_from_name(name, auto_reset=True)
        self.params = self.env.default_params
        self.num_envs = int(num_envs)
        self.num_actions = int(self.env.action_space(self.params).n)
        self.key = jax.random.PRNGKey(seed)
        self._reset = jax.jit(jax.vmap(self.env.reset, in_axes=(0, None)))
        self._step = jax.jit(jax.vmap(self.env.step, in_axes=(0, 0, 0, None)))
        self.state = None
        self.ret = np.zeros(self.num_envs, np.float32)
        obs = self.reset()
        self.obs_dim = int(obs.shape[1])

    def _keys(self):
        self.key, sub = self._jax.random.split(self.key)
        return self._jax.random.split(sub, self.num_envs)

    def reset(self) -> np.ndarray:
        obs, self.state = self._reset(self._keys(), self.params)
        self.ret[:] = 0
        return np.asarray(obs, dtype=np.float32).reshape(self.num_envs, -1)

    def step(self, actions: np.ndarray):
        obs, self.state, r, d, _ = self._step(self._keys(), self.state,
                                              self._jax.numpy.asarray(actions), self.params)
        r, d = np.asarray(r, np.float32), np.asarray(d, bool)
        self.ret += r
        info = {}
        if d.any():
            info = {"return": self.ret[d].copy(), "slot": np.flatnonzero(d)}
            self.ret[d] = 0
        return np.asarray(obs, np.float32).reshape(self.num_envs, -1), r, d, info

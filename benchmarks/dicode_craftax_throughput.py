"""Throughput of DiCode's Craftax-Classic backend on the CPU (needs ``pip install "icml26[craftax]"``).

Three numbers, each after its JIT warm-up (reported separately as ``jit_s``):

- ``classic_env``: the original Craftax-Classic game alone (``CraftaxVecEnv``, one jitted, vmapped
  step with auto-reset), uniformly random actions.
- ``ppo_classic_original``: the same PPO (``core.rl.ppo``, MLP ``--hidden``) rollout + update on
  the original Classic game (``CraftaxVecEnv``).
- ``ppo_classic_levels``: the same PPO on ``ClassicLevelEnv`` with DiCode's seed levels and
  dreamed children (level programs on the real game; resets build worlds in Python).

Rates are environment steps per wall-clock second on this machine (jax picks its own CPU
threads; the committed JSON was measured on one core, see its ``run`` record). A curriculum run on Craftax-Classic is meant for a GPU; this script is the CPU record.

Usage: ``python benchmarks/dicode_craftax_throughput.py [--num-envs 16] [--num-steps 16]
[--updates 4] [--out dicode_craftax_throughput.json]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np


def classic_env(num_envs: int, steps: int) -> dict:
    from icml26.papers.dicode.craftax_backend import CraftaxVecEnv

    t0 = time.perf_counter()
    env = CraftaxVecEnv(num_envs, seed=0, name="Craftax-Classic-Symbolic-v1")
    rng = np.random.default_rng(0)
    env.step(rng.integers(0, env.num_actions, num_envs))
    jit = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(steps):
        env.step(rng.integers(0, env.num_actions, num_envs))
    dt = time.perf_counter() - t0
    return {"num_envs": num_envs, "steps": steps, "jit_s": round(jit, 2),
            "env_steps_per_s": round(num_envs * steps / dt, 1)}


def ppo_rate(env, num_steps: int, hidden: int, updates: int, jit: float) -> dict:
    from icml26.core.rl.ppo import PPO, PPOConfig

    ppo = PPO(PPOConfig(num_steps=num_steps, hidden=hidden, epochs=3, minibatches=2),
              env.obs_dim, env.num_actions, seed=0)
    obs = env.reset()
    t0 = time.perf_counter()
    batch = ppo.rollout(env, obs)  # warm-up: the step's and the observation's JIT
    ppo.update(batch)
    jit += time.perf_counter() - t0
    obs = batch["next_obs"]
    t0 = time.perf_counter()
    episodes = 0
    for _ in range(updates):
        batch = ppo.rollout(env, obs)
        obs = batch["next_obs"]
        ppo.update(batch)
        episodes += sum(len(i["slot"]) for i in batch["infos"] if i)
    dt = time.perf_counter() - t0
    return {"num_envs": env.num_envs, "num_steps": num_steps, "updates": updates,
            "hidden": hidden, "jit_s": round(jit, 2), "episodes_ended": episodes,
            "env_steps_per_s": round(env.num_envs * num_steps * updates / dt, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--num-envs", type=int, default=16)
    ap.add_argument("--num-steps", type=int, default=16)
    ap.add_argument("--updates", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--env-steps", type=int, default=200)
    ap.add_argument("--out", default=str(Path(__file__).with_name("dicode_craftax_throughput.json")))
    args = ap.parse_args()

    import craftax
    import jax
    import torch

    torch.set_num_threads(1)
    from icml26.papers.dicode.craftax_backend import ClassicLevelEnv, CraftaxVecEnv
    from icml26.papers.dicode.generators import Feedback, ProgrammaticDreamer, seed_levels

    out = {"machine": f"{platform.processor() or platform.machine()}, CPU only",
           "versions": {"craftax": getattr(craftax, "__version__", "1.6.1"),
                        "jax": jax.__version__, "torch": torch.__version__},
           "classic_env": classic_env(64, args.env_steps)}
    print(out["classic_env"], flush=True)
    t0 = time.perf_counter()
    env = CraftaxVecEnv(args.num_envs, seed=1, name="Craftax-Classic-Symbolic-v1")
    out["ppo_classic_original"] = ppo_rate(env, args.num_steps, args.hidden, args.updates,
                                           time.perf_counter() - t0)
    print(out["ppo_classic_original"], flush=True)
    seeds = seed_levels()
    dreamer = ProgrammaticDreamer(0)
    levels = [None, *seeds, *(dreamer.propose(s, Feedback(sr=0.9))[0] for s in seeds)]
    slots = np.arange(args.num_envs) % len(levels)
    t0 = time.perf_counter()
    env = ClassicLevelEnv(levels, args.num_envs, slot_levels=slots, seed=0, bonus=5.0)
    out["ppo_classic_levels"] = ppo_rate(env, args.num_steps, args.hidden, args.updates,
                                         time.perf_counter() - t0)
    out["ppo_classic_levels"]["levels"] = len(levels)
    print(out["ppo_classic_levels"], flush=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()

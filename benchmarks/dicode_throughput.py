"""Throughput of the MicroCraft environment (``icml26.papers.dicode.MicroCraftEnv``), one core.

Steps ``num_envs`` original-game worlds with uniformly random actions (auto-reset included) for
``--steps`` batched steps per size and records environment steps per second; also the end-to-end
rate of PPO (rollout + update, MLP 64) at the quick profile's sizes. Target (issue 35): >= 30,000
env steps/s on one core for the environment alone.

Usage: ``python benchmarks/dicode_throughput.py [--sizes 64 128 256 512] [--steps 500]
[--out dicode_throughput.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402


def env_rate(num_envs: int, steps: int, size: int) -> dict:
    from icml26.papers.dicode import MicroCraftEnv, OriginalLevel, make_bank

    bank = make_bank(OriginalLevel(), 64, 0, size)
    env = MicroCraftEnv([bank], num_envs, seed=0)
    env.assign(np.zeros(num_envs, np.int64))
    rng = np.random.default_rng(0)
    actions = rng.integers(env.num_actions, size=(steps, num_envs))
    t, c = time.perf_counter(), time.process_time()
    episodes = 0
    for a in actions:
        _, _, d, _ = env.step(a)
        episodes += int(d.sum())
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    n = steps * num_envs
    return {"num_envs": num_envs, "env_steps": n, "wall_s": wall, "cpu_s": cpu,
            "steps_per_s": n / wall, "steps_per_cpu_s": n / cpu, "episodes": episodes}


def ppo_rate(updates: int, size: int) -> dict:
    import torch

    torch.set_num_threads(1)
    from icml26.core.rl.ppo import PPO, PPOConfig
    from icml26.papers.dicode import MicroCraftEnv, OriginalLevel, make_bank

    cfg = PPOConfig(num_steps=16, hidden=64, epochs=3, minibatches=2, lr=1e-3)
    env = MicroCraftEnv([make_bank(OriginalLevel(), 64, 0, size)], 128, seed=0)
    obs = env.assign(np.zeros(128, np.int64))
    agent = PPO(cfg, env.obs_dim, env.num_actions, seed=0, total_updates=updates)
    t, c = time.perf_counter(), time.process_time()
    for _ in range(updates):
        batch = agent.rollout(env, obs)
        obs = batch["next_obs"]
        agent.update(batch)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    n = updates * cfg.num_steps * 128
    return {"env_steps": n, "wall_s": wall, "cpu_s": cpu, "steps_per_s": n / wall,
            "steps_per_cpu_s": n / cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--world", type=int, default=12)
    ap.add_argument("--ppo-updates", type=int, default=20)
    ap.add_argument("--out", default="dicode_throughput.json")
    args = ap.parse_args()
    rows = [env_rate(n, args.steps, args.world) for n in args.sizes]
    for r in rows:
        print(json.dumps(r))
    ppo = ppo_rate(args.ppo_updates, args.world)
    best = max(r["steps_per_cpu_s"] for r in rows)
    out = {"benchmark": "MicroCraft env throughput (random actions, auto-reset, 1 thread)",
           "world_size": args.world, "target_steps_per_s": 30_000, "rows": rows,
           "best_steps_per_cpu_s": best, "meets_target": best >= 30_000, "ppo_end_to_end": ppo}
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

"""Throughput of the SyVLA substrate (CPU, one thread): Tabletop2D environment steps/s at batch 64 (target
>= 5k, brief §5.3) with the scripted expert excluded and included, and policy actions/s (think once per
episode + one VLM intent pass and 10 Euler flow steps per action chunk of 4, batched over 64 envs).

Policy numbers are for the default object tokens; ``patch_tokens`` repeats them with 8x8 patch tokens.

Prints and writes JSON. Usage: ``python benchmarks/syvla_throughput.py [--threads 1] [--out bench.json]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from icml26.papers.syvla import ScriptedExpert, SyVLAPolicy, Tabletop2DEnv


def env_steps_per_s(batch: int = 64, steps: int = 400) -> dict:
    env = Tabletop2DEnv(batch, "id", 0)
    env.reset()
    rng = np.random.default_rng(0)
    acts = rng.uniform(-1, 1, size=(steps, batch, 3))
    n, wall, cpu = 0, 0.0, 0.0
    for a in acts:
        if env.done.all():
            env.reset()
        w0, c0 = time.perf_counter(), time.process_time()
        env.step(a)
        wall += time.perf_counter() - w0
        cpu += time.process_time() - c0
        n += batch
    ex = ScriptedExpert(0.1, 0)
    env.reset()
    c0, m = time.process_time(), 0
    for _ in range(steps // 4):
        if env.done.all():
            env.reset()
        env.step(ex.act(env))
        m += batch
    return {"batch": batch, "env_steps_per_s": n / wall, "env_steps_per_cpu_s": n / cpu,
            "env_plus_expert_steps_per_cpu_s": m / (time.process_time() - c0)}


def policy_actions_per_s(batch: int = 64, reps: int = 5, vision: str = "objects") -> dict:
    torch.manual_seed(0)
    pol = SyVLAPolicy(vision=vision)
    env = Tabletop2DEnv(batch, "id", 0)
    obs, _ = env.reset()
    r = pol.think(obs["image"], obs["instruction"])
    c0 = time.process_time()
    for _ in range(reps):
        chunk = pol.act(obs, r)
    dt = (time.process_time() - c0) / reps
    c0 = time.process_time()
    pol.think(obs["image"], obs["instruction"])
    think = time.process_time() - c0
    return {"params": sum(p.numel() for p in pol.parameters()), "chunk": int(chunk.shape[1]),
            "actions_per_cpu_s": batch * chunk.shape[1] / dt, "chunks_per_cpu_s": batch / dt,
            "think_s_per_batch": think}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    res = {"threads": args.threads, **env_steps_per_s(), **policy_actions_per_s(),
           "patch_tokens": policy_actions_per_s(vision="patches")}  # the original 8x8 patch tokeniser
    print(json.dumps(res, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()

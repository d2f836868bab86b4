"""Throughput of iterative_rmft's rollouts on one CPU thread.

* batched environment: Bernoulli arm pulls/s of ``core.rl.BanditBatch.step`` (the target is
  >= 1 M pulls/s on one core), at several batch sizes, actions drawn beforehand;
* numerical track: decisions/s of a full rollout of the decision transformer (KV cache);
* text track: generated tokens/s (and arm pulls/s) of a text rollout of the tiny char LM behind
  ``TinyLMChat`` (parsing, regret accounting and prompt rendering included).

Times are best-of-``--repeat`` CPU seconds (``time.process_time``). Writes JSON
(``--out``, default ``benchmarks/iterative_rmft_throughput.json``) and, with ``--readme``, the
rendered line between ``<!-- bench:start -->`` and ``<!-- bench:end -->`` of the paper README
(:func:`render`; a test compares the README with the committed JSON).

Usage: ``PYTHONPATH=src python benchmarks/iterative_rmft_throughput.py [--quick] [--readme]``.
Not a test.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from icml26.core.rl import BanditBatch, sample_bandits
from icml26.papers.iterative_rmft import NumericalDecisionTransformer, rollout
from icml26.papers.iterative_rmft.text import make_text_agent, text_rollout

ROOT = Path(__file__).resolve().parents[1]
JSON_PATH = ROOT / "benchmarks" / "iterative_rmft_throughput.json"
README = ROOT / "src" / "icml26" / "papers" / "iterative_rmft" / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def bench_env(batch: int, k: int = 5, horizon: int = 100, repeat: int = 3) -> dict:
    rng = np.random.default_rng(0)
    env = BanditBatch(rng.random((batch, k)), horizon, seed=1)
    actions = rng.integers(k, size=(horizon, batch))

    def play():
        env.reset(2)
        for t in range(horizon):
            env.step(actions[t])

    s = best(play, repeat)
    return {"batch": batch, "k": k, "horizon": horizon, "cpu_s": s, "pulls_per_s": batch * horizon / s}


def bench_numerical(batch: int = 2048, horizon: int = 25, repeat: int = 2) -> dict:
    torch.manual_seed(0)
    model = NumericalDecisionTransformer(k_max=10, d_model=32, n_layers=2, n_heads=2)
    env = sample_bandits(batch, 5, horizon, seed=0)
    s = best(lambda: rollout(model, env, seed=0), repeat)
    return {"batch": batch, "horizon": horizon, "cpu_s": s, "decisions_per_s": batch * horizon / s}


def bench_text(batch: int = 128, horizon: int = 10, repeat: int = 2) -> dict:
    chat = make_text_agent(3, horizon, seed=0)
    env = sample_bandits(batch, 3, horizon, seed=0)
    out = {}

    def play():
        out["traj"] = text_rollout(chat, env, seed=0)

    s = best(play, repeat)
    tokens = out["traj"].tokens
    return {"batch": batch, "horizon": horizon, "params": chat.model.num_parameters(), "cpu_s": s,
            "tokens": tokens, "tokens_per_s": tokens / s, "pulls_per_s": batch * horizon / s}


def render(res: dict) -> str:
    """The README line, from the JSON alone."""
    env = max(res["env"], key=lambda r: r["pulls_per_s"])
    small = min(res["env"], key=lambda r: r["batch"])
    num, txt = res["numerical"], res["text"]
    return (f"One CPU thread (torch {res['torch']}): the batched Bernoulli environment runs "
            f"{env['pulls_per_s'] / 1e6:.1f} M arm pulls/s at batch {env['batch']:,} "
            f"({small['pulls_per_s'] / 1e6:.2f} M/s at batch {small['batch']:,}); a numerical-track "
            f"rollout makes {num['decisions_per_s'] / 1e3:.0f} k decisions/s (batch {num['batch']:,}); "
            f"a text-track rollout generates {txt['tokens_per_s'] / 1e3:.1f} k tokens/s "
            f"({txt['pulls_per_s']:.0f} arm pulls/s, batch {txt['batch']}).")


def write_readme(res: dict, path: Path = README) -> None:
    text = path.read_text()
    i, j = text.index(START), text.index(END)
    path.write_text(text[:i + len(START)] + "\n" + render(res) + "\n" + text[j:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(JSON_PATH))
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke check)")
    ap.add_argument("--readme", action="store_true", help="render the README line from the JSON")
    args = ap.parse_args()
    torch.set_num_threads(1)
    batches = (1024, 16384) if args.quick else (1024, 16384, 131072)
    res = {"torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version(),
           "threads": 1, "env": [bench_env(b) for b in batches],
           "numerical": bench_numerical(batch=256 if args.quick else 2048),
           "text": bench_text(batch=32 if args.quick else 128)}
    print(json.dumps(res, indent=1))
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    if args.readme:
        write_readme(res)
    print(render(res))


if __name__ == "__main__":
    main()

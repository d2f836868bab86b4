"""Optimizer step time: ECOAdamW (FP8 / INT4 weights) vs torch.optim.AdamW on the same tiny LM.

Run: ``python benchmarks/eco_step_time.py [--steps 50] [--n-embd 128] [--out eco_bench.json]``.
Prints a JSON object with the median step time (ms) of each optimizer; the forward/backward pass
is excluded (gradients are computed once and reused). Not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.quant import QuantSpec
from icml26.papers.eco import (
    ECOAdamW,
    MasterWeightOptimizer,
    eco_param_groups,
    linear_weight_names,
)


def _time(opt, steps: int) -> float:
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = LMConfig(vocab_size=96, block_size=128, n_layer=args.n_layer, n_embd=args.n_embd, n_head=4)
    results = {"n_params": None, "step_ms": {}}
    fp8 = QuantSpec("fp8_e4m3", "channel", scale_kind="e8m0")
    int4 = QuantSpec("int4", "group", group_size=32)
    makers = {
        "torch_adamw": lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3),
        "torch_adamw_foreach": lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3, foreach=True),
        "master_weight_fp8": lambda m: MasterWeightOptimizer(
            torch.optim.AdamW(m.parameters(), lr=1e-3),
            [p for n, p in m.named_parameters() if n in set(linear_weight_names(m))], fp8),
        "eco_adamw_fp8_sr": lambda m: ECOAdamW(eco_param_groups(m, fp8), lr=1e-3),
        "eco_adamw_fp8_rtn": lambda m: ECOAdamW(eco_param_groups(m, fp8), lr=1e-3, rounding="nearest"),
        "eco_adamw_int4_sr": lambda m: ECOAdamW(eco_param_groups(m, int4), lr=1e-3),
    }
    for name, make in makers.items():
        torch.manual_seed(0)
        model = TinyCausalLM(cfg)
        results["n_params"] = model.num_parameters()
        opt = make(model)
        x = torch.randint(0, 96, (8, 128))
        logits, _ = model(x)
        logits.float().pow(2).mean().backward()
        opt.step()  # warm-up (state allocation)
        results["step_ms"][name] = round(_time(opt, args.steps), 3)
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()

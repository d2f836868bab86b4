"""Memory and time per iteration vs solver steps: MS-Flow (Jacobian-free and one-segment VJP)
against D-Flow (backprop through the unrolled solver) and D-Flow with the adjoint method.

Memory = peak bytes saved for backward (``icml26.core.flows.saved_tensor_bytes``, deterministic)
plus the process's peak-RSS growth (coarse). One iteration = one objective+gradient evaluation
(D-Flow) or one sweep + data step (MS-Flow, initial trajectory excluded from the time).
Prints JSON (and writes it with ``--out``); includes the least-squares slope of bytes vs N with
its 95% interval. Targets (issue 26): MS-Flow's slope within noise of 0 from 8 to 128 steps, and
its wall time per iteration within 1.5x of one D-Flow iteration at the same N.

Run: ``PYTHONPATH=src python benchmarks/ms_flow_memory.py [--batch 16] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch
from scipy import stats as sps

from icml26.core.flows import MLPVelocity, integrate, saved_tensor_bytes
from icml26.papers.ms_flow import (
    DFlowConfig,
    MSFlowConfig,
    d_flow_objective,
    make_operator,
    ms_flow,
)


def slope_ci(xs, ys):
    ys = np.asarray(ys, float)
    if np.all(ys == ys[0]):
        return 0.0, 0.0
    r = sps.linregress(np.asarray(xs, float), ys)
    return float(r.slope), float(sps.t.ppf(0.975, len(xs) - 2) * r.stderr)


def main(steps=(8, 16, 32, 64, 128), batch: int = 16, K: int = 4, repeats: int = 5, hidden: int = 256):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = MLPVelocity(64, hidden=hidden, depth=3).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    op = make_operator("inpaint_random", 0.05)
    x = torch.rand(batch, 64) * 2 - 1
    y = op.measure(x, torch.Generator().manual_seed(0))
    z0 = torch.randn(batch, 64, generator=torch.Generator().manual_seed(1))

    def dflow(N, adjoint):
        def fn():
            z = z0.clone().requires_grad_(True)
            d_flow_objective(model, op, y, z, DFlowConfig(n_steps=N, adjoint=adjoint)).sum().backward()
        return fn

    def msf(N, jac):
        cfg = MSFlowConfig(K=K, n_steps=N, n_outer=1, init="ode", jacobian=jac)
        return lambda: ms_flow(model, op, y, cfg)

    def best(fn):
        fn()
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    arms = {"d_flow": lambda N: dflow(N, False), "d_flow_adjoint": lambda N: dflow(N, True),
            "ms_flow": lambda N: msf(N, "free"), "ms_flow_vjp": lambda N: msf(N, "vjp")}
    rows = []
    for arm, make in arms.items():
        for N in steps:
            fn = make(N)
            s = saved_tensor_bytes(fn)
            sec = best(fn)
            if arm.startswith("ms_flow"):  # remove the initial trajectory and the fresh solve
                sec -= best(lambda N=N: (integrate(model, z0, steps=N), integrate(model, z0, steps=N)))
            rows.append({"arm": arm, "steps": N, "peak_saved_bytes": s.peak_bytes,
                         "total_saved_bytes": s.total_bytes, "peak_rss_delta_kb": s.peak_rss_delta_kb,
                         "seconds_per_iteration": max(sec, 0.0)})
    summary = {}
    for arm in arms:
        rs = [r for r in rows if r["arm"] == arm]
        slope, half = slope_ci([r["steps"] for r in rs], [r["peak_saved_bytes"] for r in rs])
        summary[arm] = {"bytes_per_step": slope, "bytes_per_step_ci95": half}
    for arm in arms:
        for N in steps:
            a = next(r for r in rows if r["arm"] == arm and r["steps"] == N)
            d = next(r for r in rows if r["arm"] == "d_flow" and r["steps"] == N)
            a["time_vs_dflow"] = a["seconds_per_iteration"] / d["seconds_per_iteration"]
    return {"batch": batch, "K": K, "hidden": hidden, "rows": rows, "slopes": summary}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    res = main(batch=a.batch, repeats=a.repeats)
    text = json.dumps(res, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)

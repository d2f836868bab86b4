"""Sampler throughput: icml26.core.flows.integrate (+ SSC hook) vs a bare Euler loop on the same net.

Optional anchors (only if installed; never required): flow_matching's ODESolver, torchdiffeq.
Prints a JSON list of {impl, nfe, samples_per_s}. Run: python benchmarks/velocity_deficit_sampler.py
"""

from __future__ import annotations

import importlib.util
import json
import time

import torch

from icml26.core.flows import MLPVelocity, integrate
from icml26.papers.velocity_deficit import ScaleScheduleCorrector


def bare_euler(model, x, steps, gain=None):
    with torch.no_grad():
        for k in range(steps):
            t = torch.full((x.shape[0],), k / steps)
            v = model(x, t)
            if gain is not None:
                v = v * gain(k / steps)
            x = x + v / steps
    return x


def timeit(fn, repeat=5):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(n: int = 2000, dim: int = 64, steps: int = 10) -> list[dict]:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = MLPVelocity(dim, hidden=256, depth=3).eval()
    x0 = torch.randn(n, dim)
    ssc = ScaleScheduleCorrector(0.2, 2.0)
    rows = []
    cases = {
        "bare_euler": lambda: bare_euler(model, x0, steps),
        "bare_euler_ssc": lambda: bare_euler(model, x0, steps, lambda t: 1 + 0.2 * (1 - t) ** 2),
        "icml26_euler": lambda: integrate(model, x0, steps=steps),
        "icml26_euler_ssc": lambda: integrate(model, x0, steps=steps, velocity_transform=ssc),
    }
    if importlib.util.find_spec("flow_matching") is not None:  # optional anchor
        from flow_matching.solver import ODESolver

        class Wrapped(torch.nn.Module):
            def forward(self, x, t, **extras):
                return model(x, t.expand(x.shape[0]))

        solver = ODESolver(velocity_model=Wrapped())
        cases["flow_matching_euler"] = lambda: solver.sample(x_init=x0, step_size=1 / steps, method="euler")
    for name, fn in cases.items():
        s = timeit(fn)
        rows.append({"impl": name, "nfe": steps, "n": n, "samples_per_s": n / s})
    return rows


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))

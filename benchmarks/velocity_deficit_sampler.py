"""Sampler overhead: icml26.core.flows.integrate (+ SSC hook) vs a bare loop and flow_matching's ODESolver.

Two fields: a real net (MLPVelocity 64-d, 3x256, the digits flow's size) and a cheap analytic field
(the exact field of N(0, s^2 I), a few flops per entry), where per-evaluation overhead shows most.
Per case: best-of-``repeat`` wall time, samples/s, the ratio to the bare loop of the same method,
and the max |difference| of the final state from the bare loop's (same maths, so ~1e-7 in float32).

``integrate`` checks NaN/inf once per solve by default (``check_steps=True`` checks every
evaluation); both are timed. ``flow_matching`` (facebookresearch, PyPI ``flow_matching``) is timed
when it is installed (``pip install "torch==2.13.0" flow_matching``); it is a benchmark anchor only,
never a dependency of icml26.

Run: ``python benchmarks/velocity_deficit_sampler.py [--out benchmarks/velocity_deficit_sampler.json]``.
Not a test.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import time

import torch

from icml26.core.flows import MLPVelocity, integrate
from icml26.papers.velocity_deficit import ScaleScheduleCorrector


def bare(model, x, steps: int, method: str = "euler", gain=None):
    """The loop a practitioner would write: no checks, no hook objects."""
    h = 1.0 / steps

    def f(x, t):
        v = model(x, torch.full((x.shape[0],), t, dtype=x.dtype))
        return v if gain is None else v * gain(t)

    with torch.no_grad():
        for k in range(steps):
            t = k * h
            if method == "euler":
                x = x + h * f(x, t)
            else:  # midpoint
                x = x + h * f(x + 0.5 * h * f(x, t), t + 0.5 * h)
    return x


def best_time(fn, repeat: int) -> tuple[float, torch.Tensor]:
    out = fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def gaussian_field(s: float = 0.7):
    def field(x, t):
        tt = t.reshape(-1, *([1] * (x.dim() - 1)))
        return x * (-(1 - tt) + tt * s**2) / ((1 - tt) ** 2 + tt**2 * s**2)

    return field


def main(n: int = 2000, dim: int = 64, steps: int = 10, repeat: int = 7) -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    fields = {"mlp_3x256": MLPVelocity(dim, hidden=256, depth=3).eval(), "cheap_gaussian": gaussian_field()}
    x0 = torch.randn(n, dim)
    ssc = ScaleScheduleCorrector(0.2, 2.0)
    have_fm = importlib.util.find_spec("flow_matching") is not None
    rows = []
    for fname, model in fields.items():
        cases = {
            ("euler", "bare"): lambda m=model: bare(m, x0, steps),
            ("euler", "icml26"): lambda m=model: integrate(m, x0, steps=steps),
            ("euler", "icml26_check_steps"): lambda m=model: integrate(m, x0, steps=steps, check_steps=True),
            ("euler_ssc", "bare"): lambda m=model: bare(m, x0, steps, gain=lambda t: 1 + 0.2 * (1 - t) ** 2),
            ("euler_ssc", "icml26"): lambda m=model: integrate(m, x0, steps=steps, velocity_transform=ssc),
            ("midpoint", "bare"): lambda m=model: bare(m, x0, steps // 2, "midpoint"),
            ("midpoint", "icml26"): lambda m=model: integrate(m, x0, steps=steps // 2, method="midpoint"),
        }
        if have_fm:
            from flow_matching.solver import ODESolver
            from flow_matching.utils import ModelWrapper

            class Wrapped(ModelWrapper):
                def forward(self, x, t, **extras):
                    return self.model(x, t.reshape(()).expand(x.shape[0]).to(x.dtype))

            class Field(torch.nn.Module):  # ModelWrapper wants a module
                def __init__(self, f):
                    super().__init__()
                    self.f = f

                def forward(self, x, t):
                    return self.f(x, t)

            solver = ODESolver(velocity_model=Wrapped(model if isinstance(model, torch.nn.Module)
                                                      else Field(model)))
            cases[("euler", "flow_matching")] = lambda s=solver: s.sample(
                x_init=x0, step_size=1.0 / steps, method="euler")
            cases[("midpoint", "flow_matching")] = lambda s=solver: s.sample(
                x_init=x0, step_size=2.0 / steps, method="midpoint")
        base: dict[str, tuple[float, torch.Tensor]] = {}
        for (method, impl), fn in cases.items():
            sec, out = best_time(fn, repeat)
            if impl == "bare":
                base[method] = (sec, out)
            rows.append({"field": fname, "method": method, "impl": impl, "nfe": steps, "n": n,
                         "seconds": sec, "samples_per_s": n / sec,
                         "ratio_to_bare": sec / base[method][0],
                         "max_abs_diff_vs_bare": float((out - base[method][1]).abs().max())})
    return {"torch": torch.__version__, "python": platform.python_version(), "threads": 1,
            "flow_matching": _version("flow_matching") if have_fm else None, "rows": rows}


def _version(pkg: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(pkg)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    res = main(repeat=args.repeat)
    text = json.dumps(res, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")

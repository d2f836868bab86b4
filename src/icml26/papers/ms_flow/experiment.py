"""Reproduction of MS-Flow (arXiv:2602.08538) at laptop scale.

One flow prior per seed (an MLP on sklearn's 8x8 digits, trained in the run and cached per
config + seed by ``icml26.core.flows.cached_prior``) is shared by every arm and regime. Regimes
are operator x noise level. In each regime every solver arm gets the same NFE budget per image and
its knob tuned on validation digits with a grid of the same size (``harness.tuning.tune_arms``),
then is scored on test digits. A memory probe measures the bytes saved for backward by one
iteration of each solver at several discretisations N.

Arms
----
ms_flow            MS-Flow (K segments, Jacobian-free alternating updates, penalty continuation)
ms_flow_vjp        the same solver with the exact Jacobian (J_k^T r by a vector-Jacobian product
                   through one segment; 3x the NFE per sweep): converges to the MAP, where the
                   Jacobian-free scheme has a biased fixed point (issue 48)
ms_flow_k1         the same solver with K = 1: no intermediate shooting points (control of the
                   quality claims: the strongest arm without multiple shooting, same updates,
                   same continuation, same budget, same grid)
ms_flow_fixed_mu   MS-Flow with its penalty held at mu0 (ablation of the continuation)
ms_flow_nosweep    MS-Flow with the shooting-point sweep off (control of the stitching claim)
ms_flow_untrained  MS-Flow with an untrained net (control of the prior claim)
d_flow             D-Flow, LBFGS through the unrolled solver
d_flow_adjoint     D-Flow with the adjoint method (control of the memory claim: also flat)
pnp_flow, ot_ode, flow_dps   guidance / plug-and-play samplers
tikhonov           regularised least squares around the training mean image

Claims and rules are declared below, before any run.

Detectability and knobs (CLAIMS.md rules 8-10). The quality claims' effect is the smallest PSNR gap
that matters (``PSNR_EFFECT``, our choice: the paper's tables were not readable); their mde is the
per-regime paired rule's. The memory rule is deterministic (saved bytes), its mde the 5 % flatness
tolerance plus the slope's interval. Issue 48: 4x the NFE for every arm flipped deblur, so
``nfe_budget`` is a protocol knob (``PROTOCOL_KNOBS``), swept in ``full`` (every arm at the same
budget). No substrate gate: the run measures no prior-quality metric (``prior_matters`` compares the
trained prior with an untrained one instead).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from scipy import stats as sps

from icml26.core.flows import (
    MLPVelocity,
    cached_prior,
    digits,
    saved_tensor_bytes,
    tensor_sampler,
    train_flow,
)
from icml26.harness import (
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    ClaimArms,
    Decision,
    ExperimentConfig,
    SeedOutput,
    TuningSpec,
    all_of,
    paired_improvement,
    per_regime,
    threshold_rule,
    tune_arms,
)
from icml26.harness.pins import TRAINING_TOLERANCE
from icml26.harness.plots import pyplot, save_figure

from .metrics import psnr, ssim
from .operators import make_operator
from .solvers import (
    DFlowConfig,
    FlowDPSConfig,
    MSFlowConfig,
    OTODEConfig,
    PnPFlowConfig,
    TikhonovConfig,
    d_flow,
    d_flow_objective,
    flow_dps,
    ms_flow,
    ot_ode,
    pnp_flow,
    tikhonov,
)

SWEEP_ARMS = ("ms_flow", "ms_flow_vjp", "ms_flow_k1", "d_flow")
"""Arms re-tuned and re-scored at every budget of ``nfe_sweep`` (issue 48's budget sweep)."""
OBJ_LAM = 0.01
"""lam of the common objective D(T(z_0)) + lam R(z_0) reported beside PSNR for every latent arm
(D-Flow's default weight, the same for every arm whatever its tuned lam)."""

PSNR_EFFECT = 0.5
"""The smallest PSNR gap (dB) that matters for the quality claims (our choice, fixed before the run)."""

TUNED_ARMS = ("ms_flow", "ms_flow_vjp", "ms_flow_k1", "d_flow", "d_flow_adjoint", "pnp_flow", "ot_ode", "flow_dps",
              "tikhonov")



# float32 training: pinned smoke numbers carry the cross-CPU tolerance (harness.pins).
PIN_TOLERANCE = TRAINING_TOLERANCE

@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Settings (quick-profile values by default). Laptop-scale choices, not the paper's."""

    train_steps: int = 500
    hidden: int = 128
    depth: int = 3
    batch_size: int = 128
    lr: float = 2e-3
    tasks: tuple[str, ...] = ("inpaint_random", "inpaint_box", "sr_x2", "deblur")
    noises: tuple[float, ...] = (0.05, 0.01)
    n_val: int = 6
    n_test: int = 12
    n_steps: int = 8  # N, solver steps of the flow map
    K: int = 4  # MS-Flow segments
    nfe_budget: int = 160  # velocity evaluations per image, every solver arm
    grid_size: int = 4  # tuning grid size, every tuned arm
    memory_steps: tuple[int, ...] = (8, 16, 32, 64)
    memory_repeats: int = 2
    nfe_sweep: tuple[int, ...] = (640,)  # extra budgets (every SWEEP_ARMS arm re-tuned, same NFE)

    BOUNDS = {"train_steps": (1, None), "hidden": (8, None), "depth": (1, None), "n_val": (1, None),
              "n_test": (1, None), "n_steps": (1, None), "K": (1, None), "nfe_budget": (1, None),
              "grid_size": (2, 4), "noises": (0.0, 1.0), "memory_steps": (1, None),
              "memory_repeats": (1, None), "lr": (1e-6, 1.0), "batch_size": (1, None),
              "nfe_sweep": (1, None)}

    def extra_checks(self) -> None:
        if self.n_steps % self.K:
            self.out_of_range("K", f"a divisor of n_steps={self.n_steps}")
        if len(self.memory_steps) < 3:
            self.out_of_range("memory_steps", "at least 3 values (a slope with an interval)")
        if any(m % self.K for m in self.memory_steps):
            self.out_of_range("memory_steps", f"multiples of K={self.K}")
        from .operators import TASKS

        if not self.tasks or any(t not in TASKS for t in self.tasks):
            self.out_of_range("tasks", f"a non-empty subset of {TASKS}")
        if not any(t.startswith("inpaint") for t in self.tasks):
            self.out_of_range("tasks", "at least one inpainting task (prior claim)")

    @classmethod
    def smoke(cls) -> Config:
        return cls(seeds=(0,), train_steps=150, hidden=64, tasks=("inpaint_random", "sr_x2"),
                   noises=(0.05,), n_val=4, n_test=6, n_steps=8, K=4, nfe_budget=96, grid_size=2,
                   memory_steps=(8, 16, 32), memory_repeats=1, nfe_sweep=(192,))

    @classmethod
    def quick(cls) -> Config:
        return cls(seeds=(0, 1, 2))

    @classmethod
    def full(cls) -> Config:
        return cls(seeds=(0, 1, 2), train_steps=4000, hidden=256, depth=3, batch_size=256,
                   tasks=("inpaint_random", "inpaint_box", "sr_x2", "sr_x4", "deblur", "ct"),
                   n_val=16, n_test=64, n_steps=20, K=4, nfe_budget=800, nfe_sweep=(3200,),
                   memory_steps=(8, 16, 32, 64, 128), memory_repeats=5)


_ALL_SOLVER_ARMS = (*TUNED_ARMS, "ms_flow_fixed_mu", "ms_flow_untrained", "ms_flow_nosweep")
METRICS = {
    _ALL_SOLVER_ARMS: ("psnr|*", "ssim|*", "nfe|*", "data_resid|*", "objective|*", "seconds|*"),
    tuple(a for a in _ALL_SOLVER_ARMS if a.startswith("ms_flow")):
        ("stitch|*", "psnr_fresh|*", "fresh_gap|*"),
    SWEEP_ARMS: ("psnr@*", "nfe@*", "objective@*"),
    ("d_flow", "d_flow_adjoint", "ms_flow", "ms_flow_vjp"):
        ("mem_slope", "mem_slope_ci", "mem_bytes_max_n", "iter_seconds_max_n", "time_ratio_vs_dflow",
         "nfe_ratio_vs_dflow"),
}
"""What each arm writes (``icml26.harness.metrics``): ``|*`` per regime, ``@*`` per sweep budget."""

PROTOCOL_KNOBS = {"nfe_budget": (800, 3200)}
"""Verdict stability (CLAIMS.md rule 9; issue 48: 4x the NFE for every arm flipped deblur): the full
profile's budget and 4x it, every solver arm at the same budget (the 4x run costs about 4x the full
profile's solver time)."""


# ----------------------------------------------------------------------------------------------
# prior, data, tuning grids
# ----------------------------------------------------------------------------------------------


def prior_spec(c: Config) -> dict:
    return {"data": "sklearn_digits_split0", "net": "MLPVelocity", "hidden": c.hidden, "depth": c.depth,
            "steps": c.train_steps, "batch_size": c.batch_size, "lr": c.lr, "ema": 0.999}


def trained_prior(c: Config, seed: int) -> torch.nn.Module:
    """The seed's flow prior (trained once per config and seed, then cached in the process)."""

    def train():
        ds = digits(seed=0)
        torch.manual_seed(seed)
        net = MLPVelocity(64, hidden=c.hidden, depth=c.depth)
        return train_flow(net, tensor_sampler(ds["train"]), steps=c.train_steps, batch_size=c.batch_size,
                          lr=c.lr, ema=0.999, seed=seed).ema_model

    return cached_prior(prior_spec(c), seed, train)


def untrained_prior(c: Config, seed: int) -> torch.nn.Module:
    torch.manual_seed(10_000 + seed)
    return MLPVelocity(64, hidden=c.hidden, depth=c.depth).eval()


def _grids(c: Config) -> dict[str, list[dict]]:
    """Tuning grids, each of ``grid_size`` points (the first is the arm's default from its
    paper/benchmark config; guidance arms include their "off" setting, 0)."""
    g = c.grid_size
    ms = [{"step": 0.5, "init": "blend"}, {"step": 1.0, "init": "blend"}, {"step": 0.5, "init": "ode"},
          {"step": 1.0, "init": "ode"}]
    return {
        "ms_flow": ms[:g],
        "ms_flow_vjp": ms[:g],
        "ms_flow_k1": ms[:g],
        "d_flow": [{"lam": v} for v in (0.01, 0.0, 1.0, 100.0)][:g],
        "d_flow_adjoint": [{"lam": v} for v in (0.01, 0.0, 1.0, 100.0)][:g],
        "pnp_flow": [{"lr": v} for v in (1.0, 0.0, 0.5, 2.0)][:g],
        "ot_ode": [{"gamma": v} for v in (1.0, 0.0, 0.5, 2.0)][:g],
        "flow_dps": [{"zeta": v} for v in (1.0, 0.0, 0.5, 2.0)][:g],
        "tikhonov": [{"alpha": v} for v in (10.0, 1.0, 100.0, 1000.0)][:g],
    }


def _solver(arm: str, c: Config, seed: int, center: torch.Tensor, budget: int | None = None):
    """``(fn, config_builder(params) -> solver config)`` for a tuned arm (at ``budget`` NFE,
    default ``c.nfe_budget``)."""
    N, B = c.n_steps, budget or c.nfe_budget
    if arm in ("ms_flow", "ms_flow_k1", "ms_flow_vjp"):
        K = 1 if arm == "ms_flow_k1" else c.K
        jac = "vjp" if arm == "ms_flow_vjp" else "free"
        return ms_flow, lambda p: MSFlowConfig(K=K, n_steps=N, nfe_budget=B, seed=seed, jacobian=jac,
                                               **p)
    if arm in ("d_flow", "d_flow_adjoint"):
        return d_flow, lambda p: DFlowConfig(n_steps=N, nfe_budget=B, seed=seed,
                                              adjoint=arm == "d_flow_adjoint", **p)
    if arm == "pnp_flow":
        return pnp_flow, lambda p: PnPFlowConfig(nfe_budget=B, seed=seed, **p)
    if arm == "ot_ode":
        return ot_ode, lambda p: OTODEConfig(nfe_budget=B, seed=seed, **p)
    if arm == "flow_dps":
        return flow_dps, lambda p: FlowDPSConfig(nfe_budget=B, seed=seed, **p)
    if arm == "tikhonov":
        return tikhonov, lambda p: TikhonovConfig(center=center, **p)
    raise ValueError(arm)


# ----------------------------------------------------------------------------------------------
# memory probe
# ----------------------------------------------------------------------------------------------


def _slope(xs, ys) -> tuple[float, float]:
    """Least-squares slope and the half-width of its 95% t-interval."""
    ys = np.asarray(ys, float)
    if np.all(ys == ys[0]):
        return 0.0, 0.0  # constant: linregress reports a nan standard error
    res = sps.linregress(np.asarray(xs, float), ys)
    half = float(sps.t.ppf(0.975, len(xs) - 2) * res.stderr) if len(xs) > 2 else math.inf
    return float(res.slope), half


def memory_probe(model, c: Config, seed: int) -> dict[str, dict[str, list[float]]]:
    """Peak saved-for-backward bytes and wall time of ONE iteration of each solver, per N.

    One iteration: D-Flow (and its adjoint) = one objective + gradient evaluation; MS-Flow = one
    sweep over the shooting points plus the data step (``jacobian="free"`` and ``"vjp"``).
    """
    ds = digits(seed=0)
    x = ds["test"][seed:seed + 8]  # a batch of 8 digits, so activations are visible next to weights
    op = make_operator("inpaint_random", 0.05, seed=seed)
    y = op.measure(x, torch.Generator().manual_seed(seed))
    z0 = torch.randn(8, 64, generator=torch.Generator().manual_seed(seed))
    out: dict[str, dict[str, list[float]]] = {}

    def dflow_iter(N, adjoint):
        cfg = DFlowConfig(n_steps=N, adjoint=adjoint)

        def fn():
            z = z0.clone().requires_grad_(True)
            d_flow_objective(model, op, y, z, cfg).sum().backward()
            return z.grad

        return fn

    def ms_iter(N, jac):
        cfg = MSFlowConfig(K=c.K, n_steps=N, n_outer=1, init="ode", jacobian=jac, seed=seed)

        def fn():
            return ms_flow(model, op, y, cfg)

        # the measured call includes the ODE initialisation (no graph) and one outer iteration
        return fn

    probes = {"d_flow": lambda N: dflow_iter(N, False), "d_flow_adjoint": lambda N: dflow_iter(N, True),
              "ms_flow": lambda N: ms_iter(N, "free"), "ms_flow_vjp": lambda N: ms_iter(N, "vjp")}
    for arm, make in probes.items():
        rec = out.setdefault(arm, {"steps": [], "bytes": [], "seconds": [], "iter_nfe": []})
        for N in c.memory_steps:
            fn = make(N)
            if arm.startswith("d_flow"):
                rec["iter_nfe"].append(float(DFlowConfig(n_steps=N, adjoint=arm == "d_flow_adjoint").eval_nfe()))
            else:
                jac = "vjp" if arm == "ms_flow_vjp" else "free"
                rec["iter_nfe"].append(float(MSFlowConfig(K=c.K, n_steps=N, jacobian=jac).sweep_nfe()))
            stats = saved_tensor_bytes(fn)
            times = []
            for _ in range(c.memory_repeats):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            rec["steps"].append(N)
            rec["bytes"].append(float(stats.peak_bytes))
            rec["seconds"].append(float(statistics.median(times)))
    # MS-Flow's measured call also runs the initial ODE solve: subtract it from the time so that
    # "seconds" is one outer iteration (the solve is timed on its own)
    for N_i, N in enumerate(c.memory_steps):
        cfg = MSFlowConfig(K=c.K, n_steps=N, init="ode", seed=seed)
        from .solvers import _solve  # the same integrator the solver uses

        times = []
        for _ in range(c.memory_repeats):
            t0 = time.perf_counter()
            _solve(model, z0, 0.0, 1.0, N, cfg.method)  # initial trajectory
            _solve(model, z0, 0.0, 1.0, N, cfg.method)  # fresh solve for x_on_manifold
            times.append(time.perf_counter() - t0)
        base = float(statistics.median(times))
        for arm in ("ms_flow", "ms_flow_vjp"):
            out[arm]["seconds"][N_i] = max(out[arm]["seconds"][N_i] - base, 1e-9)
    return out


# ----------------------------------------------------------------------------------------------
# one seed
# ----------------------------------------------------------------------------------------------


def _objective(model, op, y, r, c: Config) -> float | None:
    """The common MAP objective ``D(T(z_0)) + OBJ_LAM R(z_0)`` (mean over images) at an arm's
    optimised noise ``z_0`` (latent arms only; ``None`` otherwise): beside PSNR it tells
    optimisation quality from where a solver lands on a flat objective (issue 48)."""
    z0 = r.z[0] if getattr(r, "z", None) else r.info.get("z0") if isinstance(r.info, dict) else None
    if z0 is None:
        return None
    with torch.no_grad():
        cfg = DFlowConfig(n_steps=c.n_steps, lam=OBJ_LAM)
        return float(d_flow_objective(model, op, y, z0, cfg).mean())


def _regime(task: str, sigma: float) -> str:
    return f"{task}@{sigma:g}"


def run(config: Config, seed: int) -> SeedOutput:
    c = config
    model = trained_prior(c, seed)
    broken = untrained_prior(c, seed)
    ds = digits(seed=0)
    center = ds["train"].mean(0)
    rng = np.random.default_rng(seed)
    x_val = ds["val"][torch.from_numpy(rng.permutation(len(ds["val"]))[: c.n_val])]
    x_test = ds["test"][torch.from_numpy(rng.permutation(len(ds["test"]))[: c.n_test])]
    grids = _grids(c)
    metrics: dict[str, dict[str, float]] = {a: {} for a in (*TUNED_ARMS, "ms_flow_fixed_mu",
                                                             "ms_flow_untrained", "ms_flow_nosweep",
                                                             "ms_flow_vjp")}
    tuning = {}
    extras: dict = {"examples": {}, "nfe": {}, "history": {}}

    for task in c.tasks:
        for sigma in c.noises:
            reg = _regime(task, sigma)
            op = make_operator(task, sigma, seed=seed)
            gen = torch.Generator().manual_seed(1000 * seed + int(sigma * 1e4))
            y_val = op.measure(x_val, gen)
            y_test = op.measure(x_test, gen)
            def tune_and_test(arms, budget, op=op, y_val=y_val, y_test=y_test):
                specs, solvers = {}, {}
                for arm in arms:
                    fn, build = _solver(arm, c, seed, center, budget)
                    solvers[arm] = (fn, build)

                    def validate(p, fn=fn, build=build, op=op, y_val=y_val):
                        r = fn(model, op, y_val, build(p))
                        return float(psnr(r.x, x_val).mean())

                    specs[arm] = TuningSpec(grid=grids[arm], validate=validate, maximize=True,
                                            budget={"nfe": budget} if arm != "tikhonov" else {"nfe": 0})
                tuned = tune_arms(specs, allow_unequal=("tikhonov",))
                results, secs = {}, {}
                for arm in arms:
                    fn, build = solvers[arm]
                    t0 = time.perf_counter()
                    results[arm] = fn(model, op, y_test, build(tuned[arm].chosen))
                    secs[arm] = time.perf_counter() - t0
                return tuned, solvers, results, secs

            tuned, solvers, results, secs = tune_and_test(TUNED_ARMS, c.nfe_budget)
            for arm, t in tuned.items():
                tuning[f"{arm}|{reg}"] = t
                metrics[arm][f"seconds|{reg}"] = secs[arm]
            ms_cfg = solvers["ms_flow"][1](tuned["ms_flow"].chosen)
            results["ms_flow_fixed_mu"] = ms_flow(model, op, y_test, replace(ms_cfg, continuation="fixed"))
            results["ms_flow_untrained"] = ms_flow(broken, op, y_test, ms_cfg)
            results["ms_flow_nosweep"] = ms_flow(model, op, y_test, replace(ms_cfg, step=0.0))
            for arm, r in results.items():
                m = metrics[arm]
                m[f"psnr|{reg}"] = float(psnr(r.x, x_test).mean())
                m[f"ssim|{reg}"] = float(ssim(r.x, x_test).mean())
                m[f"nfe|{reg}"] = float(r.nfe)
                m[f"data_resid|{reg}"] = float(((op.A(r.x) - y_test).norm(dim=1) / y_test.norm(dim=1)).mean())
                obj = None if arm == "ms_flow_untrained" else _objective(model, op, y_test, r, c)
                if obj is not None:  # (the untrained arm's z_0 belongs to another prior)
                    m[f"objective|{reg}"] = obj
                if arm.startswith("ms_flow"):
                    p_end = psnr(r.x, x_test)
                    p_fresh = psnr(r.x_on_manifold, x_test)
                    m[f"stitch|{reg}"] = float(r.stitch_residual.mean())
                    m[f"psnr_fresh|{reg}"] = float(p_fresh.mean())
                    m[f"fresh_gap|{reg}"] = float((p_end - p_fresh).abs().mean())
            for budget in c.nfe_sweep:  # the same arms re-tuned and re-scored at another budget
                t_b, _, res_b, _ = tune_and_test(SWEEP_ARMS, budget)
                for arm, r in res_b.items():
                    tuning[f"{arm}|{reg}|nfe{budget}"] = t_b[arm]
                    metrics[arm][f"psnr@{budget}|{reg}"] = float(psnr(r.x, x_test).mean())
                    metrics[arm][f"nfe@{budget}|{reg}"] = float(r.nfe)
                    metrics[arm][f"objective@{budget}|{reg}"] = _objective(model, op, y_test, r, c)
            extras["nfe"][reg] = {a: r.nfe for a, r in results.items()}
            extras["history"][reg] = results["ms_flow"].history
            extras["examples"][reg] = {"truth": x_test[:4].tolist(),
                                       **{a: results[a].x[:4].tolist() for a in
                                          ("ms_flow", "d_flow", "pnp_flow", "flow_dps", "tikhonov")},
                                       "ms_flow_fresh": results["ms_flow"].x_on_manifold[:4].tolist()}

    mem = memory_probe(model, c, seed)
    extras["memory"] = mem
    i_max = len(c.memory_steps) - 1
    for arm, rec in mem.items():
        slope, half = _slope(rec["steps"], rec["bytes"])
        metrics[arm]["mem_slope"] = slope
        metrics[arm]["mem_slope_ci"] = half
        metrics[arm]["mem_bytes_max_n"] = rec["bytes"][i_max]
        metrics[arm]["iter_seconds_max_n"] = rec["seconds"][i_max]
        metrics[arm]["time_ratio_vs_dflow"] = rec["seconds"][i_max] / mem["d_flow"]["seconds"][i_max]
        metrics[arm]["nfe_ratio_vs_dflow"] = rec["iter_nfe"][i_max] / mem["d_flow"]["iter_nfe"][i_max]
    return SeedOutput(metrics=metrics, extras=extras, tuning=tuning)


# ----------------------------------------------------------------------------------------------
# claims (declared before any run)
# ----------------------------------------------------------------------------------------------

SCALE = ("laptop-scale: MLP flow prior on sklearn 8x8 digits trained in the run, 4 operators x 2 "
         "noise levels, equal NFE budget per image, knobs tuned on validation digits (equal grids)")


def _regimes(metrics, prefix: str = "psnr|", only=None) -> list[str]:
    keys = [k[len(prefix):] for k in metrics["ms_flow"] if k.startswith(prefix)]
    return [k for k in keys if only is None or only(k)]


def _memory_rule(arm: str):
    def rule(metrics, config) -> Decision:
        d_slope = float(np.mean(metrics["d_flow"]["mem_slope"]))
        d_half = float(np.mean(metrics["d_flow"]["mem_slope_ci"]))
        a_slope = float(np.mean(metrics[arm]["mem_slope"]))
        a_half = float(np.mean(metrics[arm]["mem_slope_ci"]))
        ratio = float(np.mean(metrics[arm]["nfe_ratio_vs_dflow"]))
        grows = d_slope - d_half > 0
        flat = a_slope + a_half <= 0.05 * d_slope and a_slope - a_half >= -0.05 * d_slope
        # in units of D-Flow's slope: an arm growing by more than 5 % + its interval is caught (saved
        # bytes are deterministic; the interval is over N, not over seeds)
        mde = 0.05 + a_half / d_slope if d_slope > 0 else math.inf
        cheap = ratio <= 1.5
        ok = grows and flat and cheap
        ours = (f"D-Flow {d_slope:.0f} ± {d_half:.0f} B/step; {arm} {a_slope:.1f} ± {a_half:.1f} B/step; "
                f"{arm} iteration cost {ratio:.2f}x D-Flow's NFE")
        return Decision(REPRODUCED if ok else NOT_REPRODUCED, ours,
                        {"dflow_slope": d_slope, "dflow_ci": d_half, "arm_slope": a_slope, "arm_ci": a_half,
                         "time_ratio": ratio, "dflow_grows": grows, "arm_flat": flat, "arm_cheap": cheap,
                         "mde": mde if math.isfinite(mde) else None},
                        mde=mde, n=len(metrics[arm]["mem_slope"]), uses_se=False)

    return rule


def _paired_rule(arm: str, baseline: str, only=None, require="all", metric: str = "psnr"):
    def rule(metrics, config) -> Decision:
        regs = _regimes(metrics, f"{metric}|", only)
        n = len(regs)
        need = require if require in ("all", "any") else max(1, min(n, math.ceil(require * n)))
        return per_regime([(r, paired_improvement(metrics[arm][f"{metric}|{r}"],
                                                  metrics[baseline][f"{metric}|{r}"],
                                                  label=f"{arm} vs {baseline}: ")) for r in regs],
                          require=need, label=f"{arm} vs {baseline}: ")

    return rule


def _stitch_rule(arm: str):
    def rule(metrics, config) -> Decision:
        regs = _regimes(metrics, "stitch|")
        parts = []
        for r in regs:
            parts.append((r, all_of(threshold_rule(metrics[arm][f"stitch|{r}"], high=1e-2,
                                                   label="rel. stitching residual "),
                                    threshold_rule(metrics[arm][f"fresh_gap|{r}"], high=0.5,
                                                   label="|PSNR(z_K) - PSNR(T(z_0))| dB "))))
        return per_regime(parts, require="all", label=f"{arm}: ")

    return rule


def _is_inpaint(r: str) -> bool:
    return r.startswith("inpaint")


_PSNR_SOURCE = ("smallest that matters: 0.5 dB PSNR, our choice (paper tables not readable); mde: the "
                "per-regime paired rule's 2 s.e. at the required regime count")


CLAIMS = (
    Claim(
        id="memory",
        statement="D-Flow's memory grows linearly with the number of solver steps; MS-Flow's stays "
                  "constant (without paying the adjoint method's extra compute per iteration).",
        paper_value="Fig. 1 (CelebA, peak GPU memory vs Euler steps): D-Flow linear, MS-Flow constant",
        metric="slope of peak saved-for-backward bytes vs N (95% CI) and iteration cost (NFE) vs D-Flow",
        scale="laptop-scale: a batch of 8 digits, N in memory_steps, bytes via saved_tensors_hooks",
        rule="D-Flow slope CI > 0; the arm's slope CI within ±5% of D-Flow's slope; the arm's cost "
             "per iteration (NFE, a backward pass counted as one) <= 1.5x D-Flow's at the same N "
             "(issue 26's practical target; wall time is reported, not judged: at 64-d it is Python "
             "overhead, and it would make the pinned smoke verdicts non-deterministic)",
        decide=_memory_rule("ms_flow"),
        control_description="D-Flow with the adjoint method: single shooting, also constant memory; "
                            "the strongest alternative without multiple shooting",
        control=_memory_rule("d_flow_adjoint"),
        arms=ClaimArms(method="ms_flow", baselines=("d_flow",), control="d_flow_adjoint"),
        effect=1.0,
        effect_source="paper Fig. 1: D-Flow linear, MS-Flow constant (a slope difference of 100 % of "
                      "D-Flow's); mde: 5 % tolerance + the arm's slope interval, in D-Flow's slope",
    ),
    Claim(
        id="quality_vs_dflow",
        statement="At equal NFE, MS-Flow reconstructs better (PSNR) than single-shooting D-Flow.",
        paper_value="qualitative ('improving reconstruction quality'); tables not readable",
        metric="test PSNR (dB, higher is better) per regime",
        scale=SCALE,
        rule="per regime: MS-Flow > D-Flow in every seed with mean paired gap > 2 s.e.; "
             "reproduced in >= 75% of regimes (brief M3: 3 of 4 tasks)",
        decide=_paired_rule("ms_flow", "d_flow", require=0.75),
        control_description="MS-Flow with K = 1 (no intermediate shooting points; same Jacobian-free "
                            "updates, continuation, budget and grid)",
        control=_paired_rule("ms_flow_k1", "d_flow", require=0.75),
        arms=ClaimArms(method="ms_flow", baselines=("d_flow",), control="ms_flow_k1"),
        effect=PSNR_EFFECT,
        effect_source=_PSNR_SOURCE,
        beyond=_paired_rule("ms_flow", "ms_flow_k1", require=0.75),
    ),
    Claim(
        id="quality_vs_dflow_more_nfe",
        statement="The quality_vs_dflow comparison at a larger NFE budget (issue 48: verdict "
                  "stability over the budget, every arm re-tuned at the same budget; D-Flow gets "
                  "proportionally more L-BFGS evaluations).",
        paper_value="qualitative ('improving reconstruction quality'); tables not readable",
        metric="test PSNR (dB) per regime at the largest nfe_sweep budget",
        scale=SCALE + "; nfe_sweep budget (quick: 640 NFE per image = 4x)",
        rule="as quality_vs_dflow, at the largest nfe_sweep budget: per regime MS-Flow > D-Flow in "
             "every seed with mean paired gap > 2 s.e.; reproduced in >= 75% of regimes",
        decide=lambda m, c: _paired_rule("ms_flow", "d_flow", require=0.75,
                                         metric=f"psnr@{c.nfe_sweep[-1]}")(m, c),
        control_description="MS-Flow with K = 1, re-tuned at the same budget",
        control=lambda m, c: _paired_rule("ms_flow_k1", "d_flow", require=0.75,
                                          metric=f"psnr@{c.nfe_sweep[-1]}")(m, c),
        arms=ClaimArms(method="ms_flow", baselines=("d_flow",), control="ms_flow_k1"),
        effect=PSNR_EFFECT,
        effect_source=_PSNR_SOURCE,
        beyond=lambda m, c: _paired_rule("ms_flow", "ms_flow_k1", require=0.75,
                                         metric=f"psnr@{c.nfe_sweep[-1]}")(m, c),
    ),
    Claim(
        id="exact_jacobian_vs_dflow",
        statement="MS-Flow with the exact Jacobian (the scheme whose fixed point is the MAP) beats "
                  "D-Flow at equal NFE (issue 48: the named exact-Jacobian arm).",
        paper_value="not a paper claim (the paper's scheme is Jacobian-free)",
        metric="test PSNR (dB) per regime",
        scale=SCALE,
        rule="per regime: ms_flow_vjp > D-Flow in every seed with mean paired gap > 2 s.e.; "
             "reproduced in >= 75% of regimes",
        decide=_paired_rule("ms_flow_vjp", "d_flow", require=0.75),
        control_description="MS-Flow with K = 1 (no intermediate shooting points)",
        control=_paired_rule("ms_flow_k1", "d_flow", require=0.75),
        arms=ClaimArms(method="ms_flow_vjp", baselines=("d_flow",), control="ms_flow_k1"),
        effect=PSNR_EFFECT,
        effect_source=_PSNR_SOURCE,
        beyond=_paired_rule("ms_flow_vjp", "ms_flow_k1", require=0.75),
    ),
    Claim(
        id="quality_vs_flowdps",
        statement="MS-Flow outperforms single-shooting FlowDPS in PSNR on deblurring, "
                  "super-resolution and inpainting.",
        paper_value="qualitative ('consistently outperforms FlowDPS'); tables not readable",
        metric="test PSNR (dB) per regime",
        scale=SCALE,
        rule="per regime: MS-Flow > FlowDPS-style in every seed with mean gap > 2 s.e.; "
             "reproduced in >= 75% of regimes",
        decide=_paired_rule("ms_flow", "flow_dps", require=0.75),
        control_description="MS-Flow with K = 1 (no multiple shooting)",
        control=_paired_rule("ms_flow_k1", "flow_dps", require=0.75),
        arms=ClaimArms(method="ms_flow", baselines=("flow_dps",), control="ms_flow_k1"),
        effect=PSNR_EFFECT,
        effect_source=_PSNR_SOURCE,
        beyond=_paired_rule("ms_flow", "ms_flow_k1", require=0.75),
    ),
    Claim(
        id="quality_vs_pnpflow",
        statement="MS-Flow is competitive or superior to the other flow-prior solvers; judged "
                  "against PnP-Flow, the strongest of them in the PnP-Flow benchmark.",
        paper_value="qualitative ('competitive or superior')",
        metric="test PSNR (dB) per regime",
        scale=SCALE,
        rule="per regime: MS-Flow > PnP-Flow in every seed with mean gap > 2 s.e.; "
             "reproduced in >= 75% of regimes",
        decide=_paired_rule("ms_flow", "pnp_flow", require=0.75),
        control_description="MS-Flow with K = 1 (no multiple shooting)",
        control=_paired_rule("ms_flow_k1", "pnp_flow", require=0.75),
        arms=ClaimArms(method="ms_flow", baselines=("pnp_flow",), control="ms_flow_k1"),
        effect=PSNR_EFFECT,
        effect_source=_PSNR_SOURCE,
        beyond=_paired_rule("ms_flow", "ms_flow_k1", require=0.75),
    ),
    Claim(
        id="genuine_sample",
        statement="The stitched trajectory is a genuine flow trajectory: the stitching residual is "
                  "small and a fresh ODE solve from the optimised z_0 reproduces the solution.",
        paper_value="qualitative (trajectory-matching penalties enforce the flow dynamics)",
        metric="relative stitching residual and |PSNR(z_K) - PSNR(T(z_0))| per regime",
        scale=SCALE,
        rule="in every regime: mean relative stitching residual < 1e-2 and mean PSNR gap < 0.5 dB "
             "(brief M2)",
        decide=_stitch_rule("ms_flow"),
        control_description="MS-Flow with the shooting-point sweep switched off (step = 0: the data "
                            "step on the endpoint of the initial trajectory only), the stub the rule "
                            "must catch. Not the strongest arm: single-shooting arms (D-Flow) are "
                            "flow samples by construction, so they cannot test the rule",
        control=_stitch_rule("ms_flow_nosweep"),
        arms=ClaimArms(method="ms_flow", control="ms_flow_nosweep"),
        effect=1e-2,
        effect_source="brief M2: a relative stitching residual of 1e-2 is not a genuine trajectory "
                      "(the rule's bound); mde: 2 s.e. of the seed mean, residual leg",
    ),
    Claim(
        id="prior_matters",
        statement="Sanity: with the trained flow prior, MS-Flow beats the Tikhonov reference on "
                  "inpainting; an untrained prior must not.",
        paper_value="not a paper claim (brief M5 sanity check)",
        metric="test PSNR (dB) on inpainting regimes",
        scale=SCALE,
        rule="per inpainting regime: arm > Tikhonov in every seed with gap > 2 s.e.; all regimes",
        decide=_paired_rule("ms_flow", "tikhonov", only=_is_inpaint, require="all"),
        control_description="MS-Flow with an untrained velocity net (same tuned settings)",
        control=_paired_rule("ms_flow_untrained", "tikhonov", only=_is_inpaint, require="all"),
        arms=ClaimArms(method="ms_flow", baselines=("tikhonov",), control="ms_flow_untrained"),
        effect=PSNR_EFFECT,
        effect_source=_PSNR_SOURCE,
        beyond=_paired_rule("ms_flow", "ms_flow_untrained", only=_is_inpaint, require="all"),
    ),
)


# ----------------------------------------------------------------------------------------------
# plots
# ----------------------------------------------------------------------------------------------


def plot(config: Config, outputs, outdir: Path) -> list[Path]:
    plt = pyplot()
    paths = []
    mem = outputs[0].extras["memory"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for arm, rec in mem.items():
        axes[0].plot(rec["steps"], np.asarray(rec["bytes"]) / 1024, "o-", label=arm)
        axes[1].plot(rec["steps"], np.asarray(rec["seconds"]) * 1e3, "o-", label=arm)
    axes[0].set(xlabel="solver steps N", ylabel="peak saved-for-backward (KiB)", xscale="log")
    axes[1].set(xlabel="solver steps N", ylabel="time per iteration (ms)", xscale="log", yscale="log")
    axes[0].legend(fontsize=7)
    paths.append(save_figure(fig, Path(outdir) / "ms_flow_memory.png"))
    ex = outputs[0].extras["examples"]
    regs = list(ex)
    cols = ["truth", "tikhonov", "flow_dps", "pnp_flow", "d_flow", "ms_flow", "ms_flow_fresh"]
    fig, axes = plt.subplots(len(regs), len(cols), figsize=(1.3 * len(cols), 1.3 * len(regs)), squeeze=False)
    for i, r in enumerate(regs):
        for j, col in enumerate(cols):
            ax = axes[i, j]
            ax.imshow(np.asarray(ex[r][col][0]).reshape(8, 8), cmap="gray", vmin=-1, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if i == 0:
                ax.set_title(col, fontsize=6)
            if j == 0:
                ax.set_ylabel(r, fontsize=5)
    paths.append(save_figure(fig, Path(outdir) / "ms_flow_reconstructions.png"))
    return paths

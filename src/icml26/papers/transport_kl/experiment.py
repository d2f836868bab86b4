"""Reproduction of arXiv:2602.02250: KL vs WKL vs KWKL regularised control, equal tuning effort.

E1  divergence properties: equal-covariance degeneration sweep, closed forms vs the shooting oracle,
    and pairs whose small eigenvalues differ by orders of magnitude (per-direction 1-D formula).
E2  double integrator: every controller's λ is tuned from the *same* grid on validation noise draws
    (``icml26.harness.tuning.tune_arms``, equal grid and rollout budget) and judged on fresh draws,
    per regime: two systems (inputs of equal and of unequal authority) x three noise structures
    (isotropic, anisotropic, degenerating) x noise levels across orders of magnitude.
E3  cart-pole: the same protocol on the nonlinear cart-pole with process noise, and the feedback
    criteria of the brief (spectral radius of A - BK, low-noise gain ratio) at the paper's fixed λ.

Why tuning matters (review of issue 20): with isotropic noise every penalty is a scalar multiple of
B^T B, so a KL controller whose λ is rescaled by the noise level *is* the WKL controller. The arms
differ only where the geometry differs (anisotropic or degenerating noise with several inputs) or
where a fixed λ grid cannot follow the 1/σ² blow-up of the KL penalty (low noise).

Two kinds of claim (issue 47). ``feedback`` is a *well-posedness* claim: at one FIXED λ, as the noise
level falls, the KL controller loses its feedback and the WKL controller keeps it; it is judged at the
paper's λ across noise levels, and its control is KL at the best fixed λ (tuned once, at the largest noise
level of the sweep, then held fixed). The two ``*_performance`` claims are *performance* claims, judged at
each arm's tuned optimum.

Natural-scale tuning grids (issue 47). Each tuned arm's λ grid is the shared relative grid ``lam_grid``
times the arm's natural scale in the regime, ``tr(B^T B) / tr(M_arm)`` (``natural_scale``), so that at every
relative grid point every arm's penalty has the same trace as WKL's: KL's λ is rescaled by the noise
(isotropic noise: λ_KL = σ² λ), lqr's by tr(B^T B)/m. Every arm has the same grid size and budget. An
optimum at either end of an arm's grid is recorded (metric ``edge_<regime>``, 1.0 per seed at an end) and
refused: the regime whose rule reads that arm becomes inconclusive ("tuning: optimum at the grid's edge").

Detectability and knobs (CLAIMS.md rules 8-9). The divergence and feedback checks are exact
computations (closed forms, DARE at a fixed λ): mde 0. The performance claims' effect is relative,
1 % of the retuned KL's cost (their rule's own margin), so each regime's mde is the paired rule's mde
divided by KL's mean cost. The range of the relative grid is a protocol knob (``PROTOCOL_KNOBS``), swept
in ``full``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml26.core.progress import phase
from icml26.harness import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    ClaimArms,
    Decision,
    ExperimentConfig,
    SeedOutput,
    paired_improvement,
    per_regime,
)
from icml26.harness.plots import save_figure
from icml26.harness.tuning import TuningSpec, tune_arms

from .control import (
    control_penalty,
    discounted_dlqr,
    kl_regularized_lqr,
    simulate_linear,
    spectral_radius,
)
from .divergences import (
    divergence_path_energy,
    kl_gaussian,
    kwkl_gaussian,
    wkl_elliptic,
    wkl_gaussian,
)
from .systems import CartPole, double_integrator

TUNED = ("kl", "wkl", "kwkl", "lqr")
"""Arms tuned from the same λ grid: the three divergence penalties and a plain penalty R = (λ/2) I."""
FIXED = ("kl_fixed", "wkl_fixed", "kwkl_fixed")
"""The three penalties at the paper's fixed λ (feedback claim)."""


FULL_LAM_GRID = tuple(float(x) for x in np.logspace(-4, 4, 25))
"""The full profile's relative λ grid (1/3 decade, times each arm's natural scale)."""
WIDE_LAM_GRID = tuple(float(x) for x in np.logspace(-9, 9, 25))
"""The same number of points over 1e-9 .. 1e9 (0.75 decade: the review's spacing and lower end,
issue 47), the verdict-stability setting of the grid range."""


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Experiment settings (defaults = quick profile).

    Attributes
    ----------
    div_dims, div_scales, eps_div
        E1: dimensions of random SPD pairs checked against the shooting oracle, the equal-covariance
        scales ``S = s I``, and the KW regulariser (our choice).
    small_eig_pairs
        E1: ``(a, b)`` pairs; ``S0 = diag(1, a)``, ``S1 = diag(1, b)`` whose small eigenvalues differ
        by orders of magnitude (the equal-covariance bug of issue 20).
    lam_grid
        The relative λ grid every tuned arm shares (our choice: 1e-6 .. 1e6, 17 points); an arm's
        actual grid is this times its natural scale (``natural_scale``). λ = 0 ("off") is not
        admissible: the Riccati equation needs a positive definite control weight.
    paper_lam
        λ of the fixed-weight arms (``half=True``; 2.0 = the third-party script's λ = 1).
    di_fb_levels, di_fb_high
        Feedback claim, double integrator: noise diag(s, s, high, high) for s in ``di_fb_levels``
        (the third-party script's diag(1e-5, 1e-5, 10, 10) is s = 1e-5), the first axis' noise vanishing.
    di_gamma, di_eps
        Double integrator discount and KW ε (third-party script: 0.9 and 1).
    di_levels, di_structures, di_input_gains
        E2 regimes: noise levels σ², noise structures, and the input gains of the second system
        (the first has unit gains, so its B^T B = I equals the evaluation's control weight).
    n_rollouts, horizon
        Rollouts per split (validation and test draws are independent) and steps (γ^60 < 0.002).
    cp_levels, cp_gamma, cp_eps, cp_r_eval, cp_rollouts, cp_horizon
        E3: noise levels, discount (brief: 0.99), KW ε (our choice: 1e-4), weight of F² in the
        evaluation cost (our choice), rollouts per split and steps (gymnasium's limit is 500).
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    div_dims: tuple[int, ...] = (1, 2, 3, 5)
    div_scales: tuple[float, ...] = (1.0, 1e-2, 1e-4, 1e-6, 1e-8, 1e-10)
    eps_div: float = 1.0
    small_eig_pairs: tuple[float, ...] = (1e-13, 1e-15, 1e-9, 1e-13, 1e-6, 1e-12)
    # relative grid 1e-6 .. 1e6 at 0.75 decade (17 points): at 1e-3 .. 1e3 KL's optimum sat at the
    # top edge in two unequal-input regimes at sigma2 = 1e-3 (it lies at 10^3.75 on the 1e-9 .. 1e9
    # stability grid); the verdicts are the same on all three grids (quick --stability, issue 47)
    lam_grid: tuple[float, ...] = tuple(float(x) for x in np.logspace(-6, 6, 17))
    paper_lam: float = 2.0
    di_gamma: float = 0.9
    di_eps: float = 1.0
    di_levels: tuple[float, ...] = (1e-1, 1e-3, 1e-6)
    di_structures: tuple[str, ...] = ("isotropic", "anisotropic", "degenerating")
    di_input_gains: tuple[float, ...] = (1.0, 0.2)
    di_fb_levels: tuple[float, ...] = (1e-1, 1e-3, 1e-5)
    di_fb_high: float = 10.0
    n_rollouts: int = 48
    horizon: int = 60
    cp_levels: tuple[float, ...] = (1e-4, 1e-6, 1e-8)
    cp_gamma: float = 0.99
    cp_eps: float = 1e-4
    cp_r_eval: float = 1e-3
    cp_rollouts: int = 16
    cp_horizon: int = 250

    BOUNDS = {
        "div_dims": (1, 8), "div_scales": (1e-12, 1e3), "eps_div": (1e-9, 1e6), "small_eig_pairs": (1e-16, 1.0),
        "lam_grid": (1e-9, 1e9), "paper_lam": (1e-9, 1e9), "di_gamma": (1e-3, 0.999), "di_eps": (1e-12, 1e6),
        "di_levels": (1e-10, 1.0), "di_input_gains": (1e-3, 1e3), "di_fb_levels": (1e-12, 1e3),
        "di_fb_high": (1e-12, 1e6),
        "n_rollouts": (2, None), "horizon": (1, None), "cp_levels": (1e-12, 1e-2), "cp_gamma": (0.5, 0.9999),
        "cp_eps": (1e-12, 1e6), "cp_r_eval": (0.0, 1e3), "cp_rollouts": (2, None), "cp_horizon": (1, 500),
    }

    def extra_checks(self) -> None:
        if len(self.small_eig_pairs) % 2:
            self.out_of_range("small_eig_pairs", "an even number of values (a, b pairs)")
        if not set(self.di_structures) <= {"isotropic", "anisotropic", "degenerating"} or not self.di_structures:
            self.out_of_range("di_structures", "a non-empty subset of isotropic, anisotropic, degenerating")
        if len(self.di_input_gains) != 2:
            self.out_of_range("di_input_gains", "two gains (one per input of the 2-D double integrator)")
        if len(set(self.lam_grid)) != len(self.lam_grid) or len(self.lam_grid) < 3:
            self.out_of_range("lam_grid", "at least 3 distinct values (an interior optimum must be possible)")
        if len(set(self.di_fb_levels)) < 2 or len(set(self.cp_levels)) < 2:
            self.out_of_range("di_fb_levels" if len(set(self.di_fb_levels)) < 2 else "cp_levels",
                              "at least two distinct noise levels (the feedback claim reads a sweep)")

    @classmethod
    def smoke(cls) -> Config:
        return cls(seeds=(0, 1), div_dims=(1, 2), div_scales=(1.0, 1e-4, 1e-10),
                   lam_grid=(1e-2, 1e-1, 1.0, 10.0), di_levels=(1e-6,), di_structures=("isotropic", "anisotropic"),
                   n_rollouts=16, horizon=40, cp_levels=(1e-4, 1e-8), cp_rollouts=6, cp_horizon=150)

    @classmethod
    def quick(cls) -> Config:
        return cls()

    @classmethod
    def full(cls) -> Config:
        return cls(seeds=tuple(range(10)), div_dims=(1, 2, 3, 4, 5, 6), n_rollouts=512,
                   di_levels=(1e-1, 1e-2, 1e-3, 1e-4, 1e-6, 1e-8), cp_levels=(1e-3, 1e-4, 1e-5, 1e-6, 1e-8),
                   cp_rollouts=128, cp_horizon=500, lam_grid=FULL_LAM_GRID)


PROTOCOL_KNOBS = {"lam_grid": (FULL_LAM_GRID, WIDE_LAM_GRID)}
"""Verdict stability (CLAIMS.md rule 9, issue 47): the range of the shared relative λ grid (1e-4..1e4
and 1e-9..1e9, 25 points each; every arm on the same relative grid; full: one more full run)."""


# ----------------------------------------------------------------------------------------------
# E1
# ----------------------------------------------------------------------------------------------


def _wkl_1d(s0: float, s1: float, dm: float) -> float:
    """The 1-D WKL formula of the brief (variances s0, s1), independent of the n-D code path."""
    if s0 == s1:
        return 0.5 * dm * dm
    r0, r1 = math.sqrt(s0), math.sqrt(s1)
    return (s1 * math.log(s1 / s0) - s1 + s0) / 4.0 * (1.0 + dm * dm / (r1 - r0) ** 2)


def _random_spd(rng, n, cond_cap=20.0):
    X = rng.normal(size=(n, n))
    U, _ = np.linalg.qr(X)
    w = np.exp(rng.uniform(0.0, math.log(cond_cap), size=n)) * rng.uniform(0.2, 1.0)
    return (U * w) @ U.T


def _e1(config: Config, rng) -> dict[str, dict[str, float]]:
    n = 3
    dm = rng.normal(size=n)
    half_sq = 0.5 * float(dm @ dm)
    eps = config.eps_div
    wkl_dev, ell_dev, kw0_dev, kw_sat = 0.0, 0.0, 0.0, 0.0
    kl_vals = []
    nu = 5.0  # Student-t generator, kappa = nu / (nu - 2)
    for s in config.div_scales:
        S = s * np.eye(n)
        wkl_dev = max(wkl_dev, abs(wkl_gaussian(np.zeros(n), S, dm, S) / half_sq - 1.0))
        ell_dev = max(ell_dev, abs(wkl_elliptic(np.zeros(n), S, dm, S, kappa=nu / (nu - 2))
                                   / half_sq - 1.0))
        kw0_dev = max(kw0_dev, abs(kwkl_gaussian(np.zeros(n), S, dm, S, eps=0.0) / half_sq - 1.0))
        kw_sat = max(kw_sat, kwkl_gaussian(np.zeros(n), S, dm, S, eps=eps) * eps / half_sq)
        kl_vals.append(kl_gaussian(np.zeros(n), S, dm, S))
    growth = kl_vals[-1] / kl_vals[0]
    # closed forms vs the shooting oracle on unequal covariances
    w_err, kw_err = 0.0, 0.0
    for d in config.div_dims:
        S0, S1 = _random_spd(rng, d), _random_spd(rng, d)
        m0, m1 = rng.normal(size=d), rng.normal(size=d)
        ref = divergence_path_energy(m0, S0, m1, S1, geometry="wasserstein")
        w_err = max(w_err, abs(wkl_gaussian(m0, S0, m1, S1) / ref - 1.0))
        D0 = np.diag(np.diag(S0))
        D1 = np.diag(np.diag(S1))
        ref = divergence_path_energy(m0, D0, m1, D1, geometry="kalman_wasserstein", eps=eps)
        kw_err = max(kw_err, abs(kwkl_gaussian(m0, D0, m1, D1, eps=eps) / ref - 1.0))
    # pairs whose small eigenvalues differ by orders of magnitude (issue 20): per-direction 1-D formula
    small_err = 0.0
    pairs = config.small_eig_pairs
    for a, b in zip(pairs[0::2], pairs[1::2], strict=True):
        dm2 = rng.normal(size=2)
        exact = _wkl_1d(1.0, 1.0, dm2[0]) + _wkl_1d(a, b, dm2[1])
        got = wkl_gaussian(np.zeros(2), np.diag([1.0, a]), dm2, np.diag([1.0, b]))
        small_err = max(small_err, abs(got / exact - 1.0))
    return {
        "wkl": {"div_eq_dev": wkl_dev, "div_ell_dev": ell_dev, "div_oracle_err": w_err,
                "div_small_eig_err": small_err},
        "kl": {"div_growth": growth},
        "kwkl": {"div_sat_ratio": kw_sat, "div_oracle_err": kw_err},
        "kwkl_eps0": {"div_eq_dev": kw0_dev},
    }



# ----------------------------------------------------------------------------------------------
# E2 / E3: tuned controllers
# ----------------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return f"{x:g}"


def di_noise(structure: str, sigma2: float) -> np.ndarray:
    """Noise covariance of the 2-D double integrator (state order p1, v1, p2, v2).

    ``isotropic``: σ² I. ``anisotropic``: diag(1, σ², 1, 1) (the first input's direction nearly
    noiseless). ``degenerating``: unit variances with velocity correlation 1 - σ², singular along
    v1 - v2 as σ² -> 0. All three equal I at σ² = 1 (the first only up to σ²).
    """
    if structure == "isotropic":
        return sigma2 * np.eye(4)
    if structure == "anisotropic":
        return np.diag([1.0, sigma2, 1.0, 1.0])
    if structure == "degenerating":
        S = np.eye(4)
        S[1, 3] = S[3, 1] = 1.0 - sigma2
        return S
    raise ValueError(f"unknown noise structure {structure!r}")


def _gain(arm: str, A, B, Q, Sw, lam: float, gamma: float, eps: float) -> np.ndarray:
    """Feedback gain of one arm at weight ``lam`` through the public API."""
    if arm in ("lqr", "lqr_fixed"):
        return discounted_dlqr(A, B, Q, 0.5 * lam * np.eye(B.shape[1]), gamma)[0]
    div = arm.removesuffix("_fixed").removesuffix("_ref")
    return kl_regularized_lqr(A, B, Q, Sw, divergence=div, lam=lam, gamma=gamma, eps=eps)[0]


def natural_scale(arm: str, B, Sw, eps: float) -> float:
    """The arm's natural λ scale in a regime: ``tr(B^T B) / tr(M_arm)``.

    ``M_arm`` is the arm's penalty matrix at λ = 2 (``R = (λ/2) M``: ``B^T Σ^{-1} B`` for KL,
    ``B^T (Σ + εI)^{-1} B`` for KWKL, ``B^T B`` for WKL, ``I`` for lqr), so that at a relative weight
    ``r`` every arm's penalty ``R = (r s_arm / 2) M_arm`` has the trace of WKL's. Isotropic noise gives
    KL's scale ``σ²`` (issue 47: KL needs λ ~ σ² λ_WKL). WKL's scale is 1.
    """
    ref = float(np.trace(B.T @ B))
    if arm in ("lqr", "lqr_fixed"):
        M = np.eye(B.shape[1])
    else:
        M = control_penalty(B, Sw, arm.removesuffix("_fixed").removesuffix("_ref"), lam=2.0, eps=eps)
    return ref / float(np.trace(M))


def _linear_cost(A, B, K, Q, Sw, gamma, x0, noise_seed, T) -> float:
    """Mean discounted cost sum_t gamma^t (x'Qx + u'u) over rollouts (common random numbers)."""
    xs, us = simulate_linear(A, B, K, Sw, x0, T, np.random.default_rng(noise_seed))
    disc = gamma ** np.arange(T)
    stage = np.einsum("ntj,jk,ntk->nt", xs[:, :T], Q, xs[:, :T]) + np.sum(us**2, axis=2)
    return float(np.mean(stage @ disc))


def at_edge(tuned, grid) -> bool:
    """Whether a tuned arm's chosen relative weight is the first or last point of its grid."""
    rel = tuned.chosen["rel"]
    return bool(rel == grid[0] or rel == grid[-1])


def _tune_and_test(arms, design, score, grid, budget, val, test, scale) -> tuple[dict, dict]:
    """tune_arms on the validation draws (each arm on the relative grid times its natural scale
    ``scale(arm)``), then the chosen gain scored on fresh test draws."""
    specs = {a: TuningSpec(grid=[{"lam": r * scale(a), "rel": r} for r in grid],
                           validate=lambda p, a=a: score(design(a, p["lam"]), val),
                           maximize=False, budget=budget) for a in arms}
    tuned = tune_arms(specs)
    gains = {a: design(a, tuned[a].chosen["lam"]) for a in arms}
    return tuned, {a: (gains[a], score(gains[a], test)) for a in arms}


def _di_systems(config: Config) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    A, B = double_integrator(dims=2)
    return {"di": (A, B), "di_unequal": (A, B * np.asarray(config.di_input_gains)[None, :])}


def _e2(config: Config, rng, metrics, tuning, extras) -> None:
    Q, g = np.eye(4), config.di_gamma
    T = config.horizon
    budget = {"rollouts": config.n_rollouts, "horizon": T}
    table = {}
    for sysname, (A, B) in _di_systems(config).items():
        for structure in config.di_structures:
            for s2 in config.di_levels:
                Sw = di_noise(structure, s2)
                reg = f"{sysname}_{structure}_{_fmt(s2)}"
                val = (rng.standard_normal((config.n_rollouts, 4)), int(rng.integers(2**31)))
                test = (rng.standard_normal((config.n_rollouts, 4)), int(rng.integers(2**31)))

                def design(arm, lam, A=A, B=B, Sw=Sw):
                    return _gain(arm, A, B, Q, Sw, lam, g, config.di_eps)

                def score(K, draws, A=A, B=B, Sw=Sw):
                    return _linear_cost(A, B, K, Q, Sw, g, draws[0], draws[1], T)

                tuned, out = _tune_and_test(
                    TUNED, design, score, config.lam_grid, budget, val, test,
                    lambda a, B=B, Sw=Sw: natural_scale(a, B, Sw, config.di_eps))
                for arm, (_, cost) in out.items():
                    metrics[arm][f"cost_{reg}"] = cost
                    metrics[arm][f"edge_{reg}"] = float(at_edge(tuned[arm], config.lam_grid))
                    tuning[f"{arm}@{reg}"] = tuned[arm]
                table[reg] = {a: {"lam": tuned[a].chosen["lam"], "rel": tuned[a].chosen["rel"],
                                  "at_edge": at_edge(tuned[a], config.lam_grid), "test_cost": c}
                              for a, (_, c) in out.items()}
    # feedback (well-posedness at a fixed λ): noise diag(s, s, high, high), s -> 0, the paper's λ
    # for the fixed arms; kl_ref = KL with λ tuned once at the largest s, then held fixed
    A, B = double_integrator(dims=2)
    levels = sorted(config.di_fb_levels, reverse=True)
    noises = {s: np.diag([s, s, config.di_fb_high, config.di_fb_high]) for s in levels}
    Sw = noises[levels[0]]
    val = (rng.standard_normal((config.n_rollouts, 4)), int(rng.integers(2**31)))
    sc = natural_scale("kl", B, Sw, config.di_eps)
    tuned = tune_arms({"kl_ref": TuningSpec(
        grid=[{"lam": r * sc, "rel": r} for r in config.lam_grid], maximize=False, budget=budget,
        validate=lambda p: _linear_cost(A, B, _gain("kl", A, B, Q, Sw, p["lam"], g, config.di_eps), Q, Sw, g,
                                        val[0], val[1], T))})
    lam_ref = tuned["kl_ref"].chosen["lam"]
    tuning["kl_ref@di_fb"] = tuned["kl_ref"]
    metrics["kl_ref"]["edge_di_fb"] = float(at_edge(tuned["kl_ref"], config.lam_grid))
    for s2, Sw in noises.items():
        for arm in FIXED:
            K = _gain(arm, A, B, Q, Sw, config.paper_lam, g, config.di_eps)
            metrics[arm][f"gain_di_fb_{_fmt(s2)}"] = float(np.linalg.norm(K[0, :2]))
            metrics[arm][f"rho_di_fb_{_fmt(s2)}"] = spectral_radius(A - B @ K)
        K = _gain("kl", A, B, Q, Sw, lam_ref, g, config.di_eps)
        metrics["kl_ref"][f"gain_di_fb_{_fmt(s2)}"] = float(np.linalg.norm(K[0, :2]))
        metrics["kl_ref"][f"rho_di_fb_{_fmt(s2)}"] = spectral_radius(A - B @ K)
    extras["double_integrator"] = table


def _e3(config: Config, rng, metrics, tuning, extras) -> None:
    cp = CartPole()
    A, B = cp.linearize()
    Q = np.diag([1.0, 1.0, 10.0, 1.0])  # brief section 2.4 (not confirmed in the paper)
    g, T, N = config.cp_gamma, config.cp_horizon, config.cp_rollouts
    budget = {"rollouts": N, "horizon": T}
    table = {}
    tuned_kl = {}
    for s2 in config.cp_levels:
        Sw = s2 * np.eye(4)
        reg = f"cp_{_fmt(s2)}"
        val = (rng.uniform(-0.05, 0.05, size=(N, 4)), int(rng.integers(2**31)))  # gymnasium reset
        test = (rng.uniform(-0.05, 0.05, size=(N, 4)), int(rng.integers(2**31)))

        def design(arm, lam, Sw=Sw):
            return _gain(arm, A, B, Q, Sw, lam, g, config.cp_eps)

        def score(K, draws, Sw=Sw):
            sim = cp.simulate(K, draws[0], T, Sw, np.random.default_rng(draws[1]), Q)
            return float(np.mean(sim["state_cost"] + config.cp_r_eval * sim["energy"]))

        tuned, out = _tune_and_test(TUNED, design, score, config.lam_grid, budget, val, test,
                                    lambda a, Sw=Sw: natural_scale(a, B, Sw, config.cp_eps))
        tuned_kl[s2] = tuned["kl"]
        for arm, (K, cost) in out.items():
            metrics[arm][f"cost_{reg}"] = cost
            metrics[arm][f"edge_{reg}"] = float(at_edge(tuned[arm], config.lam_grid))
            metrics[arm][f"gain_{reg}"] = float(abs(K[0, 0]))
            metrics[arm][f"rho_{reg}"] = spectral_radius(A - B @ K)
            tuning[f"{arm}@{reg}"] = tuned[arm]
        for arm in FIXED:
            K = design(arm, config.paper_lam)
            metrics[arm][f"gain_{reg}"] = float(abs(K[0, 0]))
            metrics[arm][f"rho_{reg}"] = spectral_radius(A - B @ K)
            metrics[arm][f"survival_{reg}"] = float(np.mean(
                cp.simulate(K, test[0], T, Sw, np.random.default_rng(test[1]), Q)["survival"]))
        table[reg] = {a: {"lam": tuned[a].chosen["lam"], "rel": tuned[a].chosen["rel"],
                          "at_edge": at_edge(tuned[a], config.lam_grid), "test_cost": c,
                          "cart_gain": float(abs(K_[0, 0]))}
                      for a, (K_, c) in out.items()}
    # kl_ref: KL at the best fixed λ, the one tuned at the largest noise level, held fixed as σ² falls
    ref = tuned_kl[max(config.cp_levels)]
    metrics["kl_ref"]["edge_cp"] = float(at_edge(ref, config.lam_grid))
    tuning["kl_ref@cp"] = ref
    for s2 in config.cp_levels:
        K = design("kl", ref.chosen["lam"], Sw=s2 * np.eye(4))
        metrics["kl_ref"][f"gain_cp_{_fmt(s2)}"] = float(abs(K[0, 0]))
        metrics["kl_ref"][f"rho_cp_{_fmt(s2)}"] = spectral_radius(A - B @ K)
    extras["cartpole"] = table


ARMS = ("kl", "wkl", "kwkl", "lqr", "kl_fixed", "wkl_fixed", "kwkl_fixed", "kl_ref", "kwkl_eps0")


def run(config: Config, seed: int) -> SeedOutput:
    rng = np.random.default_rng(seed)
    metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
    tuning: dict = {}
    extras: dict = {}
    with phase("divergences"):
        for arm, vals in _e1(config, np.random.default_rng([seed, 1])).items():
            metrics[arm].update(vals)
    with phase("double_integrator"):
        _e2(config, np.random.default_rng([seed, 2]), metrics, tuning, extras)
    with phase("cartpole"):
        _e3(config, np.random.default_rng([seed, 3]), metrics, tuning, extras)
    del rng
    return SeedOutput(metrics=metrics, extras=extras, tuning=tuning)


# ----------------------------------------------------------------------------------------------
# claims (rules fixed before the quick run; README: what changed after the review and why)
# ----------------------------------------------------------------------------------------------


def _every(values, ok) -> bool:
    return all(ok(float(v)) for v in values)


def _divergence_rule(eq_arm: str):
    def rule(m, c) -> Decision:
        dev = m[eq_arm]["div_eq_dev"]
        ell = m["wkl"]["div_ell_dev"]
        growth = m["kl"]["div_growth"]
        sat = m["kwkl"]["div_sat_ratio"]
        err = list(m["wkl"]["div_oracle_err"]) + list(m["kwkl"]["div_oracle_err"])
        small = m["wkl"]["div_small_eig_err"]
        ok = {
            "finite_equal_cov": _every(dev, lambda v: v <= 1e-6),
            "finite_elliptic": _every(ell, lambda v: v <= 1e-6),
            "kl_blows_up": _every(growth, lambda v: v >= 1e8),
            "kwkl_saturates": _every(sat, lambda v: v <= 1.0 + 1e-6),
            "closed_form_vs_oracle": _every(err, lambda v: v <= 0.01),
            "small_eigenvalues_per_direction": _every(small, lambda v: v <= 1e-6),
        }
        verdict = REPRODUCED if all(ok.values()) else NOT_REPRODUCED
        ours = (f"{eq_arm} max|D/(0.5|dm|^2)-1|={max(dev):.2g}; KL(s_min)/KL(1)={min(growth):.3g}; "
                f"closed form vs oracle max rel err={max(err):.2g}; small-eigenvalue pairs vs 1-D formula "
                f"{max(small):.2g}")
        # closed forms and a shooting oracle: no seed noise, an exact check
        return Decision(verdict, ours, {"checks": ok, "dev": list(dev), "growth": list(growth),
                                        "oracle_err": err, "sat": list(sat), "small_eig_err": list(small)},
                        mde=0.0, n=len(dev), uses_se=False)

    return rule


def _structure_label(structure: str) -> str:
    return {"isotropic": "sigma2*I", "anisotropic": "diag(1,sigma2,1,1)",
            "degenerating": "velocity correlation 1-sigma2"}[structure]


def _edges(m, arms, reg: str) -> list[str]:
    """The arms (of those a rule reads) whose tuned optimum sat at an end of their grid in some seed."""
    return [a for a in arms if any(float(v) > 0 for v in m[a].get(f"edge_{reg}", ()))]


def _refused(edges: list[str], reg: str, d: Decision) -> Decision:
    """A regime whose rule reads an arm tuned to an end of its grid: refused (inconclusive)."""
    why = f"tuning: optimum at the grid's edge for {', '.join(edges)} (refused)"
    return dataclasses.replace(d, verdict=INCONCLUSIVE, ours=f"[{why}] {d.ours}",
                               evidence={**d.evidence, "edge_arms": edges, "refused": why})


def _perf_regime(m, key: str, reg: str, arm: str = "wkl", base_arm: str = "kl",
                 explain: str | None = "lqr") -> Decision:
    """One regime of a performance claim, judged at each arm's tuned optimum.

    ``arm`` must beat ``base_arm`` (:func:`_beats`). With ``explain`` (the plain ``lqr`` arm): when
    ``explain`` beats ``base_arm`` too, the regime is reproduced only if ``arm`` also beats ``explain``
    with the same rule, else it is ``not reproduced (explained by lqr)`` -- the lqr explanation judged in
    *this* regime (CLAIMS.md rule 10). An arm the rule reads tuned to an end of its grid refuses the
    regime (inconclusive).
    """
    d = _beats(m, arm, key, base_arm)
    read = [arm, base_arm] + ([explain] if explain else [])
    ev = {"vs_base": d.evidence}
    verdict, note = d.verdict, ""
    if explain:
        c = _beats(m, explain, key, base_arm)
        ev["control_vs_base"] = {"verdict": c.verdict, **c.evidence}
        explained = False
        if d.verdict == REPRODUCED and c.verdict == REPRODUCED:
            bey = _beats(m, arm, key, explain)
            ev["vs_control"] = {"verdict": bey.verdict, **bey.evidence}
            explained = bey.verdict != REPRODUCED
            verdict = NOT_REPRODUCED if explained else REPRODUCED
            note = (f"; {explain} beats {base_arm} too -> " +
                    (f"explained by {explain} ({bey.ours})" if explained else f"beyond {explain} ({bey.ours})"))
        else:
            note = f"; {explain} vs {base_arm}: {c.verdict}"
        ev["explained_by_" + explain] = explained
    if d.verdict != REPRODUCED and np.array_equal(np.asarray(m[arm][key]), np.asarray(m[base_arm][key])):
        note += f" ({arm} = {base_arm} exactly: the same controller at the tuned optimum)"
    out = Decision(verdict, d.ours + note, ev, mde=d.mde, n=d.n, uses_se=True)
    edges = _edges(m, read, reg)
    return _refused(edges, reg, out) if edges else out


def _perf_regimes(m, c: Config, arm: str, base_arm: str = "kl",
                  explain: str | None = "lqr") -> list[tuple[str, Decision]]:
    regs = []
    for sysname in ("di", "di_unequal"):
        for structure in c.di_structures:
            for s2 in c.di_levels:
                reg = f"{sysname}_{structure}_{_fmt(s2)}"
                label = f"{sysname} {structure} ({_structure_label(structure)}), sigma2={_fmt(s2)}"
                regs.append((label, _perf_regime(m, f"cost_{reg}", reg, arm, base_arm, explain)))
    return regs


PERF_MARGIN = 0.01
"""Performance claims: the mean gap must exceed this fraction of the baseline's cost (and 2 s.e.)."""


def _beats(m, arm: str, key: str, base_arm: str = "kl") -> Decision:
    """``arm`` below ``base_arm`` (retuned KL by default) on ``key``; the mde is relative to the
    baseline's mean cost (the effect is a fraction of it)."""
    base = m[base_arm][key]
    scale = abs(float(np.mean(base)))
    min_gap = PERF_MARGIN * scale
    d = paired_improvement(m[arm][key], base, higher_is_better=False, min_gap=min_gap,
                           label=f"{arm} vs {'retuned kl' if base_arm == 'kl' else base_arm}: ")
    kw = float(np.mean(m["kwkl"][key]))
    # the paired rule's mde max(min_gap, 2 s.e.) in units of the baseline's cost (computed from its
    # parts so that the margin is exactly PERF_MARGIN, not a rounding of min_gap / scale)
    mde_rel = (max(PERF_MARGIN, 2.0 * d.evidence["gap_se"] / scale)
               if scale > 0 and d.mde is not None and math.isfinite(d.mde) else math.inf)
    return dataclasses.replace(d, ours=d.ours + f"; kwkl {kw:.4g}",
                               evidence={**d.evidence, "kwkl_mean": kw,
                                         "mde_relative": mde_rel if math.isfinite(mde_rel) else None},
                               mde=mde_rel)


def _di_rule(arm: str, base_arm: str = "kl", explain: str | None = "lqr"):
    def rule(m, c) -> Decision:
        return per_regime(_perf_regimes(m, c, arm, base_arm, explain), require="all")
    return rule


def _cp_rule(arm: str, base_arm: str = "kl", explain: str | None = "lqr"):
    def rule(m, c) -> Decision:
        return per_regime([(f"cart-pole sigma2={_fmt(s2)}",
                            _perf_regime(m, f"cost_cp_{_fmt(s2)}", f"cp_{_fmt(s2)}", arm, base_arm, explain))
                           for s2 in c.cp_levels], require="all")
    return rule


RHO_LOST = 0.99
"""Spectral radius at or above which a closed loop has lost nontrivial feedback (brief: rho_KL >= 0.99)."""


def _feedback_rule(arm: str, ref: str = "kl_fixed"):
    """Well-posedness at a FIXED λ, across noise levels (issue 47), per system.

    As the noise falls, the KL controller ``ref`` (at the paper's λ by default) has lost its feedback at
    the smallest level (ρ >= 0.99 and a low-noise gain < 0.05 x ``arm``'s there), while ``arm`` keeps
    feedback (ρ < 0.99) at every level of the sweep. Gains come from the exact DARE at a λ fixed (or, for
    ``kl_ref``, chosen once at the largest level) before the rule reads them; the rule reads seed means
    with no s.e.: mde 0. An arm tuned to an end of its grid refuses the system (inconclusive)."""

    def one(m, sysname, levels, label) -> tuple[str, Decision]:
        lo = _fmt(min(levels))
        mean = lambda a, k: float(np.mean(m[a][k]))  # noqa: E731
        g_x, g_kl = mean(arm, f"gain_{sysname}_{lo}"), mean(ref, f"gain_{sysname}_{lo}")
        r_kl = mean(ref, f"rho_{sysname}_{lo}")
        r_x = {_fmt(s): mean(arm, f"rho_{sysname}_{_fmt(s)}") for s in levels}
        ok = {"kl_loses_feedback_at_smallest": r_kl >= RHO_LOST, "gain_ratio": g_kl < 0.05 * g_x,
              "keeps_feedback_every_level": max(r_x.values()) < RHO_LOST}
        ours = (f"at sigma2={lo}: gain {arm} {g_x:.3g} vs {ref} {g_kl:.3g}, rho {ref} {r_kl:.4f}; rho {arm} "
                "over levels " + ", ".join(f"{k}: {v:.4f}" for k, v in r_x.items()))
        d = Decision(REPRODUCED if all(ok.values()) else NOT_REPRODUCED, ours,
                     {"checks": ok, "gain": g_x, f"gain_{ref}": g_kl, f"rho_{ref}": r_kl, "rho_by_level": r_x},
                     mde=0.0, n=len(m[arm][f"rho_{sysname}_{lo}"]), uses_se=False)
        # fixed-λ arms have no tuning grid and so no grid edge; the tuned reference has one
        edges = [a for a in (arm, ref)
                 if a not in FIXED and any(float(v) > 0 for v in m[a][f"edge_{sysname}"])]
        return label, (_refused(edges, sysname, d) if edges else d)

    def rule(m, c) -> Decision:
        return per_regime([
            one(m, "di_fb", c.di_fb_levels,
                f"double integrator diag(s,s,{_fmt(c.di_fb_high)},{_fmt(c.di_fb_high)}), "
                f"s in {{{', '.join(_fmt(s) for s in c.di_fb_levels)}}}"),
            one(m, "cp", c.cp_levels, f"cart-pole sigma2 in {{{', '.join(_fmt(s) for s in c.cp_levels)}}}"),
        ], require="all")

    return rule


_TUNING = ("every arm's λ chosen on validation noise draws from the same relative grid lam_grid times the arm's "
           "natural scale tr(B'B)/tr(M_arm) (KL: ~sigma2 for isotropic noise) (tune_arms: equal grid size and "
           "rollout budget), cost measured on fresh draws with common random numbers; an optimum at an end of an "
           "arm's grid is recorded (edge_<regime>) and refuses the regime that reads it")
_LQR = ("'lqr': the plain noise-independent penalty R = (λ/2) I with λ tuned the same way. It lacks the "
        "transport geometry but shares WKL's noise independence, and its shape is the evaluation's control cost "
        "(the optimal penalty family for it by construction). Judged per regime: where it beats the retuned KL "
        "too, the regime counts for WKL only if WKL also beats lqr (else 'explained by lqr' in that regime). On "
        "the first system (B^T B = I) and on the single-input cart-pole lqr's penalty family is WKL's.")

# Declared metrics (harness.metrics): what each arm writes; the runner refuses anything else. A
# ``*`` is a regime (system, noise structure, noise level), never part of a metric's name.
_TUNED_METRICS = ("cost_di_*", "edge_di_*", "cost_cp_*", "edge_cp_*", "gain_cp_*", "rho_cp_*")
_FIXED_METRICS = ("gain_cp_*", "rho_cp_*", "gain_di_fb_*", "rho_di_fb_*")
METRICS = {
    ("kl", "wkl", "kwkl", "lqr"): _TUNED_METRICS,
    "kl": ("div_growth",),
    "wkl": ("div_eq_dev", "div_ell_dev", "div_oracle_err", "div_small_eig_err"),
    "kwkl": ("div_sat_ratio", "div_oracle_err"),
    "kwkl_eps0": ("div_eq_dev",),
    ("kl_fixed", "wkl_fixed", "kwkl_fixed"): (*_FIXED_METRICS, "survival_cp_*"),
    "kl_ref": (*_FIXED_METRICS, "edge_cp", "edge_di_fb"),
}

CLAIMS = (
    Claim(
        id="divergence_finite",
        statement="Classical KL between equal-covariance Gaussians blows up as the covariance degenerates; the "
                  "Wasserstein analog stays 0.5|dm|^2 for every scale (also for elliptic laws) and the "
                  "regularised Kalman-Wasserstein analog stays bounded; the closed forms equal the dynamical "
                  "(path-energy) definition, also for pairs whose small eigenvalues differ by orders of "
                  "magnitude.",
        paper_value="qualitative (abstract; closed forms in the paper, not retrievable here)",
        metric="max relative deviation of WKL from 0.5|dm|^2 over S = sI; KL(s_min)/KL(1); closed form vs "
               "shooting oracle; diag(1,a) -> diag(1,b) vs the 1-D formula per direction",
        scale="exact computation, n = 3 sweep, random SPD pairs n in div_dims (cond <= 20)",
        rule="every seed: WKL and elliptic-WKL deviation <= 1e-6, KL growth >= 1e8, eps*KWKL_eps/(0.5|dm|^2) "
             "<= 1 + 1e-6, closed forms within 1% of the oracle, small-eigenvalue pairs within 1e-6 of the "
             "per-direction formula",
        decide=_divergence_rule("wkl"),
        control_description="same rule with the KW divergence at eps = 0 (the regulariser disabled: it equals "
                            "the Fisher-Rao/KL value) in place of WKL",
        control=_divergence_rule("kwkl_eps0"),
        arms=ClaimArms(method="wkl", baselines=("kl", "kwkl"), control="kwkl_eps0"),
        effect=0.01,
        effect_source="smallest that matters: a 1 % error of a closed form (the oracle tolerance), our "
                      "choice; exact computation (mde 0)",
    ),
    Claim(
        id="feedback",
        statement="Well-posedness at a FIXED λ: as the process noise vanishes, with λ held fixed across the noise "
                  "levels, the KL penalty becomes singular and the KL controller loses nontrivial feedback "
                  "(spectral radius of A - BK -> 1, low-noise gain -> 0), while the WKL controller keeps it at "
                  "every level (abstract: 'preserve nontrivial feedback'; the brief's criteria). Not a performance "
                  "claim: a KL whose λ is retuned at each noise level is judged by the performance claims",
        paper_value="qualitative (abstract); brief: cart-pole at sigma2 = 1e-6 KL's cart-position gain < 1% of "
                    "WKL's, rho_KL = 0.9999 vs rho_WKL = 0.983",
        metric="low-noise-direction gain (double integrator: axis-1 row norm; cart-pole: |K| on cart position) and "
               "spectral radius of A - BK, at the paper's fixed λ, at each noise level of the sweep",
        scale="laptop-scale: 2-D double integrator with noise diag(s,s,10,10), s in di_fb_levels (s = 1e-5 is the "
              "third-party script's); cart-pole (gymnasium constants, Euler tau = 0.02, gamma = 0.99) at sigma2 in "
              "cp_levels; exact DARE",
        rule="per system, λ fixed across its noise levels: at the smallest level rho_KL >= 0.99 and KL's low-noise "
             "gain < 0.05 x WKL's (KL lost feedback), and rho_WKL < 0.99 at every level (WKL keeps it); both "
             "systems; a system whose rule reads an arm tuned to an end of its grid is refused (inconclusive)",
        decide=_feedback_rule("wkl_fixed"),
        control_description="KL at its best FIXED λ ('kl_ref': λ tuned once on validation draws at the largest "
                            "noise level of the sweep, natural-scale grid, then held fixed as the noise falls), "
                            "in place of WKL: if it keeps feedback at every level too, the collapse is a badly "
                            "chosen λ, not a singular penalty",
        control=_feedback_rule("kl_ref"),
        arms=ClaimArms(method="wkl_fixed", baselines=("kl_fixed", "kwkl_fixed"), control="kl_ref"),
        effect=0.9999 - 0.983,
        effect_source="brief: cart-pole sigma2 = 1e-6, rho_KL 0.9999 vs rho_WKL 0.983 (gap 0.017); exact "
                      "DARE (mde 0)",
        beyond=_feedback_rule("wkl_fixed", ref="kl_ref"),
    ),
    Claim(
        id="double_integrator_performance",
        statement="With equal tuning effort the WKL-regularised controller regulates the double integrator better "
                  "than the KL-regularised one (abstract: 'better closed-loop performance'), judged per noise "
                  "structure, noise level and input configuration",
        paper_value="qualitative (abstract: 'better closed-loop performance')",
        metric="discounted cost E sum gamma^t (x'x + u'u) on fresh noise draws (lower is better); KWKL reported",
        scale="laptop-scale: 2-D double integrator, unit input gains ('di', B^T B = I, so WKL's penalty is the "
              "evaluation's control cost: favourable to WKL by construction) and gains di_input_gains "
              "('di_unequal'); noise isotropic / anisotropic / degenerating at di_levels; " + _TUNING,
        rule="per regime, at each arm's tuned optimum: WKL's test cost below the retuned KL's in every seed, mean "
             "gap > 1% of KL's cost and > 2 s.e.; where lqr passes that too, WKL must also beat lqr by the same "
             "rule (else 'explained by lqr' in that regime); a regime reading an arm tuned to an end of its grid "
             "is refused (inconclusive); reproduced iff in every regime",
        decide=_di_rule("wkl"),
        control_description=_LQR,
        control=_di_rule("lqr", explain=None),
        arms=ClaimArms(method="wkl", baselines=("kl", "kwkl"), control="lqr"),
        effect=PERF_MARGIN,
        effect_source="smallest that matters: 1 % of the retuned KL's cost (the rule's margin; paper "
                      "qualitative); mde relative to KL's mean cost, largest over regimes",
        beyond=_di_rule("wkl", base_arm="lqr", explain=None),
    ),
    Claim(
        id="cartpole_performance",
        statement="With equal tuning effort the WKL-regularised controller balances the nonlinear cart-pole with "
                  "process noise at lower cost than the KL-regularised one, at every noise level",
        paper_value="qualitative (abstract: 'better closed-loop performance')",
        metric="mean per-step cost x'Qx + cp_r_eval F^2 over cp_horizon steps (frozen at failure) on fresh draws",
        scale="laptop-scale: gymnasium constants, Euler tau = 0.02, gamma = 0.99, isotropic noise at cp_levels; "
              + _TUNING,
        rule="per noise level, at each arm's tuned optimum: WKL's test cost below the retuned KL's in every seed, "
             "mean gap > 1% and > 2 s.e.; where lqr passes that too, WKL must also beat lqr (else 'explained by "
             "lqr' at that level); a level reading an arm tuned to an end of its grid is refused (inconclusive); "
             "reproduced iff at every level",
        decide=_cp_rule("wkl"),
        control_description=_LQR,
        control=_cp_rule("lqr", explain=None),
        arms=ClaimArms(method="wkl", baselines=("kl", "kwkl"), control="lqr"),
        effect=PERF_MARGIN,
        effect_source="smallest that matters: 1 % of the retuned KL's cost (the rule's margin; paper "
                      "qualitative); mde relative to KL's mean cost, largest over levels",
        beyond=_cp_rule("wkl", base_arm="lqr", explain=None),
    ),
)


# ----------------------------------------------------------------------------------------------
# plots
# ----------------------------------------------------------------------------------------------


def plot(config: Config, outputs, outdir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    colors = {"kl": "C3", "wkl": "C0", "kwkl": "C2", "lqr": "0.5"}
    systems = ("di", "di_unequal")
    fig, axes = plt.subplots(len(systems), len(config.di_structures),
                             figsize=(4 * len(config.di_structures), 3.2 * len(systems)), squeeze=False)
    for i, sysname in enumerate(systems):
        for j, structure in enumerate(config.di_structures):
            ax = axes[i][j]
            for arm in TUNED:
                ys = [np.mean([o.metrics[arm][f"cost_{sysname}_{structure}_{_fmt(s2)}"] for o in outputs])
                      for s2 in config.di_levels]
                ax.loglog(config.di_levels, ys, "o-", color=colors[arm], label=arm, ms=3)
            ax.invert_xaxis()
            ax.set(title=f"{sysname}, {structure}", xlabel="noise level sigma^2", ylabel="test cost")
    axes[0][0].legend(fontsize=7)
    paths = [save_figure(fig, outdir / "double_integrator_tuned.png", dpi=110)]
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    for arm in TUNED:
        ys = [np.mean([o.metrics[arm][f"cost_cp_{_fmt(s2)}"] for o in outputs]) for s2 in config.cp_levels]
        ax.loglog(config.cp_levels, ys, "o-", color=colors[arm], label=arm, ms=3)
    ax.invert_xaxis()
    ax.set(title="cart-pole, tuned λ", xlabel="noise level sigma^2", ylabel="test cost / step")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "cartpole_tuned.png", dpi=110))
    return paths

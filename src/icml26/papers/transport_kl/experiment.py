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

Detectability and knobs (CLAIMS.md rules 8-9). The divergence and feedback checks are exact
computations (closed forms, DARE at a fixed λ): mde 0. The performance claims' effect is relative,
1 % of the retuned KL's cost (their rule's own margin), so each regime's mde is the paired rule's mde
divided by KL's mean cost. Issue 47: extending the λ grid down to 1e-9 flipped ``feedback``, so the
lower end of ``lam_grid`` is a protocol knob (``PROTOCOL_KNOBS``), swept in ``full``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml26.harness import (
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

from .control import discounted_dlqr, kl_regularized_lqr, simulate_linear, spectral_radius
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
"""The full profile's λ grid (1/3 decade)."""
LOW_LAM_GRID = tuple(float(x) for x in np.logspace(-9, 4, 25))
"""The same number of points with the lower end at 1e-9 (issue 47: KL's λ ~ σ² λ_WKL leaves the grid
at low noise; this grid flipped ``feedback`` in the review)."""


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
        The λ grid every tuned arm shares (our choice: 1e-3 .. 1e3, 9 points). λ = 0 ("off") is not
        admissible: the Riccati equation needs a positive definite control weight.
    paper_lam
        λ of the fixed-weight arms (``half=True``; 2.0 = the third-party script's λ = 1).
    di_gamma, di_eps
        Double integrator discount and KW ε (third-party script: 0.9 and 1).
    di_levels, di_structures, di_input_gains
        E2 regimes: noise levels σ², noise structures, and the input gains of the second system
        (the first has unit gains, so its B^T B = I equals the evaluation's control weight).
    di_fixed_noise
        The third-party anisotropic noise diag(1e-5, 1e-5, 10, 10) for the feedback claim.
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
    lam_grid: tuple[float, ...] = tuple(float(x) for x in np.logspace(-3, 3, 9))
    paper_lam: float = 2.0
    di_gamma: float = 0.9
    di_eps: float = 1.0
    di_levels: tuple[float, ...] = (1e-1, 1e-3, 1e-6)
    di_structures: tuple[str, ...] = ("isotropic", "anisotropic", "degenerating")
    di_input_gains: tuple[float, ...] = (1.0, 0.2)
    di_fixed_noise: tuple[float, ...] = (1e-5, 1e-5, 10.0, 10.0)
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
        "di_levels": (1e-10, 1.0), "di_input_gains": (1e-3, 1e3), "di_fixed_noise": (1e-12, 1e6),
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
        if len(self.di_fixed_noise) != 4:
            self.out_of_range("di_fixed_noise", "four variances (state order p1, v1, p2, v2)")
        if len(set(self.lam_grid)) != len(self.lam_grid):
            self.out_of_range("lam_grid", "distinct values")

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


PROTOCOL_KNOBS = {"lam_grid": (FULL_LAM_GRID, LOW_LAM_GRID)}
"""Verdict stability (CLAIMS.md rule 9): the lower end of the shared λ grid, every arm at the same
grid of 25 points (full: one more full run)."""


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
    if arm == "lqr":
        return discounted_dlqr(A, B, Q, 0.5 * lam * np.eye(B.shape[1]), gamma)[0]
    div = arm.removesuffix("_fixed")
    return kl_regularized_lqr(A, B, Q, Sw, divergence=div, lam=lam, gamma=gamma, eps=eps)[0]


def _linear_cost(A, B, K, Q, Sw, gamma, x0, noise_seed, T) -> float:
    """Mean discounted cost sum_t gamma^t (x'Qx + u'u) over rollouts (common random numbers)."""
    xs, us = simulate_linear(A, B, K, Sw, x0, T, np.random.default_rng(noise_seed))
    disc = gamma ** np.arange(T)
    stage = np.einsum("ntj,jk,ntk->nt", xs[:, :T], Q, xs[:, :T]) + np.sum(us**2, axis=2)
    return float(np.mean(stage @ disc))


def _tune_and_test(arms, design, score, grid, budget, val, test) -> tuple[dict, dict]:
    """tune_arms on the validation draws, then the chosen gain scored on fresh test draws."""
    specs = {a: TuningSpec(grid=[{"lam": lam} for lam in grid],
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

                tuned, out = _tune_and_test(TUNED, design, score, config.lam_grid, budget, val, test)
                for arm, (_, cost) in out.items():
                    metrics[arm][f"cost_{reg}"] = cost
                    tuning[f"{arm}@{reg}"] = tuned[arm]
                table[reg] = {a: {"lam": tuned[a].chosen["lam"], "test_cost": c}
                              for a, (_, c) in out.items()}
    # the third-party anisotropic setting at the paper's fixed λ, and the KL arm tuned there
    A, B = double_integrator(dims=2)
    Sw = np.diag(config.di_fixed_noise)
    for arm in FIXED:
        K = _gain(arm, A, B, Q, Sw, config.paper_lam, g, config.di_eps)
        metrics[arm]["gain_di_fixed"] = float(np.linalg.norm(K[0, :2]))
        metrics[arm]["rho_di_fixed"] = spectral_radius(A - B @ K)
    val = (rng.standard_normal((config.n_rollouts, 4)), int(rng.integers(2**31)))
    tuned = tune_arms({"kl": TuningSpec(
        grid=[{"lam": lam} for lam in config.lam_grid], maximize=False, budget=budget,
        validate=lambda p: _linear_cost(A, B, _gain("kl", A, B, Q, Sw, p["lam"], g, config.di_eps), Q, Sw, g,
                                        val[0], val[1], T))})
    K = _gain("kl", A, B, Q, Sw, tuned["kl"].chosen["lam"], g, config.di_eps)
    metrics["kl"]["gain_di_fixed"] = float(np.linalg.norm(K[0, :2]))
    metrics["kl"]["rho_di_fixed"] = spectral_radius(A - B @ K)
    tuning["kl@di_fixed"] = tuned["kl"]
    extras["double_integrator"] = table


def _e3(config: Config, rng, metrics, tuning, extras) -> None:
    cp = CartPole()
    A, B = cp.linearize()
    Q = np.diag([1.0, 1.0, 10.0, 1.0])  # brief section 2.4 (not confirmed in the paper)
    g, T, N = config.cp_gamma, config.cp_horizon, config.cp_rollouts
    budget = {"rollouts": N, "horizon": T}
    table = {}
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

        tuned, out = _tune_and_test(TUNED, design, score, config.lam_grid, budget, val, test)
        for arm, (K, cost) in out.items():
            metrics[arm][f"cost_{reg}"] = cost
            metrics[arm][f"gain_{reg}"] = float(abs(K[0, 0]))
            metrics[arm][f"rho_{reg}"] = spectral_radius(A - B @ K)
            tuning[f"{arm}@{reg}"] = tuned[arm]
        for arm in FIXED:
            K = design(arm, config.paper_lam)
            metrics[arm][f"gain_{reg}"] = float(abs(K[0, 0]))
            metrics[arm][f"rho_{reg}"] = spectral_radius(A - B @ K)
            metrics[arm][f"survival_{reg}"] = float(np.mean(
                cp.simulate(K, test[0], T, Sw, np.random.default_rng(test[1]), Q)["survival"]))
        table[reg] = {a: {"lam": tuned[a].chosen["lam"], "test_cost": c, "cart_gain": float(abs(K_[0, 0]))}
                      for a, (K_, c) in out.items()}
    extras["cartpole"] = table


ARMS = ("kl", "wkl", "kwkl", "lqr", "kl_fixed", "wkl_fixed", "kwkl_fixed", "kwkl_eps0")


def run(config: Config, seed: int) -> SeedOutput:
    rng = np.random.default_rng(seed)
    metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
    tuning: dict = {}
    extras: dict = {}
    for arm, vals in _e1(config, np.random.default_rng([seed, 1])).items():
        metrics[arm].update(vals)
    _e2(config, np.random.default_rng([seed, 2]), metrics, tuning, extras)
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


def _perf_regimes(m, c: Config, arm: str, base_arm: str = "kl") -> list[tuple[str, Decision]]:
    regs = []
    for sysname in ("di", "di_unequal"):
        for structure in c.di_structures:
            for s2 in c.di_levels:
                key = f"cost_{sysname}_{structure}_{_fmt(s2)}"
                label = f"{sysname} {structure} ({_structure_label(structure)}), sigma2={_fmt(s2)}"
                regs.append((label, _beats(m, arm, key, base_arm)))
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


def _di_rule(arm: str, base_arm: str = "kl"):
    def rule(m, c) -> Decision:
        return per_regime(_perf_regimes(m, c, arm, base_arm), require="all")
    return rule


def _cp_rule(arm: str, base_arm: str = "kl"):
    def rule(m, c) -> Decision:
        return per_regime([(f"cart-pole sigma2={_fmt(s2)}", _beats(m, arm, f"cost_cp_{_fmt(s2)}", base_arm))
                           for s2 in c.cp_levels], require="all")
    return rule


RHO_LOST = 0.99
"""Spectral radius at or above which a closed loop has lost nontrivial feedback (brief: rho_KL >= 0.99)."""


def _feedback_rule(arm: str, ref: str = "kl_fixed"):
    """``arm`` keeps nontrivial feedback where the KL controller ``ref`` (at the paper's λ by
    default) loses it. The gains come from the exact DARE at a λ fixed or chosen before the rule
    reads them, and the rule reads seed means with no s.e.: mde 0 (an exact check)."""

    def one(m, gain_key, rho_key, label) -> tuple[str, Decision]:
        g_x, g_kl = float(np.mean(m[arm][gain_key])), float(np.mean(m[ref][gain_key]))
        r_x, r_kl = float(np.mean(m[arm][rho_key])), float(np.mean(m[ref][rho_key]))
        ok = {"kl_loses_feedback": r_kl >= RHO_LOST, "gain_ratio": g_kl < 0.05 * g_x,
              "keeps_feedback": r_x < RHO_LOST}
        ours = (f"low-noise gain {arm} {g_x:.3g} vs {ref} {g_kl:.3g}; rho(A-BK) {arm} {r_x:.4f} vs {ref} "
                f"{r_kl:.4f}")
        return label, Decision(REPRODUCED if all(ok.values()) else NOT_REPRODUCED, ours,
                               {"checks": ok, "gain": g_x, f"gain_{ref}": g_kl, "rho": r_x,
                                f"rho_{ref}": r_kl},
                               mde=0.0, n=len(m[arm][rho_key]), uses_se=False)

    def rule(m, c) -> Decision:
        regs = [one(m, "gain_di_fixed", "rho_di_fixed", "double integrator diag(1e-5,1e-5,10,10)")]
        regs += [one(m, f"gain_cp_{_fmt(s2)}", f"rho_cp_{_fmt(s2)}", f"cart-pole sigma2={_fmt(s2)}")
                 for s2 in c.cp_levels]
        return per_regime(regs, require="all")

    return rule


_TUNING = ("every arm's λ chosen from the same grid lam_grid on validation noise draws (tune_arms: equal grid "
           "and rollout budget), cost measured on fresh draws with common random numbers")
_LQR = ("'lqr': the plain noise-independent penalty R = (λ/2) I with λ tuned the same way. It lacks the "
        "transport geometry but shares WKL's noise independence, and its shape is the evaluation's control cost "
        "(the optimal penalty family for it by construction): if it also beats the retuned KL, the gain is "
        "noise independence, not the Wasserstein geometry. (The retuned KL that the review names as control is "
        "the *baseline* here, so the claim must beat it; on the first system, whose B^T B = I, 'lqr' equals "
        "WKL, on the second and on the cart-pole it does not.)")

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
        statement="As the process noise vanishes the KL penalty becomes singular and the KL controller loses "
                  "nontrivial feedback (spectral radius of A - BK -> 1, low-noise gain -> 0), while the WKL "
                  "controller keeps it (abstract: 'preserve nontrivial feedback'; the brief's criteria)",
        paper_value="qualitative (abstract); brief: cart-pole at sigma2 = 1e-6 KL's cart-position gain < 1% of "
                    "WKL's, rho_KL = 0.9999 vs rho_WKL = 0.983",
        metric="low-noise-direction gain (double integrator: axis-1 row norm; cart-pole: |K| on cart position) and "
               "spectral radius of A - BK, at the paper's fixed λ",
        scale="laptop-scale: 2-D double integrator with diag(1e-5,1e-5,10,10) (third-party script); cart-pole "
              "(gymnasium constants, Euler tau = 0.02, gamma = 0.99) at sigma2 in cp_levels; exact DARE",
        rule="per regime: rho_KL >= 0.99 (KL at the paper's λ lost feedback), KL's low-noise gain < 0.05 x WKL's, "
             "and rho_WKL < 0.99 (WKL keeps it); all regimes",
        decide=_feedback_rule("wkl_fixed"),
        control_description="the KL controller with its λ retuned (arm 'kl', tuned from the same grid as every "
                            "arm on validation draws): if it keeps nontrivial feedback too, the collapse is a "
                            "badly chosen λ, not a singular penalty",
        control=_feedback_rule("kl"),
        arms=ClaimArms(method="wkl_fixed", baselines=("kl_fixed", "kwkl_fixed"), control="kl"),
        effect=0.9999 - 0.983,
        effect_source="brief: cart-pole sigma2 = 1e-6, rho_KL 0.9999 vs rho_WKL 0.983 (gap 0.017); exact "
                      "DARE (mde 0)",
        beyond=_feedback_rule("wkl_fixed", ref="kl"),
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
        rule="per regime: WKL's test cost below the retuned KL's in every seed, mean gap > 1% of KL's cost and "
             "> 2 s.e.; reproduced iff in every regime",
        decide=_di_rule("wkl"),
        control_description=_LQR,
        control=_di_rule("lqr"),
        arms=ClaimArms(method="wkl", baselines=("kl", "kwkl"), control="lqr"),
        effect=PERF_MARGIN,
        effect_source="smallest that matters: 1 % of the retuned KL's cost (the rule's margin; paper "
                      "qualitative); mde relative to KL's mean cost, largest over regimes",
        beyond=_di_rule("wkl", base_arm="lqr"),
    ),
    Claim(
        id="cartpole_performance",
        statement="With equal tuning effort the WKL-regularised controller balances the nonlinear cart-pole with "
                  "process noise at lower cost than the KL-regularised one, at every noise level",
        paper_value="qualitative (abstract: 'better closed-loop performance')",
        metric="mean per-step cost x'Qx + cp_r_eval F^2 over cp_horizon steps (frozen at failure) on fresh draws",
        scale="laptop-scale: gymnasium constants, Euler tau = 0.02, gamma = 0.99, isotropic noise at cp_levels; "
              + _TUNING,
        rule="per noise level: WKL's test cost below the retuned KL's in every seed, mean gap > 1% and > 2 s.e.; "
             "reproduced iff at every level",
        decide=_cp_rule("wkl"),
        control_description=_LQR,
        control=_cp_rule("lqr"),
        arms=ClaimArms(method="wkl", baselines=("kl", "kwkl"), control="lqr"),
        effect=PERF_MARGIN,
        effect_source="smallest that matters: 1 % of the retuned KL's cost (the rule's margin; paper "
                      "qualitative); mde relative to KL's mean cost, largest over levels",
        beyond=_cp_rule("wkl", base_arm="lqr"),
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

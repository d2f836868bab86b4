"""Reproduction of NAMMD (arXiv 2507.12843): NAMMD vs MMD side by side on the same data and kernels.

Every decision is made by the public API (:func:`nammd_closeness_test`, :func:`mmd_closeness_test`,
:func:`nammd_two_sample_test`, :func:`mmd_two_sample_test`, :func:`power_proxy`), so a bug in the
library shows in the verdicts (``../shared/design/CLAIMS.md`` rule 6).

Sections (one ``run`` per seed, every arm on the same draws):

1. Closeness tests on exact Gaussian pairs (paper Thm 9 in v3 / Thm 7 in v1). For each of the
   paper's tolerances epsilon in {0.1, 0.3, 0.5} a reference pair R = (N(0, s_r I), N(delta_r e1,
   s_r I)) is built with NAMMD(R) = epsilon *exactly* (closed form; the official code reaches the
   same by gradient descent on samples), and eps_M = MMD^2(R). Size = rejection rate on R itself.
   Test pairs T = (N(0, s_t I), N(delta_t e1, s_t I)) with MMD^2(T) = ``mmd_ratio`` * MMD^2(R) and
   s_t = f * s_r for each f in ``test_var_factors``: f < 1 makes T more concentrated than R (larger
   RKHS norms: Thm 9's condition), f = 1 equally, f > 1 less concentrated.
2. sklearn digits + Gaussian pixel noise t: ranking by NAMMD_hat and "farther than the t0 reference?".
3. Permutation two-sample tests on Blob and HDGM (d = 10, as in the official code) with the Gaussian
   bandwidth selected *per statistic* on a training draw (official protocol, equal effort through
   :func:`icml26.harness.tuning.tune_arms`), then tested on independent draws.

Negative controls (extra arms, each the strongest arm lacking the mechanism, see the claims):
``nammd_equal_norm`` (the NAMMD-DCT where the test pair has the reference's norms: the norm
adaptation has nothing to adapt to), ``control_z0`` (threshold with z = 0), ``nammd_median`` (the
NAMMD permutation test without its power-based bandwidth selection).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from icml26.core.progress import phase
from icml26.core.stats import GaussianKernel, median_bandwidth
from icml26.harness import (
    Claim,
    ClaimArms,
    Decision,
    ExperimentConfig,
    SeedOutput,
    all_of,
    paired_improvement,
    per_regime,
    threshold_rule,
)
from icml26.harness.claims import NOT_REPRODUCED, REPRODUCED
from icml26.harness.plots import save_figure
from icml26.harness.tuning import TuningSpec, tune_arms

from .bandwidth import power_proxy
from .closeness import mmd_closeness_test, nammd_closeness_test, reference_epsilon
from .data import (
    add_pixel_noise,
    blob,
    boundary_shift,
    digits_noise_split,
    gaussian_pair,
    hdgm,
    matched_test_shift,
)
from .statistic import nammd_population_gaussian
from .two_sample import mmd_two_sample_test, nammd_two_sample_test


@dataclass(frozen=True)
class Config(ExperimentConfig):
    # 1. Gaussian closeness tests (brief §5.1; epsilons from the paper's Table 2; s_r, f our choice)
    dim: int = 2
    bandwidth: float = 1.0
    ref_var: float = 0.1  # NAMMD of this family reaches n/(2-n) = 0.71 > 0.5 at d=2, h=1
    epsilons: tuple[float, ...] = (0.1, 0.3, 0.5)  # paper Table 2's NAMMD tolerances
    test_var_factors: tuple[float, ...] = (0.25, 1.0, 2.0)  # more / equally / less concentrated
    mmd_ratio: float = 1.05
    dct_m: int = 200
    reps: int = 60
    alpha: float = 0.05  # paper: alpha = 0.05 throughout
    # 2. digits (brief §5.3)
    digits_m: int = 200
    digits_reps: int = 30
    noise_levels: tuple[float, ...] = (0.0, 1.0, 2.0, 3.0, 4.0)
    noise_ref: float = 1.0
    # 3. two-sample (brief §5.4; official: 25 bandwidths, HDGM d = 10, 100 permutations)
    ts_m: int = 200
    ts_train_m: int = 200
    ts_reps: int = 40
    ts_null_reps: int = 30
    ts_permutations: int = 100
    hdgm_dim: int = 10
    n_bandwidths: int = 25

    BOUNDS = {
        "dim": (1, 50), "bandwidth": (1e-6, None), "ref_var": (1e-6, None), "epsilons": (1e-6, 0.999),
        "test_var_factors": (1e-3, 100.0), "mmd_ratio": (1.0, 10.0), "dct_m": (4, None), "reps": (1, None),
        "alpha": (1e-6, 0.5), "digits_m": (4, 449), "digits_reps": (1, None), "noise_levels": (0.0, 16.0),
        "noise_ref": (0.0, 16.0), "ts_m": (4, None), "ts_train_m": (4, None), "ts_reps": (1, None),
        "ts_null_reps": (1, None), "ts_permutations": (1, None), "hdgm_dim": (2, 100),
        "n_bandwidths": (1, 100),
    }

    def extra_checks(self) -> None:
        if 1.0 not in self.test_var_factors:
            self.out_of_range("test_var_factors", "a tuple containing 1.0 (the equal-norm control regime)")
        if not any(f < 1.0 for f in self.test_var_factors):
            self.out_of_range("test_var_factors", "at least one factor < 1 (Thm 9's regime)")
        if len(set(self.epsilons)) != len(self.epsilons) or len(set(self.test_var_factors)) != \
                len(self.test_var_factors) or len(set(self.noise_levels)) != len(self.noise_levels):
            self.out_of_range("epsilons", "distinct epsilons, factors and noise levels")
        if not any(t > self.noise_ref for t in self.noise_levels) or self.noise_ref not in self.noise_levels:
            self.out_of_range("noise_ref", "one of noise_levels, with a larger level in noise_levels")
        try:
            gaussian_design(self)
        except ValueError as exc:
            self.out_of_range("epsilons", f"tolerances and factors reachable by the Gaussian design ({exc})")

    @classmethod
    def smoke(cls):
        return cls(seeds=(0, 1), dct_m=100, reps=16, digits_m=100, digits_reps=6, ts_m=60, ts_train_m=60,
                   ts_reps=8, ts_null_reps=6, ts_permutations=40, n_bandwidths=9)

    @classmethod
    def quick(cls):
        return cls(seeds=(0, 1, 2))

    @classmethod
    def full(cls):
        return cls(seeds=(0, 1, 2, 3, 4), dct_m=400, reps=300, digits_m=300, digits_reps=200, ts_reps=200,
                   ts_null_reps=200, ts_permutations=200, ts_train_m=500)


def _fmt(t: float) -> str:
    return f"{t:g}"


# ---------------------------------------------------------------------------------------------
# 1. Gaussian closeness tests
# ---------------------------------------------------------------------------------------------


def gaussian_design(config: Config) -> dict:
    """Exact reference and test pairs of section 1, per epsilon and variance factor."""
    d, h, sr = config.dim, config.bandwidth, config.ref_var
    e1 = np.eye(d)[0]
    out = {}
    for eps in config.epsilons:
        dr = boundary_shift(sr, eps, d, h)
        ref = nammd_population_gaussian(np.zeros(d), sr, e1 * dr, sr, h)
        tests = {}
        for f in config.test_var_factors:
            st = f * sr
            ds = matched_test_shift(st, config.mmd_ratio * ref["mmd2"], d, h)
            pop = nammd_population_gaussian(np.zeros(d), st, e1 * ds, st, h)
            tests[f] = {"var": st, "shift": ds, "norm_ratio": pop["norm_p"] / ref["norm_p"], **pop}
        out[eps] = {"ref_shift": dr, "ref": ref, "tests": tests}
    return out


def _regime_label(eps: float, f: float, norm_ratio: float, nammd_test: float | None = None) -> str:
    """Regime name; a test pair inside NAMMD's own null (population NAMMD(T) <= epsilon) says so: there the
    NAMMD-DCT *should* not reject (its H0 holds), so a 'loss' to MMD there is the test working as designed."""
    kind = "more" if f < 1 else ("equally" if f == 1 else "less")
    label = f"eps={_fmt(eps)}, norm ratio {norm_ratio:.3g} (test pair {kind} concentrated)"
    if nammd_test is not None and nammd_test <= eps:
        label += f" [inside NAMMD's null: NAMMD(T) = {nammd_test:.3g} <= eps]"
    return label


def _gaussian_section(config: Config, rng, metrics, extras) -> None:
    des = gaussian_design(config)
    k = GaussianKernel(config.bandwidth)
    m, a = config.dct_m, config.alpha
    for eps, dd in des.items():
        eps_m = dd["ref"]["mmd2"]
        settings = [("size", (config.ref_var, config.ref_var, dd["ref_shift"], config.dim))]
        settings += [(f, (t["var"], t["var"], t["shift"], config.dim)) for f, t in dd["tests"].items()]
        for tag, args in settings:
            rej = {"nammd": 0, "nammd_paper_var": 0, "mmd": 0, "control_z0": 0}
            for _ in range(config.reps):
                X, Y = gaussian_pair(rng, m, *args)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # small-m warning in smoke
                    rn = nammd_closeness_test(X, Y, eps, a, kernel=k)
                    rp = nammd_closeness_test(X, Y, eps, a, kernel=k, variance="official")
                    rm = mmd_closeness_test(X, Y, eps_m, a, kernel=k)
                rej["nammd"] += rn.reject
                rej["nammd_paper_var"] += rp.reject
                rej["mmd"] += rm.reject
                rej["control_z0"] += rn.statistic > eps
            if tag == "size":
                for arm, c in rej.items():
                    metrics[arm][f"dct_size_eps{_fmt(eps)}"] = c / config.reps
            else:
                for arm in ("nammd", "nammd_paper_var", "mmd"):
                    metrics[arm][f"dct_power_eps{_fmt(eps)}_f{_fmt(tag)}"] = rej[arm] / config.reps
                if tag == 1.0:
                    metrics["nammd_equal_norm"][f"power_eps{_fmt(eps)}"] = rej["nammd"] / config.reps
                    metrics["mmd_equal_norm"][f"power_eps{_fmt(eps)}"] = rej["mmd"] / config.reps
    extras["design"] = {_fmt(e): {"ref_shift": dd["ref_shift"], "ref": dd["ref"],
                                  "tests": {_fmt(f): t for f, t in dd["tests"].items()}}
                        for e, dd in des.items()}


# ---------------------------------------------------------------------------------------------
# 2. digits with pixel noise
# ---------------------------------------------------------------------------------------------


def _digits_section(config: Config, rng, metrics, extras) -> None:
    A, B, C, D = digits_noise_split(rng)
    Xr, Yr = add_pixel_noise(rng, A, 0.0), add_pixel_noise(rng, B, config.noise_ref)
    kern = GaussianKernel(median_bandwidth(np.vstack([Xr, Yr])))  # fixed once, from reference data
    eps_n = reference_epsilon(Xr, Yr, kern, "nammd")
    eps_m = reference_epsilon(Xr, Yr, kern, "mmd")
    m = min(config.digits_m, C.shape[0], D.shape[0])
    for t in config.noise_levels:
        rej = {"nammd": 0, "mmd": 0, "control_z0": 0}
        vals_n, vals_m = [], []
        for _ in range(config.digits_reps):
            X = add_pixel_noise(rng, C[rng.choice(C.shape[0], m, replace=False)], 0.0)
            Y = add_pixel_noise(rng, D[rng.choice(D.shape[0], m, replace=False)], t)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                rn = nammd_closeness_test(X, Y, eps_n, config.alpha, kernel=kern)
                rm = mmd_closeness_test(X, Y, eps_m, config.alpha, kernel=kern)
            vals_n.append(rn.statistic)
            vals_m.append(rm.statistic)
            rej["nammd"] += rn.reject
            rej["mmd"] += rm.reject
            rej["control_z0"] += rn.statistic > eps_n
        for arm, count in rej.items():
            metrics[arm][f"digits_reject_t{_fmt(t)}"] = count / config.digits_reps
        metrics["nammd"][f"digits_stat_t{_fmt(t)}"] = float(np.mean(vals_n))
        metrics["mmd"][f"digits_stat_t{_fmt(t)}"] = float(np.mean(vals_m))
        metrics["control_z0"][f"digits_stat_t{_fmt(t)}"] = float(np.mean(vals_n))
    extras["digits_eps"] = {"nammd": eps_n, "mmd2": eps_m, "bandwidth": kern.bandwidth_}


# ---------------------------------------------------------------------------------------------
# 3. permutation two-sample tests
# ---------------------------------------------------------------------------------------------


def _two_sample_section(config: Config, rng, metrics, tuning, extras) -> None:
    gens = {"blob": lambda r, m, null: blob(r, m, null=null),
            "hdgm": lambda r, m, null: hdgm(r, m, dim=config.hdgm_dim, null=null)}
    m, B, a = config.ts_m, config.ts_permutations, config.alpha
    mults = np.logspace(-1.0, 1.0, config.n_bandwidths)
    chosen = {}
    for name, gen in gens.items():
        # official protocol: one training draw (P != Q) per run selects each statistic's bandwidth
        Xt, Yt = gen(rng, config.ts_train_m, False)
        h0 = median_bandwidth(np.vstack([Xt, Yt]))
        grid = [{"multiplier": float(c)} for c in mults]
        budget = {"training_pairs": config.ts_train_m, "grid_points": len(grid)}
        tuned = tune_arms({
            arm: TuningSpec(grid=grid, validate=lambda p, s=stat, X=Xt, Y=Yt, h=h0: power_proxy(X, Y, p["multiplier"] * h, s),
                            maximize=True, budget=budget)
            for arm, stat in (("nammd", "nammd"), ("mmd", "mmd"))})
        for arm, t in tuned.items():
            tuning[f"{arm}@{name}"] = t
        kernels = {"nammd": GaussianKernel(tuned["nammd"].chosen["multiplier"] * h0),
                   "mmd": GaussianKernel(tuned["mmd"].chosen["multiplier"] * h0),
                   "nammd_median": GaussianKernel(h0)}
        chosen[name] = {arm: k.bandwidth_ for arm, k in kernels.items()}
        for null, reps, kind in ((False, config.ts_reps, "power"), (True, config.ts_null_reps, "size")):
            rej = {"nammd": 0, "mmd": 0, "nammd_median": 0}
            for _ in range(reps):
                X, Y = gen(rng, m, null)  # independent test draw
                seed = int(rng.integers(2**31))  # one permutation stream shared by all arms
                rej["nammd"] += nammd_two_sample_test(X, Y, a, kernels["nammd"], B, seed).reject
                rej["mmd"] += mmd_two_sample_test(X, Y, a, kernels["mmd"], B, seed).reject
                rej["nammd_median"] += nammd_two_sample_test(X, Y, a, kernels["nammd_median"], B, seed).reject
            for arm, c in rej.items():
                metrics[arm][f"ts_{kind}_{name}"] = c / reps
    extras["ts_bandwidths"] = chosen


ARMS = ("nammd", "nammd_paper_var", "mmd", "control_z0", "nammd_equal_norm", "mmd_equal_norm",
        "nammd_median")


def run(config: Config, seed: int) -> SeedOutput:
    metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
    extras: dict = {}
    tuning: dict = {}
    with phase("gaussian"):
        _gaussian_section(config, np.random.default_rng([seed, 1]), metrics, extras)
    with phase("digits"):
        _digits_section(config, np.random.default_rng([seed, 2]), metrics, extras)
    with phase("two_sample"):
        _two_sample_section(config, np.random.default_rng([seed, 3]), metrics, tuning, extras)
    return SeedOutput(metrics=metrics, extras=extras, tuning=tuning)


# ---------------------------------------------------------------------------------------------
# Claims (rules fixed before the run; see README for the changes made after the review)
# ---------------------------------------------------------------------------------------------

POWER_MIN_GAP = 0.02  # our choice: the paper's Table-2 gains are 0.003-0.027
_PAPER_GAIN = 0.027  # the paper's Table 2: NAMMD-DCT - MMD-DCT average power at eps = 0.3 and 0.5


def _size_se(c: Config, per_seed_reps: int) -> float:
    """Binomial standard error of a seed-mean rejection rate at the nominal level alpha."""
    return float(np.sqrt(c.alpha * (1 - c.alpha) / (per_seed_reps * len(c.seeds))))


def _power_regimes(mx, c: Config, factors, arm: str, base: str) -> list[tuple[str, Decision]]:
    des = gaussian_design(c)
    out = []
    for eps in c.epsilons:
        for f in factors:
            key = f"dct_power_eps{_fmt(eps)}_f{_fmt(f)}"
            t = des[eps]["tests"][f]
            label = _regime_label(eps, f, t["norm_ratio"], t["nammd"])
            out.append((label, paired_improvement(mx[arm][key], mx[base][key], min_gap=POWER_MIN_GAP)))
    return out


def _equal_norm_rule(mx, c: Config) -> Decision:
    """The power rule applied to the NAMMD-DCT where the test pair has the reference's norms."""
    regimes = [(f"eps={_fmt(eps)}, norm ratio 1 (equal norms)",
                paired_improvement(mx["nammd_equal_norm"][f"power_eps{_fmt(eps)}"],
                                   mx["mmd_equal_norm"][f"power_eps{_fmt(eps)}"], min_gap=POWER_MIN_GAP))
               for eps in c.epsilons]
    return per_regime(regimes, require="all")


def _dct_power_general(mx, c: Config) -> Decision:
    return per_regime(_power_regimes(mx, c, c.test_var_factors, "nammd", "mmd"), require="all")


def _dct_power_theorem(mx, c: Config) -> Decision:
    return per_regime(_power_regimes(mx, c, [f for f in c.test_var_factors if f < 1], "nammd", "mmd"),
                      require="all")


def _size_rule(arm: str):
    def decide(mx, c: Config) -> Decision:
        se = _size_se(c, c.reps)
        regimes = []
        for eps in c.epsilons:
            key = f"dct_size_eps{_fmt(eps)}"
            d = threshold_rule(mx[arm][key], high=c.alpha + 2 * se, label=f"size {arm} ")
            mean = float(np.mean(mx[arm][key]))
            conservative = mean < c.alpha - 2 * se
            d = Decision(d.verdict, d.ours + (" (conservative)" if conservative else ""),
                         {**d.evidence, "conservative": conservative, "binomial_se": se},
                         mde=d.mde, n=d.n, uses_se=d.uses_se)
            regimes.append((f"eps={_fmt(eps)}", d))
        return per_regime(regimes, require="all")
    return decide


def _two_sample_rule(arm: str, against: str = "mmd"):
    def decide(mx, c: Config) -> Decision:
        se = _size_se(c, c.ts_null_reps)
        regimes = []
        for name in ("blob", f"hdgm{c.hdgm_dim}"):
            key = "hdgm" if name.startswith("hdgm") else name
            power = paired_improvement(mx[arm][f"ts_power_{key}"], mx[against][f"ts_power_{key}"],
                                       min_gap=0.0, all_seeds=False, label=f"{name} power: ")
            size = threshold_rule(mx[arm][f"ts_size_{key}"], high=c.alpha + 2 * se, label=f"{name} size ")
            regimes.append((name, all_of(power, size)))
        return per_regime(regimes, require="all")
    return decide


def _digits_rule(arm: str):
    def decide(mx, c: Config) -> Decision:
        levels = sorted(c.noise_levels)
        means = [float(np.mean(mx[arm][f"digits_stat_t{_fmt(t)}"])) for t in levels]
        mono = bool(np.all(np.diff(means) > 0))
        # an ordering of seed means (no s.e. read): mde 0; the claim's effect is judged on the next leg
        mono_d = Decision(REPRODUCED if mono else NOT_REPRODUCED,
                          "NAMMD_hat by noise: " + ", ".join(f"{v:.4f}" for v in means), {"means": means},
                          mde=0.0, n=len(mx[arm][f"digits_stat_t{_fmt(levels[0])}"]), uses_se=False)
        parts = [mono_d, threshold_rule(mx[arm][f"digits_reject_t{_fmt(levels[-1])}"], low=0.9,
                                        label=f"reject t={_fmt(levels[-1])}: ")]
        for t in levels:
            if t <= c.noise_ref:
                parts.append(threshold_rule(mx[arm][f"digits_reject_t{_fmt(t)}"], high=0.15,
                                            label=f"reject t={_fmt(t)}: "))
        d = all_of(*parts, primary=1)  # primary: the rejection rate at the largest noise level
        mmd = {f"t{_fmt(t)}": float(np.mean(mx["mmd"][f"digits_reject_t{_fmt(t)}"])) for t in levels}
        return Decision(d.verdict, d.ours + f" | MMD-DCT rejection (same rule, reported): {mmd}",
                        {**d.evidence, "mmd_reject": mmd}, mde=d.mde, n=d.n, uses_se=d.uses_se)
    return decide


_DCT_SCALE = ("laptop-scale: exact 2-D Gaussian pairs, Gaussian kernel h=1 (fixed, so epsilon is exact), "
              "reference variance ref_var, epsilon in epsilons (paper Table 2), test variance factor f in "
              "test_var_factors, MMD^2(T) = mmd_ratio * MMD^2(R), m = dct_m pairs, reps per seed")
_EQUAL_NORM = ("the same NAMMD-DCT (arm nammd_equal_norm) on a test pair with the reference's RKHS norms "
               "(f = 1) against the MMD-DCT on the same draws: the norm adaptation has nothing to adapt to, "
               "so if NAMMD also beats MMD there the gain is not the mechanism's (e.g. a smaller variance "
               "estimate)")

# Declared metrics (harness.metrics): what each arm writes; the runner refuses anything else. A
# ``*`` is a closeness level eps, a power factor f, a digits noise level t or a two-sample dataset.
_DCT = ("dct_size_eps*", "dct_power_eps*_f*")
_DIGITS = ("digits_reject_t*", "digits_stat_t*")
_TWO_SAMPLE = ("ts_power_*", "ts_size_*")
METRICS = {
    ("nammd", "mmd"): (*_DCT, *_DIGITS, *_TWO_SAMPLE),
    "nammd_paper_var": _DCT,
    "control_z0": ("dct_size_eps*", *_DIGITS),
    ("nammd_equal_norm", "mmd_equal_norm"): ("power_eps*",),
    "nammd_median": _TWO_SAMPLE,
}

CLAIMS = (
    Claim(
        id="dct_power",
        statement="NAMMD-DCT is more powerful than MMD-DCT when both ask 'farther apart than the reference "
                  "pair?' (the abstract's general claim), judged over test pairs more, equally and less "
                  "concentrated than the reference pair and over the paper's epsilons",
        paper_value="abstract: 'higher test power'; Table 2 avg power 0.976/0.955/0.951 vs 0.973/0.928/0.924 "
                    "at eps=0.1/0.3/0.5. Thm 9 (v3) proves it only when the test pair has larger norms",
        metric="rejection rate on the test pair (higher is better), per regime",
        scale=_DCT_SCALE,
        rule="per regime (epsilon x variance factor): paired power gap NAMMD (delta variance) - MMD > 0.02 and "
             "> 2 s.e. and > 0 in every seed; reproduced iff it holds in every regime",
        decide=_dct_power_general,
        control_description=_EQUAL_NORM,
        control=_equal_norm_rule,
        arms=ClaimArms(method="nammd", baselines=("mmd",), control="nammd_equal_norm"),
        effect=_PAPER_GAIN,
        effect_source="paper Table 2: average power gain 0.027 at eps = 0.3 and 0.5 (0.003 at 0.1, at the "
                      "power ceiling)",
    ),
    Claim(
        id="dct_power_theorem",
        statement="under Thm 9's condition (the test pair has larger RKHS norms than the reference pair) "
                  "NAMMD-DCT is more powerful than MMD-DCT at every epsilon",
        paper_value="Thm 9 (v3) / Thm 7 (v1): asymptotic advantage Phi(a+b)-Phi(a), b = sqrt(m)(1 - v/v') eps_M "
                    "/ sigma_M > 0 (the official code keeps only constructions whose test pair has the smaller "
                    "denominator)",
        metric="rejection rate on the test pair (higher is better), per epsilon",
        scale=_DCT_SCALE + "; only the factors f < 1",
        rule="per epsilon at every f < 1: paired power gap NAMMD - MMD > 0.02 and > 2 s.e. and > 0 in every "
             "seed; reproduced iff it holds at every epsilon",
        decide=_dct_power_theorem,
        control_description=_EQUAL_NORM,
        control=_equal_norm_rule,
        arms=ClaimArms(method="nammd", baselines=("mmd",), control="nammd_equal_norm"),
        effect=_PAPER_GAIN,
        effect_source="paper Table 2: average power gain 0.027 at eps = 0.3 and 0.5",
    ),
    Claim(
        id="boundary_size",
        statement="the NAMMD-DCT's type-I error at the null boundary NAMMD(P,Q) = epsilon is at most alpha "
                  "(asymptotically)",
        paper_value="Thm 6 (v3): asymptotically <= alpha = 0.05 (v1's finite-sample wording is false: "
                    "peer counterexample 0.185 at m=8)",
        metric="rejection rate on the reference pair itself, epsilon = its exact NAMMD",
        scale=_DCT_SCALE,
        rule="per epsilon in the paper's {0.1, 0.3, 0.5}: seed-mean size of the default (delta) variant "
             "<= alpha + 2 binomial s.e. (s.e. of alpha over reps x seeds); conservativeness (size < alpha - "
             "2 s.e.) is reported, not penalised; the official ('paper') variance is reported as its own arm",
        decide=_size_rule("nammd"),
        control_description="threshold with z = 0 (reject iff NAMMD_hat > epsilon): the same estimate without "
                            "the variance-based margin; its size is ~0.5",
        control=_size_rule("control_z0"),
        arms=ClaimArms(method="nammd", baselines=("nammd_paper_var", "mmd"), control="control_z0"),
        effect=0.03,
        effect_source="type-I tolerance: a size excess of 0.03 over alpha matters (brief check 2's upper "
                      "end 0.08 = alpha + 0.03)",
    ),
    Claim(
        id="two_sample_power",
        statement="the NAMMD permutation two-sample test is more powerful than the MMD permutation test",
        paper_value="qualitative (paper Sec. 5: 'higher test power ... in both theory and experiments')",
        metric="rejection rate under P != Q (higher is better); size under P = Q",
        scale="laptop-scale: Blob (2-D, 9 blobs) and HDGM (d=hdgm_dim, official d=10) generators, m=ts_m, "
              "Gaussian bandwidth selected per statistic on one training draw per seed (official 25-point "
              "grid, studentized statistic; tune_arms, equal grid and budget), B=ts_permutations",
        rule="per dataset: NAMMD power - MMD power > 0 and > 2 s.e. (paired over seeds) and NAMMD size <= alpha "
             "+ 2 binomial s.e.; reproduced iff on both datasets",
        decide=_two_sample_rule("nammd"),
        control_description="the NAMMD permutation test with the median-heuristic bandwidth (no power-based "
                            "selection). With a fixed kernel the NAMMD and MMD permutation tests are the same "
                            "test up to an O(1/m) term, so the NAMMD statistic with the MMD-selected kernel "
                            "would be the baseline under another name; the selection is the only mechanism left",
        control=_two_sample_rule("nammd_median"),
        beyond=_two_sample_rule("nammd", against="nammd_median"),
        arms=ClaimArms(method="nammd", baselines=("mmd",), control="nammd_median"),
        effect=0.02,
        effect_source="smallest that matters: a power gap of 0.02, brief check 6's margin (the paper gives "
                      "no number for the permutation tests)",
    ),
    Claim(
        id="digits_ranking",
        statement="NAMMD ranks distribution pairs by closeness without labels: on digits with pixel noise the "
                  "NAMMD estimate increases with the noise, and the DCT against the t0 reference rejects only "
                  "for noise levels larger than t0 (a property of the closeness test; the MMD-DCT's rates on "
                  "the same draws are reported next to it)",
        paper_value="qualitative (paper case studies: ranking ImageNet variants, PGD strength on CIFAR-10)",
        metric="seed-mean NAMMD_hat per noise level; NAMMD-DCT rejection rate",
        scale="laptop-scale substitute: sklearn digits (1797x64) split in 4 quarters, m=digits_m, epsilon "
              "estimated from a disjoint reference quarter pair",
        rule="seed-mean NAMMD_hat strictly increasing in t; rejection rate at the largest t >= 0.9; rejection "
             "rate at every t <= t0 <= 0.15",
        decide=_digits_rule("nammd"),
        control_description="threshold with z = 0 (reject iff NAMMD_hat > epsilon): the same ranking statistic "
                            "without the test's variance margin",
        control=_digits_rule("control_z0"),
        arms=ClaimArms(method="nammd", baselines=("mmd",), control="control_z0"),
        effect=0.1,
        effect_source="smallest that matters: 0.1 of rejection rate at the largest noise level, around the "
                      "brief's 0.9 bound (check 5; our choice)",
    ),
)


def plot(config: Config, outputs, outdir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(config.epsilons) + 1, figsize=(4 * (len(config.epsilons) + 1), 3.4))
    factors = list(config.test_var_factors)
    for ax, eps in zip(axes, config.epsilons, strict=False):
        for arm, style in (("nammd", "o-"), ("nammd_paper_var", "s--"), ("mmd", "^-")):
            vals = [np.mean([o.metrics[arm][f"dct_power_eps{_fmt(eps)}_f{_fmt(f)}"] for o in outputs])
                    for f in factors]
            ax.plot(factors, vals, style, label=arm)
        ax.set(title=f"power, eps={_fmt(eps)}", xlabel="test variance factor f (<1: more concentrated)",
               xscale="log")
        ax.legend(fontsize=7)
    levels = list(config.noise_levels)
    for arm, style in (("nammd", "o-"), ("mmd", "^-")):
        vals = [np.mean([o.metrics[arm][f"digits_reject_t{_fmt(t)}"] for o in outputs]) for t in levels]
        axes[-1].plot(levels, vals, style, label=arm)
    axes[-1].axvline(config.noise_ref, color="k", lw=0.8, ls=":")
    axes[-1].set(title="digits: reject 'as close as t0'", xlabel="noise std (pixels)")
    axes[-1].legend(fontsize=7)
    return [save_figure(fig, outdir / "nammd_power_size_digits.png", dpi=110)]

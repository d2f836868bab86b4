"""Reproduction of arXiv 2604.17505 (unanimously acceptable lotteries via accept/reject queries).

The paper is theory-only (brief Section 1): every experiment here is ours [O], built to test the
paper's theorem statements on generated instances, laptop-scale. One seed = one draw of every
instance family; all algorithms run on the same instances:

* planted sweep over (n, m, K): full elicitation, Algorithm 2, Algorithm 3 (queries vs n, m, 1/eps);
* head-to-head planted instance (m = 3, K = 256) and planted infeasible instances;
* the nested adversarial order (Algorithm 2's verification is quadratic there) and a nested-only
  family (every agent binds in turn along the scan order, so Algorithm 2 elicits everyone);
* the lower-bound families of Theorems 4.1 (n sweep and K sweep) and 4.2;
* advice: Alg 2[sigma] with a witness first / degraded / reversed / random order, and lottery advice.

Negative controls run in the same seed, each as its own arm: an algorithm that skips verification,
a non-adaptive scan-and-learn variant, Algorithm 2 (adaptive but not randomized) for the
randomization claim, and uninformative (random-order) advice.

The randomization claim is judged per instance family (a regime sweep) on the *elicitation* cost
(queries spent inside Algorithm 1, the abstract's "expected elicitation cost"), with total queries
reported beside it.

Detectability (CLAIMS.md rule 8). Query counts and the offline correctness checks are exact, and
the rules of ``correct``, ``adaptivity``, ``bounds`` and ``advice`` must hold in every run or every
seed (no mean, no s.e.): their mde is 0. ``randomization`` compares Algorithm 3 (randomized) with
full elicitation on paired seeds: its mde is the paired rule's, from the seed spread, as a fraction
of full elicitation's cost (its effect is relative). No trained substrate, so no gates; no protocol
knob is named for this paper.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from icml26.core.progress import phase
from icml26.harness import Claim, ExperimentConfig, SeedOutput
from icml26.harness.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    ClaimArms,
    Decision,
    all_of,
    paired_improvement,
    per_regime,
)
from icml26.harness.plots import save_figure

from .algorithms import (
    REJECT_ALL,
    LotteryResult,
    _learn_counted,
    _Learned,
    _result,
    deterministic,
    full_elicitation,
    learning_cost,
    randomized,
    with_lottery_advice,
    with_order_advice,
)
from .instances import (
    basis_at,
    basis_first,
    certificate_is_infeasible,
    exact_feasibility,
    highs_feasible,
    nested_adversarial,
    nested_verification,
    one_agent_family,
    perturbed_lottery,
    planted_feasible,
    planted_infeasible,
    singleton_family,
    thm33_envelope,
    thm34_envelope,
    thm41_lower,
    thm51_envelope,
)
from .oracle import AcceptanceOracle, Instance, accepts


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Instance sizes (all ours [O]; the paper reports no experiments).

    ``r = 16 (m-1)^2`` (paper) makes Algorithm 3 pay off only for ``n >> r``, hence the
    head-to-head instance uses m = 3 (r = 64) and n = 2000, as in the brief's prototype.
    """

    sweep_n: tuple[int, ...] = (200, 1000)
    sweep_m: tuple[int, ...] = (3, 4)
    sweep_K: tuple[int, ...] = (16, 64)
    h2h_n: int = 2000
    h2h_m: int = 3
    h2h_K: int = 256
    infeasible_n: int = 1000
    infeasible_m: int = 3
    infeasible_K: int = 64
    nested_n: int = 2000
    nested_b: int = 255
    nested_K: int = 256
    nested_only_b: int = 255
    nested_only_K: int = 256
    lb_m: int = 3
    lb_n: tuple[int, ...] = (25, 50, 100, 200)
    lb_n_K: int = 16
    lb_K: tuple[int, ...] = (16, 64, 256, 1024)
    lb_K_n: int = 50
    lb_reps: int = 2
    advice_n: int = 1000
    advice_m: int = 4
    advice_K: int = 64
    advice_f: tuple[float, ...] = (0.25, 0.5, 1.0)
    advice_eta: tuple[float, ...] = (0.0, 0.015625, 0.05, 0.2)

    BOUNDS = {
        "sweep_n": (2, None), "sweep_m": (2, 8), "sweep_K": (2, 4096), "h2h_n": (2, None),
        "h2h_m": (2, 8), "h2h_K": (2, 4096), "infeasible_n": (4, None), "infeasible_m": (2, 8),
        "infeasible_K": (4, 4096), "nested_n": (2, None), "nested_b": (1, None),
        "nested_K": (2, 4096), "nested_only_b": (1, None), "nested_only_K": (2, 4096),
        "lb_m": (2, 8), "lb_n": (1, None), "lb_n_K": (2, 4096), "lb_K": (2, 4096),
        "lb_K_n": (1, None), "lb_reps": (1, None), "advice_n": (2, None), "advice_m": (2, 8),
        "advice_K": (2, 4096), "advice_f": (0.0, 1.0), "advice_eta": (0.0, 1.0),
    }

    def extra_checks(self) -> None:
        if not self.nested_b < min(self.nested_K, self.nested_n + 1):
            self.out_of_range("nested_b", f"< nested_K={self.nested_K} and <= nested_n")
        if not self.nested_only_b < self.nested_only_K:
            self.out_of_range("nested_only_b", f"< nested_only_K={self.nested_only_K}")
        if 0.0 not in self.advice_eta:
            self.out_of_range("advice_eta", "a tuple including 0 (exact lottery advice)")
        if len(self.lb_n) < 2 or len(self.lb_K) < 2:
            self.out_of_range("lb_n" if len(self.lb_n) < 2 else "lb_K",
                              "at least two values (the slopes need two points)")

    @classmethod
    def smoke(cls) -> Config:
        return cls(seeds=(0,), sweep_n=(100,), sweep_m=(3,), sweep_K=(8,), h2h_n=300, h2h_K=16,
                   infeasible_n=80, infeasible_K=16, nested_n=300, nested_b=15, nested_K=16,
                   nested_only_b=100, nested_only_K=128,
                   lb_n=(10, 20), lb_K=(8, 32), lb_K_n=10, lb_reps=1, advice_n=100, advice_m=3,
                   advice_K=16, advice_f=(1.0,), advice_eta=(0.0, 0.2))

    @classmethod
    def quick(cls) -> Config:
        return cls(seeds=(0, 1, 2))

    @classmethod
    def full(cls) -> Config:
        return cls(seeds=tuple(range(8)), sweep_n=(1000, 4000), sweep_m=(3, 4, 5),
                   sweep_K=(16, 256, 1024), h2h_n=10000, nested_only_b=1023, nested_only_K=1024,
                   lb_reps=3, advice_n=2000)


def regime_families(config: Config) -> list[tuple[str, int, int]]:
    """The instance families of the randomization regime sweep: ``(name, n, m)`` in sweep order.

    Only families with ``n > r = 16 (m-1)^2`` can show a reduction: with ``n <= r`` Algorithm 3
    draws every agent in its first round and *is* full elicitation (see :func:`run`).
    """
    fams = [(f"planted n={n} m={m} K={K}", n, m)
            for m in config.sweep_m for K in config.sweep_K for n in config.sweep_n]
    fams += [(f"planted h2h n={config.h2h_n} m={config.h2h_m} K={config.h2h_K}", config.h2h_n,
              config.h2h_m),
             (f"infeasible pair n={config.infeasible_n} m={config.infeasible_m} "
              f"K={config.infeasible_K}", config.infeasible_n, config.infeasible_m),
             (f"infeasible reject-all n={config.infeasible_n} m={config.infeasible_m} "
              f"K={config.infeasible_K}", config.infeasible_n, config.infeasible_m),
             (f"nested, dummies first n={config.nested_n} b={config.nested_b} K={config.nested_K}",
              config.nested_n, 3),
             (f"nested only n={config.nested_only_b} K={config.nested_only_K}",
              config.nested_only_b, 3)]
    return fams


# ---------------------------------------------------------------------------------------------
# evaluation helpers (they look at the truth; the algorithms never do)
# ---------------------------------------------------------------------------------------------


def _correct(inst: Instance, res: LotteryResult, feasible: bool) -> bool:
    """Exact offline check of one result against the true constraints (acceptance check B)."""
    if res.status == "found":
        return feasible and bool(accepts(inst, res.lottery).all())
    if res.status == "infeasible":
        cert = res.certificate or []
        return (not feasible and 1 <= len(cert) <= inst.m and certificate_is_infeasible(inst, cert)
                and not highs_feasible(inst, cert))
    return False


def _unverified_sampling(oracle: AcceptanceOracle, rng: np.random.Generator,
                         r: int | None = None) -> LotteryResult:
    """Negative control: Algorithm 3's first round *without* global verification.

    Learn ``r`` uniformly drawn agents (default ``16 (m-1)^2``, Algorithm 3's sample) and return
    Select of their constraints.
    """
    n, m = oracle.n, oracle.m
    r = min(n, 16 * (m - 1) ** 2 if r is None else r)
    S = sorted(int(i) for i in rng.choice(n, size=r, replace=False))
    learned = _Learned(oracle)
    eli = 0
    q0 = oracle.n_queries
    for i in S:
        h, c = _learn_counted(learned, i)
        eli += c
        if h == REJECT_ALL:
            return _result("infeasible", None, [i], oracle, q0, eli, learned, 1, "no_verify", [])
    lot, ws = learned.select(S)
    if lot is None:
        return _result("infeasible", None, ws, oracle, q0, eli, learned, 1, "no_verify", [])
    return _result("found", lot, None, oracle, q0, eli, learned, 1, "no_verify", [])


def _scan_and_learn(oracle: AcceptanceOracle) -> LotteryResult:
    """Negative control for adaptivity: Algorithm 2 that learns *every* agent it queries."""
    n = oracle.n
    q0 = oracle.n_queries
    learned = _Learned(oracle)
    eli = 0
    rounds = 0
    while True:
        rounds += 1
        lot, ws = learned.select(list(learned.row_of))
        if lot is None:
            return _result("infeasible", None, ws, oracle, q0, eli, learned, rounds, "scan_learn", [])
        todo = [i for i in range(n) if i not in learned.halfspaces]
        rej = oracle.first_rejecter(todo, lot)
        scanned = todo if rej is None else todo[: todo.index(rej) + 1]
        for i in scanned:
            h, c = _learn_counted(learned, i)
            eli += c
            if h == REJECT_ALL:
                return _result("infeasible", None, [i], oracle, q0, eli, learned, rounds, "scan_learn", [])
        if rej is None:
            return _result("found", lot, None, oracle, q0, eli, learned, rounds, "scan_learn", [])


def _run(fn, inst: Instance) -> tuple[LotteryResult, np.ndarray]:
    oracle = AcceptanceOracle(inst)
    res = fn(oracle)
    return res, oracle.per_agent


# ---------------------------------------------------------------------------------------------
# one seed
# ---------------------------------------------------------------------------------------------


def run(config: Config, seed: int) -> SeedOutput:
    rng = np.random.default_rng(seed)
    rec: list[dict[str, Any]] = []  # one row per (instance, algorithm)
    correct: dict[str, list[bool]] = {}
    env_ok: dict[str, list[bool]] = {}

    def record(family: str, inst: Instance, arm: str, res: LotteryResult, per_agent: np.ndarray,
               feasible: bool, envelope: float | None = None, **extra: Any) -> dict[str, Any]:
        ok = _correct(inst, res, feasible)
        correct.setdefault(arm, []).append(ok)
        if envelope is not None:
            env_ok.setdefault(arm, []).append(res.n_queries <= envelope)
        row = {"family": family, "arm": arm, "n": inst.n, "m": inst.m, "K": inst.K,
               "q": res.n_queries, "ver": res.verification_queries, "eli": res.elicitation_queries,
               "L": res.n_learned, "T": res.rounds, "status": res.status, "correct": ok,
               "min_per_agent": int(per_agent.min()), "envelope": envelope, **extra}
        rec.append(row)
        return row

    def standard(family: str, inst: Instance, extra_arms: bool = False) -> dict[str, dict[str, Any]]:
        feasible = exact_feasibility(inst)[0]
        n, m, K = inst.n, inst.m, inst.K
        alg3_seed = int(rng.integers(2**31))
        out = {}
        res, pa = _run(full_elicitation, inst)
        out["full"] = record(family, inst, "full", res, pa, feasible, n * learning_cost(m, K))
        res, pa = _run(deterministic, inst)
        L = res.n_learned
        row = record(family, inst, "alg2", res, pa, feasible, thm33_envelope(n, m, K))
        row["ver_ok"] = (res.verification_queries <= sum(n - t for t in range(L + 1))
                         and (res.status != "found" or res.rounds == L + 1))
        out["alg2"] = row
        res, pa = _run(lambda o: randomized(o, alg3_seed), inst)
        row = record(family, inst, "alg3", res, pa, feasible, thm34_envelope(n, m, K))
        row["L_ok"] = res.n_learned <= min(n, 16 * (m - 1) ** 2 * res.rounds)
        out["alg3"] = row
        res, pa = _run(lambda o: _unverified_sampling(o, np.random.default_rng(alg3_seed)), inst)
        out["no_verify"] = record(family, inst, "no_verify", res, pa, feasible)
        # the cheapest guess: a basis' worth (m - 1) of random agents, no verification
        res, pa = _run(lambda o: _unverified_sampling(o, np.random.default_rng(alg3_seed), m - 1),
                       inst)
        out["guess"] = record(family, inst, "guess", res, pa, feasible)
        if extra_arms:
            res, pa = _run(_scan_and_learn, inst)
            out["scan_learn"] = record(family, inst, "scan_learn", res, pa, feasible)
        return out

    with phase("sweep"):
        # 1. planted sweep (queries vs n, m, K); every family is also a regime of the randomization claim
        names = iter(name for name, _, _ in regime_families(config))
        regimes: dict[str, dict[str, dict[str, Any]]] = {}
        for m in config.sweep_m:
            for K in config.sweep_K:
                for n in config.sweep_n:
                    regimes[next(names)] = standard("sweep", planted_feasible(n, m, K, rng))
    with phase("head_to_head"):
        # 2. head-to-head planted, planted infeasible, nested adversarial, nested only
        h2h = standard("h2h", planted_feasible(config.h2h_n, config.h2h_m, config.h2h_K, rng), True)
        inf_pair = standard("infeasible", planted_infeasible(config.infeasible_n, config.infeasible_m,
                                                             config.infeasible_K, rng), True)
        inf_rej = standard("infeasible", planted_infeasible(config.infeasible_n, config.infeasible_m,
                                                            config.infeasible_K, rng, kind="reject_all"))
        nb = config.nested_b
        nested = standard("nested", nested_adversarial(nb, config.nested_n - nb, 3, config.nested_K), True)
        nested_exact = nested["alg2"]["ver"] == nested_verification(config.nested_n, nb)
        only = standard("nested_only", nested_adversarial(config.nested_only_b, 0, 3, config.nested_only_K))
        for out in (h2h, inf_pair, inf_rej, nested, only):
            regimes[next(names)] = out
    with phase("lower_bounds"):
        # 3. lower-bound families
        lb_rows: list[tuple[str, dict[str, Any]]] = []
        for n in config.lb_n:
            for _ in range(config.lb_reps):
                inst = singleton_family(n, config.lb_m, config.lb_n_K, rng)
                for arm, row in standard("lb_n", inst).items():
                    row["lower"] = thm41_lower(n, config.lb_m, config.lb_n_K)
                    lb_rows.append((arm, row))
        for K in config.lb_K:
            for _ in range(config.lb_reps):
                inst = singleton_family(config.lb_K_n, config.lb_m, K, rng)
                for arm, row in standard("lb_K", inst).items():
                    row["lower"] = thm41_lower(config.lb_K_n, config.lb_m, K)
                    lb_rows.append((arm, row))
        one_agent: dict[str, list[dict[str, Any]]] = {}
        for inst in one_agent_family(config.lb_m, config.lb_n_K):
            for arm, row in standard("one_agent", inst).items():
                one_agent.setdefault(arm, []).append(row)
    with phase("advice"):
        # 4. advice (Theorem 5.1) and lottery advice (ours)
        inst = planted_feasible(config.advice_n, config.advice_m, config.advice_K, rng)
        feasible, xstar, _ = exact_feasibility(inst)
        n, m, K = inst.n, inst.m, inst.K
        adv: dict[str, dict[str, Any]] = {}
        orders = {"advice_index": None, "advice_basis": basis_first(inst),
                  "advice_reversed": list(range(n))[::-1],
                  "advice_random": [int(i) for i in rng.permutation(n)]}
        for f in config.advice_f:
            orders[f"advice_f{int(round(100 * f))}"] = basis_at(inst, f)
        for arm, sigma in orders.items():
            res, pa = _run(lambda o, s=sigma: deterministic(o) if s is None else with_order_advice(o, s), inst)
            R = res.n_learned
            adv[arm] = record("advice", inst, arm, res, pa, feasible, thm51_envelope(n, m, K, R), R=R)
            adv[arm]["within_thm33"] = res.n_queries <= thm33_envelope(n, m, K)
        for eta in config.advice_eta:
            xh = perturbed_lottery(xstar, eta, rng, K)
            res, pa = _run(lambda o, x=xh: with_lottery_advice(o, x), inst)
            R = res.n_learned
            env = n + (thm51_envelope(n, m, K, R) if res.n_queries > n or R > 0 else 0)
            adv[f"lottery_eta{eta:g}"] = record("advice", inst, f"lottery_eta{eta:g}", res, pa, feasible,
                                                env, R=R, eta=eta)

    # ---- metrics ----------------------------------------------------------------------------
    metrics: dict[str, dict[str, float]] = {}

    def put(arm: str, key: str, value: float) -> None:
        metrics.setdefault(arm, {})[key] = float(value)

    for arm, oks in correct.items():
        put(arm, "correct_rate", np.mean(oks))
        put(arm, "n_runs", len(oks))
    for arm, oks in env_ok.items():
        put(arm, "within_envelope", float(all(oks)))
    for arm in ("full", "alg2", "alg3", "no_verify", "scan_learn"):
        put(arm, "q_h2h", h2h[arm]["q"])
        put(arm, "L_h2h", h2h[arm]["L"])
        put(arm, "q_infeasible", inf_pair[arm]["q"])
        put(arm, "q_nested", nested[arm]["q"])
        put(arm, "T_nested", nested[arm]["T"])
    # the regime sweep: elicitation queries (inside Algorithm 1), total queries, agents learned
    for name, out in regimes.items():
        for arm in ("full", "alg2", "alg3"):
            put(arm, f"eli: {name}", out[arm]["eli"])
            put(arm, f"q: {name}", out[arm]["q"])
            put(arm, f"L: {name}", out[arm]["L"])
    put("alg2", "nested_verification_exact", float(nested_exact))
    alg2_rows = [r for r in rec if r["arm"] == "alg2"]
    put("alg2", "rounds_and_verification_ok", float(all(r["ver_ok"] for r in alg2_rows)))
    alg3_rows = [r for r in rec if r["arm"] == "alg3"]
    put("alg3", "L_bound_ok", float(all(r["L_ok"] for r in alg3_rows)))
    # lower bounds
    for arm in ("full", "alg2", "alg3", "no_verify", "guess"):
        rows = [r for a, r in lb_rows if a == arm]
        put(arm, "lb_mean_ratio", np.mean([r["q"] / r["lower"] for r in rows]))
        put(arm, "lb_min_ratio", min(r["q"] / r["lower"] for r in rows))
        put(arm, "lb_all_agents_queried", float(all(r["min_per_agent"] >= 1 for r in rows)))
        rn = [r for r in rows if r["family"] == "lb_n"]
        rk = [r for r in rows if r["family"] == "lb_K"]
        put(arm, "slope_q_vs_n", np.polyfit([r["n"] for r in rn], [r["q"] for r in rn], 1)[0])
        put(arm, "slope_q_vs_log2K", np.polyfit([math.log2(r["K"]) for r in rk], [r["q"] for r in rk], 1)[0])
        oa = one_agent[arm]
        put(arm, "one_agent_max_q", max(r["q"] for r in oa))
        put(arm, "one_agent_reject_all_q", oa[0]["q"])
    lbk = [r for a, r in lb_rows if a == "alg2" and r["family"] == "lb_K"]
    put("lower_bound", "slope_lower_vs_log2K",
        np.polyfit([math.log2(r["K"]) for r in lbk], [r["lower"] for r in lbk], 1)[0])
    put("lower_bound", "m", config.lb_m)
    # advice
    for arm, row in adv.items():
        put(arm, "q_advice", row["q"])
        put(arm, "R", row["R"])
        put(arm, "advice_within_thm51", float(row["q"] <= row["envelope"]))
        put(arm, "advice_within_thm33", float(row["q"] <= thm33_envelope(n, m, K)))
    put("advice_index", "n", n)
    put("advice_index", "m", m)
    return SeedOutput(metrics=metrics, extras={"records": rec})


# ---------------------------------------------------------------------------------------------
# claims (rules fixed before any number was measured)
# ---------------------------------------------------------------------------------------------

_CORRECT_ARMS = ("full", "alg2", "alg3", "advice_basis", "advice_reversed", "advice_index")


def _m(metrics, arm: str, key: str) -> np.ndarray:
    return np.asarray(metrics[arm][key], dtype=float)


def _exact(ok: bool, ours: str, evidence: dict, n: int) -> Decision:
    """An exact check over ``n`` seeds (exact counts, every run/seed must pass): mde 0."""
    return Decision(REPRODUCED if ok else NOT_REPRODUCED, ours, evidence, mde=0.0, n=n, uses_se=False)


def _n_seeds(metrics, arm: str, key: str) -> int:
    return len(metrics[arm][key])


def _rule_correct(arms: tuple[str, ...]):
    def rule(metrics, config) -> Decision:
        rates = {a: float(_m(metrics, a, "correct_rate").min()) for a in arms}
        lott = [a for a in metrics if a.startswith("lottery_eta")] if arms == _CORRECT_ARMS else []
        rates.update({a: float(_m(metrics, a, "correct_rate").min()) for a in lott})
        runs = int(sum(_m(metrics, a, "n_runs").sum() for a in rates))
        ok = all(v == 1.0 for v in rates.values())
        ours = f"{min(rates.values()):.0%} of {runs} runs correct (worst arm)"
        return _exact(ok, ours, {"min_correct_rate": rates}, _n_seeds(metrics, arms[0], "correct_rate"))
    return rule


def _rule_adaptive(arm: str):
    def rule(metrics, config) -> Decision:
        q, full = _m(metrics, arm, "q_h2h"), _m(metrics, "full", "q_h2h")
        qi, fi = _m(metrics, arm, "q_infeasible"), _m(metrics, "full", "q_infeasible")
        L = _m(metrics, arm, "L_h2h")
        n = len(q)
        a = _exact(bool(np.all(q <= 0.2 * full)),
                   f"planted: {q.mean():.0f} vs full {full.mean():.0f} (ratio {np.mean(q / full):.3f})",
                   {"q": q, "full": full}, n)
        b = _exact(bool(np.all(qi <= 0.3 * fi)), f"infeasible: ratio {np.mean(qi / fi):.3f}",
                   {"q": qi, "full": fi}, n)
        c = _exact(bool(np.all(L <= 0.05 * config.h2h_n)), f"elicited {L.mean():.1f}/{config.h2h_n}",
                   {"L": L}, n)
        return all_of(a, b, c)
    return rule


def _rule_random(arm: str, base: str = "full"):
    """Per family: ``arm``'s elicitation queries below ``base``'s (full elicitation), paired over
    seeds."""
    def rule(metrics, config) -> Decision:
        regimes, skipped = [], []
        for name, n, m in regime_families(config):
            if n <= 16 * (m - 1) ** 2:  # Alg 3 is full elicitation there by construction
                skipped.append(name)
                continue
            e, ef = _m(metrics, arm, f"eli: {name}"), _m(metrics, base, f"eli: {name}")
            q, qf = _m(metrics, arm, f"q: {name}"), _m(metrics, base, f"q: {name}")
            L = _m(metrics, arm, f"L: {name}")
            d = paired_improvement(e, ef, higher_is_better=False, label="elicitation ")
            ours = (f"{d.ours}; {L.mean():.0f}/{n} agents learned; total queries "
                    f"{q.mean():.0f} vs {qf.mean():.0f} ({q.mean() / qf.mean():.2f}x)")
            # the mde (2 s.e. of the paired gap, from the seed spread) as a fraction of full
            # elicitation's cost: the effect is relative
            scale = float(np.mean(ef))
            rel = d.mde / scale if d.mde is not None and scale > 0 else math.inf
            regimes.append((name, dataclasses.replace(
                d, ours=ours, mde=rel,
                evidence={**d.evidence, "total_q": q, "total_q_full": qf, "learned": L,
                          "mde_relative": rel if math.isfinite(rel) else None})))
        if not regimes:
            return Decision(INCONCLUSIVE, "no family with n > r = 16 (m-1)^2", {"skipped": skipped},
                            mde=math.inf, n=len(next(iter(metrics[base].values()))), uses_se=True)
        d = per_regime(regimes, require="all", label=f"{arm}: ")
        return dataclasses.replace(d, evidence={**d.evidence, "skipped_n_le_r": skipped})
    return rule


def _rule_bounds(arms: tuple[str, ...]):
    def rule(metrics, config) -> Decision:
        m = config.lb_m
        parts = []
        lb_slope = float(np.mean(_m(metrics, "lower_bound", "slope_lower_vs_log2K")))
        for arm in arms:
            ratio = float(_m(metrics, arm, "lb_mean_ratio").min())
            allq = float(_m(metrics, arm, "lb_all_agents_queried").min())
            sn = float(_m(metrics, arm, "slope_q_vs_n").mean())
            sk = float(_m(metrics, arm, "slope_q_vs_log2K").mean())
            oa = float(_m(metrics, arm, "one_agent_max_q").min())
            ra = float(_m(metrics, arm, "one_agent_reject_all_q").min())
            env = float(_m(metrics, arm, "within_envelope").min()) if "within_envelope" in metrics[arm] else 0.0
            ok = ratio >= 1 and allq == 1 and sn >= 1 and sk >= lb_slope and oa >= m and ra >= m and env == 1
            parts.append(_exact(ok, f"{arm}: q/LB {ratio:.2f}, dq/dn {sn:.2f}, dq/dlog2K {sk:.1f}",
                                {"mean_q_over_lower": ratio, "all_agents_queried": allq,
                                 "slope_n": sn, "slope_log2K": sk, "lower_slope_log2K": lb_slope,
                                 "one_agent_max_q": oa, "one_agent_reject_all_q": ra,
                                 "within_upper_envelope": env},
                                _n_seeds(metrics, arm, "lb_mean_ratio")))
        extra = []
        if "alg2" in arms:
            ok = (float(_m(metrics, "alg2", "rounds_and_verification_ok").min()) == 1
                  and float(_m(metrics, "alg2", "nested_verification_exact").min()) == 1
                  and float(_m(metrics, "alg3", "L_bound_ok").min()) == 1)
            extra.append(_exact(ok, "", {}, _n_seeds(metrics, "alg2", "nested_verification_exact")))
        return all_of(*parts, *extra, ours="; ".join(p.ours for p in parts))
    return rule


def _rule_advice(good: str):
    def rule(metrics, config) -> Decision:
        qg, qi = _m(metrics, good, "q_advice"), _m(metrics, "advice_index", "q_advice")
        R = _m(metrics, good, "R")
        m = float(_m(metrics, "advice_index", "m")[0])
        n = float(_m(metrics, "advice_index", "n")[0])
        k = len(qg)
        a = _exact(bool(np.all(qg <= 0.7 * qi) and np.all(R <= m)),
                   f"{good}: {qg.mean():.0f} vs index order {qi.mean():.0f} (R {R.mean():.1f})",
                   {"q": qg, "index": qi, "R": R}, k)
        bad = [a_ for a_ in metrics if a_.startswith("advice_") or a_.startswith("lottery_eta")]
        env = {a_: float(min(_m(metrics, a_, "advice_within_thm51").min(),
                             _m(metrics, a_, "advice_within_thm33").min())) for a_ in bad}
        b = _exact(all(v == 1 for v in env.values()),
                   "every order within Thm 5.1/3.3 envelopes" if all(v == 1 for v in env.values())
                   else "an order exceeds its envelope", env, k)
        q0 = _m(metrics, "lottery_eta0", "q_advice")
        c = _exact(bool(np.all(q0 == n)), f"exact lottery advice: {q0.mean():.0f} queries (n = {n:.0f})",
                   {"q": q0}, k)
        return all_of(a, b, c)
    return rule


_SCALE = ("laptop-scale: generated grid-exact instances (planted n <= 2000 in quick, m = 3-4, "
          "K = 1/eps up to 1024), exact rational oracle and LP")

# Declared metrics (harness.metrics): what each arm writes; the runner refuses anything else.
# ``*`` in a regime-sweep name is its instance label (family, n, m, K); in an arm, the advice's
# basis share f (percent) or the lottery perturbation eta.
_ALGS = ("full", "alg2", "alg3")
_ADVICE = ("advice_index", "advice_basis", "advice_reversed", "advice_random", "advice_f*",
           "lottery_eta*")
_RUNS = ("correct_rate", "n_runs")
_LOWER = ("lb_mean_ratio", "lb_min_ratio", "lb_all_agents_queried", "slope_q_vs_n",
          "slope_q_vs_log2K", "one_agent_max_q", "one_agent_reject_all_q")
_HEAD_TO_HEAD = ("q_h2h", "L_h2h", "q_infeasible", "q_nested", "T_nested")
METRICS = {
    (*_ALGS, "no_verify", "guess", "scan_learn", *_ADVICE): _RUNS,
    (*_ALGS, *_ADVICE): ("within_envelope",),
    (*_ALGS, "no_verify", "scan_learn"): _HEAD_TO_HEAD,
    _ALGS: ("eli: *", "q: *", "L: *"),
    (*_ALGS, "no_verify", "guess"): _LOWER,
    "alg2": ("nested_verification_exact", "rounds_and_verification_ok"),
    "alg3": ("L_bound_ok",),
    "lower_bound": ("slope_lower_vs_log2K", "m"),
    _ADVICE: ("q_advice", "R", "advice_within_thm51", "advice_within_thm33"),
    "advice_index": ("n", "m"),
}

CLAIMS = (
    Claim(
        id="correct",
        statement="Every algorithm either returns a lottery all stakeholders accept or certifies "
                  "infeasibility, on every instance",
        paper_value="Theorems 3.3, 3.4, 5.1 (always correct; Las Vegas for Alg 3)",
        metric="fraction of runs correct, checked exactly offline (higher is better)",
        scale=_SCALE,
        rule="every run of full elicitation, Alg 2, Alg 3, Alg 2[sigma] and lottery advice is correct "
             "(found <=> exact LP feasible; lottery accepted by all agents exactly; certificate of "
             "<= m agents re-verified infeasible by exact LP and HiGHS), in every seed",
        decide=_rule_correct(_CORRECT_ARMS),
        control_description="Alg 3's first round without global verification (returns Select of a sample)",
        control=_rule_correct(("no_verify",)),
        arms=ClaimArms(method="alg2", control="no_verify",
                       baselines=tuple(a for a in _CORRECT_ARMS if a != "alg2")),
        effect=0.01,
        effect_source="smallest that matters: 1 % of runs incorrect (Theorems 3.3/3.4/5.1: none); "
                      "exact offline check, mde 0",
    ),
    Claim(
        id="adaptivity",
        statement="Adaptivity (Alg 2) elicits few stakeholders and needs far fewer queries than full "
                  "elicitation when few stakeholders bind",
        paper_value="qualitative (abstract; Theorem 3.3 O(n^2 + n m log 1/eps) vs full n m log 1/eps)",
        metric="total queries (lower is better), learned agents L",
        scale=_SCALE,
        rule="in every seed: Alg 2 queries <= 0.2 x full elicitation on the planted m=3 K=256 instance, "
             "<= 0.3 x on the planted infeasible instance, and L <= 0.05 n",
        decide=_rule_adaptive("alg2"),
        control_description="non-adaptive scan-and-learn (learns every agent it queries)",
        control=_rule_adaptive("scan_learn"),
        arms=ClaimArms(method="alg2", control="scan_learn", baselines=("full",)),
        effect=0.8,
        effect_source="the rule's saving, our choice (paper qualitative): Alg 2 at <= 0.2 x full "
                      "elicitation (80 % fewer queries); exact counts in every seed, mde 0",
    ),
    Claim(
        id="randomization",
        statement="Randomization (Alg 3) reduces the expected elicitation cost relative to full "
                  "elicitation, across instance families (including orders adversarial to Alg 2)",
        paper_value="abstract; Theorem 3.4: elicitation O(min(n, m^3 log n) m log 1/eps) vs full "
                    "n m log 1/eps",
        metric="elicitation queries (inside Algorithm 1; lower is better), total queries reported "
               "beside",
        scale=_SCALE + "; families: planted sweep, planted head-to-head, infeasible (pair, "
                       "reject-all), nested with dummies first, nested only",
        rule="per family with n > r = 16(m-1)^2: Alg 3 elicitation queries below full "
             "elicitation's in every seed, mean paired gap > 2 s.e.; reproduced iff it holds in "
             "every family (per_regime, require all)",
        decide=_rule_random("alg3"),
        control_description="Algorithm 2: adaptive but not randomized, the strongest arm without "
                            "the random sampling and reweighting (it elicits every agent on the "
                            "nested-only family)",
        control=_rule_random("alg2"),
        arms=ClaimArms(method="alg3", control="alg2", baselines=("full",)),
        effect=0.10,
        effect_source="smallest that matters: 10 % of full elicitation's cost, our choice (Thm 3.4 "
                      "is asymptotic); mde: 2 s.e. of the paired gap ÷ full's mean, worst family",
        beyond=_rule_random("alg3", base="alg2"),
    ),
    Claim(
        id="bounds",
        statement="Queries grow at least linearly in n and logarithmically in 1/eps on the lower-bound "
                  "families, and measured counts stay within the theorem upper bounds",
        paper_value="Theorem 4.1 Omega((n - min(n,m)) + (min(n,m)-1) log 1/eps); Theorem 4.2 Omega(m); "
                    "Theorems 3.3/3.4 upper bounds",
        metric="queries on the Theorem 4.1/4.2 families; envelope checks",
        scale=_SCALE + "; singleton family m=3",
        rule="for full, Alg 2 and Alg 3: seed-min of mean q / (n-p + log2 C(K-1,p-1)) >= 1, every agent "
             "queried in every run, slope dq/dn >= 1, slope dq/dlog2K >= the lower bound's slope, "
             "Theorem 4.2 family max q >= m and reject-all costs >= m; every run within its exact "
             "upper envelope (n E, Thm 3.3, Thm 3.4); Alg 2 rounds = L+1 and verification <= sum(n-t), "
             "and on the nested order it equals b(n-b+1)+(n-b) exactly; Alg 3 L <= min(n, rT)",
        decide=_rule_bounds(("full", "alg2", "alg3")),
        control_description="the same checks on the cheapest guess: learn m-1 random agents (a "
                            "basis' worth) and return their Select without verification (Alg 3's "
                            "full first-round sample learns every agent when n <= r, so it would "
                            "be full elicitation on the small lower-bound instances)",
        control=_rule_bounds(("guess",)),
        arms=ClaimArms(method="alg2", control="guess", baselines=("full", "alg3")),
        effect=0.01,
        effect_source="smallest that matters: a bound violated by 1 % (q/LB 0.99, a count 1 % over "
                      "an envelope), our choice; exact counts in every run, mde 0",
    ),
    Claim(
        id="advice",
        statement="Accurate advice (binding stakeholders first, or the right lottery) reduces queries; "
                  "bad advice stays within the worst-case guarantee",
        paper_value="Theorem 5.1: O((n + m log 1/eps) R(sigma)); R = 0 costs n",
        metric="total queries (lower is better), R(sigma)",
        scale=_SCALE + "; advice instance planted n=1000, m=4, K=64",
        rule="in every seed: witness-first order queries <= 0.7 x index order and R <= m; every order "
             "(witness at f, reversed, random) and every lottery advice within n(R+1)+R E (plus n) and "
             "the Thm 3.3 envelope; exact lottery advice costs exactly n",
        decide=_rule_advice("advice_basis"),
        control_description="uninformative advice: a uniformly random order in place of the witness-first order",
        control=_rule_advice("advice_random"),
        arms=ClaimArms(method="advice_basis", control="advice_random", baselines=("advice_index",)),
        effect=0.3,
        effect_source="the rule's saving, our choice (Thm 5.1 qualitative): witness-first order at "
                      "<= 0.7 x the index order; exact counts in every seed, mde 0",
    ),
)


# ---------------------------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------------------------


def plot(config: Config, outputs: list[SeedOutput], outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rec = [r for o in outputs for r in o.extras["records"]]
    paths = []
    arms = ("full", "alg2", "alg3")
    # queries vs n (planted sweep)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for (m, K), ls in zip(sorted({(r["m"], r["K"]) for r in rec if r["family"] == "sweep"}),
                          ("-", "--", ":", "-.") * 4, strict=False):
        for arm, col in zip(arms, ("C0", "C1", "C2"), strict=True):
            rows = [r for r in rec if r["family"] == "sweep" and r["arm"] == arm and r["m"] == m and r["K"] == K]
            ns = sorted({r["n"] for r in rows})
            qs = [np.mean([r["q"] for r in rows if r["n"] == n]) for n in ns]
            axes[0].plot(ns, qs, ls, color=col, marker="o", label=f"{arm} m={m} K={K}")
    axes[0].set(xlabel="n (stakeholders)", ylabel="queries", title="planted: queries vs n",
                xscale="log", yscale="log")
    axes[0].legend(fontsize=5, ncol=2)
    for arm, col in zip(arms, ("C0", "C1", "C2"), strict=True):
        rows = [r for r in rec if r["family"] == "lb_n" and r["arm"] == arm]
        ns = sorted({r["n"] for r in rows})
        axes[1].plot(ns, [np.mean([r["q"] for r in rows if r["n"] == n]) for n in ns], "o-", color=col,
                     label=arm)
    rows = [r for r in rec if r["family"] == "lb_n" and r["arm"] == "alg2"]
    ns = sorted({r["n"] for r in rows})
    axes[1].plot(ns, [thm41_lower(n, config.lb_m, config.lb_n_K) for n in ns], "k--", label="Thm 4.1 bound")
    axes[1].set(xlabel="n", ylabel="queries", title=f"Thm 4.1 family (m={config.lb_m}, K={config.lb_n_K})")
    axes[1].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "queries_vs_n.png", dpi=120))
    # queries vs 1/eps
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    for arm, col in zip(arms, ("C0", "C1", "C2"), strict=True):
        rows = [r for r in rec if r["family"] == "lb_K" and r["arm"] == arm]
        Ks = sorted({r["K"] for r in rows})
        ax.plot(Ks, [np.mean([r["q"] for r in rows if r["K"] == K]) for K in Ks], "o-", color=col, label=arm)
    Ks = sorted({r["K"] for r in rec if r["family"] == "lb_K"})
    ax.plot(Ks, [thm41_lower(config.lb_K_n, config.lb_m, K) for K in Ks], "k--", label="Thm 4.1 bound")
    ax.set(xscale="log", xlabel="1/eps = K", ylabel="queries",
           title=f"Thm 4.1 family (n={config.lb_K_n}, m={config.lb_m})")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "queries_vs_precision.png", dpi=120))
    # advice
    fig, ax = plt.subplots(figsize=(6, 3.5))
    adv_arms = sorted({r["arm"] for r in rec if r["family"] == "advice"})
    qs = [np.mean([r["q"] for r in rec if r["family"] == "advice" and r["arm"] == a]) for a in adv_arms]
    ax.bar(range(len(adv_arms)), qs)
    ax.set_xticks(range(len(adv_arms)), adv_arms, rotation=45, ha="right", fontsize=7)
    ax.set(ylabel="queries", title="advice quality (planted advice instance)")
    paths.append(save_figure(fig, outdir / "advice.png", dpi=120))
    return paths

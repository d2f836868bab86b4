"""Mutation suite of the catalogue (issue 47): does a transcription error in the library show?

Each :class:`Mutant` replaces one or more *library* attributes (a function or a module constant of
``covering``, ``chaining``, ``concentration``, ``functionals`` or ``least_squares``) by a plausible
transcription error of the formal statement it implements (a dropped √2, a constant halved, an
exponent off by one, a missing star-hull scaling, E χ_r replaced by √r, ...). It names the catalogue
rows whose judged quantities call that attribute. :func:`mutation_score` runs each of those rows'
checks with the mutant in place and counts the row as *catching* it when its check comes out
violated (by the inequality or by one of the row's spec legs) or when the library's own input
checks refuse the mutated values (a ValueError, recorded in ``raised``). The unmutated library is restored
after every mutant, and the catalogue's caches are cleared before and after.

The mutants are fixed here, before any score was seen; they were not chosen by whether a row
catches them. A mutant a row does not catch is reported by name (``missed``), so each row says which
errors it cannot see.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from . import catalogue as cat
from . import chaining as ch
from . import concentration as co
from . import covering as cv
from . import functionals as fn
from . import least_squares as ls

__all__ = ["Mutant", "MUTANTS", "mutated", "mutation_score"]


@dataclass(frozen=True)
class Mutant:
    """A plausible transcription error of the library.

    ``targets``: ``(module, attribute)`` pairs and ``make(original) -> replacement`` for each (the
    original is the unmutated attribute, so a mutant may wrap it). ``rows``: the catalogue rows whose
    judged quantities call the attribute."""

    name: str
    description: str
    rows: tuple[str, ...]
    targets: tuple[tuple[ModuleType, str, Callable[[Any], Any]], ...]


_CACHED = (cat.dudley_instances, cat._one_dim_laws, cat._exact_cgfs)
_CACHE_INPUTS = frozenset({"expected_chi", "l2_ball_entropy_integral_lower", "dudley_integral",
                           "euclidean_ball_covering_bound", "l1_ball_covering_bound",
                           "expected_max_abs_gaussian", "brownian_entropy_integral", "DUDLEY_CONSTANT"})
"""Library attributes the catalogue's cached tables are built from: a mutant of one of them clears the
caches (before and after), so the rows see the mutated tables and the next run the clean ones."""


def _clear_caches() -> None:
    for f in _CACHED:
        f.cache_clear()


@contextmanager
def mutated(mutant: Mutant) -> Iterator[None]:
    """Apply ``mutant`` to the library for the duration of the block (caches cleared around it)."""
    saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in mutant.targets]
    clear = any(attr in _CACHE_INPUTS for _, attr, _ in mutant.targets)
    if clear:
        _clear_caches()
    try:
        for (mod, attr, make), (_, _, orig) in zip(mutant.targets, saved, strict=True):
            setattr(mod, attr, make(orig))
        yield
    finally:
        for mod, attr, orig in saved:
            setattr(mod, attr, orig)
        if clear:
            _clear_caches()


def _wrap_value(scale: float):
    """A float-returning function scaled by ``scale``."""
    def make(orig):
        return lambda *a, **k: scale * orig(*a, **k)
    return make


def _log_aware(fun_log: Callable[..., float]):
    """A covering bound ``f(radius, eps, d, *, log=False)`` from its log form."""
    def make(orig):
        def f(radius, eps, d, *, log=False):
            v = fun_log(radius, eps, d)
            return v if log else math.exp(v)
        return f
    return make


def _master(radius_factor: float = 16.0, exp_factor: float = 2.0):
    def make(orig):
        def f(t, delta_star, n, sigma):
            log_fail = -n * t * delta_star / (exp_factor * sigma**2)
            return ls.MasterBound(radius_factor * t * delta_star, -math.expm1(log_fail), log_fail)
        return f
    return make


def _star_hull(power: float | None):
    """``min(1, δ/‖h‖)^power`` scaling (power None: no scaling at all, the sup over the whole class)."""
    def make(orig):
        def build(H):
            H = np.asarray(H, dtype=float)
            norms = np.sqrt(np.mean(H**2, axis=1))
            n = H.shape[1]

            def sup_fn(W, delta):
                scale = np.ones_like(norms) if power is None else np.minimum(1.0, delta / norms) ** power
                return np.max(np.abs(W @ H.T) * scale[None, :], axis=1) / n
            return sup_fn
        return build
    return make


def _greedy_double_sep(orig):
    return lambda points, eps, metric="euclidean": orig(points, 2 * eps, metric)


def _const(value):
    return lambda orig: value


def _efron_stein_drop_last(orig):
    def f(arr, probs=None):  # Σ over the first n − 1 coordinates only (an off-by-one in the loop)
        a, p = fn._table(arr, probs)
        return float(sum(fn._expect((a - fn._expect(a, p, [i])) ** 2, p, range(a.ndim)).item()
                         for i in range(a.ndim - 1)))
    return f


MUTANTS: tuple[Mutant, ...] = (
    Mutant("small_ball_no_e", "T01 bound ε^N instead of (eε)^N", ("T01",),
           ((co, "small_ball_bound", lambda o: (lambda eps, N: eps**N)),)),
    Mutant("greedy_net_2eps", "greedy ε-net routine separates at 2ε (packing/covering radius confused)",
           ("T02", "T03", "T04", "T05"), ((cv, "greedy_net_indices", _greedy_double_sep),)),
    Mutant("net_radius_mean", "T03 net radius as the mean distance to the net instead of the max", ("T03",),
           ((cv, "net_radius", lambda o: (lambda net, pts, metric="euclidean": float(np.mean(
               np.min(np.linalg.norm(np.asarray(pts)[:, None, :] - np.asarray(net)[None, :, :], axis=2), axis=1))))),)),
    Mutant("euclid_cover_base_R_over_eps", "T04 bound (1 + R/ε)^d instead of (1 + 2R/ε)^d", ("T04",),
           ((cv, "euclidean_ball_covering_bound", _log_aware(lambda R, e, d: d * math.log1p(R / e))),)),
    Mutant("euclid_cover_exponent_d_minus_1", "T04 bound exponent d − 1", ("T04",),
           ((cv, "euclidean_ball_covering_bound", _log_aware(lambda R, e, d: (d - 1) * math.log1p(2 * R / e))),)),
    Mutant("l1_cover_exponent_R_over_eps", "T05/T23 exponent ⌈R/ε⌉ instead of ⌈R²/ε²⌉", ("T05", "T23"),
           ((cv, "l1_ball_covering_bound", _log_aware(lambda R, e, d: math.ceil(R / e) * math.log(2 * d + 1))),)),
    Mutant("l1_cover_base_2d", "T05/T23 base 2d instead of 2d + 1", ("T05", "T23"),
           ((cv, "l1_ball_covering_bound",
             _log_aware(lambda R, e, d: cv.maurey_sample_size(R, e) * math.log(2 * d))),)),
    Mutant("finite_max_no_2", "T06 bound σ·diam·√(log|T|) (the 2 under the root dropped)", ("T06",),
           ((ch, "finite_max_bound", lambda o: (lambda s, diam, card: s * diam * math.sqrt(math.log(card)))),)),
    Mutant("dudley_constant_half", "T07 Dudley constant 6√2 instead of 12√2 (× 0.5)", ("T07",),
           ((ch, "DUDLEY_CONSTANT", _const(6.0 * math.sqrt(2.0))),)),
    Mutant("dudley_constant_no_sqrt2", "T07 Dudley constant 12 instead of 12√2", ("T07",),
           ((ch, "DUDLEY_CONSTANT", _const(12.0)),)),
    Mutant("expected_chi_sqrt_r", "E χ_r replaced by √r (Jensen's upper bound)", ("T07", "T18", "T21"),
           ((ch, "expected_chi", lambda o: (lambda r: math.sqrt(r))),
            (ls, "expected_chi", lambda o: (lambda r: math.sqrt(r))))),
    Mutant("efron_stein_drop_last", "T08 right side sums over n − 1 coordinates (off by one)", ("T08",),
           ((fn, "efron_stein_rhs", _efron_stein_drop_last),)),
    Mutant("poincare_grad_half", "T09 E f'(X)² computed with a factor ½", ("T09",),
           ((fn, "gaussian_poincare_sides",
             lambda o: (lambda f, fp, sup: (o(f, fp, sup)[0], 0.5 * o(f, fp, sup)[1]))),)),
    Mutant("han_no_square", "T10 right side Σ_j E Ent^(j)(h) instead of Ent^(j)(h²)", ("T10",),
           ((fn, "han_rhs", lambda o: (lambda h: fn.conditional_entropy_sum(np.abs(fn._cube_table(h))))),)),
    Mutant("entropy_log2", "Ent computed in bits (log₂) instead of nats", ("T10", "T11", "T12", "T13", "T24"),
           ((fn, "entropy", _wrap_value(1.0 / math.log(2.0))),)),
    Mutant("dual_variable_unnormalised", "T11 U* = log Y instead of log(Y/E Y)", ("T11",),
           ((fn, "optimal_dual_variable", lambda o: (lambda y, probs=None: np.log(np.asarray(y, dtype=float)))),)),
    Mutant("dual_T_no_normalisation", "T24 E[Y log T] without − log E T", ("T24",),
           ((fn, "entropy_dual_objective_T", lambda o: (lambda y, t, probs=None: o(y, t, probs) + (
               float(np.mean(y)) * math.log(float(np.mean(t))) if probs is None else 0.0))),)),
    Mutant("cond_entropy_uniform", "T12 conditional entropies under uniform instead of the given marginals",
           ("T12",), ((fn, "conditional_entropy_sum", lambda o: (lambda y, probs=None: o(y, None))),)),
    Mutant("bernoulli_lsi_quarter", "T13 constant ¼ instead of ½", ("T13",),
           ((fn, "bernoulli_lsi_rhs", _wrap_value(0.5)),)),
    Mutant("glsi_energy_half", "T14 E‖∇g‖² computed with a factor ½", ("T14",),
           ((fn, "gaussian_lsi_sides",
             lambda o: (lambda g, grad, n, nodes=80: (o(g, grad, n, nodes)[0], 0.5 * o(g, grad, n, nodes)[1]))),)),
    Mutant("cgf_L_not_squared", "T15 bound λ² L/2 instead of λ² L²/2", ("T15",),
           ((co, "gaussian_lipschitz_cgf_bound", lambda o: (lambda lam, L: 0.5 * np.asarray(lam) ** 2 * L)),)),
    Mutant("cgf_no_half", "T15 bound λ² L² instead of λ² L²/2 (too large)", ("T15",),
           ((co, "gaussian_lipschitz_cgf_bound", lambda o: (lambda lam, L: np.asarray(lam) ** 2 * L * L)),)),
    Mutant("tail_L_not_squared", "T16 bound 2exp(−t²/(2L)) instead of 2exp(−t²/(2L²))", ("T16",),
           ((co, "gaussian_lipschitz_tail_bound",
             lambda o: (lambda t, L: 2 * np.exp(-np.asarray(t) ** 2 / (2 * L)))),)),
    Mutant("tail_no_factor_2", "T16 bound exp(−t²/(2L²)) (the factor 2 dropped)", ("T16",),
           ((co, "gaussian_lipschitz_tail_bound", lambda o: (lambda t, L: 0.5 * o(t, L))),)),
    Mutant("one_step_single_2", "T17 bound 2·localOsc + max (one factor 2 dropped)", ("T17",),
           ((ch, "one_step_discretization_rhs",
             lambda o: (lambda a, b: 2 * np.asarray(a, float) + np.asarray(b, float))),)),
    Mutant("local_complexity_constant_half", "T18 constant 12√2 instead of 24√2", ("T18",),
           ((ls, "LOCAL_COMPLEXITY_CONSTANT", _const(12.0 * math.sqrt(2.0))),)),
    Mutant("star_hull_no_scaling", "T19 localised sup without the star-hull scaling min(1, δ/‖h‖)", ("T19",),
           ((ls, "star_hull_sup", _star_hull(None)),)),
    Mutant("star_hull_squared_scaling", "T19 scaling min(1, δ/‖h‖)² instead of min(1, δ/‖h‖)", ("T19",),
           ((ls, "star_hull_sup", _star_hull(2.0)),)),
    Mutant("bad_event_no_2", "T20 bound exp(−n u²/σ²) (the 2 dropped)", ("T20",),
           ((ls, "bad_event_probability_bound",
             lambda o: (lambda u, n, s, *, log=False: (lambda v: v if log else math.exp(v))(-n * u * u / s**2))),)),
    Mutant("master_radius_4", "T21 radius 4tδ* instead of 16tδ*", ("T21", "T22"),
           ((ls, "master_error_bound", _master(radius_factor=4.0)),)),
    Mutant("master_exponent_doubled", "T21 failure exponent ntδ*/σ² instead of ntδ*/(2σ²)", ("T21", "T22"),
           ((ls, "master_error_bound", _master(exp_factor=1.0)),)),
    Mutant("formal_delta_no_sqrt2", "T22 δ* = 192 σ √(d/n) instead of 192√2 σ √(d/n)", ("T22",),
           ((ls, "FORMAL_DELTA_CONSTANT", _const(192.0)),)),
    Mutant("rank_C1_no_16", "T25 C₁ = (192√2)² instead of 16(192√2)²", ("T25",),
           ((ls, "FORMAL_LINEAR_C1", _const((192.0 * math.sqrt(2.0)) ** 2)),)),
)


def mutation_score(rng: np.random.Generator, n_mc: int = 2000,
                   mutants: tuple[Mutant, ...] = MUTANTS) -> dict[str, Any]:
    """Run every mutant against the rows it names.

    Returns ``{"rows": {key: {"caught", "caught_by_inequality", "total", "missed": [names]}},
    "mutants": {name: {"description", "caught_by", "missed_by", "caught_by_inequality"}}, "caught",
    "total", "score", "caught_by_inequality", "score_inequality_only", "mutants_caught",
    "mutants_total"}``: the overall score counts (row, mutant) pairs. ``caught_by_inequality`` counts
    the pairs the theorem's inequality alone flags (without the row's spec legs): what the slack of
    the formal constants lets through.
    Also checks that every row passes unmutated on the same generator first (a row that fails
    unmutated would "catch" everything), raising RuntimeError otherwise.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy Generator")
    if isinstance(n_mc, bool) or not isinstance(n_mc, int) or n_mc < 100:
        raise ValueError(f"n_mc must be an integer >= 100, got {n_mc!r}")
    keys = sorted({k for m in mutants for k in m.rows})
    unknown = [k for k in keys if k not in cat.THEOREMS]
    if unknown:
        raise KeyError(f"mutants name unknown rows {unknown}")
    seed = int(rng.integers(2**31))
    for k in keys:
        if cat.THEOREMS[k].check(np.random.default_rng(seed), n_mc).violated:
            raise RuntimeError(f"row {k} is violated without any mutant: the mutation score would be void")
    rows = {k: {"caught": 0, "caught_by_inequality": 0, "total": 0, "missed": []} for k in keys}
    per_mutant = {}
    for m in mutants:
        caught_by, missed_by, by_ineq, raised = [], [], [], {}
        with mutated(m):
            for k in m.rows:
                try:
                    res = cat.THEOREMS[k].check(np.random.default_rng(seed), n_mc)
                except (ValueError, ArithmeticError) as err:  # the library's own input checks refuse it
                    caught_by.append(k)
                    raised[k] = f"{type(err).__name__}: {err}"[:200]
                    continue
                (caught_by if res.violated else missed_by).append(k)
                if res.max_excess > (0.0 if res.kind == "mc" else cat.EXACT_TOL):
                    by_ineq.append(k)
        for k in m.rows:
            rows[k]["total"] += 1
            rows[k]["caught_by_inequality"] += int(k in by_ineq)
            if k in caught_by:
                rows[k]["caught"] += 1
            else:
                rows[k]["missed"].append(m.name)
        per_mutant[m.name] = {"description": m.description, "caught_by": caught_by, "missed_by": missed_by,
                              "caught_by_inequality": by_ineq, "raised": raised}
    caught = sum(r["caught"] for r in rows.values())
    total = sum(r["total"] for r in rows.values())
    ineq = sum(r["caught_by_inequality"] for r in rows.values())
    return {"rows": rows, "mutants": per_mutant, "caught": caught, "total": total, "score": caught / total,
            "caught_by_inequality": ineq, "score_inequality_only": ineq / total,
            "mutants_caught": sum(bool(v["caught_by"]) for v in per_mutant.values()),
            "mutants_total": len(per_mutant)}

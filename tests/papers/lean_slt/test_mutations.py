"""Mutating a *library* function must make the row that calls it flag a violation (issue 21).

Each case monkeypatches one shipped function with a plausible transcription error and runs the
catalogue row's check, which must come out violated; the unpatched row passes (tested elsewhere).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml26.papers.lean_slt import catalogue as cat
from icml26.papers.lean_slt import chaining as ch
from icml26.papers.lean_slt import concentration as co
from icml26.papers.lean_slt import covering as cv
from icml26.papers.lean_slt import functionals as fn
from icml26.papers.lean_slt import least_squares as ls

_orig = {
    "euclid": cv.euclidean_ball_covering_bound, "l1": cv.l1_ball_covering_bound, "meb": ls.master_error_bound,
    "star": ls.star_hull_sup, "lsi": fn.bernoulli_lsi_rhs, "rank": ls.linear_minimax_rank_bound,
    "glsi": fn.gaussian_lsi_sides,
}


def _euclid_exponent_minus_one(radius, eps, d, *, log=False):
    v = (d - 1) * math.log1p(2 * radius / eps)
    return v if log else math.exp(v)


def _l1_exponent_one(radius, eps, d, *, log=False):
    v = math.log(2 * d + 1)
    return v if log else math.exp(v)


def _meb_factor_one(t, delta_star, n, sigma):  # radius t·δ* instead of 16 t δ*
    b = _orig["meb"](t, delta_star, n, sigma)
    return ls.MasterBound(b.radius_sq / 16, b.probability, b.log_failure)


def _meb_wrong_exponent(t, delta_star, n, sigma):  # exponent n t δ*/σ² (factor 2 dropped)
    b = _orig["meb"](t, delta_star, n, sigma)
    return ls.MasterBound(b.radius_sq, -math.expm1(2 * b.log_failure), 2 * b.log_failure)


def _star_squared_scaling(H):
    H = np.asarray(H, dtype=float)
    norms = np.sqrt(np.mean(H**2, axis=1))
    n = H.shape[1]

    def sup_fn(W, delta):
        scale = np.minimum(1.0, delta / norms) ** 2  # min(1, δ/‖h‖)² instead of min(1, δ/‖h‖)
        return np.max(np.abs(W @ H.T) * scale[None, :], axis=1) / n

    return sup_fn


def _rank_bound_unit_constants(sigma, r, n):
    return ls.MasterBound(sigma**2 * r / n, -math.expm1(-r), -float(r))


CASES = [
    ("T04", cv, "euclidean_ball_covering_bound", _euclid_exponent_minus_one),
    ("T02", cv, "euclidean_ball_covering_bound", lambda R, e, d, *, log=False: _orig["euclid"](R, 4 * e, d, log=log)),
    ("T05", cv, "l1_ball_covering_bound", _l1_exponent_one),
    ("T23", cv, "l1_ball_covering_bound", _l1_exponent_one),
    ("T01", co, "small_ball_bound", lambda eps, N: (eps) ** N),
    ("T06", ch, "finite_max_bound", lambda s, diam, card: s * diam * math.sqrt(math.log(card)) / 2),
    ("T07", ch, "dudley_bound", lambda sigma, J: sigma * J),
    ("T15", co, "gaussian_lipschitz_cgf_bound", lambda lam, L: 0.5 * np.asarray(lam) ** 2 * L * L / 2),
    ("T16", co, "gaussian_lipschitz_tail_bound", lambda t, L: 2 * np.exp(-np.asarray(t) ** 2 / L**2)),
    ("T17", ch, "one_step_discretization_rhs", lambda a, b: np.asarray(a) + np.asarray(b)),
    ("T18", ls, "local_complexity_dudley_bound", lambda J, n: J / math.sqrt(n)),
    ("T19", ls, "star_hull_sup", _star_squared_scaling),
    ("T20", ls, "bad_event_probability_bound", lambda u, n, s, *, log=False: -n * u * u / s**2 * 4 if log else 0.0),
    ("T21", ls, "master_error_bound", _meb_factor_one),
    ("T22", ls, "master_error_bound", lambda t, d, n, s: ls.MasterBound(t * d / 1e6, 0.0, -n * t * d)),
    ("T25", ls, "linear_minimax_rank_bound", _rank_bound_unit_constants),
    ("T13", fn, "bernoulli_lsi_rhs", lambda h: _orig["lsi"](h) / 2),
    ("T14", fn, "gaussian_lsi_sides", lambda g, grad, n, nodes=80: (_orig["glsi"](g, grad, n, nodes)[0],
                                                                      0.9 * _orig["glsi"](g, grad, n, nodes)[1])),
]


@pytest.mark.parametrize("key,module,name,broken", CASES, ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_mutated_library_function_is_flagged(monkeypatch, key, module, name, broken):
    monkeypatch.setattr(module, name, broken)
    res = cat.THEOREMS[key].check(np.random.default_rng(4), 2000)
    assert res.violated, f"{key}: mutating {module.__name__}.{name} went unnoticed (excess {res.max_excess})"


@pytest.mark.parametrize("key,name", [("T08", "efron_stein_rhs"), ("T10", "han_rhs"),
                                      ("T12", "conditional_entropy_sum")])
def test_scaled_down_functional_is_flagged(monkeypatch, key, name):
    orig = getattr(fn, name)
    monkeypatch.setattr(fn, name, lambda *a, **k: 0.9 * orig(*a, **k))
    assert cat.THEOREMS[key].check(np.random.default_rng(5), 2000).violated


def test_t21_inequality_cannot_see_a_doubled_exponent_but_the_spec_leg_does(monkeypatch):
    """Stated detection limit of the inequality: the formal failure probability is so loose that
    doubling its exponent still holds on every instance; the row's spec leg (the library's bound
    against the statement's formula) catches it (issue 47)."""
    monkeypatch.setattr(ls, "master_error_bound", _meb_wrong_exponent)
    res = cat.THEOREMS["T21"].check(np.random.default_rng(4), 2000)
    assert res.max_excess <= cat.EXACT_TOL  # the inequality holds
    assert res.spec_failed and res.violated
    assert "exponent" in cat.THEOREMS["T21"].cannot_detect


# ---- the mutation suite (issue 47): mutation.MUTANTS against the rows that call each function ----

_KNOWN_MISSES = {("greedy_net_2eps", "T02")}  # T02 is a witness row: it cannot be made to fail


def test_suite_has_plausible_mutants_over_the_rows():
    from icml26.papers.lean_slt.mutation import MUTANTS

    assert len(MUTANTS) >= 10 and len({m.name for m in MUTANTS}) == len(MUTANTS)
    rows = {k for m in MUTANTS for k in m.rows}
    assert rows == set(cat.THEOREMS)  # every row is exercised by at least one mutant
    for name in ("dudley_constant_half", "expected_chi_sqrt_r", "star_hull_no_scaling", "master_radius_4"):
        assert name in {m.name for m in MUTANTS}  # the review's independent mutants


@pytest.mark.parametrize("name", [m.name for m in __import__(
    "icml26.papers.lean_slt.mutation", fromlist=["MUTANTS"]).MUTANTS])
def test_each_mutant_is_caught_by_its_rows_and_the_library_is_restored(name):
    from icml26.papers.lean_slt import mutation as mu

    m = next(x for x in mu.MUTANTS if x.name == name)
    before = {(mod.__name__, attr): getattr(mod, attr) for mod, attr, _ in m.targets}
    with mu.mutated(m):
        for key in m.rows:
            try:
                caught = cat.THEOREMS[key].check(np.random.default_rng(4), 400).violated
            except ValueError:  # the library's own input checks refuse it
                caught = True
            assert caught != ((name, key) in _KNOWN_MISSES), (name, key)
    assert {(mod.__name__, attr): getattr(mod, attr) for mod, attr, _ in m.targets} == before
    assert cat.dudley_instances.cache_info().currsize in (0, 1)


def test_mutation_score_refuses_a_row_that_fails_unmutated(monkeypatch):
    from icml26.papers.lean_slt import mutation as mu

    bad = mu.Mutant("x", "x", ("T01",), ((cv, "sample_l2_ball", lambda o: o),))
    monkeypatch.setattr(co, "small_ball_bound", lambda eps, N: eps**N)  # T01 now fails unmutated
    with pytest.raises(RuntimeError, match="T01"):
        mu.mutation_score(np.random.default_rng(0), 400, mutants=(bad,))
    with pytest.raises(TypeError):
        mu.mutation_score(0, 400)
    with pytest.raises(ValueError):
        mu.mutation_score(np.random.default_rng(0), 50)


def test_unpatched_rows_pass_on_the_same_inputs():
    for key in sorted({c[0] for c in CASES} | {"T08", "T10", "T12"}):
        if key in ("T06", "T16"):
            continue  # MC rows: covered by the smoke run
        assert not cat.THEOREMS[key].check(np.random.default_rng(4), 2000).violated, key

"""Correctness of the unanimous-lottery API (arXiv 2604.17505): Algorithm 1 exactness, exact Select,
Algorithms 2/3 and advice against offline exact checks, model hygiene, mutation controls, bad input."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from icml26.papers import unanimous_lottery as ul
from icml26.papers.unanimous_lottery import (
    ACCEPT_ALL,
    REJECT_ALL,
    AcceptanceOracle,
    Instance,
    OracleInconsistencyError,
    accepts,
)
from icml26.papers.unanimous_lottery.algorithms import _deterministic, _Learned


def _all_agents(m: int, K: int) -> Instance:
    rows = list(itertools.product(range(K + 1), repeat=m))
    U = np.array([r for r in rows for _ in range(K)], dtype=np.int64)
    T = np.array([t for _ in rows for t in range(1, K + 1)], dtype=np.int64)
    return Instance(U, T, K)


# ---------------------------------------------------------------------------------------------
# Algorithm 1
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m,K", [(2, 2), (2, 5), (2, 8), (3, 2), (3, 4), (4, 2)])
def test_learn_hyperplane_exhaustive(m, K):
    """Every grid agent of a small domain: exact halfspace (formula) and <= E(m, K) queries."""
    inst = _all_agents(m, K)
    oracle = AcceptanceOracle(inst)
    E = ul.learning_cost(m, K)
    for i in range(inst.n):
        q0 = oracle.n_queries
        h = ul.learn_hyperplane(oracle, i)
        assert oracle.n_queries - q0 <= E
        assert h == ul.true_halfspace(inst, i)
        if isinstance(h, tuple):  # the halfspace decides acceptance exactly on random grid lotteries
            u, t = inst.U[i], inst.T[i]
            for p in itertools.product(range(4), repeat=m):
                if sum(p) == 0:
                    continue
                x = [F(v, sum(p)) for v in p]
                assert (sum(c * v for c, v in zip(h, x, strict=True)) >= 1) == (
                    sum(int(a) * v for a, v in zip(u, x, strict=True)) >= int(t))


@pytest.mark.parametrize("m", [2, 3, 5])
def test_learning_cost_closed_form(m):
    """u = (0, 1, ..., 1), tau = 1/2, K = 2^k: exactly m + (m-1)(2k+2) queries (brief check A)."""
    for k in range(1, 11):
        K = 2**k
        U = np.full((1, m), K)
        U[0, 0] = 0
        inst = Instance(U, np.array([K // 2]), K)
        oracle = AcceptanceOracle(inst)
        h = ul.learn_hyperplane(oracle, 0)
        assert oracle.n_queries == m + (m - 1) * (2 * k + 2) == ul.learning_cost(m, K)
        assert h == ul.true_halfspace(inst, 0)
    assert ul.learning_cost(3, 64) == 31 and ul.learning_cost(3, 256) == 39 and ul.learning_cost(4, 64) == 46


def test_learn_sentinels_and_face():
    K = 4
    inst = Instance(np.array([[4, 4, 4], [0, 0, 0], [4, 4, 0], [4, 0, 2]]), np.array([4, 1, 4, 3]), K)
    o = AcceptanceOracle(inst)
    assert ul.learn_hyperplane(o, 0) == ACCEPT_ALL
    assert ul.learn_hyperplane(o, 1) == REJECT_ALL
    assert ul.learn_hyperplane(o, 2) == (F(1), F(1), F(0))  # the face x3 = 0
    assert o.per_agent[1] == 3  # reject-all costs exactly the m vertex queries
    assert ul.learn_hyperplane(o, 3) == ul.true_halfspace(inst, 3)


def test_unquantized_threshold_raises():
    """tau = 1/17 with K = 16 is off the grid: recovery must refuse (mutation control)."""
    oracle = AcceptanceOracle.from_callable(lambda i, x: x[1] >= F(1, 17), n=1, m=2, K=16)
    with pytest.raises(OracleInconsistencyError):
        ul.learn_hyperplane(oracle, 0)


# ---------------------------------------------------------------------------------------------
# Select (exact lexmax)
# ---------------------------------------------------------------------------------------------


def _lexmax_bruteforce(hs, m):
    """Slow reference: enumerate vertices (m-1 tight constraints among halfspaces and x_j >= 0)."""
    cons = [tuple(F(v) for v in c) + (F(1),) for c in hs]
    cons += [tuple(F(1) if j == k else F(0) for j in range(m)) + (F(0),) for k in range(m)]
    best = None
    for sub in itertools.combinations(cons, m - 1):
        M = [list(c[:m]) + [c[m]] for c in sub] + [[F(1)] * m + [F(1)]]
        # Gauss-Jordan
        rows = [r[:] for r in M]
        ok = True
        for col in range(m):
            piv = next((r for r in range(col, m) if rows[r][col] != 0), None)
            if piv is None:
                ok = False
                break
            rows[col], rows[piv] = rows[piv], rows[col]
            pv = rows[col][col]
            rows[col] = [v / pv for v in rows[col]]
            for r in range(m):
                if r != col and rows[r][col] != 0:
                    f = rows[r][col]
                    rows[r] = [a - f * b for a, b in zip(rows[r], rows[col], strict=True)]
        if not ok:
            continue
        x = tuple(rows[j][m] for j in range(m))
        if min(x) < 0 or any(sum(c[j] * x[j] for j in range(m)) < 1 for c in hs):
            continue
        if best is None or x > best:
            best = x
    return best


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 3), st.lists(st.tuples(st.integers(-4, 4), st.integers(-4, 4), st.integers(-4, 4),
                                             st.integers(1, 4)), max_size=4))
def test_select_matches_bruteforce(m, raw):
    hs = [tuple(F(c[j], c[3]) for j in range(m)) for c in raw]
    assert ul.select_lexmax(hs, m) == _lexmax_bruteforce(hs, m)


def test_select_matches_highs_sequential():
    rng = np.random.default_rng(3)
    for _ in range(20):
        inst = ul.planted_feasible(30, 4, 16, rng)
        feasible, x, _ = ul.exact_feasibility(inst)
        assert feasible and bool(accepts(inst, x).all())
        A, b = -inst.U.astype(float), -inst.T.astype(float)
        fixed = []
        for j in range(inst.m):
            A_eq = [np.ones(inst.m)] + [np.eye(inst.m)[k] for k, _ in fixed]
            b_eq = [1.0] + [v for _, v in fixed]
            c = -np.eye(inst.m)[j]
            res = linprog(c, A_ub=A, b_ub=b, A_eq=np.array(A_eq), b_eq=b_eq, bounds=[(0, None)] * inst.m,
                          method="highs")
            fixed.append((j, float(x[j])))
            assert abs(-res.fun - float(x[j])) < 1e-7


def test_select_empty_and_errors():
    assert ul.select_lexmax([], 3) == (F(1), F(0), F(0))
    with pytest.raises(ValueError):
        ul.select_lexmax([], 1)
    with pytest.raises(ValueError):
        ul.select_lexmax([(F(1), F(2))], 3)


# ---------------------------------------------------------------------------------------------
# Algorithms 2 and 3, full elicitation, advice
# ---------------------------------------------------------------------------------------------


def _check(inst, res):
    feasible, _, _ = ul.exact_feasibility(inst)
    if res.status == "found":
        assert feasible and bool(accepts(inst, res.lottery).all())
        assert sum(res.lottery) == 1 and min(res.lottery) >= 0
    else:
        assert res.status == "infeasible" and not feasible
        assert 1 <= len(res.certificate) <= inst.m
        assert ul.certificate_is_infeasible(inst, res.certificate)
    assert res.n_queries == res.verification_queries + res.elicitation_queries


ALGS = {
    "full": ul.full_elicitation,
    "alg2": ul.deterministic,
    "alg3": lambda o: ul.randomized(o, 0),
    "alg3_small_r": lambda o: ul.randomized(o, 1, sample_size=o.m),  # smallest allowed
    "alg3_offline_cache": lambda o: ul.randomized(o, 2, sample_size=4, verify_cached=False),
}


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.integers(2, 4), st.sampled_from([2, 3, 4, 8]), st.integers(0, 10**6))
def test_algorithms_correct_on_random_instances(n, m, K, seed):
    rng = np.random.default_rng(seed)
    U = rng.integers(0, K + 1, size=(n, m))
    T = rng.integers(1, K + 1, size=n)
    inst = Instance(U, T, K)
    for name, alg in ALGS.items():
        oracle = AcceptanceOracle(inst)
        res = alg(oracle)
        _check(inst, res)
        assert res.n_queries == oracle.n_queries, name
    o = AcceptanceOracle(inst)
    res = ul.deterministic(o)
    assert res.n_queries <= ul.thm33_envelope(n, m, K)
    if res.status == "found":
        assert res.rounds == res.n_learned + 1


@pytest.mark.parametrize("kind", ["pair", "reject_all"])
def test_planted_infeasible_certified(kind):
    inst = ul.planted_infeasible(300, 3, 16, 5, kind=kind)
    assert not ul.exact_feasibility(inst)[0] and not ul.highs_feasible(inst)
    for alg in ALGS.values():
        _check(inst, alg(AcceptanceOracle(inst)))


def test_planted_feasible_and_highs_agree():
    for s in range(5):
        inst = ul.planted_feasible(200, 3, 32, s)
        assert ul.exact_feasibility(inst)[0] and ul.highs_feasible(inst)
        for alg in ALGS.values():
            _check(inst, alg(AcceptanceOracle(inst)))


def test_nested_adversarial_quadratic_verification():
    n, b = 400, 31
    inst = ul.nested_adversarial(b, n - b, 3, 32)
    res = ul.deterministic(AcceptanceOracle(inst))
    assert res.n_learned == b and res.rounds == b + 1
    assert res.verification_queries == ul.nested_verification(n, b)
    assert res.lottery == (F(1, 32), F(31, 32), F(0))
    r3 = ul.randomized(AcceptanceOracle(inst), 0)
    assert r3.lottery == res.lottery and r3.n_queries < res.n_queries


def test_randomized_deterministic_for_seed_and_degenerate_when_n_le_r():
    inst = ul.planted_feasible(500, 3, 16, 0)
    a = ul.randomized(AcceptanceOracle(inst), 7)
    b = ul.randomized(AcceptanceOracle(inst), 7)
    assert (a.n_queries, a.rounds, a.lottery, sorted(a.learned)) == (b.n_queries, b.rounds, b.lottery,
                                                                     sorted(b.learned))
    small = ul.planted_feasible(40, 3, 16, 1)  # n = 40 <= r = 64: full elicitation + one verification
    o = AcceptanceOracle(small)
    res = ul.randomized(o, 0)
    assert res.rounds == 1 and res.n_learned == 40 and res.verification_queries == 40


def test_sampler_draws_copies_without_replacement():
    """``min(r, W)`` copies without replacement: with unit weights exactly r distinct agents, and
    with weights (3, 1) and r = 2 both agents are drawn with probability 1 - (3/4)(2/3) = 1/2
    (with replacement it would be 2 (3/4)(1/4) = 3/8)."""
    import random

    from icml26.papers.unanimous_lottery.algorithms import _sample_multiset

    rnd = random.Random(0)
    for n, r in ((100, 64), (65, 64), (10, 9)):
        assert all(len(_sample_multiset([1] * n, r, rnd)) == r for _ in range(200))
    assert _sample_multiset([1, 2, 0, 1], 10, rnd) == [0, 1, 3]   # r >= W: every agent with weight
    both = np.mean([len(_sample_multiset([3, 1], 2, rnd)) == 2 for _ in range(20_000)])
    assert both == pytest.approx(0.5, abs=0.015)
    # huge integer weights (after many doublings) are sampled exactly, without OverflowError
    huge = [2 ** 200, 1, 2 ** 199]
    draws = [_sample_multiset(huge, 2, rnd) for _ in range(2000)]
    assert all(len(d) >= 1 and set(d) <= {0, 1, 2} for d in draws)
    frac0 = np.mean([0 in d for d in draws])
    assert frac0 == pytest.approx(1 - (1 / 3) ** 2, abs=0.03)   # copies of agent 0: 2/3 of W


def test_randomized_first_round_sample_has_r_distinct_agents():
    """Algorithm 3's first round learns exactly r = 16 (m-1)^2 distinct agents when n > r
    (sampling with replacement would draw repeats: about r^2 / 2n of them)."""
    inst = ul.planted_feasible(300, 3, 16, 2)
    for seed in range(5):
        res = ul.randomized(AcceptanceOracle(inst), seed)
        assert res.trace[0]["sample"] == 64
        assert res.trace[0]["learned"] == 64


def test_randomized_refuses_too_small_sample_before_any_query():
    """``sample_size < m`` (the combinatorial dimension) cannot hold a basis or an infeasibility
    certificate, so the Las Vegas guarantee fails: refused before a single query (it used to
    spend hundreds of queries and end "unresolved")."""
    for m, r in ((4, 1), (4, 3), (3, 2), (2, 1)):
        inst = ul.planted_feasible(200, m, 16, 0)
        o = AcceptanceOracle(inst)
        with pytest.raises(ValueError, match="combinatorial dimension"):
            ul.randomized(o, 0, sample_size=r, max_rounds=80)
        assert o.n_queries == 0
        with pytest.raises(ValueError, match="combinatorial dimension"):
            ul.find_unanimous_lottery(o, "randomized", seed=0, sample_size=r)
        assert o.n_queries == 0
    # the boundary r = m is allowed and correct
    inst = ul.planted_feasible(200, 4, 16, 0)
    res = ul.randomized(AcceptanceOracle(inst), 0, sample_size=4)
    assert res.status == "found" and res.n_queries > 0


def test_randomized_no_reweight_stays_unresolved():
    inst = ul.nested_adversarial(63, 1937, 3, 64)
    res = ul.randomized(AcceptanceOracle(inst), 0, reweight=False, max_rounds=3)
    assert res.status == "unresolved" and res.lottery is None and not res.success


def test_lower_bound_families():
    # Theorem 4.1: y is the only acceptable lottery; every agent must be queried
    inst = ul.singleton_family(20, 3, 16, 0, y=(3, 5, 8))
    for alg in ALGS.values():
        o = AcceptanceOracle(inst)
        res = alg(o)
        assert res.lottery == (F(3, 16), F(5, 16), F(8, 16))
        assert o.per_agent.min() >= 1
        assert res.n_queries >= ul.thm41_lower(20, 3, 16)
    # Theorem 4.2: reject-all costs all m vertices
    fam = ul.one_agent_family(4, 16)
    o = AcceptanceOracle(fam[0])
    res = ul.deterministic(o)
    assert res.status == "infeasible" and res.certificate == [0] and o.n_queries == 1 + 4
    for j, inst in enumerate(fam[1:]):
        res = ul.deterministic(AcceptanceOracle(inst))
        assert res.lottery == tuple(F(int(k == j)) for k in range(4))


def test_order_advice_theorem_51():
    inst = ul.planted_feasible(300, 4, 32, 2)
    n, m, K = inst.n, inst.m, inst.K
    good = ul.with_order_advice(AcceptanceOracle(inst), ul.basis_first(inst))
    base = ul.deterministic(AcceptanceOracle(inst))
    assert good.n_learned <= m and good.lottery == base.lottery
    for sigma in (ul.basis_first(inst), ul.basis_at(inst, 1.0), list(range(n))[::-1]):
        res = ul.with_order_advice(AcceptanceOracle(inst), sigma)
        _check(inst, res)
        assert res.n_queries <= ul.thm51_envelope(n, m, K, res.n_learned)
    # R = 0: everyone accepts e_1 -> exactly n queries
    easy = Instance(np.full((50, 3), 16), np.full(50, 3), 16)
    res = ul.with_order_advice(AcceptanceOracle(easy), list(range(50)))
    assert res.n_learned == 0 and res.n_queries == 50


def test_lottery_advice():
    inst = ul.planted_feasible(300, 3, 32, 4)
    _, xstar, _ = ul.exact_feasibility(inst)
    res = ul.with_lottery_advice(AcceptanceOracle(inst), xstar)
    assert res.n_queries == inst.n and res.lottery == tuple(xstar)
    bad = ul.with_lottery_advice(AcceptanceOracle(inst), ul.perturbed_lottery(xstar, 0.3, 0, 32))
    _check(inst, bad)
    f = ul.find_unanimous_lottery(AcceptanceOracle(inst), lottery_advice=xstar)
    assert f.n_queries == inst.n


# ---------------------------------------------------------------------------------------------
# model hygiene and mutation controls
# ---------------------------------------------------------------------------------------------


def test_oracle_hides_the_instance():
    inst = ul.planted_feasible(50, 3, 16, 0)
    o = AcceptanceOracle(inst)
    assert not hasattr(o, "__dict__")
    public = {a for a in dir(o) if not a.startswith("_")}
    assert public <= {"n", "m", "K", "n_queries", "per_agent", "log", "query", "query_many",
                      "first_rejecter", "from_callable"}
    for v in vars(type(o)).values():
        assert not isinstance(v, np.ndarray)
    assert all(not isinstance(getattr(o, a), Instance | np.ndarray) for a in ("n", "m", "K", "log"))


@pytest.mark.parametrize("name", list(ALGS))
def test_algorithms_use_only_counted_queries(name):
    """A callable-backed oracle (no instance anywhere) gives identical results, and every bit the
    algorithm saw went through a counted query."""
    inst = ul.planted_feasible(120, 3, 16, 1)
    calls = []

    def fn(i, x):
        calls.append(i)
        return sum(int(u) * v for u, v in zip(inst.U[i], x, strict=True)) >= int(inst.T[i])

    o1 = AcceptanceOracle(inst)
    o2 = AcceptanceOracle.from_callable(fn, inst.n, inst.m, inst.K)
    r1, r2 = ALGS[name](o1), ALGS[name](o2)
    assert (r1.status, r1.lottery, r1.n_queries) == (r2.status, r2.lottery, r2.n_queries)
    assert len(calls) == o2.n_queries == r2.n_queries
    assert np.array_equal(o1.per_agent, o2.per_agent)


def _strict(inst):
    return AcceptanceOracle.from_callable(
        lambda i, x: sum(int(u) * v for u, v in zip(inst.U[i], x, strict=True)) > int(inst.T[i]),
        inst.n, inst.m, inst.K)


def test_mutation_strict_acceptance_is_caught():
    inst = ul.nested_adversarial(5, 5, 3, 8)
    strict_accepts = lambda x: all(  # noqa: E731
        sum(int(u) * v for u, v in zip(inst.U[i], x, strict=True)) > int(inst.T[i]) for i in range(inst.n))
    try:
        res = ul.deterministic(_strict(inst))
    except OracleInconsistencyError:
        return
    assert res.status != "found" or not strict_accepts(res.lottery)


def test_mutation_dropped_constraint_and_no_restart_are_caught(monkeypatch):
    # no restart: agent 0 (x1 >= 1/2) accepts e1, agent 1 (x2 >= 3/4) rejects -> infeasible
    inst = Instance(np.array([[4, 0, 0], [0, 4, 0]]), np.array([2, 3]), 4)
    ok = ul.deterministic(AcceptanceOracle(inst))
    assert ok.status == "infeasible" and sorted(ok.certificate) == [0, 1]
    bad = _deterministic(AcceptanceOracle(inst), [0, 1], "no_restart", 0, restart=False)
    assert bad.status == "found" and not accepts(inst, bad.lottery).all()
    # dropping a learned constraint in Select: agent 0 (x2 >= 3/4) is learned, then forgotten
    feas = Instance(np.array([[0, 4, 0], [4, 4, 4]]), np.array([3, 4]), 4)
    good = ul.deterministic(AcceptanceOracle(feas))
    assert good.lottery == (F(1, 4), F(3, 4), F(0))
    orig = _Learned.select

    def forget_first(self, agents, hint=()):
        agents = [a for a in agents if a != 0]
        return orig(self, agents, [h for h in hint if h != 0])

    monkeypatch.setattr(_Learned, "select", forget_first)
    res = ul.deterministic(AcceptanceOracle(feas))
    assert res.status == "found" and not accepts(feas, res.lottery).all()


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


def test_bad_lotteries():
    o = AcceptanceOracle(ul.planted_feasible(5, 3, 8, 0))
    for x in ([F(1, 2), F(1, 2), F(1, 2)], [F(3, 2), F(-1, 2), 0], [0.1, 0.2, 0.7], [float("nan"), 1, 0],
              [1, 0]):
        with pytest.raises(ValueError):
            o.query(0, x)
    with pytest.raises(TypeError):
        o.query(0, "abc")
    with pytest.raises(ValueError):
        o.query(7, [1, 0, 0])
    assert o.query(0, [0.5, 0.25, 0.25]) in (True, False)  # exact binary floats are fine
    with pytest.raises(ValueError):
        ul.with_lottery_advice(o, [F(1, 3), F(1, 3), F(1, 2)])


def test_bad_instances():
    with pytest.raises(ValueError):
        Instance(np.array([[1], [2]]), np.array([1, 1]), 4)  # m < 2
    with pytest.raises(ValueError):
        Instance(np.array([[1, 2]]), np.array([1]), 1)  # eps = 1 > 1/2
    with pytest.raises(ValueError):
        Instance(np.array([[1, 2]]), np.array([1]), 0)  # precision <= 0
    with pytest.raises(ValueError):
        Instance(np.array([[1, 9]]), np.array([1]), 4)  # utility > 1
    with pytest.raises(ValueError):
        Instance(np.array([[1, 2]]), np.array([0]), 4)  # tau = 0
    with pytest.raises(TypeError):
        Instance(np.array([[0.5, 1.0]]), np.array([1]), 4)
    with pytest.raises(ValueError):
        Instance.from_floats(np.array([[np.nan, 1.0]]), np.array([0.5]), 4)
    with pytest.raises(ValueError):
        Instance.from_floats(np.array([[0.3, 1.0]]), np.array([0.5]), 4)  # off grid
    inst = Instance.from_floats(np.array([[0.25, 1.0]]), np.array([0.5]), 4)
    assert inst.U.tolist() == [[1, 4]] and inst.T.tolist() == [2]


def test_bad_arguments_and_inconsistent_oracle():
    inst = ul.planted_feasible(20, 3, 8, 0)
    o = AcceptanceOracle(inst)
    with pytest.raises(ValueError):
        ul.deterministic(o, order=[0, 0] + list(range(2, 20)))
    with pytest.raises(ValueError):
        ul.randomized(o, 0, sample_size=0)
    with pytest.raises(ValueError):
        ul.find_unanimous_lottery(o, "magic")
    with pytest.raises(TypeError):
        ul.deterministic(inst)
    with pytest.raises(ValueError):
        ul.learn_hyperplane(o, 20)
    seen = set()

    def flaky(i, x):  # rejects the first query of each agent, accepts everything afterwards
        first = i not in seen
        seen.add(i)
        return not first

    with pytest.raises(OracleInconsistencyError):
        ul.deterministic(AcceptanceOracle.from_callable(flaky, 3, 3, 8))


def test_find_unanimous_lottery_dispatch():
    inst = ul.planted_feasible(100, 3, 16, 0)
    for method in ("deterministic", "randomized", "full"):
        res = ul.find_unanimous_lottery(AcceptanceOracle(inst), method, seed=0) if method == "randomized" \
            else ul.find_unanimous_lottery(AcceptanceOracle(inst), method)
        _check(inst, res)
    assert math.isfinite(ul.thm34_envelope(100, 3, 16)) and ul.thm34_rounds_bound(1, 3) == 1

"""Algorithms 1-3 of Choo, Goldberg & Teh (arXiv 2604.17505) and the learning-augmented variants.

Tags (kept from the brief ``shared/papers/unanimous_lottery.md``): **[P]** step or theorem form the
TeX-based audit attributes to the paper; **[R]** constant reconstructed by the public reproduction;
**[O]** ours. Every algorithm here receives only an :class:`AcceptanceOracle` (query methods,
``n``, ``m``, ``K`` and counters) and never the instance.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from .exact import lexmax_rows, minimal_infeasible_subset
from .oracle import AcceptanceOracle, Lottery, OracleInconsistencyError, as_lottery

__all__ = [
    "ACCEPT_ALL",
    "REJECT_ALL",
    "Halfspace",
    "LotteryResult",
    "learn_hyperplane",
    "full_elicitation",
    "deterministic",
    "randomized",
    "with_order_advice",
    "with_lottery_advice",
    "find_unanimous_lottery",
    "bisection_steps",
    "learning_cost",
]

ACCEPT_ALL = "ACCEPT_ALL"
REJECT_ALL = "REJECT_ALL"
Halfspace = tuple[Fraction, ...] | Literal["ACCEPT_ALL", "REJECT_ALL"]


def bisection_steps(K: int) -> int:
    """``b(K) = floor(log2(2 K^2)) + 1``: bisection steps until the width is below ``eps^2 / 2`` [R]."""
    return (2 * K * K).bit_length()


def learning_cost(m: int, K: int) -> int:
    """``E(m, K) = m + (m - 1) b(K)``: Algorithm 1's query count when all m-1 searches run [R]."""
    return m + (m - 1) * bisection_steps(K)


@dataclass
class LotteryResult:
    """Outcome of a search for a unanimously acceptable lottery (``OptimizeResult``-like).

    Attributes
    ----------
    status : {"found", "infeasible", "unresolved"}
        ``unresolved`` only when Algorithm 3 hit ``max_rounds`` (never for the default settings
        of the deterministic algorithms).
    lottery : tuple of Fraction, shape (m,), or None
        A lottery every agent accepts: unlearned agents accepted it by a real query in the last
        round; learned agents accept it because their exactly learned halfspace holds.
    certificate : list of int or None
        When infeasible: agents whose learned halfspaces are jointly infeasible on the simplex
        (minimal, at most m), or one agent that rejects every lottery.
    n_queries, verification_queries, elicitation_queries : int
        Queries counted at the oracle; elicitation = inside Algorithm 1, verification = the rest.
    learned : dict[int, Halfspace]
        Agents whose halfspace was learned (``L = len(learned)``; ``R(sigma)`` for Alg 2[sigma]).
    rounds : int
        Select/verify rounds (``L + 1`` for Algorithm 2 when feasible).
    method : str
    trace : list of dict
        Per round: queries so far, learned count, rejecters.
    """

    status: str
    lottery: tuple[Fraction, ...] | None
    certificate: list[int] | None
    n_queries: int
    verification_queries: int
    elicitation_queries: int
    learned: dict[int, Halfspace]
    rounds: int
    method: str
    trace: list[dict[str, Any]] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return self.status in ("found", "infeasible")

    @property
    def n_learned(self) -> int:
        return len(self.learned)

    def __repr__(self) -> str:
        x = None if self.lottery is None else "(" + ", ".join(str(v) for v in self.lottery) + ")"
        return (f"LotteryResult(status={self.status!r}, lottery={x}, certificate={self.certificate}, "
                f"n_queries={self.n_queries}, learned={self.n_learned}, rounds={self.rounds}, "
                f"method={self.method!r})")


# ---------------------------------------------------------------------------------------------
# Algorithm 1: LearnHyperplane
# ---------------------------------------------------------------------------------------------


def _check_oracle(oracle: Any) -> AcceptanceOracle:
    if not isinstance(oracle, AcceptanceOracle):
        raise TypeError("algorithms take an AcceptanceOracle (use AcceptanceOracle(instance) or "
                        f"AcceptanceOracle.from_callable), got {type(oracle).__name__}")
    return oracle


def _turning_point(oracle: AcceptanceOracle, i: int, src: int, dst: int) -> Fraction:
    """ExactThreshold [P structure, R width]: the alpha at which agent i starts accepting on the
    segment ``(1 - alpha) e_src + alpha e_dst`` (``e_src`` rejected, ``e_dst`` accepted).

    Bisection keeps ``lo`` rejected and ``hi`` accepted for ``b(K)`` steps (width ``< eps^2/2``),
    then returns the unique fraction with denominator ``<= K`` in ``(lo, hi]``, which is the
    closest such fraction to the midpoint (two of them are ``>= eps^2`` apart) [O].
    """
    m, K = oracle.m, oracle.K
    s = bisection_steps(K)
    lo, hi = 0, 1 << s  # in units of 2^-s
    for _ in range(s):
        mid = (lo + hi) >> 1
        p = [0] * m
        p[src] = (1 << s) - mid
        p[dst] = mid
        if oracle.query(i, Lottery(tuple(p), 1 << s)):
            hi = mid
        else:
            lo = mid
    lo_f, hi_f = Fraction(lo, 1 << s), Fraction(hi, 1 << s)
    alpha = Fraction(lo + hi, 1 << (s + 1)).limit_denominator(K)
    if not (lo_f < alpha <= hi_f):
        raise OracleInconsistencyError(
            f"agent {i}: no threshold with denominator <= K={K} in ({lo_f}, {hi_f}] on edge "
            f"{src}->{dst}; the answers are not those of a grid-exact agent (utilities/threshold "
            "off the 1/K grid, or an inconsistent oracle)")
    return alpha


def _learn(oracle: AcceptanceOracle, i: int) -> Halfspace:
    m = oracle.m
    acc = [oracle.query(i, Lottery.vertex(j, m)) for j in range(m)]
    A = [j for j in range(m) if acc[j]]
    J = [j for j in range(m) if not acc[j]]
    if not J:
        return ACCEPT_ALL
    if not A:
        return REJECT_ALL
    r = J[0]  # our tie-break (smallest index) [R]
    alpha = {j: _turning_point(oracle, i, r, j) for j in A}
    if all(a == 1 for a in alpha.values()):
        # acceptable set is the face spanned by A
        return tuple(Fraction(1) if j in A else Fraction(0) for j in range(m))
    c = [Fraction(0)] * m
    for j in A:
        c[j] = 1 / alpha[j]
    anchor = next(j for j in A if alpha[j] < 1)
    for k in J[1:]:
        beta = _turning_point(oracle, i, k, anchor)
        c[k] = (1 - beta * c[anchor]) / (1 - beta)
    return tuple(c)


def learn_hyperplane(oracle: AcceptanceOracle, agent: int) -> Halfspace:
    """Algorithm 1 (LearnHyperplane, Lemmas 3.1-3.2) [P structure, R constants].

    Learns agent ``agent``'s acceptable set exactly from membership queries: returns ``c`` with
    ``<c, x> >= 1  <=>  <u, x> >= tau`` on the simplex, or ``"ACCEPT_ALL"`` / ``"REJECT_ALL"``.

    Steps: query the m vertices; pick the first rejected vertex r; bisect the edge from e_r to each
    accepted e_j for the turning point alpha_j (``c_j = 1/alpha_j``, ``c_r = 0``); for the other
    rejected e_k bisect the edge to an anchor accepted vertex a with ``alpha_a < 1`` and set
    ``c_k = (1 - beta_k c_a) / (1 - beta_k)``. If every ``alpha_j = 1`` the acceptable set is the
    face spanned by the accepted vertices and ``c`` is its indicator. Then
    ``c_j = (u_j - u_r) / (tau - u_r)`` exactly.

    Cost: at most ``E(m, K) = m + (m - 1) b(K)`` queries, ``b(K) = floor(log2 2K^2) + 1`` [R],
    i.e. ``O(m log 1/eps)`` (Lemma 3.2).

    Raises
    ------
    OracleInconsistencyError
        When no grid-exact threshold fits the answers (unquantized data or inconsistent oracle).
    """
    oracle = _check_oracle(oracle)
    if isinstance(agent, bool) or not isinstance(agent, int | np.integer) or not 0 <= agent < oracle.n:
        raise ValueError(f"agent must be an int in [0, {oracle.n}), got {agent!r}")
    return _learn(oracle, int(agent))


# ---------------------------------------------------------------------------------------------
# shared state: learned constraints as integer rows
# ---------------------------------------------------------------------------------------------


class _Learned:
    """Learned halfspaces of agents, kept as integer rows ``a . x >= b`` for exact checks."""

    def __init__(self, oracle: AcceptanceOracle) -> None:
        self.oracle = oracle
        self.m = oracle.m
        self.halfspaces: dict[int, Halfspace] = {}
        self.row_of: dict[int, tuple[tuple[int, ...], int]] = {}

    def learn(self, i: int) -> Halfspace:
        h = _learn(self.oracle, i)
        self.halfspaces[i] = h
        if isinstance(h, tuple):
            d = math.lcm(*(f.denominator for f in h))
            self.row_of[i] = (tuple(int(f * d) for f in h), d)
        return h

    def accepts(self, i: int, lot: Lottery) -> bool:
        h = self.halfspaces[i]
        if h == ACCEPT_ALL:
            return True
        if h == REJECT_ALL:
            return False
        a, b = self.row_of[i]
        return sum(x * y for x, y in zip(a, lot.p, strict=True)) >= b * lot.D

    def arrays(self, agents: Sequence[int]) -> tuple[np.ndarray, np.ndarray, list[int]]:
        ids = [i for i in agents if i in self.row_of]
        if not ids:
            return np.zeros((0, self.m), dtype=np.int64), np.zeros(0, dtype=np.int64), []
        A = [self.row_of[i][0] for i in ids]
        b = [self.row_of[i][1] for i in ids]
        big = max(max(abs(v) for v in r) for r in A) >= 2**40 or max(b) >= 2**40
        dt = object if big else np.int64
        return np.asarray(A, dtype=dt).reshape(-1, self.m), np.asarray(b, dtype=dt), ids

    def select(self, agents: Sequence[int], hint: Sequence[int] = ()) -> tuple[Lottery | None, list[int]]:
        """Select over the learned agents in ``agents``; returns (lottery, tight/infeasible agents)."""
        A, b, ids = self.arrays(agents)
        pos = {a: k for k, a in enumerate(ids)}
        lot, ws = lexmax_rows(A, b, self.m, [pos[h] for h in hint if h in pos])
        if lot is None:
            core = minimal_infeasible_subset(A, b, self.m, ws)
            return None, [ids[k] for k in core]
        return lot, [ids[k] for k in ws]


def _result(status: str, lot: Lottery | None, cert: list[int] | None, oracle: AcceptanceOracle,
            q0: int, eli: int, learned: _Learned, rounds: int, method: str,
            trace: list[dict[str, Any]]) -> LotteryResult:
    total = oracle.n_queries - q0
    return LotteryResult(status=status, lottery=None if lot is None else lot.fractions(),
                         certificate=cert, n_queries=total, verification_queries=total - eli,
                         elicitation_queries=eli, learned=dict(learned.halfspaces), rounds=rounds,
                         method=method, trace=trace)


def _learn_counted(learned: _Learned, i: int) -> tuple[Halfspace, int]:
    q = learned.oracle.n_queries
    h = learned.learn(i)
    return h, learned.oracle.n_queries - q


# ---------------------------------------------------------------------------------------------
# Full elicitation (baseline) [O]
# ---------------------------------------------------------------------------------------------


def full_elicitation(oracle: AcceptanceOracle) -> LotteryResult:
    """Baseline [O; the abstract's reference point]: learn every agent, then Select once.

    No verification queries are needed. Cost ``<= n E(m, K)``; accept-all agents cost ``m`` each.
    Stops early at the first ``REJECT_ALL`` agent (infeasible).
    """
    oracle = _check_oracle(oracle)
    q0 = oracle.n_queries
    learned = _Learned(oracle)
    eli = 0
    for i in range(oracle.n):
        h, c = _learn_counted(learned, i)
        eli += c
        if h == REJECT_ALL:
            return _result("infeasible", None, [i], oracle, q0, eli, learned, 1, "full_elicitation", [])
    lot, ws = learned.select(range(oracle.n))
    if lot is None:
        return _result("infeasible", None, ws, oracle, q0, eli, learned, 1, "full_elicitation", [])
    return _result("found", lot, None, oracle, q0, eli, learned, 1, "full_elicitation", [])


# ---------------------------------------------------------------------------------------------
# Algorithm 2: deterministic learn / restart (Theorem 3.3), with an order (Theorem 5.1)
# ---------------------------------------------------------------------------------------------


def _check_order(order: Sequence[int] | np.ndarray | None, n: int) -> list[int]:
    if order is None:
        return list(range(n))
    arr = np.asarray(order)
    if arr.ndim != 1 or arr.size != n or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"order must be a permutation of range({n})")
    if not np.array_equal(np.sort(arr), np.arange(n)):
        raise ValueError(f"order must be a permutation of range({n})")
    return [int(v) for v in arr]


def _deterministic(oracle: AcceptanceOracle, order: list[int], method: str, q0: int,
                   restart: bool = True) -> LotteryResult:
    learned = _Learned(oracle)
    unlearned = list(order)
    eli = 0
    hint: list[int] = []
    trace: list[dict[str, Any]] = []
    rounds = 0
    start = 0
    while True:
        rounds += 1
        lot, ws = learned.select(list(learned.row_of), hint)
        if lot is None:
            return _result("infeasible", None, ws, oracle, q0, eli, learned, rounds, method, trace)
        hint = ws
        scan = unlearned if restart else unlearned[start:]
        i = oracle.first_rejecter(scan, lot)
        trace.append({"round": rounds, "queries": oracle.n_queries - q0, "rejecter": i,
                      "learned": len(learned.halfspaces)})
        if i is None:
            return _result("found", lot, None, oracle, q0, eli, learned, rounds, method, trace)
        if not restart:  # mutation control only: resume the scan after the rejecter
            start = unlearned.index(i)
        unlearned.remove(i)
        h, c = _learn_counted(learned, i)
        eli += c
        if h == REJECT_ALL:
            return _result("infeasible", None, [i], oracle, q0, eli, learned, rounds, method, trace)
        if h == ACCEPT_ALL or learned.accepts(i, lot):
            raise OracleInconsistencyError(
                f"agent {i} rejected a lottery that its learned halfspace accepts")
        hint = hint + [i]


def deterministic(oracle: AcceptanceOracle, order: Sequence[int] | None = None) -> LotteryResult:
    """Algorithm 2 (Theorem 3.3) [P]: Select, scan, learn the first rejecter, restart.

    State: learned constraints H (initially empty), unlearned agents in a fixed scan order.
    Each round: ``x = Select(H)`` (``None`` -> infeasible, certificate = a minimal infeasible set of
    learned agents); query unlearned agents in order and stop at the first rejecter; if none rejects,
    return ``x``; otherwise run Algorithm 1 on it (``REJECT_ALL`` -> infeasible) and restart.

    Guarantee: correct; ``O(n^2 + n m log 1/eps)`` queries. Exact envelope [R]: ``L + 1`` rounds,
    verification ``<= sum_{t=0..L} (n - t)``, ``q <= n(n+1)/2 + n E(m, K)``.

    Parameters
    ----------
    oracle : AcceptanceOracle
    order : permutation of range(n), optional
        Scan order sigma (default ``0..n-1``). A predicted order gives Alg 2[sigma] (Theorem 5.1).
    """
    oracle = _check_oracle(oracle)
    sigma = _check_order(order, oracle.n)
    return _deterministic(oracle, sigma, "deterministic" if order is None else "order_advice",
                          oracle.n_queries)


def with_order_advice(oracle: AcceptanceOracle, sigma: Sequence[int]) -> LotteryResult:
    """Alg 2[sigma] (Theorem 5.1) [P]: Algorithm 2 scanning agents in a predicted order.

    ``R(sigma) = len(result.learned)``. Correct for every sigma with
    ``O((n + m log 1/eps) R(sigma))`` queries (``R >= 1``), exactly ``n`` if ``R = 0``; exact
    envelope ``q <= n (R + 1) + R E(m, K)`` [R]. Good advice lists a witness (a lexmax basis, or an
    infeasible subset) first, which gives ``R <= m`` [O].
    """
    if sigma is None:
        raise ValueError("with_order_advice needs a permutation sigma")
    return deterministic(oracle, sigma)


def with_lottery_advice(oracle: AcceptanceOracle, x_hat: Sequence[object],
                        order: Sequence[int] | None = None) -> LotteryResult:
    """Lottery-advice extension [O, ours; not the paper's Theorem 5.2, whose statement we lack].

    Query all n agents at the predicted lottery ``x_hat``; if all accept, return it (n queries).
    Otherwise run Alg 2[sigma] with ``x_hat``'s rejecters first (then ``order``, default by index).
    Cost ``<= n +`` the Theorem 5.1 envelope; the worst case stays ``O(n^2 + n m log 1/eps)``.
    """
    oracle = _check_oracle(oracle)
    lot = as_lottery(x_hat, oracle.m)
    base = _check_order(order, oracle.n)
    q0 = oracle.n_queries
    ans = oracle.query_many(base, lot)
    if ans.all():
        learned = _Learned(oracle)
        return _result("found", lot, None, oracle, q0, 0, learned, 1, "lottery_advice", [])
    rej = [i for i, a in zip(base, ans, strict=True) if not a]
    acc = [i for i, a in zip(base, ans, strict=True) if a]
    return _deterministic(oracle, rej + acc, "lottery_advice", q0)


# ---------------------------------------------------------------------------------------------
# Algorithm 3: Clarkson-style reweighting (Theorem 3.4)
# ---------------------------------------------------------------------------------------------


def _sample_multiset(weights: list[int], r: int, rnd: random.Random) -> list[int]:
    """Distinct agents among ``r`` copies drawn without replacement from ``w_i`` copies of agent i.

    The total weight ``W`` may exceed any machine integer (weights double every round a sample
    misses a binding agent): below ``sys.maxsize`` the copies are drawn with ``random.sample``;
    above it by rejection of repeated positions drawn with ``randrange`` (exact for Python ints;
    with ``r <= W / 2`` fewer than two draws per copy are needed on average).
    """
    cum = list(itertools.accumulate(weights))
    W = cum[-1]
    if r >= W:
        return [i for i, w in enumerate(weights) if w > 0]
    if W <= sys.maxsize:
        picks = rnd.sample(range(W), r)
    else:  # r < W / 2 here, since r <= sys.maxsize < W
        chosen: set[int] = set()
        while len(chosen) < r:
            chosen.add(rnd.randrange(W))
        picks = list(chosen)
    return sorted({bisect.bisect_right(cum, c) for c in picks})


def randomized(oracle: AcceptanceOracle, seed: int | np.random.Generator | None = None, *,
               sample_size: int | None = None, reweight: bool = True, verify_cached: bool = True,
               max_rounds: int = 200) -> LotteryResult:
    """Algorithm 3 (Theorem 3.4) [P]: Clarkson-style sampling with weight doubling.

    Integer weights ``w_i = 1``; each round draws ``min(r, W)`` copies uniformly *without
    replacement* from the multiset with ``w_i`` copies of agent i (``r = 16 (m-1)^2`` [P]); learns
    every drawn agent not yet cached (``REJECT_ALL`` -> infeasible); ``x = Select(drawn agents)``
    (``None`` -> infeasible with that subset as certificate); queries all n agents at ``x``
    (global verification); returns ``x`` if none rejects, else doubles the rejecters' weights.

    Always correct (Las Vegas); ``E[q] = O(n m log n + min(n, m^3 log n) m log 1/eps)``.
    Our reading of the proof [R]: ``E[T] <= 1 + m ln n / (ln 2 - 1/4)``; ``L <= min(n, r T)``.

    Parameters
    ----------
    seed : int, numpy Generator or None
        Randomness for the draws; results are identical for a seed.
    sample_size : int, optional
        ``r``; default ``16 (m - 1)^2`` (paper, the value Theorem 3.4's query bound is stated
        for). Must be ``>= m``, the combinatorial dimension of the problem: a feasible lexmax is
        fixed by ``<= m - 1`` learned constraints and an infeasible set has an infeasible subset
        of ``<= m`` (Helly) [R]. Only a sample that can hold such a witness can end the run, so
        the Las Vegas guarantee (terminates with probability 1, always correct) needs ``r >= m``;
        a smaller ``r`` is refused with ``ValueError`` before any query is spent. ``m <= r <
        16 (m - 1)^2`` keeps correctness and termination but not the theorem's constant.
    reweight : bool
        ``False`` disables the doubling (negative control: violators stay unresolved).
    verify_cached : bool
        ``True`` (default, as the reproduction [R]) re-queries cached agents in verification;
        ``False`` checks them offline against their learned halfspace instead (fewer queries) [O].
    max_rounds : int
        Give up with status ``"unresolved"`` after this many rounds (our safeguard; with
        reweighting the expected round count is logarithmic).
    """
    oracle = _check_oracle(oracle)
    n, m = oracle.n, oracle.m
    r = 16 * (m - 1) ** 2 if sample_size is None else sample_size
    if isinstance(r, bool) or not isinstance(r, int | np.integer) or r < 1:
        raise ValueError(f"sample_size must be a positive int, got {sample_size!r}")
    if r < m:
        raise ValueError(
            f"sample_size={int(r)} is below m={m}, the combinatorial dimension (a lexmax basis has "
            f"<= m - 1 agents, an infeasibility certificate <= m): such a sample may never hold a "
            f"witness, so Algorithm 3's Las Vegas guarantee does not hold; use sample_size >= {m} "
            f"(the paper's value is 16 (m - 1)^2 = {16 * (m - 1) ** 2})")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ValueError(f"max_rounds must be a positive int, got {max_rounds!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    rnd = random.Random(int(rng.integers(2**62)))
    q0 = oracle.n_queries
    learned = _Learned(oracle)
    weights = [1] * n
    eli = 0
    trace: list[dict[str, Any]] = []
    method = "randomized" if reweight else "randomized_no_reweight"
    everyone = np.arange(n)
    for t in range(1, max_rounds + 1):
        S = _sample_multiset(weights, int(r), rnd)
        for i in S:
            if i not in learned.halfspaces:
                h, c = _learn_counted(learned, i)
                eli += c
                if h == REJECT_ALL:
                    return _result("infeasible", None, [i], oracle, q0, eli, learned, t, method, trace)
        lot, ws = learned.select(S)
        if lot is None:
            return _result("infeasible", None, ws, oracle, q0, eli, learned, t, method, trace)
        if verify_cached:
            ans = oracle.query_many(everyone, lot)
            rejecters = [int(i) for i in np.flatnonzero(~ans)]
            for i in rejecters:
                if i in learned.halfspaces and learned.accepts(i, lot):
                    raise OracleInconsistencyError(
                        f"agent {i} rejected a lottery that its learned halfspace accepts")
        else:
            fresh = [i for i in range(n) if i not in learned.halfspaces]
            ans = oracle.query_many(fresh, lot)
            rejecters = [i for i, a in zip(fresh, ans, strict=True) if not a]
            rejecters += [i for i in learned.halfspaces if not learned.accepts(i, lot)]
        trace.append({"round": t, "queries": oracle.n_queries - q0, "sample": len(S),
                      "rejecters": len(rejecters), "learned": len(learned.halfspaces)})
        if not rejecters:
            return _result("found", lot, None, oracle, q0, eli, learned, t, method, trace)
        if reweight:
            for i in rejecters:
                weights[i] *= 2
    return _result("unresolved", None, None, oracle, q0, eli, learned, max_rounds, method, trace)


# ---------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------


def find_unanimous_lottery(oracle: AcceptanceOracle, method: str = "deterministic", *,
                           order: Sequence[int] | None = None,
                           lottery_advice: Sequence[object] | None = None,
                           seed: int | np.random.Generator | None = None,
                           **options: Any) -> LotteryResult:
    """Find a lottery every stakeholder accepts, or certify that none exists, from accept/reject queries.

    Choo, Goldberg & Teh, *Learning Unanimously Acceptable Lotteries via Queries*, arXiv 2604.17505.

    Parameters
    ----------
    oracle : AcceptanceOracle
        ``AcceptanceOracle(instance)`` for simulations or ``AcceptanceOracle.from_callable(fn, n, m, K)``
        for real answers.
    method : {"deterministic", "randomized", "full"}
        Algorithm 2 (best when few agents bind), Algorithm 3 (robust to adversarial orders; needs
        ``n >> 16 (m-1)^2`` to pay off) or full elicitation.
    order : permutation, optional
        Predicted order (agents likely to bind first) for the deterministic method (Theorem 5.1).
    lottery_advice : sequence, optional
        A promising lottery, tried first (our extension; deterministic method only).
    seed : for ``method="randomized"``.
    **options : passed to :func:`randomized` (``sample_size``, ``verify_cached``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from icml26.papers.unanimous_lottery import Instance, AcceptanceOracle, find_unanimous_lottery
    >>> inst = Instance(U=np.array([[4, 0], [0, 4]]), T=np.array([1, 2]), K=4)
    >>> res = find_unanimous_lottery(AcceptanceOracle(inst))
    >>> res.status, [str(v) for v in res.lottery]
    ('found', ['1/2', '1/2'])
    """
    if method == "deterministic":
        if options:
            raise TypeError(f"unexpected options for the deterministic method: {sorted(options)}")
        if lottery_advice is not None:
            return with_lottery_advice(oracle, lottery_advice, order)
        return deterministic(oracle, order)
    if order is not None or lottery_advice is not None:
        raise ValueError("order / lottery advice apply to method='deterministic' only")
    if method == "randomized":
        return randomized(oracle, seed, **options)
    if method == "full":
        if options:
            raise TypeError(f"unexpected options for full elicitation: {sorted(options)}")
        return full_elicitation(oracle)
    raise ValueError(f"method must be 'deterministic', 'randomized' or 'full', got {method!r}")

"""Instance families, order/lottery advice, offline exact checks and the theorem bounds.

Generators are ours [O] (the paper is theory-only; brief Section 5), except the lower-bound
families, which follow the constructions of Theorems 4.1 and 4.2 [P]. Everything here may look at
the ground truth: it is for building instances and for evaluation, never used by the algorithms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog

from .algorithms import ACCEPT_ALL, REJECT_ALL, Halfspace, bisection_steps, learning_cost
from .exact import lexmax_rows, minimal_infeasible_subset
from .oracle import Instance, Lottery, as_lottery

__all__ = [
    "planted_feasible", "planted_infeasible", "nested_adversarial", "singleton_family",
    "one_agent_family", "true_halfspace", "exact_feasibility", "highs_feasible",
    "certificate_is_infeasible", "basis_first", "basis_at", "perturbed_lottery",
    "thm33_envelope", "thm34_rounds_bound", "thm34_envelope", "thm41_lower", "thm51_envelope",
    "nested_verification", "bisection_steps", "learning_cost",
]


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def _check_nmk(n: int, m: int, K: int) -> None:
    if n < 1 or m < 2 or K < 2:
        raise ValueError(f"need n >= 1, m >= 2, K >= 2; got n={n}, m={m}, K={K}")


# ---------------------------------------------------------------------------------------------
# generators
# ---------------------------------------------------------------------------------------------


def _grid_lottery(m: int, D: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    y = rng.dirichlet(np.full(m, alpha))
    p = np.floor(y * D).astype(np.int64)
    rest = D - int(p.sum())
    order = np.argsort(-(y * D - p), kind="stable")
    p[order[:rest]] += 1
    return p


def planted_feasible(n: int, m: int, K: int, rng: np.random.Generator | int | None = None, *,
                     n_tight: int = 3, slack: tuple[int, int] | None = None,
                     alpha: float = 0.7) -> Instance:
    """Planted feasible instance [O] (brief Section 3 recipe).

    A planted lottery ``y ~ Dirichlet(alpha)`` rounded to the ``1/(4K)`` grid; utilities uniform on
    the grid; ``n_tight`` agents get the largest grid threshold ``y`` satisfies (zero slack), the
    others ``slack`` grid steps less (uniform in ``slack``, default ``(1, K // 4)``); agents are
    shuffled. ``y`` is accepted by all, so the instance is feasible.
    """
    _check_nmk(n, m, K)
    rng = _rng(rng)
    lo, hi = slack if slack is not None else (1, max(1, K // 4))
    D = 4 * K
    y = _grid_lottery(m, D, alpha, rng)
    s = rng.integers(lo, hi + 1, size=n)
    s[: min(n_tight, n)] = 0
    U = rng.integers(0, K + 1, size=(n, m))
    for _ in range(1000):
        T = (U @ y) // D - s  # floor(K <u, y>) - slack, in grid units
        bad = T < 1
        if not bad.any():
            break
        U[bad] = rng.integers(0, K + 1, size=(int(bad.sum()), m))
    else:  # pragma: no cover - only for absurd slack ranges
        raise ValueError("could not plant thresholds >= 1/K; reduce the slack")
    perm = rng.permutation(n)
    return Instance(U[perm], T[perm], K)


def planted_infeasible(n: int, m: int, K: int, rng: np.random.Generator | int | None = None, *,
                       kind: str = "pair") -> Instance:
    """A planted feasible instance with hidden contradictory agents at random positions [O].

    ``kind="pair"``: an agent with ``x_j >= a/K`` and one with ``x_j <= 1 - b/K`` (``a + b > K``,
    j != first coordinate), e.g. ``x_2 >= 38/64`` and ``x_2 <= 24/64`` for K = 64.
    ``kind="reject_all"``: one agent with ``u = 0, tau = eps``.
    """
    _check_nmk(n, m, K)
    rng = _rng(rng)
    extra = 2 if kind == "pair" else 1
    if kind not in ("pair", "reject_all"):
        raise ValueError("kind must be 'pair' or 'reject_all'")
    if n <= extra:
        raise ValueError(f"need n > {extra} for kind={kind!r}")
    base = planted_feasible(n - extra, m, K, rng)
    U, T = base.U.copy(), base.T.copy()
    if kind == "pair":
        j = int(rng.integers(1, m))
        a = math.ceil(0.6 * K)
        b = K - a + max(1, math.ceil(0.2 * K))
        u1 = np.zeros(m, dtype=np.int64)
        u1[j] = K
        u2 = np.full(m, K, dtype=np.int64)
        u2[j] = 0
        newU, newT = [u1, u2], [a, min(b, K)]
    else:
        newU, newT = [np.zeros(m, dtype=np.int64)], [1]
    for u, t in zip(newU, newT, strict=True):
        pos = int(rng.integers(0, U.shape[0] + 1))
        U = np.insert(U, pos, u, axis=0)
        T = np.insert(T, pos, t)
    return Instance(U, T, K)


def nested_adversarial(n_nested: int, n_dummy: int, m: int, K: int, *,
                       dummy: str = "accept_all", coordinate: int = 1) -> Instance:
    """Adversarial order for Algorithm 2 [O] (brief Section 3).

    ``n_dummy`` dummies first (``accept_all``: ``u = 1, tau = 1``; ``generic``: ``u = (1,1,0,..)``,
    ``tau = 1/2``), then ``n_nested`` agents with ``u = e_coordinate`` and increasing thresholds
    ``1/K, 2/K, ...``. Alg 2 learns every nested agent and its verification is quadratic:
    exactly ``b (n - b + 1) + (n - b)`` with ``b = n_nested``.
    """
    _check_nmk(n_nested + n_dummy, m, K)
    if not 1 <= n_nested < K:
        raise ValueError(f"need 1 <= n_nested < K, got {n_nested}")
    if not 1 <= coordinate < m:
        raise ValueError("coordinate must be in [1, m): the nested constraints must not be on x_1")
    if dummy == "accept_all":
        du, dt = np.full(m, K), K
    elif dummy == "generic":
        du = np.zeros(m, dtype=np.int64)
        du[:2] = K
        dt = K // 2
    else:
        raise ValueError("dummy must be 'accept_all' or 'generic'")
    U = np.zeros((n_dummy + n_nested, m), dtype=np.int64)
    T = np.zeros(n_dummy + n_nested, dtype=np.int64)
    U[:n_dummy] = du
    T[:n_dummy] = dt
    U[n_dummy:, coordinate] = K
    T[n_dummy:] = np.arange(1, n_nested + 1)
    return Instance(U, T, K)


def singleton_family(n: int, m: int, K: int, rng: np.random.Generator | int | None = None, *,
                     y: Sequence[int] | None = None, shuffle: bool = True) -> Instance:
    """One instance of the Theorem 4.1 family [P].

    ``p = min(n, m)``; a grid lottery ``y`` with ``p`` positive coordinates (``y`` in grid units,
    summing to K; uniform over the ``C(K-1, p-1)`` choices unless given); agent ``k < p`` has
    ``u = e_k, tau = y_k``, so ``y`` is the only acceptable lottery; the other ``n - p`` agents
    accept everything (``u = 1, tau = 1``). Agents are shuffled unless ``shuffle=False``.
    """
    _check_nmk(n, m, K)
    rng = _rng(rng)
    p = min(n, m)
    if y is None:
        if K < p:
            raise ValueError("need K >= min(n, m) for a lottery with min(n, m) positive grid coordinates")
        cuts = np.sort(rng.choice(np.arange(1, K), size=p - 1, replace=False))
        yy = np.diff(np.concatenate([[0], cuts, [K]]))
    else:
        yy = np.asarray(y, dtype=np.int64)
        if yy.shape != (p,) or yy.min() < 1 or yy.sum() != K:
            raise ValueError(f"y must have {p} positive grid entries summing to K")
    U = np.full((n, m), K, dtype=np.int64)
    T = np.full(n, K, dtype=np.int64)
    for k in range(p):
        U[k] = 0
        U[k, k] = K
        T[k] = yy[k]
    perm = rng.permutation(n) if shuffle else np.arange(n)
    return Instance(U[perm], T[perm], K)


def one_agent_family(m: int, K: int) -> list[Instance]:
    """The Theorem 4.2 family [P] (n = 1): reject-all, and for each j the agent accepting only e_j."""
    _check_nmk(1, m, K)
    out = [Instance(np.zeros((1, m), dtype=np.int64), np.array([1]), K)]
    for j in range(m):
        u = np.zeros((1, m), dtype=np.int64)
        u[0, j] = K
        out.append(Instance(u, np.array([K]), K))
    return out


# ---------------------------------------------------------------------------------------------
# offline exact checks (evaluation only)
# ---------------------------------------------------------------------------------------------


def true_halfspace(instance: Instance, i: int) -> Halfspace:
    """The halfspace Algorithm 1 must return for agent i, from the ground truth [P formula].

    ``c_j = (u_j - u_r) / (tau - u_r)`` with r the first rejected vertex; the face indicator when
    every accepted vertex has ``u_j = tau``; ``ACCEPT_ALL`` / ``REJECT_ALL`` sentinels.
    """
    u, t = instance.U[i], int(instance.T[i])
    J = [j for j in range(instance.m) if u[j] < t]
    A = [j for j in range(instance.m) if u[j] >= t]
    if not J:
        return ACCEPT_ALL
    if not A:
        return REJECT_ALL
    if all(u[j] == t for j in A):
        return tuple(Fraction(1) if j in A else Fraction(0) for j in range(instance.m))
    r = J[0]
    return tuple(Fraction(int(u[j]) - int(u[r]), t - int(u[r])) for j in range(instance.m))


def exact_feasibility(instance: Instance) -> tuple[bool, tuple[Fraction, ...] | None, list[int]]:
    """Offline exact decision on the true constraints: ``(feasible, lexmax, certificate)``.

    ``lexmax`` is the lexicographically maximal acceptable lottery (what Algorithms 2/3 return) and
    ``certificate`` a minimal infeasible agent set (empty when feasible). Exact rational LP.
    """
    lot, ws = lexmax_rows(instance.U, instance.T, instance.m)
    if lot is None:
        return False, None, minimal_infeasible_subset(instance.U, instance.T, instance.m, ws)
    return True, lot.fractions(), []


def highs_feasible(instance: Instance, agents: Sequence[int] | None = None) -> bool:
    """Float cross-check with scipy's HiGHS: is ``{x in Delta_m : U x >= T}`` non-empty?"""
    idx = np.arange(instance.n) if agents is None else np.asarray(agents, dtype=np.int64)
    m = instance.m
    res = linprog(np.zeros(m), A_ub=-instance.U[idx].astype(float), b_ub=-instance.T[idx].astype(float),
                  A_eq=np.ones((1, m)), b_eq=[1.0], bounds=[(0, None)] * m, method="highs")
    if res.status not in (0, 2):  # pragma: no cover
        raise RuntimeError(f"HiGHS failed: {res.message}")
    return res.status == 0


def certificate_is_infeasible(instance: Instance, agents: Sequence[int]) -> bool:
    """Re-check a certificate offline against the *true* constraints (exact LP)."""
    agents = list(agents)
    if not agents:
        return False
    lot, _ = lexmax_rows(instance.U[agents], instance.T[agents], instance.m)
    return lot is None


# ---------------------------------------------------------------------------------------------
# advice [O]
# ---------------------------------------------------------------------------------------------


def _witness(instance: Instance) -> list[int]:
    """A witness B: a lexmax basis (shrunk by deletion) or a minimal infeasible subset."""
    feasible, x, cert = exact_feasibility(instance)
    if not feasible:
        return cert
    target = as_lottery(x)
    lot, tight = lexmax_rows(instance.U, instance.T, instance.m)
    # candidates: the agents tight at the lexmax; shrink while the lexmax stays the same
    slack = instance.U.astype(object).dot(np.asarray(target.p, dtype=object)) - instance.T.astype(object) * target.D
    B = [int(i) for i in np.flatnonzero(slack == 0)]
    for i in list(B):
        trial = [j for j in B if j != i]
        got, _ = lexmax_rows(instance.U[trial], instance.T[trial], instance.m)
        if got is not None and got == target:
            B = trial
    return B


def basis_first(instance: Instance) -> list[int]:
    """Order advice [O]: an offline witness first (computed from the truth), then the rest by index.

    Theorem 5.1 with this sigma learns only witness members, so ``R <= |B| <= m``.
    """
    B = _witness(instance)
    rest = [i for i in range(instance.n) if i not in set(B)]
    return B + rest


def basis_at(instance: Instance, f: float, base_order: Sequence[int] | None = None) -> list[int]:
    """Order advice of degraded quality [O]: the witness inserted after a fraction f of the others."""
    if not 0 <= f <= 1:
        raise ValueError("f must be in [0, 1]")
    B = _witness(instance)
    sB = set(B)
    rest = [i for i in (range(instance.n) if base_order is None else base_order) if i not in sB]
    cut = int(round(f * len(rest)))
    return rest[:cut] + B + rest[cut:]


def perturbed_lottery(x: Sequence[Fraction], eta: float, rng: np.random.Generator | int | None,
                      K: int) -> tuple[Fraction, ...]:
    """Lottery advice of quality eta [O]: ``x`` plus uniform noise of size eta, projected back onto
    the simplex and rounded to the ``1/(4K)`` grid (eta = 0 returns ``x`` itself)."""
    if eta < 0:
        raise ValueError("eta must be >= 0")
    if eta == 0:
        return tuple(x)
    rng = _rng(rng)
    y = np.array([float(v) for v in x]) + rng.uniform(-eta, eta, size=len(x))
    y = np.clip(y, 0, None)
    y = y / y.sum() if y.sum() > 0 else np.full(len(x), 1 / len(x))
    p = np.floor(y * 4 * K).astype(np.int64)
    p[int(np.argmax(y * 4 * K - p))] += 4 * K - int(p.sum())
    return Lottery(tuple(int(v) for v in p), 4 * K).fractions()


# ---------------------------------------------------------------------------------------------
# theorem bounds (exact envelopes are the reproduction's [R]; O(.) forms are the paper's [P])
# ---------------------------------------------------------------------------------------------


def thm33_envelope(n: int, m: int, K: int) -> int:
    """Theorem 3.3 envelope [R]: ``n (n + 1) / 2 + n E(m, K)``."""
    return n * (n + 1) // 2 + n * learning_cost(m, K)


def thm34_rounds_bound(n: int, m: int) -> float:
    """Expected-rounds bound of our reading of Theorem 3.4 [R]: ``1 + m ln n / (ln 2 - 1/4)``."""
    return 1 + m * math.log(max(n, 1)) / (math.log(2) - 0.25)


def thm34_envelope(n: int, m: int, K: int) -> float:
    """Expected-query envelope [R]: ``n E_T + min(n, r E_T) E(m, K)``, ``E_T`` the rounds bound."""
    ET = thm34_rounds_bound(n, m)
    r = 16 * (m - 1) ** 2
    return n * ET + min(n, r * ET) * learning_cost(m, K)


def thm41_lower(n: int, m: int, K: int) -> float:
    """Theorem 4.1 lower bound (constants from the family) [P]: ``(n - p) + log2 C(K-1, p-1)``."""
    p = min(n, m)
    return (n - p) + math.log2(math.comb(K - 1, p - 1))


def thm51_envelope(n: int, m: int, K: int, R: int) -> int:
    """Theorem 5.1 envelope [R]: ``n (R + 1) + R E(m, K)`` (exactly ``n`` when ``R = 0``)."""
    return n * (R + 1) + R * learning_cost(m, K)


def nested_verification(n: int, b: int) -> int:
    """Alg 2's exact verification count on :func:`nested_adversarial` [R]: ``b (n-b+1) + (n-b)``."""
    return b * (n - b + 1) + (n - b)

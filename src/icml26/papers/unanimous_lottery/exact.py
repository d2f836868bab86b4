"""Exact Select: the lexicographically maximal lottery under learned halfspaces (paper Section 3).

``Select(H)`` [P] is the lexicographically maximal lottery (maximise ``x_1``, then ``x_2``, ...)
that satisfies every constraint in ``H``, or ``None`` when ``H`` is infeasible; ``Select({}) = e_1``.
Lexmax makes Select a single-valued function of the constraint set (needed by the LP-type analysis
of Algorithm 3). Select must be exact because learned agents are never re-queried.

Implementation [O, ours]: constraints are integer rows ``a . x >= b`` (a learned halfspace
``c . x >= 1`` times the common denominator of ``c``). A cutting-plane loop solves the exact
lexicographic LP on a small working set with a rational two-phase simplex (Bland's rule, so it
terminates), checks the answer exactly against *all* rows in integer arithmetic, adds the most
violated rows and repeats. No floating point decides anything. An infeasible working set is shrunk
by deletion to a minimal infeasible subset (at most ``m`` rows by Helly's theorem [R]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from .oracle import Lottery, _dot_ge

__all__ = ["select_lexmax", "lexmax_rows", "minimal_infeasible_subset", "rows_from_halfspaces"]


def _simplex_lexmax(rows: Sequence[tuple[Sequence[int], int]], m: int,
                    feasibility_only: bool = False) -> tuple[Fraction, ...] | None:
    """Exact lexmax of ``{x >= 0, sum x = 1, a_i . x >= b_i}`` by a lexicographic simplex.

    Two phases with one artificial per row; Bland's rule in both. Phase 2 maximises ``x_1``, then
    restricts to its optimal face by freezing the non-basic columns with negative reduced cost, then
    maximises ``x_2``, and so on. Returns ``None`` when infeasible (or a truthy empty tuple when
    ``feasibility_only`` and feasible).
    """
    k = len(rows)
    nv = m + k  # x then surplus
    ncol = nv + k + 1  # + artificials
    tab: list[list[Fraction]] = []
    rhs: list[Fraction] = []
    first = [Fraction(1)] * m + [Fraction(0)] * (ncol - m)
    first[nv] = Fraction(1)
    tab.append(first)
    rhs.append(Fraction(1))
    for i, (a, b) in enumerate(rows):
        row = [Fraction(int(v)) for v in a] + [Fraction(0)] * (ncol - m)
        row[m + i] = Fraction(-1)
        bb = Fraction(int(b))
        if bb < 0:
            row = [-v for v in row]
            bb = -bb
        row[nv + 1 + i] = Fraction(1)
        tab.append(row)
        rhs.append(bb)
    basis = [nv + i for i in range(k + 1)]
    nrow = k + 1

    def pivot(r: int, c: int) -> None:
        pr = tab[r]
        piv = pr[c]
        if piv != 1:
            inv = 1 / piv
            tab[r] = pr = [v * inv for v in pr]
            rhs[r] = rhs[r] * inv
        for i in range(nrow):
            if i != r:
                f = tab[i][c]
                if f:
                    ri = tab[i]
                    tab[i] = [vi - f * vp if vp else vi for vi, vp in zip(ri, pr, strict=True)]
                    rhs[i] = rhs[i] - f * rhs[r]
        basis[r] = c

    def optimise(cost: dict[int, Fraction], allowed: list[bool]) -> list[Fraction]:
        while True:
            cb = [cost.get(basis[i], 0) for i in range(nrow)]
            red = [Fraction(0)] * ncol
            enter = -1
            for j in range(ncol):
                if not allowed[j]:
                    continue
                rj = cost.get(j, 0) - sum(cb[i] * tab[i][j] for i in range(nrow) if cb[i] and tab[i][j])
                red[j] = rj
                if rj > 0 and enter < 0:
                    enter = j
            if enter < 0:
                return red
            best = None
            for i in range(nrow):
                t = tab[i][enter]
                if t > 0:
                    ratio = rhs[i] / t
                    if best is None or ratio < best[0] or (ratio == best[0] and basis[i] < basis[best[1]]):
                        best = (ratio, i)
            if best is None:  # unbounded: impossible on the simplex
                raise RuntimeError("lexmax LP unbounded (bug)")
            pivot(best[1], enter)

    allowed = [True] * ncol
    optimise({nv + i: Fraction(-1) for i in range(k + 1)}, allowed)
    if sum(rhs[i] for i in range(nrow) if basis[i] >= nv) > 0:
        return None
    if feasibility_only:
        return (Fraction(1),)
    # drive remaining (zero-level) artificials out of the basis, drop redundant rows
    i = 0
    while i < nrow:
        if basis[i] >= nv:
            col = next((j for j in range(nv) if tab[i][j] != 0), -1)
            if col >= 0:
                pivot(i, col)
            else:
                del tab[i], rhs[i], basis[i]
                nrow -= 1
                continue
        i += 1
    for j in range(nv, ncol):
        allowed[j] = False
    basic = set(basis)
    for t in range(m):
        red = optimise({t: Fraction(1)}, allowed)
        basic = set(basis)
        for j in range(nv):
            if allowed[j] and j not in basic and red[j] < 0:
                allowed[j] = False
    x = [Fraction(0)] * m
    for i in range(nrow):
        if basis[i] < m:
            x[basis[i]] = rhs[i]
    return tuple(x)


def rows_from_halfspaces(halfspaces: Sequence[Sequence[Fraction]], m: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer rows ``(A, b)`` with ``A x >= b`` equivalent to ``c . x >= 1`` for each ``c``."""
    A, b = [], []
    for c in halfspaces:
        if len(c) != m:
            raise ValueError(f"halfspace has {len(c)} coefficients, expected m={m}")
        fr = [Fraction(v) for v in c]
        d = math.lcm(*(f.denominator for f in fr))
        A.append([int(f * d) for f in fr])
        b.append(d)
    if not A:
        return np.zeros((0, m), dtype=np.int64), np.zeros(0, dtype=np.int64)
    big = max(max(abs(v) for v in row) for row in A) >= 2**40 or max(b) >= 2**40
    dt = object if big else np.int64
    return np.asarray(A, dtype=dt).reshape(-1, m), np.asarray(b, dtype=dt)


def lexmax_rows(A: np.ndarray, b: np.ndarray, m: int, start: Sequence[int] = (),
                ) -> tuple[Lottery | None, list[int]]:
    """Exact lexmax over ``{A x >= b} cap Delta_m`` by cutting planes on exact small LPs.

    Parameters
    ----------
    A : ndarray of int, shape (L, m)
    b : ndarray of int, shape (L,)
    start : row indices to put in the initial working set (a warm start, e.g. the last basis).

    Returns
    -------
    (lottery, working_set)
        ``lottery`` is ``None`` when infeasible; then ``working_set`` is an infeasible subset of
        rows. When feasible, ``working_set`` is the set of working rows tight at the lottery.
    """
    L = A.shape[0]
    S = sorted(set(int(i) for i in start if 0 <= int(i) < L))
    if L == 0:
        return Lottery.vertex(0, m), []
    norms = np.sqrt(np.asarray([float(sum(float(v) ** 2 for v in row)) for row in A])) + 1e-300
    while True:
        sol = _simplex_lexmax([(A[i], b[i]) for i in S], m)
        if sol is None:
            return None, S
        lot = Lottery.from_fractions(sol)
        ok = _dot_ge(A, b, lot)
        if ok.all():
            p, D = lot
            tight = [i for i in S if sum(int(A[i, j]) * p[j] for j in range(m)) == int(b[i]) * D]
            return lot, tight
        bad = np.flatnonzero(~ok)
        p = np.asarray(lot.p, dtype=float) / lot.D
        viol = (b[bad].astype(float) - A[bad].astype(float) @ p) / norms[bad]
        add = bad[np.argsort(-viol, kind="stable")[:m]]
        S = sorted(set(S) | {int(i) for i in add})


def minimal_infeasible_subset(A: np.ndarray, b: np.ndarray, m: int, rows: Sequence[int]) -> list[int]:
    """Shrink an infeasible row set by deletion to a minimal infeasible subset (<= m rows, Helly)."""
    keep = list(rows)
    if _simplex_lexmax([(A[i], b[i]) for i in keep], m, feasibility_only=True) is not None:
        raise ValueError("the given rows are feasible; no infeasibility certificate")
    for i in list(keep):
        trial = [j for j in keep if j != i]
        if _simplex_lexmax([(A[j], b[j]) for j in trial], m, feasibility_only=True) is None:
            keep = trial
    return keep


def select_lexmax(halfspaces: Sequence[Sequence[Fraction]], m: int) -> tuple[Fraction, ...] | None:
    """Select(H) [P]: the exact lexicographically maximal lottery with ``c . x >= 1`` for all ``c``.

    Parameters
    ----------
    halfspaces : sequence of sequences of Fraction, each of length m
        Learned halfspaces ``c`` (Algorithm 1's output), meaning ``c . x >= 1``.
    m : int
        Number of alternatives (>= 2).

    Returns
    -------
    tuple of Fraction, shape (m,), or None
        ``None`` when no lottery satisfies all constraints. ``select_lexmax([], m) == e_1``.
    """
    if isinstance(m, bool) or not isinstance(m, int) or m < 2:
        raise ValueError(f"m must be an int >= 2, got {m!r}")
    A, b = rows_from_halfspaces(halfspaces, m)
    lot, _ = lexmax_rows(A, b, m)
    return None if lot is None else lot.fractions()

"""Ground-truth instances and the accept/reject membership oracle (arXiv 2604.17505, Section 2).

Model [P] (paper Section 2, as quoted by the TeX-based audit in the brief): ``n`` stakeholders
("agents"), ``m >= 2`` alternatives, a lottery ``x`` in the simplex ``Delta_m``. Agent ``i`` has
utilities ``u_i in {0, eps, ..., 1}^m`` and a threshold ``tau_i in {eps, ..., 1}`` with
``K = 1/eps`` an integer, and accepts ``x`` iff ``<u_i, x> >= tau_i`` (equality accepts). A
membership query picks one agent and one lottery and returns one bit; the cost of an algorithm is
the number of queries. Offline computation (LPs) is free.

We store everything as integers on the ``1/K`` grid, ``U = K u`` and ``T = K tau``, and lotteries
as exact rationals ``x = p / D`` (integer numerators ``p``, common denominator ``D``), so that the
acceptance test ``U_i . p >= T_i D`` is exact integer arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational
from typing import NamedTuple

import numpy as np

__all__ = [
    "Instance",
    "Lottery",
    "AcceptanceOracle",
    "OracleInconsistencyError",
    "as_lottery",
    "accepts",
]

_INT64_SAFE = 2**62


class OracleInconsistencyError(ValueError):
    """The oracle's answers are not those of any agent of the model (grid-exact halfspace)."""


class Lottery(NamedTuple):
    """An exact lottery ``x = p / D`` with integers ``p_j >= 0`` and ``sum(p) == D > 0``."""

    p: tuple[int, ...]
    D: int

    def fractions(self) -> tuple[Fraction, ...]:
        return tuple(Fraction(v, self.D) for v in self.p)

    @property
    def m(self) -> int:
        return len(self.p)

    @classmethod
    def vertex(cls, j: int, m: int) -> Lottery:
        return cls(tuple(1 if k == j else 0 for k in range(m)), 1)

    @classmethod
    def from_fractions(cls, x: Sequence[Fraction]) -> Lottery:
        D = math.lcm(*(f.denominator for f in x))
        p = tuple(int(f.numerator * (D // f.denominator)) for f in x)
        g = math.gcd(D, *p)
        return cls(tuple(v // g for v in p), D // g)


def _exact(v: object) -> Fraction:
    if isinstance(v, bool):
        raise TypeError("a lottery coordinate must be a number, got a bool")
    if isinstance(v, Rational):
        return Fraction(v)
    if isinstance(v, float | np.floating):
        if not math.isfinite(float(v)):
            raise ValueError(f"lottery coordinate {v!r} is not finite")
        return Fraction(float(v))
    if isinstance(v, np.integer):
        return Fraction(int(v))
    raise TypeError(f"a lottery coordinate must be an int, Fraction or float, got {type(v).__name__}")


def as_lottery(x: Lottery | Sequence[object], m: int | None = None) -> Lottery:
    """Validate and convert ``x`` to an exact :class:`Lottery`.

    Parameters
    ----------
    x : Lottery or sequence of int / Fraction / float, shape (m,)
        Floats are taken at their exact binary value, so ``[0.1, 0.2, 0.7]`` is *off* the simplex
        (its exact sum is not 1): pass :class:`fractions.Fraction` for exact lotteries.
    m : int, optional
        Expected number of alternatives.

    Raises
    ------
    ValueError
        If ``x`` has a negative or non-finite coordinate, does not sum to exactly 1, or has the
        wrong length.
    """
    if isinstance(x, Lottery):
        p, D = x
        if D <= 0 or any(v < 0 for v in p) or sum(p) != D:
            raise ValueError(f"Lottery {x!r} is off the simplex")
        lot = x
    else:
        if isinstance(x, str | bytes) or not isinstance(x, Sequence | np.ndarray):
            raise TypeError(f"a lottery must be a sequence of numbers, got {type(x).__name__}")
        fr = [_exact(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
        if any(f < 0 for f in fr):
            raise ValueError(f"lottery has a negative coordinate: {[str(f) for f in fr]}")
        if sum(fr) != 1:
            raise ValueError(
                f"lottery is off the simplex: its exact sum is {float(sum(fr))!r}, not 1 "
                "(use fractions.Fraction for exact lotteries)")
        lot = Lottery.from_fractions(fr)
    if m is not None and len(lot.p) != m:
        raise ValueError(f"lottery has {len(lot.p)} coordinates, expected m={m}")
    if len(lot.p) < 2:
        raise ValueError("a lottery needs m >= 2 alternatives")
    return lot


def _dot_ge(A: np.ndarray, b: np.ndarray, lot: Lottery) -> np.ndarray:
    """Exact ``A @ p >= b * D`` for integer ``A`` (k, m), ``b`` (k,)."""
    p, D = lot
    bound = (int(np.abs(A).max(initial=0)) * len(p) + int(np.abs(b).max(initial=0)) + 1) * D
    if bound < _INT64_SAFE and A.dtype != object:
        return A.astype(np.int64) @ np.asarray(p, dtype=np.int64) >= b.astype(np.int64) * D
    Ao = A.astype(object)
    return Ao.dot(np.asarray(p, dtype=object)) >= b.astype(object) * D


@dataclass(frozen=True)
class Instance:
    """Ground truth of a problem: integer utilities and thresholds on the ``1/K`` grid.

    Parameters
    ----------
    U : ndarray of int, shape (n, m)
        ``U[i, j] = K u_ij`` in ``{0, ..., K}``.
    T : ndarray of int, shape (n,)
        ``T[i] = K tau_i`` in ``{1, ..., K}``.
    K : int
        ``1 / eps`` with precision ``eps in (0, 1/2]`` (paper Section 2), so ``K >= 2``.
    """

    U: np.ndarray
    T: np.ndarray
    K: int

    def __post_init__(self) -> None:
        if isinstance(self.K, bool) or not isinstance(self.K, int | np.integer):
            raise TypeError(f"K must be an int (1/precision), got {type(self.K).__name__}")
        if self.K < 2:
            raise ValueError(f"K = 1/eps must be >= 2 (eps in (0, 1/2]), got {self.K}")
        U = np.asarray(self.U)
        T = np.asarray(self.T)
        for name, arr in (("U", U), ("T", T)):
            if arr.dtype == object or not np.issubdtype(arr.dtype, np.integer):
                raise TypeError(f"{name} must hold integers on the 1/K grid, got dtype {arr.dtype}; "
                                "use Instance.from_floats for utilities in [0, 1]")
        if U.ndim != 2 or T.ndim != 1 or U.shape[0] != T.shape[0] or U.shape[0] < 1:
            raise ValueError(f"need U of shape (n, m) and T of shape (n,), got {U.shape}, {T.shape}")
        if U.shape[1] < 2:
            raise ValueError(f"need m >= 2 alternatives, got m={U.shape[1]}")
        if U.min() < 0 or U.max() > self.K:
            raise ValueError("utilities U must lie in {0, ..., K}")
        if T.min() < 1 or T.max() > self.K:
            raise ValueError("thresholds T must lie in {1, ..., K} (tau in (0, 1])")
        U = U.astype(np.int64)
        T = T.astype(np.int64)
        U.setflags(write=False)
        T.setflags(write=False)
        object.__setattr__(self, "U", U)
        object.__setattr__(self, "T", T)
        object.__setattr__(self, "K", int(self.K))

    @property
    def n(self) -> int:
        return int(self.U.shape[0])

    @property
    def m(self) -> int:
        return int(self.U.shape[1])

    @classmethod
    def from_floats(cls, u: np.ndarray, tau: np.ndarray, K: int, *, tol: float = 1e-9) -> Instance:
        """Build an instance from utilities in ``[0, 1]`` and thresholds in ``(0, 1]``.

        Every value must lie within ``tol`` of the ``1/K`` grid (the paper's finite-precision
        assumption); otherwise a ``ValueError`` names the offending entry.
        """
        u = np.asarray(u, dtype=float)
        tau = np.asarray(tau, dtype=float)
        if not (np.all(np.isfinite(u)) and np.all(np.isfinite(tau))):
            raise ValueError("utilities and thresholds must be finite")
        if isinstance(K, bool) or not isinstance(K, int | np.integer) or K < 2:
            raise ValueError(f"K = 1/eps must be an int >= 2, got {K!r}")
        U = np.rint(u * K)
        T = np.rint(tau * K)
        if np.abs(U - u * K).max(initial=0) > tol * K or np.abs(T - tau * K).max(initial=0) > tol * K:
            raise ValueError(f"utilities/thresholds are not on the 1/K grid with K={K}")
        return cls(U.astype(np.int64), T.astype(np.int64), int(K))


def accepts(instance: Instance, x: Lottery | Sequence[object]) -> np.ndarray:
    """Offline, exact: which agents accept ``x`` (bool array, shape (n,)). Evaluation only."""
    lot = as_lottery(x, instance.m)
    return _dot_ge(instance.U, instance.T, lot)


class AcceptanceOracle:
    """The only thing the algorithms see: accept/reject answers, each one counted.

    The instance's utilities and thresholds are held in a closure, not as attributes, and the
    oracle exposes only ``n``, ``m``, ``K``, the query methods and the counters.

    Parameters
    ----------
    instance : Instance
        The hidden ground truth.
    record : bool
        Keep a log of ``(agent, lottery, answer)`` for every query (memory grows with queries).

    Attributes
    ----------
    n_queries : int
        Total membership queries so far.
    per_agent : ndarray of int, shape (n,)
        Queries per agent (a copy).
    """

    __slots__ = ("n", "m", "K", "_answer", "_count", "_per_agent", "log", "_sequential")

    def __init__(self, instance: Instance, *, record: bool = False) -> None:
        if not isinstance(instance, Instance):
            raise TypeError(f"AcceptanceOracle needs an Instance, got {type(instance).__name__}")
        U, T = instance.U, instance.T

        def answer(agents: np.ndarray, lot: Lottery) -> np.ndarray:
            return _dot_ge(U[agents], T[agents], lot)

        self._setup(instance.n, instance.m, instance.K, answer, record)
        self._sequential = False

    def _setup(self, n: int, m: int, K: int, answer: Callable, record: bool) -> None:
        if n < 1 or m < 2 or K < 2:
            raise ValueError(f"need n >= 1, m >= 2 and K >= 2, got n={n}, m={m}, K={K}")
        self.n, self.m, self.K = int(n), int(m), int(K)
        self._answer = answer
        self._count = 0
        self._per_agent = np.zeros(self.n, dtype=np.int64)
        self.log: list[tuple[int, tuple[Fraction, ...], bool]] | None = [] if record else None

    @classmethod
    def from_callable(cls, fn: Callable[[int, tuple[Fraction, ...]], bool], n: int, m: int, K: int,
                      *, record: bool = False) -> AcceptanceOracle:
        """Wrap a real accept/reject source (e.g. people in the loop): ``fn(agent, lottery) -> bool``.

        ``lottery`` is a tuple of :class:`fractions.Fraction` summing to 1. The algorithms assume
        the answers come from grid-exact halfspaces with precision ``1/K``; answers that no such
        agent could give raise :class:`OracleInconsistencyError` when they are detected.
        """
        self = cls.__new__(cls)

        def answer(agents: np.ndarray, lot: Lottery) -> np.ndarray:
            x = lot.fractions()
            out = []
            for i in agents:
                a = fn(int(i), x)
                if not isinstance(a, bool | np.bool_):
                    raise TypeError(f"oracle callable must return a bool, got {type(a).__name__}")
                out.append(bool(a))
            return np.asarray(out, dtype=bool)

        self._setup(n, m, K, answer, record)
        self._sequential = True  # ask one agent at a time: never ask beyond the first rejecter
        return self

    # -- counters -----------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return self._count

    @property
    def per_agent(self) -> np.ndarray:
        return self._per_agent.copy()

    # -- queries ------------------------------------------------------------------------------
    def _agents(self, agents: Iterable[int] | np.ndarray) -> np.ndarray:
        idx = np.asarray(list(agents) if not isinstance(agents, np.ndarray) else agents)
        if idx.size == 0:
            return idx.astype(np.int64)
        if not np.issubdtype(idx.dtype, np.integer):
            raise TypeError("agent indices must be integers")
        if idx.min() < 0 or idx.max() >= self.n:
            raise ValueError(f"agent index out of range [0, {self.n})")
        return idx.astype(np.int64)

    def _charge(self, idx: np.ndarray, lot: Lottery, ans: np.ndarray) -> None:
        self._count += int(idx.size)
        np.add.at(self._per_agent, idx, 1)
        if self.log is not None:
            x = lot.fractions()
            self.log.extend((int(i), x, bool(a)) for i, a in zip(idx, ans, strict=True))

    def query(self, agent: int, x: Lottery | Sequence[object]) -> bool:
        """One membership query: does ``agent`` accept lottery ``x``? Costs 1."""
        if isinstance(agent, bool) or not isinstance(agent, int | np.integer):
            raise TypeError("agent must be an int")
        return bool(self.query_many([int(agent)], x)[0])

    def query_many(self, agents: Iterable[int] | np.ndarray, x: Lottery | Sequence[object]) -> np.ndarray:
        """One query per listed agent at the same lottery; costs ``len(agents)``."""
        lot = as_lottery(x, self.m)
        idx = self._agents(agents)
        ans = self._answer(idx, lot) if idx.size else np.zeros(0, dtype=bool)
        self._charge(idx, lot, ans)
        return ans

    def first_rejecter(self, agents: Iterable[int] | np.ndarray, x: Lottery | Sequence[object]) -> int | None:
        """Query ``agents`` in order at ``x`` and stop at the first that rejects.

        Costs exactly the queries made: the prefix up to and including the first rejecter (or all
        of ``agents`` if every one accepts). Returns the rejecter or ``None``.
        """
        lot = as_lottery(x, self.m)
        idx = self._agents(agents)
        if idx.size == 0:
            return None
        if self._sequential:
            for k, i in enumerate(idx):
                a = self._answer(idx[k:k + 1], lot)
                self._charge(idx[k:k + 1], lot, a)
                if not a[0]:
                    return int(i)
            return None
        ans = self._answer(idx, lot)  # evaluated together for speed; only the prefix is charged
        bad = np.flatnonzero(~ans)
        stop = int(bad[0]) + 1 if bad.size else idx.size
        self._charge(idx[:stop], lot, ans[:stop])
        return int(idx[stop - 1]) if bad.size else None

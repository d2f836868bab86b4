"""Exact entropy/variance functionals on finite product spaces (the hypercube ``{±1}^n`` first).

Paper T8 (``efronStein``), T10 (``han_inequality``), T11 (``entropy_duality``), T12
(``entropy_subadditive``) and T13 (``bernoulli_logSobolev``), arXiv 2602.02285; textbook sources
Boucheron–Lugosi–Massart (BLM) Thms 3.1, 4.1, 4.13, 4.22, 5.1.

A function of ``n`` independent finite coordinates is a table of shape ``(k_1, …, k_n)``; the
product measure is given by one probability vector per axis (uniform by default). Everything is
computed by exact enumeration (no sampling). On the hypercube, axis ``j`` holds coordinate ``ε_j``
with index 0 ↔ −1 and index 1 ↔ +1, matching :func:`hypercube` in C order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import integrate

from icml26.core.validation import as_finite_array, check_positive_int

__all__ = [
    "hypercube",
    "entropy",
    "variance",
    "efron_stein_rhs",
    "conditional_entropy_sum",
    "han_rhs",
    "bernoulli_lsi_rhs",
    "entropy_dual_objective",
    "optimal_dual_variable",
    "entropy_dual_objective_T",
    "gaussian_poincare_sides",
    "gaussian_lsi_sides",
]


def hypercube(n: int) -> np.ndarray:
    """All points of ``{−1, +1}^n`` in C order, shape ``(2**n, n)`` (first coordinate slowest)."""
    n = check_positive_int(n, "n")
    if n > 24:
        raise ValueError(f"n = {n} is too large for exact enumeration (2^n points)")
    bits = (np.arange(2**n)[:, None] >> np.arange(n - 1, -1, -1)) & 1
    return 2.0 * bits - 1.0


def _table(f, probs: Sequence[np.ndarray] | None, name: str = "f"):
    arr = as_finite_array(f, name)
    if arr.ndim == 0:
        raise ValueError(f"{name} must have one axis per coordinate")
    if probs is None:
        probs = [np.full(k, 1.0 / k) for k in arr.shape]
    if len(probs) != arr.ndim:
        raise ValueError(f"need one probability vector per axis: {arr.ndim} axes, {len(probs)} vectors")
    out = []
    for i, p in enumerate(probs):
        p = as_finite_array(p, f"probs[{i}]", ndim=1)
        if p.shape[0] != arr.shape[i] or np.any(p < 0) or abs(p.sum() - 1) > 1e-12:
            raise ValueError(f"probs[{i}] must be a probability vector of length {arr.shape[i]}")
        out.append(p)
    return arr, out


def _expect(arr: np.ndarray, probs: Sequence[np.ndarray], axes: Sequence[int]) -> np.ndarray:
    """Integrate out ``axes`` (kept as size-1 axes)."""
    for ax in axes:
        shape = [1] * arr.ndim
        shape[ax] = -1
        arr = np.sum(arr * probs[ax].reshape(shape), axis=ax, keepdims=True)
    return arr


def _ent_along(y: np.ndarray, probs, axes) -> np.ndarray:
    """``E_axes[y log y] − E_axes[y] log E_axes[y]`` with ``0 log 0 = 0``."""
    ylogy = np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0)), 0.0)
    m = _expect(y, probs, axes)
    mlogm = np.where(m > 0, m * np.log(np.where(m > 0, m, 1.0)), 0.0)
    return _expect(ylogy, probs, axes) - mlogm


def entropy(y, probs: Sequence[np.ndarray] | None = None) -> float:
    """``Ent(Y) = E[Y log Y] − E[Y] log E[Y]`` for a table ``Y >= 0`` (``0 log 0 = 0``)."""
    arr, p = _table(y, probs, "y")
    if np.any(arr < 0):
        raise ValueError("entropy needs a non-negative table")
    return float(_ent_along(arr, p, range(arr.ndim)).item())


def variance(f, probs: Sequence[np.ndarray] | None = None) -> float:
    """``Var f`` under the product measure."""
    arr, p = _table(f, probs)
    mean = _expect(arr, p, range(arr.ndim))
    return float(_expect((arr - mean) ** 2, p, range(arr.ndim)).item())


def efron_stein_rhs(f, probs: Sequence[np.ndarray] | None = None) -> float:
    """Paper T8's right side ``Σ_i E[(f − E^{(i)} f)²]``, ``E^{(i)}`` integrating out coordinate i."""
    arr, p = _table(f, probs)
    total = 0.0
    for i in range(arr.ndim):
        total += float(_expect((arr - _expect(arr, p, [i])) ** 2, p, range(arr.ndim)).item())
    return total


def conditional_entropy_sum(y, probs: Sequence[np.ndarray] | None = None) -> float:
    """Paper T12's right side ``Σ_i E[Ent^{(i)}(Y)]`` for a table ``Y >= 0``."""
    arr, p = _table(y, probs, "y")
    if np.any(arr < 0):
        raise ValueError("entropy needs a non-negative table")
    return float(sum(_expect(_ent_along(arr, p, [i]), p, range(arr.ndim)).item() for i in range(arr.ndim)))


def han_rhs(h) -> float:
    """Paper T10's right side on the uniform hypercube: ``Σ_j E[Ent^{(j)}(h²)]``.

    ``h`` is a table of shape ``(2,)*n`` (or a vector of length ``2**n`` in :func:`hypercube` order).
    """
    arr = _cube_table(h)
    return conditional_entropy_sum(arr**2)


def bernoulli_lsi_rhs(h) -> float:
    """Paper T13's right side: ``½ E[Σ_j (h(ε) − h(flip_j ε))²]`` on the uniform hypercube."""
    arr = _cube_table(h)
    return 0.5 * float(sum(np.mean((arr - np.flip(arr, axis=j)) ** 2) for j in range(arr.ndim)))


def entropy_dual_objective(y, u, probs: Sequence[np.ndarray] | None = None, *, tol: float = 1e-9) -> float:
    """``E[U Y]`` for a dual variable with ``E e^U = 1`` (paper T11: its sup over U is ``Ent(Y)``).

    Raises ``ValueError`` when ``|E e^U − 1| > tol``: the duality only holds on that set.
    """
    arr, p = _table(y, probs, "y")
    u_arr = as_finite_array(u, "u")
    if u_arr.shape != arr.shape:
        raise ValueError(f"u has shape {u_arr.shape} but y has {arr.shape}")
    norm = float(_expect(np.exp(u_arr), p, range(arr.ndim)).item())
    if abs(norm - 1.0) > tol:
        raise ValueError(f"E exp(U) = {norm:.12g}, but the dual set needs E exp(U) = 1")
    return float(_expect(u_arr * arr, p, range(arr.ndim)).item())


def optimal_dual_variable(y, probs: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """``U* = log(Y / E Y)`` (needs ``Y > 0``), the maximiser of the entropy dual."""
    arr, p = _table(y, probs, "y")
    if np.any(arr <= 0):
        raise ValueError("the optimal dual variable needs Y > 0 everywhere")
    return np.log(arr / _expect(arr, p, range(arr.ndim)))


def entropy_dual_objective_T(y, t, probs: Sequence[np.ndarray] | None = None) -> float:
    """``E[Y (log T − log E T)]`` for ``T >= 0`` with ``E T > 0`` (``entropy_duality_T``: its sup is ``Ent(Y)``).

    The T-parameterisation of ``SLT/GaussianLSI/DualEntApp.lean``: ``log 0 = −∞``, so the value is
    ``−inf`` when ``T = 0`` somewhere ``Y > 0`` (where ``Y = 0`` the term is 0).
    """
    arr, p = _table(y, probs, "y")
    t_arr = as_finite_array(t, "t")
    if t_arr.shape != arr.shape:
        raise ValueError(f"t has shape {t_arr.shape} but y has {arr.shape}")
    if np.any(arr < 0) or np.any(t_arr < 0):
        raise ValueError("entropy_duality_T needs Y >= 0 and T >= 0")
    mean_t = float(_expect(t_arr, p, range(arr.ndim)).item())
    if not mean_t > 0:
        raise ValueError("entropy_duality_T needs E[T] > 0")
    if np.any((t_arr == 0) & (arr > 0)):
        return -math.inf
    logs = np.where(arr > 0, np.log(np.where(t_arr > 0, t_arr, 1.0)) - math.log(mean_t), 0.0)
    return float(_expect(arr * logs, p, range(arr.ndim)).item())


def gaussian_poincare_sides(f: Callable[[float], float], fprime: Callable[[float], float],
                            support: tuple[float, float]) -> tuple[float, float]:
    """Both sides of paper T9 (``gaussianPoincare``): ``(Var f(X), E f'(X)²)`` for ``X ~ N(0,1)``.

    ``f`` must vanish outside ``support`` (compactly supported, as in the Lean hypothesis); the
    Gaussian integrals are computed by adaptive quadrature on the support.
    """
    lo, hi = float(support[0]), float(support[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"support must be a finite interval (lo < hi), got {support!r}")

    def e(g):
        v, _ = integrate.quad(lambda x: g(x) * math.exp(-x * x / 2) / math.sqrt(2 * math.pi), lo, hi,
                              epsabs=1e-14, epsrel=1e-12, limit=400)
        return v
    m1 = e(lambda x: float(f(x)))
    m2 = e(lambda x: float(f(x)) ** 2)
    g2 = e(lambda x: float(fprime(x)) ** 2)
    return m2 - m1 * m1, g2


def gaussian_lsi_sides(g: Callable[[np.ndarray], np.ndarray], grad: Callable[[np.ndarray], np.ndarray],
                       n: int, nodes: int = 80) -> tuple[float, float]:
    """Both sides of paper T14 (``gaussian_logSobolev_W12_pi``) without the constant 2:
    ``(Ent_γn(g²), E‖∇g‖²)`` by tensor Gauss–Hermite quadrature (``nodes`` per axis).

    ``g(X)`` maps points of shape (m, n) to values (m,), ``grad(X)`` to gradients (m, n).
    """
    n, nodes = check_positive_int(n, "n"), check_positive_int(nodes, "nodes", minimum=2)
    if nodes**n > 2_000_000:
        raise ValueError(f"{nodes}^{n} quadrature points is too many; lower nodes or n")
    x1, w1 = hermegauss(nodes)
    w1 = w1 / w1.sum()
    grids = np.meshgrid(*([x1] * n), indexing="ij")
    X = np.stack([gr.ravel() for gr in grids], axis=1)
    W = np.prod(np.meshgrid(*([w1] * n), indexing="ij"), axis=0).ravel()
    vals = as_finite_array(g(X), "g(X)", ndim=1)
    grads = as_finite_array(grad(X), "grad(X)", ndim=2)
    g2 = vals**2
    m = float(W @ g2)
    ent = float(W @ np.where(g2 > 0, g2 * np.log(np.where(g2 > 0, g2, 1.0)), 0.0)) - (m * math.log(m) if m > 0 else 0.0)
    return ent, float(W @ np.sum(grads**2, axis=1))


def _cube_table(h) -> np.ndarray:
    arr = as_finite_array(h, "h")
    if arr.ndim == 1:
        n = int(round(np.log2(arr.size))) if arr.size > 0 else -1
        if n < 1 or 2**n != arr.size:
            raise ValueError(f"a hypercube table needs 2**n entries, got {arr.size}")
        arr = arr.reshape((2,) * n)
    if any(k != 2 for k in arr.shape):
        raise ValueError(f"a hypercube table has shape (2,)*n, got {arr.shape}")
    return arr

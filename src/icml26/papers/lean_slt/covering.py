"""Covering and packing numbers, the closed-form covering bounds, metric entropy, Maurey's net.

Conventions follow the Lean library (arXiv 2602.02285, repo ``YuanheZ/lean-stat-learning-theory``,
files ``SLT/CoveringNumber.lean`` and ``SLT/MetricEntropy.lean``): a finite ``t`` is an ε-net of
``s`` when every point of ``s`` lies in a *closed* ball of radius ε around some point of ``t``;
centres may lie outside ``s``; ``N(ε, s)`` is the minimal size of an ε-net and the metric entropy
is ``H(ε, s) = log N(ε, s)``, set to 0 when ``N <= 1`` or ``N = ∞``.

On a finite sample only greedy counts are computable (minimal covers are NP-hard), and each count
has a one-sided meaning that the docstrings state: a greedy ε-net of a sample ``S`` *upper*-bounds
``N(ε, S)``; a greedy set of points pairwise more than ε apart *lower*-bounds ``N(ε/2, A)`` for
every set ``A`` containing them (a closed ε/2-ball holds at most one of them). A greedy count is
never ``N(ε, ·)`` of a continuous set.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.spatial.distance import cdist

from icml26.core.validation import (
    as_finite_array,
    check_nonnegative,
    check_positive,
    check_positive_int,
)

__all__ = [
    "greedy_net_indices",
    "covering_number_greedy",
    "packing_number_greedy",
    "is_eps_net",
    "net_radius",
    "euclidean_ball_covering_bound",
    "l1_ball_covering_bound",
    "metric_entropy",
    "maurey_sample_size",
    "maurey_net_point",
    "maurey_expected_sq_error",
    "sample_l2_ball",
    "sample_l1_ball",
]


def _points(points: np.ndarray) -> np.ndarray:
    arr = as_finite_array(points, "points")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"points must have shape (m, d), got {arr.shape}")
    return arr


def greedy_net_indices(points: np.ndarray, eps: float, metric: str = "euclidean") -> np.ndarray:
    """Indices of a maximal ε-separated subset of ``points`` chosen greedily in order.

    Every point not chosen is within distance ``<= eps`` of a chosen one and the chosen points are
    pairwise ``> eps`` apart, so the subset is both an ε-net of the sample (paper T3,
    ``isENet_of_maximal``) and an ε-separated set.

    Parameters
    ----------
    points : array, shape (m, d)
    eps : float > 0
    metric : str
        Any metric name of :func:`scipy.spatial.distance.cdist`.

    Returns
    -------
    idx : int array, shape (k,)
    """
    x = _points(points)
    eps = check_positive(eps, "eps")
    m = x.shape[0]
    dist = np.full(m, np.inf)
    chosen: list[int] = []
    i = 0
    while True:
        far = np.flatnonzero(dist > eps)
        if far.size == 0:
            break
        i = int(far[0])
        chosen.append(i)
        dist = np.minimum(dist, cdist(x[i:i + 1], x, metric=metric)[0])
    return np.asarray(chosen, dtype=int)


def covering_number_greedy(points: np.ndarray, eps: float, metric: str = "euclidean") -> int:
    """Size of a greedy ε-net of the finite sample: an **upper** bound on ``N(eps, points)``."""
    return int(greedy_net_indices(points, eps, metric).size)


def packing_number_greedy(points: np.ndarray, eps: float, metric: str = "euclidean") -> int:
    """Size of a greedy set of sample points pairwise ``> eps`` apart.

    A **lower** bound on the packing number of the sample and on ``N(eps / 2, A)`` for every set
    ``A`` that contains the sample (closed ε/2-balls, centres anywhere).
    """
    return int(greedy_net_indices(points, eps, metric).size)


def is_eps_net(net: np.ndarray, points: np.ndarray, eps: float, metric: str = "euclidean") -> bool:
    """Whether every point lies within closed distance ``eps`` of some point of ``net``."""
    return bool(net_radius(net, points, metric) <= check_nonnegative(eps, "eps"))


def net_radius(net: np.ndarray, points: np.ndarray, metric: str = "euclidean") -> float:
    """``max_x min_t d(x, t)``: the smallest ε for which ``net`` is an ε-net of ``points``."""
    c, x = _points(net), _points(points)
    if c.shape[1] != x.shape[1]:
        raise ValueError(f"net has dimension {c.shape[1]} but points have {x.shape[1]}")
    best = np.full(x.shape[0], np.inf)
    for start in range(0, c.shape[0], 512):
        best = np.minimum(best, cdist(c[start:start + 512], x, metric=metric).min(axis=0))
    return float(best.max())


def euclidean_ball_covering_bound(radius: float, eps: float, d: int, *, log: bool = False) -> float:
    """Paper T4 (``coveringNumber_euclideanBall_le``): ``N(ε, B₂^d(0,R)) <= (1 + 2R/ε)^d``.

    Parameters
    ----------
    radius : float >= 0
    eps : float > 0
    d : int >= 1
    log : bool
        Return the natural log of the bound (avoids overflow).
    """
    radius, eps, d = check_nonnegative(radius, "radius"), check_positive(eps, "eps"), check_positive_int(d, "d")
    value = d * math.log1p(2.0 * radius / eps)
    return value if log else math.exp(value)


def l1_ball_covering_bound(radius: float, eps: float, d: int, *, log: bool = False) -> float:
    """Paper T5/T23 (Maurey): ``N(ε, B₁^d(R))`` in the Euclidean metric ``<= (2d+1)^⌈R²/ε²⌉``.

    The exponent is computed in exact rational arithmetic from the given floats, so the ceiling is
    never off by one through rounding.
    """
    radius, eps, d = check_nonnegative(radius, "radius"), check_positive(eps, "eps"), check_positive_int(d, "d")
    k = maurey_sample_size(radius, eps)
    value = k * math.log(2 * d + 1)
    return value if log else math.exp(value)


def maurey_sample_size(radius: float, eps: float) -> int:
    """``k = ⌈R²/ε²⌉``, the number of Maurey draws (exact rational ceiling)."""
    radius, eps = check_nonnegative(radius, "radius"), check_positive(eps, "eps")
    return math.ceil(Fraction(radius) ** 2 / Fraction(eps) ** 2)


def metric_entropy(n_cover: float) -> float:
    """Lean's ``metricEntropy``: ``log N`` when ``1 < N < ∞``, else 0."""
    if isinstance(n_cover, bool) or not isinstance(n_cover, int | float | np.integer | np.floating):
        raise TypeError(f"a covering number must be a number, got {type(n_cover).__name__}")
    n = float(n_cover)
    if math.isnan(n) or n < 0:
        raise ValueError(f"a covering number must be >= 0, got {n_cover!r}")
    if n <= 1 or math.isinf(n):
        return 0.0
    return math.log(n)


def _maurey_inputs(theta, X, radius):
    X = as_finite_array(X, "X", ndim=2)
    theta = as_finite_array(theta, "theta", ndim=1)
    if theta.shape[0] != X.shape[1]:
        raise ValueError(f"theta has {theta.shape[0]} entries but X has {X.shape[1]} columns")
    l1 = float(np.abs(theta).sum())
    radius = l1 if radius is None else check_nonnegative(radius, "radius")
    if l1 > radius * (1 + 1e-12):
        raise ValueError(f"||theta||_1 = {l1:.6g} exceeds the radius {radius:.6g}")
    return theta, X, radius


def maurey_expected_sq_error(theta: np.ndarray, X: np.ndarray, k: int, radius: float | None = None) -> float:
    """Exact ``E‖Z̄_k − Xθ/√n‖²`` of Maurey's empirical method (paper T23's construction).

    ``Z`` takes the value ``R·sign(θ_j)·X_j/√n`` with probability ``|θ_j|/R`` and 0 with the remaining
    probability ``1 − ‖θ‖₁/R``; ``Z̄_k`` is the mean of ``k`` independent copies. Then
    ``E Z = Xθ/√n`` and ``E‖Z̄_k − EZ‖² = (R Σ_j |θ_j| ‖X_j‖²/n − ‖Xθ/√n‖²)/k <= R²/k`` under the
    column normalisation ``‖X_j‖₂ <= √n``.
    """
    theta, X, radius = _maurey_inputs(theta, X, radius)
    k = check_positive_int(k, "k")
    n = X.shape[0]
    second = radius * float(np.abs(theta) @ (X**2).sum(axis=0)) / n
    mean_sq = float(np.sum((X @ theta) ** 2)) / n
    return max(second - mean_sq, 0.0) / k


def maurey_net_point(theta: np.ndarray, X: np.ndarray, eps: float, rng: np.random.Generator,
                     radius: float | None = None, max_tries: int = 200) -> tuple[np.ndarray, float]:
    """Constructive Maurey step: a net point within ε of ``Xθ/√n`` (paper T23).

    Draws ``k = ⌈R²/ε²⌉`` signed, R-scaled normalised columns and averages them, up to
    ``max_tries`` times, returning the closest average found and its distance. Existence of a draw
    within ε follows from :func:`maurey_expected_sq_error` ``<= ε²``.

    Returns
    -------
    point : array, shape (n,)
    distance : float
    """
    theta, X, radius = _maurey_inputs(theta, X, radius)
    eps = check_positive(eps, "eps")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy Generator")
    n, d = X.shape
    target = X @ theta / math.sqrt(n)
    k = maurey_sample_size(radius, eps)
    probs = np.append(np.abs(theta) / radius if radius > 0 else np.zeros(d), 0.0)
    probs[-1] = max(1.0 - probs[:-1].sum(), 0.0)
    probs /= probs.sum()
    columns = ((radius * np.sign(theta))[None, :] * X / math.sqrt(n)).T  # (d, n)
    atoms = np.vstack([columns, np.zeros((1, n))])
    best, best_dist = target, math.inf
    for _ in range(check_positive_int(max_tries, "max_tries")):
        draws = rng.choice(d + 1, size=k, p=probs)
        point = atoms[draws].mean(axis=0)
        dist = float(np.linalg.norm(point - target))
        if dist < best_dist:
            best, best_dist = point, dist
        if dist <= eps:
            break
    return best, best_dist


def sample_l2_ball(m: int, d: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    """``m`` points uniform in the Euclidean ball ``B₂^d(0, R)``, shape (m, d)."""
    m, d, radius = check_positive_int(m, "m"), check_positive_int(d, "d"), check_nonnegative(radius, "radius")
    g = rng.standard_normal((m, d))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return radius * g * rng.random((m, 1)) ** (1.0 / d)


def sample_l1_ball(m: int, d: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    """``m`` points uniform in the ℓ₁ ball ``B₁^d(R)``, shape (m, d) (Dirichlet(1,…,1) on d+1 coords)."""
    m, d, radius = check_positive_int(m, "m"), check_positive_int(d, "d"), check_nonnegative(radius, "radius")
    e = rng.exponential(size=(m, d + 1))
    u = e[:, :d] / e.sum(axis=1, keepdims=True)
    return radius * u * rng.choice([-1.0, 1.0], size=(m, d))

"""Robustness metrics on a common footing: PR under fixed distributions, AR by PGD or exact search.

Every metric here is evaluated on the same set ``T`` of inputs: with ``only_correct=True`` (our
default, as in the brief's pseudocode and the PRBench / AT-PR convention) the correctly classified
clean inputs; with ``only_correct=False`` every input (the authors' evaluator, ``utils/evaluator.py``,
averages over all test inputs, so a misclassified input counts as PR 0 there). Both are offered;
say which one you report.
Definitions (arXiv 2511.17380, Sec. 2-3):

- ``PR_P(x, y) = P_{delta ~ P}[f(x + delta) = y]``, ``PR_P = mean over T``;
- ``AR(x, y) = 1[f(x + delta) = y for every delta in the ball]``; PGD estimates it from above;
- ``Prob.Acc(gamma)`` = fraction of inputs whose per-input PR exceeds ``1 - gamma``.

The Monte-Carlo interval is Clopper-Pearson on ``k`` successes out of ``n * |T|`` draws. Given the
inputs, the success count is Poisson-binomial, whose variance is at most the binomial one, so the
interval is valid (conservative) for the mean PR over ``T``.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import stats

from .gmm import _check_eps, _check_norm

DISTRIBUTIONS = ("uniform", "gaussian", "laplace", "corners")
GAMMAS = (0.2, 0.1, 0.05, 0.01)


@dataclass(frozen=True)
class RobustnessResult:
    """A robustness estimate over the evaluated inputs.

    Attributes
    ----------
    mean : float
        Mean per-input PR (or robust accuracy) over the evaluated inputs.
    ci : (float, float)
        95 % Clopper-Pearson interval of ``mean`` (over ``n * n_inputs`` draws).
    per_input : ndarray, shape (n_inputs,)
        Per-input PR (fraction of the ``n`` draws classified correctly); 0/1 for AR.
    prob_acc : dict
        ``{gamma: fraction of inputs with per-input PR > 1 - gamma}``.
    n : int
        Draws per input (1 for AR).
    n_inputs : int
        Number of evaluated inputs ``|T|``.
    indices : ndarray
        Positions in the given ``X`` of the evaluated inputs.
    method : str
        Which estimator produced it.
    eps : float
    norm : str
    """

    mean: float
    ci: tuple[float, float]
    per_input: np.ndarray
    prob_acc: dict
    n: int
    n_inputs: int
    indices: np.ndarray
    method: str
    eps: float
    norm: str
    extra: dict = field(default_factory=dict)

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the confidence interval."""
        return self.ci[0] <= value <= self.ci[1]

    def interior_fraction(self, low: float = 0.05, high: float = 0.95) -> float:
        """Fraction of inputs with per-input PR strictly between ``low`` and ``high``."""
        p = self.per_input
        return float(np.mean((p > low) & (p < high))) if p.size else float("nan")


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact two-sided binomial interval for ``k`` successes in ``n`` trials.

    Examples
    --------
    >>> lo, hi = clopper_pearson(50, 100)
    >>> round(lo, 3), round(hi, 3)
    (0.398, 0.602)
    """
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def prob_accuracy(per_input_pr, gammas=GAMMAS) -> dict:
    """Prob.Acc(gamma): the fraction of inputs with per-input PR > 1 - gamma (PRBench metric).

    Parameters
    ----------
    per_input_pr : array-like, shape (n_inputs,)
        Values in [0, 1].
    gammas : sequence of float in (0, 1)

    Examples
    --------
    >>> prob_accuracy([1.0, 0.95, 0.5], gammas=(0.1,))
    {0.1: 0.6666666666666666}
    """
    p = np.asarray(per_input_pr, dtype=float)
    if p.ndim != 1 or not np.all(np.isfinite(p)) or p.size and (p.min() < 0 or p.max() > 1):
        raise ValueError("per_input_pr must be a 1-D array of values in [0, 1]")
    out = {}
    for g in gammas:
        if not 0 < g < 1:
            raise ValueError(f"gamma must be in (0, 1), got {g}")
        out[float(g)] = float(np.mean(p > 1 - g)) if p.size else float("nan")
    return out


# ------------------------------------------------------------------------------------------------
# input validation shared by every metric and the estimator
# ------------------------------------------------------------------------------------------------


def as_inputs(X, y, *, name: str = "X") -> tuple[torch.Tensor, torch.Tensor]:
    """Validate and convert ``X`` (B, *shape) floats and ``y`` (B,) integer labels to tensors."""
    if isinstance(X, np.ndarray):
        if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
            raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
        X = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(X).__name__}")
    if X.is_complex() or X.dtype == torch.bool:
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
    X = X.float()
    if X.ndim < 2:
        raise ValueError(f"{name} must have shape (n_samples, *input_shape), got {tuple(X.shape)}")
    if not torch.isfinite(X).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if isinstance(y, np.ndarray):
        y = torch.from_numpy(np.asarray(y))
    if not isinstance(y, torch.Tensor):
        y = torch.as_tensor(y)
    if y.is_floating_point():
        if not torch.all(y == y.round()):
            raise TypeError("y must hold integer class labels")
    elif y.dtype == torch.bool or y.is_complex():
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    y = y.long()
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {tuple(y.shape)}")
    if y.numel() and y.min() < 0:
        raise ValueError("labels must be non-negative")
    return X, y


@torch.no_grad()
def check_classifier(classifier: Callable, X: torch.Tensor, y: torch.Tensor) -> int:
    """Call ``classifier`` on a few inputs, check it returns logits (B, C); return ``C``."""
    if not callable(classifier):
        raise TypeError("classifier must be callable (an nn.Module mapping inputs to logits)")
    probe = X[: min(4, X.shape[0])]
    out = classifier(probe)
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != probe.shape[0]:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"classifier must return logits of shape ({probe.shape[0]}, n_classes), "
                         f"got {shape}")
    C = int(out.shape[1])
    if C < 2:
        raise ValueError(f"classifier must return at least 2 logits per input, got {C}")
    if y.numel() and int(y.max()) >= C:
        raise ValueError(f"labels out of range: max label {int(y.max())} but the classifier has "
                         f"{C} classes")
    return C


def check_in_range(X: torch.Tensor, clip_range, tol: float = 1e-6) -> None:
    """Raise when ``X`` leaves the declared data range (e.g. 0-255 or uint8 images with (0, 1)).

    Without this check such inputs give PR 1.0 silently: the perturbation is tiny against the
    pixel scale and clipping to (0, 1) maps every perturbed image to the same saturated one.
    """
    if clip_range is None or X.numel() == 0:
        return
    lo, hi = _check_clip(clip_range)
    xmin, xmax = float(X.min()), float(X.max())
    if xmin < lo - tol or xmax > hi + tol:
        raise ValueError(f"X has values in [{xmin:g}, {xmax:g}], outside clip_range ({lo:g}, {hi:g}); "
                         "scale the inputs to the declared range (e.g. divide 0-255 images by "
                         "255) or pass the range they live in")


def _check_clip(clip_range):
    if clip_range is None:
        return None
    lo, hi = (float(v) for v in clip_range)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"clip_range must be (low, high) with low < high, got {clip_range}")
    return lo, hi


def _check_n(n: int, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"{name} must be a positive int, got {n!r}")
    return int(n)


@torch.no_grad()
def predict(classifier: Callable, X: torch.Tensor, batch_size: int = 4096) -> torch.Tensor:
    """Predicted labels (B,) in batches."""
    return torch.cat([classifier(X[i:i + batch_size]).argmax(1)
                      for i in range(0, X.shape[0], batch_size)]) if X.shape[0] else \
        torch.empty(0, dtype=torch.long)


def select_inputs(classifier, X, y, only_correct: bool) -> np.ndarray:
    """Indices of the evaluated set ``T`` (correctly classified inputs, or all)."""
    if only_correct:
        return torch.nonzero(predict(classifier, X) == y).flatten().numpy()
    return np.arange(X.shape[0])


def summarise(per_input: np.ndarray, n: int, indices: np.ndarray, method: str, eps: float,
              norm: str, extra: dict | None = None) -> RobustnessResult:
    """Build a :class:`RobustnessResult` from per-input success fractions."""
    m = per_input.size
    if m == 0:
        mean, ci = float("nan"), (float("nan"), float("nan"))
    else:
        k = int(round(float(per_input.sum()) * n))
        mean, ci = float(per_input.mean()), clopper_pearson(k, n * m)
    return RobustnessResult(mean, ci, per_input, prob_accuracy(per_input), n, m, indices, method,
                            eps, norm, extra or {})


@torch.no_grad()
def monte_carlo_pr(classifier: Callable, X: torch.Tensor, y: torch.Tensor,
                   sampler: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor], n: int,
                   clip_range=(0.0, 1.0), chunk: int = 64) -> np.ndarray:
    """Per-input PR by Monte Carlo: ``mean_s 1[f(clip(x + delta_s)) = y]``.

    ``sampler(x, y, n)`` returns perturbations of shape (n, b, *input_shape).
    """
    out = np.empty(X.shape[0])
    for i in range(0, X.shape[0], chunk):
        xb, yb = X[i:i + chunk], y[i:i + chunk]
        delta = sampler(xb, yb, n)
        xp = xb.unsqueeze(0) + delta
        if clip_range is not None:
            xp = xp.clamp(*clip_range)
        pred = classifier(xp.flatten(0, 1)).argmax(1).view(n, -1)
        out[i:i + chunk] = (pred == yb.unsqueeze(0)).double().mean(0).numpy()
    return out


def fixed_sampler(dist: str, eps: float, norm: str, generator: torch.Generator) -> Callable:
    """A sampler of perturbations from a fixed distribution supported in the ball.

    L-inf (authors' ``pr_random_generator``): ``uniform`` U[-eps, eps]^d; ``gaussian``
    N(0, eps^2 I) clamped to [-eps, eps]; ``laplace`` Laplace(0, eps) clamped. L2 (our choice,
    not given by the paper): uniform in the L2 ball; Gaussian/Laplace with per-coordinate scale
    ``eps / sqrt(d)`` radially projected into the ball.

    ``corners`` (not in the paper; our negative control): L-inf ``eps * s`` with independent
    random signs ``s`` (uniform on the vertices of the ball, every pixel at the budget); L2
    uniform on the sphere of radius ``eps``. It is the most aggressive distribution here that
    does not look at the classifier.
    """
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"dist must be one of {DISTRIBUTIONS}, got {dist!r}")

    def sample(x: torch.Tensor, y: torch.Tensor, n: int) -> torch.Tensor:
        shape = (n, *x.shape)
        d = x[0].numel()
        if dist == "corners":
            if norm == "linf":
                return eps * (torch.randint(0, 2, shape, generator=generator).float() * 2 - 1)
            g = torch.randn(shape, generator=generator)
            return eps * g / g.flatten(2).norm(dim=-1).clamp_min(1e-12).view(
                n, x.shape[0], *[1] * (x.ndim - 1))
        if norm == "l2" and dist == "uniform":
            g = torch.randn(shape, generator=generator)
            g = g / g.flatten(2).norm(dim=-1).clamp_min(1e-12).view(n, x.shape[0], *[1] * (x.ndim - 1))
            r = torch.rand(n, x.shape[0], generator=generator) ** (1.0 / d)
            return eps * r.view(n, x.shape[0], *[1] * (x.ndim - 1)) * g
        scale = eps if norm == "linf" else eps / d ** 0.5
        if dist == "uniform":
            delta = (torch.rand(shape, generator=generator) * 2 - 1) * eps
        elif dist == "gaussian":
            delta = torch.randn(shape, generator=generator) * scale
        else:
            u = torch.rand(shape, generator=generator).clamp(1e-7, 1 - 1e-7) - 0.5
            delta = -scale * torch.sign(u) * torch.log1p(-2 * u.abs())
        if norm == "linf":
            return delta.clamp(-eps, eps)
        r = delta.flatten(2).norm(dim=-1).view(n, x.shape[0], *[1] * (x.ndim - 1))
        return delta * torch.clamp(eps / r.clamp_min(1e-12), max=1.0)

    return sample


def pr_fixed(classifier: Callable, X, y, eps: float, norm: str = "linf", dist: str = "uniform",
             n: int = 100, seed: int = 0, only_correct: bool = True,
             clip_range=(0.0, 1.0)) -> RobustnessResult:
    """Probabilistic robustness under a fixed perturbation distribution (the PR baseline).

    Parameters
    ----------
    classifier : callable
        Maps inputs (B, *shape) to logits (B, C); put it in eval mode first.
    X : Tensor or ndarray, shape (N, *shape)
    y : array-like of int, shape (N,)
    eps : float
        Budget radius (> 0).
    norm : {"linf", "l2"}
    dist : {"uniform", "gaussian", "laplace", "corners"}
        See :func:`fixed_sampler`.
    n : int
        Draws per input (brief: 100).
    seed : int
    only_correct : bool
        Evaluate on correctly classified inputs only (default here and in PRBench); ``False``
        averages over every input, as the authors' evaluator does.
    clip_range : (float, float) or None
        Data range; ``X`` must lie in it (a 0-255 image raises) and perturbed inputs are clipped
        to it (None: no range, no clipping).

    Returns
    -------
    RobustnessResult
    """
    eps, norm, n = _check_eps(eps), _check_norm(norm), _check_n(n)
    clip_range = _check_clip(clip_range)
    X, y = as_inputs(X, y)
    check_in_range(X, clip_range)
    check_classifier(classifier, X, y)
    idx = select_inputs(classifier, X, y, only_correct)
    gen = torch.Generator().manual_seed(int(seed))
    per = monte_carlo_pr(classifier, X[idx], y[idx], fixed_sampler(dist, eps, norm, gen), n,
                         clip_range)
    return summarise(per, n, idx, f"pr_{dist}", eps, norm)


# ------------------------------------------------------------------------------------------------
# adversarial robustness
# ------------------------------------------------------------------------------------------------


def _project(delta: torch.Tensor, eps: float, norm: str) -> torch.Tensor:
    if norm == "linf":
        return delta.clamp(-eps, eps)
    r = delta.flatten(1).norm(dim=1).view(-1, *[1] * (delta.ndim - 1))
    return delta * torch.clamp(eps / r.clamp_min(1e-12), max=1.0)


def pgd_attack(classifier: Callable, X: torch.Tensor, y: torch.Tensor, eps: float,
               norm: str = "linf", steps: int = 20, alpha: float | None = None,
               random_start: bool = True, seed: int = 0, clip_range=(0.0, 1.0),
               backend: str = "auto") -> torch.Tensor:
    """Projected gradient descent on the cross-entropy (Madry et al.); returns adversarial inputs.

    ``alpha`` defaults to ``eps / 4`` (brief, Sec. 5). With ``backend="auto"`` torchattacks'
    ``PGD`` is used when it is installed and the setting is L-inf on [0, 1]; otherwise (and with
    ``backend="internal"``) the internal implementation below.

    Returns
    -------
    Tensor, same shape as ``X``: ``X + delta`` with ``||delta||_p <= eps``, clipped to the range.
    """
    eps, norm = _check_eps(eps), _check_norm(norm)
    steps = _check_n(steps, "steps")
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, int | float)
                              or not math.isfinite(alpha) or alpha <= 0):
        raise ValueError(f"alpha (the PGD step) must be a finite number > 0, got {alpha!r}")
    alpha = eps / 4 if alpha is None else float(alpha)
    clip_range = _check_clip(clip_range)
    check_in_range(X, clip_range)
    if backend not in ("auto", "internal", "torchattacks"):
        raise ValueError(f"backend must be auto|internal|torchattacks, got {backend!r}")
    use_ta = (backend == "torchattacks" or (backend == "auto"
              and importlib.util.find_spec("torchattacks") is not None)) \
        and norm == "linf" and clip_range == (0.0, 1.0) and isinstance(classifier, torch.nn.Module)
    if backend == "torchattacks" and not use_ta:
        raise ValueError("torchattacks backend needs an nn.Module, L-inf and inputs in [0, 1]")
    if use_ta:  # pragma: no cover - torchattacks is not installed in CI
        import torchattacks

        torch.manual_seed(seed)
        return torchattacks.PGD(classifier, eps=eps, alpha=alpha, steps=steps,
                                random_start=random_start)(X, y)
    gen = torch.Generator().manual_seed(int(seed))

    def feasible(d: torch.Tensor) -> torch.Tensor:
        # keep X + delta inside the data range after every step (as torchattacks does): a pixel
        # pushed outside would sit behind the clamp with zero gradient and never move again
        d = _project(d, eps, norm)
        return d if clip_range is None else (X + d).clamp(*clip_range) - X

    if random_start:
        delta = feasible((torch.rand(X.shape, generator=gen) * 2 - 1) * eps)
    else:
        delta = torch.zeros_like(X)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    for _ in range(steps):
        delta.requires_grad_(True)
        (grad,) = torch.autograd.grad(loss_fn(classifier(X + delta), y), delta)
        with torch.no_grad():
            if norm == "linf":
                step = alpha * grad.sign()
            else:
                g = grad.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *[1] * (X.ndim - 1))
                step = alpha * grad / g
            delta = feasible(delta + step)
    xa = (X + delta).detach()
    return xa.clamp(*clip_range) if clip_range is not None else xa


def ar_pgd(classifier: Callable, X, y, eps: float, norm: str = "linf", steps: int = 20,
           alpha: float | None = None, seed: int = 0, only_correct: bool = True,
           clip_range=(0.0, 1.0), backend: str = "auto") -> RobustnessResult:
    """Robust accuracy under PGD-``steps`` (an upper estimate of AR) on the evaluated inputs.

    ``per_input`` is 1 where the attack failed; ``extra["x_adv"]`` holds the adversarial
    inputs of the evaluated set.
    """
    eps, norm = _check_eps(eps), _check_norm(norm)
    clip_range = _check_clip(clip_range)
    X, y = as_inputs(X, y)
    check_in_range(X, clip_range)
    check_classifier(classifier, X, y)
    idx = select_inputs(classifier, X, y, only_correct)
    xa = pgd_attack(classifier, X[idx], y[idx], eps, norm, steps, alpha, True, seed, clip_range,
                    backend)
    per = (predict(classifier, xa) == y[idx]).double().numpy()
    return summarise(per, 1, idx, f"pgd{steps}", eps, norm, {"x_adv": xa})


@torch.no_grad()
def exact_ar_grid(classifier: Callable, X, y, eps: float, grid: int = 201,
                  only_correct: bool = True) -> RobustnessResult:
    """Exact AR for 2-D inputs by dense search over the L-inf ball (a ``grid x grid`` lattice).

    An input counts as robust when every lattice point of ``[x - eps, x + eps]^2`` (corners and
    boundary included) is classified as ``y``. Used on two-moons where this is affordable.
    """
    eps = _check_eps(eps)
    grid = _check_n(grid, "grid")
    if grid < 2:
        raise ValueError(f"grid must be >= 2 (a 1-point lattice checks only one corner), got {grid}")
    X, y = as_inputs(X, y)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"exact_ar_grid needs 2-D points of shape (N, 2), got {tuple(X.shape)}")
    check_classifier(classifier, X, y)
    idx = select_inputs(classifier, X, y, only_correct)
    t = torch.linspace(-eps, eps, grid)
    offsets = torch.cartesian_prod(t, t)  # (grid^2, 2)
    per = np.empty(idx.size)
    for j, i in enumerate(idx):
        pred = classifier(X[i].unsqueeze(0) + offsets).argmax(1)
        per[j] = float(bool((pred == y[i]).all()))
    return summarise(per, 1, idx, "ar_exact_grid", eps, "linf")

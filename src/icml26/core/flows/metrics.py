"""Sample-quality metrics for generated samples against reference data.

Sliced Wasserstein (POT), RBF-MMD with the median heuristic, a classifier two-sample test (C2ST),
the Frechet distance between Gaussian fits of features (the formula of FID, Heusel et al. 2017,
arXiv:1706.08500) and a digits feature extractor for a "classifier-FID" on sklearn's 8x8 digits.

All functions take numpy arrays or torch tensors of shape ``(n, D)`` and return Python floats.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg


def _as2d(x, name: str) -> np.ndarray:
    try:
        import torch

        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().double().numpy()
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 2:
        raise ValueError(f"{name} must have shape (n >= 2, D), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = _as2d(a, "a"), _as2d(b, "b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have the same dimension, got {a.shape[1]} and {b.shape[1]}")
    return a, b


@functools.lru_cache(maxsize=64)
def _projections(d: int, n_proj: int, seed: int) -> np.ndarray:
    """POT's ``ot.sliced.get_random_projections(d, n_proj, seed)`` (numpy backend: normals of
    ``RandomState(seed)``, columns normalised), computed once per ``(d, n_proj, seed)`` without
    importing POT and the backends it loads (seconds); read-only."""
    proj = np.random.RandomState(seed).randn(d, n_proj)
    proj = np.asarray(proj / np.sqrt(np.sum(proj**2, 0, keepdims=True)), dtype=np.float64)
    proj.setflags(write=False)
    return proj


def sliced_wasserstein(a, b, *, n_proj: int = 256, seed: int = 0, p: int = 2) -> float:
    """Monte-Carlo sliced p-Wasserstein distance, as ``ot.sliced_wasserstein_distance``.

    The random directions are POT's (``ot.sliced.get_random_projections(D, n_proj, seed)``).
    With equal sample sizes (uniform weights) each projected 1-D distance is the mean of
    ``|sorted(a.theta) - sorted(b.theta)|^p``, computed here directly (the same number as POT's
    quantile-based ``wasserstein_1d`` up to rounding, about 30x faster); unequal sizes go to POT.

    Parameters
    ----------
    a : array (n, D), b : array (m, D)
    n_proj : int, default 256
        Random directions (the brief's choice).
    seed : int
        Seed of the directions, so that arms compared on the same seed share them.
    """
    a, b = _pair(a, b)
    if isinstance(n_proj, bool) or not isinstance(n_proj, int) or n_proj <= 0:
        raise ValueError("n_proj must be a positive int")
    if p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    if a.shape[0] != b.shape[0]:
        import ot

        return float(ot.sliced_wasserstein_distance(a, b, n_projections=n_proj, seed=seed, p=p))
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
        proj = _projections(a.shape[1], n_proj, int(seed))
    else:  # None (fresh directions) or a RandomState: POT's own draw
        import ot

        proj = np.asarray(ot.sliced.get_random_projections(a.shape[1], n_proj, seed), dtype=np.float64)
    pa, pb = np.sort(a @ proj, axis=0), np.sort(b @ proj, axis=0)
    return float(np.mean(np.abs(pa - pb) ** p) ** (1.0 / p))


def mmd_rbf(a, b, *, bandwidth: float | str = "median", unbiased: bool = True) -> float:
    """Squared MMD with ``k(x, y) = exp(-||x - y||^2 / (2 h^2))`` (Gretton et al. 2012, Eq. 3/5).

    Delegates to the shared statistics core (:mod:`icml26.core.stats`: ``GaussianKernel``,
    ``mmd2_unbiased``), whose median heuristic is ``h = sqrt(median ||z_i - z_j||^2 / 2)`` over the
    pooled sample.

    Parameters
    ----------
    bandwidth : float or "median"
        ``h``; the median heuristic by default.
    unbiased : bool, default True
        U-statistic (can be slightly negative) or the biased V-statistic.
    """
    from icml26.core.stats import GaussianKernel, gram_blocks, mmd2_unbiased

    a, b = _pair(a, b)
    if bandwidth == "median":
        kernel = GaussianKernel.median(np.concatenate([a, b]))
    elif isinstance(bandwidth, str):
        raise ValueError(f"bandwidth must be a positive float or 'median', got {bandwidth!r}")
    else:
        kernel = GaussianKernel(bandwidth=bandwidth)
    kxx, kyy, kxy = gram_blocks(kernel(np.concatenate([a, b])), len(a))
    if unbiased:
        return mmd2_unbiased(kxx, kyy, kxy)
    return float(kxx.mean() + kyy.mean() - 2 * kxy.mean())


def c2st(a, b, *, folds: int = 5, seed: int = 0, classifier: str = "mlp") -> float:
    """Classifier two-sample test accuracy (0.5 = indistinguishable), as sbi's ``c2st``.

    Parameters
    ----------
    classifier : {"mlp", "logistic", "quadratic"}
        sklearn ``MLPClassifier`` (two hidden layers of 10 x D, as sbi), ``LogisticRegression``,
        or logistic regression on degree-2 polynomial features (the Bayes-optimal classifier
        family between two Gaussians, and much faster than the MLP; used by tfmpe).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    a, b = _pair(a, b)
    x = np.concatenate([a, b])
    y = np.concatenate([np.zeros(len(a)), np.ones(len(b))])
    x = StandardScaler().fit_transform(x)
    if classifier == "mlp":
        d = x.shape[1]
        clf = MLPClassifier(hidden_layer_sizes=(10 * d, 10 * d), max_iter=1000, random_state=seed)
    elif classifier == "logistic":
        clf = LogisticRegression(max_iter=1000)
    elif classifier == "quadratic":
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import PolynomialFeatures

        clf = make_pipeline(PolynomialFeatures(2, include_bias=False), StandardScaler(),
                            LogisticRegression(max_iter=2000))
    else:
        raise ValueError(f"classifier must be 'mlp', 'logistic' or 'quadratic', got {classifier!r}")
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return float(np.mean(cross_val_score(clf, x, y, cv=cv, scoring="accuracy")))


def frechet_distance(mu1, cov1, mu2, cov2) -> float:
    """``||mu1 - mu2||^2 + tr(C1 + C2 - 2 (C1 C2)^{1/2})`` (FID's formula)."""
    mu1, mu2 = np.asarray(mu1, float), np.asarray(mu2, float)
    cov1, cov2 = np.atleast_2d(cov1).astype(float), np.atleast_2d(cov2).astype(float)
    if mu1.shape != mu2.shape or cov1.shape != cov2.shape or cov1.shape != (mu1.size, mu1.size):
        raise ValueError("inconsistent shapes of means and covariances")
    with warnings.catch_warnings():  # singular covariances (dead ReLU features) are expected
        warnings.simplefilter("ignore")
        covmean = linalg.sqrtm(cov1 @ cov2)
        if not np.isfinite(covmean).all():  # near-singular product: regularise, as pytorch-fid
            off = np.eye(cov1.shape[0]) * 1e-6
            covmean = linalg.sqrtm((cov1 + off) @ (cov2 + off))
    covmean = np.real(covmean)
    return float(((mu1 - mu2) ** 2).sum() + np.trace(cov1) + np.trace(cov2) - 2 * np.trace(covmean))


def frechet_from_features(fa, fb) -> float:
    """Frechet distance between Gaussian fits of two feature sets ``(n, F)``, ``(m, F)``."""
    fa, fb = _pair(fa, fb)
    return frechet_distance(fa.mean(0), np.cov(fa, rowvar=False), fb.mean(0), np.cov(fb, rowvar=False))


@dataclass
class DigitsFeatures:
    """Penultimate features of a small MLP classifier trained on 8x8 digits (a stand-in for
    Inception features, which would need a download).

    ``fit(x, y)`` trains ``sklearn.neural_network.MLPClassifier(hidden_layer_sizes=(hidden,))``;
    ``features(x) = relu(x W1 + b1)`` (from ``coefs_``), ``predict_proba`` gives confidences.
    """

    hidden: int = 64
    seed: int = 0
    max_iter: int = 400

    def fit(self, x, y) -> DigitsFeatures:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier

        x = _as2d(x, "x")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.clf_ = MLPClassifier(hidden_layer_sizes=(self.hidden,), max_iter=self.max_iter,
                                      random_state=self.seed).fit(x, np.asarray(y))
        return self

    def features(self, x) -> np.ndarray:
        x = _as2d(x, "x")
        return np.maximum(x @ self.clf_.coefs_[0] + self.clf_.intercepts_[0], 0.0)

    def confidence(self, x) -> float:
        """Mean max-class probability of the classifier on ``x``."""
        return float(self.clf_.predict_proba(_as2d(x, "x")).max(1).mean())


def classifier_fid(samples, ref, feature_fn) -> float:
    """Frechet distance between ``feature_fn(samples)`` and ``feature_fn(ref)``."""
    return frechet_from_features(feature_fn(samples), feature_fn(ref))


def norm_ratio(samples, ref) -> float:
    """``E||x_hat|| / E||x||``: the "integration lag" proxy (< 1: samples short of the data)."""
    a, b = _pair(samples, ref)
    return float(np.linalg.norm(a, axis=1).mean() / np.linalg.norm(b, axis=1).mean())


def std_ratio(samples, ref) -> float:
    """Mean per-coordinate std of the samples over that of the reference."""
    a, b = _pair(samples, ref)
    return float(a.std(0).mean() / b.std(0).mean())

"""NPPR: non-parametric probabilistic robustness with a learned GMM perturbation distribution.

Wang, Zhang, Khastgir, Maple, Zhao, "Non-Parametric Probabilistic Robustness: A Conservative
Metric with Optimized Perturbation Distributions", arXiv 2511.17380 (ICML 2026). Authors' code:
https://github.com/squarewang2077/nppr (read for defaults; nothing copied).

>>> from icml26.papers.nppr import NPPREstimator, pr_fixed, ar_pgd   # doctest: +SKIP
>>> est = NPPREstimator(model, model.features, eps=0.1, cond="xy").fit(X_train, y_train)
>>> est.evaluate(X_test, y_test, n=100).mean      # <= pr_fixed(model, X_test, y_test, 0.1).mean
"""

from .estimator import NPPREstimator, softplus_margin_loss
from .gmm import (
    BicubicDecoder,
    GMMPerturbation,
    LinearDecoder,
    MixtureParams,
    make_decoder,
    project_to_ball,
)
from .robustness import (
    RobustnessResult,
    ar_pgd,
    clopper_pearson,
    exact_ar_grid,
    pgd_attack,
    pr_fixed,
    prob_accuracy,
)

PAPER = {
    "slug": "nppr",
    "title": "Non-Parametric Probabilistic Robustness: A Conservative Metric with Optimized "
             "Perturbation Distributions",
    "arxiv": "2511.17380",
    "code": "https://github.com/squarewang2077/nppr",
}

__all__ = [
    "PAPER",
    "BicubicDecoder",
    "GMMPerturbation",
    "LinearDecoder",
    "MixtureParams",
    "NPPREstimator",
    "RobustnessResult",
    "ar_pgd",
    "clopper_pearson",
    "exact_ar_grid",
    "make_decoder",
    "pgd_attack",
    "pr_fixed",
    "prob_accuracy",
    "project_to_ball",
    "softplus_margin_loss",
]

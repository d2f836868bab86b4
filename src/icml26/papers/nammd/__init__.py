"""NAMMD: norm-adaptive MMD for distribution closeness testing (arXiv 2507.12843).

Zhou, Peng, Tian, (Gong,) Liu. "A Kernel Distribution Closeness Testing" (v1) / "Are Two Datasets
Close Enough With Statistical Significance? A Kernel Distributional Closeness Testing Approach" (v3).
Official code: https://github.com/zhijianzhouml/NAMMD. Its files were read through the public code
index (the repository itself could not be fetched): its closeness-test variance (``utils.py``,
``_asymptotic_values``) is the ``"official"`` variance option here (alias ``"paper"``; implemented
exactly, :func:`~icml26.papers.nammd.statistic.official_mmd_variance`), its per-statistic bandwidth
selection (``kernel_selection.py``) is :func:`select_bandwidth`.
"""

from icml26.core.stats import GaussianKernel, mmd2_u

from .bandwidth import learn_bandwidth, power_proxy, select_bandwidth
from .closeness import (
    DEFAULT_VARIANCE,
    ClosenessTestResult,
    mmd_closeness_test,
    nammd_closeness_test,
    reference_epsilon,
)
from .drift import NAMMDDrift
from .statistic import NAMMDStats, nammd, nammd_from_gram, nammd_population_gaussian
from .two_sample import TwoSampleTestResult, mmd_two_sample_test, nammd_two_sample_test

PAPER = {
    "title": "A Kernel Distribution Closeness Testing",
    "arxiv": "2507.12843",
    "code": "https://github.com/zhijianzhouml/NAMMD",
}

__all__ = [
    "DEFAULT_VARIANCE",
    "PAPER",
    "ClosenessTestResult",
    "GaussianKernel",
    "NAMMDDrift",
    "NAMMDStats",
    "TwoSampleTestResult",
    "mmd2_u",
    "mmd_closeness_test",
    "mmd_two_sample_test",
    "nammd",
    "nammd_closeness_test",
    "nammd_from_gram",
    "nammd_population_gaussian",
    "nammd_two_sample_test",
    "reference_epsilon",
    "learn_bandwidth",
    "power_proxy",
    "select_bandwidth",
]

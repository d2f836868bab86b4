"""Shared statistics core: Gaussian kernels, unbiased MMD^2, permutation machinery, CIs.

Used by papers that need kernel two-sample statistics (nammd; an RBF-MMD metric for
velocity_deficit; confidence intervals for nppr). Cores never import papers.
"""

from icml26.core.validation import (
    as_sample_pair,
    as_samples,
    check_positive_int,
    check_probability,
)

from .intervals import mean_confidence_interval, wilson_interval
from .kernels import GaussianKernel, median_bandwidth, pairwise_sq_dists
from .mmd import (
    gaussian_kernel_expectation,
    gram_blocks,
    h1_variance,
    h_matrix,
    mmd2_gaussian,
    mmd2_paired,
    mmd2_u,
    mmd2_unbiased,
    pooled_gram,
    u_statistic_variance,
)
from .permutation import BlockSums, permutation_indices, permutation_pvalue, permuted_block_sums

__all__ = [
    "BlockSums",
    "GaussianKernel",
    "as_sample_pair",
    "as_samples",
    "check_positive_int",
    "check_probability",
    "gaussian_kernel_expectation",
    "gram_blocks",
    "h1_variance",
    "h_matrix",
    "mean_confidence_interval",
    "median_bandwidth",
    "mmd2_gaussian",
    "mmd2_paired",
    "mmd2_u",
    "mmd2_unbiased",
    "pairwise_sq_dists",
    "permutation_indices",
    "permutation_pvalue",
    "permuted_block_sums",
    "pooled_gram",
    "u_statistic_variance",
    "wilson_interval",
]

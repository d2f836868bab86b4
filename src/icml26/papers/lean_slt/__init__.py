"""lean_slt — a numerical companion to the Lean 4 formalisation of statistical learning theory.

Paper: Zhang, Lee, Liu, *Statistical Learning Theory in Lean 4: Empirical Processes from Scratch*
(ICML 2026; arXiv 2602.02285; Lean code ``YuanheZ/lean-stat-learning-theory``).

The paper's artifact is machine-checked Lean proofs. **Nothing in this package checks Lean**: no
Lean toolchain or Mathlib is available here. What it provides is the numerical counterpart a
statistician uses next to the formal library — the objects and bounds of the formalised theorems
(covering numbers, metric entropy, Dudley's integral, Gaussian concentration, local Gaussian
complexity, critical radius, the master error bound, an ℓ₁-constrained least-squares estimator)
and :data:`THEOREMS`, a catalogue whose every inequality is checked on concrete instances (exactly
where possible, by Monte Carlo with confidence bounds otherwise), each with a negative control and a
statement of what it can and cannot detect. A row that holds is "numerically consistent on N
instances", never "proved". The Lean statement text of every row is vendored (Apache-2.0) in
:mod:`icml26.papers.lean_slt.lean` so that tests tie each row's name and constants to the source.

Example
-------
>>> import numpy as np
>>> from icml26.papers.lean_slt import THEOREMS
>>> res = THEOREMS["T13"].check(np.random.default_rng(0), 1000)
>>> res.status, res.violated
('exact-pass', False)
>>> res.verdict_text
'numerically consistent on 40 instances (exact)'
"""

from .catalogue import (
    LEAN_COMMIT,
    LEAN_REPO,
    THEOREMS,
    CheckResult,
    TheoremSpec,
    catalogue_text,
    run_catalogue,
)
from .chaining import (
    DUDLEY_CONSTANT,
    brownian_entropy_integral,
    dudley_bound,
    dudley_integral,
    expected_chi,
    expected_max_abs_gaussian,
    expected_max_gaussian_with_zero,
    finite_max_bound,
    l2_ball_entropy_integral_lower,
    one_step_discretization_rhs,
)
from .concentration import (
    clopper_pearson,
    gaussian_lipschitz_cgf_bound,
    gaussian_lipschitz_tail_bound,
    irwin_hall_cdf,
    small_ball_bound,
)
from .covering import (
    covering_number_greedy,
    euclidean_ball_covering_bound,
    greedy_net_indices,
    is_eps_net,
    l1_ball_covering_bound,
    maurey_expected_sq_error,
    maurey_net_point,
    maurey_sample_size,
    metric_entropy,
    net_radius,
    packing_number_greedy,
    sample_l1_ball,
    sample_l2_ball,
)
from .functionals import (
    bernoulli_lsi_rhs,
    conditional_entropy_sum,
    efron_stein_rhs,
    entropy,
    entropy_dual_objective,
    entropy_dual_objective_T,
    gaussian_lsi_sides,
    gaussian_poincare_sides,
    han_rhs,
    hypercube,
    optimal_dual_variable,
    variance,
)
from .lean import lean_statements
from .least_squares import (
    FORMAL_LINEAR_C1,
    FORMAL_LINEAR_C2,
    LOCAL_COMPLEXITY_CONSTANT,
    L1ConstrainedLeastSquares,
    MasterBound,
    bad_event_probability_bound,
    critical_radius,
    empirical_norm,
    formal_linear_critical_radius,
    l1_constrained_path,
    linear_class_complexity,
    linear_critical_radius,
    linear_minimax_rank_bound,
    local_complexity_dudley_bound,
    local_gaussian_complexity,
    master_error_bound,
    project_l1_ball,
    star_hull_sup,
)

__all__ = [
    "THEOREMS", "TheoremSpec", "CheckResult", "run_catalogue", "catalogue_text", "LEAN_REPO", "LEAN_COMMIT",
    "DUDLEY_CONSTANT", "dudley_integral", "dudley_bound", "finite_max_bound", "expected_chi",
    "expected_max_abs_gaussian", "expected_max_gaussian_with_zero", "l2_ball_entropy_integral_lower",
    "brownian_entropy_integral", "one_step_discretization_rhs", "lean_statements",
    "irwin_hall_cdf", "small_ball_bound", "gaussian_lipschitz_tail_bound", "gaussian_lipschitz_cgf_bound",
    "clopper_pearson",
    "greedy_net_indices", "covering_number_greedy", "packing_number_greedy", "is_eps_net", "net_radius",
    "euclidean_ball_covering_bound", "l1_ball_covering_bound", "metric_entropy", "maurey_sample_size",
    "maurey_net_point", "maurey_expected_sq_error", "sample_l2_ball", "sample_l1_ball",
    "hypercube", "entropy", "variance", "efron_stein_rhs", "conditional_entropy_sum", "han_rhs",
    "bernoulli_lsi_rhs", "entropy_dual_objective", "optimal_dual_variable", "entropy_dual_objective_T",
    "gaussian_poincare_sides", "gaussian_lsi_sides",
    "empirical_norm", "linear_class_complexity", "linear_critical_radius", "formal_linear_critical_radius",
    "FORMAL_LINEAR_C1", "FORMAL_LINEAR_C2", "local_gaussian_complexity", "star_hull_sup", "critical_radius",
    "master_error_bound", "project_l1_ball", "L1ConstrainedLeastSquares", "MasterBound",
    "bad_event_probability_bound", "local_complexity_dudley_bound", "linear_minimax_rank_bound",
    "LOCAL_COMPLEXITY_CONSTANT", "l1_constrained_path",
]

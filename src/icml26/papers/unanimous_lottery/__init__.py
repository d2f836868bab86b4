"""Unanimously acceptable lotteries from accept/reject queries (Choo, Goldberg & Teh, arXiv 2604.17505).

Find a lottery over m alternatives that every one of n stakeholders accepts (``<u_i, x> >= tau_i``)
when the only access is a membership query "does stakeholder i accept lottery x?", or certify that
none exists, with few queries. Algorithms 1-3 of the paper, its learning-augmented variant
(Theorem 5.1), a lottery-advice extension (ours), full elicitation as the baseline, instance
families (including the lower-bound families of Theorems 4.1-4.2) and offline exact checks.
"""

from .algorithms import (
    ACCEPT_ALL,
    REJECT_ALL,
    Halfspace,
    LotteryResult,
    bisection_steps,
    deterministic,
    find_unanimous_lottery,
    full_elicitation,
    learn_hyperplane,
    learning_cost,
    randomized,
    with_lottery_advice,
    with_order_advice,
)
from .exact import select_lexmax
from .instances import (
    basis_at,
    basis_first,
    certificate_is_infeasible,
    exact_feasibility,
    highs_feasible,
    nested_adversarial,
    nested_verification,
    one_agent_family,
    perturbed_lottery,
    planted_feasible,
    planted_infeasible,
    singleton_family,
    thm33_envelope,
    thm34_envelope,
    thm34_rounds_bound,
    thm41_lower,
    thm51_envelope,
    true_halfspace,
)
from .oracle import (
    AcceptanceOracle,
    Instance,
    Lottery,
    OracleInconsistencyError,
    accepts,
    as_lottery,
)

PAPER = {
    "title": "Learning Unanimously Acceptable Lotteries via Queries",
    "authors": "Davin Choo, Paul W. Goldberg, Nicholas Teh",
    "arxiv": "2604.17505",
    "code_url": None,
}

__all__ = [
    "ACCEPT_ALL", "REJECT_ALL", "Halfspace", "LotteryResult", "AcceptanceOracle", "Instance",
    "Lottery", "OracleInconsistencyError", "accepts", "as_lottery", "bisection_steps",
    "learning_cost", "learn_hyperplane", "select_lexmax", "full_elicitation", "deterministic",
    "randomized", "with_order_advice", "with_lottery_advice", "find_unanimous_lottery",
    "planted_feasible", "planted_infeasible", "nested_adversarial", "singleton_family",
    "one_agent_family", "true_halfspace", "exact_feasibility", "highs_feasible",
    "certificate_is_infeasible", "basis_first", "basis_at", "perturbed_lottery", "thm33_envelope",
    "thm34_rounds_bound", "thm34_envelope", "thm41_lower", "thm51_envelope", "nested_verification",
    "PAPER",
]

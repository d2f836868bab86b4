"""Iterative regret-minimization fine-tuning (Park, Chen, Ozdaglar & Zhang, arXiv 2511.04393).

Roll out L trajectories per task with the current model, keep the k lowest-regret ones, fine-tune
on them, repeat. Numerical-transformer track: :class:`NumericalDecisionTransformer`,
:func:`iterative_rmft`, the ablations (``selection="random" | "reward"``, :func:`distill_policy`)
and :func:`evaluate_regret`; environments and classical baselines live in :mod:`icml26.core.rl`.
"""

from .model import NumericalDecisionTransformer
from .rmft import (
    RMFTConfig,
    RMFTHistory,
    Trajectories,
    distill_policy,
    evaluate_regret,
    iterative_rmft,
    rollout,
    select,
    sft,
)

__all__ = [
    "NumericalDecisionTransformer", "RMFTConfig", "RMFTHistory", "Trajectories", "distill_policy",
    "evaluate_regret", "iterative_rmft", "rollout", "select", "sft",
]

"""Iterative regret-minimization fine-tuning (Park, Chen, Ozdaglar & Zhang, arXiv 2511.04393).

Roll out L trajectories per task with the current model, keep the k lowest-regret ones, fine-tune
on them, repeat. Numerical-transformer track: :class:`NumericalDecisionTransformer`,
:func:`iterative_rmft`, the ablations (``selection="random" | "reward"``, :func:`distill_policy`)
and :func:`evaluate_regret`; environments and classical baselines live in :mod:`icml26.core.rl`.
Text track (:mod:`.text`): a tiny LM behind ``core.llm.TinyLMChat`` writing a rationale then its
action (:func:`make_text_agent`, :func:`warm_start`, :func:`text_rollout`,
:func:`iterative_rmft_text`, :func:`evaluate_text`, the grammar :func:`parse_response`).
Experts track (:mod:`.experts`): :func:`iterative_rmft_experts`, :func:`evaluate_experts`.
"""

from .experts import evaluate_experts, experts_features, experts_rollout, iterative_rmft_experts
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
from .text import (
    ParsedResponse,
    TextRMFTHistory,
    TextTrajectories,
    evaluate_text,
    iterative_rmft_text,
    make_text_agent,
    parse_response,
    rationale_consistent,
    rationale_grounded,
    rationale_valid,
    render_prompt,
    render_response,
    text_rollout,
    warm_start,
)

__all__ = [
    "NumericalDecisionTransformer", "RMFTConfig", "RMFTHistory", "Trajectories", "distill_policy",
    "evaluate_regret", "iterative_rmft", "rollout", "select", "sft",
    "ParsedResponse", "TextRMFTHistory", "TextTrajectories", "evaluate_text", "iterative_rmft_text",
    "make_text_agent", "parse_response", "rationale_consistent", "rationale_grounded", "rationale_valid", "render_prompt",
    "render_response", "text_rollout", "warm_start", "evaluate_experts", "experts_features",
    "experts_rollout", "iterative_rmft_experts",
]

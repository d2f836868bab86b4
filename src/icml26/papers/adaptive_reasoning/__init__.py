"""Robust adaptive reasoning: verbosity-augmented SFT + GRPO (ICML 2026, paper 6).

*When Simple Problems Wear Complex Costumes: Improving Efficiency in LRM's Adaptive Reasoning*
(no arXiv id or code public). See README.md for what follows the paper and what is filled in
from AdaptThink (arXiv:2505.13417) and Thinkless (arXiv:2505.13379).
"""

from .rewards import accuracy_reward, adaptthink_reward, oracle_mode_reward, thinkless_reward
from .task import (
    CELLS,
    FILLER_WORDS,
    CostumeArithmetic,
    ModeFormat,
    evaluate_chain,
    make_tokenizer,
    render,
)
from .trainer import (
    AdaptiveReasonerConfig,
    encode_prompt,
    evaluate_modes,
    reference_think_accuracy,
    sft_examples,
    train_adaptive_reasoner,
)

PAPER = {
    "title": "When Simple Problems Wear Complex Costumes: Improving Efficiency in LRM's Adaptive Reasoning",
    "arxiv": None,
    "code": None,
    "url": "https://icml.cc/virtual/2026/poster/62755",
}

__all__ = [
    "CELLS", "FILLER_WORDS", "PAPER", "AdaptiveReasonerConfig", "CostumeArithmetic", "ModeFormat",
    "accuracy_reward", "adaptthink_reward", "encode_prompt", "evaluate_chain", "evaluate_modes",
    "make_tokenizer", "oracle_mode_reward", "reference_think_accuracy", "render", "sft_examples",
    "thinkless_reward", "train_adaptive_reasoner",
]

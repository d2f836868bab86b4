"""MAGIC (arXiv 2602.01539): attacker-defender co-evolution by alternating GRPO, as reusable pieces.

The intent language and rule judge (``language``), the reward functions of Eq. 7-11 in TRL's
signature (``rewards``), the guard-model judge through ``icml26.core.llm`` (``guard``, opt-in),
and the game on tiny LMs: attack-pool SFT, alternating GRPO schedule, evaluation (``game``).
"""

from .game import (
    Agent,
    AlternatingGRPO,
    AlternatingSchedule,
    GameConfig,
    GameHistory,
    adaptive_asr,
    adaptive_asr_curve,
    asr,
    attack_pool,
    attacker_grpo_step,
    attacker_programs,
    defender_grpo_step,
    helpfulness,
    make_agents,
    novelty,
    pretrain_attacker,
    refusal_rate,
    sft_attacker,
    sft_defender,
)
from .guard import GuardJudge, LearnedGuard, guard_features
from .language import GrammarError, IntentLanguage, RuleJudge, Seed, ShallowReader, parse_program
from .rewards import (
    AttackerReward,
    DefenderReward,
    extract_answer,
    format_ok,
    format_reward,
    harm_reward,
    refusal_reward,
)

__all__ = [
    "Agent", "AlternatingGRPO", "AlternatingSchedule", "AttackerReward", "DefenderReward", "GameConfig",
    "GameHistory", "GrammarError", "GuardJudge", "IntentLanguage", "LearnedGuard", "RuleJudge", "Seed",
    "ShallowReader", "adaptive_asr", "adaptive_asr_curve", "asr", "attack_pool", "attacker_grpo_step",
    "attacker_programs", "defender_grpo_step", "extract_answer", "format_ok", "format_reward",
    "guard_features", "harm_reward", "helpfulness", "make_agents", "novelty", "parse_program",
    "pretrain_attacker", "refusal_rate", "refusal_reward", "sft_attacker", "sft_defender",
]

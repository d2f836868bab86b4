"""The harness: registry, configs with profiles, claims, tuning, runner, result files, report."""

from .claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    ClaimArms,
    Decision,
    Regime,
    all_of,
    mean_se,
    paired_claim,
    paired_improvement,
    per_regime,
    threshold_rule,
)
from .config import BUDGET_S, PROFILES, ConfigError, ExperimentConfig
from .pins import assert_pinned
from .registry import PAPERS, PaperInfo, UnknownPaperError, get_paper, implemented_papers
from .runner import SeedOutput, run_many, run_paper
from .seeding import seed_everything, torch_generator
from .tuning import Tuned, TuningSpec, tune, tune_arms

__all__ = [
    "BUDGET_S", "INCONCLUSIVE", "NOT_REPRODUCED", "PAPERS", "PROFILES", "REPRODUCED", "Claim",
    "ClaimArms", "ConfigError", "Decision", "ExperimentConfig", "PaperInfo", "Regime",
    "SeedOutput", "Tuned", "TuningSpec", "UnknownPaperError", "all_of", "assert_pinned",
    "get_paper", "implemented_papers", "mean_se", "paired_claim", "paired_improvement", "per_regime",
    "run_many", "run_paper", "seed_everything", "threshold_rule", "torch_generator", "tune",
    "tune_arms",
]

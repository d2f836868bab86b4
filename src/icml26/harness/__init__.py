"""The harness: registry, configs with profiles, claims, runner, result files and the report."""

from .claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Decision,
    all_of,
    mean_se,
    paired_improvement,
    threshold_rule,
)
from .config import BUDGET_S, PROFILES, ConfigError, ExperimentConfig
from .registry import PAPERS, PaperInfo, UnknownPaperError, get_paper, implemented_papers
from .runner import SeedOutput, run_many, run_paper
from .seeding import seed_everything, torch_generator

__all__ = [
    "BUDGET_S", "INCONCLUSIVE", "NOT_REPRODUCED", "PAPERS", "PROFILES", "REPRODUCED", "Claim",
    "ConfigError", "Decision", "ExperimentConfig", "PaperInfo", "SeedOutput", "UnknownPaperError",
    "all_of", "get_paper", "implemented_papers", "mean_se", "paired_improvement", "run_many",
    "run_paper", "seed_everything", "threshold_rule", "torch_generator",
]

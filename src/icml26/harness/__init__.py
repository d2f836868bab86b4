"""The harness: registry, configs with profiles, claims, tuning, runner, result files, report."""

from .claims import (
    INCONCLUSIVE,
    NOT_CONSISTENT,
    NOT_REPRODUCED,
    NUMERICALLY_CONSISTENT,
    REPRODUCED,
    Claim,
    ClaimArms,
    Decision,
    Regime,
    SubstrateCheck,
    all_of,
    exact,
    mean_se,
    noninferior,
    paired_claim,
    paired_improvement,
    per_regime,
    superior,
    threshold_rule,
)
from .config import BUDGET_S, PROFILES, ConfigError, ExperimentConfig
from .metrics import MetricTable, UndeclaredMetricError
from .pins import assert_pinned
from .registry import PAPERS, PaperInfo, UnknownPaperError, get_paper, implemented_papers
from .runner import SeedOutput, run_many, run_paper
from .seeding import seed_everything, torch_generator
from .tuning import Tuned, TuningSpec, tune, tune_arms

__all__ = [
    "BUDGET_S", "INCONCLUSIVE", "NOT_CONSISTENT", "NOT_REPRODUCED", "NUMERICALLY_CONSISTENT",
    "PAPERS", "SubstrateCheck", "exact", "noninferior", "superior", "PROFILES", "REPRODUCED", "Claim",
    "ClaimArms", "ConfigError", "Decision", "ExperimentConfig", "MetricTable", "PaperInfo", "Regime",
    "SeedOutput", "Tuned", "TuningSpec", "UnknownPaperError", "all_of", "assert_pinned",
    "get_paper", "implemented_papers", "mean_se", "paired_claim", "paired_improvement", "per_regime",
    "run_many", "run_paper", "seed_everything", "threshold_rule", "torch_generator", "tune",
    "tune_arms", "UndeclaredMetricError",
]

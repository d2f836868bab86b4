"""The registry of the 19 papers of ``shared/seed/papers.md``.

Metadata only: importing this module imports no paper code (and no torch). A paper counts as
implemented when its subpackage ships an ``experiment`` module; otherwise ``icml26 list`` says
"not implemented" and no command pretends otherwise.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType


class UnknownPaperError(LookupError):
    """No paper has this slug."""


@dataclass(frozen=True)
class PaperInfo:
    number: int
    slug: str
    title: str
    short: str
    arxiv: str | None
    code_url: str | None
    api: str = ""  # the main entry point(s), e.g. "icml26.papers.nammd.nammd_closeness_test"
    module: str | None = None  # defaults to icml26.papers.<slug>; tests register their own

    @property
    def module_name(self) -> str:
        return self.module or f"icml26.papers.{self.slug}"

    @property
    def implemented(self) -> bool:
        try:
            return importlib.util.find_spec(f"{self.module_name}.experiment") is not None
        except ModuleNotFoundError:
            return False

    @property
    def url(self) -> str | None:
        return f"https://arxiv.org/abs/{self.arxiv}" if self.arxiv else None

    def experiment(self) -> ModuleType:
        if not self.implemented:
            raise NotImplementedError(f"paper {self.slug!r} is not implemented yet")
        return importlib.import_module(f"{self.module_name}.experiment")


# number, slug, title (arXiv/ICML), one-line description, arXiv id, code URL (None: none public).
# Sources: shared/seed/papers.md and the briefs in shared/papers/<slug>.md.
_PAPERS: tuple[PaperInfo, ...] = (
    PaperInfo(1, "syvla", "Scaling by Diversified Experience for Vision-Language-Action Models",
              "SyVLA: VLA with intention decoupling and similar-sample guided RL", "2606.09009", None,
              "icml26.papers.syvla.SyVLAPolicy, icml26.papers.syvla.IntentionDecoupler, "
              "icml26.papers.syvla.SSGRLTrainer"),
    PaperInfo(2, "transport_kl",
              "Well-Posed KL-Regularized Control via Wasserstein and Kalman-Wasserstein KL Divergences",
              "Transport-geometry analogs of KL for KL-regularized optimal control", "2602.02250", None,
              "icml26.papers.transport_kl.kl_regularized_lqr"),
    PaperInfo(3, "disempowerment", "Who's in Charge? Disempowerment Patterns in Real-World LLM Usage",
              "Disempowerment patterns in real-world AI assistant conversations", "2601.19062", None,
              "icml26.papers.disempowerment.analyze"),
    PaperInfo(4, "lean_slt", "Statistical Learning Theory in Lean 4: Empirical Processes from Scratch",
              "Lean 4 formalization of statistical learning theory (numerical companion)", "2602.02285",
              "https://github.com/YuanheZ/lean-stat-learning-theory",
              "icml26.papers.lean_slt.THEOREMS"),
    PaperInfo(5, "eco", "ECO: Quantized Training without Full-Precision Master Weights",
              "ECO: error-compensating optimizer without master weights", "2601.22101", None,
              "icml26.papers.eco.ECOAdamW"),
    PaperInfo(6, "adaptive_reasoning",
              "When Simple Problems Wear Complex Costumes: Improving Efficiency in LRM's Adaptive Reasoning",
              "Robust adaptive reasoning: verbosity-augmented SFT + GRPO", None, None,
              "icml26.papers.adaptive_reasoning.train_adaptive_reasoner"),
    PaperInfo(7, "magic", "MAGIC: A Co-Evolving Attacker-Defender Adversarial Game for Robust LLM Safety",
              "MAGIC: attacker/defender multi-agent RL for safety alignment", "2602.01539",
              "https://github.com/BattleWen/MAGIC",
              "icml26.papers.magic.AlternatingGRPO, icml26.papers.magic.DefenderReward, "
              "icml26.papers.magic.AttackerReward"),
    PaperInfo(8, "nppr",
              "Non-Parametric Probabilistic Robustness: A Conservative Metric with Optimized "
              "Perturbation Distributions",
              "NPPR: non-parametric probabilistic robustness with a learned GMM perturbation", "2511.17380",
              "https://github.com/squarewang2077/nppr", "icml26.papers.nppr.NPPREstimator"),
    PaperInfo(9, "velocity_deficit", "The Velocity Deficit: Initial Energy Injection for Flow Matching",
              "Flow-matching velocity deficit: MAFM and the Scale Schedule Corrector", "2605.14819", None,
              "icml26.papers.velocity_deficit.ScaleScheduleCorrector"),
    PaperInfo(10, "dicode", "Dreaming in Code for Curriculum Learning in Open-Ended Worlds",
              "DiCode: environment curricula written as code (Craftax)", "2602.08194",
              "https://github.com/konstantinosmitsides/dreaming-in-code",
              "icml26.papers.dicode.LevelArchive, icml26.papers.dicode.compile_levels, "
              "icml26.papers.dicode.ProgrammaticDreamer"),
    PaperInfo(11, "iterative_rmft",
              "Post-Training LLMs as Better Decision-Making Agents: A Regret-Minimization Approach",
              "Iterative regret-minimization fine-tuning (RMFT)", "2511.04393", None,
              "icml26.papers.iterative_rmft.iterative_rmft"),
    PaperInfo(12, "ecg_r1", "ECG-R1: Protocol-Guided and Modality-Agnostic MLLM for Reliable ECG Interpretation",
              "ECG-R1: reliable reasoning ECG interpretation", "2602.04279",
              "https://github.com/PKUDigitalHealth/ECG-R1",
              "icml26.papers.ecg_r1.ECGProtocol, icml26.papers.ecg_r1.measure, "
              "icml26.papers.ecg_r1.InterleavedModalityDropout, icml26.papers.ecg_r1.key_evidence_reward"),
    PaperInfo(13, "verbalized_bp", "Verbalized Bayesian Persuasion",
              "Verbalized Bayesian persuasion", "2502.01587", None,
              "icml26.papers.verbalized_bp.solve_persuasion_lp, icml26.papers.verbalized_bp.find_equilibrium"),
    PaperInfo(14, "tfmpe", "Tokenised Flow Matching for Hierarchical Simulation Based Inference",
              "TFMPE: tokenised flow matching for hierarchical SBI", "2604.20723",
              "https://github.com/mrc-ide/tfmpe", "icml26.papers.tfmpe.TFMPE"),
    PaperInfo(15, "latmix", "LATMiX: Learnable Affine Transformations for Microscaling Quantization of LLMs",
              "LATMiX: learnable affine transforms for MX quantization", "2602.17681", None,
              "icml26.papers.latmix.quantize_"),
    PaperInfo(16, "unanimous_lottery", "Learning Unanimously Acceptable Lotteries via Queries",
              "Unanimously acceptable lotteries from accept/reject queries", "2604.17505", None,
              "icml26.papers.unanimous_lottery.find_unanimous_lottery"),
    PaperInfo(17, "ms_flow", "Trajectory Stitching for Solving Inverse Problems with Flow-Based Models",
              "MS-Flow: multiple shooting for flow-prior inverse problems", "2602.08538", None,
              "icml26.papers.ms_flow.ms_flow"),
    PaperInfo(18, "tie_alignment", "When Labelers Stay Silent: The Power of Ties in Cost-Effective Preference Learning",
              "Silent-aware (tie-aware) preference alignment", None, None,
              "icml26.papers.tie_alignment.preference_loss"),
    PaperInfo(19, "nammd",
              "Are Two Datasets Close Enough With Statistical Significance? A Kernel Distributional "
              "Closeness Testing Approach",
              "NAMMD: norm-adaptive MMD distribution closeness testing", "2507.12843",
              "https://github.com/zhijianzhouml/NAMMD", "icml26.papers.nammd.nammd_closeness_test"),
)

PAPERS: dict[str, PaperInfo] = {p.slug: p for p in _PAPERS}


def get_paper(slug: str) -> PaperInfo:
    """Look up a paper by slug; a clear error names the known slugs."""
    try:
        return PAPERS[slug]
    except KeyError:
        raise UnknownPaperError(f"unknown paper {slug!r}; known: {', '.join(PAPERS)}") from None


def register(info: PaperInfo) -> PaperInfo:
    """Add a paper to the registry (used by tests to register a test-only paper)."""
    PAPERS[info.slug] = info
    return info


def implemented_papers() -> list[PaperInfo]:
    return [p for p in PAPERS.values() if p.implemented]

"""tie_alignment — silent-aware (tie-aware) preference alignment.

"When Labelers Stay Silent: The Power of Ties in Cost-Effective Preference Learning", ICML 2026
(poster 62768; no arXiv version or code found). The paper's own objectives are not public: the
tie losses here are the published anchors DPO-RK / DPO-D (Chen et al., arXiv 2409.17431) and
TODO/TOBT (Guo et al., arXiv 2411.02442), in :mod:`icml26.core.lm.preference`.
"""

from icml26.core.lm.preference import (
    davidson_probs,
    nu_from_tie_prob,
    preference_loss,
    rao_kupper_probs,
)

from .labelers import TIE, WIN_FIRST, WIN_SECOND, SimulatedLabeler, label_noise
from .tabular import PreferenceConfig, TabularPolicyBench, at_kl, resolve_ties

__all__ = [
    "TIE", "WIN_FIRST", "WIN_SECOND", "PreferenceConfig", "SimulatedLabeler", "TabularPolicyBench",
    "at_kl", "davidson_probs", "label_noise", "nu_from_tie_prob", "preference_loss", "rao_kupper_probs",
    "resolve_ties",
]

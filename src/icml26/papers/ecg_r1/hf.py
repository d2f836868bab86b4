"""ECG-R1's RL rewards as TRL ``reward_funcs`` (format, key diagnostic evidence, diagnosis accuracy).

The rewards are :mod:`.rewards`' (the semantics of the official ``ecg_r1/plugin.py``; the key-evidence
reward penalises unsupported findings by default, ``penalize_unsupported=False`` is the official one);
the wrappers accept TRL's conversational completions (message lists) as well as strings and
carry the names TRL logs (``rewards/format/mean``, ``rewards/key_evidence/mean``,
``rewards/diagnosis_accuracy/mean``). The dataset needs a ``solution`` column: the reference
report with ``<|answer|>...<|/answer|>`` and ``<|key_diagnostic_evidence|>...`` blocks
(:func:`solution_text` builds one).

Usage (not run here; ECG-R1 itself is a multimodal model, the rewards only read text)::

    model = AutoModelForCausalLM.from_pretrained("path/or/name")
    tok = AutoTokenizer.from_pretrained("path/or/name")
    ds = Dataset.from_dict({"prompt": prompts, "solution": solutions})
    GRPOTrainer(model=model, reward_funcs=reward_funcs(), args=GRPOConfig("out"), train_dataset=ds,
                processing_class=tok).train()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from icml26.core.lm.hf import HF_INSTALL_HINT, as_trl_reward

from .rewards import diagnosis_accuracy_reward, format_evidence, format_reward, key_evidence_reward

try:
    import trl  # noqa: F401  (the rewards are for trl.GRPOTrainer)
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"icml26.papers.ecg_r1.hf needs trl: {HF_INSTALL_HINT}") from exc


def format_reward_func() -> Callable[..., list[float]]:
    """1 if a non-empty ``<think>...</think>`` exists, else 0 (:func:`~.rewards.format_reward`)."""
    return as_trl_reward(format_reward, "format")


def key_evidence_reward_func(evidence_weight: float = 1.0,
                             penalize_unsupported: bool = True) -> Callable[..., list[float]]:
    """Per-step key-evidence recall in ``<think>`` x precision of asserted findings
    (:func:`~.rewards.key_evidence_reward`; ``penalize_unsupported=False``: the official recall only)."""
    return as_trl_reward(partial(key_evidence_reward, evidence_weight=evidence_weight,
                                 penalize_unsupported=penalize_unsupported), "key_evidence")


def diagnosis_accuracy_reward_func() -> Callable[..., list[float]]:
    """Jaccard of the ``<answer>`` label set and the reference's (:func:`~.rewards.diagnosis_accuracy_reward`)."""
    return as_trl_reward(diagnosis_accuracy_reward, "diagnosis_accuracy")


def reward_funcs(evidence_weight: float = 1.0) -> list[Callable[..., list[float]]]:
    """The three rewards, in the order format, key evidence, diagnosis accuracy (equal weights
    unless ``GRPOConfig(reward_weights=...)`` says otherwise)."""
    return [format_reward_func(), key_evidence_reward_func(evidence_weight), diagnosis_accuracy_reward_func()]


def solution_text(labels: Sequence[str], evidence: Mapping[str, Sequence[str]]) -> str:
    """A ``solution`` column entry: the reference labels and the per-step key evidence
    (``{"step_1_rhythm": ["sinus rhythm", ...], ...}``) in the official tags."""
    ans = "; ".join(labels)
    return f"<|answer|>{ans}<|/answer|>" + format_evidence({k: list(v) for k, v in evidence.items()})


__all__ = ["diagnosis_accuracy_reward_func", "format_reward_func", "key_evidence_reward_func", "reward_funcs",
           "solution_text"]

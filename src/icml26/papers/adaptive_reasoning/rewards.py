"""Adaptive-reasoning rewards as TRL reward functions ``f(prompts, completions, **columns)``.

The paper's exact reward is not public (brief Sec. 1); we expose the three published candidates
(brief Sec. 2) plus the correctness-only reward used as a negative control. Every factory returns
a plain callable that reads the dataset columns ``answer`` (and ``complexity`` for the oracle
reward) from its keyword arguments, exactly as ``trl.GRPOTrainer`` passes extra columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from .task import ModeFormat

RewardFunc = Callable[..., list[float]]


def _check(prompts: Sequence[str], completions: Sequence[str], answer: Sequence[str] | None) -> None:
    if answer is None:
        raise ValueError("the reward needs an 'answer' column")
    if not (len(prompts) == len(completions) == len(answer)):
        raise ValueError(f"{len(prompts)} prompts, {len(completions)} completions, "
                         f"{len(answer)} answers: lengths must agree")


def accuracy_reward(fmt: ModeFormat | None = None) -> RewardFunc:
    """1 if the final answer is correct (either mode), else 0. Ignores mode and length."""
    fmt = fmt or ModeFormat()

    def accuracy(prompts, completions, answer=None, **_):
        _check(prompts, completions, answer)
        return [float(fmt.is_correct(c, a)) for c, a in zip(completions, answer, strict=True)]

    return accuracy


def adaptthink_reward(delta: float = 0.05,
                      ref_accuracy: Mapping[str, float] | Callable[[str], float] | None = None,
                      fmt: ModeFormat | None = None) -> RewardFunc:
    """AdaptThink's Lagrangian reward (arXiv:2505.13417, Eq. 5 and released code):

        R(x, y) = 1[y starts with no-think] * delta + acc(x, y) - Rbar_ref(x)

    Parameters
    ----------
    delta : float, defaults to 0.05
        No-thinking bonus (``nothinking_bonus=0.05`` in the released 1.5B/7B scripts; verified).
    ref_accuracy : mapping prompt -> float, or callable, optional
        Rbar_ref(x): the reference (SFT) model's mean *thinking* accuracy on x, which the
        released code pre-samples with K=16 responses (``..._K16_...`` ref file; verified).
        Default 0. It is constant within a GRPO group, so group-centred advantages do not
        depend on it; it is the baseline of AdaptThink's un-centred ("naive") advantages, which
        :func:`~.trainer.train_adaptive_reasoner` uses for this reward by default.

    The returned function carries ``adaptthink = True`` so that the trainer can pick
    AdaptThink's estimator for it.
    """
    if not math.isfinite(delta):
        raise ValueError("delta must be finite")
    fmt = fmt or ModeFormat()

    def ref(prompt: str) -> float:
        if ref_accuracy is None:
            return 0.0
        if callable(ref_accuracy):
            return float(ref_accuracy(prompt))
        if prompt not in ref_accuracy:
            raise KeyError(f"no reference accuracy for prompt {prompt!r}")
        return float(ref_accuracy[prompt])

    def adaptthink(prompts, completions, answer=None, **_):
        _check(prompts, completions, answer)
        out = []
        for p, c, a in zip(prompts, completions, answer, strict=True):
            bonus = delta if fmt.mode(c) == "no_think" else 0.0
            out.append(bonus + float(fmt.is_correct(c, a)) - ref(p))
        return out

    adaptthink.adaptthink = True
    return adaptthink


def thinkless_reward(correct_think_reward: float = 0.5, correct_nothink_reward: float = 1.0,
                     wrong_reward: float = -1.0, fmt: ModeFormat | None = None) -> RewardFunc:
    """Thinkless's mode-aware reward (arXiv:2505.13379; released script):
    correct & no-think -> 1, correct & think -> ``correct_think_reward`` (0.5 in the script),
    wrong or malformed -> -1."""
    fmt = fmt or ModeFormat()

    def thinkless(prompts, completions, answer=None, **_):
        _check(prompts, completions, answer)
        out = []
        for c, a in zip(completions, answer, strict=True):
            if not fmt.is_correct(c, a):
                out.append(wrong_reward)
            elif fmt.mode(c) == "no_think":
                out.append(correct_nothink_reward)
            else:
                out.append(correct_think_reward)
        return out

    return thinkless


def oracle_mode_reward(mode_bonus: float = 0.5, fmt: ModeFormat | None = None) -> RewardFunc:
    """Correctness + ``mode_bonus`` * 1[mode == oracle mode], oracle = think iff complex.

    Possible only on synthetic data (brief: an upper bound / ablation, not the paper's reward).
    ``mode_bonus=0.5`` is our choice.
    """
    fmt = fmt or ModeFormat()

    def oracle_mode(prompts, completions, answer=None, complexity=None, **_):
        _check(prompts, completions, answer)
        if complexity is None or len(complexity) != len(completions):
            raise ValueError("the oracle reward needs a 'complexity' column aligned with completions")
        out = []
        for c, a, k in zip(completions, answer, complexity, strict=True):
            want = "think" if k == "complex" else "no_think"
            out.append(float(fmt.is_correct(c, a)) + mode_bonus * float(fmt.mode(c) == want))
        return out

    return oracle_mode

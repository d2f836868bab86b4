"""Adaptive-reasoning rewards as TRL ``reward_funcs`` for ``trl.GRPOTrainer`` on a real model.

The rewards are :mod:`.rewards`' (AdaptThink's ``R = delta * 1[no-think] + acc - Rbar_ref(x)``,
Thinkless's, the oracle-mode and correctness-only rewards), unchanged; the wrappers accept TRL's
conversational prompts and completions (message lists) as well as strings, and carry the names
TRL logs (``rewards/adaptthink/mean``, ...). The dataset needs an ``answer`` column (and
``complexity`` for the oracle reward); :func:`grpo_dataset` builds one from
:class:`~.task.CostumeArithmetic` rows, whose verbose "costumes" are what the paper's reward must
see through: the reward itself scores the mode and the answer, the costumes are in the prompts.

What TRL does not do: AdaptThink's own estimator (un-centred advantages with ``Rbar_ref(x)`` as
baseline, half of each group forced to each mode with the old log-prob of the forced token set
to log 0.5) lives in our trainer, :func:`~.trainer.train_adaptive_reasoner`. Under TRL's GRPO the
advantages are group-centred, so ``Rbar_ref(x)`` (constant within a group) cancels and the reward
reduces to ``delta * 1[no-think] + acc`` up to scale.

Usage (not run here). The mode is read from the first characters of a completion
(:class:`~.task.ModeFormat`: ``<think>...</think>answer`` or ``<nothink>answer``); set its tags to
what the model writes at the start of its completions::

    model = AutoModelForCausalLM.from_pretrained("path/or/name")
    tok = AutoTokenizer.from_pretrained("path/or/name")
    ds = grpo_dataset(CostumeArithmetic(seed=0).rl_prompts(512))
    GRPOTrainer(model=model, reward_funcs=[adaptthink_reward_func(delta=0.05)], args=GRPOConfig("out"),
                train_dataset=ds, processing_class=tok).train()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from icml26.core.lm.hf import HF_INSTALL_HINT, as_trl_reward

from .rewards import accuracy_reward, adaptthink_reward, oracle_mode_reward, thinkless_reward
from .task import ModeFormat

try:
    import datasets
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"icml26.papers.adaptive_reasoning.hf needs datasets: {HF_INSTALL_HINT}") from exc


def adaptthink_reward_func(delta: float = 0.05,
                           ref_accuracy: Mapping[str, float] | Callable[[str], float] | None = None,
                           fmt: ModeFormat | None = None) -> Callable[..., list[float]]:
    """AdaptThink's reward (:func:`~.rewards.adaptthink_reward`) as a TRL reward function.
    ``ref_accuracy`` is keyed by the prompt text (a conversational prompt's last user message)."""
    return as_trl_reward(adaptthink_reward(delta, ref_accuracy, fmt), "adaptthink")


def thinkless_reward_func(correct_think_reward: float = 0.5, correct_nothink_reward: float = 1.0,
                          wrong_reward: float = -1.0, fmt: ModeFormat | None = None) -> Callable[..., list[float]]:
    """Thinkless's reward (:func:`~.rewards.thinkless_reward`) as a TRL reward function."""
    return as_trl_reward(thinkless_reward(correct_think_reward, correct_nothink_reward, wrong_reward, fmt),
                         "thinkless")


def oracle_mode_reward_func(mode_bonus: float = 0.5, fmt: ModeFormat | None = None) -> Callable[..., list[float]]:
    """Correctness + bonus for the true-complexity mode (:func:`~.rewards.oracle_mode_reward`);
    reads the ``complexity`` column."""
    return as_trl_reward(oracle_mode_reward(mode_bonus, fmt), "oracle_mode")


def accuracy_reward_func(fmt: ModeFormat | None = None) -> Callable[..., list[float]]:
    """Correctness only (:func:`~.rewards.accuracy_reward`, the negative control)."""
    return as_trl_reward(accuracy_reward(fmt), "accuracy")


def grpo_dataset(rows: Sequence[Mapping[str, Any]], *, system: str | None = None,
                 conversational: bool = True) -> datasets.Dataset:
    """A TRL prompt dataset from task rows (``prompt``, ``answer``, optional ``complexity``,
    ``phrasing``): the prompt becomes a user message (after an optional system message) unless
    ``conversational=False``; the other columns are kept for the rewards."""
    if not rows:
        raise ValueError("no rows")
    out: dict[str, list] = {k: [] for k in rows[0]}
    for r in rows:
        if set(r) != set(out):
            raise ValueError("every row must have the same columns")
        for k, v in r.items():
            if k == "prompt" and conversational:
                v = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": v}]
            out[k].append(v)
    out["answer"] = [str(a) for a in out.get("answer", [])]
    return datasets.Dataset.from_dict(out)


__all__ = ["accuracy_reward_func", "adaptthink_reward_func", "grpo_dataset", "oracle_mode_reward_func",
           "thinkless_reward_func"]

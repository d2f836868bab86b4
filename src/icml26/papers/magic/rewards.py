"""MAGIC's reward functions (paper Sec. 3.3, Eq. 7-11; values of Table 6) in TRL's signature.

With a judge returning ``prompt_unsafe``, ``response_unsafe`` and ``refused``:

* format (attacker only):  R_fmt  = +r_fmt if the completion is exactly one
  ``<think>...</think>`` followed by one ``<answer>...</answer>``, else -r_fmt;
* harm:                    R_harm = +r_harm if the (prompt, response) pair is judged safe, else
  -r_harm (a "controversial" verdict of a guard counts as unsafe);
* refusal:                 R_ref  = +r_ref if (x unsafe and refused) or (x safe and not refused),
  else -r_ref;
* defender:                R_D = R_harm + R_ref;
* attacker:                R_A = -R_D + R_fmt  (zero-sum on safety plus a format term).

Defaults r_harm = 1.0, r_ref = 0.5, r_fmt = 0.5 (Table 6; the released launch script sets
``FORMAT_REWARD_VALUE=1``, the paper 0.5: we follow the paper). "x unsafe" in R_ref is the
judge's verdict on the *rewritten* prompt by default (``refusal_label_from="rewrite"``, the
released code's ``USE_Q_SAFE_LABEL_FOR_REFUSAL=1``), or the seed's dataset label
(``"seed"``). The optional extra terms of the released code (label consistency, revision
divergence, defender quality) are off by default there and are not implemented.

Every reward is a callable ``f(prompts, completions, **columns) -> list[float]`` (TRL's
``reward_funcs`` signature), so it can be handed to ``trl.GRPOTrainer`` with a real judge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from icml26.core.validation import check_nonnegative

from .language import ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN

REFUSAL_LABELS = ("rewrite", "seed")
_FORMAT = re.compile(r"^\s*<think>(?:(?!<think>|</think>|<answer>|</answer>).)*</think>\s*"
                     r"<answer>(?:(?!<think>|</think>|<answer>|</answer>).)*</answer>\s*$", re.S)


class Judge(Protocol):
    """``judge(prompt, response) -> {"prompt_unsafe", "response_unsafe", "refused"}``."""

    def judge(self, prompt: str, response: str) -> dict[str, bool]: ...


def format_ok(completion: str) -> bool:
    """Exactly one ``<think>...</think>`` followed by exactly one ``<answer>...</answer>``."""
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a string, got {type(completion).__name__}")
    return _FORMAT.match(completion) is not None


def extract_answer(completion: str) -> str | None:
    """The text inside ``<answer>...</answer>`` of a well-formatted completion, else None."""
    if not format_ok(completion):
        return None
    i = completion.index(ANSWER_OPEN) + len(ANSWER_OPEN)
    return completion[i:completion.index(ANSWER_CLOSE)]


def format_reward(completion: str, r_fmt: float = 0.5) -> float:
    """R_fmt (module docstring)."""
    return r_fmt if format_ok(completion) else -r_fmt


def harm_reward(response_unsafe: bool, r_harm: float = 1.0) -> float:
    """R_harm: +r_harm for a safe (prompt, response) pair, -r_harm for an unsafe one."""
    return -r_harm if response_unsafe else r_harm


def refusal_reward(prompt_unsafe: bool, refused: bool, r_ref: float = 0.5) -> float:
    """R_ref: +r_ref for refusing an unsafe prompt or answering a safe one, else -r_ref."""
    return r_ref if bool(prompt_unsafe) == bool(refused) else -r_ref


def _check_lengths(prompts: Sequence[str], completions: Sequence[str], **columns: Sequence[Any]) -> None:
    n = len(prompts)
    if len(completions) != n:
        raise ValueError(f"{n} prompts but {len(completions)} completions")
    for k, v in columns.items():
        if v is not None and len(v) != n:
            raise ValueError(f"column {k!r} has {len(v)} entries for {n} prompts")


class DefenderReward:
    """R_D = R_harm + R_ref of the defender's completions (responses) to attack prompts.

    Parameters
    ----------
    judge : object with ``judge(prompt, response) -> dict``
    r_harm, r_ref : float >= 0 -- reward magnitudes (Table 6: 1.0, 0.5)
    refusal_label_from : ``"rewrite"`` (judge's verdict on the attack prompt; default, as the
        released code) or ``"seed"`` (the ``seed_unsafe`` column, the dataset label)
    """

    __name__ = "defender_reward"

    def __init__(self, judge: Judge, r_harm: float = 1.0, r_ref: float = 0.5,
                 refusal_label_from: str = "rewrite") -> None:
        if not hasattr(judge, "judge"):
            raise TypeError("judge must have a judge(prompt, response) method")
        if refusal_label_from not in REFUSAL_LABELS:
            raise ValueError(f"refusal_label_from must be one of {REFUSAL_LABELS}, got {refusal_label_from!r}")
        self.judge = judge
        self.r_harm = check_nonnegative(r_harm, "r_harm")
        self.r_ref = check_nonnegative(r_ref, "r_ref")
        self.refusal_label_from = refusal_label_from

    def components(self, prompt: str, response: str, seed_unsafe: bool | None = None) -> tuple[float, float]:
        """(R_harm, R_ref) of one (attack prompt, defender response) pair."""
        v = self.judge.judge(prompt, response)
        if self.refusal_label_from == "seed":
            if seed_unsafe is None:
                raise ValueError("refusal_label_from='seed' needs the seed_unsafe column")
            label = bool(seed_unsafe)
        else:
            label = bool(v["prompt_unsafe"])
        return harm_reward(v["response_unsafe"], self.r_harm), refusal_reward(label, v["refused"], self.r_ref)

    def __call__(self, prompts: Sequence[str], completions: Sequence[str],
                 seed_unsafe: Sequence[bool] | None = None, **_: Any) -> list[float]:
        _check_lengths(prompts, completions, seed_unsafe=seed_unsafe)
        labels = seed_unsafe if seed_unsafe is not None else [None] * len(prompts)
        return [sum(self.components(p, c, s)) for p, c, s in zip(prompts, completions, labels, strict=True)]


class AttackerReward:
    """R_A = -R_D + R_fmt of attacker completions.

    Called TRL-style with the attacker's prompts (seeds) and completions plus two columns:
    ``attack_prompts`` (the prompt the defender saw for each completion) and ``responses`` (the
    defender's reply to it). A completion without the required format still gets its -R_D
    (the defender answered whatever the rollout sent it) plus -r_fmt.
    """

    __name__ = "attacker_reward"

    def __init__(self, defender_reward: DefenderReward, r_fmt: float = 0.5) -> None:
        if not isinstance(defender_reward, DefenderReward):
            raise TypeError("defender_reward must be a DefenderReward")
        self.defender_reward = defender_reward
        self.r_fmt = check_nonnegative(r_fmt, "r_fmt")

    def __call__(self, prompts: Sequence[str], completions: Sequence[str], *,
                 attack_prompts: Sequence[str], responses: Sequence[str],
                 seed_unsafe: Sequence[bool] | None = None, **_: Any) -> list[float]:
        _check_lengths(prompts, completions, attack_prompts=attack_prompts, responses=responses,
                       seed_unsafe=seed_unsafe)
        r_d = self.defender_reward(list(attack_prompts), list(responses), seed_unsafe=seed_unsafe)
        return [-rd + format_reward(c, self.r_fmt) for rd, c in zip(r_d, completions, strict=True)]


def attacker_completion(think: str, program: str) -> str:
    """The attacker's output format: ``<think>think</think><answer>program</answer>``."""
    return f"{THINK_OPEN}{think}{THINK_CLOSE}{ANSWER_OPEN}{program}{ANSWER_CLOSE}"

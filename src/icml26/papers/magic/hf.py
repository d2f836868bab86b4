"""MAGIC on Hugging Face models: TRL rewards with a pluggable judge, and the alternating driver.

* :func:`defender_reward_func` -- R_D = R_harm + R_ref of :class:`~.rewards.DefenderReward` as a
  TRL reward for the defender's ``GRPOTrainer`` (dataset: ``prompt`` = attack prompt, optional
  ``seed_unsafe``).
* :class:`FrozenDefenderAttackerReward` -- R_A = -R_D + R_fmt (:class:`~.rewards.AttackerReward`)
  for the attacker's ``GRPOTrainer``: each attacker completion is turned into the attack prompt
  (``rewrite(seed, completion)``; MAGIC's attacker writes ``<think>...</think><answer>rewritten
  prompt</answer>``), the *frozen* defender answers it (sampling with ``generate``), the judge
  scores the pair.
* :class:`AlternatingGRPOTrainers` -- MAGIC's phase 2 around two ``trl.GRPOTrainer``: blocks of
  :class:`~.game.AlternatingSchedule` (``switch_every`` steps, ``ratio``), the role not training
  frozen (``requires_grad=False``, eval mode) for the whole block. Each role keeps one AdamW
  (its momenta persist across blocks; constant learning rate).

The judge is anything with ``judge(prompt, response) -> {"prompt_unsafe", "response_unsafe",
"refused"}``: :class:`~.language.RuleJudge` on the synthetic language, :class:`~.guard.GuardJudge`
over a guard model served by :mod:`icml26.core.llm`, or your own.

Usage (not run here; a guard model served locally, e.g. ``vllm serve Qwen/Qwen3Guard-Gen-4B``)::

    attacker = AutoModelForCausalLM.from_pretrained("path/or/name")
    defender = AutoModelForCausalLM.from_pretrained("path/or/name")
    judge = GuardJudge(OpenAICompatible("http://localhost:8000/v1"))
    driver = AlternatingGRPOTrainers(attacker, defender, tok, tok, seeds, judge,
                                     attacker_args=GRPOConfig("att", num_generations=4),
                                     defender_args=GRPOConfig("def", num_generations=4))
    history = driver.fit(steps=120)
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from icml26.core.lm.hf import (
    HF_INSTALL_HINT,
    as_trl_reward,
    completion_text,
    generate_texts,
    prompt_text,
)

from .game import ROLES, AlternatingSchedule, execute_completion
from .language import IntentLanguage, Seed
from .rewards import AttackerReward, DefenderReward, Judge, extract_answer

try:
    import datasets
    from trl import GRPOConfig, GRPOTrainer
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"icml26.papers.magic.hf needs trl and datasets: {HF_INSTALL_HINT}") from exc

Rewrite = Callable[[str, str], str]


def answer_rewrite(seed: str, completion: str) -> str:
    """MAGIC's attacker output format: the attack prompt is the text inside ``<answer>...</answer>``
    of a well-formatted completion; a malformed one sends the vanilla seed."""
    ans = extract_answer(completion)
    return ans.strip() if ans is not None and ans.strip() else seed


def language_rewrite(language: IntentLanguage) -> Rewrite:
    """The rewrite of the synthetic intent language (:mod:`.language`): the program in the
    completion's ``<answer>`` applied to the seed (:func:`~.game.execute_completion`)."""
    def rewrite(seed: str, completion: str) -> str:
        return execute_completion(language, completion, Seed(seed, False))[0]
    return rewrite


def defender_reward_func(judge: Judge, r_harm: float = 1.0, r_ref: float = 0.5,
                         refusal_label_from: str = "rewrite") -> Callable[..., list[float]]:
    """R_D (paper Eq. 7-9; Table 6 magnitudes) as a TRL reward: ``prompts`` are the attack
    prompts the defender saw, ``completions`` its responses; ``seed_unsafe`` column optional."""
    return as_trl_reward(DefenderReward(judge, r_harm, r_ref, refusal_label_from), "defender_reward")


class FrozenDefenderAttackerReward:
    """R_A = -R_D + R_fmt (paper Eq. 10-11) against a frozen Hugging Face defender.

    Parameters
    ----------
    judge : the judge (``judge(prompt, response) -> dict``)
    defender, defender_tokenizer : the defender model (not updated here) and its tokenizer
    rewrite : ``rewrite(seed_prompt, completion) -> attack prompt`` (default :func:`answer_rewrite`)
    chat : bool -- send the attack to the defender as a user message (chat template) or as text
    max_new_tokens, temperature : the defender's sampling (Table 6: temperature 1.0)
    r_harm, r_ref, r_fmt, refusal_label_from : :class:`~.rewards.DefenderReward` /
        :class:`~.rewards.AttackerReward` settings
    seed : int -- seed of the defender's sampling, advanced at every call

    Called TRL-style with the attacker's prompts (the seeds) and completions; reads the optional
    ``seed_unsafe`` column. The last call's attack prompts and responses are kept in
    :attr:`last_attacks` and :attr:`last_responses`.
    """

    __name__ = "attacker_reward"

    def __init__(self, judge: Judge, defender: Any, defender_tokenizer: Any, *, rewrite: Rewrite = answer_rewrite,
                 chat: bool = False, max_new_tokens: int = 64, temperature: float = 1.0, r_harm: float = 1.0,
                 r_ref: float = 0.5, r_fmt: float = 0.5, refusal_label_from: str = "rewrite", seed: int = 0) -> None:
        self.reward = AttackerReward(DefenderReward(judge, r_harm, r_ref, refusal_label_from), r_fmt)
        self.defender, self.tokenizer = defender, defender_tokenizer
        self.rewrite, self.chat = rewrite, bool(chat)
        self.max_new_tokens, self.temperature = int(max_new_tokens), float(temperature)
        self.seed = int(seed)
        self.last_attacks: list[str] = []
        self.last_responses: list[str] = []

    def respond(self, attacks: Sequence[str]) -> list[str]:
        """The frozen defender's sampled responses to attack prompts (no gradient)."""
        prompts = [[{"role": "user", "content": a}] for a in attacks] if self.chat else list(attacks)
        texts, _ = generate_texts(self.defender, self.tokenizer, prompts, max_new_tokens=self.max_new_tokens,
                                  temperature=self.temperature, seed=self.seed)
        self.seed += 1
        return texts

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                 seed_unsafe: Sequence[bool] | None = None, **_: Any) -> list[float]:
        seeds = [prompt_text(p) for p in prompts]
        comps = [completion_text(c) for c in completions]
        attacks = [self.rewrite(s, c) for s, c in zip(seeds, comps, strict=True)]
        responses = self.respond(attacks)
        self.last_attacks, self.last_responses = attacks, responses
        return self.reward(seeds, comps, attack_prompts=attacks, responses=responses, seed_unsafe=seed_unsafe)


@dataclasses.dataclass
class BlockLog:
    """One block of the alternating schedule: the role trained, its steps, TRL's log history."""

    role: str
    steps: int
    logs: list[dict[str, Any]]

    @property
    def reward(self) -> float:
        """Mean of the block's logged ``reward`` values (NaN if none was logged)."""
        vals = [h["reward"] for h in self.logs if "reward" in h]
        return float(np.mean(vals)) if vals else float("nan")


def _block_args(args: GRPOConfig, **changes: Any) -> GRPOConfig:
    """A copy of ``args`` with ``changes`` (``dataclasses.replace`` would re-run the config's
    checks, which refuse the batch sizes it derived itself)."""
    out = copy.copy(args)
    for k, v in changes.items():
        setattr(out, k, v)
    return out


class _Frozen:
    """Context: a model in eval mode with ``requires_grad=False`` (restored on exit)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __enter__(self) -> Any:
        self.flags = [p.requires_grad for p in self.model.parameters()]
        self.was = self.model.training
        self.model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        return self.model

    def __exit__(self, *exc: Any) -> None:
        for p, f in zip(self.model.parameters(), self.flags, strict=True):
            p.requires_grad_(f)
        self.model.train(self.was)


class AlternatingGRPOTrainers:
    """MAGIC phase 2 (arXiv 2602.01539, Sec. 3.4) around two ``trl.GRPOTrainer``.

    Parameters
    ----------
    attacker, defender : ``transformers`` causal LMs (trained in place)
    attacker_tokenizer, defender_tokenizer : their tokenizers
    seeds : ``datasets.Dataset`` with a ``prompt`` column (vanilla queries, strings) and an
        optional ``seed_unsafe`` column (bool)
    judge : the judge of both rewards
    attacker_args, defender_args : ``GRPOConfig`` of each role (``max_steps`` is set per block;
        ``learning_rate``, ``adam_beta1/2``, ``adam_epsilon``, ``weight_decay`` build its AdamW)
    schedule : :class:`~.game.AlternatingSchedule` (default: blocks of 15, ratio 1:1, defender
        first: Table 6)
    rewrite : ``rewrite(seed, completion) -> attack prompt`` (default :func:`answer_rewrite`)
    chat : bool -- prompts as user messages (chat templates) instead of plain text
    attack_max_new_tokens, response_max_new_tokens : sampling lengths of the frozen opponent
        (default: the roles' ``max_completion_length``)
    r_harm, r_ref, r_fmt, refusal_label_from : reward settings (Table 6 defaults)
    seed : int -- seed of the seed sampling and of the frozen opponent's sampling
    """

    def __init__(self, attacker: Any, defender: Any, attacker_tokenizer: Any, defender_tokenizer: Any,
                 seeds: datasets.Dataset, judge: Judge, *, attacker_args: GRPOConfig, defender_args: GRPOConfig,
                 schedule: AlternatingSchedule | None = None, rewrite: Rewrite = answer_rewrite, chat: bool = False,
                 attack_max_new_tokens: int | None = None, response_max_new_tokens: int | None = None,
                 r_harm: float = 1.0, r_ref: float = 0.5, r_fmt: float = 0.5, refusal_label_from: str = "rewrite",
                 seed: int = 0) -> None:
        if "prompt" not in seeds.column_names:
            raise ValueError("seeds needs a 'prompt' column")
        if attacker is defender:
            raise ValueError("attacker and defender must be separate models (MAGIC trains two policies)")
        if attacker_args.beta != 0 or defender_args.beta != 0:
            raise ValueError("MAGIC trains without a KL term (Table 6): set GRPOConfig(beta=0.0)")
        self.attacker, self.defender = attacker, defender
        self.tokenizers = {"attacker": attacker_tokenizer, "defender": defender_tokenizer}
        self.seeds, self.judge, self.rewrite, self.chat = seeds, judge, rewrite, bool(chat)
        self.args = {"attacker": attacker_args, "defender": defender_args}
        self.schedule = schedule or AlternatingSchedule()
        self.attack_max_new_tokens = attack_max_new_tokens or attacker_args.max_completion_length
        self.response_max_new_tokens = response_max_new_tokens or defender_args.max_completion_length
        self.defender_reward = defender_reward_func(judge, r_harm, r_ref, refusal_label_from)
        self.attacker_reward = FrozenDefenderAttackerReward(
            judge, defender, defender_tokenizer, rewrite=rewrite, chat=chat,
            max_new_tokens=self.response_max_new_tokens, temperature=defender_args.temperature,
            r_harm=r_harm, r_ref=r_ref, r_fmt=r_fmt, refusal_label_from=refusal_label_from, seed=seed)
        self.optimizers = {role: self._adamw(model, self.args[role])
                           for role, model in (("attacker", attacker), ("defender", defender))}
        self.rng = np.random.default_rng(seed)
        self.seed = int(seed)
        self.step = 0
        self.history: list[BlockLog] = []

    @staticmethod
    def _adamw(model: Any, args: GRPOConfig) -> torch.optim.Optimizer:
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=args.learning_rate, betas=(args.adam_beta1, args.adam_beta2),
                                eps=args.adam_epsilon, weight_decay=args.weight_decay)
        return opt

    def _prompts_per_step(self, args: GRPOConfig) -> int:
        batch = args.per_device_train_batch_size * args.gradient_accumulation_steps * max(1, args.world_size)
        return max(1, batch // args.num_generations)

    def _seed_rows(self, n: int) -> dict[str, list]:
        idx = self.rng.integers(len(self.seeds), size=n)
        cols = [c for c in ("prompt", "seed_unsafe") if c in self.seeds.column_names]
        return {c: [self.seeds[int(i)][c] for i in idx] for c in cols}

    def _as_prompt(self, text: str) -> Any:
        return [{"role": "user", "content": text}] if self.chat else text

    def attacks_from_frozen_attacker(self, seeds: Sequence[str]) -> list[str]:
        """One sampled rewrite per seed from the (frozen) attacker, turned into attack prompts."""
        with _Frozen(self.attacker):
            comps, _ = generate_texts(self.attacker, self.tokenizers["attacker"],
                                      [self._as_prompt(s) for s in seeds],
                                      max_new_tokens=self.attack_max_new_tokens,
                                      temperature=self.args["attacker"].temperature, seed=self.seed + self.step)
        return [self.rewrite(s, c) for s, c in zip(seeds, comps, strict=True)]

    def _train_block(self, role: str, n_steps: int) -> BlockLog:
        args = self.args[role]
        rows = self._seed_rows(n_steps * self._prompts_per_step(args))
        model, opponent = (self.defender, self.attacker) if role == "defender" else (self.attacker, self.defender)
        with _Frozen(opponent):
            if role == "defender":
                rows["prompt"] = self.attacks_from_frozen_attacker(rows["prompt"])
                reward = self.defender_reward
            else:
                reward = self.attacker_reward
            rows["prompt"] = [self._as_prompt(p) for p in rows["prompt"]]
            block_args = _block_args(args, max_steps=n_steps, save_strategy="no",
                                     output_dir=os.path.join(args.output_dir,
                                                             f"block-{len(self.history):04d}-{role}"))
            opt = self.optimizers[role]
            constant = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
            trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=block_args,
                                  train_dataset=datasets.Dataset.from_dict(rows),
                                  processing_class=self.tokenizers[role], optimizers=(opt, constant))
            trainer.train()
        # TRL patches an instance-level forward (fused LM head) at every trainer construction:
        # drop it so that the next block's trainer patches the class forward, not a chain
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        for m in (model, base):
            m.__dict__.pop("forward", None)
        return BlockLog(role, n_steps, [dict(h) for h in trainer.state.log_history])

    def fit(self, steps: int) -> list[BlockLog]:
        """Run the schedule for ``steps`` more optimizer steps (both roles together), block by
        block; returns the new blocks' logs (all of them are in :attr:`history`)."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive int, got {steps!r}")
        new = []
        end = self.step + steps
        while self.step < end:
            role = self.schedule.role(self.step)
            if role not in ROLES:  # pragma: no cover - the schedule only yields roles
                raise RuntimeError(role)
            block_end = (self.step // self.schedule.switch_every + 1) * self.schedule.switch_every
            n = min(block_end, end) - self.step
            log = self._train_block(role, n)
            self.history.append(log)
            new.append(log)
            self.step += n
        return new


__all__ = ["AlternatingGRPOTrainers", "BlockLog", "FrozenDefenderAttackerReward", "answer_rewrite",
           "defender_reward_func", "language_rewrite"]

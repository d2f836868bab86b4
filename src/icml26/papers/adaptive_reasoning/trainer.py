"""Two-stage adaptive-reasoner training (augmented SFT, then GRPO) and per-cell evaluation.

Paper: *When Simple Problems Wear Complex Costumes: Improving Efficiency in LRM's Adaptive
Reasoning* (ICML 2026; no arXiv id or code public). Stage 1 is SFT on data where each simple
problem appears in a concise and a verbose costume with the same no-think target; stage 2 is GRPO
with an adaptive reward so that the mode follows true complexity (paper abstract). Unknown details
are filled from AdaptThink (arXiv:2505.13417) and Thinkless (arXiv:2505.13379), as marked.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml26.core.lm.generate import generate, prefill_mask
from icml26.core.lm.grpo import GRPOConfig, GRPOTrainer, RewardFunc
from icml26.core.lm.sft import SFTConfig, build_sft_batch, sft_loss, train_sft
from icml26.core.lm.tokenizer import CharTokenizer

from .task import CELLS, ModeFormat


@dataclass(frozen=True)
class AdaptiveReasonerConfig:
    """Hyperparameters of :func:`train_adaptive_reasoner`.

    Stage 1 (SFT; our choices for a tiny model trained from scratch, the paper's are not public):

    sft_steps : int, defaults to 600
    sft_batch_size : int, defaults to 64
    sft_learning_rate : float, defaults to 3e-3

    Stage 2 (GRPO; TRL ``GRPOConfig`` names):

    grpo_steps : int, defaults to 40
    grpo_batch_size : int, defaults to 16 -- prompts per step (brief Sec. 5)
    num_generations : int, defaults to 8 -- TRL default, brief Sec. 2
    grpo_learning_rate : float, defaults to 3e-4 -- our choice for a tiny model
    beta : float, defaults to 0.0 -- TRL default; AdaptThink runs with ``use_kl_loss=False``
    epsilon : float, defaults to 0.2 -- TRL default
    epsilon_high : float or None, defaults to None
    loss_type : str, defaults to ``"dapo"`` -- TRL default
    scale_rewards : str, defaults to ``"group"`` -- TRL default (Thinkless turns it off)
    temperature : float, defaults to 1.0 -- TRL default (AdaptThink samples at 0.6)
    balance_first_token : bool, defaults to True
        Force the first token of half of each group to ``<think>`` and half to ``<nothink>``
        (AdaptThink's ``nothinking_ratio=0.5``; verified in its released script).
    estimator : str or None, defaults to None
        ``"adaptthink"``: AdaptThink's released estimator (bojieli/AdaptThink mirror of
        THU-KEG/AdaptThink, ``scripts/run_adapt_think_1.5b_...sh``: ``algorithm.adv_estimator=naive``,
        ``adjust_old_logprobs=True``; ``src/adapt_think_core_algos.py``, ``compute_policy_loss``):
        un-centred advantages A = r (the reward's -Rbar_ref(x) is the baseline, so
        ``scale_rewards="none"`` and the reference term is *not* cancelled), old log-prob of the
        forced mode token set to log(0.5) (the importance-sampling correction for balanced
        forcing), one ratio per sequence from masked-mean log-probs, mean over sequences
        (``loss_type="grpo"``). ``"trl"``: TRL's GRPO with this config's ``loss_type`` and
        ``scale_rewards``, on-policy ratio for the forced token. None: ``"adaptthink"`` when the
        reward was built by :func:`~.rewards.adaptthink_reward`, else ``"trl"``.
    control_token_weight : float, defaults to 1.0
        Loss weight of the mode token (DeGRPO's decoupling, Thinkless uses 0.001 with its own
        normalisation; 1.0 = plain GRPO).
    max_completion_length : int or None -- default: the task's longest completion
    prompt_length : int or None -- fixed left-padded prompt length (default: longest prompt)
    sft_trim_padding : bool, defaults to True
        Compute each SFT minibatch's loss per length bucket (short/long prompt x short/long
        completion) with the padding that every row of a bucket shares cut off
        (:func:`sft_loss_by_length`): the same minibatches, loss and gradient as
        ``icml26.core.lm.sft.train_sft`` up to float rounding, at about half the cost on this
        task (concise prompts are 4-10 of the 41 prompt positions). False: ``train_sft`` itself.
    seed : int, defaults to 0
    """

    sft_steps: int = 600
    sft_batch_size: int = 64
    sft_learning_rate: float = 3e-3
    grpo_steps: int = 40
    grpo_batch_size: int = 16
    num_generations: int = 8
    grpo_learning_rate: float = 3e-4
    beta: float = 0.0
    epsilon: float = 0.2
    epsilon_high: float | None = None
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    temperature: float = 1.0
    balance_first_token: bool = True
    control_token_weight: float = 1.0
    estimator: str | None = None
    max_completion_length: int | None = None
    prompt_length: int | None = None
    sft_trim_padding: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if self.sft_steps < 0 or self.grpo_steps < 0:
            raise ValueError("sft_steps and grpo_steps must be >= 0")
        if self.balance_first_token and self.num_generations % 2:
            raise ValueError("balance_first_token needs an even num_generations")
        if self.control_token_weight < 0:
            raise ValueError("control_token_weight must be >= 0")
        if self.estimator not in (None, "adaptthink", "trl"):
            raise ValueError(f"estimator must be None, 'adaptthink' or 'trl', got {self.estimator!r}")
        if self.estimator == "adaptthink" and not self.balance_first_token:
            raise ValueError("the AdaptThink estimator corrects balanced forcing: needs balance_first_token")


def resolve_estimator(config: AdaptiveReasonerConfig, reward) -> str:
    """``config.estimator``, or the default for ``reward`` (AdaptThink's for its reward)."""
    if config.estimator is not None:
        return config.estimator
    funcs = reward if isinstance(reward, (list, tuple)) else [reward]
    if config.balance_first_token and any(getattr(f, "adaptthink", False) for f in funcs):
        return "adaptthink"
    return "trl"


def _encode(tok: CharTokenizer, text: str) -> list[int]:
    """``tok.encode(text)``; text without special tokens (every prompt) maps one id per character."""
    if not any(sp in text for sp in tok.specials):
        try:
            return [tok.stoi[ch] for ch in text]
        except KeyError:
            pass  # tok.encode raises with the position of the unknown character
    return tok.encode(text)


def encode_prompt(tok: CharTokenizer, prompt: str) -> list[int]:
    """``<bos>`` + the prompt's tokens."""
    return [tok.bos_id, *_encode(tok, prompt)]


def sft_examples(tok: CharTokenizer, rows: Sequence[dict]) -> list[dict]:
    """Token-level SFT examples (``prompt_ids``, ``completion_ids`` = completion + ``<eos>``).
    Completions repeat (300 simple facts), so each distinct one is tokenised once."""
    completions: dict[str, list[int]] = {}
    out = []
    for r in rows:
        c = r["completion"]
        if c not in completions:
            completions[c] = [*tok.encode(c), tok.eos_id]
        out.append({"prompt_ids": encode_prompt(tok, r["prompt"]), "completion_ids": list(completions[c])})
    return out


class _AtPositions:
    """``model`` called with its absolute positions shifted by ``offset`` (a batch whose shared left
    padding was cut off keeps every real token at the position it has in the full layout)."""

    def __init__(self, model: torch.nn.Module, offset: int) -> None:
        self.model, self.offset = model, int(offset)

    def __call__(self, idx: torch.Tensor, attn_mask: torch.Tensor | None = None):
        return self.model(idx, attn_mask=attn_mask, position_offset=self.offset)


def sft_loss_by_length(model: torch.nn.Module, rows: Sequence[dict], *, pad_id: int, prompt_length: int,
                       completion_only_loss: bool = True) -> torch.Tensor:
    """``icml26.core.lm.sft.sft_loss`` of the minibatch ``rows`` laid out with prompts left-padded to
    ``prompt_length``, computed per length bucket without the padding a bucket's rows all share.

    Rows are grouped by (prompt longer than ``prompt_length // 2``, completion longer than half the
    longest); each group is padded to its own longest prompt and completion and run with its
    positions shifted by ``prompt_length`` minus its prompt width, so every real token sees the
    same positions and keys as in the full batch (padding keys are masked there). Each group's
    mean loss is weighted by its share of the completion tokens, so the result is the full batch's
    loss (and gradient) up to float rounding. ``model`` needs ``forward(..., position_offset=)``
    (:class:`~icml26.core.lm.model.TinyCausalLM`).
    """
    if not rows:
        raise ValueError("empty minibatch")
    half_c = max(len(r["completion_ids"]) for r in rows) // 2
    groups: dict[tuple[bool, bool], list[dict]] = {}
    for r in rows:
        if len(r["prompt_ids"]) > prompt_length:
            raise ValueError(f"a prompt of {len(r['prompt_ids'])} tokens is longer than prompt_length={prompt_length}")
        key = (len(r["prompt_ids"]) > prompt_length // 2, len(r["completion_ids"]) > half_c)
        groups.setdefault(key, []).append(r)
    parts, counts = [], []
    for _, group in sorted(groups.items()):
        width = max(len(r["prompt_ids"]) for r in group)
        batch = build_sft_batch([r["prompt_ids"] for r in group], [r["completion_ids"] for r in group],
                                pad_id=pad_id, prompt_length=width,
                                weights=[float(r.get("weight", 1.0)) for r in group],
                                completion_only_loss=completion_only_loss)
        counts.append(batch.completion_mask[:, 1:].sum())
        parts.append(sft_loss(_AtPositions(model, prompt_length - width), batch))
    total = sum(counts)
    return sum(loss * (n / total) for loss, n in zip(parts, counts, strict=True))


def train_sft_by_length(model: torch.nn.Module, dataset: Sequence[dict], config: SFTConfig, *, pad_id: int,
                        prompt_length: int) -> list[float]:
    """``icml26.core.lm.sft.train_sft`` (same minibatch order, AdamW, schedule and clipping) with each
    minibatch's loss from :func:`sft_loss_by_length`; returns the per-step losses."""
    def loss_fn(m: torch.nn.Module, rows: list[dict], P: int) -> torch.Tensor:
        return sft_loss_by_length(m, rows, pad_id=pad_id, prompt_length=P,
                                  completion_only_loss=config.completion_only_loss)

    return train_sft(model, dataset, config, pad_id=pad_id, prompt_length=prompt_length,
                     loss_fn=loss_fn)


def _takes_position_offset(model: torch.nn.Module) -> bool:
    try:
        return "position_offset" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def train_adaptive_reasoner(
    model: torch.nn.Module,
    tokenizer: CharTokenizer,
    sft_dataset: Sequence[dict] | None,
    rl_prompts: Sequence[dict] | None,
    reward: RewardFunc | Sequence[RewardFunc] | None,
    config: AdaptiveReasonerConfig,
    *,
    fmt: ModeFormat | None = None,
    history: dict | None = None,
    step_callback: Callable[[int, torch.nn.Module], None] | None = None,
) -> torch.nn.Module:
    """Stage 1 (SFT on ``sft_dataset``) then stage 2 (GRPO on ``rl_prompts`` with ``reward``).

    Either stage is skipped when its data is None (or its step count is 0), so that several
    stage-2 variants can start from one stage-1 model. The model is trained in place and returned.

    Parameters
    ----------
    model : TinyCausalLM (or any model with the same forward)
    tokenizer : CharTokenizer with the mode tokens (:func:`~.task.make_tokenizer`)
    sft_dataset : rows with ``prompt`` and ``completion`` strings (``CostumeArithmetic.sft_dataset``)
    rl_prompts : rows with ``prompt`` and reward columns (``answer``, ``complexity``)
    reward : TRL-style reward function(s) (:mod:`.rewards`)
    config : AdaptiveReasonerConfig
    history : dict, optional -- filled with ``sft_loss`` and ``grpo`` (per-step logs)
    step_callback : callable ``(step, model)``, optional -- after each GRPO step
    """
    fmt = fmt or ModeFormat()
    P = config.prompt_length
    if sft_dataset is not None and config.sft_steps > 0:
        examples = sft_examples(tokenizer, sft_dataset)
        P = P or max(len(e["prompt_ids"]) for e in examples)
        sft_cfg = SFTConfig(learning_rate=config.sft_learning_rate,
                            per_device_train_batch_size=config.sft_batch_size,
                            max_steps=config.sft_steps, warmup_steps=min(50, config.sft_steps),
                            seed=config.seed)
        train = train_sft_by_length if config.sft_trim_padding and _takes_position_offset(model) else train_sft
        losses = train(model, examples, sft_cfg, pad_id=tokenizer.pad_id, prompt_length=P)
        if history is not None:
            history["sft_loss"] = losses
    if rl_prompts is not None and config.grpo_steps > 0:
        if reward is None:
            raise ValueError("stage 2 needs a reward function")
        think_id, nothink_id = tokenizer.token_id(fmt.think), tokenizer.token_id(fmt.no_think)
        G = config.num_generations
        force = None
        if config.balance_first_token:
            def force(row: dict, j: int) -> list[int]:
                return [think_id] if j < G // 2 else [nothink_id]

        weight_fn = None
        if config.control_token_weight != 1.0:
            def weight_fn(gen) -> torch.Tensor:
                w = torch.ones_like(gen.logprobs)
                w[:, 0] = config.control_token_weight
                return w

        max_len = config.max_completion_length or 32
        est = {"loss_type": config.loss_type, "scale_rewards": config.scale_rewards}
        if resolve_estimator(config, reward) == "adaptthink":
            est = {"loss_type": "grpo", "scale_rewards": "none", "advantage_estimator": "naive",
                   "importance_sampling_level": "sequence", "forced_old_logprob": math.log(0.5)}
        args = GRPOConfig(num_generations=G, max_completion_length=max_len,
                          temperature=config.temperature, beta=config.beta, epsilon=config.epsilon,
                          epsilon_high=config.epsilon_high, learning_rate=config.grpo_learning_rate,
                          per_device_train_batch_size=config.grpo_batch_size,
                          max_steps=config.grpo_steps, seed=config.seed, **est)
        trainer = GRPOTrainer(model, reward, args, rl_prompts, tokenizer, prompt_length=P,
                              force_prefix_fn=force, token_weight_fn=weight_fn)
        logs = []

        def cb(log, tr):
            logs.append(log)
            if step_callback is not None:
                step_callback(log.step, tr.model)

        trainer.train(callback=cb)
        if history is not None:
            history["grpo"] = [vars(log) for log in logs]
            history["grpo_args"] = vars(args) if hasattr(args, "__dict__") else {}
    return model


def _chunks_by_complexity(rows: Sequence[dict], batch_size: int):
    """``rows`` in batches of at most ``batch_size``, simple and complex problems apart (in order of
    first appearance), so that a batch of short completions stops when they are done instead of
    running as long as the longest chain in a mixed batch. Greedy outputs do not depend on the
    batch a row is in; sampled ones draw other random numbers, with the same distribution."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(str(r.get("complexity", "")), []).append(r)
    for group in groups.values():
        for start in range(0, len(group), batch_size):
            yield group[start:start + batch_size]


def evaluate_modes(
    model: torch.nn.Module,
    tokenizer: CharTokenizer,
    rows: Sequence[dict],
    *,
    fmt: ModeFormat | None = None,
    force: str | None = None,
    prompt_length: int | None = None,
    max_new_tokens: int = 32,
    temperature: float = 0.0,
    batch_size: int = 512,
    generator: torch.Generator | None = None,
    p_think_cache: dict | None = None,
) -> dict[str, dict[str, float]]:
    """Accuracy, think rate, generated tokens and mode accuracy per cell (brief Sec. 5 metrics).

    Parameters
    ----------
    rows : test rows (``CostumeArithmetic.test_grid``) with prompt, answer, complexity, phrasing
    force : None, ``"think"`` or ``"no_think"`` -- force the mode token (always-think /
        never-think baselines)
    temperature : float, defaults to 0 (greedy decoding, so the metrics are deterministic)
    p_think_cache : dict, optional -- P(<think> | prompt) per batch of prompts, kept across calls on
        the *same, unchanged* model (issue 54): it does not depend on ``force``, ``temperature`` or
        the generator, so an arm evaluated greedy and sampled, forced and unforced computes it once
        per batch (the same batch of the same prompts: the same numbers)

    Returns
    -------
    dict cell -> {accuracy, think_rate, tokens, mode_accuracy, invalid_rate, think_prob (mean
    model probability of ``<think>`` as first token, unforced), n}, plus
    ``"overall"`` and ``"summary"`` = {robustness_gap (think rate simple-verbose minus
    simple-concise), ...}.
    """
    fmt = fmt or ModeFormat()
    if force not in (None, "think", "no_think"):
        raise ValueError(f"force must be None, 'think' or 'no_think', got {force!r}")
    if len(rows) == 0:
        raise ValueError("no rows to evaluate")
    forced_id = None
    think_id = tokenizer.token_id(fmt.think)
    if force is not None:
        forced_id = tokenizer.token_id(fmt.think if force == "think" else fmt.no_think)
    P = prompt_length or max(len(encode_prompt(tokenizer, r["prompt"])) for r in rows)
    records = []
    for chunk in _chunks_by_complexity(rows, batch_size):
        ids = [encode_prompt(tokenizer, r["prompt"]) for r in chunk]
        out = generate(model, ids, max_new_tokens=max_new_tokens, pad_id=tokenizer.pad_id,
                       stop_ids=[tokenizer.eos_id], temperature=temperature,
                       force_prefix=[[forced_id]] * len(chunk) if forced_id is not None else None,
                       prompt_length=P, generator=generator)
        n_tok = out.completion_mask.sum(1).tolist()
        key = (P, think_id, tuple(r["prompt"] for r in chunk))
        p_think = None if p_think_cache is None else p_think_cache.get(key)
        if p_think is None:
            with torch.no_grad():  # P(<think> | prompt): the mode policy itself, not only its argmax
                logits, _ = model(out.prompt_ids, attn_mask=prefill_mask(out.prompt_mask))
                p_think = torch.softmax(logits[:, -1].float(), -1)[:, think_id].tolist()
            if p_think_cache is not None:
                p_think_cache[key] = p_think
        for r, comp, n, pt in zip(chunk, out.completions(), n_tok, p_think, strict=True):
            text = tokenizer.decode([t for t in comp if t != tokenizer.eos_id])
            mode = fmt.mode(text)
            want = "think" if r["complexity"] == "complex" else "no_think"
            records.append({"cell": f"{r['complexity']}-{r['phrasing']}",
                            "correct": float(fmt.is_correct(text, r["answer"])),
                            "think": float(mode == "think"), "invalid": float(mode == "invalid"),
                            "mode_ok": float(mode == want), "tokens": float(n), "p_think": pt})
    report: dict[str, dict[str, float]] = {}
    groups = {c: [x for x in records if x["cell"] == c] for c in CELLS}
    groups["overall"] = records
    for name, recs in groups.items():
        if not recs:
            continue
        report[name] = {
            "accuracy": float(np.mean([x["correct"] for x in recs])),
            "think_rate": float(np.mean([x["think"] for x in recs])),
            "tokens": float(np.mean([x["tokens"] for x in recs])),
            "mode_accuracy": float(np.mean([x["mode_ok"] for x in recs])),
            "invalid_rate": float(np.mean([x["invalid"] for x in recs])),
            "think_prob": float(np.mean([x["p_think"] for x in recs])),
            "n": float(len(recs)),
        }
    summary = {}
    if "simple-verbose" in report and "simple-concise" in report:
        summary["robustness_gap"] = report["simple-verbose"]["think_rate"] - report["simple-concise"]["think_rate"]
    cx = [x for x in records if x["cell"].startswith("complex")]
    if cx:
        summary["complex_accuracy"] = float(np.mean([x["correct"] for x in cx]))
    report["summary"] = summary
    return report


@torch.no_grad()
def reference_think_accuracy(model: torch.nn.Module, tokenizer: CharTokenizer, rows: Sequence[dict],
                             *, k: int = 16, fmt: ModeFormat | None = None, temperature: float = 1.0,
                             prompt_length: int | None = None, max_new_tokens: int = 32,
                             seed: int = 0, batch_size: int = 2048) -> dict[str, float]:
    """Rbar_ref(x) for AdaptThink's reward: the mean accuracy of ``k`` forced-think samples of the
    reference model per prompt (AdaptThink pre-samples K=16; its ``avg_acc_thinking``).
    Duplicate prompts are sampled once; all samples are drawn in batches of ``batch_size`` rows."""
    fmt = fmt or ModeFormat()
    if k < 1:
        raise ValueError("k must be >= 1")
    if len(rows) == 0:
        raise ValueError("no rows")
    g = torch.Generator().manual_seed(seed)
    think_id = tokenizer.token_id(fmt.think)
    uniq = {r["prompt"]: str(r["answer"]) for r in rows}
    P = prompt_length or max(len(encode_prompt(tokenizer, p)) for p in uniq)
    kind = {r["prompt"]: r.get("complexity", "") for r in rows}
    flat = [{"prompt": p, "answer": a, "complexity": kind[p]} for p, a in uniq.items() for _ in range(k)]
    correct: dict[str, list[float]] = {p: [] for p in uniq}
    for rows_ in _chunks_by_complexity(flat, batch_size):
        chunk = [(r["prompt"], r["answer"]) for r in rows_]
        gen = generate(model, [encode_prompt(tokenizer, p) for p, _ in chunk], max_new_tokens=max_new_tokens,
                       pad_id=tokenizer.pad_id, stop_ids=[tokenizer.eos_id], temperature=temperature,
                       force_prefix=[[think_id]] * len(chunk), prompt_length=P, generator=g)
        for (p, a), c in zip(chunk, gen.completions(), strict=True):
            text = tokenizer.decode([t for t in c if t != tokenizer.eos_id])
            correct[p].append(float(fmt.is_correct(text, a)))
    return {p: float(np.mean(v)) for p, v in correct.items()}

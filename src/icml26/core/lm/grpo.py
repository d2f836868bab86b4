"""GRPO: group-relative policy optimisation, with the math in small TRL-compatible functions.

For each prompt, ``G = num_generations`` completions are sampled; reward functions score them,

    A_i = r_i - mean_j r_j                      (within the group of prompt i)
    A_i <- A_i / (std_j r_j + 1e-4)              if scale_rewards == "group"  (TRL default)

and the per-token loss is the clipped surrogate plus an optional k3 KL to a reference model,

    rho_{i,t} = exp(log pi_theta - log pi_old)
    l_{i,t}   = -min(rho A_i, clip(rho, 1 - eps_low, 1 + eps_high) A_i) + beta * KL3_{i,t}
    KL3       = exp(q) - q - 1,  q = log pi_ref - log pi_theta        (Schulman's k3 estimator)

With ``importance_sampling_level="sequence"`` (TRL's name; GSPO, and AdaptThink's
``adjust_old_logprobs`` branch) the ratio is one per sequence, rho_i = exp(mean_t(log pi_theta -
log pi_old)), applied to every token of sequence i.

Advantages: ``advantage_estimator="grpo"`` is the group-relative one above; ``"naive"`` is
A_i = r_i, un-centred (verl's ``adv_estimator=naive``, used by AdaptThink, whose reward carries
its own baseline R_ref(x)). ``forced_old_logprob`` replaces log pi_old of forced (not sampled)
completion tokens, AdaptThink's importance-sampling correction of the forced mode token.

The per-token losses are aggregated by ``loss_type``:

- ``"grpo"``:    mean over each sequence's tokens, then over sequences (Shao et al. 2024,
  arXiv:2402.03300, Eq. 3);
- ``"dr_grpo"``: sum over all tokens / (B * max_completion_length) (Liu et al. 2025, arXiv:2503.20783);
- ``"dapo"`` / ``"bnpo"``: sum over all tokens / number of active tokens (Yu et al. 2025,
  arXiv:2503.14476; TRL's default ``"dapo"``).

Names follow ``trl.GRPOConfig`` / ``GRPOTrainer`` (``num_generations``, ``epsilon``,
``epsilon_high``, ``beta``, ``loss_type``, ``scale_rewards``, ``mask_truncated_completions``,
``reward_weights``). A reward function is a plain callable
``f(prompts, completions, **columns) -> list[float]``, exactly TRL's signature: extra dataset
columns arrive as keyword lists aligned with ``prompts``. ``token_weights`` generalises DeGRPO's
decoupled control-token weight (Thinkless, arXiv:2505.13379).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..progress import tick
from .generate import GenerationOutput, generate, prefill_mask
from .logprobs import token_logprobs

RewardFunc = Callable[..., Sequence[float]]
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo")
SCALE_REWARDS = ("group", "batch", "none")
IS_LEVELS = ("token", "sequence")
ADVANTAGE_ESTIMATORS = ("grpo", "naive")


@dataclass(frozen=True)
class GRPOConfig:
    """GRPO hyperparameters (field names and defaults of ``trl.GRPOConfig`` unless noted).

    Attributes
    ----------
    num_generations : int, defaults to 8 -- group size G
    max_completion_length : int, defaults to 64 (TRL: 256; ours fits tiny contexts)
    temperature : float, defaults to 1.0
    top_k : int or None, defaults to None
    beta : float, defaults to 0.0 -- KL coefficient (TRL default since v0.19)
    epsilon : float, defaults to 0.2 -- lower clip
    epsilon_high : float or None, defaults to None (= epsilon)
    loss_type : str, defaults to ``"dapo"``
    scale_rewards : str, defaults to ``"group"`` -- ``"group"``, ``"batch"`` or ``"none"``
    mask_truncated_completions : bool, defaults to False -- drop rows without a stop token
    num_iterations : int, defaults to 1 -- policy updates per generation batch (mu)
    reward_weights : tuple of float or None -- weights of the reward functions (default all 1)
    learning_rate : float, defaults to 1e-4 (TRL: 1e-6 for LLMs; ours for tiny models)
    per_device_train_batch_size : int, defaults to 8 -- *prompts* per step (TRL counts
        completions; we count prompts, each expanded to ``num_generations`` completions)
    max_steps : int, defaults to 100
    max_grad_norm : float, defaults to 1.0
    seed : int, defaults to 0
    importance_sampling_level : str, defaults to ``"token"`` -- ``"token"`` or ``"sequence"``
        (TRL field; ``"sequence"`` = per-sequence mean log-ratio, as AdaptThink's
        ``compute_policy_loss`` with ``adjust_old_logprobs=True``)
    advantage_estimator : str, defaults to ``"grpo"`` -- ``"grpo"`` or ``"naive"`` (A = r;
        verl ``algorithm.adv_estimator``, not a TRL field)
    forced_old_logprob : float or None, defaults to None -- log pi_old assigned to forced
        completion tokens (AdaptThink: log(nothinking_ratio) = log 0.5; not a TRL field)
    """

    num_generations: int = 8
    max_completion_length: int = 64
    temperature: float = 1.0
    top_k: int | None = None
    beta: float = 0.0
    epsilon: float = 0.2
    epsilon_high: float | None = None
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    mask_truncated_completions: bool = False
    num_iterations: int = 1
    reward_weights: tuple[float, ...] | None = None
    learning_rate: float = 1e-4
    per_device_train_batch_size: int = 8
    max_steps: int = 100
    max_grad_norm: float = 1.0
    seed: int = 0
    importance_sampling_level: str = "token"
    advantage_estimator: str = "grpo"
    forced_old_logprob: float | None = None

    def __post_init__(self) -> None:
        if self.num_generations < 2:
            raise ValueError("num_generations must be >= 2 (a group needs a baseline)")
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.scale_rewards not in SCALE_REWARDS:
            raise ValueError(f"scale_rewards must be one of {SCALE_REWARDS}, got {self.scale_rewards!r}")
        if not (0 <= self.epsilon < 1) or (self.epsilon_high is not None and self.epsilon_high < 0):
            raise ValueError("epsilon must be in [0, 1) and epsilon_high >= 0")
        if self.beta < 0 or self.temperature < 0 or self.num_iterations < 1:
            raise ValueError("beta and temperature must be >= 0, num_iterations >= 1")
        if self.max_completion_length < 1 or self.per_device_train_batch_size < 1:
            raise ValueError("max_completion_length and per_device_train_batch_size must be >= 1")
        if self.importance_sampling_level not in IS_LEVELS:
            raise ValueError(f"importance_sampling_level must be one of {IS_LEVELS}")
        if self.advantage_estimator not in ADVANTAGE_ESTIMATORS:
            raise ValueError(f"advantage_estimator must be one of {ADVANTAGE_ESTIMATORS}")
        if self.forced_old_logprob is not None and not (
                math.isfinite(self.forced_old_logprob) and self.forced_old_logprob <= 0):
            raise ValueError("forced_old_logprob must be a finite log-probability (<= 0)")


# ----------------------------------------------------------------------------------------------
# The math
# ----------------------------------------------------------------------------------------------


def compute_advantages(rewards: torch.Tensor, num_generations: int,
                       scale_rewards: str = "group") -> torch.Tensor:
    """Group-relative advantages (module docstring), shape (N,) for N = groups * G rewards.

    ``rewards`` is ordered group by group (the G completions of prompt 0 first). The std is the
    unbiased one plus 1e-4, as in TRL.

    Raises
    ------
    ValueError
        ``num_generations < 2`` (one completion has no group baseline: its std is NaN), a
        reward vector that is not 1-D or not a multiple of G long, NaN/inf rewards.
    """
    if isinstance(num_generations, bool) or not isinstance(num_generations, int) or num_generations < 2:
        raise ValueError(f"num_generations must be an int >= 2, got {num_generations!r}")
    if not isinstance(rewards, torch.Tensor) or not rewards.is_floating_point():
        raise ValueError("rewards must be a floating-point tensor")
    if rewards.dim() != 1 or rewards.numel() % num_generations:
        raise ValueError(f"rewards must be 1-D with a multiple of {num_generations} entries, "
                         f"got shape {tuple(rewards.shape)}")
    if not bool(torch.isfinite(rewards).all()):
        raise ValueError("rewards contain NaN or inf")
    if scale_rewards not in SCALE_REWARDS:
        raise ValueError(f"scale_rewards must be one of {SCALE_REWARDS}")
    grouped = rewards.view(-1, num_generations)
    adv = (grouped - grouped.mean(dim=1, keepdim=True)).reshape(-1)
    if scale_rewards == "group":
        std = grouped.std(dim=1).repeat_interleave(num_generations)
        adv = adv / (std + 1e-4)
    elif scale_rewards == "batch":
        adv = adv / (rewards.std() + 1e-4)
    return adv


def k3_kl(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi_theta || pi_ref): exp(q) - q - 1, q = ref - logp (>= 0)."""
    q = ref_logps - logps
    return torch.exp(q) - q - 1.0


def grpo_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    *,
    ref_logps: torch.Tensor | None = None,
    beta: float = 0.0,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    loss_type: str = "dapo",
    max_completion_length: int | None = None,
    token_weights: torch.Tensor | None = None,
    importance_sampling_level: str = "token",
) -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO loss of the module docstring.

    Parameters
    ----------
    logps, old_logps : Tensor, shape (N, T) -- log pi_theta and log pi_old of completion tokens
    advantages : Tensor, shape (N,)
    completion_mask : Tensor, shape (N, T), bool or {0, 1}
    ref_logps : Tensor, shape (N, T), optional -- needed when ``beta > 0``
    token_weights : Tensor, shape (N, T), optional -- multiplies each token's loss (DeGRPO)
    max_completion_length : int, optional -- the ``dr_grpo`` normaliser (default T)
    importance_sampling_level : ``"token"`` (default) or ``"sequence"`` (module docstring)

    Returns
    -------
    loss : scalar Tensor
    metrics : dict -- ``clip_ratio``, ``kl`` (mean over active tokens)
    """
    if logps.dim() != 2:
        raise ValueError(f"logps must have shape (N, T), got {tuple(logps.shape)}")
    if logps.shape != old_logps.shape or logps.shape != completion_mask.shape:
        raise ValueError("logps, old_logps and completion_mask must have the same (N, T) shape")
    if advantages.shape != logps.shape[:1]:
        raise ValueError(f"advantages must have shape ({logps.shape[0]},), got {tuple(advantages.shape)}")
    if ref_logps is not None and ref_logps.shape != logps.shape:
        raise ValueError(f"ref_logps must have shape {tuple(logps.shape)}, got {tuple(ref_logps.shape)}")
    if token_weights is not None and token_weights.shape != logps.shape:
        raise ValueError("token_weights must have the same shape as logps")
    if completion_mask.dtype != torch.bool and not bool(((completion_mask == 0) | (completion_mask == 1)).all()):
        raise ValueError("completion_mask must be bool or contain only 0 and 1")
    for name, t in (("logps", logps), ("old_logps", old_logps), ("advantages", advantages),
                    ("ref_logps", ref_logps), ("token_weights", token_weights)):
        if t is not None and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} contain NaN or inf")
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    if importance_sampling_level not in IS_LEVELS:
        raise ValueError(f"importance_sampling_level must be one of {IS_LEVELS}")
    if not (0 <= epsilon < 1) or (epsilon_high is not None and epsilon_high < 0) or beta < 0:
        raise ValueError("need 0 <= epsilon < 1, epsilon_high >= 0 and beta >= 0")
    if beta > 0 and ref_logps is None:
        raise ValueError("beta > 0 needs ref_logps")
    eps_high = epsilon if epsilon_high is None else epsilon_high
    mask = completion_mask.to(logps.dtype)
    if importance_sampling_level == "sequence":
        log_ratio = ((logps - old_logps) * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True).clamp(min=1.0)
        ratio = torch.exp(log_ratio).expand_as(logps)
    else:
        ratio = torch.exp(logps - old_logps)
    adv = advantages.unsqueeze(1)
    surrogate = torch.min(ratio * adv, torch.clamp(ratio, 1 - epsilon, 1 + eps_high) * adv)
    per_token = -surrogate
    kl = None
    if beta > 0:
        kl = k3_kl(logps, ref_logps)
        per_token = per_token + beta * kl
    if token_weights is not None:
        per_token = per_token * token_weights
    n_active = mask.sum().clamp(min=1.0)
    if loss_type == "grpo":
        loss = ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1.0)).mean()
    elif loss_type == "dr_grpo":
        L = max_completion_length or logps.shape[1]
        loss = (per_token * mask).sum() / (logps.shape[0] * L)
    else:  # dapo / bnpo on one process
        loss = (per_token * mask).sum() / n_active
    clipped = ((ratio < 1 - epsilon) & (adv < 0)) | ((ratio > 1 + eps_high) & (adv > 0))
    metrics = {"clip_ratio": float((clipped.float() * mask).sum() / n_active)}
    metrics["kl"] = float((kl * mask).sum() / n_active) if kl is not None else 0.0
    return loss, metrics


def compute_rewards(
    reward_funcs: Sequence[RewardFunc],
    prompts: Sequence[str],
    completions: Sequence[str],
    reward_weights: Sequence[float] | None = None,
    **columns: Sequence[Any],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Call each reward function TRL-style and return (weighted sum (N,), per-function (N, F)).

    Raises
    ------
    ValueError
        A function returned the wrong number of rewards, or a NaN/inf.
    """
    if not reward_funcs:
        raise ValueError("need at least one reward function")
    weights = list(reward_weights) if reward_weights is not None else [1.0] * len(reward_funcs)
    if len(weights) != len(reward_funcs):
        raise ValueError(f"{len(weights)} reward_weights for {len(reward_funcs)} reward functions")
    n = len(prompts)
    per_func = torch.zeros(n, len(reward_funcs), dtype=torch.float32)
    for j, f in enumerate(reward_funcs):
        values = f(list(prompts), list(completions), **{k: list(v) for k, v in columns.items()})
        arr = np.asarray(values, dtype=np.float64)
        name = getattr(f, "__name__", repr(f))
        if arr.shape != (n,):
            raise ValueError(f"reward function {name} returned {arr.size} rewards for {n} completions")
        if not np.isfinite(arr).all():
            raise ValueError(f"reward function {name} returned NaN or inf")
        per_func[:, j] = torch.as_tensor(arr, dtype=torch.float32)
    return per_func @ torch.as_tensor(weights, dtype=torch.float32), per_func


def completion_logprobs(model: torch.nn.Module, gen: GenerationOutput) -> torch.Tensor:
    """log pi(completion token | context) under ``model`` in the generation layout, shape (N, T)."""
    ids = gen.input_ids
    logits, _ = model(ids, attn_mask=prefill_mask(gen.attention_mask))
    P = gen.prompt_ids.shape[1]
    lp = token_logprobs(logits[:, P - 1:-1], ids[:, P:])
    return lp * gen.completion_mask.to(lp.dtype)


# ----------------------------------------------------------------------------------------------
# The trainer
# ----------------------------------------------------------------------------------------------


@dataclass
class GRPOStepLog:
    """What one :meth:`GRPOTrainer.step` measured."""

    step: int
    loss: float
    reward_mean: float
    reward_std: float
    completion_length: float
    clip_ratio: float
    kl: float
    extras: dict[str, float] = field(default_factory=dict)


class GRPOTrainer:
    """A minimal single-process GRPO trainer on a tiny causal LM (TRL-shaped).

    Parameters
    ----------
    model : causal LM trained in place
    reward_funcs : callable or list of callables ``f(prompts, completions, **columns)``
    args : GRPOConfig
    train_dataset : sequence of dicts with a ``"prompt"`` string and any extra columns
    processing_class : tokenizer with ``encode(str) -> list[int]``, ``decode(ids) -> str``,
        ``pad_id``, ``eos_id`` (e.g. :class:`~icml26.core.lm.tokenizer.CharTokenizer`)
    ref_model : frozen reference for the KL term (default: a copy of ``model`` when beta > 0)
    prompt_length : int, optional -- fixed left-padded prompt length (see ``generate``)
    force_prefix_fn : callable ``(row, j) -> list[int] | None``, optional
        Tokens forced at the start of the j-th completion of a group (AdaptThink-style
        balanced mode sampling, arXiv:2505.13417).
    token_weight_fn : callable ``(GenerationOutput) -> Tensor (N, T)``, optional
        Per-token loss weights (e.g. DeGRPO's control-token weight).
    add_bos : bool -- prepend ``processing_class.bos_id`` to each encoded prompt
    """

    def __init__(
        self,
        model: torch.nn.Module,
        reward_funcs: RewardFunc | Sequence[RewardFunc],
        args: GRPOConfig,
        train_dataset: Sequence[dict],
        processing_class: Any,
        *,
        ref_model: torch.nn.Module | None = None,
        prompt_length: int | None = None,
        force_prefix_fn: Callable[[dict, int], Sequence[int] | None] | None = None,
        token_weight_fn: Callable[[GenerationOutput], torch.Tensor] | None = None,
        add_bos: bool = True,
        stop_ids: Sequence[int] | None = None,
    ) -> None:
        if len(train_dataset) == 0:
            raise ValueError("empty train_dataset")
        if "prompt" not in train_dataset[0]:
            raise KeyError("train_dataset rows need a 'prompt' field")
        self.model = model
        self.reward_funcs = list(reward_funcs) if isinstance(reward_funcs, Sequence) else [reward_funcs]
        self.args = args
        self.dataset = list(train_dataset)
        self.tok = processing_class
        self.add_bos = add_bos
        self.stop_ids = list(stop_ids) if stop_ids is not None else [processing_class.eos_id]
        self.force_prefix_fn = force_prefix_fn
        self.token_weight_fn = token_weight_fn
        self.ref_model = ref_model
        if args.beta > 0 and self.ref_model is None:
            self.ref_model = copy.deepcopy(model)
        if self.ref_model is not None:
            self.ref_model.eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)
        encoded = [self._encode(r["prompt"]) for r in self.dataset]
        self.prompt_length = prompt_length or max(len(e) for e in encoded)
        if max(len(e) for e in encoded) > self.prompt_length:
            raise ValueError("a prompt is longer than prompt_length")
        if self.prompt_length + args.max_completion_length > model.config.block_size:
            raise ValueError(f"prompt_length {self.prompt_length} + max_completion_length "
                             f"{args.max_completion_length} exceeds the context "
                             f"({model.config.block_size})")
        self._encoded = encoded
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.0)
        self.generator = torch.Generator().manual_seed(args.seed)
        self.rng = np.random.default_rng(args.seed)
        self.history: list[GRPOStepLog] = []
        self._order = self.rng.permutation(len(self.dataset))
        self._pos = 0

    def _encode(self, prompt: str) -> list[int]:
        ids = self.tok.encode(prompt)
        return [self.tok.bos_id, *ids] if self.add_bos else ids

    def _next_indices(self) -> list[int]:
        bs = self.args.per_device_train_batch_size
        if self._pos + bs > len(self._order):
            self._order, self._pos = self.rng.permutation(len(self.dataset)), 0
        idx = self._order[self._pos:self._pos + bs]
        self._pos += bs
        return [int(i) for i in idx]

    def _decode(self, ids: Sequence[int]) -> str:
        drop = {self.tok.pad_id, *self.stop_ids}
        return self.tok.decode([i for i in ids if i not in drop])

    def step(self, indices: Sequence[int] | None = None) -> GRPOStepLog:
        """Sample a group per prompt, score it and apply ``num_iterations`` updates."""
        args = self.args
        G = args.num_generations
        indices = list(indices) if indices is not None else self._next_indices()
        rows = [self.dataset[i] for i in indices for _ in range(G)]
        prompts_ids = [self._encoded[i] for i in indices for _ in range(G)]
        force = None
        if self.force_prefix_fn is not None:
            force = [self.force_prefix_fn(self.dataset[i], j) for i in indices for j in range(G)]
        gen = generate(self.model, prompts_ids, max_new_tokens=args.max_completion_length,
                       pad_id=self.tok.pad_id, stop_ids=self.stop_ids, temperature=args.temperature,
                       top_k=args.top_k, force_prefix=force, prompt_length=self.prompt_length,
                       generator=self.generator)
        completions = [self._decode(c) for c in gen.completions()]
        columns = {k: [r[k] for r in rows] for k in rows[0] if k != "prompt"}
        rewards, _ = compute_rewards(self.reward_funcs, [r["prompt"] for r in rows], completions,
                                     args.reward_weights, **columns)
        if args.advantage_estimator == "naive":
            advantages = rewards.clone()
        else:
            advantages = compute_advantages(rewards, G, args.scale_rewards)
        mask = gen.completion_mask.clone()
        if args.mask_truncated_completions:
            mask &= gen.finished.unsqueeze(1)
        weights = self.token_weight_fn(gen) if self.token_weight_fn is not None else None
        ref_lp = None
        if args.beta > 0:
            with torch.no_grad():
                ref_lp = completion_logprobs(self.ref_model, gen)
        old_lp = None
        self.model.train()
        for _ in range(args.num_iterations):
            lp = completion_logprobs(self.model, gen)
            if old_lp is None:  # pi_old = the sampling policy, fixed for all num_iterations
                old_lp = lp.detach()
                if args.forced_old_logprob is not None:
                    old_lp = old_lp.masked_fill(gen.forced_mask & gen.completion_mask, args.forced_old_logprob)
            loss, metrics = grpo_loss(lp, old_lp, advantages, mask, ref_logps=ref_lp, beta=args.beta,
                                      epsilon=args.epsilon, epsilon_high=args.epsilon_high,
                                      loss_type=args.loss_type,
                                      max_completion_length=args.max_completion_length,
                                      token_weights=weights,
                                      importance_sampling_level=args.importance_sampling_level)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if args.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), args.max_grad_norm)
            self.optimizer.step()
        log = GRPOStepLog(
            step=len(self.history), loss=float(loss.detach()), reward_mean=float(rewards.mean()),
            reward_std=float(rewards.std()) if rewards.numel() > 1 else 0.0,
            completion_length=float(gen.completion_mask.sum(1).float().mean()),
            clip_ratio=metrics["clip_ratio"], kl=metrics["kl"],
        )
        self.history.append(log)
        self.last_generation = gen
        self.last_completions = completions
        return log

    def train(self, callback: Callable[[GRPOStepLog, GRPOTrainer], None] | None = None) -> list[GRPOStepLog]:
        """Run ``args.max_steps`` steps; ``callback(log, trainer)`` after each."""
        for k in range(self.args.max_steps):
            tick("grpo", k + 1, self.args.max_steps)
            log = self.step()
            if callback is not None:
                callback(log, self)
        return self.history

"""Iterative RMFT on a Hugging Face model: our rollouts and regret filter, TRL's ``SFTTrainer``.

One iteration (Park et al., arXiv 2511.04393, Sec. 3), as :func:`~.text.iterative_rmft_text`
does it for the tiny LM:

1. roll out L episodes per task with the current model (:func:`~.text.text_rollout` through
   :class:`~icml26.core.lm.hf.HFChat`: each round is one chat turn, system message
   :data:`~.text.LLM_INSTRUCTIONS`, the verbalised history as user message);
2. keep the ``top_k`` lowest-pseudo-regret episodes per task (:func:`~.rmft.select`, the regret
   filter; ``selection="random"`` / ``"reward"`` for the ablations);
3. fine-tune on every turn of the kept episodes with ``trl.SFTTrainer`` (conversational
   prompt-completion data: the loss is on the assistant's rationale + action only).

Usage (not run here)::

    model = AutoModelForCausalLM.from_pretrained("path/or/name")
    tok = AutoTokenizer.from_pretrained("path/or/name")
    sampler = lambda n, s: sample_bandits(n, k=3, horizon=20, seed=s)
    hist = iterative_rmft_hf(model, tok, sampler, RMFTConfig(iterations=4, rollouts_per_task=8, top_k=1))

Not here: the action-only control (``loss_on="action"``) of the tiny-LM track.
"""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from icml26.core.lm.hf import HF_INSTALL_HINT, HFChat
from icml26.core.rl import BanditBatch

from .rmft import RMFTConfig
from .text import LLM_INSTRUCTIONS, TextRMFTHistory, TextTrajectories, rollout_and_select

try:
    import datasets
    from trl import SFTConfig, SFTTrainer
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"icml26.papers.iterative_rmft.hf needs trl and datasets: {HF_INSTALL_HINT}") from exc


def sft_rows(traj: TextTrajectories, *, system: str | None = LLM_INSTRUCTIONS) -> list[dict[str, Any]]:
    """Conversational prompt-completion rows, one per turn of ``traj``, in the conversation the
    rollout used (system message, user = verbalised history; assistant = the response)."""
    sys_msg = [{"role": "system", "content": system}] if system else []
    return [{"prompt": [*sys_msg, {"role": "user", "content": str(p)}],
             "completion": [{"role": "assistant", "content": str(r)}]}
            for p, r in zip(traj.prompts.ravel(), traj.responses.ravel(), strict=True)]


def default_sft_config(config: RMFTConfig, output_dir: str | None = None, **overrides: Any) -> SFTConfig:
    """``SFTConfig`` from the RMFT config's fine-tuning settings: ``sft_epochs`` epochs, AdamW at
    constant ``lr``, ``batch_size`` turns per step; no checkpoints, no external loggers.
    ``overrides`` go to ``SFTConfig`` (e.g. ``bf16=False, use_cpu=True`` on a CPU)."""
    kw = dict(num_train_epochs=config.sft_epochs, learning_rate=config.lr,
              per_device_train_batch_size=config.batch_size, lr_scheduler_type="constant", weight_decay=0.0,
              max_grad_norm=1.0, save_strategy="no", report_to="none", logging_steps=1, disable_tqdm=True)
    kw.update(overrides)
    return SFTConfig(output_dir=output_dir or tempfile.mkdtemp(prefix="rmft-sft-"), **kw)


def iterative_rmft_hf(model: Any, tokenizer: Any, task_sampler: Callable[[int, int], BanditBatch],
                      config: RMFTConfig, sft_args: SFTConfig | None = None, *, seed: int = 0,
                      callback: Callable[[int, TextRMFTHistory], None] | None = None) -> TextRMFTHistory:
    """Iterative RMFT in place on a ``transformers`` causal LM (module docstring).

    Parameters
    ----------
    model, tokenizer : the model (fine-tuned in place; a PEFT model trains its adapters) and its
        tokenizer, which needs a chat template
    task_sampler : ``task_sampler(n, seed) -> BanditBatch`` of Bernoulli bandits
    config : RMFTConfig -- N, L, k, tasks per iteration, rollout temperature, selection,
        ``continue_from``; its ``sft_epochs`` / ``lr`` / ``batch_size`` set the SFT step unless
        ``sft_args`` is given
    sft_args : SFTConfig, optional -- the fine-tuning step (its ``seed`` and ``output_dir`` are
        set per iteration)
    seed : int

    Returns
    -------
    TextRMFTHistory -- per iteration: rollout / kept regret, valid-rationale fractions, SFT loss
    """
    chat = HFChat(model, tokenizer)
    sft_args = sft_args or default_sft_config(config)
    rng = np.random.default_rng(seed)
    hist = TextRMFTHistory()
    base_state = {k: v.detach().clone() for k, v in model.state_dict().items()} \
        if config.continue_from == "base" else None
    pool: list[dict[str, Any]] = []
    for it in range(config.iterations):
        kept = rollout_and_select(chat, task_sampler, config, rng, hist)
        data = sft_rows(kept)
        if base_state is not None:
            pool.extend(data)
            model.load_state_dict(base_state)
            data = pool
        hist.sft_examples += len(data)
        args = copy.copy(sft_args)  # dataclasses.replace would re-run (and refuse) derived fields
        args.seed = int(rng.integers(2**31))
        args.output_dir = os.path.join(sft_args.output_dir, f"iter-{it:03d}")
        trainer = SFTTrainer(model=model, args=args, train_dataset=datasets.Dataset.from_list(data),
                             processing_class=tokenizer)
        hist.sft_loss.append(float(trainer.train().training_loss))
        model.eval()
        if callback:
            callback(it, hist)
    return hist


__all__ = ["default_sft_config", "iterative_rmft_hf", "sft_rows"]

"""Tie-aware DPO as a TRL ``DPOTrainer`` extension: the tie label comes from the dataset.

A preference dataset in TRL's format (``prompt``, ``chosen``, ``rejected``) gets one more column,
``tie`` (bool): for a tie, "chosen"/"rejected" is just an order. :class:`TieAwareDPOTrainer`
keeps the column through TRL's preprocessing and collation (``is_tie`` in every batch), computes
the policy and reference sequence log-probabilities exactly as ``DPOTrainer`` does (sum over
completion tokens, reference from ``ref_model``, the PEFT base model or precomputed columns), and
applies :func:`icml26.core.lm.preference.preference_loss` -- the same function our own
:func:`~.trainer.train_tie_dpo` uses -- with a tie-aware ``loss_type``:

* ``"rao_kupper"`` (DPO-RK), ``"davidson"`` (DPO-D), Chen et al. arXiv 2409.17431, with
  ``tie_prob_at_zero`` setting nu;
* ``"todo"`` (TODO/TOBT, Guo et al. arXiv 2411.02442), margin ``tie_alpha``.

Any other ``loss_type`` is TRL's own loss (ties must then be dropped or given a winner first:
:func:`tie_preference_dataset` does it with the paper's ``tie_handling`` policies).

Usage (not run here)::

    model = AutoModelForCausalLM.from_pretrained("path/or/name")
    tok = AutoTokenizer.from_pretrained("path/or/name")
    ds = tie_preference_dataset(prompts, first, second, labels)          # labels in {+1, -1, 0}
    args = TieAwareDPOConfig(output_dir="out", loss_type="rao_kupper", beta=0.1)
    TieAwareDPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tok).train()

Tested with TRL 1.16: the trainer reuses ``DPOTrainer.compute_ref_log_probs`` and the fused LM
head TRL adds to the model (``model(..., labels=..., fused_lm_head=True).log_probs``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from icml26.core.lm.hf import HF_INSTALL_HINT
from icml26.core.lm.preference import TIE_LOSSES, preference_loss

from .tabular import TIE_HANDLING, resolve_ties

try:
    import datasets
    from accelerate.utils import is_peft_model
    from trl import DPOConfig, DPOTrainer
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"icml26.papers.tie_alignment.hf needs trl and datasets: {HF_INSTALL_HINT}") from exc

_NON_MODEL_KEYS = {"completion_mask", "ref_chosen_logps", "ref_rejected_logps", "is_tie"}


@dataclass
class TieAwareDPOConfig(DPOConfig):
    """``DPOConfig`` with tie-aware loss types (module docstring).

    Parameters
    ----------
    loss_type (`list[str]`, *optional*, defaults to `["rao_kupper"]`):
        One of ``rao_kupper``, ``davidson``, ``todo`` (tie-aware, ours), or TRL's loss types.
    tie_column (`str`, *optional*, defaults to `"tie"`):
        Boolean dataset column marking ties.
    tie_prob_at_zero (`float`, *optional*, defaults to `1/3`):
        P(tie | equal implicit rewards), which sets nu of Rao-Kupper / Davidson (our default,
        :class:`~.tabular.PreferenceConfig`).
    tie_alpha (`float`, *optional*, defaults to `0.5`):
        TODO's margin alpha (the TODO authors' configs).
    """

    loss_type: list[str] = field(default_factory=lambda: ["rao_kupper"])
    tie_column: str = "tie"
    tie_prob_at_zero: float = 1.0 / 3.0
    tie_alpha: float = 0.5


class _TieCollator:
    """Adds ``is_tie`` (bool, one per pair) to the batches of a TRL preference collator."""

    def __init__(self, base: Any, column: str) -> None:
        self.base, self.column = base, column

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        out = self.base(examples)
        if self.column in examples[0]:
            out["is_tie"] = torch.tensor([bool(e[self.column]) for e in examples], dtype=torch.bool)
        return out


class TieAwareDPOTrainer(DPOTrainer):
    """``trl.DPOTrainer`` whose loss reads a tie label per pair (module docstring).

    Same arguments as ``DPOTrainer``; ``args`` should be a :class:`TieAwareDPOConfig`. With no
    ``ref_model``, no PEFT adapter and no precomputed reference log-probabilities, the reference
    is a frozen copy of ``model`` (TRL would reload it from ``model.config._name_or_path``, which a
    model built from a config does not have).
    """

    def __init__(self, model: Any, ref_model: Any = None, args: DPOConfig | None = None, **kwargs: Any) -> None:
        args = args if args is not None else TieAwareDPOConfig("tie-dpo")
        column = getattr(args, "tie_column", "tie")
        losses = [args.loss_type] if isinstance(args.loss_type, str) else list(args.loss_type)
        tie_losses = [lt for lt in losses if lt in TIE_LOSSES]
        if tie_losses and len(losses) != 1:
            raise ValueError(f"a tie-aware loss ({tie_losses}) cannot be combined with other losses: {losses}")
        self.tie_loss = tie_losses[0] if tie_losses else None
        if self.tie_loss is not None:
            if args.ld_alpha is not None or args.f_divergence_type != "reverse_kl" or args.use_weighting:
                raise ValueError("tie-aware losses support neither ld_alpha, f-divergences nor WPO weighting")
        train = kwargs.get("train_dataset")
        if train is not None and self.tie_loss is not None and column not in train.column_names:
            raise ValueError(f"the train dataset has no {column!r} column (bool: is this pair a tie?)")
        if (ref_model is None and not isinstance(model, str) and not is_peft_model(model)
                and not args.precompute_ref_log_probs):
            ref_model = copy.deepcopy(model).eval()
            # a model already given to a TRL trainer carries an instance-level forward (TRL's fused
            # LM head) whose closure calls the *original* model: the copy must use its own class
            # forward (TRL patches the reference again below)
            ref_model.__dict__.pop("forward", None)
            for p in ref_model.parameters():
                p.requires_grad_(False)
        self.tie_column = column
        super().__init__(model=model, ref_model=ref_model, args=args, **kwargs)
        self.data_collator = _TieCollator(self.data_collator, column)

    def _set_signature_columns_if_needed(self) -> None:
        super()._set_signature_columns_if_needed()
        if self.tie_column not in self._signature_columns:
            self._signature_columns = [*self._signature_columns, self.tie_column]

    def sequence_logps(self, model: Any, inputs: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy log-probabilities ``(chosen, rejected)``: sums over the completion tokens, as
        ``DPOTrainer`` computes them (fused LM head, one forward over the concatenated batch)."""
        kwargs = {k: v for k, v in inputs.items() if k not in _NON_MODEL_KEYS}
        kwargs["use_cache"] = False
        completion_mask = inputs["completion_mask"]
        labels = inputs["input_ids"].masked_fill(completion_mask == 0, -100)
        out = model(**kwargs, labels=labels, fused_lm_head=True)
        per_token = out.log_probs[:, -(completion_mask.size(1) - 1):]
        return per_token.sum(dim=1).chunk(2, dim=0)

    def tie_loss_from_logps(self, chosen_logps: torch.Tensor, rejected_logps: torch.Tensor,
                            ref_chosen_logps: torch.Tensor, ref_rejected_logps: torch.Tensor,
                            is_tie: torch.Tensor) -> torch.Tensor:
        """Per-pair loss: :func:`~icml26.core.lm.preference.preference_loss` on the log-ratios."""
        return preference_loss(chosen_logps - ref_chosen_logps, rejected_logps - ref_rejected_logps, is_tie,
                               self.tie_loss, self.beta,
                               tie_prob_at_zero=getattr(self.args, "tie_prob_at_zero", 1.0 / 3.0),
                               alpha=getattr(self.args, "tie_alpha", 0.5))

    def _compute_loss(self, model, inputs, return_outputs):
        inputs = dict(inputs)
        is_tie = inputs.pop("is_tie", None)
        if self.tie_loss is None:
            if is_tie is not None and bool(is_tie.any()):
                raise ValueError(f"loss_type {self.loss_types} cannot use ties: drop them or give them a "
                                 f"winner (tie_preference_dataset), or use one of {TIE_LOSSES}")
            return super()._compute_loss(model, inputs, return_outputs)
        if is_tie is None:
            raise ValueError(f"the batch has no tie labels: is the {self.tie_column!r} column in the dataset?")
        mode = "train" if self.model.training else "eval"
        chosen, rejected = self.sequence_logps(model, inputs)
        if self.precompute_ref_logps:
            ref_chosen, ref_rejected = inputs["ref_chosen_logps"], inputs["ref_rejected_logps"]
        else:
            ref_chosen, ref_rejected = self.compute_ref_log_probs(self.ref_model or self.model, inputs)
        per_pair = self.tie_loss_from_logps(chosen, rejected, ref_chosen, ref_rejected, is_tie.to(chosen.device))
        loss = per_pair.mean()
        gather = self.accelerator.gather_for_metrics
        r_c = self.beta * (chosen - ref_chosen).detach()
        r_r = self.beta * (rejected - ref_rejected).detach()
        decided = ~is_tie
        m = self._metrics[mode]
        m["rewards/chosen"].append(gather(r_c).mean().item())
        m["rewards/rejected"].append(gather(r_r).mean().item())
        m["rewards/margins"].append(gather(r_c - r_r).mean().item())
        m["rewards/abs_margin_ties"].append(
            gather((r_c - r_r).abs()[is_tie]).mean().item() if bool(is_tie.any()) else 0.0)
        m["rewards/accuracies"].append(
            gather((r_c > r_r)[decided].float()).mean().item() if bool(decided.any()) else 0.0)
        m["tie_fraction"].append(gather(is_tie.float()).mean().item())
        m["logps/chosen"].append(gather(chosen.detach()).mean().item())
        m["logps/rejected"].append(gather(rejected.detach()).mean().item())
        if return_outputs:
            with torch.no_grad():
                outputs = model(**{k: v for k, v in inputs.items() if k not in _NON_MODEL_KEYS})
            return loss, outputs
        return loss


def tie_preference_dataset(prompts: Sequence[Any], first: Sequence[Any], second: Sequence[Any],
                           labels: Sequence[int], *, tie_handling: str = "model", seed: int = 0,
                           tie_column: str = "tie") -> datasets.Dataset:
    """A TRL preference dataset from pairs labelled +1 (first preferred), -1 (second) or 0 (tie).

    ``tie_handling`` is :func:`~.tabular.resolve_ties`' policy: ``"model"`` keeps ties (flagged in
    ``tie_column``, for a tie-aware loss), ``"drop"`` discards them, ``"random_winner"`` gives
    each a coin-flip winner (seeded). Prompts and responses may be strings or message lists.
    """
    if not (len(prompts) == len(first) == len(second) == len(labels)):
        raise ValueError("prompts, first, second and labels must have the same length")
    if tie_handling not in TIE_HANDLING:
        raise ValueError(f"tie_handling must be one of {TIE_HANDLING}, got {tie_handling!r}")
    keep, swap, tie = resolve_ties(np.asarray(labels), tie_handling, np.random.default_rng(seed))
    rows = {"prompt": [], "chosen": [], "rejected": [], tie_column: []}
    for i in np.flatnonzero(keep):
        a, b = (second[i], first[i]) if swap[i] else (first[i], second[i])
        rows["prompt"].append(prompts[i])
        rows["chosen"].append(a)
        rows["rejected"].append(b)
        rows[tie_column].append(bool(tie[i]))
    return datasets.Dataset.from_dict(rows)


__all__ = ["TieAwareDPOConfig", "TieAwareDPOTrainer", "tie_preference_dataset"]

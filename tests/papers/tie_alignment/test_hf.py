"""Tie-aware DPO as a TRL DPOTrainer extension, on a tiny transformers model built from a config."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

import torch  # noqa: E402

from icml26.core.lm.hf import char_tokenizer, tiny_causal_lm  # noqa: E402
from icml26.core.lm.logprobs import token_logprobs  # noqa: E402
from icml26.core.lm.preference import preference_loss  # noqa: E402
from icml26.papers.tie_alignment.hf import (  # noqa: E402
    TieAwareDPOConfig,
    TieAwareDPOTrainer,
    tie_preference_dataset,
)

PROMPTS = ["ab", "cd", "ef", "gh", "ij", "kl"]
FIRST = ["x", "yy", "z", "w", "v", "uu"]
SECOND = ["q", "r", "ss", "t", "p", "o"]
LABELS = [1, 0, -1, 0, 1, -1]


@pytest.fixture(scope="module")
def tok():
    return char_tokenizer()


def _trainer(tok, tmp_path, loss_type, **kw):
    # bf16=False: TRL's configs default to bf16 autocast, also on CPU
    args = TieAwareDPOConfig(output_dir=str(tmp_path), loss_type=loss_type, beta=0.5, per_device_train_batch_size=6,
                             max_steps=2, learning_rate=1e-2, bf16=False, report_to="none", use_cpu=True,
                             save_strategy="no", disable_tqdm=True, logging_steps=1)
    ds = kw.pop("dataset", None) or tie_preference_dataset(PROMPTS, FIRST, SECOND, LABELS)
    return TieAwareDPOTrainer(model=tiny_causal_lm(tok, "llama", seed=0), args=args, train_dataset=ds,
                              processing_class=tok, **kw)


def _our_logps(model, batch):
    """Sequence log-probs from the logits (core token_logprobs), independent of TRL's fused head."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    per_token = token_logprobs(logits[:, :-1], batch["input_ids"][:, 1:])
    return (per_token * batch["completion_mask"][:, 1:]).sum(1).chunk(2)


@pytest.mark.parametrize("loss_type", ["rao_kupper", "davidson", "todo"])
def test_loss_on_a_batch_equals_ours_on_the_same_logps(tok, tmp_path, loss_type):
    trainer = _trainer(tok, tmp_path, loss_type)
    batch = next(iter(trainer.get_train_dataloader()))
    assert batch["is_tie"].tolist().count(True) == 2 and batch["is_tie"].shape == (6,)
    for step in range(2):  # at the start (policy = reference) and after two training steps
        trainer.model.eval()
        with torch.no_grad():
            theirs = trainer.compute_loss(trainer.model, dict(batch))
            pc, pr = _our_logps(trainer.model, batch)
            rc, rr = _our_logps(trainer.ref_model, batch)
            ours = preference_loss(pc - rc, pr - rr, batch["is_tie"], loss_type, 0.5).mean()
        assert torch.allclose(theirs, ours, atol=1e-5, rtol=1e-5), (step, float(theirs), float(ours))
        if step == 0:
            trainer.train()
            logs = [h for h in trainer.state.log_history if "loss" in h]
            assert len(logs) == 2 and all(abs(h["tie_fraction"] - 1 / 3) < 1e-6 for h in logs)


def test_dataset_tie_policies():
    ds = tie_preference_dataset(PROMPTS, FIRST, SECOND, LABELS)
    assert ds["tie"] == [False, True, False, True, False, False]
    assert ds["chosen"][2] == "ss" and ds["rejected"][2] == "z"  # label -1: the second is chosen
    dropped = tie_preference_dataset(PROMPTS, FIRST, SECOND, LABELS, tie_handling="drop")
    assert len(dropped) == 4 and not any(dropped["tie"])
    forced = tie_preference_dataset(PROMPTS, FIRST, SECOND, LABELS, tie_handling="random_winner", seed=1)
    assert len(forced) == 6 and not any(forced["tie"])
    with pytest.raises(ValueError, match="tie_handling"):
        tie_preference_dataset(PROMPTS, FIRST, SECOND, LABELS, tie_handling="coin")


def test_binary_losses_refuse_ties_and_a_tie_column_is_required(tok, tmp_path):
    trainer = _trainer(tok, tmp_path, "sigmoid")
    batch = next(iter(trainer.get_train_dataloader()))
    with pytest.raises(ValueError, match="cannot use ties"):
        trainer.compute_loss(trainer.model, dict(batch))
    no_ties = tie_preference_dataset(PROMPTS, FIRST, SECOND, LABELS, tie_handling="drop")
    trainer = _trainer(tok, tmp_path, "sigmoid", dataset=no_ties)
    batch = next(iter(trainer.get_train_dataloader()))
    with torch.no_grad():  # TRL's own sigmoid loss: log 2 while the policy is the reference
        assert abs(float(trainer.compute_loss(trainer.model, dict(batch))) - 0.6931472) < 1e-5
    with pytest.raises(ValueError, match="'tie' column"):
        _trainer(tok, tmp_path, "rao_kupper", dataset=no_ties.remove_columns("tie"))
    with pytest.raises(ValueError, match="combined"):
        _trainer(tok, tmp_path, ["rao_kupper", "sigmoid"])

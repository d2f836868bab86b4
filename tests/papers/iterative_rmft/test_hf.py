"""Iterative RMFT on a tiny transformers model: our rollouts and regret filter, TRL's SFTTrainer."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("trl")

import torch  # noqa: E402

from icml26.core.lm.hf import HFChat, char_tokenizer, tiny_causal_lm  # noqa: E402
from icml26.core.rl import sample_bandits  # noqa: E402
from icml26.papers.iterative_rmft import RMFTConfig, parse_response  # noqa: E402
from icml26.papers.iterative_rmft.hf import default_sft_config, iterative_rmft_hf, sft_rows  # noqa: E402
from icml26.papers.iterative_rmft.text import LLM_INSTRUCTIONS, replicate, text_rollout  # noqa: E402


def _sampler(n, seed):
    return sample_bandits(n, 2, 2, seed=seed)


def test_rollout_through_hfchat_and_sft_rows():
    tok = char_tokenizer()
    chat = HFChat(tiny_causal_lm(tok, "qwen2", seed=0), tok)
    traj = text_rollout(chat, replicate(_sampler(2, 0), 2, 0), seed=0)
    assert traj.prompts.shape == (4, 2) and traj.regret.shape == (4,)
    assert all(isinstance(r, str) for r in traj.responses.ravel())
    assert traj.tokens > 0
    rows = sft_rows(traj)
    assert len(rows) == 8
    assert rows[0]["prompt"] == [{"role": "system", "content": LLM_INSTRUCTIONS},
                                 {"role": "user", "content": traj.prompts[0, 0]}]
    assert rows[0]["completion"] == [{"role": "assistant", "content": traj.responses[0, 0]}]
    assert parse_response("<r>a1=0/1</r>1").action == 1


def test_one_iteration_keeps_the_lowest_regret_episodes_and_fine_tunes(tmp_path):
    tok = char_tokenizer()
    model = tiny_causal_lm(tok, "llama", seed=0)
    before = [p.detach().clone() for p in model.parameters()]
    cfg = RMFTConfig(iterations=1, rollouts_per_task=3, top_k=1, tasks_per_iter=2, sft_epochs=1, lr=1e-3,
                     batch_size=4)
    sft = default_sft_config(cfg, str(tmp_path), bf16=False, use_cpu=True)  # TRL defaults to bf16
    hist = iterative_rmft_hf(model, tok, _sampler, cfg, sft, seed=0)
    assert len(hist.rollout_regret) == len(hist.sft_loss) == 1
    assert hist.kept_regret[0] <= hist.rollout_regret[0]  # the regret filter keeps the best of L
    assert hist.sft_examples == 2 * 2  # top_k=1 episode per task, 2 turns each
    assert np.isfinite(hist.sft_loss[0])
    assert any(not torch.equal(p, q) for p, q in zip(model.parameters(), before, strict=True))

"""Tests of icml26.core.lm.sft: completion-only masks, weights, a reference loss, training."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from icml26.core.lm.generate import prefill_mask
from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.lm.sft import SFTConfig, build_sft_batch, sft_loss, train_sft


def _model():
    torch.manual_seed(0)
    return TinyCausalLM(LMConfig(vocab_size=10, block_size=16, n_layer=1, n_head=2, n_embd=16))


def test_masks():
    b = build_sft_batch([[1, 3], [1]], [[4, 5, 2], [6, 2]], pad_id=0, prompt_length=3)
    assert b.input_ids.tolist() == [[0, 1, 3, 4, 5, 2], [0, 0, 1, 6, 2, 0]]
    assert b.attention_mask.tolist() == [[0, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 0]]
    assert b.completion_mask.int().tolist() == [[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0]]
    full = build_sft_batch([[1, 3]], [[4]], pad_id=0, completion_only_loss=False)
    assert full.completion_mask.int().tolist() == [[0, 1, 1]]  # first token has no context


def test_loss_equals_reference_cross_entropy():
    model = _model()
    prompts, comps = [[1, 3], [1]], [[4, 5, 2], [6, 2]]
    b = build_sft_batch(prompts, comps, pad_id=0, prompt_length=2, weights=[1.0, 0.5])
    loss = sft_loss(model, b)
    # reference: each example alone (positions as in the padded layout), explicit cross-entropy
    total, count = 0.0, 0
    for i, w in enumerate([1.0, 0.5]):
        ids = b.input_ids[i:i + 1]
        logits, _ = model(ids, attn_mask=prefill_mask(b.attention_mask[i:i + 1]))
        m = b.completion_mask[i, 1:]
        nll = F.cross_entropy(logits[0, :-1][m], ids[0, 1:][m], reduction="sum")
        total = total + w * nll
        count += int(m.sum())
    torch.testing.assert_close(loss, total / count, atol=1e-5, rtol=1e-5)


def test_zero_weight_drops_example_gradient():
    model = _model()
    b = build_sft_batch([[1, 3]], [[4, 2]], pad_id=0, weights=[0.0])
    loss = sft_loss(model, b)
    loss.backward()
    assert all(p.grad is None or p.grad.abs().max() == 0 for p in model.parameters())


def test_train_sft_learns_and_is_deterministic():
    data = [{"prompt_ids": [1, 3 + i % 3], "completion_ids": [6 + i % 3, 2]} for i in range(30)]
    cfg = SFTConfig(learning_rate=1e-2, per_device_train_batch_size=8, max_steps=60, seed=0)
    m1, m2 = _model(), _model()
    l1 = train_sft(m1, data, cfg, pad_id=0)
    l2 = train_sft(m2, data, cfg, pad_id=0)
    assert l1 == l2
    assert l1[-1] < 0.2 * l1[0]


def test_bad_input():
    with pytest.raises(ValueError, match="empty completion"):
        build_sft_batch([[1]], [[]], pad_id=0)
    with pytest.raises(ValueError, match="prompts but"):
        build_sft_batch([[1]], [[2], [3]], pad_id=0)
    with pytest.raises(ValueError, match="finite"):
        build_sft_batch([[1]], [[2]], pad_id=0, weights=[float("nan")])
    with pytest.raises(ValueError, match="learning_rate"):
        SFTConfig(learning_rate=0.0)
    with pytest.raises(ValueError, match="empty SFT dataset"):
        train_sft(_model(), [], SFTConfig(), pad_id=0)

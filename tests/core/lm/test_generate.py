"""Tests of icml26.core.lm.generate: KV-cached sampling equals uncached, padding, forcing, stops."""

from __future__ import annotations

import pytest
import torch

from icml26.core.lm.generate import generate, left_pad
from icml26.core.lm.grpo import completion_logprobs
from icml26.core.lm.model import LMConfig, TinyCausalLM


@pytest.fixture
def model():
    torch.manual_seed(0)
    m = TinyCausalLM(LMConfig(vocab_size=12, block_size=24, n_layer=2, n_head=2, n_embd=16))
    # make the weights larger so that outputs depend visibly on the context
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(8.0)
    return m


PROMPTS = [[1, 3, 4, 5], [1, 6], [1, 7, 8]]


def test_left_pad():
    ids, mask = left_pad([[1, 2], [3]], pad_id=0, length=3)
    assert ids.tolist() == [[0, 1, 2], [0, 0, 3]]
    assert mask.tolist() == [[False, True, True], [False, False, True]]


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_cached_equals_uncached(model, temperature):
    kw = dict(max_new_tokens=8, pad_id=0, temperature=temperature, prompt_length=5)
    a = generate(model, PROMPTS, generator=torch.Generator().manual_seed(3), **kw)
    b = generate(model, PROMPTS, generator=torch.Generator().manual_seed(3), use_cache=False, **kw)
    assert torch.equal(a.completion_ids, b.completion_ids)
    torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-5, rtol=1e-5)


def test_logprobs_match_full_forward(model):
    out = generate(model, PROMPTS, max_new_tokens=6, pad_id=0, temperature=1.0,
                   generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = completion_logprobs(model, out)
    torch.testing.assert_close(out.logprobs, full, atol=1e-5, rtol=1e-5)


def test_padding_does_not_change_a_row(model):
    alone = generate(model, [PROMPTS[1]], max_new_tokens=6, pad_id=0, temperature=0.0, prompt_length=5)
    batch = generate(model, PROMPTS, max_new_tokens=6, pad_id=0, temperature=0.0, prompt_length=5)
    assert torch.equal(alone.completion_ids[0], batch.completion_ids[1])
    torch.testing.assert_close(alone.logprobs[0], batch.logprobs[1], atol=1e-5, rtol=1e-5)


def test_greedy_equals_top_k_1(model):
    a = generate(model, PROMPTS, max_new_tokens=5, pad_id=0, temperature=0.0)
    b = generate(model, PROMPTS, max_new_tokens=5, pad_id=0, temperature=1.0, top_k=1,
                 generator=torch.Generator().manual_seed(0))
    assert torch.equal(a.completion_ids, b.completion_ids)


def test_deterministic_for_a_seed(model):
    kw = dict(max_new_tokens=7, pad_id=0, temperature=1.0)
    a = generate(model, PROMPTS, generator=torch.Generator().manual_seed(5), **kw)
    b = generate(model, PROMPTS, generator=torch.Generator().manual_seed(5), **kw)
    assert torch.equal(a.completion_ids, b.completion_ids)


def test_forced_prefix_and_logprob(model):
    out = generate(model, PROMPTS, max_new_tokens=5, pad_id=0, temperature=1.0,
                   force_prefix=[[9, 10], None, [11]], generator=torch.Generator().manual_seed(0))
    assert out.completion_ids[0, :2].tolist() == [9, 10]
    assert out.completion_ids[2, 0].item() == 11
    assert out.forced_mask[0].tolist()[:3] == [True, True, False]
    assert not out.forced_mask[1].any()
    with torch.no_grad():
        full = completion_logprobs(model, out)
    torch.testing.assert_close(out.logprobs, full, atol=1e-5, rtol=1e-5)


def test_stop_ids_end_rows(model):
    out = generate(model, PROMPTS, max_new_tokens=6, pad_id=0, temperature=0.0,
                   force_prefix=[[2], None, None], stop_ids=[2])
    assert out.finished[0]
    assert out.completion_mask[0].tolist()[0] is True and not out.completion_mask[0, 1:].any()
    assert (out.completion_ids[0, 1:] == 0).all()
    assert (out.logprobs[0, 1:] == 0).all()
    assert out.completions()[0] == [2]


def test_bad_input(model):
    with pytest.raises(ValueError, match="exceeds the model's context"):
        generate(model, [[1] * 20], max_new_tokens=8, pad_id=0)
    with pytest.raises(ValueError, match="empty prompt"):
        generate(model, [[]], max_new_tokens=2, pad_id=0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(model, [[1]], max_new_tokens=0, pad_id=0)
    with pytest.raises(ValueError, match="temperature"):
        generate(model, [[1]], max_new_tokens=2, pad_id=0, temperature=-1.0)
    with pytest.raises(ValueError, match="force_prefix"):
        generate(model, [[1]], max_new_tokens=2, pad_id=0, force_prefix=[[1], [2]])
    with pytest.raises(ValueError, match="longer than prompt_length"):
        generate(model, [[1, 2, 3]], max_new_tokens=2, pad_id=0, prompt_length=2)

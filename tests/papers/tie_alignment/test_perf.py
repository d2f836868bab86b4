"""tie_alignment issue 54 (speed): the faster code paths give the same numbers, bit for bit."""

from __future__ import annotations

import numpy as np
import torch

from icml26.core.lm.sft import build_sft_batch, sft_loss
from icml26.papers.tie_alignment import lm_bench
from icml26.papers.tie_alignment.lm_bench import SymbolTask


def _model(task: SymbolTask) -> torch.nn.Module:
    torch.manual_seed(0)
    model = task.make_model()
    with torch.no_grad():  # away from the near-uniform init, so that rounding would show
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def test_response_logprobs_in_blocks_equals_one_batch(monkeypatch):
    task = SymbolTask(seed=0)  # response_len 3: two levels of cache expansion
    model = _model(task)
    prompts = task.prompts(150, np.random.default_rng(1))
    monkeypatch.setattr(lm_bench, "RESPONSE_BLOCK", 10**6)
    whole = task.response_logprobs(model, prompts)
    for block in (1, 64, 149):
        monkeypatch.setattr(lm_bench, "RESPONSE_BLOCK", block)
        assert torch.equal(task.response_logprobs(model, prompts), whole)
    # the cache expansion equals repeat_interleave (the earlier code), one level by hand
    _, past = model(torch.as_tensor(prompts[:5]))
    k = past[0][0]
    S = task.n_symbols
    assert torch.equal(k.unsqueeze(1).expand(-1, S, *k.shape[1:]).reshape(-1, *k.shape[1:]),
                       k.repeat_interleave(S, 0))


def test_fixed_length_sft_loss_equals_the_core_batch_loss():
    task = SymbolTask(seed=0)
    model = _model(task)
    rng = np.random.default_rng(2)
    prompts = task.prompts(32, rng)
    y = rng.integers(0, task.n_symbols, (32, task.response_len))
    rows = [{"prompt_ids": p.tolist(), "completion_ids": c.tolist(), "ids": np.concatenate([p, c])}
            for p, c in zip(prompts, y, strict=True)]
    fast = task._fixed_length_loss(model, rows, task.prompt_len)
    core = sft_loss(model, build_sft_batch([r["prompt_ids"] for r in rows], [r["completion_ids"] for r in rows],
                                           pad_id=0, prompt_length=task.prompt_len,
                                           weights=[1.0] * len(rows)))
    assert torch.equal(fast, core)

"""Offline text data (Markov corpus with known entropy, stdlib text) and the pretraining loop."""

import math

import numpy as np
import pytest
import torch

from icml26.core.lm.data import MarkovCorpus, char_corpus, eval_windows, get_batch, stdlib_text
from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.lm.train import TrainConfig, evaluate_loss, lr_factor, train_lm


def test_markov_entropy_rate_closed_forms():
    # uniform transitions: entropy log V
    mc = MarkovCorpus("abcd", order=1, concentration=1e6, seed=0)
    assert abs(mc.entropy_rate() - math.log(4)) < 1e-4
    # deterministic-ish chain: entropy near 0
    peaked = MarkovCorpus("abcd", order=2, concentration=1e-3, seed=0)
    assert peaked.entropy_rate() < 0.05


def test_markov_empirical_conditional_entropy_matches():
    mc = MarkovCorpus("abc", order=1, concentration=1.0, seed=3)
    s = mc.sample(60_000, seed=1)
    counts = np.zeros((3, 3))
    idx = ["abc".index(c) for c in s]
    for a, b in zip(idx[:-1], idx[1:], strict=True):
        counts[a, b] += 1
    p = counts / counts.sum()
    cond = counts / counts.sum(1, keepdims=True)
    h = -(p * np.log(np.where(cond > 0, cond, 1))).sum()
    assert abs(h - mc.entropy_rate()) < 0.02
    np.testing.assert_allclose(mc.stationary(), counts.sum(1) / counts.sum(), atol=0.02)


def test_markov_deterministic_and_validated():
    assert MarkovCorpus(seed=1).sample(100, seed=2) == MarkovCorpus(seed=1).sample(100, seed=2)
    with pytest.raises(ValueError):
        MarkovCorpus("aa")
    with pytest.raises(ValueError):
        MarkovCorpus(order=0)
    with pytest.raises(ValueError):
        MarkovCorpus(concentration=0.0)


def test_shipped_corpus_is_the_self_generated_text_and_hash_is_pinned():
    from icml26.core.lm.data import TALES_SHA256, corpus_sha256, corpus_text
    from icml26.core.lm.tales import generate_tales

    text = corpus_text()
    assert len(text) == 400_000 and corpus_sha256(text) == TALES_SHA256
    assert text == generate_tales(400_000, seed=2026)  # the file is our own generator's output
    assert corpus_text(1000) == text[:1000]
    assert set(text) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ,.?\"\n")
    with pytest.raises(ValueError):
        corpus_text(source="web")
    with pytest.raises(ValueError):
        corpus_text(0)


def test_stdlib_text_is_local_and_deterministic():
    a = stdlib_text(5000)
    assert len(a) == 5000 and a == stdlib_text(5000)
    assert all(c == "\n" or 32 <= ord(c) < 127 for c in a)
    assert "def " in stdlib_text(20_000, kind="source")
    with pytest.raises(ValueError):
        stdlib_text(10, kind="html")


def test_char_corpus_and_batches():
    data = char_corpus("hello world, " * 100, val_fraction=0.1)
    assert data.train.dtype == torch.long and len(data.val) == 130
    assert data.tokenizer.decode(data.train[:5].tolist()) == "hello"
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    x, y = get_batch(data.train, 4, 8, g1)
    x2, _ = get_batch(data.train, 4, 8, g2)
    assert torch.equal(x, x2) and x.shape == (4, 8)
    assert torch.equal(x[:, 1:], y[:, :-1])
    ex, ey = eval_windows(data.val, 8)
    assert ex.shape[1] == 8 and torch.equal(ex[:, 1:], ey[:, :-1])
    with pytest.raises(ValueError):
        get_batch(data.val[:5], 2, 8)
    with pytest.raises(ValueError):
        char_corpus("abc")


def test_lr_schedule():
    cfg = TrainConfig(steps=100, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_factor(0, cfg) == pytest.approx(0.1)
    assert lr_factor(9, cfg) == pytest.approx(1.0)
    assert lr_factor(99, cfg) == pytest.approx(0.1, abs=1e-3)
    with pytest.raises(ValueError):
        TrainConfig(min_lr_ratio=2.0)


def _train(seed, steps=40):
    mc = MarkovCorpus("abcdef", order=1, concentration=0.3, seed=0)
    data = char_corpus(mc.sample(20_000, seed=0), 0.1)
    torch.manual_seed(seed)
    model = TinyCausalLM(LMConfig(vocab_size=data.vocab_size, block_size=16, n_layer=1, n_embd=32, n_head=2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    res = train_lm(model, opt, data, TrainConfig(steps=steps, batch_size=16, block_size=16,
                                                 warmup_steps=5, eval_every=20, seed=seed))
    return res, mc, model, data, opt


def test_training_is_deterministic_and_approaches_the_entropy_floor():
    r1, mc, model, data, opt = _train(0, steps=120)
    r2, *_ = _train(0, steps=120)
    assert r1.train_loss == r2.train_loss and r1.val_loss == r2.val_loss
    h = mc.entropy_rate()
    assert r1.val_steps == [20, 40, 60, 80, 100, 120]
    assert r1.final_val_loss < math.log(6) - 0.2  # well below the uniform loss
    assert r1.final_val_loss > h - 0.05  # never below the entropy floor (up to sampling noise)
    assert opt.param_groups[0]["lr"] == 1e-2  # base lr restored
    assert evaluate_loss(model, data.val, 16) == pytest.approx(r1.final_val_loss)


def test_train_rejects_non_optimizer():
    mc = MarkovCorpus(seed=0)
    data = char_corpus(mc.sample(2000), 0.1)
    model = TinyCausalLM(LMConfig(vocab_size=data.vocab_size, block_size=8, n_layer=1, n_embd=16, n_head=2))
    with pytest.raises(TypeError):
        train_lm(model, object(), data, TrainConfig(steps=1, block_size=8))

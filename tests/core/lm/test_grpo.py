"""Tests of icml26.core.lm.grpo: advantages, the clipped loss by hand, KL, rewards, a trainer run."""

from __future__ import annotations

import math

import pytest
import torch

from icml26.core.lm.grpo import (
    GRPOConfig,
    GRPOTrainer,
    compute_advantages,
    compute_rewards,
    grpo_loss,
    k3_kl,
)
from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.lm.tokenizer import CharTokenizer


def test_advantages_by_hand():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    adv = compute_advantages(r, 4, "group")
    std = math.sqrt(1 / 3)  # unbiased std of (1, 0, 0, 1)
    expected = [0.5 / (std + 1e-4), -0.5 / (std + 1e-4)] * 1
    assert adv[:2].tolist() == pytest.approx(expected, rel=1e-6)
    assert adv[4:].abs().max() == 0
    assert compute_advantages(r, 4, "none").tolist() == pytest.approx([0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0])
    batch = compute_advantages(r, 4, "batch")
    assert batch[0].item() == pytest.approx(0.5 / (r.std().item() + 1e-4), rel=1e-6)


def test_advantages_invariant_to_per_group_constant():
    r = torch.tensor([1.0, 0.2, 0.3, 0.9])
    shifted = r + torch.tensor([5.0, 5.0, -2.0, -2.0])
    torch.testing.assert_close(compute_advantages(r, 2), compute_advantages(shifted, 2))


def test_loss_by_hand_all_types():
    logps = torch.log(torch.tensor([[0.5, 0.5, 0.5], [0.2, 0.3, 0.9]]))
    old = torch.log(torch.tensor([[0.25, 0.5, 0.9], [0.2, 0.3, 0.9]]))
    adv = torch.tensor([1.0, -2.0])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    # ratios row 0: 2.0 (clipped to 1.2 with A>0), 1.0 ; row 1: all 1.0
    per_tok = torch.tensor([[-1.2, -1.0, 0.0], [2.0, 2.0, 2.0]])
    m = mask.float()
    expected = {
        "grpo": ((per_tok * m).sum(1) / m.sum(1)).mean(),
        "dapo": (per_tok * m).sum() / m.sum(),
        "bnpo": (per_tok * m).sum() / m.sum(),
        "dr_grpo": (per_tok * m).sum() / (2 * 4),
    }
    for lt, value in expected.items():
        loss, metrics = grpo_loss(logps, old, adv, mask, loss_type=lt, max_completion_length=4)
        assert loss.item() == pytest.approx(value.item(), rel=1e-6), lt
    assert metrics["clip_ratio"] == pytest.approx(1 / 5)


def test_on_policy_gradient_is_policy_gradient():
    theta = torch.tensor([[0.1, -0.3], [0.7, 0.2]], requires_grad=True)
    logps = torch.nn.functional.logsigmoid(theta)
    adv = torch.tensor([1.5, -0.5])
    mask = torch.ones(2, 2, dtype=torch.bool)
    loss, _ = grpo_loss(logps, logps.detach(), adv, mask, loss_type="dapo")
    loss.backward()
    # reference: -(1/N) sum A_i grad log p
    theta2 = theta.detach().clone().requires_grad_(True)
    ref = -(adv.unsqueeze(1) * torch.nn.functional.logsigmoid(theta2)).sum() / 4
    ref.backward()
    torch.testing.assert_close(theta.grad, theta2.grad)


def test_clipped_tokens_have_no_gradient():
    x = torch.tensor([[math.log(0.9)]], requires_grad=True)
    old = torch.tensor([[math.log(0.5)]])  # ratio 1.8 > 1.2
    loss, _ = grpo_loss(x, old, torch.tensor([1.0]), torch.ones(1, 1, dtype=torch.bool))
    loss.backward()
    assert x.grad.abs().item() == 0.0


def test_k3_kl_and_beta():
    lp = torch.log(torch.tensor([[0.2, 0.7]]))
    ref = torch.log(torch.tensor([[0.4, 0.7]]))
    kl = k3_kl(lp, ref)
    q = math.log(2.0)
    assert kl[0, 0].item() == pytest.approx(math.exp(q) - q - 1, rel=1e-6)
    assert kl[0, 1].item() == pytest.approx(0.0, abs=1e-7)
    mask = torch.ones(1, 2, dtype=torch.bool)
    l0, _ = grpo_loss(lp, lp, torch.zeros(1), mask)
    l1, m = grpo_loss(lp, lp, torch.zeros(1), mask, ref_logps=ref, beta=0.1)
    assert (l1 - l0).item() == pytest.approx(0.1 * kl.mean().item(), rel=1e-5)
    assert m["kl"] == pytest.approx(kl.mean().item(), rel=1e-5)
    with pytest.raises(ValueError, match="ref_logps"):
        grpo_loss(lp, lp, torch.zeros(1), mask, beta=0.1)


def test_token_weights():
    lp = torch.log(torch.tensor([[0.5, 0.5]]))
    mask = torch.ones(1, 2, dtype=torch.bool)
    w = torch.tensor([[0.0, 1.0]])
    loss, _ = grpo_loss(lp, lp, torch.tensor([1.0]), mask, token_weights=w)
    assert loss.item() == pytest.approx(-0.5)


def test_compute_rewards_validation():
    def good(prompts, completions, **kw):
        return [float(len(c)) for c in completions]

    total, per = compute_rewards([good, good], ["p", "q"], ["a", "bb"], [1.0, 0.5])
    assert total.tolist() == [1.5, 3.0] and per.shape == (2, 2)

    def short(prompts, completions, **kw):
        return [1.0]

    def nan(prompts, completions, **kw):
        return [float("nan")] * len(completions)

    with pytest.raises(ValueError, match="returned 1 rewards for 2"):
        compute_rewards([short], ["p", "q"], ["a", "b"])
    with pytest.raises(ValueError, match="NaN"):
        compute_rewards([nan], ["p", "q"], ["a", "b"])
    with pytest.raises(ValueError, match="NaN"):
        compute_advantages(torch.tensor([float("nan"), 1.0]), 2)


def test_columns_reach_reward_functions():
    seen = {}

    def f(prompts, completions, answer=None, **kw):
        seen["answer"] = answer
        return [0.0] * len(prompts)

    compute_rewards([f], ["p"], ["c"], answer=["42"])
    assert seen["answer"] == ["42"]


def test_config_validation():
    with pytest.raises(ValueError, match="loss_type"):
        GRPOConfig(loss_type="ppo")
    with pytest.raises(ValueError, match="num_generations"):
        GRPOConfig(num_generations=1)
    with pytest.raises(ValueError, match="scale_rewards"):
        GRPOConfig(scale_rewards="std")


def _setup(seed=0):
    tok = CharTokenizer("ab?", specials=("<pad>", "<bos>", "<eos>"))
    torch.manual_seed(seed)
    model = TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=12, n_layer=1, n_head=2, n_embd=16))
    data = [{"prompt": "?", "target": "a"}, {"prompt": "??", "target": "a"}]

    def starts_with_target(prompts, completions, target=None, **kw):
        return [float(c.startswith(t)) for c, t in zip(completions, target, strict=True)]

    args = GRPOConfig(num_generations=8, max_completion_length=3, learning_rate=3e-2,
                      per_device_train_batch_size=2, max_steps=10, seed=0)
    return tok, model, data, starts_with_target, args


def test_trainer_increases_reward_and_is_deterministic():
    tok, model, data, reward, args = _setup()
    a_id = tok.token_id("a")

    def p_a(m):
        with torch.no_grad():
            logits, _ = m(torch.tensor([[tok.bos_id, tok.token_id("?")]]))
        return torch.softmax(logits[0, -1], -1)[a_id].item()

    before = p_a(model)
    trainer = GRPOTrainer(model, reward, args, data, tok)
    hist = trainer.train()
    assert p_a(model) > before + 0.2
    tok2, model2, data2, reward2, args2 = _setup()
    hist2 = GRPOTrainer(model2, reward2, args2, data2, tok2).train()
    assert [h.loss for h in hist] == [h.loss for h in hist2]


def test_trainer_errors():
    tok, model, data, reward, args = _setup()
    with pytest.raises(ValueError, match="exceeds the context"):
        GRPOTrainer(model, reward, GRPOConfig(max_completion_length=20), data, tok)

    def wrong(prompts, completions, **kw):
        return [0.0]

    tr = GRPOTrainer(model, wrong, args, data, tok)
    with pytest.raises(ValueError, match="rewards for"):
        tr.step()


def test_parity_with_trl_loss():
    trl = pytest.importorskip("trl")  # optional: only where TRL is installed
    assert hasattr(trl, "GRPOConfig")
    cfg = trl.GRPOConfig(output_dir="/tmp/trl_parity", report_to=[])
    ours = GRPOConfig()
    assert (cfg.epsilon, cfg.beta, cfg.loss_type, cfg.num_generations) == (
        ours.epsilon, ours.beta, ours.loss_type, ours.num_generations)

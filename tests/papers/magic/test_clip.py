"""Issue 45 item 5: num_iterations > 1 makes the PPO clip act; the objective is TRL's formula."""

from __future__ import annotations

import copy

import pytest
import torch

from icml26.core.lm.grpo import completion_logprobs, compute_advantages, grpo_loss
from icml26.papers.magic import GameConfig, IntentLanguage, make_agents
from icml26.papers.magic.game import _grpo_update


def trl_grpo_loss(logps, old, adv, mask, eps_low, eps_high):
    """TRL GRPOTrainer._compute_loss, loss_type="grpo", beta=0, written out independently."""
    coef_1 = torch.exp(logps - old)
    coef_2 = torch.clamp(coef_1, 1 - eps_low, 1 + eps_high)
    l1 = coef_1 * adv.unsqueeze(1)
    l2 = coef_2 * adv.unsqueeze(1)
    per_token = -torch.min(l1, l2)
    m = mask.float()
    return ((per_token * m).sum(-1) / m.sum(-1).clamp(min=1.0)).mean()


def test_clipped_objective_equals_trl_on_fixed_inputs():
    g = torch.Generator().manual_seed(0)
    logps = -torch.rand(12, 5, generator=g) * 3
    old = logps + (torch.rand(12, 5, generator=g) - 0.5)  # ratios far from 1: the clip acts
    adv = torch.randn(12, generator=g)
    mask = torch.rand(12, 5, generator=g) > 0.2
    ours, m = grpo_loss(logps, old, adv, mask, epsilon=0.2, loss_type="grpo")
    ref = trl_grpo_loss(logps, old, adv, mask, 0.2, 0.2)
    assert torch.allclose(ours, ref, atol=1e-6)
    assert m["clip_ratio"] > 0.1
    # a mutant without the clip gives a different value on these inputs
    assert not torch.allclose(ref, trl_grpo_loss(logps, old, adv, mask, 10.0, 10.0))


def _setup():
    lang = IntentLanguage(seed=0)
    _, d = make_agents(lang, d_model=16, n_layers=1, seed=0)
    prompts = ["<E1>ejmno", "adklm", "<P1>bqrst", "fijkl"] * 2
    with torch.no_grad():
        gen, _ = d.sample(prompts, 1.0, torch.Generator().manual_seed(1))
    rewards = torch.tensor([1.0, -1.0, 0.5, 0.5, -0.5, 1.5, 0.0, 1.0])
    return d, gen, rewards


@pytest.mark.parametrize("mu", [1, 3])
def test_magic_update_iterations_follow_trl(mu):
    """mu updates on one batch: each iteration's loss is TRL's clipped formula with pi_old the
    sampling policy (replayed by hand on a copy); with mu = 1 the ratio is 1 and nothing clips."""
    d, gen, rewards = _setup()
    cfg = GameConfig(group_size=4, num_iterations=mu, lr_defender=0.05)
    ref_model = copy.deepcopy(d.model)
    opt = torch.optim.AdamW(d.model.parameters(), lr=0.05, weight_decay=0.0)
    log = _grpo_update(d, opt, gen, rewards, 4, cfg)
    # replay by hand
    ref_opt = torch.optim.AdamW(ref_model.parameters(), lr=0.05, weight_decay=0.0)
    adv = compute_advantages(rewards, 4, "group")
    ref_model.train()
    old = completion_logprobs(ref_model, gen).detach()
    for _ in range(mu):
        lp = completion_logprobs(ref_model, gen)
        loss = trl_grpo_loss(lp, old, adv, gen.completion_mask, 0.2, 0.2)
        ref_opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ref_model.parameters(), 1.0)
        ref_opt.step()
    assert log["loss"] == pytest.approx(float(loss), abs=1e-5)
    for p, q in zip(d.model.parameters(), ref_model.parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-5)
    if mu == 1:
        assert log["clip_ratio_max"] == 0.0
    else:
        assert log["clip_ratio_max"] > 0.0  # the clip acted once the policy moved


def test_num_iterations_bad():
    with pytest.raises(ValueError, match="num_iterations"):
        GameConfig(num_iterations=0)

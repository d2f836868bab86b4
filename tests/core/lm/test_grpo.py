"""Tests of icml26.core.lm.grpo: advantages, the clipped loss by hand, KL, rewards, a trainer run."""

from __future__ import annotations

import copy
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
    # bf16 is TRL's default even where no bf16 device exists; the loss defaults do not depend on it
    cfg = trl.GRPOConfig(output_dir="/tmp/trl_parity", report_to=[], bf16=False, use_cpu=True)
    ours = GRPOConfig()
    assert (cfg.epsilon, cfg.beta, cfg.loss_type, cfg.num_generations) == (
        ours.epsilon, ours.beta, ours.loss_type, ours.num_generations)


# ----------------------------------------------------------------------------------------------
# Input validation (issue 22, item 5)
# ----------------------------------------------------------------------------------------------


def test_loss_rejects_bad_shapes_and_nonfinite():
    lp = torch.log(torch.full((2, 3), 0.5))
    mask = torch.ones(2, 3, dtype=torch.bool)
    adv = torch.tensor([1.0, -1.0])
    with pytest.raises(ValueError, match="ref_logps must have shape"):
        grpo_loss(lp, lp, adv, mask, ref_logps=lp[:, :1], beta=0.1)  # would broadcast silently
    with pytest.raises(ValueError, match="ref_logps must have shape"):
        grpo_loss(lp, lp, adv, mask, ref_logps=lp[:1], beta=0.1)
    with pytest.raises(ValueError, match="advantages must have shape"):
        grpo_loss(lp, lp, adv.unsqueeze(1), mask)
    with pytest.raises(ValueError, match=r"\(N, T\)"):
        grpo_loss(lp[0], lp[0], adv[:1], mask[0])
    with pytest.raises(ValueError, match="token_weights"):
        grpo_loss(lp, lp, adv, mask, token_weights=torch.ones(2, 1))
    with pytest.raises(ValueError, match="only 0 and 1"):
        grpo_loss(lp, lp, adv, mask.float() * 2)
    bad = lp.clone()
    bad[0, 1] = float("nan")
    for kw in ({"logps": bad}, {"old_logps": bad}, {"ref_logps": bad, "beta": 0.1}):
        args = {"logps": lp, "old_logps": lp, "advantages": adv, "completion_mask": mask, **kw}
        with pytest.raises(ValueError, match="NaN or inf"):
            grpo_loss(**args)
    with pytest.raises(ValueError, match="advantages contain NaN"):
        grpo_loss(lp, lp, torch.tensor([float("inf"), 0.0]), mask)
    with pytest.raises(ValueError, match="epsilon"):
        grpo_loss(lp, lp, adv, mask, epsilon=-0.1)
    with pytest.raises(ValueError, match="importance_sampling_level"):
        grpo_loss(lp, lp, adv, mask, importance_sampling_level="seq")


def test_advantages_need_a_group():
    with pytest.raises(ValueError, match=">= 2"):
        compute_advantages(torch.tensor([1.0, 0.0]), 1)  # one completion per group: std is NaN
    with pytest.raises(ValueError, match="floating-point"):
        compute_advantages(torch.tensor([1, 0]), 2)
    with pytest.raises(ValueError, match="multiple of 3"):
        compute_advantages(torch.tensor([1.0, 0.0]), 3)
    with pytest.raises(ValueError, match="1-D"):
        compute_advantages(torch.ones(2, 2), 2)
    with pytest.raises(ValueError, match="advantage_estimator"):
        GRPOConfig(advantage_estimator="rloo")
    with pytest.raises(ValueError, match="forced_old_logprob"):
        GRPOConfig(forced_old_logprob=0.5)


# ----------------------------------------------------------------------------------------------
# Clip bounds, sequence-level ratio (issue 22, items 2 and 4)
# ----------------------------------------------------------------------------------------------


def test_asymmetric_clip_bounds_by_hand():
    """epsilon bounds the ratio from below (A < 0), epsilon_high from above (A > 0); swapping
    them changes both numbers below."""
    logps = torch.log(torch.tensor([[1.25], [0.75]])).requires_grad_(True)
    old = torch.zeros(2, 1)  # ratio = 1.25 (A = +1) and 0.75 (A = -1)
    adv = torch.tensor([1.0, -1.0])
    mask = torch.ones(2, 1, dtype=torch.bool)
    loss, m = grpo_loss(logps, old, adv, mask, epsilon=0.2, epsilon_high=0.3, loss_type="grpo")
    # row 0: 1.25 < 1.3, unclipped -> -1.25 ; row 1: 0.75 < 0.8 with A < 0 -> clipped: -(-0.8) = 0.8
    assert loss.item() == pytest.approx((-1.25 + 0.8) / 2, rel=1e-6)
    assert m["clip_ratio"] == pytest.approx(0.5)
    loss.backward()
    assert logps.grad[0, 0].item() != 0.0 and logps.grad[1, 0].item() == 0.0
    swapped, _ = grpo_loss(logps.detach(), old, adv, mask, epsilon=0.3, epsilon_high=0.2, loss_type="grpo")
    assert swapped.item() == pytest.approx((-1.2 + 0.75) / 2, rel=1e-6)


def test_sequence_level_ratio_matches_adaptthink_formula():
    """AdaptThink's adjust_old_logprobs branch: rho_i = exp(masked_mean(logp) - masked_mean(old)),
    loss = mean_i max(-A_i rho_i, -A_i clip(rho_i)) (bojieli/AdaptThink,
    src/adapt_think_core_algos.py, compute_policy_loss)."""
    torch.manual_seed(0)
    logps = (-torch.rand(3, 4)).requires_grad_(True)
    old = -torch.rand(3, 4)
    old[:, 0] = math.log(0.5)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    adv = torch.tensor([0.7, -1.2, 0.05])
    loss, _ = grpo_loss(logps, old, adv, mask, loss_type="grpo", importance_sampling_level="sequence")
    m = mask.float()
    rho = torch.exp((logps * m).sum(1) / m.sum(1) - (old * m).sum(1) / m.sum(1))
    ref = torch.maximum(-adv * rho, -adv * torch.clamp(rho, 0.8, 1.2)).mean()
    torch.testing.assert_close(loss, ref)
    g1 = torch.autograd.grad(loss, logps)[0]
    g2 = torch.autograd.grad(ref, logps)[0]
    torch.testing.assert_close(g1, g2)


# ----------------------------------------------------------------------------------------------
# Trainer wiring (issue 22, item 4): a spy on grpo_loss sees what the trainer passes
# ----------------------------------------------------------------------------------------------


def _spy(monkeypatch):
    import icml26.core.lm.grpo as grpo_mod

    calls = []
    real = grpo_mod.grpo_loss

    def spy(logps, old_logps, advantages, completion_mask, **kw):
        calls.append({"logps": logps.detach().clone(), "old": old_logps.detach().clone(),
                      "adv": advantages.detach().clone(), "mask": completion_mask.clone(), **kw})
        return real(logps, old_logps, advantages, completion_mask, **kw)

    monkeypatch.setattr(grpo_mod, "grpo_loss", spy)
    return calls


def test_trainer_passes_clip_bounds_unswapped(monkeypatch):
    import dataclasses

    calls = _spy(monkeypatch)
    tok, model, data, reward, args = _setup()
    args = dataclasses.replace(args, epsilon=0.1, epsilon_high=0.35, max_steps=1)
    GRPOTrainer(model, reward, args, data, tok).step()
    assert calls[0]["epsilon"] == 0.1 and calls[0]["epsilon_high"] == 0.35


def test_old_policy_is_fixed_across_iterations(monkeypatch):
    """pi_old is the sampling policy for all num_iterations updates; recomputing it each iteration
    would make every ratio 1 (no clipping ever)."""
    import dataclasses

    from icml26.core.lm.grpo import completion_logprobs

    calls = _spy(monkeypatch)
    tok, model, data, reward, args = _setup()
    args = dataclasses.replace(args, num_iterations=3, learning_rate=5e-2)
    trainer = GRPOTrainer(model, reward, args, data, tok)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer.step()
    gen = trainer.last_generation
    snapshot = copy.deepcopy(model)
    snapshot.load_state_dict(before)
    with torch.no_grad():
        lp_sampling = completion_logprobs(snapshot, gen)
    assert len(calls) == 3
    for c in calls:
        torch.testing.assert_close(c["old"], lp_sampling, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(calls[0]["logps"], calls[0]["old"], rtol=1e-5, atol=1e-6)
    assert (calls[2]["logps"] - calls[2]["old"]).abs().max() > 1e-3  # the policy moved; pi_old did not


def test_groups_hold_the_completions_of_one_prompt(monkeypatch):
    calls = _spy(monkeypatch)
    tok = CharTokenizer("abcd?", specials=("<pad>", "<bos>", "<eos>"))
    torch.manual_seed(0)
    model = TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=12, n_layer=1, n_head=2, n_embd=16))
    data = [{"prompt": p, "k": i} for i, p in enumerate(["a?", "bb?", "c?", "dd?"])]
    seen = {}

    def reward(prompts, completions, k=None, **kw):
        seen["prompts"], seen["k"] = list(prompts), list(k)
        return [float(i) + 0.1 * len(c) for i, c in zip(k, completions, strict=True)]

    G = 4
    args = GRPOConfig(num_generations=G, max_completion_length=3, per_device_train_batch_size=3,
                      max_steps=1, seed=1)
    trainer = GRPOTrainer(model, reward, args, data, tok)
    trainer.step()
    prompts, ks = seen["prompts"], seen["k"]
    assert len(prompts) == 3 * G
    for g in range(3):
        block = prompts[g * G:(g + 1) * G]
        assert len(set(block)) == 1 and len(set(ks[g * G:(g + 1) * G])) == 1
    assert len({prompts[g * G] for g in range(3)}) == 3
    # the generated rows really continue the prompt their reward was computed for
    gen = trainer.last_generation
    for r in range(3 * G):
        ids = gen.prompt_ids[r][gen.prompt_mask[r]].tolist()
        assert tok.decode(ids[1:]) == prompts[r]
    # advantages are centred within each group of G: the prompt's own offset k cancels
    adv = calls[0]["adv"].view(3, G)
    torch.testing.assert_close(adv.sum(1), torch.zeros(3), atol=1e-4, rtol=0)


def test_forced_old_logprob_and_naive_advantages(monkeypatch):
    import dataclasses

    calls = _spy(monkeypatch)
    tok, model, data, reward, args = _setup()
    a_id, b_id = tok.token_id("a"), tok.token_id("b")
    args = dataclasses.replace(args, forced_old_logprob=math.log(0.5), advantage_estimator="naive",
                               importance_sampling_level="sequence", loss_type="grpo")
    trainer = GRPOTrainer(model, reward, args, data, tok,
                          force_prefix_fn=lambda row, j: [a_id] if j < 4 else [b_id])
    trainer.step()
    gen, c = trainer.last_generation, calls[0]
    assert bool(gen.forced_mask[:, 0].all()) and not bool(gen.forced_mask[:, 1:].any())
    torch.testing.assert_close(c["old"][:, 0], torch.full((16,), math.log(0.5)))
    torch.testing.assert_close(c["old"][:, 1:], c["logps"][:, 1:], rtol=1e-5, atol=1e-6)
    starts_a = (gen.completion_ids[:, 0] == a_id).float()
    torch.testing.assert_close(c["adv"], starts_a)  # naive: A = r, not centred
    assert c["importance_sampling_level"] == "sequence"

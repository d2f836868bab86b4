"""Unit checks of the brief's §5.3 item 4, the environment and its errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.core.flows import cfm_loss, integrate
from icml26.papers.syvla import (
    EXPERT_ADVANTAGE,
    SPLITS,
    IntentionDecoupler,
    ScriptedExpert,
    SimilarSampleBuffer,
    SSGRLConfig,
    SSGRLTrainer,
    SyVLAPolicy,
    Tabletop2DEnv,
    Vocab,
    advantage_weights,
    group_advantages,
    importance_update,
    masked_combine,
    protect_masks,
    token_grad_mask,
)
from icml26.papers.syvla.env import COLOR_SYN, HELDOUT_COMBOS, IMG


def test_flow_loss_zero_at_true_velocity():
    g = torch.Generator().manual_seed(0)
    x1 = torch.randn(16, 12, generator=g)
    x0 = torch.randn(16, 12, generator=g)
    t = torch.rand(16, generator=g) * 0.9

    def true_v(x, tt, cond):  # straight path: x_t = (1 - t) x0 + t x1, u = x1 - x0 = (x1 - x_t) / (1 - t)
        return (cond - x) / (1 - tt[:, None])

    assert float(cfm_loss(true_v, x1, x1, t=t, x0=x0)) < 1e-10


def test_euler_recovers_point_mass():
    a = torch.tensor([[0.3, -0.7, 0.5, 0.1]])
    x0 = torch.randn(8, 4, generator=torch.Generator().manual_seed(1))
    x = integrate(lambda x, t: (a - x) / (1 - t[:, None]), x0, steps=100, method="euler")
    assert float((x - a).abs().max()) < 1e-3


def test_id_p_masks_hand_computed():
    w = torch.nn.Parameter(torch.zeros(4))
    imp: dict = {}
    g_vl = [torch.tensor([1.0, -4.0, 2.0, 3.0])]
    importance_update(imp, [w], g_vl, ema=0.99)
    importance_update(imp, [w], [torch.tensor([1.0, 0.0, 0.0, 0.0])], ema=0.5)  # I = [1, 2, 1, 1.5]
    assert torch.allclose(imp[w], torch.tensor([1.0, 2.0, 1.0, 1.5]))
    m = protect_masks(imp, [w], 0.5)[0]
    assert m.tolist() == [1.0, 0.0, 1.0, 0.0]  # the two most VL-important entries are protected
    g_act = [torch.tensor([10.0, 20.0, 30.0, 40.0])]
    g = masked_combine(g_vl, g_act, [m])[0]
    assert g.tolist() == [11.0, -4.0, 32.0, 3.0]
    assert protect_masks(imp, [w], 0.0)[0].tolist() == [1.0] * 4
    # norm guard: ||M g_act|| = sqrt(10^2 + 30^2) is scaled to ||g_vl|| = sqrt(30)
    g2 = masked_combine(g_vl, g_act, [m], norm_guard=1.0)[0]
    scale = np.sqrt(30.0) / np.sqrt(1000.0)
    assert np.allclose(g2.tolist(), [1 + 10 * scale, -4, 2 + 30 * scale, 3], atol=1e-5)


def test_decoupler_on_toy_module():
    mod = torch.nn.Module()
    mod.w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    mod.h = torch.nn.Parameter(torch.tensor([3.0]))
    dec = IntentionDecoupler(mod, [mod.w], "grad_norm_mask", protect_ratio=0.5, norm_guard=None)
    vl = (torch.tensor([5.0, 1.0]) * mod.w).sum()          # g_vl = [5, 1] -> protect entry 0
    act = (mod.w * torch.tensor([7.0, 11.0])).sum() * mod.h  # g_act(w) = [21, 33], g(h) = 7 + 22 = 29
    dec.backward(act, vl)
    assert mod.w.grad.tolist() == [5.0, 1.0 + 33.0]
    assert mod.h.grad.tolist() == [29.0]
    with pytest.raises(ValueError, match="mode"):
        IntentionDecoupler(mod, [mod.w], "bogus")


def test_token_grad_mask():
    h = torch.randn(2, 3, 4, requires_grad=True)
    out = token_grad_mask(h, torch.tensor([True, False, True]))
    assert torch.equal(out, h)
    out.sum().backward()
    assert torch.all(h.grad[:, 1] == 0) and torch.all(h.grad[:, [0, 2]] == 1)


def _policy_batch(policy, n=4, seed=0):
    env = Tabletop2DEnv(n, "id", seed)
    obs, _ = env.reset()
    r = torch.stack([torch.tensor(policy.vocab.encode(s, 7)) for s in
                     [__import__("icml26.papers.syvla.env", fromlist=["x"]).reasoning_string(sc)
                      for sc in env.scenes]])
    return obs, r


@pytest.mark.parametrize("vision", ["objects", "patches"])
@pytest.mark.parametrize("mode", ["full", "token", "none"])
def test_id_t_and_ki_gradient_paths(mode, vision):
    torch.manual_seed(0)
    pol = SyVLAPolicy(d=16, layers=2, vision=vision)
    obs, r = _policy_batch(pol)
    pol.set_intent_mode(mode)
    _, c = pol.reasoning_loss_and_intent(obs["image"], obs["instruction"], r)
    loss = pol.action_loss(torch.as_tensor(obs["state"]), c, torch.zeros(4, 4, 3))
    loss.backward()
    # the visual front-end's first layer is a context-only parameter
    patch_g = (pol.vlm.patch.weight if vision == "patches" else pol.vlm.obj[0].weight).grad
    query_g = pol.vlm.query.grad
    if mode == "full":
        assert patch_g is not None and patch_g.abs().sum() > 0  # action gradient reaches context inputs
    if mode == "token":
        # ID-T: no action gradient into context-only parameters, but the query path is trained
        assert patch_g is None or patch_g.abs().sum() == 0
        assert query_g.abs().sum() > 0
        assert pol.vlm.blocks[0].attn.qkv.weight.grad.abs().sum() > 0
    if mode == "token":  # ID-T: every context-only parameter (embeddings) gets exactly 0
        assert all(p.grad is None or torch.all(p.grad == 0) for n, p in pol.vlm.named_parameters()
                   if n.startswith(("tok.", "pos", "obj.", "patch.")))
    if mode == "none":  # KI at full strength: every backbone parameter exactly 0, the query tokens train
        assert all(p.grad is None or torch.all(p.grad == 0) for p in pol.vlm.backbone_parameters())
        assert query_g.abs().sum() > 0 and pol.vlm.query_pos.grad.abs().sum() > 0
        assert all(p.grad.abs().sum() > 0 for p in pol.expert.parameters() if p.dim() > 1)


def test_id_t_context_state_gradient_is_zero():
    torch.manual_seed(0)
    pol = SyVLAPolicy(d=16, layers=2)
    obs, r = _policy_batch(pol)
    img = torch.as_tensor(obs["image"])
    text = torch.cat([pol.vocab.batch(obs["instruction"], 8), torch.full((4, 1), pol.vocab.think), r], 1)
    _, kvs, keyok = pol.vlm.encode(img, text, 9)
    for k, v in kvs:
        k.retain_grad()
        v.retain_grad()
    pol.vlm.intent(kvs, keyok, detach_context=True).sum().backward()
    assert all(k.grad is None and v.grad is None for k, v in kvs)
    assert pol.vlm.query.grad.abs().sum() > 0
    pol.zero_grad()
    _, kvs, keyok = pol.vlm.encode(img, text, 9)
    for k, _v in kvs:
        k.retain_grad()
    pol.vlm.intent(kvs, keyok, detach_context=False).sum().backward()
    assert all(k.grad.abs().sum() > 0 for k, _ in kvs)


def test_knn_retrieval_is_exact():
    rng = np.random.default_rng(0)
    e = rng.standard_normal((200, 8))
    q = rng.standard_normal((10, 8))
    buf = SimilarSampleBuffer(e, k=5)
    got = buf.retrieve(q).numpy()
    en = e / np.linalg.norm(e, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    ref = np.argsort(-(qn @ en.T), axis=1)[:, :5]
    assert np.array_equal(got, ref)
    with pytest.raises(ValueError, match="k must"):
        SimilarSampleBuffer(e, k=0)


def test_advantages():
    assert EXPERT_ADVANTAGE == 1.0
    assert float(advantage_weights([EXPERT_ADVANTAGE])[0]) == 1.0
    a = group_advantages([1, 0, 1, 0, 0.5, 0.5, 0.5, 0.5], 4)
    assert np.allclose(a[:4], [1, -1, 1, -1], atol=1e-5) and np.all(a[4:] == 0)
    assert advantage_weights([-1.0, 0.5, 5.0], w_max=2.0).tolist() == [0.0, 0.5, 2.0]
    with pytest.raises(ValueError):
        group_advantages([1, 2, 3], 2)


def _toy_trainer(experts="similar"):
    torch.manual_seed(0)
    pol = SyVLAPolicy(d=8, layers=1, n_query=2)
    N = 20
    demo = {"state": torch.rand(N, 3), "c": torch.randn(N, 2, 8), "actions": torch.rand(N, 4, 3),
            "key": torch.randn(N, 21)}
    env = Tabletop2DEnv(8, "id", 0)
    return pol, SSGRLTrainer(pol, env, demo, SSGRLConfig(iters=1, group_size=4, num_envs=8, updates_per_iter=1,
                                                         batch=8, experts=experts), seed=0)


def test_equal_rewards_give_gradient_only_from_experts():
    pol, tr = _toy_trainer()
    onp = {"state": torch.rand(6, 3), "c": torch.randn(6, 2, 8), "actions": torch.rand(6, 4, 3, requires_grad=True)}
    adv = group_advantages(np.full(6, 0.3), 3)  # all rewards equal -> advantage 0
    assert np.all(adv == 0)
    exp_idx = torch.tensor([0, 1, 2])
    tr.demo["actions"].requires_grad_(True)
    loss = tr.batch_loss(onp, adv, exp_idx)
    loss.backward()
    assert torch.all(onp["actions"].grad == 0)
    assert tr.demo["actions"].grad[:3].abs().sum() > 0
    assert sum(p.grad.abs().sum() for p in pol.expert.parameters()) > 0


def test_ssg_iteration_runs_and_onpolicy_term_can_be_nonzero():
    pol, tr = _toy_trainer()
    rec = tr.iteration(0)
    assert np.isfinite(rec["loss"]) and 0.0 <= rec["rollout_success"] <= 1.0
    with pytest.raises(ValueError, match="experts"):
        SSGRLConfig(experts="bogus")


def test_expert_succeeds_in_distribution():
    for split in SPLITS:
        env = Tabletop2DEnv(64, split, 3)
        env.reset()
        ex = ScriptedExpert(0.1, seed=0)
        while not env.done.all():
            *_, info = env.step(ex.act(env))
        assert info["success"].mean() >= 0.9, split


def test_splits_and_groups():
    env = Tabletop2DEnv(32, "ood_visual", 0)
    env.reset(group_size=4)
    assert all((s.colors[s.target], s.shapes[s.target]) in HELDOUT_COMBOS for s in env.scenes)
    assert all(env.scenes[i] is env.scenes[i - i % 4] for i in range(32))
    env = Tabletop2DEnv(16, "id", 0)
    env.reset()
    assert all((s.colors[s.target], s.shapes[s.target]) not in HELDOUT_COMBOS for s in env.scenes)
    assert all(not (s.pos[s.target] > 0.55).all() for s in env.scenes)
    env = Tabletop2DEnv(16, "ood_pos", 0)
    env.reset()
    assert all((s.pos[s.target] >= 0.6).all() for s in env.scenes)
    env = Tabletop2DEnv(16, "ood_lang", 0)
    obs, _ = env.reset()
    assert all(COLOR_SYN[s.colors[s.target]] in s.instruction() for s in env.scenes)
    assert obs["image"].shape == (16, IMG, IMG, 3) and obs["state"].shape == (16, 3)


def test_bad_inputs_give_clear_errors():
    v = Vocab()
    with pytest.raises(ValueError, match="unknown word"):
        v.encode("touch the pink hexagon")
    env = Tabletop2DEnv(4, "id", 0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros((4, 3)))
    env.reset()
    with pytest.raises(ValueError, match="action box"):
        env.step(np.full((4, 3), 1.5))
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="split"):
        Tabletop2DEnv(4, "mars", 0)
    with pytest.raises(ValueError, match="divisible"):
        env.reset(group_size=3)
    pol = SyVLAPolicy(d=8, layers=1, n_query=2)
    with pytest.raises(ValueError, match="images must have shape"):
        pol.vqa_logits(np.zeros((2, 16, 16, 3)), ["how many box", "how many orb"])
    with pytest.raises(ValueError, match="unknown word"):
        pol.vqa_logits(np.zeros((1, IMG, IMG, 3)), ["how many hexagons"])
    with pytest.raises(ValueError, match="intent_mode"):
        pol.set_intent_mode("bogus")


def test_policy_act_and_select_action():
    pol = SyVLAPolicy(d=8, layers=1, n_query=2)
    env = Tabletop2DEnv(3, "id", 0)
    obs, _ = env.reset()
    a = pol.act(obs)
    assert a.shape == (3, 4, 3) and float(a.abs().max()) <= 1.0
    pol.reset()
    acts = [pol.select_action(obs) for _ in range(5)]
    assert all(x.shape == (3, 3) for x in acts) and len(pol._queue) == 3
    env.step(acts[0])


def test_pixel_grounding_points_at_the_attended_pixel():
    """With a key that only fires on one pixel, the soft-argmax coordinates are that pixel's centre."""
    from icml26.papers.syvla import PixelGrounding
    from icml26.papers.syvla.env import IMG

    torch.manual_seed(0)
    g = PixelGrounding(8, channels=4, key_dim=4)
    img = torch.zeros(1, IMG, IMG, 3)
    img[0, 5, 17] = 1.0  # row (y) 5, column (x) 17
    with torch.no_grad():
        g.stem = torch.nn.Sequential(torch.nn.Flatten(0, 0))  # identity: features = RGB channels
        g.k = torch.nn.Linear(3, 4, bias=False)
        g.k.weight.zero_()
        g.k.weight[:, 0] = 1.0
        g.q.weight.zero_()
        g.q.bias.fill_(50.0)
        g.out = torch.nn.Linear(2 + 3, 8)
        emb = torch.zeros(1, 2, 8)
        out = g(img, emb, torch.tensor([[True, False]]))
        f = img.permute(0, 3, 1, 2).flatten(2).transpose(1, 2)
        att = torch.softmax(g.q(torch.zeros(1, 1, 16)) @ g.k(f).transpose(1, 2) * g.log_temp.exp() / 2, -1)
        xy = att @ g.pix
    assert torch.allclose(xy[0, 0], torch.tensor([17.5 / IMG, 5.5 / IMG]), atol=1e-4)
    assert torch.all(out[0, 1] == 0)  # invalid (pad) positions get no grounding


def test_grounding_flag_default_off_and_wired():
    pol = SyVLAPolicy(d=16, layers=1)
    assert pol.vlm.ground is None
    pol = SyVLAPolicy(d=16, layers=1, grounding=True)
    obs = {"image": np.random.default_rng(0).random((2, 24, 24, 3)).astype(np.float32),
           "instruction": ["touch the red circle", "touch the blue square"]}
    pol.vqa_logits(obs["image"], ["is the red object left or right"] * 2).sum().backward()
    assert pol.vlm.ground.q.weight.grad.abs().sum() > 0


def test_grounding_does_not_leak_future_reasoning_tokens():
    torch.manual_seed(0)
    pol = SyVLAPolicy(d=16, layers=2, grounding=True)
    img = torch.rand(2, 24, 24, 3)
    instr = pol.vocab.batch(["touch the red circle"] * 2, 8)
    r = torch.randint(3, 20, (2, 7))
    h, _, _ = pol._context(img, instr, r)
    for n in range(7):
        hp, _, _ = pol._context(img, instr, r[:, :n])
        assert torch.allclose(h[:, hp.shape[1] - 1], hp[:, -1], atol=1e-5)

"""Issue 43: KI trains its action side, ID-T's gradient isolation, a real visual shift, state-aware
similar-sample retrieval, the press task."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from icml26.papers.syvla import (
    SyVLAPolicy,
    Tabletop2DEnv,
    make_demo_dataset,
    make_vl_dataset,
    object_tokens,
)
from icml26.papers.syvla.env import HELDOUT_COMBOS, LIGHT, RGB, SPLITS, sample_scene
from icml26.papers.syvla.rl import (
    SimilarSampleBuffer,
    SSGRLConfig,
    SSGRLTrainer,
    instruction_features,
    match_rates,
    perceived_target,
    retrieval_key,
)
from icml26.papers.syvla.train import sft_vla


@pytest.fixture(scope="module")
def small_data():
    return make_demo_dataset(6, seed=0, task="touch", horizon=16), make_vl_dataset(100, seed=0)


def _snapshot(params):
    return [p.detach().clone() for p in params]


def test_ki_trains_queries_and_expert_but_not_the_backbone(small_data):
    """pi0.5-style KI: with the VL and reasoning losses switched off, three steps move the query tokens and the
    action expert and leave every backbone weight bit-identical (its action gradient is exactly 0)."""
    demo, vl = small_data
    torch.manual_seed(0)
    pol = SyVLAPolicy(d=16, layers=2)
    bb, q, ex = (_snapshot(pol.vlm.backbone_parameters()), _snapshot([pol.vlm.query, pol.vlm.query_pos]),
                 _snapshot(pol.expert.parameters()))
    sft_vla(pol, demo, vl, "ki", steps=3, batch=8, vl_batch=4, lambda_r=0.0, lambda_vl=0.0)
    assert all(torch.equal(a, b) for a, b in zip(bb, pol.vlm.backbone_parameters(), strict=True))
    assert all(float((a - b.detach()).abs().max()) > 1e-4 for a, b in zip(q, [pol.vlm.query, pol.vlm.query_pos],
                                                                  strict=True))
    assert all(not torch.equal(a, b) for a, b in zip(ex, pol.expert.parameters(), strict=True))


@pytest.mark.parametrize("mode,backbone_moves", [("naive", True), ("id_t", True), ("ki", False)])
def test_action_loss_reaches_the_backbone_only_where_the_design_says(small_data, mode, backbone_moves):
    """Action loss only (VL and reasoning weights 0): naive and ID-T (through the query path) move the block
    weights; ID-T never moves the embeddings (context-only); KI moves nothing in the backbone."""
    demo, vl = small_data
    torch.manual_seed(0)
    pol = SyVLAPolicy(d=16, layers=2)
    before = {n: p.detach().clone() for n, p in pol.vlm.named_parameters()}
    sft_vla(pol, demo, vl, mode, steps=2, batch=8, vl_batch=4, lambda_r=0.0, lambda_vl=0.0)
    after = dict(pol.vlm.named_parameters())
    blocks = [n for n in before if n.startswith("blocks.")]
    embeds = [n for n in before if n.startswith(("tok.", "obj.")) or n == "pos"]
    assert any(not torch.equal(before[n], after[n]) for n in blocks) == backbone_moves
    assert all(torch.equal(before[n], after[n]) for n in embeds) == (mode != "naive")


def test_id_t_gradient_reaches_blocks_only_through_the_query_path():
    """The documented ID-T weight path: its block-weight gradient equals the gradient of the query pass run on
    constant (detached) context K/V, i.e. nothing flows through the context computation."""
    torch.manual_seed(0)
    pol = SyVLAPolicy(d=16, layers=2)
    env = Tabletop2DEnv(4, "id", 0)
    obs, _ = env.reset()
    r = pol.think(obs["image"], obs["instruction"])
    pol.set_intent_mode("token")
    _, c = pol.reasoning_loss_and_intent(obs["image"], obs["instruction"], r)
    w = pol.vlm.blocks[1].mlp[0].weight
    g1 = torch.autograd.grad(c.square().sum(), w)[0]
    img = torch.as_tensor(obs["image"])
    text = torch.cat([pol.vocab.batch(obs["instruction"], 8), torch.full((4, 1), pol.vocab.think), r], 1)
    _, kvs, keyok = pol.vlm.encode(img, text, 9)
    kvs = [(k.detach(), v.detach()) for k, v in kvs]
    g2 = torch.autograd.grad(pol.vlm.intent(kvs, keyok).square().sum(), w)[0]
    assert g1.abs().sum() > 0 and torch.allclose(g1, g2, atol=1e-6, rtol=1e-5)


def test_visual_shift_changes_the_tokens():
    """The same scene rendered as id and as ood_visual: every object token's colour differs by the lighting."""
    scene = sample_scene(np.random.default_rng(0), "ood_visual")
    env = Tabletop2DEnv(2, "id", 0)
    obs_ood, _ = env.reset(scenes=[scene, scene])
    scene_id = copy.copy(scene)
    scene_id.split = "id"
    obs_id, _ = env.reset(scenes=[scene_id, scene_id])
    f_ood, v_ood = object_tokens(torch.as_tensor(obs_ood["image"]))
    f_id, v_id = object_tokens(torch.as_tensor(obs_id["image"]))
    assert torch.equal(v_ood, v_id)
    assert float((f_ood - f_id).abs().max()) > 0.1
    tgt = np.asarray(RGB[scene.colors[scene.target]], np.float32)
    rgbs = f_ood[0, v_ood[0], :3].numpy()
    assert np.abs(rgbs - tgt * LIGHT).sum(1).min() < 1e-2  # the target is lit, not its ID colour
    assert np.abs(rgbs - tgt).sum(1).min() > 0.05


@pytest.mark.parametrize("split", [s for s in SPLITS if s != "ood_visual"])
def test_id_visual_scenes_never_show_a_heldout_combination(split):
    rng = np.random.default_rng(1)
    for _ in range(1500):
        s = sample_scene(rng, split)
        assert not any((c, sh) in HELDOUT_COMBOS for c, sh in zip(s.colors, s.shapes, strict=True))


def test_touch_is_a_press():
    env = Tabletop2DEnv(2, "id", 0, task="touch")
    env.reset()
    env.eff = env.obj[np.arange(2), env.target].copy()  # on the target, then stay
    *_, info = env.step(np.array([[0.0, 0.0, -1.0], [0.0, 0.0, 1.0]]))
    assert info["success"].tolist() == [False, True]


def test_retrieval_key_and_perceived_target():
    env = Tabletop2DEnv(16, "ood_lang", 3)
    obs, _ = env.reset()
    true = np.stack([s.pos[s.target] for s in env.scenes])
    got = perceived_target(obs["image"], obs["instruction"]).numpy()
    assert np.abs(got - true).max() < 0.06  # pixel centroids of a 24x24 image (synonyms resolved)
    f = instruction_features(["touch the crimson orb", "put the red circle in the azure zone"])
    assert f[0, :9].tolist() == f[1, :9].tolist()[:8] + [0.0] and f[1, 9 + 2] == 1.0
    key = retrieval_key(obs["image"], obs["state"], obs["instruction"])
    assert key.shape == (16, 21) and torch.allclose(key[:, 18:20], key[:, 16:18] - torch.as_tensor(obs["state"])[:, :2])
    with pytest.raises(ValueError, match="instruction"):
        instruction_features(["fly to the moon"])
    with pytest.raises(ValueError, match="state"):
        retrieval_key(obs["image"], obs["state"][:3], obs["instruction"])


def test_retrieved_experts_match_task_and_target_far_more_than_random():
    """Held-out expert chunks (another seed) query the buffer: the retrieved chunk is the same task almost
    always and the same target (same instruction, target within 0.1) far more often than a random chunk."""
    demo = make_demo_dataset(150, seed=3, task="touch", horizon=16)
    held = make_demo_dataset(30, seed=99, task="touch", horizon=16)
    buf = SimilarSampleBuffer(retrieval_key(demo.image, demo.state, demo.instruction), k=1, metric="euclidean")
    q = retrieval_key(held.image, held.state, held.instruction)
    got = match_rates(held.instruction, held.target, demo.instruction, demo.target, buf.retrieve(q))
    rnd = match_rates(held.instruction, held.target, demo.instruction, demo.target, buf.random(len(held)))
    assert got["task"] >= 0.9 and rnd["task"] <= 0.2
    assert got["target"] >= 0.2 and got["target"] >= 4 * max(rnd["target"], 0.02)


def test_euclidean_knn_is_exact():
    rng = np.random.default_rng(0)
    e, q = rng.standard_normal((100, 5)), rng.standard_normal((7, 5))
    got = SimilarSampleBuffer(e, k=3, metric="euclidean").retrieve(q).numpy()
    ref = np.argsort(((q[:, None] - e[None]) ** 2).sum(-1), axis=1)[:, :3]
    assert np.array_equal(got, ref)
    with pytest.raises(ValueError, match="metric"):
        SimilarSampleBuffer(e, metric="manhattan")
    with pytest.raises(ValueError, match="queries"):
        SimilarSampleBuffer(e, k=3).retrieve(q[:, :4])


def test_trainer_records_match_rates():
    demo = make_demo_dataset(20, seed=0, task="touch", horizon=16)
    torch.manual_seed(0)
    pol = SyVLAPolicy(d=8, layers=1, n_query=2)
    with torch.no_grad():
        c = pol.intent(demo.image, demo.instruction,
                       torch.tensor([pol.vocab.encode(r, 7) for r in demo.reasoning]))
    d = {"state": torch.as_tensor(demo.state), "c": c, "actions": torch.as_tensor(demo.actions),
         "key": retrieval_key(demo.image, demo.state, demo.instruction), "instruction": demo.instruction,
         "target": torch.as_tensor(demo.target)}
    rates = {}
    for experts in ("similar", "random"):
        tr = SSGRLTrainer(pol, Tabletop2DEnv(8, "id", 0, task="touch", horizon=16), d,
                          SSGRLConfig(group_size=4, num_envs=8, updates_per_iter=2, batch=8, experts=experts))
        rec = tr.iteration(0)
        rates[experts] = rec["task_match"]
        assert 0.0 <= rec["target_match"] <= rec["task_match"] <= 1.0
    assert rates["similar"] > rates["random"]


def test_bad_inputs_are_refused():
    from icml26.papers.syvla import advantage_weights, group_advantages

    pol = SyVLAPolicy(d=8, layers=1, n_query=2)
    img = np.zeros((1, 24, 24, 3), np.float32)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pol.vqa_logits(img + 255.0, ["how many box"])
    with pytest.raises(ValueError, match="finite"):
        pol.vqa_logits(img * np.nan, ["how many box"])
    with pytest.raises(ValueError, match="finite"):
        advantage_weights([0.5, float("nan")])
    with pytest.raises(ValueError, match="finite"):
        group_advantages([1.0, float("nan")], 2)
    obs, _ = Tabletop2DEnv(2, "id", 0).reset()
    obs["state"] = obs["state"] * np.nan
    with pytest.raises(ValueError, match="state must be finite"):
        pol.act(obs)

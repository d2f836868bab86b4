"""Issue 54 (performance): the caches give the same tensors and frames as computing afresh."""

from __future__ import annotations

import numpy as np
import torch

from icml26.papers.syvla import SyVLAPolicy, Tabletop2DEnv
from icml26.papers.syvla.data import make_demo_dataset, make_vl_dataset
from icml26.papers.syvla.env import IMG
from icml26.papers.syvla.model import REASON_LEN, dataset_object_tokens, object_tokens
from icml26.papers.syvla.train import evaluate_vqa


def test_dataset_object_tokens_equal_minibatch_tokens_exactly():
    vl = make_vl_dataset(150, seed=4)
    feats, valid = dataset_object_tokens(vl, chunk=64)
    assert dataset_object_tokens(vl) is dataset_object_tokens(vl)  # computed once per dataset
    idx = np.random.default_rng(0).integers(0, len(vl), size=32)
    f, v = object_tokens(torch.as_tensor(vl.image[idx]))
    assert torch.equal(feats[idx], f) and torch.equal(valid[idx], v)


def test_cached_tokens_give_the_same_vqa_logits_and_reasoning_loss():
    torch.manual_seed(0)
    pol = SyVLAPolicy(d=16, layers=1)
    vl = make_vl_dataset(40, seed=1)
    idx = np.arange(10, 30)
    a = pol.vqa_logits(vl.image[idx], [vl.question[i] for i in idx])
    f, v = dataset_object_tokens(vl)
    b = pol.vqa_logits(vl.image[idx], [vl.question[i] for i in idx], vis=(f[idx], v[idx]))
    assert torch.equal(a, b)
    assert 0.0 <= evaluate_vqa(pol, vl) <= 1.0
    demo = make_demo_dataset(3, seed=2, task="touch", horizon=8)
    r = torch.tensor([pol.vocab.encode(s, REASON_LEN) for s in demo.reasoning])
    ce1, c1 = pol.reasoning_loss_and_intent(demo.image, demo.instruction, r)
    ce2, c2 = pol.reasoning_loss_and_intent(demo.image, demo.instruction, r, vis=dataset_object_tokens(demo))
    assert torch.equal(ce1, ce2) and torch.equal(c1, c2)


def test_vocab_memo_returns_fresh_lists():
    pol = SyVLAPolicy(d=16, layers=1)
    ids = pol.vocab.encode("touch the red circle", 8)
    ids.append(99)
    assert pol.vocab.encode("touch the red circle", 8) == ids[:-1]


def _fresh_frame(env):
    b = np.arange(env.num_envs)
    img = env._render_objects(b)
    ex = np.clip((env.eff * IMG).astype(int), 0, IMG - 1)
    img[b, ex[:, 1], ex[:, 0]] = np.where(env.grip[:, None] > 0, 0.6, 1.0)
    return img


def test_render_cache_equals_a_fresh_render_when_objects_move():
    env = Tabletop2DEnv(8, "id", 5, task="put")
    env.reset()
    rng = np.random.default_rng(0)
    b = np.arange(env.num_envs)
    env.eff = env.obj[b, env.target].copy()  # on the target: a closed gripper grabs and carries it
    moved = False
    for t in range(10):
        a = np.concatenate([rng.uniform(-1, 1, (env.num_envs, 2)), np.ones((env.num_envs, 1))], 1)
        before = env.obj.copy()
        obs, *_ = env.step(a)
        moved |= bool((env.obj != before).any())
        assert np.array_equal(obs["image"], _fresh_frame(env)), t
    assert moved
    env.obj[0, 0] = (0.5, 0.5)  # moved from outside the env: the next frame shows it
    assert np.array_equal(env._render(), _fresh_frame(env))


def test_seeded_draws_are_remembered_and_leave_the_env_as_a_fresh_draw():
    from icml26.papers.syvla import env as env_mod

    env_mod._DRAWS.clear()
    a = Tabletop2DEnv(16, "ood_visual", 0, task="touch")
    obs_a, _ = a.reset(seed=123, group_size=4)
    state_a = a.rng.bit_generator.state
    b = Tabletop2DEnv(16, "ood_visual", 9, task="touch")
    obs_b, _ = b.reset(seed=123, group_size=4)  # a hit
    assert b.scenes == a.scenes and np.array_equal(obs_a["image"], obs_b["image"])
    assert b.rng.bit_generator.state == state_a
    rng = np.random.default_rng(123)
    fresh = [env_mod.sample_scene(rng, "ood_visual", task="touch") for _ in range(4)]
    assert [s.instruction() for s in fresh] == [a.scenes[4 * i].instruction() for i in range(4)]
    assert all(np.array_equal(f.pos, s.pos) for f, s in zip(fresh, a.scenes[::4], strict=True))
    assert rng.bit_generator.state == state_a
    c = Tabletop2DEnv(16, "id", 0, task="touch")
    c.reset(seed=123, group_size=4)  # another split: its own draw
    assert c.scenes[0] is not a.scenes[0]

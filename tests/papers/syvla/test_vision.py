"""The object-centric tokeniser, the shipped pretrained VLM and the flow loss with repeated draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.papers.syvla import SyVLAPolicy, Tabletop2DEnv
from icml26.papers.syvla.data import make_vl_dataset
from icml26.papers.syvla.env import IMG
from icml26.papers.syvla.model import N_OBJ_TOKENS, OBJ_FEATS, object_tokens
from icml26.papers.syvla.train import PRETRAINED_VLM, VLM_RECIPE, evaluate_vqa, load_pretrained_vlm


def _canvas(bg=(0.25, 0.25, 0.25)):
    img = np.zeros((IMG, IMG, 3), np.float32)
    img[:] = bg
    return img


def test_object_tokens_hand_computed_moments():
    img = _canvas()
    img[2:6, 10:14] = (1.0, 0.0, 0.0)   # 4x4 red square: rows 2-5 (y), columns 10-13 (x)
    img[20, 3] = (0.0, 0.0, 1.0)        # one blue pixel
    f, v = object_tokens(torch.tensor(img[None]))
    assert f.shape == (1, N_OBJ_TOKENS, OBJ_FEATS) and v[0].tolist() == [True, True] + [False] * (N_OBJ_TOKENS - 2)
    red, blue = f[0, 0].double(), f[0, 1].double()   # ordered by mass, largest first
    assert red[:3].tolist() == pytest.approx([1.0, 0.0, 0.0])
    assert float(red[3]) == pytest.approx(16 / IMG ** 2 * 10)
    assert float(red[4]) == pytest.approx(12 / IMG - 0.5, abs=1e-6)  # x centre of columns 10..13
    assert float(red[5]) == pytest.approx(4 / IMG - 0.5, abs=1e-6)   # y centre of rows 2..5
    var = np.var((np.arange(4) + 0.5) / IMG)  # variance of 4 consecutive pixel centres
    assert float(red[6]) == pytest.approx(var * 100, rel=1e-4) and float(red[7]) == pytest.approx(var * 100, rel=1e-4)
    assert float(red[8]) == pytest.approx(0.0, abs=1e-6) and float(red[9]) == pytest.approx(0.0, abs=1e-5)
    assert blue[:3].tolist() == pytest.approx([0.0, 0.0, 1.0])
    assert float(blue[4]) == pytest.approx(3.5 / IMG - 0.5, abs=1e-6) and float(blue[5]) == pytest.approx(20.5 / IMG - 0.5, abs=1e-6)
    assert torch.all(f[0, 2:] == 0)


def test_object_tokens_triangle_skew_sign_and_batch_independence():
    env = Tabletop2DEnv(6, "ood_visual", 3)
    obs, _ = env.reset()
    img = torch.tensor(obs["image"])
    f, v = object_tokens(img)
    for i in range(6):  # each image alone gives the same tokens as inside the batch
        fi, vi = object_tokens(img[i: i + 1])
        assert torch.allclose(fi[0], f[i], atol=1e-6) and torch.equal(vi[0], v[i])
    # every object of every scene has a token whose centroid is within a pixel of its position
    for i, s in enumerate(env.scenes):
        cent = f[i, v[i], 4:6].numpy() + 0.5
        for p in s.pos:
            assert np.min(np.linalg.norm(cent - p, axis=1)) < 1.5 / IMG


def test_object_tokens_keep_the_k_largest():
    img = _canvas()
    for j in range(10):  # 10 single-colour blobs of growing size
        img[j * 2: j * 2 + 2, : j + 1] = (j / 10, 0.5, 1.0 - j / 10)
    f, v = object_tokens(torch.tensor(img[None]), k=3)
    assert v.all() and f.shape == (1, 3, OBJ_FEATS)
    masses = f[0, :, 3].tolist()
    assert masses == sorted(masses, reverse=True)
    assert masses[0] == pytest.approx(20 / IMG ** 2 * 10)


def test_fm_repeats_average_repeated_draws():
    pol = SyVLAPolicy(d=8, layers=1, n_query=2)
    g = torch.Generator().manual_seed(0)
    state, c = torch.rand(5, 3, generator=g), torch.randn(5, 2, 8, generator=g)
    acts = torch.rand(5, 4, 3, generator=g) * 2 - 1
    torch.manual_seed(0)
    per = pol.action_loss(state, c, acts, reduction="none", repeats=3, generator=torch.Generator().manual_seed(1))
    # the same draws by hand: 3 stacked copies, averaged per chunk
    from icml26.core.flows import cfm_loss
    ref = cfm_loss(pol.expert, acts.reshape(5, -1).repeat(3, 1), pol.cond(state, c).repeat(3, 1),
                   reduction="none", generator=torch.Generator().manual_seed(1)).reshape(3, 5).mean(0)
    assert torch.allclose(per, ref, atol=1e-6)
    assert float(pol.action_loss(state, c, acts, repeats=3, generator=torch.Generator().manual_seed(1))) == \
        pytest.approx(float(ref.mean()), abs=1e-6)
    with pytest.raises(ValueError, match="repeats"):
        pol.action_loss(state, c, acts, repeats=0)
    with pytest.raises(ValueError, match="reduction"):
        pol.action_loss(state, c, acts, reduction="sum")


def test_shipped_vlm_answers_above_the_prior():
    vl = make_vl_dataset(400, seed=123)
    fresh = SyVLAPolicy()
    trained = SyVLAPolicy()
    rep = load_pretrained_vlm(trained)
    assert rep["recipe"] == VLM_RECIPE
    acc_fresh, acc = evaluate_vqa(fresh, vl), evaluate_vqa(trained, vl)
    assert acc >= 0.55 and acc > acc_fresh + 0.15  # the answer prior is ~0.42 on this mix
    # the checkpoint holds the VLM only: a policy's action expert keeps its own initialisation
    torch.manual_seed(7)
    a = SyVLAPolicy()
    torch.manual_seed(7)
    b = SyVLAPolicy()
    load_pretrained_vlm(b)
    assert all(torch.equal(p, q) for p, q in zip(a.expert.parameters(), b.expert.parameters(), strict=True))
    assert not torch.equal(a.vlm.tok.weight, b.vlm.tok.weight)


def test_shipped_vlm_refuses_another_architecture():
    with pytest.raises(ValueError, match="pretrained VLM"):
        load_pretrained_vlm(SyVLAPolicy(d=32))
    with pytest.raises(ValueError, match="pretrained VLM"):
        load_pretrained_vlm(SyVLAPolicy(vision="patches"))
    with pytest.raises(ValueError, match="does not fit"):
        load_pretrained_vlm(SyVLAPolicy(grounding=True))
    with pytest.raises(ValueError, match="does not fit"):
        load_pretrained_vlm(SyVLAPolicy(n_query=2))
    from icml26.harness.config import ConfigError
    from icml26.papers.syvla.experiment import Config
    with pytest.raises(ConfigError, match="pretrained"):
        Config(grounding=True)
    Config(grounding=True, pretrained=False)
    assert PRETRAINED_VLM.exists()


def test_unknown_vision_is_refused():
    with pytest.raises(ValueError, match="vision"):
        SyVLAPolicy(vision="pixels")

"""magic (issue 54): the arms' GRPO runs and the SFT stages in forked workers give exactly the
numbers of a serial run (same threads per run, own seeded generators, agents sent back as
state-dict bytes)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import icml26.papers.magic.experiment as E


def test_forked_arms_equal_serial(monkeypatch):
    c = dataclasses.replace(E.Config.smoke(), n_train_seeds=64, n_eval_seeds=20, n_val_seeds=10, pool_seeds=16,
                            defender_sft_steps=10, attacker_pretrain_steps=5, attacker_sft_steps=5,
                            defender_updates=2, switch_every=1, heldout_programs=2, d_model=16)
    outs = {}
    for workers in (1, 2):
        monkeypatch.setattr(E, "WORKERS", workers)
        outs[workers] = E.run(c, 0)
    serial, forked = outs[1], outs[2]
    assert serial.metrics == forked.metrics
    assert serial.extras["heatmap"] == forked.extras["heatmap"]
    assert serial.extras["magic_rewards"] == forked.extras["magic_rewards"]


def test_agent_bytes_round_trip():
    from icml26.papers.magic import IntentLanguage, make_agents

    a, d = make_agents(IntentLanguage(seed=0), d_model=16, n_layers=1, seed=3)
    _, d2 = make_agents(IntentLanguage(seed=0), d_model=16, n_layers=1, seed=4)
    back = E._agent_from(d2, E._agent_bytes(d))
    for (k, v), (k2, v2) in zip(d.model.state_dict().items(), back.model.state_dict().items(), strict=True):
        assert k == k2 and torch.equal(v, v2)
    assert back.model is not d2.model  # a copy of the template, not the template itself


def test_train_repeats_average_replicates(monkeypatch):
    """``train_repeats = R`` trains every arm R times from sub-seeds seed + 1 + 1000 r: a trained
    arm's metric is the mean of its replicates, replicate 0 is the single run (same lr), and
    the replicates are different runs."""
    monkeypatch.setattr(E, "WORKERS", 1)
    c = dataclasses.replace(E.Config.smoke(), n_train_seeds=64, n_eval_seeds=20, n_val_seeds=10, pool_seeds=16,
                            defender_sft_steps=10, attacker_pretrain_steps=5, attacker_sft_steps=5,
                            defender_updates=3, switch_every=1, heldout_programs=2, d_model=16, lr_grid=(3e-3,))
    one = E.run(c, 0)
    two = E.run(dataclasses.replace(c, train_repeats=2), 0)
    reps = two.extras["replicates"]
    for arm in E.TRAINED:
        for k in ("asr_adaptive", "asr_heldout", "refusal_benign", "refusal_adv_harmful"):
            assert len(reps[arm][k]) == 2
            assert two.metrics[arm][k] == pytest.approx(sum(reps[arm][k]) / 2, abs=1e-12)
            assert reps[arm][k][0] == pytest.approx(one.metrics[arm][k], abs=1e-12)
    for arm in E.ATTACKER_ARMS:
        assert two.metrics[arm]["attacker_asr_end"] == pytest.approx(sum(reps[arm]["attacker_asr_end"]) / 2)
        assert reps[arm]["attacker_asr_end"][0] == pytest.approx(one.metrics[arm]["attacker_asr_end"], abs=1e-12)
        assert two.metrics[arm]["attacker_asr_start"] == one.metrics[arm]["attacker_asr_start"]
    assert two.metrics["base"] == one.metrics["base"]  # the untrained defender is not replicated
    # the second replicate is another GRPO run (some defender behaves differently)
    assert any(reps[arm][k][0] != reps[arm][k][1] for arm in E.TRAINED
               for k in ("asr_adaptive", "asr_heldout", "asr_pool", "refusal_adv_benign"))
    assert two.tuning["magic"].budget["defender_updates"] == 2 * c.defender_updates


def test_train_repeats_bounds():
    with pytest.raises(ValueError, match="train_repeats"):
        dataclasses.replace(E.Config.smoke(), train_repeats=0)

"""The smoke profile's verdicts are pinned; claims name their arms; the quick profile has no POWERLESS control."""

from __future__ import annotations

import dataclasses

import pytest

from icml26.harness import assert_pinned, run_paper
from icml26.harness.config import ConfigError
from icml26.papers.ecg_r1.experiment import ARMS, CLAIMS, RL_ARMS, Config

CLAIM_IDS = {"grounding", "imd_robustness", "evidence_rl"}


def test_smoke_verdicts_are_pinned(tmp_path):
    result = run_paper("ecg_r1", "smoke", out=tmp_path)
    assert result["status"] == "ok", result.get("error")
    assert {c["id"] for c in result["claims"]} == CLAIM_IDS
    assert_pinned(result, __file__)


def test_claims_name_their_arms_and_official_defaults():
    assert {c.id for c in CLAIMS} == CLAIM_IDS
    arms = {c.id: c.arms for c in CLAIMS}
    assert arms["grounding"].control == "wrong_meas_imd" and arms["grounding"].baselines == ("label_only_imd",)
    assert arms["imd_robustness"].control == "protocol_randdrop"
    assert arms["evidence_rl"].control == "rl_accuracy" and arms["evidence_rl"].baselines == ("protocol_imd",)
    assert set(ARMS) | set(RL_ARMS) >= {a for c in CLAIMS for a in c.arms.names}
    c = Config.quick()
    assert (c.p_drop, c.p_swap) == (0.5, 0.1)  # official MODALITY_DROPOUT_PROB, INTERLEAVE_PROB
    assert len(c.seeds) == 3 and c.num_generations == 6  # official num_generations


@pytest.mark.parametrize("change", [{"n_train": 5}, {"p_drop": 1.5}, {"p_swap": -0.1}, {"epochs": 0},
                                    {"fs": 0.0}, {"duration_s": 1.0},
                                    {"num_generations": 1}, {"rl_steps": 0}])
def test_config_bounds(change):
    with pytest.raises(ConfigError):
        dataclasses.replace(Config.smoke(), **change)


@pytest.mark.slow
def test_quick_has_no_powerless_control(tmp_path):
    result = run_paper("ecg_r1", "quick", out=tmp_path)
    assert result["status"] == "ok"
    for c in result["claims"]:
        assert not c["negative_control"]["powerless"], c["id"]


def test_claims_declare_effects_gates_and_plain_noninferiority():
    from icml26.papers.ecg_r1.experiment import SUBSTRATE

    names = {g.name for g in SUBSTRATE}
    for c in CLAIMS:
        assert c.effect is not None and c.effect > 0 and c.effect_source
        assert c.gates and set(c.gates) <= names and c.beyond is not None
        assert "max(" not in c.rule  # the non-inferiority tolerance does not widen with the noise


def test_label_prior_is_the_best_constant_answer():
    from icml26.papers.ecg_r1.evaluate import label_prior_jaccard

    def sol(labels):
        return f"<|answer|>{labels}<|/answer|>"

    train = [sol("sinus rhythm; normal ecg")] * 3 + [sol("sinus rhythm; left axis deviation")]
    test = [sol("sinus rhythm; normal ecg"), sol("atrial fibrillation")]
    out = label_prior_jaccard(train, test)
    assert out["answer"] == "normal ecg; sinus rhythm"
    assert out["jaccard"] == pytest.approx(0.5)  # 1 on the first test record, 0 on the second


def test_gates_and_ratio_rule_on_synthetic_metrics():
    from icml26.harness.claims import measure_gates
    from icml26.papers.ecg_r1.experiment import SUBSTRATE, _ratio_at_most

    m = {"protocol_imd": {"jaccard_both": [0.7, 0.72, 0.68], "prior_jaccard": [0.44, 0.45, 0.43]},
         "protocol_noimd": {"jaccard_both": [0.5, 0.5, 0.5]}}
    gates = {g["name"]: g["passed"] for g in measure_gates(SUBSTRATE, m, Config.smoke())}
    assert gates == {"sft_over_prior": True, "noimd_over_prior": False}
    d = _ratio_at_most([0.1, 0.2, 0.15], [0.4, 0.4, 0.4], 0.5, "")
    assert d.verdict == "reproduced" and d.n == 3 and not d.uses_se and 0 < d.mde < 0.5

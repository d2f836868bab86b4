"""The alternating schedule, the GRPO wiring of both agents, the frozen-attacker control, evaluation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.papers.magic import (
    AlternatingGRPO,
    AlternatingSchedule,
    AttackerReward,
    DefenderReward,
    GameConfig,
    IntentLanguage,
    RuleJudge,
    adaptive_asr,
    asr,
    attack_pool,
    attacker_programs,
    make_agents,
    novelty,
    refusal_rate,
    sft_attacker,
    sft_defender,
)
from icml26.papers.magic.game import execute_completion, pretrain_attacker

LANG = IntentLanguage(seed=0)
JUDGE = RuleJudge(LANG)


def test_schedule_alternates_as_configured():
    s = AlternatingSchedule(15, (1, 1), ("defender", "attacker"))
    roles = [s.role(t) for t in range(60)]
    assert roles == ["defender"] * 15 + ["attacker"] * 15 + ["defender"] * 15 + ["attacker"] * 15
    s2 = AlternatingSchedule(2, (2, 1), ("attacker", "defender"))
    assert [s2.role(t) for t in range(12)] == ["attacker"] * 4 + ["defender"] * 2 + ["attacker"] * 4 + ["defender"] * 2
    assert s.steps_for("defender", 30) == 45
    assert s2.steps_for("defender", 2) == 6


@pytest.mark.parametrize("kwargs,match", [
    ({"switch_every": 0}, "switch_every"), ({"ratio": (1, 0)}, "ratio"), ({"order": ("defender", "x")}, "order"),
])
def test_schedule_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AlternatingSchedule(**kwargs)
    with pytest.raises(ValueError, match="step"):
        AlternatingSchedule().role(-1)


def test_game_config_bad_inputs():
    with pytest.raises(ValueError, match="group_size"):
        GameConfig(group_size=1)
    with pytest.raises(ValueError, match="beta"):
        GameConfig(beta=0.1)
    with pytest.raises(ValueError, match="order"):
        GameConfig(order=("defender", "defender"))


@pytest.fixture(scope="module")
def agents():
    rng = np.random.default_rng(0)
    seeds = LANG.sample_seeds(120, rng)
    att, dfn = make_agents(LANG, d_model=32, seed=0)
    sft_defender(dfn, seeds, 40)
    pretrain_attacker(att, LANG, seeds, 20)
    sft_attacker(att, attack_pool(LANG, seeds[:40]), 100)
    return seeds, att, dfn


def _params(agent):
    return torch.cat([p.detach().flatten() for p in agent.model.parameters()]).clone()


def test_alternating_grpo_trains_the_scheduled_agent_only(agents):
    seeds, att, dfn = agents
    r_def = DefenderReward(JUDGE)
    cfg = GameConfig(switch_every=2, batch_size=8)
    a, d = att.copy(), dfn.copy()
    a0, d0 = _params(a), _params(d)
    game = AlternatingGRPO(a, d, AttackerReward(r_def), r_def, LANG, cfg, seed=0)
    h = game.fit(seeds, defender_updates=4)
    assert h.roles == ["defender"] * 2 + ["attacker"] * 2 + ["defender"] * 2
    assert h.defender_updates == 4 and h.attacker_updates == 2
    assert len(h.defender_checkpoints) == 3 and len(h.attacker_checkpoints) == 2
    assert not torch.equal(a0, _params(a)) and not torch.equal(d0, _params(d))
    # the checkpoint after the first defender block was taken before any attacker update
    assert torch.equal(_params(h.attacker_checkpoints[0]), a0)


def test_frozen_attacker_control_same_defender_updates(agents):
    seeds, att, dfn = agents
    r_def = DefenderReward(JUDGE)
    cfg = GameConfig(switch_every=2, batch_size=8)
    a, d = att.copy(), dfn.copy()
    a0 = _params(a)
    h = AlternatingGRPO(a, d, AttackerReward(r_def), r_def, LANG, cfg, freeze_attacker=True, seed=0).fit(seeds, 4)
    assert h.defender_updates == 4 and h.attacker_updates == 0
    assert torch.equal(a0, _params(a))


def test_attacker_output_format_and_execution(agents):
    seeds, att, _ = agents
    attacks, progs, fmt = attacker_programs(att, LANG, seeds[:30])
    assert fmt > 0.5  # the pool SFT taught the <think>/<answer> format
    for a, p, s in zip(attacks, progs, seeds[:30], strict=True):
        assert JUDGE.prompt_unsafe(a) == s.harmful  # rewrites keep the seed's intent
        if p is not None:
            assert a == LANG.execute(p, s.text)
    assert execute_completion(LANG, "garbage", seeds[0]) == (seeds[0].text, None)
    nov = novelty([("<E1>",), ("<E1>", "<S>"), None, ("<E1>", "<S>")])
    assert nov == {"valid_share": 0.75, "composition_share": 0.5, "distinct_compositions": 1.0}


def test_evaluation_metrics_bounds_and_errors(agents):
    seeds, _, dfn = agents
    harm = [s.text for s in seeds if s.harmful]
    assert 0.0 <= asr(dfn, JUDGE, harm) <= 1.0
    assert 0.0 <= refusal_rate(dfn, harm) <= 1.0
    a = adaptive_asr(dfn, JUDGE, LANG, seeds[:20], budget=3, seed=1)
    assert a == adaptive_asr(dfn, JUDGE, LANG, seeds[:20], budget=3, seed=1)  # deterministic
    with pytest.raises(ValueError, match="at least one"):
        asr(dfn, JUDGE, [])
    with pytest.raises(ValueError, match="harmful"):
        adaptive_asr(dfn, JUDGE, LANG, [s for s in seeds if not s.harmful], budget=2)
    with pytest.raises(ValueError, match="batch_size"):
        r = DefenderReward(JUDGE)
        AlternatingGRPO(*make_agents(LANG, d_model=16), AttackerReward(r), r, LANG,
                        GameConfig(batch_size=64)).fit(seeds[:10], 2)


def test_sft_defender_bad_inputs(agents):
    seeds, _, dfn = agents
    with pytest.raises(ValueError, match="language"):
        sft_defender(dfn.copy(), seeds, 1, uncertain_share=0.3)
    with pytest.raises(ValueError, match="label_noise"):
        sft_defender(dfn.copy(), seeds, 1, label_noise=0.6)
    with pytest.raises(ValueError, match="rewrite_labels"):
        sft_defender(dfn.copy(), seeds, 1, language=LANG, uncertain_share=0.3, rewrite_labels="oracle")


def test_sft_defender_truth_labels_answer_every_rewrite_by_its_seed(agents, monkeypatch):
    """rewrite_labels="truth": the same texts as the coin mode, every rewritten prompt answered by
    its seed's label (refuse iff harmful); "coin" answers them independently of the label."""
    import icml26.papers.magic.game as G

    seeds, _, dfn = agents
    seen = {}

    def capture(model, data, cfg, **kw):
        seen["data"] = data
        return [0.0]

    monkeypatch.setattr(G, "train_sft", capture)
    by_text = {}
    for mode in ("coin", "truth"):
        sft_defender(dfn.copy(), seeds, 1, language=LANG, uncertain_share=0.5, uncertain_max_depth=3,
                     rewrite_labels=mode, seed=4)
        by_text[mode] = [(dfn.decode(r["prompt_ids"]), dfn.decode(r["completion_ids"])) for r in seen["data"]]
    assert [t for t, _ in by_text["coin"]] == [t for t, _ in by_text["truth"]]
    rewritten = [(i, t) for i, (t, _) in enumerate(by_text["truth"]) if t != "<bos>" + seeds[i].text]
    assert 0.3 * len(seeds) < len(rewritten) < 0.7 * len(seeds)
    harmful = {i: seeds[i].harmful for i, _ in rewritten}
    truth = [by_text["truth"][i][1].startswith("<REF>") for i, _ in rewritten]
    coin = [by_text["coin"][i][1].startswith("<REF>") for i, _ in rewritten]
    assert truth == [harmful[i] for i, _ in rewritten]
    assert 0.2 < np.mean([c == harmful[i] for c, (i, _) in zip(coin, rewritten, strict=True)]) < 0.8

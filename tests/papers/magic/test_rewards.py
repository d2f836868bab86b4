"""Reward tables of MAGIC's Eq. 7-11 (Table 6 values r_harm=1, r_ref=0.5, r_fmt=0.5)."""

from __future__ import annotations

import itertools

import pytest

from icml26.core.llm import ScriptedChat
from icml26.papers.magic import (
    AttackerReward,
    DefenderReward,
    GuardJudge,
    IntentLanguage,
    RuleJudge,
    extract_answer,
    format_ok,
    format_reward,
    harm_reward,
    refusal_reward,
)

LANG = IntentLanguage(seed=0)
JUDGE = RuleJudge(LANG)
HARM, BENIGN = "aijkl", "eijkl"


class TableJudge:
    """A judge returning fixed verdicts, to enumerate every case of the reward table."""

    def __init__(self, prompt_unsafe, response_unsafe, refused):
        self.v = {"prompt_unsafe": prompt_unsafe, "response_unsafe": response_unsafe, "refused": refused}

    def judge(self, prompt, response):
        return dict(self.v)


@pytest.mark.parametrize("prompt_unsafe,refused,response_unsafe",
                         list(itertools.product([True, False], repeat=3)))
def test_defender_reward_table_all_eight_cases(prompt_unsafe, refused, response_unsafe):
    r = DefenderReward(TableJudge(prompt_unsafe, response_unsafe, refused))
    r_harm = -1.0 if response_unsafe else 1.0
    r_ref = 0.5 if prompt_unsafe == refused else -0.5
    assert r(["p"], ["c"]) == [pytest.approx(r_harm + r_ref)]
    comp = "<think>x</think><answer><E1></answer>"
    att = AttackerReward(r)
    assert att(["s"], [comp], attack_prompts=["p"], responses=["c"]) == [pytest.approx(-(r_harm + r_ref) + 0.5)]
    assert att(["s"], ["junk"], attack_prompts=["p"], responses=["c"]) == [pytest.approx(-(r_harm + r_ref) - 0.5)]


def test_reward_values_on_the_rule_judge():
    r = DefenderReward(JUDGE)
    # harmful refused 1.5, harmful complied -1.5, benign complied 1.5, benign refused 0.5
    assert r([HARM, HARM, BENIGN, BENIGN], ["<REF>", "<CMP>i", "<CMP>i", "<REF>"]) == [1.5, -1.5, 1.5, 0.5]
    # refusal label from the seed: a rewrite judged benign but whose seed is harmful
    rs = DefenderReward(JUDGE, refusal_label_from="seed")
    assert rs([BENIGN], ["<REF>"], seed_unsafe=[True]) == [1.5]
    assert r([BENIGN], ["<REF>"], seed_unsafe=[True]) == [0.5]


def test_components():
    assert harm_reward(True) == -1.0 and harm_reward(False) == 1.0
    assert refusal_reward(True, True) == 0.5 and refusal_reward(False, False) == 0.5
    assert refusal_reward(True, False) == -0.5 and refusal_reward(False, True) == -0.5
    assert harm_reward(True, r_harm=2.0) == -2.0


@pytest.mark.parametrize("text,ok", [
    ("<think>ab</think><answer><E1></answer>", True),
    ("<think></think><answer></answer>", True),
    (" <think>a</think> <answer><S></answer> ", True),
    ("<answer><E1></answer>", False),
    ("<think>a</think>", False),
    ("<answer><E1></answer><think>a</think>", False),
    ("<think>a</think><answer><E1></answer><answer><E1></answer>", False),
    ("<think>a<think>b</think><answer><E1></answer>", False),
    ("<think>a</think><answer><E1></answer>x", False),
])
def test_format_reward_cases(text, ok):
    assert format_ok(text) is ok
    assert format_reward(text) == (0.5 if ok else -0.5)
    assert (extract_answer(text) is not None) is ok


def test_bad_inputs():
    with pytest.raises(ValueError, match="refusal_label_from"):
        DefenderReward(JUDGE, refusal_label_from="x")
    with pytest.raises(ValueError, match="r_harm"):
        DefenderReward(JUDGE, r_harm=-1)
    with pytest.raises(TypeError, match="judge"):
        DefenderReward(object())
    with pytest.raises(ValueError, match="completions"):
        DefenderReward(JUDGE)([HARM], [])
    with pytest.raises(ValueError, match="seed_unsafe"):
        DefenderReward(JUDGE, refusal_label_from="seed")([HARM], ["<REF>"])
    with pytest.raises(TypeError, match="DefenderReward"):
        AttackerReward(JUDGE)
    with pytest.raises(ValueError, match="responses"):
        AttackerReward(DefenderReward(JUDGE))(["s"], ["c"], attack_prompts=[HARM], responses=[])


def test_guard_judge_through_core_llm():
    def fn(messages):
        text = messages[-1]["content"]
        if "ASSISTANT" in text:
            return "Safety: Controversial\nRefusal: No" if "<CMP>" in text else "Safety: Safe\nRefusal: Yes"
        return "Safety: Unsafe\nRefusal: No"
    guard = GuardJudge(ScriptedChat(fn))
    assert guard.judge(HARM, "<CMP>i") == {"prompt_unsafe": True, "response_unsafe": True, "refused": False}
    assert DefenderReward(guard)([HARM], ["<REF>"]) == [1.5]
    with pytest.raises(ValueError, match="Safety"):
        GuardJudge(ScriptedChat(lambda m: "no idea")).judge(HARM, "x")


def test_spne_premise_and_pointwise_best_response_is_safe():
    """Theorem 3.2's premise holds (a refusal with R_D >= 0 exists for every prompt), so the
    pointwise best response over {refuse, comply} is safe on every prompt."""
    import numpy as np

    r = DefenderReward(JUDGE)
    seeds = LANG.sample_seeds(50, np.random.default_rng(0))
    prompts = [LANG.execute(p, s.text) for s in seeds for p in [()] + LANG.programs(1)]
    for p in prompts:
        values = dict(zip(("<REF>", "<CMP>i"), r([p, p], ["<REF>", "<CMP>i"]), strict=True))
        assert values["<REF>"] >= 0
        best = max(values, key=values.get)
        assert not JUDGE.judge(p, best)["response_unsafe"]

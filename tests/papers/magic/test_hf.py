"""MAGIC with TRL: rewards with a pluggable judge, and the alternating driver around two
trl.GRPOTrainer with the opponent frozen (tiny local models on the synthetic intent language)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("trl")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from trl import GRPOConfig  # noqa: E402

from icml26.core.lm.hf import char_tokenizer, tiny_causal_lm  # noqa: E402
from icml26.papers.magic import (  # noqa: E402
    AlternatingSchedule,
    AttackerReward,
    DefenderReward,
    IntentLanguage,
    RuleJudge,
)
from icml26.papers.magic.hf import (  # noqa: E402
    AlternatingGRPOTrainers,
    FrozenDefenderAttackerReward,
    answer_rewrite,
    defender_reward_func,
    language_rewrite,
)
from icml26.papers.magic.language import (  # noqa: E402
    ANSWER_CLOSE,
    ANSWER_OPEN,
    COMPLY,
    OPERATORS,
    REFUSE,
    THINK_CLOSE,
    THINK_OPEN,
)

TAGS = (*OPERATORS, THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE, REFUSE, COMPLY)


@pytest.fixture(scope="module")
def world():
    lang = IntentLanguage(seed=0, n_content=2, max_depth=2)
    seeds = lang.sample_seeds(8, np.random.default_rng(0))
    return lang, RuleJudge(lang), seeds, char_tokenizer(added_tokens=TAGS)


def _snapshot(model):
    return [p.detach().clone() for p in model.parameters()]


def _same(model, snap):
    return all(torch.equal(p, q) for p, q in zip(model.parameters(), snap, strict=True))


def test_defender_reward_is_ours_with_any_judge(world):
    lang, judge, seeds, _ = world
    prompts = [lang.execute(("<E1>",), s.text) for s in seeds[:4]]
    responses = [f"{REFUSE}", "abc", f"{COMPLY}x", f"{REFUSE}y"]
    ours = DefenderReward(judge)(prompts, responses)
    f = defender_reward_func(judge)
    assert f.__name__ == "defender_reward"
    assert f(prompts=prompts, completions=responses) == ours
    conv = [[{"role": "assistant", "content": r}] for r in responses]
    assert f(prompts=[[{"role": "user", "content": p}] for p in prompts], completions=conv) == ours

    class AlwaysUnsafe:  # a pluggable judge: anything with judge(prompt, response) -> dict
        def judge(self, prompt, response):
            return {"prompt_unsafe": True, "response_unsafe": not response.startswith(REFUSE), "refused": False}

    assert defender_reward_func(AlwaysUnsafe())(prompts=prompts, completions=responses) == [
        0.5, -1.5, -1.5, 0.5]


def test_rewrites(world):
    lang, _, seeds, _ = world
    s = seeds[0].text
    good = f"{THINK_OPEN}x{THINK_CLOSE}{ANSWER_OPEN}<E1><S>{ANSWER_CLOSE}"
    assert language_rewrite(lang)(s, good) == lang.execute(("<E1>", "<S>"), s)
    assert language_rewrite(lang)(s, "garbage") == s
    assert answer_rewrite(s, f"{THINK_OPEN}x{THINK_CLOSE}{ANSWER_OPEN} please {ANSWER_CLOSE}") == "please"
    assert answer_rewrite(s, "no format") == s


def test_attacker_reward_queries_the_frozen_defender(world):
    lang, judge, seeds, tok = world
    defender = tiny_causal_lm(tok, "qwen2", seed=1)
    snap = _snapshot(defender)
    reward = FrozenDefenderAttackerReward(judge, defender, tok, rewrite=language_rewrite(lang), max_new_tokens=3)
    prompts = [s.text for s in seeds[:4]]
    comps = [f"{THINK_OPEN}a{THINK_CLOSE}{ANSWER_OPEN}<E1>{ANSWER_CLOSE}", "bad", "bad", "bad"]
    got = reward(prompts=prompts, completions=comps, seed_unsafe=[s.harmful for s in seeds[:4]])
    want = AttackerReward(DefenderReward(judge))(prompts, comps, attack_prompts=reward.last_attacks,
                                                  responses=reward.last_responses,
                                                  seed_unsafe=[s.harmful for s in seeds[:4]])
    assert got == want and len(got) == 4
    assert reward.last_attacks[0] == lang.execute(("<E1>",), prompts[0]) and reward.last_attacks[1] == prompts[1]
    assert _same(defender, snap)


class ParityJudge:
    """The rule judge's prompt verdict, and a refusal iff the response starts with an even
    character: a random tiny defender then gets different rewards within a group."""

    def __init__(self, lang):
        self.rule = RuleJudge(lang)

    def judge(self, prompt, response):
        unsafe = self.rule.prompt_unsafe(prompt)
        refused = bool(response) and ord(response[0]) % 2 == 0
        return {"prompt_unsafe": unsafe, "response_unsafe": unsafe and not refused, "refused": refused}


def test_alternating_driver_trains_one_role_per_block_with_the_opponent_frozen(world, tmp_path):
    lang, _, seeds, tok = world
    judge = ParityJudge(lang)
    attacker = tiny_causal_lm(tok, "qwen2", seed=2)
    defender = tiny_causal_lm(tok, "llama", seed=3)
    data = Dataset.from_dict({"prompt": [s.text for s in seeds], "seed_unsafe": [s.harmful for s in seeds]})

    def args(role, length):
        return GRPOConfig(output_dir=str(tmp_path / role), per_device_train_batch_size=4, num_generations=2,
                          max_completion_length=length, learning_rate=1e-2, bf16=False, use_cpu=True,
                          report_to="none", logging_steps=1, disable_tqdm=True, seed=0)

    driver = AlternatingGRPOTrainers(attacker, defender, tok, tok, data, judge,
                                     attacker_args=args("attacker", 8), defender_args=args("defender", 3),
                                     schedule=AlternatingSchedule(switch_every=1), rewrite=language_rewrite(lang))
    a0, d0 = _snapshot(attacker), _snapshot(defender)
    first = driver.fit(1)  # defender block: the attacker only writes attacks
    assert [b.role for b in first] == ["defender"] and _same(attacker, a0) and not _same(defender, d0)
    d1 = _snapshot(defender)
    second = driver.fit(1)  # attacker block: the defender only answers
    assert [b.role for b in second] == ["attacker"] and _same(defender, d1) and not _same(attacker, a0)
    assert [b.role for b in driver.history] == ["defender", "attacker"]
    assert all(np.isfinite(b.reward) for b in driver.history)
    assert all(p.requires_grad for p in defender.parameters())  # unfrozen after its block
    with pytest.raises(ValueError, match="beta"):
        AlternatingGRPOTrainers(attacker, defender, tok, tok, data, judge,
                                attacker_args=GRPOConfig(output_dir=str(tmp_path), beta=0.1, use_cpu=True),
                                defender_args=args("defender", 3))

"""iterative_rmft text track: the rationale grammar, text-rollout regret accounting, the filter on
text trajectories, the loss masks, the loop's wiring and bad inputs."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from icml26.core.llm import ScriptedChat
from icml26.core.rl import BanditBatch, sample_bandits
from icml26.papers.iterative_rmft import RMFTConfig, select
from icml26.papers.iterative_rmft.text import (
    ParsedResponse,
    TextTrajectories,
    evaluate_text,
    iterative_rmft_text,
    make_text_agent,
    parse_response,
    random_play_examples,
    rationale_valid,
    render_prompt,
    render_response,
    text_examples,
    text_rollout,
)


def test_prompt_and_response_rendering():
    assert render_prompt(3, [1, 0, 0], [2, 1, 0]) == "t3 a0=1/2 a1=0/1 a2=0/0"
    assert render_response(1, 0, 1) == "<r>a1=0/1</r>1"
    with pytest.raises(ValueError, match="one entry per arm"):
        render_prompt(0, [0, 0], [0])


@given(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99))
def test_parse_inverts_render(arm, wins, pulls):
    p = parse_response(render_response(arm, wins, pulls))
    assert p == ParsedResponse(arm, arm, wins, pulls) and p.well_formed


@pytest.mark.parametrize("text, action, well_formed", [
    ("<r>a2=1/3</r>2", 2, True),
    ("<r></r>1", 1, False),              # empty rationale: the action counts, the rationale does not
    ("<r>a1 0/1</r>1", 1, False),        # malformed rationale
    ("<r>a1=0/1=2</r>0", 0, False),
    ("<r>a1=0/1</r>", None, False),      # no action
    ("a1=0/1 1", None, False),           # no envelope
    (" <r>a1=0/1</r>1", None, False),    # exact match, no stripping
    ("<r>a1=0/1</r>1x", None, False),
    ("", None, False),
])
def test_grammar_cases(text, action, well_formed):
    p = parse_response(text)
    assert p.action == action and p.well_formed is well_formed


def test_parse_rejects_non_strings():
    with pytest.raises(TypeError, match="str"):
        parse_response(None)


def test_rationale_validity_checks_arm_action_and_counts():
    wins, pulls = [1, 0, 2], [2, 1, 3]
    assert rationale_valid(parse_response("<r>a2=2/3</r>2"), wins, pulls)
    assert not rationale_valid(parse_response("<r>a2=2/3</r>1"), wins, pulls)   # says 2, plays 1
    assert not rationale_valid(parse_response("<r>a2=1/3</r>2"), wins, pulls)   # wrong wins
    assert not rationale_valid(parse_response("<r>a2=2/2</r>2"), wins, pulls)   # wrong pulls
    assert not rationale_valid(parse_response("<r>a5=0/0</r>5"), wins, pulls)   # no such arm
    assert not rationale_valid(parse_response("<r></r>2"), wins, pulls)


def _counts(prompt: str):
    pairs = re.findall(r"a\d+=(\d+)/(\d+)", prompt)
    return [int(w) for w, _ in pairs], [int(n) for _, n in pairs]


def _honest(arm_of):
    """A scripted agent that plays ``arm_of(t, wins, pulls)`` with a truthful rationale."""
    def fn(messages):
        prompt = messages[-1]["content"]
        t = int(prompt.split(" ")[0][1:])
        wins, pulls = _counts(prompt)
        a = arm_of(t, wins, pulls)
        return render_response(a, wins[a], pulls[a])
    return ScriptedChat(fn)


def test_text_rollout_regret_equals_the_pseudo_regret_of_the_arms_played():
    env = sample_bandits(6, 3, 8, seed=4)
    traj = text_rollout(_honest(lambda t, w, n: t % 3), env, seed=0)
    assert (traj.actions == np.arange(8) % 3).all()
    assert traj.valid.all() and traj.parsed.all()
    mu = env.means[np.arange(6)[:, None], traj.actions]
    np.testing.assert_allclose(traj.regret, (env.means.max(1)[:, None] - mu).sum(1), atol=1e-12)
    # the prompts count what was played and won
    w, n = _counts(traj.prompts[0, 7])
    assert n == [3, 2, 2] and sum(w) == traj.rewards[0, :7].sum()


def test_unparsable_actions_play_a_random_arm_and_count_invalid():
    env = BanditBatch(np.array([[0.9, 0.1, 0.5]] * 50), 6, seed=1)
    traj = text_rollout(ScriptedChat(lambda m: "I pull the best arm"), env, seed=2)
    assert not traj.parsed.any() and not traj.valid.any()
    assert set(np.unique(traj.actions)) == {0, 1, 2}           # the uniform fallback
    np.testing.assert_allclose(traj.regret, (0.9 - env.means[0, traj.actions]).sum(1), atol=1e-12)
    env2 = BanditBatch(np.array([[0.9, 0.1]] * 3), 2, seed=1)
    out = text_rollout(ScriptedChat(lambda m: "<r>a7=0/0</r>7"), env2, seed=0)   # arm >= K
    assert not out.parsed.any()


def test_text_rollout_needs_a_bernoulli_bandit():
    env = sample_bandits(2, 3, 4, noise="gaussian", seed=0)
    with pytest.raises(ValueError, match="Bernoulli"):
        text_rollout(_honest(lambda t, w, n: 0), env)


def _text_traj(regret, tasks):
    n = len(regret)
    obj = np.full((n, 1), "x", dtype=object)
    return TextTrajectories(obj, obj.copy(), np.zeros((n, 1), np.int64), np.zeros((n, 1)),
                            np.asarray(regret, float), np.asarray(tasks), np.ones((n, 1), bool),
                            np.ones((n, 1), bool), 2, 1)


def test_filter_keeps_exactly_the_k_lowest_regret_text_trajectories():
    t = _text_traj([5, 1, 3, 2, 9, 0, 4, 7], [0, 0, 0, 0, 1, 1, 1, 1])
    kept = select(t, 2, 2, "regret", np.random.default_rng(0))
    assert isinstance(kept, TextTrajectories)
    assert sorted(kept.regret[kept.task == 0]) == [1, 2]
    assert sorted(kept.regret[kept.task == 1]) == [0, 4]
    with pytest.raises(ValueError, match="exceeds"):
        select(t, 2, 5, "regret", np.random.default_rng(0))


def _agent(seed=0):
    return make_text_agent(3, 4, d_model=16, seed=seed)


def test_examples_mask_the_prompt_and_in_action_only_mode_the_rationale():
    chat = _agent()
    env = sample_bandits(3, 3, 4, seed=0)
    full = random_play_examples(chat, env, seed=0)
    assert len(full) == 12
    tok = chat.tokenizer
    ex = full[5]
    text = tok.decode(ex["completion_ids"])
    assert text.endswith("<|end|>") and parse_response(text[:-len("<|end|>")]).well_formed
    assert all(ex["loss_mask"])
    traj = text_rollout(_honest(lambda t, w, n: 1), sample_bandits(2, 3, 4, seed=1), seed=0)
    act = text_examples(chat, traj, loss_on="action")[0]
    n_rat = len("<r>a1=0/0</r>")
    assert act["loss_mask"] == [False] * n_rat + [True, True]     # the action digit and <|end|>
    with pytest.raises(ValueError, match="loss_on"):
        text_examples(chat, traj, loss_on="rationale")


def test_prompts_fit_the_agents_context():
    chat = _agent()
    longest = render_prompt(3, [3, 3, 3], [3, 3, 3])
    assert len(chat.encode_prompt([{"role": "user", "content": longest}])) == chat.prompt_length


def test_loop_wiring_equal_compute_and_action_only_leaves_rationale_loss_untouched():
    sampler = lambda n, s: sample_bandits(n, 3, 4, seed=s)  # noqa: E731
    cfg = RMFTConfig(iterations=2, rollouts_per_task=4, top_k=2, tasks_per_iter=3, sft_epochs=1,
                     batch_size=8)
    hists = {}
    for loss_on in ("full", "action"):
        chat = _agent(1)
        before = {k: v.clone() for k, v in chat.model.state_dict().items()}
        hists[loss_on] = h = iterative_rmft_text(chat, sampler, cfg, loss_on=loss_on, seed=0)
        assert len(h.rollout_regret) == len(h.kept_valid) == len(h.sft_loss) == 2
        assert all(k <= r + 1e-12 for k, r in zip(h.kept_regret, h.rollout_regret, strict=True))
        assert any(not torch.equal(before[k], v) for k, v in chat.model.state_dict().items())
    assert hists["full"].sft_examples == hists["action"].sft_examples == 2 * 3 * 2 * 4
    # the same first rollouts (same M0, same seed): the arms differ only in the loss
    assert hists["full"].rollout_regret[0] == hists["action"].rollout_regret[0]


def test_loop_and_evaluation_bad_inputs():
    chat = _agent()
    tasks = sample_bandits(2, 3, 4, seed=0)
    with pytest.raises(ValueError, match="top_k"):
        evaluate_text(chat, tasks, rollouts_per_task=2, top_k=3)
    with pytest.raises(ValueError, match="loss_on"):
        iterative_rmft_text(chat, lambda n, s: tasks, RMFTConfig(iterations=1), loss_on="none")
    with pytest.raises(TypeError, match="TinyLMChat"):
        iterative_rmft_text(ScriptedChat(lambda m: ""), lambda n, s: tasks, RMFTConfig(iterations=1))
    with pytest.raises(ValueError, match="k"):
        make_text_agent(1, 4)


def test_evaluation_reports_validity_of_all_and_of_the_distilled_turns():
    tasks = sample_bandits(4, 3, 5, seed=2)
    ev = evaluate_text(_honest(lambda t, w, n: t % 3), tasks, rollouts_per_task=3, top_k=1, seed=0)
    assert ev["valid"] == ev["kept_valid"] == ev["parsed"] == 1.0 and ev["kept_valid_se"] == 0.0
    liar = ScriptedChat(lambda m: "<r>a0=9/9</r>0")
    assert evaluate_text(liar, tasks, rollouts_per_task=2, top_k=1)["kept_valid"] == 0.0


def test_an_opted_in_chat_model_is_evaluated_as_its_own_arm(monkeypatch):
    from icml26.papers.iterative_rmft import experiment

    c = experiment.Config.smoke()
    c = type(c)(seeds=(0,), text_base_steps=2, text_iterations=1, text_tasks_per_iter=2,
                text_rollouts_per_task=2, text_top_k=1, text_eval_tasks=2, text_sft_epochs=1)
    metrics, _ = experiment._text_track(c, 0)
    assert "text_llm" not in metrics
    monkeypatch.setattr(experiment, "resolve_chat_model",
                        lambda default: _honest(lambda t, w, n: 0))
    metrics, history = experiment._text_track(c, 0)
    assert metrics["text_llm"]["consistent"] == 1.0 and metrics["text_llm"]["valid"] == 1.0
    assert set(history) == {"base_sft_loss", "text_rmft", "text_action_only"}


def test_grounded_rationales_track_the_history_a_constant_policy_does_not():
    """Issue 49: kept_consistent was met by a constant policy (1.0). The grounded fraction is not:
    a truthful constant arm-0 policy stays consistent and valid in every turn but is grounded only
    while arm 0 is the empirically best (Laplace mean) or the least pulled; an honest greedy-on-
    Laplace-means policy (explore the least pulled on ties) is grounded in every turn."""
    from icml26.papers.iterative_rmft.text import rationale_grounded

    tasks = sample_bandits(60, 3, 10, seed=5)
    const = evaluate_text(_honest(lambda t, w, n: 0), tasks, rollouts_per_task=2, top_k=1, seed=0)
    assert const["consistent"] == const["valid"] == const["kept_consistent"] == 1.0
    assert const["grounded"] < 0.75 and const["kept_grounded"] < 0.9

    def laplace(t, w, n):
        w, n = np.asarray(w, float), np.asarray(n, float)
        return int(np.argmax((w + 1) / (n + 2)))
    greedy = evaluate_text(_honest(laplace), tasks, rollouts_per_task=2, top_k=1, seed=0)
    assert greedy["grounded"] == greedy["kept_grounded"] == 1.0
    # the definition, case by case
    p = ParsedResponse(0, 0, 3, 4)
    assert rationale_grounded(p, [3, 0, 0], [4, 1, 1])          # best Laplace mean 4/6
    assert not rationale_grounded(p, [1, 1, 0], [4, 1, 1])      # 2/6 < 2/3, most pulled
    assert rationale_grounded(ParsedResponse(2, 2, 0, 0), [3, 1, 0], [4, 1, 0])   # explores the untried
    assert not rationale_grounded(ParsedResponse(0, 0, 9, 9), [3, 0, 0], [4, 1, 1])  # invalid counts

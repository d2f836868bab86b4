"""verbalized_bp library: the LP against closed forms, exact Bayes over text, the loop, bad inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.core.llm import OpenAICompatible, track_usage
from icml26.papers.verbalized_bp import (
    BPInstance,
    SenderPrompt,
    bayesian_receiver,
    binary_threshold_optimum,
    class_posterior,
    concavify_binary,
    courtroom,
    credulous_receiver,
    exact_outcome,
    find_equilibrium,
    full_disclosure_value,
    law_enforcement,
    local_proposer,
    no_information_value,
    parse_policy,
    play,
    random_search,
    read_letter,
    receiver_best_action,
    receiver_deviation_gain,
    recommendation_letter,
    scenario,
    scheme_outcome,
    sender_deviation_gain,
    solve_persuasion_lp,
    template_sender,
    write_letter,
)
from icml26.papers.verbalized_bp.verbal import profile_text


def threshold_game(p: float, t: float) -> BPInstance:
    """Binary template: the receiver takes action 0 iff P(good) >= t (EU = p - t)."""
    return BPInstance(np.array([p, 1 - p]), np.array([[1.0, 0.0], [1.0, 0.0]]),
                      np.array([[1 - t, 0.0], [-t, 0.0]]))


# -- classic BP ---------------------------------------------------------------------------------
@pytest.mark.parametrize("inst, value, lie", [
    (recommendation_letter(), 2 / 3, 1 / 2), (courtroom(), 0.6, 3 / 7), (law_enforcement(), 0.5, 3 / 8)])
def test_scenarios_match_theory(inst, value, lie):
    sol = solve_persuasion_lp(inst)
    assert sol.value == pytest.approx(value, abs=1e-9)
    assert sol.pi[1, 0] == pytest.approx(lie, abs=1e-9) and sol.pi[0, 0] == pytest.approx(1.0, abs=1e-9)
    assert concavify_binary(inst) == pytest.approx(value, abs=1e-9)
    assert full_disclosure_value(inst) == pytest.approx(inst.prior[0]) and no_information_value(inst) == 0.0
    assert np.all(sol.obedience_slack >= -1e-9)
    assert scheme_outcome(inst, sol.pi)[0] == pytest.approx(value, abs=1e-7)  # the receiver obeys


def test_letter_receiver_value_is_zero_at_the_optimum():
    assert solve_persuasion_lp(recommendation_letter()).receiver_value == pytest.approx(0.0, abs=1e-9)
    assert solve_persuasion_lp(courtroom()).receiver_value == pytest.approx(0.7, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(p=st.floats(0.02, 0.98), t=st.floats(0.02, 0.98))
def test_lp_equals_closed_form_on_binary_games(p, t):
    inst = threshold_game(p, t)
    value, lie = binary_threshold_optimum(p, t)
    sol = solve_persuasion_lp(inst)
    assert sol.value == pytest.approx(value, abs=1e-7)
    assert concavify_binary(inst, grid=401) == pytest.approx(value, abs=1e-7)
    if value < 1:  # unique optimum: always recommend in the good state, lie at rate q*
        assert sol.pi[1, 0] == pytest.approx(lie, abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_lp_beats_every_scheme_and_is_obedient(seed):
    rng = np.random.default_rng(seed)
    S, A = rng.integers(2, 4), rng.integers(2, 4)
    inst = BPInstance(rng.dirichlet(np.ones(S)), rng.normal(size=(S, A)), rng.normal(size=(S, A)))
    sol = solve_persuasion_lp(inst)
    assert np.all(sol.obedience_slack >= -1e-8)
    assert np.allclose(sol.pi.sum(axis=1), 1) and np.all(sol.pi >= 0)
    assert sol.value >= full_disclosure_value(inst) - 1e-8
    assert sol.value >= no_information_value(inst) - 1e-8
    for _ in range(20):  # any scheme, any number of signals, receiver best-responding
        pi = rng.dirichlet(np.ones(rng.integers(1, 5)), size=S)
        assert scheme_outcome(inst, pi)[0] <= sol.value + 1e-8


def test_tie_breaks_for_the_sender():
    inst = recommendation_letter()
    assert receiver_best_action(inst, np.array([0.5, 0.5])) == 0  # indifferent: hire
    assert receiver_best_action(inst, np.array([0.49, 0.51])) == 1


@pytest.mark.parametrize("kwargs, match", [
    ({"prior": [0.5, 0.6]}, "sum to 1"), ({"prior": [-0.1, 1.1]}, "non-negative"),
    ({"u_sender": np.zeros((3, 2))}, "shape"), ({"u_receiver": np.zeros((2, 3))}, "shape"),
    ({"u_sender": [[np.nan, 0], [0, 0]]}, "finite"),
])
def test_bad_instances(kwargs, match):
    base = {"prior": [0.5, 0.5], "u_sender": np.eye(2), "u_receiver": np.eye(2)}
    with pytest.raises(ValueError, match=match):
        BPInstance(**{**base, **kwargs})


def test_bad_schemes_and_prompts():
    inst = recommendation_letter()
    with pytest.raises(ValueError, match="probability distributions"):
        scheme_outcome(inst, np.array([[0.5, 0.6], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        scheme_outcome(inst, np.ones((3, 1)))
    with pytest.raises(ValueError, match="probability"):
        SenderPrompt(1.2, 0.0)
    with pytest.raises(ValueError, match="unknown scenario"):
        scenario("diplomacy")


# -- the text channel -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["letter", "courtroom", "law"])
def test_letters_read_back_as_written(name):
    sc = scenario(name)
    for prompt in (SenderPrompt(1.0, 1.0, obfuscate=False), SenderPrompt(0.0, 0.0), SenderPrompt(1.0, 1.0, obfuscate=True)):
        for i in range(60):
            for good in (True, False):
                text = write_letter(sc, prompt, profile_text(sc, good, i), leak=0.5, seed=i)
                cls = read_letter(text, sc)
                praise = prompt.honesty_good == 1.0 if good else prompt.lie_rate == 1.0
                assert (cls != "negative") == praise, text
                if cls == "hedged":  # tells only on lies, never when obfuscating
                    assert not good and not prompt.obfuscate


def test_commitment_round_trips():
    sc = scenario("courtroom")
    p = SenderPrompt(0.875, 3 / 7, obfuscate=True)
    back = parse_policy(p.commitment_text(sc), sc)
    assert back.honesty_good == pytest.approx(0.875) and back.lie_rate == pytest.approx(3 / 7, abs=1e-6)
    assert back.obfuscate and parse_policy("no policy here", sc) is None
    assert SenderPrompt(1, 0, commit=False).commitment_text(sc) == ""


def test_posterior_is_exact_bayes():
    sc = scenario("letter")  # prior 1/3
    p = SenderPrompt(0.8, 0.3, obfuscate=False)
    leak = 0.6
    assert class_posterior(sc, p, "positive", leak=leak) == pytest.approx(
        (0.8 / 3) / (0.8 / 3 + (2 / 3) * 0.3 * 0.4))
    assert class_posterior(sc, p, "negative", leak=leak) == pytest.approx((0.2 / 3) / (0.2 / 3 + (2 / 3) * 0.7))
    assert class_posterior(sc, p, "hedged", leak=leak) == 0.0
    assert class_posterior(sc, None, "positive", leak=leak) == pytest.approx(1 / 3)  # sceptic: all praise


@pytest.mark.parametrize("prompt", [SenderPrompt(1.0, 0.5, obfuscate=True), SenderPrompt(0.9, 0.6, obfuscate=False)])
def test_played_episodes_match_exact_bayes(prompt):
    """Empirical P(good | class) over played letters matches the receiver's exact posterior, and the
    played value matches the exact expectation (3 s.e.)."""
    sc, leak, n = scenario("letter"), 0.7, 6000
    rng = np.random.default_rng(1)
    good = rng.random(n) < sc.prior_good
    ep = play(sc, prompt, template_sender(sc, leak=leak), bayesian_receiver(sc, leak=leak), good,
              rng.integers(0, 2**31 - 1, n))
    classes = np.array(ep.classes)
    for cls in ("positive", "negative", "hedged"):
        mask = classes == cls
        if mask.sum() < 100:
            continue
        freq, post = good[mask].mean(), class_posterior(sc, prompt, cls, leak=leak)
        assert abs(freq - post) <= 3 * np.sqrt(post * (1 - post) / mask.sum()) + 1e-9, cls
    exact = exact_outcome(sc, prompt, leak=leak)
    assert abs(ep.sender_value - exact["value"]) <= 3 * np.sqrt(0.25 / n)
    assert abs(ep.receiver_value - exact["receiver_value"]) <= 3 * np.sqrt(1.0 / n)


def test_receivers_reply_json_through_the_chat_interface():
    sc = scenario("letter")
    p = SenderPrompt(1.0, 0.5, obfuscate=True)
    msgs = [{"role": "user", "content": f"Commitment: {p.commitment_text(sc)}\nRecommendation letter:\n"
             "Dear colleague, I recommend X for the position without reservation. X consistently "
             "delivered excellent results."}]
    out = json.loads(bayesian_receiver(sc, leak=0.9).complete(msgs).text)
    assert out == {"posterior": pytest.approx(0.5), "action": "hire"}
    p2 = SenderPrompt(1.0, 0.6, obfuscate=True)
    msgs2 = [{"role": "user", "content": msgs[0]["content"].replace(p.commitment_text(sc), p2.commitment_text(sc))}]
    assert json.loads(bayesian_receiver(sc, leak=0.9).complete(msgs2).text)["action"] == "reject"
    assert json.loads(credulous_receiver(sc).complete(msgs2).text)["action"] == "hire"


def test_common_random_numbers_across_prompts():
    """Equal seeds: a letter that praises at lie rate q praises at every q' > q."""
    sc = scenario("law")
    for i in range(50):
        prof = profile_text(sc, False, i)
        praised = [read_letter(write_letter(sc, SenderPrompt(1.0, q, obfuscate=True), prof, leak=0.9, seed=i), sc)
                   != "negative" for q in np.linspace(0, 1, 11)]
        assert praised == sorted(praised)


# -- the loop and the equilibrium checks --------------------------------------------------------
def test_loop_reaches_the_bp_optimum_from_full_disclosure():
    sc = scenario("courtroom")
    snd, rcv = template_sender(sc, leak=0.9), bayesian_receiver(sc, leak=0.9)
    with track_usage() as usage:
        res = find_equilibrium(sc, snd, rcv, local_proposer(), start=SenderPrompt(1.0, 0.0),
                               n_iters=12, n_candidates=4, n_episodes=100, seed=0)
    assert res.n_proposals == 48 and res.episodes == 49 * 100
    assert res.best.obfuscate and res.best.honesty_good == 1.0
    exact = exact_outcome(sc, res.best, leak=0.9)["value"]
    assert abs(exact - 0.6) <= 0.03 and abs(res.best.lie_rate - 3 / 7) <= 0.05
    gain, dev = sender_deviation_gain(sc, res.best, leak=0.9)
    assert 0 <= gain <= 0.02 and dev.lie_rate == pytest.approx(3 / 7)
    calls = usage.to_dict()
    assert calls["scripted:local_proposer"]["calls"] == 12
    assert calls["scripted:template_sender:courtroom"]["calls"] == 4900


def test_random_search_uses_the_same_budget_and_episodes():
    sc = scenario("letter")
    snd, rcv = template_sender(sc, leak=0.9), bayesian_receiver(sc, leak=0.9)
    res = random_search(sc, snd, rcv, start=SenderPrompt(1.0, 0.0), n_proposals=10, n_episodes=50, seed=3)
    assert res.n_proposals == 10 and res.episodes == 11 * 50
    again = random_search(sc, snd, rcv, start=SenderPrompt(1.0, 0.0), n_proposals=10, n_episodes=50, seed=3)
    assert [s for _, s in res.history] == [s for _, s in again.history]  # deterministic


def test_deviation_gains():
    sc, leak = scenario("letter"), 0.9
    honest = SenderPrompt(1.0, 0.0)
    assert sender_deviation_gain(sc, honest, leak=leak)[0] == pytest.approx(1 / 3, abs=1e-9)
    n = 3000
    rng = np.random.default_rng(0)
    good, seeds = rng.random(n) < sc.prior_good, rng.integers(0, 2**31 - 1, n)
    liar = SenderPrompt(1.0, 1.0, obfuscate=True)
    ep = play(sc, liar, template_sender(sc, leak=leak), bayesian_receiver(sc, leak=leak), good, seeds)
    assert receiver_deviation_gain(sc, liar, ep, leak=leak) == 0.0  # the Bayesian reader best-responds
    ep = play(sc, liar, template_sender(sc, leak=leak), credulous_receiver(sc), good, seeds)
    # credulous hires everyone: gains 2/3 (weak) - 1/3 (strong) = 1/3 by rejecting
    assert receiver_deviation_gain(sc, liar, ep, leak=leak) == pytest.approx(1 / 3, abs=1e-9)


def test_the_receiver_role_through_an_openai_compatible_server():
    """The LLM path: the receiver served over HTTP (127.0.0.1) gives the offline decisions."""
    pytest.importorskip("httpx")
    from tests.core.llm.fake_server import FakeServer

    sc, leak = scenario("letter"), 0.9
    offline = bayesian_receiver(sc, leak=leak)
    prompt = SenderPrompt(1.0, 0.5, obfuscate=True)
    rng = np.random.default_rng(2)
    good, seeds = rng.random(40) < sc.prior_good, rng.integers(0, 2**31 - 1, 40)
    sender = template_sender(sc, leak=leak)
    ref = play(sc, prompt, sender, offline, good, seeds)
    with FakeServer(reply_fn=offline.fn) as server, track_usage() as usage:
        remote = OpenAICompatible(server.base_url, model="fake-model", max_concurrency=4, backoff_s=0.01)
        ep = play(sc, prompt, sender, remote, good, seeds)
    assert np.array_equal(ep.actions, ref.actions) and ep.sender_value == ref.sender_value
    assert usage.to_dict()["openai_compatible:fake-model"]["requests"] == 40

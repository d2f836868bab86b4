"""Issue 49: one policy representation, input checks, the record-inferring receiver, the search
baselines without feedback, and the LLM path's played metrics and free-text reader."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from icml26.core.llm import ScriptedChat
from icml26.papers.verbalized_bp import (
    SenderPrompt,
    bayesian_receiver,
    binary_threshold_optimum,
    class_posterior,
    exact_outcome,
    parse_policy,
    play,
    random_search,
    scenario,
    template_sender,
    write_letter,
)
from icml26.papers.verbalized_bp.solver import grid_search
from icml26.papers.verbalized_bp.verbal import Record, llm_reader, parse_record, track_record


def _episodes(sc, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random(n) < sc.prior_good, rng.integers(0, 2**31 - 1, n)


# -- one representation: the committed policy is the played policy --------------------------------
@pytest.mark.parametrize("name", ["letter", "courtroom", "law"])
@pytest.mark.parametrize("delta", [3e-7, -3e-7, 4e-7, 0.0])
def test_committed_and_played_policy_are_one_number(name, delta):
    sc, leak = scenario(name), 0.9
    _, q_star = binary_threshold_optimum(sc.prior_good, sc.threshold)
    p = SenderPrompt(1.0, min(q_star + delta, 1.0), obfuscate=True)
    assert parse_policy(p.render(sc), sc) == p and parse_policy(p.commitment_text(sc), sc) == p
    good, seeds = _episodes(sc, 600)
    ep = play(sc, p, template_sender(sc, leak=leak), bayesian_receiver(sc, leak=leak), good, seeds)
    exact = exact_outcome(sc, p, leak=leak)["value"]
    # obeyed in the text game iff obeyed in the exact evaluator (q* + 3e-7 was 0.674 vs 0 before)
    assert (ep.sender_value > 0) == (exact > 0)
    if exact > 0:
        assert ep.sender_value == pytest.approx(exact, abs=0.06)


def test_float32_rates_accepted_and_bad_rates_refused():
    p = SenderPrompt(np.float32(1.0), np.float32(0.5), obfuscate=np.bool_(True))
    assert p.lie_rate == 0.5 and isinstance(p.lie_rate, float) and p.obfuscate is True
    with pytest.raises(TypeError, match="real number"):
        SenderPrompt(1.0, "0.5")
    with pytest.raises(TypeError, match="real number"):
        SenderPrompt(True, 0.5)
    with pytest.raises(ValueError, match="probability"):
        SenderPrompt(1.0, float("nan"))


@pytest.mark.parametrize("leak", [2.0, -0.1, float("nan")])
def test_leak_outside_unit_interval_refused(leak):
    sc = scenario("letter")
    p = SenderPrompt(1.0, 0.5)
    with pytest.raises(ValueError, match="leak"):
        bayesian_receiver(sc, leak=leak)
    with pytest.raises(ValueError, match="leak"):
        template_sender(sc, leak=leak)
    with pytest.raises(ValueError, match="leak"):
        class_posterior(sc, p, "positive", leak=leak)
    with pytest.raises(ValueError, match="leak"):
        exact_outcome(sc, p, leak=leak)
    with pytest.raises(ValueError, match="leak"):
        write_letter(sc, p, "Candidate: A. Detail: b. Private assessment: weak.", leak=leak, seed=0)
    with pytest.raises(TypeError, match="leak"):
        class_posterior(sc, p, "positive", leak="0.9")
    assert class_posterior(sc, p, "positive", leak=np.float32(0.9)) == pytest.approx(
        class_posterior(sc, p, "positive", leak=0.9))


# -- no commitment: the receiver infers the policy from the sender's record ------------------------
def test_record_round_trips_and_is_checked():
    sc = scenario("courtroom")
    rec = Record(np.array([[30, 2, 0], [10, 50, 8]]))
    assert np.array_equal(parse_record(rec.text(sc), sc).counts, rec.counts)
    assert parse_record("Commitment: none", sc) is None
    assert rec.likelihood()[1] == pytest.approx(np.array([10.5, 50.5, 8.5]) / 69.5)
    with pytest.raises(ValueError, match="non-negative integers"):
        Record(np.array([[1, -1, 0], [0, 0, 0]]))
    with pytest.raises(ValueError, match="shape"):
        Record(np.ones((3, 3)))
    bad = rec.text(sc).replace("of 32 guilty", "of 33 guilty")
    with pytest.raises(ValueError, match="inconsistent"):
        parse_record(bad, sc)


def test_record_receiver_learns_an_unpublished_policy():
    """The commitment claim can fail for a mechanism reason: an unpublished but stable policy is
    learnt from the record, so the receiver obeys praise; the sceptic (no record) never does."""
    sc, leak = scenario("letter"), 0.9
    snd, rcv = template_sender(sc, leak=leak), bayesian_receiver(sc, leak=leak)
    good, seeds = _episodes(sc, 400)
    p = SenderPrompt(1.0, 0.3, obfuscate=True, commit=False)
    sceptic = play(sc, p, snd, rcv, good, seeds)
    learnt = play(sc, p, snd, rcv, good, seeds, n_record=200, record_seed=1)
    assert sceptic.sender_value == 0.0
    committed = exact_outcome(sc, SenderPrompt(1.0, 0.3, obfuscate=True), leak=leak)["value"]
    assert learnt.sender_value == pytest.approx(committed, abs=0.06)
    assert exact_outcome(sc, p, leak=leak, receiver="record")["value"] == pytest.approx(committed)
    # a sender who lies on every letter builds a record that praise means nothing
    liar = play(sc, SenderPrompt(1.0, 1.0, obfuscate=True, commit=False), snd, rcv, good, seeds,
                n_record=200, record_seed=1)
    assert liar.sender_value == 0.0
    rec = track_record(sc, p, snd, 500, seed=4)
    assert rec.n == 500 and rec.counts[0, 2] == 0 and rec.counts[1, 2] == 0
    with pytest.raises(ValueError, match="n_record"):
        play(sc, p, snd, rcv, good, seeds, n_record=-1)


# -- search baselines without feedback ------------------------------------------------------------
def test_search_baselines_without_feedback():
    sc = scenario("letter")
    snd, rcv = template_sender(sc, leak=0.9), bayesian_receiver(sc, leak=0.9)
    start = SenderPrompt(1.0, 0.0)
    prior = random_search(sc, snd, rcv, start=start, n_proposals=12, n_episodes=60, seed=2, prior="loop")
    assert all(p.honesty_good == 1.0 and p.obfuscate for p, _ in prior.history[1:])
    assert prior.n_proposals == 12 and prior.episodes == 13 * 60
    grid = grid_search(sc, snd, rcv, start=start, n_proposals=11, n_episodes=60, seed=2)
    qs = [p.lie_rate for p, _ in grid.history[1:]]
    assert qs == pytest.approx(np.linspace(0, 1, 11).tolist())
    # common random numbers: the grid's scores rise with the lie rate up to q* = 1/2, then drop
    scores = [s for _, s in grid.history[1:]]
    assert all(a <= b for a, b in zip(scores[:6], scores[1:6], strict=False)) and scores[6] == 0.0
    assert grid.best.lie_rate == 0.5
    no_obf = random_search(sc, snd, rcv, start=start, n_proposals=5, n_episodes=20, prior="loop",
                           allow_obfuscate=False)
    assert not any(p.obfuscate for p, _ in no_obf.history)
    with pytest.raises(ValueError, match="prior"):
        random_search(sc, snd, rcv, start=start, n_proposals=3, n_episodes=10, prior="oracle")
    with pytest.raises(ValueError, match="grid"):
        grid_search(sc, snd, rcv, start=start, n_proposals=1, n_episodes=10)


# -- the LLM path: a free-text sender, the LLM as reader, played metrics ---------------------------
def _free_text_llm():
    """A stand-in for a served LLM: writes free-text praise (no phrase of the banks) and, asked to
    classify a letter, answers by its words; asked to decide, obeys praise."""

    def reply(messages):
        system, last = messages[0]["content"], messages[-1]["content"]
        if system.startswith("You classify"):
            return json.dumps({"class": "positive" if "splendid" in last else "negative"})
        if "Reply with JSON only" in system:
            target, other = re.search(r"decide whether to (\w+) or (\w+)\.", system).groups()
            return json.dumps({"posterior": 0.9, "action": target if "splendid" in last else other})
        return "Truly splendid work, a joy to supervise." if "Private assessment" in last else "?"

    return ScriptedChat(reply, name="fake-llm")


def test_llm_reader_reads_free_text():
    sc = scenario("letter")
    llm = _free_text_llm()
    reader = llm_reader(llm)
    good, seeds = _episodes(sc, 30)
    p = SenderPrompt(1.0, 0.5, obfuscate=True)
    ep = play(sc, p, llm, llm, good, seeds, reader=reader)
    # every letter praises: the phrase reader said 0.000, the LLM reader says 1.0
    assert ep.praise_rate(False) == 1.0 and ep.praise_rate(True) == 1.0
    assert ep.sender_value == 1.0


def test_llm_run_takes_every_metric_from_the_played_game(monkeypatch):
    from icml26.papers.verbalized_bp import experiment

    llm = _free_text_llm()
    monkeypatch.setattr(experiment, "resolve_chat_model", lambda offline: llm)
    cfg = experiment.Config(seeds=(0,), scenarios=("letter",), n_iters=1, n_candidates=3, n_train=10,
                            n_eval=20, n_record=5)
    out = experiment.run(cfg, 0)
    assert out.extras["llm_roles_live"] == ["receiver", "sender"]
    assert out.extras["reader"].startswith("llm")
    for arm in ("loop", "lie_grid", "no_commitment"):
        m = out.metrics[arm]
        assert m["letter_exact_value"] == m["letter_value"] == 1.0  # played, not the exact game
        assert m["letter_regret"] == pytest.approx(2 / 3 - 1.0)
        assert m["letter_lie_rate"] == 1.0
        assert m["letter_sender_gain"] == 0.0  # no deviation does better against this receiver

"""Pins that hold on any machine (icml26.harness.pins): verdicts exactly, numbers within a
tolerance on the scale of the claim's decision -- never relative to a gap near zero."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from icml26.harness import pins
from icml26.harness.pins import TRAINING_TOLERANCE, decision_scales, pin_differences, pin_of

ROOT = Path(__file__).resolve().parents[2]


def claim(cid: str, evidence: dict, verdict: str = "not reproduced", regimes=()) -> dict:
    return {"id": cid, "verdict": verdict, "evidence": evidence, "regimes": list(regimes),
            "negative_control": {"verdict": "not reproduced", "passes": False,
                                 "powerless": False}}


def result(*claims: dict, seeds=(0,)) -> dict:
    return {"paper": "zz_unregistered", "profile": "smoke", "status": "ok", "seeds": list(seeds),
            "claims": list(claims)}


def gap_rule(method, baseline, **extra) -> dict:
    """The evidence of a paired gap rule, as claims.py writes it."""
    gaps = [m - b for m, b in zip(method, baseline, strict=True)]
    mean = sum(gaps) / len(gaps)
    se = (math.sqrt(sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1) / len(gaps))
          if len(gaps) > 1 else 0.0)
    return {"method": list(method), "baseline": list(baseline), "gap_mean": mean, "gap_se": se,
            "min_gap": 0.0, "se_mult": 2.0, **extra}


@pytest.fixture
def training(monkeypatch):
    """Compare as a paper that declares PIN_TOLERANCE = TRAINING_TOLERANCE."""
    monkeypatch.setattr(pins, "declared_tolerance",
                        lambda slug: (TRAINING_TOLERANCE["rtol"], TRAINING_TOLERANCE["atol"]))


def differences(fresh: dict, pinned_from: dict) -> list[str]:
    return pin_differences(fresh, pin_of(pinned_from))


# -- the decision's scale --------------------------------------------------------------------
def test_a_gap_near_zero_that_flips_sign_still_matches(training):
    """eco's int4_finetune, as measured on two machines: arms at 2.29, the gap -0.00068 on one
    and +0.00026 on the other. Relative to the gap that is a 140 % change; on the arms' scale
    it is 0.04 %."""
    # method: int4 fine-tuning with ECO + SR; baseline: master weights (both arms as measured)
    pinned = result(claim("int4_finetune", {"part0": gap_rule([2.2905616760253906],
                                                              [2.2912437915802])}))
    fresh = result(claim("int4_finetune", {"part0": gap_rule([2.29093074798584],
                                                             [2.290667772293091])}))
    assert pinned["claims"][0]["evidence"]["part0"]["gap_mean"] < 0
    assert fresh["claims"][0]["evidence"]["part0"]["gap_mean"] > 0
    assert differences(fresh, pinned) == []


def test_a_change_on_the_decisions_scale_is_caught(training):
    pinned = result(claim("c", gap_rule([2.29], [2.29068])))
    moved_arm = result(claim("c", gap_rule([2.29], [2.19])))  # the baseline moved by 4 %...
    diffs = differences(moved_arm, pinned)
    assert any("c: baseline[0]" in d for d in diffs) is False  # ...within 5 % of the arms
    moved_more = result(claim("c", gap_rule([2.29], [2.05])))  # 10 % of the arms: caught
    diffs = differences(moved_more, pinned)
    assert any(d.startswith("c: baseline[0] = 2.05") for d in diffs), diffs
    assert any(d.startswith("c: gap_mean = ") and "decision's scale 2.29" in d for d in diffs)


def test_deterministic_papers_stay_near_exact():
    """Without a declared tolerance the same sign flip (4e-4 of the arms) is a difference."""
    pinned = result(claim("c", gap_rule([2.2905616760253906], [2.2912437915802])))
    fresh = result(claim("c", gap_rule([2.29093074798584], [2.290667772293091])))
    assert len(differences(fresh, pinned)) >= 3
    same = copy.deepcopy(pinned)
    same["claims"][0]["evidence"]["gap_mean"] += 1e-12  # last-bit noise of a float64 sum
    assert differences(same, pinned) == []


def test_a_threshold_sets_the_scale_of_its_group(training):
    """eco's matches_master: per-seed gaps near zero judged against tol 0.03 (0.0020 on one
    machine, 0.0018 on another) match; a gap that moves by 10 % of the tolerance does not."""
    def ev(g):
        return {"part0": {"gaps": [g], "mean_gap": g, "tol": 0.03}}

    pinned = result(claim("m", ev(0.0019791126251220703)))
    assert differences(result(claim("m", ev(0.0018038749694824219))), pinned) == []
    assert differences(result(claim("m", ev(0.0049791126251220703))), pinned) != []


def test_constants_never_set_the_scale():
    scales = decision_scales(claim("c", {"gap_mean": 0.001, "gap_se": 0.0004, "se_mult": 2.0,
                                         "require": 9.0, "n_rest": 2473.0}))
    assert scales["gap_mean"] == pytest.approx(0.0004)  # the s.e., not se_mult/require/n_rest


def test_a_group_without_arms_takes_the_claims_arm_scale(training):
    """tie_alignment's oracle gate: gap_mean/gap_se of arms the evidence does not list; they
    move with the claim's arms (here ~1.7), not with their own s.e."""
    def ev(gap, se, method):
        return {"regimes": {"KL 1": gap_rule([method, 1.1156959812869534],
                                             [1.1664129956654103, 1.0932024011529504])},
                "oracle_gate": {"checked": {"a vs b @ KL 1": {"gap_mean": gap, "gap_se": se}}}}

    pinned = result(claim("t", ev(0.02536318386451782, 0.021066124411000003, 1.7189028977966805)))
    fresh = result(claim("t", ev(0.02671, 0.022190005330806117, 1.7201)))
    scales = decision_scales(fresh["claims"][0])
    assert scales["oracle_gate.checked.a vs b @ KL 1.gap_se"] == pytest.approx(1.7201)
    assert scales["regimes.KL 1.gap_mean"] == pytest.approx(1.7201)
    assert differences(fresh, pinned) == []
    off = result(claim("t", ev(0.25, 0.022, 1.7189028977966805)))  # the gate's gap moved by 0.22
    assert any("oracle_gate.checked" in d for d in differences(off, pinned))


@pytest.mark.parametrize("case", [
    # tfmpe lf_vs_multisite (coverages; the gap -0.096 on one machine, -0.104 on another)
    ([0.8833333333333334], [0.7875000000000001], [0.8958333333333333], [0.7916666666666667]),
    # tie_alignment lm_model_ties_beats_dropping at KL 0.25 (three seeds)
    ([0.8484004797253188, 1.2975235237103582, 0.773184328666268],
     [0.9229476962570262, 1.2775954004469106, 0.7703651144428769],
     [0.8484350291515032, 1.2975227513298258, 0.7731837029889032],
     [0.9263353824154267, 1.2775949533448845, 0.7703651425039804]),
])
def test_the_measured_cross_machine_differences_match(case, training):
    m0, b0, m1, b1 = case
    pinned = result(claim("c", {"regimes": {"r": gap_rule(m0, b0)}}), seeds=range(len(m0)))
    fresh = result(claim("c", {"regimes": {"r": gap_rule(m1, b1)}}), seeds=range(len(m0)))
    assert differences(fresh, pinned) == []


# -- what is compared exactly ----------------------------------------------------------------
def test_verdicts_regimes_controls_and_seeds_are_exact(training):
    pinned = result(claim("c", gap_rule([1.0], [0.5]), verdict="reproduced",
                          regimes=[{"condition": "r", "verdict": "reproduced"}]))
    for mutate, expect in (
        (lambda r: r["claims"][0].update(verdict="inconclusive"), "c: verdict"),
        (lambda r: r["claims"][0]["regimes"][0].update(verdict="not reproduced"), "c: regimes"),
        (lambda r: r["claims"][0]["negative_control"].update(verdict="reproduced"),
         "c: control_verdict"),
        (lambda r: r["claims"][0]["negative_control"].update(powerless=True), "c: powerless"),
        (lambda r: r.update(seeds=[1]), "seeds"),
        (lambda r: r["claims"].append(claim("d", {})), "claims"),
        (lambda r: r["claims"][0]["evidence"].update(extra=1.0), "c: evidence keys changed"),
    ):
        fresh = copy.deepcopy(pinned)
        mutate(fresh)
        assert any(d.startswith(expect) for d in differences(fresh, pinned)), expect


def test_a_key_added_to_the_pin_is_compared_exactly(monkeypatch):
    """pin_of grows (e.g. a claim's detectability): the new key is compared exactly, and a pin
    written before it says so instead of passing silently."""
    base = pins.pin_of

    def extended(res):
        view = base(res)
        for c in res["claims"]:
            view["claims"][c["id"]]["detectability"] = c.get("detectability")
        return view

    old_pin = pins.pin_of(result(claim("c", gap_rule([1.0], [0.5]))))
    monkeypatch.setattr(pins, "pin_of", extended)
    fresh = result(claim("c", gap_rule([1.0], [0.5])))
    fresh["claims"][0]["detectability"] = {"mde": 0.1}
    assert pin_differences(fresh, old_pin) == [
        "c: detectability is not in the pin (re-pin to record it)"]
    new_pin = extended(fresh)
    assert pin_differences(fresh, new_pin) == []
    fresh["claims"][0]["detectability"] = {"mde": 0.2}
    assert pin_differences(fresh, new_pin) == [
        "c: detectability {'mde': 0.2} != pinned {'mde': 0.1}"]


def test_nan_and_paths():
    ev = {"a": {"b": [1.0, float("nan")], "c": True, "d": [{"e": 2}]}, "f": 3}
    assert pins._numbers(ev) == {"a.b[0]": 1.0, "a.b[1]": None, "a.d[0].e": 2.0, "f": 3.0}
    pinned = result(claim("c", ev))
    assert differences(copy.deepcopy(pinned), pinned) == []
    fresh = copy.deepcopy(pinned)
    fresh["claims"][0]["evidence"]["a"]["b"][1] = 0.5
    assert differences(fresh, pinned) == ["c: a.b[1] = 0.5, pinned None"]


def test_every_pin_on_disk_reads_with_the_current_comparator():
    """Each checked-in pin has the keys pin_differences needs (seeds, claims with numbers)."""
    paths = sorted((ROOT / "tests" / "papers").glob(f"*/{pins.PIN_NAME}"))
    assert paths
    import json

    for path in paths:
        pin = json.loads(path.read_text())
        assert isinstance(pin["seeds"], list) and pin["claims"], path
        for c in pin["claims"].values():
            assert isinstance(c["numbers"], dict) and "verdict" in c, path


# -- the thread count ------------------------------------------------------------------------
def test_every_smoke_profile_runs_on_one_torch_thread():
    from icml26.harness import PAPERS

    for info in PAPERS.values():
        if info.implemented and info.module is None:
            assert info.experiment().Config.smoke().torch_threads == 1, info.slug


def test_a_pin_is_written_from_one_thread_only(tmp_path):
    res = result(claim("c", gap_rule([1.0], [0.5])))
    res["config"] = {"torch_threads": 2}
    with pytest.raises(ValueError, match="one torch thread"):
        pins.write_pin(res, tmp_path)
    res["config"] = {"torch_threads": 1}
    assert pins.write_pin(res, tmp_path).is_file()


def test_a_training_papers_smoke_matches_its_pin_with_another_thread_count(tmp_path):
    """ms_flow trains float32 flows in its smoke run (~10 s), and its numbers change with
    torch's thread count; with 2 threads instead of the profile's 1 it still matches its pin."""
    import torch

    from icml26.harness import assert_pinned, run_paper
    from icml26.papers.ms_flow import experiment

    assert experiment.Config.smoke().torch_threads == 1  # the profile pins one thread
    assert getattr(experiment, "PIN_TOLERANCE", None) == TRAINING_TOLERANCE
    before = torch.get_num_threads()
    res = run_paper("ms_flow", "smoke", out=tmp_path, overrides=["torch_threads=2"])
    assert res["status"] == "ok", res.get("error")
    assert res["config"]["torch_threads"] == 2 and torch.get_num_threads() == before
    assert_pinned(res, ROOT / "tests" / "papers" / "ms_flow" / "test_claims.py")

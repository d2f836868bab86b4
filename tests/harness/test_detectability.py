"""Claims that can succeed: detectability, substrate gates, rule forms, beyond-control, stability
(CLAIMS.md rules 8-10), on the test-only paper ``detect_paper``."""

from __future__ import annotations

import math
import sys

import pytest

from icml26.harness import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    ClaimArms,
    SubstrateCheck,
    noninferior,
    paired_improvement,
    run_paper,
    superior,
)
from icml26.harness.claims import NUMERICALLY_CONSISTENT, all_of, exact, judge, per_regime
from icml26.harness.registry import PAPERS, PaperInfo, register

SLUG = "zz_detect"


@pytest.fixture(autouse=True)
def detect_paper():
    from tests.harness import detect_paper as mod

    register(PaperInfo(96, SLUG, "Detect", "detect", None, None, module="tests.harness.detect"))
    sys.modules["tests.harness.detect.experiment"] = mod
    sys.modules.setdefault("tests.harness.detect", mod)
    yield
    PAPERS.pop(SLUG, None)
    sys.modules.pop("tests.harness.detect.experiment", None)
    sys.modules.pop("tests.harness.detect", None)


def _run(tmp_path, *sets, seeds=None, profile="quick", stability=None):
    result = run_paper(SLUG, profile, overrides=list(sets), seeds=seeds, out=tmp_path,
                       stability=stability)
    assert result["status"] == "ok", result.get("error")
    return result, {c["id"]: c for c in result["claims"]}


def test_detectable_effect_is_reproduced_with_its_record(tmp_path):
    result, claims = _run(tmp_path)
    c = claims["gap"]
    assert c["verdict"] == REPRODUCED and c["verdict_raw"] == REPRODUCED
    det = c["detectability"]
    assert det["effect"] == 0.1 and 0 < det["mde"] < 0.1
    assert det["positive_control"] == {"arm": "oracle", "verdict": REPRODUCED,
                                       "ours": det["positive_control"]["ours"]}
    assert result["substrate"] == [{"name": "learns", "value": 1.0, "rule": "mean baseline.health >= 0.5",
                                    "passed": True, "description": "the substrate learns the task"}]
    assert c["gates"] == ["learns"]


def test_planted_effect_below_the_mde_is_inconclusive_underpowered(tmp_path):
    # a real gap of 0.05 under noise 0.3: the measured s.e. puts the mde above the claimed 0.1
    _, claims = _run(tmp_path, "gap=0.05", "noise=0.3")
    c = claims["gap"]
    assert c["detectability"]["mde"] > 0.1
    assert c["verdict"] == INCONCLUSIVE
    assert "underpowered" in c["inconclusive_reason"]
    # even a "not reproduced" (gap <= 0) from such a protocol is no evidence
    _, claims = _run(tmp_path, "gap=-0.05", "noise=0.3")
    assert claims["gap"]["verdict_raw"] == NOT_REPRODUCED
    assert claims["gap"]["verdict"] == INCONCLUSIVE


def test_a_positive_control_that_fails_makes_the_claim_inconclusive():
    metrics = {"method": {"x": [2.0, 2.1, 2.2]}, "baseline": {"x": [1.0, 1.0, 1.0]},
               "control": {"x": [1.0, 0.9, 1.1]}, "oracle": {"x": [1.0, 1.0, 1.0]}}
    claim = Claim(id="c", statement="s", paper_value="p", metric="m", scale="toy", rule="r",
                  decide=lambda m, c: paired_improvement(m["method"]["x"], m["baseline"]["x"]),
                  control_description="d",
                  control=lambda m, c: paired_improvement(m["control"]["x"], m["baseline"]["x"]),
                  arms=ClaimArms(method="method", baselines=("baseline",), control="control"),
                  effect=0.5, positive_arm="oracle",
                  positive=lambda m, c: paired_improvement(m["oracle"]["x"], m["baseline"]["x"]))
    entry = judge(claim, metrics, None)
    assert entry["verdict"] == INCONCLUSIVE and "positive control" in entry["inconclusive_reason"]


def test_a_failing_gate_makes_its_claims_inconclusive(tmp_path):
    result, claims = _run(tmp_path, "health=0.2")
    assert result["substrate"][0]["passed"] is False
    assert claims["gap"]["verdict"] == INCONCLUSIVE
    assert claims["gap"]["inconclusive_reason"].startswith("substrate: learns")
    assert claims["noninf"]["verdict"] != INCONCLUSIVE  # it does not depend on the gate


def test_unknown_gate_and_bad_checks_are_refused():
    with pytest.raises(ValueError, match="either value= or arm="):
        SubstrateCheck("g", "d", low=0.0)
    with pytest.raises(ValueError, match="needs a bound"):
        SubstrateCheck("g", "d", arm="a", metric="m")
    claim = Claim(id="c", statement="s", paper_value="p", metric="m", scale="toy", rule="r",
                  decide=lambda m, c: exact(True), control_description="d",
                  control=lambda m, c: exact(m["b"]["x"][0] > 1), gates=("nope",),
                  arms=ClaimArms(method="a", control="b"))
    with pytest.raises(ValueError, match="does not declare"):
        judge(claim, {"a": {"x": [1.0]}, "b": {"x": [1.0]}}, None)
    with pytest.raises(ValueError, match="effect must be"):
        Claim(id="c", statement="s", paper_value="p", metric="m", scale="toy", rule="r",
              decide=lambda m, c: exact(True), control_description="d",
              control=lambda m, c: exact(True), effect=math.inf)


def test_one_seed_se_rule_is_inconclusive_seeds(tmp_path):
    _, claims = _run(tmp_path, seeds=[0])
    c = claims["gap"]
    assert c["verdict_raw"] == REPRODUCED and c["verdict"] == INCONCLUSIVE
    assert "seeds" in c["inconclusive_reason"]
    assert c["detectability"]["mde"] is None  # no spread measured with one seed


def test_noninferior_never_widens_with_noise():
    quiet = noninferior([1.0, 1.01, 0.99], [1.0, 1.0, 1.0], margin=0.05)
    assert quiet.verdict == REPRODUCED
    # a loss of 2 s.e.: the old max(margin, 2 s.e.) form let this pass; the helper does not
    loud = noninferior([0.7, 1.1, 0.8], [1.0, 1.0, 1.0], margin=0.05)
    assert loud.evidence["lower_bound"] < -0.05 and loud.verdict != REPRODUCED
    assert loud.mde == pytest.approx(2 * loud.evidence["gap_se"])
    with pytest.raises(ValueError, match="margin"):
        noninferior([1.0], [1.0], margin=0.0)
    # lower is better orientation
    assert noninferior([0.99, 1.0, 1.01], [1.0, 1.0, 1.0], margin=0.05,
                       higher_is_better=False).verdict == REPRODUCED
    s = superior([2.0, 2.1, 2.2], [1.0, 1.0, 1.0], margin=0.5)
    assert s.verdict == REPRODUCED and s.mde == pytest.approx(0.5)


def test_combined_rules_carry_the_mde():
    a = paired_improvement([2.0, 2.1, 2.2], [1.0, 1.0, 1.0])
    b = noninferior([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], margin=0.1)
    both = all_of(a, b)
    assert both.mde == a.mde and both.uses_se and both.n == 3
    assert all_of(a, b, primary=1).mde == b.mde
    regimes = per_regime([("r1", a), ("r2", exact(True))], require="any")
    assert regimes.mde == 0.0
    assert per_regime([("r1", a), ("r2", exact(True))], require="all").mde == a.mde
    # a non-inferiority leg whose noise exceeds its own margin is named as weak
    noisy = noninferior([0.7, 1.3, 1.0], [1.0, 1.0, 1.0], margin=0.05)
    assert noisy.effect == 0.05 and noisy.mde > 0.05
    assert all_of(a, noisy).weak_legs == ("part1",) and all_of(a, b).weak_legs == ()
    claim = Claim(id="c", statement="s", paper_value="p", metric="m", scale="toy", rule="r",
                  decide=lambda m, c: all_of(a, noisy), control_description="d",
                  control=lambda m, c: exact(m["b"]["x"][0] > 1), effect=0.5,
                  arms=ClaimArms(method="a", control="b"))
    entry = judge(claim, {"a": {"x": [1.0]}, "b": {"x": [1.0]}}, None)
    assert entry["verdict"] == INCONCLUSIVE and "part1" in entry["inconclusive_reason"]


def test_method_beating_a_passing_control_is_reproduced_beyond_control(tmp_path):
    _, claims = _run(tmp_path, "control_gap=0.08")
    c = claims["gap"]
    assert c["negative_control"]["verdict"] == REPRODUCED
    assert c["verdict"] == REPRODUCED and c["beyond_control"] is True
    assert c["control_effect"] == c["negative_control"]["ours"]
    # a control as good as the method explains the effect
    _, claims = _run(tmp_path, "control_gap=0.2")
    c = claims["gap"]
    assert c["verdict"] == NOT_REPRODUCED and c["explained_by"] == "control"
    assert c["beyond_control"] is False


def test_knob_sweep_that_flips_marks_the_claim_unstable(tmp_path):
    result, claims = _run(tmp_path, profile="full")  # full sweeps PROTOCOL_KNOBS by default
    assert result["knobs"] == {"knob": [1.0, 0.0]}
    st = claims["gap"]["stability"]
    assert [(s["setting"], s["verdict"]) for s in st] == [(1.0, REPRODUCED), (0.0, NOT_REPRODUCED)]
    assert claims["gap"]["unstable"] == ["knob"]
    # quick does not sweep unless asked
    _, claims = _run(tmp_path)
    assert "stability" not in claims["gap"]
    _, claims = _run(tmp_path, stability=True)
    assert claims["gap"]["unstable"] == ["knob"]


def test_theorem_check_rows_say_numerically_consistent():
    claim = Claim(id="t", statement="s", paper_value="p", metric="m", scale="toy", rule="r",
                  decide=lambda m, c: exact(True), control_description="d",
                  control=lambda m, c: exact(m["b"]["x"][0] > 1), kind="theorem_check",
                  arms=ClaimArms(method="a", control="b"), effect=1.0)
    entry = judge(claim, {"a": {"x": [1.0]}, "b": {"x": [1.0]}}, None)
    assert entry["verdict"] == NUMERICALLY_CONSISTENT and entry["detectability"]["mde"] == 0.0


def test_progress_inside_a_seed_reaches_the_runner(tmp_path, monkeypatch):
    """A loop's ticks (core.progress.tick) reach the run's progress callback, rate-limited, with
    the last step always reported; without a sink a tick is a no-op."""
    from icml26.core import progress as prog
    from tests.harness import detect_paper as mod

    prog.tick("nothing listens", 1, 2)  # no sink: nothing happens, nothing raises
    original = mod.run

    def run_with_loop(config, seed):
        for k in range(1000):
            prog.tick("loop", k + 1, 1000)
        return original(config, seed)

    monkeypatch.setattr(mod, "run", run_with_loop)
    seen = []
    run_paper(SLUG, "quick", out=tmp_path, progress=lambda msg, i, n: seen.append(msg))
    inner = [m for m in seen if "loop" in m]
    assert "seed 0 · loop 1000/1000" in inner and "seed 3 · loop 1000/1000" in inner
    assert len(inner) <= 4 * 2  # the first tick and the last step per seed at most (5 s apart)


def test_timing_says_where_a_seed_went(tmp_path, monkeypatch):
    import time

    from icml26.core import progress as prog
    from tests.harness import detect_paper as mod

    original = mod.run

    def run_timed(config, seed):
        with prog.phase("data"):
            time.sleep(0.02)
        for _rep in range(2):  # the same loop twice: two spans summed
            for k in range(3):
                prog.tick("train", k + 1, 3)
                time.sleep(0.01)
        return original(config, seed)

    monkeypatch.setattr(mod, "run", run_timed)
    result = run_paper(SLUG, "quick", out=tmp_path)
    timing = result["timing"]
    assert [s["seed"] for s in timing["seeds"]] == [0, 1, 2, 3]
    first = timing["seeds"][0]
    assert first["phases_s"]["data"] >= 0.02
    assert 0.035 <= first["loops_s"]["train"] <= first["total_s"]
    assert timing["judge_s"] >= 0


def test_report_says_a_paper_was_skipped_and_why(tmp_path):
    from icml26.harness.preflight import Skipped, record_skipped
    from icml26.harness.report import write_report

    record_skipped([Skipped(SLUG, 'needs sbi: pip install "icml26"')], tmp_path, "quick")
    md, html_path = write_report(tmp_path)
    assert "skipped before any compute: needs sbi" in md.read_text()
    assert "skipped before any compute: needs sbi" in html_path.read_text()

"""verbalized_bp claims: the smoke profile runs and matches its pin; quick acceptance (slow)."""

from __future__ import annotations

import pytest

from icml26.harness import assert_pinned, run_paper
from icml26.harness.claims import VERDICTS
from icml26.harness.result import validate_result

IDS = {"classic_values", "equilibrium", "loop_vs_random", "obfuscation", "commitment"}


def _check(res):
    assert res["status"] == "ok", res.get("error")
    validate_result(res)
    assert {c["id"] for c in res["claims"]} == IDS
    for c in res["claims"]:
        assert c["verdict"] in VERDICTS
        assert "identical_to" not in c["negative_control"], c["id"]
    # every chat-model call went through core.llm's offline backends, and was counted
    usage = res["llm_usage"]
    assert usage["scripted:local_proposer"]["calls"] > 0
    assert all(not k.startswith("openai_compatible") for k in usage)


def test_smoke_profile(tmp_path):
    res = run_paper("verbalized_bp", "smoke", out=tmp_path)
    _check(res)
    assert_pinned(res, __file__)
    claims = {c["id"]: c for c in res["claims"]}
    # a structural outcome that holds at any scale: a credulous receiver breaks the classic values
    assert claims["classic_values"]["negative_control"]["verdict"] == "not reproduced"
    # the loop is judged against every search without feedback (issue 49)
    assert set(claims["loop_vs_random"]["arms"]["baselines"]) == {"random_search", "random_prior", "lie_grid"}
    assert list(tmp_path.rglob("*.png"))


@pytest.mark.slow
def test_quick_profile(tmp_path):
    res = run_paper("verbalized_bp", "quick", out=tmp_path)
    _check(res)
    assert res["seeds"] == [0, 1, 2, 3, 4]  # loop_vs_random on >= 5 seeds (issue 49)


def test_claims_declare_effects_and_the_seed_knob():
    from icml26.harness.runner import protocol_knobs
    from icml26.papers.verbalized_bp import experiment

    for c in experiment.CLAIMS:
        assert c.effect is not None and c.effect > 0 and c.effect_source, c.id
    knobs = protocol_knobs(experiment, experiment.Config.full())
    # the full profile's own seeds, quick's, and the set on which loop_vs_random flipped (issue 40)
    assert knobs["seeds"] == (tuple(range(6)), (0, 1, 2), (3, 4, 5, 6, 7))


def test_tolerance_rules_carry_their_resolution():
    from icml26.papers.verbalized_bp.experiment import CLAIMS, Config, theory

    claim = next(c for c in CLAIMS if c.id == "classic_values")
    cfg = Config.smoke()  # letter only
    th = theory("letter", cfg.leak)
    arm = {"letter_value": [th["value"] - 0.01, th["value"], th["value"] + 0.01],
           "letter_lie_rate": [th["lie_rate"]] * 3, "letter_honest_rate": [1.0] * 3}
    d = claim.decide({"loop": arm}, cfg)
    assert d.verdict == "reproduced" and d.n == 3 and not d.uses_se
    assert d.mde == pytest.approx(2 * 0.01 / 3 ** 0.5)

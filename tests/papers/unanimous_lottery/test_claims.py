"""The smoke profile runs end to end; every negative control fails; quick acceptance is slow-marked."""

from __future__ import annotations

import pytest

from icml26.harness import run_paper
from icml26.harness.result import validate_result

CLAIM_IDS = {"correct", "adaptivity", "randomization", "bounds", "advice"}


def test_smoke_runs_and_controls_do_not_pass(tmp_path):
    result = run_paper("unanimous_lottery", "smoke", out=tmp_path)
    assert result["status"] == "ok", result.get("error")
    validate_result(result)
    claims = {c["id"]: c for c in result["claims"]}
    assert set(claims) == CLAIM_IDS
    for c in claims.values():
        assert c["verdict"] in ("reproduced", "not reproduced", "inconclusive")
        assert c["negative_control"]["verdict"] != "reproduced", c["id"]
    # correctness holds on every instance even at smoke size
    assert claims["correct"]["verdict"] == "reproduced"
    assert result["plots"], "plots were not written"


@pytest.mark.slow
def test_quick_acceptance(tmp_path):
    result = run_paper("unanimous_lottery", "quick", out=tmp_path)
    assert result["status"] == "ok", result.get("error")
    claims = {c["id"]: c for c in result["claims"]}
    for c in claims.values():
        assert c["negative_control"]["passes"], c["id"]
    for cid in ("correct", "adaptivity", "bounds", "advice"):
        assert claims[cid]["verdict"] == "reproduced", cid

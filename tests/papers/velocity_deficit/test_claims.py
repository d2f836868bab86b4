"""The smoke profile runs end to end; every negative control fails; quick acceptance is slow."""

import pytest

from icml26.harness import REPRODUCED, run_paper
from icml26.harness.claims import VERDICTS


def _check(result):
    assert result["status"] == "ok", result.get("error")
    ids = {c["id"] for c in result["claims"]}
    assert ids == {"deficit", "deficit_grows_with_dim", "ssc_fixed_nfe", "ssc_beats_more_nfe",
                   "asymmetry", "mafm"}
    for claim in result["claims"]:
        assert claim["verdict"] in VERDICTS
        assert claim["negative_control"]["verdict"] != REPRODUCED, claim["id"]
    m = result["metrics"]
    assert all(v == 1.0 for v in m["digits_ssc_alpha0_10"]["bitwise_equal_euler"])
    assert m["digits_ssc_alpha0_10"]["cfid"] == m["digits_euler_10"]["cfid"]


def test_smoke(tmp_path):
    result = run_paper("velocity_deficit", "smoke", out=tmp_path)
    _check(result)
    assert result["plots"]


@pytest.mark.slow
def test_quick(tmp_path):
    result = run_paper("velocity_deficit", "quick", out=tmp_path)
    _check(result)
    # every claim except MAFM (full profile only) gets a measured verdict
    for claim in result["claims"]:
        if claim["id"] != "mafm":
            assert claim["verdict"] != "inconclusive" or "evidence" in claim

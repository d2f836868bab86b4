"""The smoke profile runs end to end; every negative control fails; quick acceptance is slow-marked."""

from __future__ import annotations

import pytest

from icml26.harness import run_paper


def test_smoke_runs_and_controls_do_not_pass(tmp_path):
    result = run_paper("nammd", "smoke", out=tmp_path)
    data = result
    assert data["status"] == "ok", data.get("traceback")
    claims = {c["id"]: c for c in data["claims"]}
    assert set(claims) == {"dct_power", "boundary_size", "two_sample_power", "digits_ranking"}
    for c in claims.values():
        assert c["verdict"] in ("reproduced", "not reproduced", "inconclusive")
        assert c["negative_control"]["verdict"] != "reproduced", c["id"]


@pytest.mark.slow
def test_quick_acceptance(tmp_path):
    result = run_paper("nammd", "quick", out=tmp_path)
    data = result
    claims = {c["id"]: c for c in data["claims"]}
    for c in claims.values():
        assert c["negative_control"]["passes"]
    # the controlled Gaussian setting of Thm 9 and the digits ranking reproduce at quick scale;
    # boundary_size (0.023 at m=200, below the 0.025 floor) and two_sample_power (identical power,
    # see README) are recorded as measured, whatever their verdict.
    assert claims["dct_power"]["verdict"] == "reproduced"
    assert claims["digits_ranking"]["verdict"] == "reproduced"
    assert claims["two_sample_power"]["verdict"] != "reproduced"

"""disempowerment claims: the smoke profile runs and matches its pin; quick acceptance (slow)."""

from __future__ import annotations

import pytest

from icml26.harness import assert_pinned, run_paper
from icml26.harness.claims import VERDICTS
from icml26.harness.result import validate_result

IDS = {"severe_rates", "domain_ranking", "trend", "approval", "privacy", "agreement"}


def _check(res):
    assert res["status"] == "ok", res.get("error")
    validate_result(res)
    assert {c["id"] for c in res["claims"]} == IDS
    for c in res["claims"]:
        assert c["verdict"] in VERDICTS
        assert "identical_to" not in c["negative_control"], c["id"]


def test_smoke_profile(tmp_path):
    res = run_paper("disempowerment", "smoke", out=tmp_path)
    _check(res)
    assert_pinned(res, __file__)
    claims = {c["id"]: c for c in res["claims"]}
    # the layered protections hold and the unprotected ablation leaks, at any scale
    assert claims["privacy"]["verdict"] == "reproduced"
    assert claims["privacy"]["negative_control"]["verdict"] == "not reproduced"


@pytest.mark.slow
def test_quick_profile(tmp_path):
    res = run_paper("disempowerment", "quick", out=tmp_path)
    _check(res)
    for c in res["claims"]:
        assert c["negative_control"]["passes"], c["id"]
        assert not c["negative_control"]["powerless"], c["id"]

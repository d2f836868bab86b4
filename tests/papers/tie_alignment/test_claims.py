"""tie_alignment claims: the smoke profile runs and matches its pin; quick acceptance (slow)."""

from __future__ import annotations

import pytest

from icml26.harness import assert_pinned, run_paper
from icml26.harness.claims import VERDICTS


def _check(res):
    assert res["status"] == "ok", res.get("error")
    ids = {c["id"] for c in res["claims"]}
    assert {"forced_choice_noise", "silent_small_beats_forced_large", "lm_model_ties_beats_dropping"} <= ids
    for c in res["claims"]:
        assert c["verdict"] in VERDICTS
        assert "identical_to" not in c["negative_control"], c["id"]


def test_smoke_profile(tmp_path):
    res = run_paper("tie_alignment", "smoke", out=tmp_path)
    _check(res)
    assert_pinned(res, __file__)


@pytest.mark.slow
def test_quick_profile(tmp_path):
    res = run_paper("tie_alignment", "quick", out=tmp_path)
    _check(res)
    claims = {c["id"]: c for c in res["claims"]}
    # matched-KL claims report one regime per KL budget, the sweep claim one per (r, s) pair
    assert len(claims["model_ties_beats_dropping"]["regimes"]) == 3
    assert len(claims["silent_beats_forced_across_regimes"]["regimes"]) == 16
    gates = {g["name"] for g in res["substrate"]}
    for cid, c in claims.items():
        if cid != "forced_choice_noise":
            assert c["gates"] and set(c["gates"]) <= gates, cid

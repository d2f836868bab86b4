"""tie_alignment claims: the smoke profile runs, its result is valid, every control fails."""

from __future__ import annotations

import pytest

from icml26.harness import run_paper
from icml26.harness.claims import VERDICTS


def _check(res):
    assert res["status"] == "ok", res.get("error")
    ids = {c["id"] for c in res["claims"]}
    assert {"forced_choice_noise", "silent_small_beats_forced_large", "lm_model_ties_beats_dropping"} <= ids
    for c in res["claims"]:
        assert c["verdict"] in VERDICTS
        assert c["negative_control"]["passes"], c["id"]


def test_smoke_profile(tmp_path):
    res = run_paper("tie_alignment", "smoke", out=tmp_path)
    _check(res)


@pytest.mark.slow
def test_quick_profile(tmp_path):
    res = run_paper("tie_alignment", "quick", out=tmp_path)
    _check(res)

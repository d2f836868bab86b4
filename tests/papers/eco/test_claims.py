"""The smoke profile runs end to end and matches its pinned verdicts; quick acceptance (slow)."""

import pytest

from icml26.harness import assert_pinned, run_paper
from icml26.harness.result import validate_result


def test_smoke_profile_matches_pin(tmp_path):
    result = run_paper("eco", "smoke", out=tmp_path)
    assert result["status"] == "ok", result.get("error")
    validate_result(result)
    assert_pinned(result, __file__)
    claims = {c["id"]: c for c in result["claims"]}
    # the memory measurement is structural: it holds at any scale
    assert claims["memory_frontier"]["evidence"]["part0"]["ratio"] < 0.75
    # every control is a distinct arm, never a copy of another
    assert all("identical_to" not in c["negative_control"] for c in claims.values())
    assert list(tmp_path.rglob("*.png"))
    # the data is the packaged corpus, identified by its hash in the result
    from icml26.core.lm.data import TALES_SHA256

    assert result["extras"][0]["corpus"]["file_sha256"] == TALES_SHA256


@pytest.mark.slow
def test_quick_profile(tmp_path):
    result = run_paper("eco", "quick", out=tmp_path)
    assert result["status"] == "ok", result.get("error")
    assert not result["over_budget"]
    for c in result["claims"]:
        assert "identical_to" not in c["negative_control"], c["id"]

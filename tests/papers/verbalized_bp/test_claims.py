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
    # structural outcomes that hold at any scale: no commitment, no persuasion
    assert claims["commitment"]["verdict"] == "reproduced"
    assert claims["classic_values"]["negative_control"]["verdict"] == "not reproduced"
    assert list(tmp_path.rglob("*.png"))


@pytest.mark.slow
def test_quick_profile(tmp_path):
    res = run_paper("verbalized_bp", "quick", out=tmp_path)
    _check(res)
    claims = {c["id"]: c for c in res["claims"]}
    for cid in ("classic_values", "loop_vs_random", "obfuscation", "commitment"):
        assert claims[cid]["verdict"] == "reproduced", (cid, claims[cid]["ours"])

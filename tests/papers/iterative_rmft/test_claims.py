"""iterative_rmft: the smoke profile runs and matches its pin; quick acceptance (slow)."""

from __future__ import annotations

import pytest

from icml26.harness import assert_pinned, run_paper


def test_smoke_profile_matches_pin(tmp_path):
    res = run_paper("iterative_rmft", "smoke", out=tmp_path)
    assert res["status"] == "ok", res.get("error")
    assert_pinned(res, __file__)
    m = res["metrics"]
    # equal compute: the three loop arms roll out and fine-tune on the same number of steps
    assert m["rmft"]["rollout_steps"] == m["random_k"]["rollout_steps"] == m["reward_k"]["rollout_steps"]
    assert m["rmft"]["sft_examples"] == m["random_k"]["sft_examples"] == m["ad_ucb"]["sft_examples"]
    # the text arms fine-tune on the same number of kept turns (they differ only in the loss)
    assert m["text_rmft"]["sft_examples"] == m["text_action_only"]["sft_examples"]
    assert "text_llm" not in m   # no LLM unless opted in


@pytest.mark.slow
def test_quick_profile(tmp_path):
    res = run_paper("iterative_rmft", "quick", out=tmp_path)
    assert res["status"] == "ok", res.get("error")
    for c in res["claims"]:
        assert "identical_to" not in c["negative_control"], c["id"]

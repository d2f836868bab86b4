"""magic: the smoke profile runs and matches its pin; equal defender updates across arms; quick (slow)."""

from __future__ import annotations

import pytest

from icml26.harness import assert_pinned, run_paper


def test_smoke_profile_matches_pin(tmp_path):
    res = run_paper("magic", "smoke", out=tmp_path)
    assert res["status"] == "ok", res.get("error")
    assert_pinned(res, __file__)
    m = res["metrics"]
    # equal compute: every trained arm had the same number of defender GRPO updates
    n = {arm: m[arm]["defender_updates"] for arm in ("static", "frozen_attacker", "no_game", "magic_base", "magic")}
    assert len(set(map(tuple, n.values()))) == 1, n
    assert m["magic"]["attacker_updates"] == m["no_game"]["attacker_updates"] == m["magic_base"]["attacker_updates"]


@pytest.mark.slow
def test_quick_profile(tmp_path):
    res = run_paper("magic", "quick", out=tmp_path)
    assert res["status"] == "ok", res.get("error")
    for c in res["claims"]:
        assert "identical_to" not in c["negative_control"], c["id"]

"""The lean_slt reproduction: smoke profile end to end, negative controls, quick acceptance (slow)."""

from __future__ import annotations

import pytest

from icml26.harness import REPRODUCED, run_paper
from icml26.harness.result import validate_result


def _check(result):
    validate_result(result)
    assert result["status"] == "ok", result.get("error")
    for claim in result["claims"]:
        assert claim["negative_control"]["passes"], f"{claim['id']}: control is powerless"
    return {c["id"]: c["verdict"] for c in result["claims"]}


def test_smoke_profile_runs_and_controls_fail(tmp_path):
    result = run_paper("lean_slt", "smoke", out=tmp_path)
    verdicts = _check(result)
    assert len(verdicts) == 4 + 23
    # every formal statement must hold on its instances (a violation would be a bug or a false theorem)
    assert all(v == REPRODUCED for k, v in verdicts.items() if k.startswith("T"))
    assert verdicts["catalogue"] == REPRODUCED
    assert (tmp_path / "lean_slt" / "smoke" / "latest.md").exists()


@pytest.mark.slow
def test_quick_profile_acceptance(tmp_path):
    result = run_paper("lean_slt", "quick", out=tmp_path)
    verdicts = _check(result)
    assert verdicts["catalogue"] == REPRODUCED
    assert verdicts["dudley_slack"] == REPRODUCED
    assert verdicts["least_squares"] == REPRODUCED

"""The NPPR reproduction runs through the harness; claims are judged; controls do not pass."""

from __future__ import annotations

import pytest

from icml26.harness import run_paper
from icml26.harness.claims import REPRODUCED
from icml26.papers.nppr import experiment


def test_smoke_profile_runs_and_controls_fail(tmp_path):
    result = run_paper("nppr", "smoke", out=tmp_path)
    assert result["status"] == "ok", result.get("error")
    ids = {c["id"] for c in result["claims"]}
    assert ids == {c.id for c in experiment.CLAIMS}
    for claim in result["claims"]:
        assert claim["verdict"] in ("reproduced", "not reproduced", "inconclusive")
        assert claim["negative_control"]["passes"], claim["id"]
    m = result["metrics"]
    # every arm is evaluated on the same model and budget; the ordering PGD <= PR holds
    assert m["pgd"]["cnn"][0] <= m["pr_uniform"]["cnn"][0]
    # the Dirac control is a point attack: no input has an interior PR
    assert m["control_pgd_dirac"]["cnn_interior"][0] == 0.0
    assert (tmp_path / "nppr" / "smoke" / "latest.json").exists()
    assert any(p.endswith("pr_vs_eps.png") for p in result["plots"])


def test_rules_can_fail():
    """Each rule flips on metrics where the mechanism is absent (NPPR equal to fixed PR)."""
    flat = {a: {"cnn": [0.9, 0.9]} for a in ("pr_uniform", "pr_gaussian", "pr_laplace",
                                             "nppr_xy", "nppr_x", "nppr_none")}
    flat["pgd"] = {"cnn": [0.5, 0.5]}
    c1 = experiment.CLAIMS[0].decide(flat, None)
    assert c1.verdict != REPRODUCED
    flat["nppr_none"] = {"cnn": [0.7, 0.7]}
    assert experiment.CLAIMS[1].decide(flat, None).verdict != REPRODUCED


@pytest.mark.slow
def test_quick_profile_acceptance(tmp_path):
    result = run_paper("nppr", "quick", out=tmp_path)
    assert result["status"] == "ok", result.get("error")
    for claim in result["claims"]:
        assert "not measured" not in claim["ours"] and "not run" not in claim["ours"], claim["id"]
        assert claim["negative_control"]["passes"], claim["id"]

"""Declared metrics (icml26.harness.metrics): an undeclared name is refused where it is written
and where it is read, and every registered paper's claims and gates read only declared names."""

from __future__ import annotations

import dataclasses

import pytest

from icml26.harness import MetricTable, UndeclaredMetricError, run_paper
from icml26.harness.claims import judge, measure_gates
from icml26.harness.metrics import MetricSchema

from . import fake_paper

SCHEMA = MetricSchema.of({"naive": ("success_id", "success_ood_*"),
                          ("rmft", "ucb1"): "regret_T*", "abl_*": ("loss",)})


def test_declares_names_tuples_and_globs():
    assert SCHEMA.declares("naive", "success_id")
    assert SCHEMA.declares("naive", "success_ood_visual")
    assert not SCHEMA.declares("naive", "sucess_id")  # the typo this exists to catch
    assert SCHEMA.declares("ucb1", "regret_T100") and SCHEMA.declares("rmft", "regret_T25")
    assert not SCHEMA.declares("ucb1", "success_id")
    assert SCHEMA.declares("abl_no_ki", "loss") and not SCHEMA.declares("abl", "loss")
    assert not SCHEMA.arm_declared("greedy")


def test_a_name_with_glob_characters_matches_itself_literally():
    """lean_slt's arms are called "T01 small_ball_prob [mutated]": as a glob, "[mutated]" is a
    character class that the name itself does not match."""
    schema = MetricSchema.of({"T01 ball [mutated]": ("violated",), "T01 ball": ("violated",)})
    assert schema.declares("T01 ball [mutated]", "violated")


@pytest.mark.parametrize("bad", [{}, [("a", "b")], {"a": ()}, {"": ("m",)}, {"a": ("",)},
                                 {"a": (1,)}])
def test_a_malformed_declaration_is_refused(bad):
    with pytest.raises(TypeError, match="METRICS"):
        MetricSchema.of(bad)


def test_check_names_every_undeclared_write():
    SCHEMA.check({"naive": {"success_id": 1.0}, "ucb1": {"regret_T5": 2.0}})
    with pytest.raises(UndeclaredMetricError, match=r"naive/sucess_id.*declared for 'naive'"):
        SCHEMA.check({"naive": {"sucess_id": 1.0}})
    with pytest.raises(UndeclaredMetricError, match="arm 'greedy' is not declared"):
        SCHEMA.check({"greedy": {"regret_T5": 1.0}})


def test_guard_refuses_undeclared_reads_and_explains_missing_ones():
    view = SCHEMA.guard({"naive": {"success_id": [0.5]}, "rmft": {"regret_T5": [1.0]}})
    assert view["naive"]["success_id"] == [0.5]
    with pytest.raises(UndeclaredMetricError, match="sucess_id"):
        view["naive"]["sucess_id"]
    with pytest.raises(UndeclaredMetricError, match="sucess_id"):
        view["naive"].get("sucess_id")  # Mapping.get would have swallowed the refusal
    with pytest.raises(UndeclaredMetricError, match="greedy"):
        view["greedy"]
    with pytest.raises(KeyError, match="declared in METRICS but this run did not write it"):
        view["naive"]["success_ood_visual"]
    with pytest.raises(KeyError, match="did not produce it"):
        view["ucb1"]
    assert view.get("ucb1") is None and view["naive"].get("success_ood_x", 7) == 7
    assert "ucb1" not in view and "greedy" not in view and sorted(view) == ["naive", "rmft"]


def test_metric_table_refuses_at_the_line_that_writes():
    table = MetricTable({"naive": ("success_id", "success_ood_*")})
    table["naive"]["success_id"] = 0.25
    table.record("naive", success_ood_visual=0.5)
    assert table.to_dict() == {"naive": {"success_id": 0.25, "success_ood_visual": 0.5}}
    with pytest.raises(UndeclaredMetricError, match="run\\(\\) wrote.*naive/succes_id"):
        table["naive"]["succes_id"] = 1.0
    with pytest.raises(UndeclaredMetricError, match="arm 'greedy'"):
        table.record("greedy", success_id=1.0)


def test_the_runner_refuses_an_undeclared_write(tmp_path, monkeypatch):
    monkeypatch.setattr(fake_paper, "METRICS", {("method", "baseline"): ("error",)})
    monkeypatch.setattr("icml26.harness.registry.PaperInfo.experiment", lambda self: fake_paper)
    result = run_paper("nammd", "smoke", out=tmp_path)  # any registered slug; the module is faked
    assert result["status"] == "error"
    assert "arm 'control' is not declared in METRICS" in result["error"]


def test_the_runner_refuses_an_undeclared_read(tmp_path, monkeypatch):
    monkeypatch.setattr(fake_paper, "METRICS", {("method", "baseline", "control"): ("error",)})
    monkeypatch.setattr("icml26.harness.registry.PaperInfo.experiment", lambda self: fake_paper)
    assert run_paper("nammd", "smoke", out=tmp_path)["status"] == "ok"
    claim = fake_paper.CLAIMS[0]
    typo = dataclasses.replace(claim, decide=lambda m, c: claim.decide(
        {"method": {"error": m["method"]["eror"]}, "baseline": m["baseline"]}, c))
    monkeypatch.setattr(fake_paper, "CLAIMS", (typo,))
    result = run_paper("nammd", "smoke", out=tmp_path)
    assert result["status"] == "error" and "method/eror is not declared" in result["error"]


def test_judge_and_gates_work_through_the_guard():
    metrics = {"method": {"error": [0.1, 0.2, 0.3]}, "baseline": {"error": [0.4, 0.5, 0.6]},
               "control": {"error": [0.41, 0.52, 0.6]}}
    schema = MetricSchema.of({("method", "baseline", "control"): ("error",)})
    config = fake_paper.Config.smoke()
    entry = judge(fake_paper.CLAIMS[0], schema.guard(metrics), config)
    assert entry["verdict"] == judge(fake_paper.CLAIMS[0], metrics, config)["verdict"]
    assert measure_gates((), schema.guard(metrics), config) == []

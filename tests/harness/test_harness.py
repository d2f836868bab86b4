"""Harness tests on a test-only paper: schema, atomic writes, isolation, determinism, CLI."""

from __future__ import annotations

import json

import pytest

from icml26 import cli
from icml26.harness import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    PAPERS,
    REPRODUCED,
    ConfigError,
    PaperInfo,
    UnknownPaperError,
    paired_improvement,
    run_many,
    run_paper,
)
from icml26.harness.config import parse_value
from icml26.harness.registry import register
from icml26.harness.report import write_report
from icml26.harness.result import SchemaError, atomic_write_json, load_result, validate_result

FAKE = "zz_fake"


@pytest.fixture(autouse=True)
def fake_paper():
    register(PaperInfo(99, FAKE, "A fake paper", "fake", None, None,
                       module="tests.harness"))
    # the module 'tests.harness' has an 'experiment' attribute only through this alias
    import sys

    from tests.harness import fake_paper as mod

    sys.modules["tests.harness.experiment"] = mod
    yield
    PAPERS.pop(FAKE, None)
    sys.modules.pop("tests.harness.experiment", None)


def test_registry_has_19_papers_with_unique_numbers():
    real = [p for p in PAPERS.values() if p.slug != FAKE]
    assert len(real) == 19
    assert sorted(p.number for p in real) == list(range(1, 20))


def test_run_writes_valid_result_and_latest(tmp_path):
    res = run_paper(FAKE, "smoke", out=tmp_path)
    assert res["status"] == "ok"
    folder = tmp_path / FAKE / "smoke"
    stamped = [p for p in folder.glob("*.json") if p.name != "latest.json"]
    assert len(stamped) == 1
    loaded = load_result(folder / "latest.json")
    assert loaded == json.loads(stamped[0].read_text())
    assert loaded["seeds"] == [0, 1, 2]
    assert set(loaded["metrics"]) == {"method", "baseline", "control"}
    assert len(loaded["metrics"]["method"]["error"]) == 3
    claim = loaded["claims"][0]
    assert claim["verdict"] == REPRODUCED
    assert claim["negative_control"]["verdict"] != REPRODUCED
    assert claim["negative_control"]["passes"] is True
    assert (folder / "plots" / "curve.png").exists()
    assert (folder / "latest.md").read_text().startswith("# zz_fake")


def test_schema_round_trip_and_rejects_bad_verdict(tmp_path):
    res = run_paper(FAKE, "smoke", out=tmp_path)
    validate_result(json.loads(json.dumps(res)))
    bad = json.loads(json.dumps(res))
    bad["claims"][0]["verdict"] = "maybe"
    with pytest.raises(SchemaError):
        validate_result(bad)
    bad = json.loads(json.dumps(res))
    del bad["metrics"]
    with pytest.raises(SchemaError):
        validate_result(bad)


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    path = tmp_path / "r.json"
    atomic_write_json(path, {"a": 1})
    with pytest.raises(ValueError):
        atomic_write_json(path, {"a": float("nan")})  # allow_nan=False raises mid-write
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    assert path.stat().st_mode & 0o044, "results must be readable like any written file"


def test_error_is_isolated_and_recorded(tmp_path):
    results = run_many([FAKE, FAKE], "smoke", overrides=None, out=tmp_path)
    assert all(r["status"] == "ok" for r in results)
    bad, good = run_many([FAKE, FAKE], "smoke", out=tmp_path, overrides=["fail=true"]), None
    assert all(r["status"] == "error" and "told to fail" in r["error"] for r in bad)
    # a failing paper next to a passing one: the passing one's result is intact
    register(PaperInfo(98, "zz_other", "Other", "other", None, None, module="tests.harness"))
    try:
        out = run_many(["zz_other", FAKE], "smoke", out=tmp_path / "mix",
                       overrides=None)
        assert [r["status"] for r in out] == ["ok", "ok"]
    finally:
        PAPERS.pop("zz_other", None)
    assert good is None
    # the failed reruns never replace the last completed result
    assert load_result(tmp_path / FAKE / "smoke" / "latest.json")["status"] == "ok"
    assert load_result(tmp_path / FAKE / "smoke" / "latest-error.json")["status"] == "error"


def test_one_failing_paper_keeps_the_others(tmp_path, monkeypatch):
    import tests.harness.fake_paper as mod

    original = mod.run

    def run(config, seed):
        if config.n == 101:
            raise ValueError("boom")
        return original(config, seed)

    monkeypatch.setattr(mod, "run", run)
    ok = run_paper(FAKE, "smoke", out=tmp_path)
    broken = run_paper(FAKE, "smoke", out=tmp_path / "b", overrides=["n=101"])
    assert ok["status"] == "ok" and broken["status"] == "error" and "boom" in broken["error"]
    assert load_result(tmp_path / FAKE / "smoke" / "latest.json")["status"] == "ok"


def test_determinism_same_seed_same_metrics(tmp_path):
    a = run_paper(FAKE, "smoke", out=tmp_path / "a")
    b = run_paper(FAKE, "smoke", out=tmp_path / "b")
    assert a["metrics"] == b["metrics"]
    c = run_paper(FAKE, "smoke", out=tmp_path / "c", seeds=[5, 6, 7])
    assert c["metrics"] != a["metrics"]


def test_set_overrides_are_type_checked(tmp_path):
    res = run_paper(FAKE, "smoke", out=tmp_path, overrides=["n=50", "noise=0.1"])
    assert res["config"]["n"] == 50 and res["config"]["noise"] == 0.1
    with pytest.raises(ConfigError, match="unknown config key"):
        run_paper(FAKE, "smoke", out=tmp_path, overrides=["nope=1"])
    with pytest.raises(ConfigError, match="n="):
        run_paper(FAKE, "smoke", out=tmp_path, overrides=["n=abc"])
    with pytest.raises(ConfigError, match="unknown profile"):
        run_paper(FAKE, "huge", out=tmp_path)
    with pytest.raises(UnknownPaperError):
        run_paper("no_such_paper", "smoke", out=tmp_path)


def test_parse_value_types():
    assert parse_value("1,2,3", tuple[int, ...]) == (1, 2, 3)
    assert parse_value("true", bool) is True
    assert parse_value("none", int | None) is None
    assert parse_value("0.5", float) == 0.5
    with pytest.raises(ValueError):
        parse_value("maybe", bool)


def test_paired_rule_verdicts():
    assert paired_improvement([2, 3, 4], [1, 2, 3]).verdict == REPRODUCED
    assert paired_improvement([1, 2, 3], [2, 3, 4]).verdict == NOT_REPRODUCED
    assert paired_improvement([1.0, 2.2, 3.0], [1.1, 2.0, 2.9]).verdict == INCONCLUSIVE
    assert paired_improvement([1, 2, 3], [2, 3, 4], higher_is_better=False).verdict == REPRODUCED


def test_cli_smoke(tmp_path, capsys):
    assert cli.main(["list", "--results", str(tmp_path)]) == 0
    assert "nammd" in capsys.readouterr().out
    assert cli.main(["info", FAKE]) == 0
    assert "better" in capsys.readouterr().out
    out = str(tmp_path / "res")
    assert cli.main(["run", FAKE, "--profile", "smoke", "--out", out, "--no-progress"]) == 0
    assert "reproduced" in capsys.readouterr().out
    assert cli.main(["run", FAKE, "--profile", "smoke", "--out", out, "--set", "fail=1",
                     "--no-progress"]) == 1
    assert cli.main(["run", "nope", "--out", out]) == 2
    assert cli.main(["run", FAKE, "--set", "bad=1", "--out", out]) == 2
    assert cli.main(["info", "nope"]) == 2
    assert cli.main(["report", "--results", str(tmp_path / "missing")]) == 2
    # an unknown profile is a usage error (exit 2; extra profiles are per paper, so the paper's
    # config refuses it, not argparse)
    assert cli.main(["run", FAKE, "--profile", "gigantic"]) == 2


def test_reproduce_writes_report(tmp_path, capsys):
    out = tmp_path / "res"
    assert cli.main(["reproduce", FAKE, "--profile", "smoke", "--out", str(out),
                     "--no-progress"]) == 0
    md = (out / "REPORT.md").read_text()
    assert "zz_fake" in md and "reproduced" in md
    if any(not p.implemented for p in PAPERS.values()):  # the report lists them as such
        assert "not implemented" in md
    html = (out / "report.html").read_text()
    assert "<article class=\"card claim" in html and "curve.png" in html
    md_path, _ = write_report(out, profile="quick")  # no quick results: papers listed as not run
    assert "| zz_fake | — | — | — | not run |" in md_path.read_text()


def test_strict_exit_code(tmp_path):
    out = str(tmp_path)
    assert cli.main(["run", FAKE, "--profile", "smoke", "--out", out, "--strict",
                     "--no-progress"]) == 0
    # a method no better than its baseline: the claim is not reproduced, --strict exits 3
    assert cli.main(["run", FAKE, "--profile", "smoke", "--out", out, "--strict",
                     "--set", "degrade=true", "--no-progress"]) == 3


def test_help_on_every_command(capsys):
    for cmd in ("list", "info", "run", "reproduce", "report"):
        with pytest.raises(SystemExit) as exc:
            cli.main([cmd, "--help"])
        assert exc.value.code == 0


def test_runner_limits_torch_threads_and_restores_them(tmp_path, monkeypatch):
    import torch

    import tests.harness.fake_paper as mod

    seen = []
    original = mod.run

    def run(config, seed):
        seen.append(torch.get_num_threads())
        return original(config, seed)

    monkeypatch.setattr(mod, "run", run)
    torch.set_num_threads(2)
    run_paper(FAKE, "smoke", out=tmp_path)
    assert seen == [1, 1, 1] and torch.get_num_threads() == 2
    run_paper(FAKE, "smoke", out=tmp_path, overrides=["torch_threads=none"])
    assert seen[-1] == 2

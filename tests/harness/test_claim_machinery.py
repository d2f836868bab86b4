"""Issue 14/15 machinery: named arms, POWERLESS and explained controls, equal-effort tuning,
regime sweeps, pinned smoke verdicts, results that no command destroys, validated configs."""

from __future__ import annotations

import json

import pytest

from icml26 import cli
from icml26.harness import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    PAPERS,
    REPRODUCED,
    Claim,
    ClaimArms,
    ConfigError,
    Decision,
    PaperInfo,
    TuningSpec,
    implemented_papers,
    paired_improvement,
    per_regime,
    run_paper,
    tune,
    tune_arms,
)
from icml26.harness.claims import check_claims, judge
from icml26.harness.pins import assert_pinned, pin_differences, pin_of, write_pin
from icml26.harness.registry import register
from icml26.harness.report import write_report
from icml26.harness.result import load_result

FAKE = "zz_fake"


@pytest.fixture(autouse=True)
def fake_paper():
    import sys

    from tests.harness import fake_paper as mod

    register(PaperInfo(99, FAKE, "A fake paper", "fake", None, None, module="tests.harness"))
    sys.modules["tests.harness.experiment"] = mod
    yield
    PAPERS.pop(FAKE, None)
    sys.modules.pop("tests.harness.experiment", None)


# ---------------------------------------------------------------- named arms


def test_claim_arms_refuse_a_control_that_is_the_method_or_a_baseline():
    with pytest.raises(ValueError, match="method"):
        ClaimArms(method="a", baselines=("b",), control="a")
    with pytest.raises(ValueError, match="baseline"):
        ClaimArms(method="a", baselines=("b",), control="b")
    with pytest.raises(TypeError):
        ClaimArms(method="a", baselines="b", control="c")


def _claim(control_arm="control", arms=True):
    return Claim(
        id="c", statement="s", paper_value="p", metric="m", scale="toy", rule="r",
        decide=lambda m, c: paired_improvement(m["method"]["x"], m["baseline"]["x"]),
        control_description="d",
        control=lambda m, c: paired_improvement(m[control_arm]["x"], m["baseline"]["x"]),
        arms=ClaimArms(method="method", baselines=("baseline",), control="control") if arms else None,
    )


def test_check_claims_refuses_missing_arms_and_unproduced_arms():
    with pytest.raises(ValueError, match="names no arms"):
        check_claims([_claim(arms=False)])
    with pytest.raises(ValueError, match="never produced"):
        check_claims([_claim()], {"method", "baseline"})
    check_claims([_claim()], {"method", "baseline", "control"})


def test_every_registered_paper_names_valid_arms():
    for info in implemented_papers():
        if info.slug == FAKE:
            continue
        check_claims(info.experiment().CLAIMS)


def test_control_identical_to_baseline_is_powerless():
    metrics = {"method": {"x": [3.0, 4.0, 5.0]}, "baseline": {"x": [1.0, 2.0, 3.0]},
               "control": {"x": [1.0, 2.0, 3.0]}}
    entry = judge(_claim(), metrics, None)
    nc = entry["negative_control"]
    assert entry["verdict"] == REPRODUCED
    assert nc["identical_to"] == "baseline" and nc["passes"] is False and nc["powerless"]
    assert nc["metrics_read"] == ["x"] and entry["arms"]["control"] == "control"


def test_control_that_passes_explains_the_effect():
    metrics = {"method": {"x": [3.0, 4.0, 5.0]}, "baseline": {"x": [1.0, 2.0, 3.0]},
               "control": {"x": [3.1, 4.2, 5.3]}}
    entry = judge(_claim(), metrics, None)
    assert entry["verdict"] == NOT_REPRODUCED and entry["explained_by"] == "control"
    assert entry["negative_control"]["passes"] is False
    assert entry["negative_control"]["powerless"] is False  # it did its job: it explains


def test_control_rule_must_read_its_arm():
    metrics = {"method": {"x": [3.0, 4.0, 5.0]}, "baseline": {"x": [1.0, 2.0, 3.0]},
               "control": {"x": [1.5, 2.0, 3.1]}}
    with pytest.raises(ValueError, match="never read"):
        judge(_claim(control_arm="method"), metrics, None)


def test_powerless_in_json_and_report(tmp_path):
    res = run_paper(FAKE, "smoke", out=tmp_path, overrides=["control_is_baseline=true"])
    nc = res["claims"][0]["negative_control"]
    assert nc["identical_to"] == "baseline" and nc["powerless"]
    on_disk = load_result(tmp_path / FAKE / "smoke" / "latest.json")
    assert on_disk["claims"][0]["negative_control"]["identical_to"] == "baseline"
    md, html_path = write_report(tmp_path)
    assert "POWERLESS (identical to baseline)" in md.read_text()
    assert "POWERLESS (identical to baseline)" in html_path.read_text()
    ok = run_paper(FAKE, "smoke", out=tmp_path / "ok")
    assert ok["claims"][0]["negative_control"]["powerless"] is False
    explained = run_paper(FAKE, "smoke", out=tmp_path / "ex", overrides=["control_has_effect=1"])
    assert explained["claims"][0]["verdict"] == NOT_REPRODUCED
    assert explained["claims"][0]["explained_by"] == "control"


# ---------------------------------------------------------------- tuning


def test_tune_never_looks_at_the_test_split():
    grid = [{"a": a} for a in (0.0, 0.5, 1.0, 2.0)]
    val = {0.0: 1.0, 0.5: 0.2, 1.0: 0.4, 2.0: 3.0}
    calls = []

    def validate(p):
        calls.append(p["a"])
        return val[p["a"]]

    clean = tune(grid, validate, maximize=False)
    # poison a "test split": whatever the test scores are, the choice is made on validation only
    poisoned_test = {0.0: -100.0, 0.5: 100.0, 1.0: -100.0, 2.0: -100.0}
    again = tune(grid, lambda p: val[p["a"]], maximize=False)
    assert clean.chosen == again.chosen == {"a": 0.5}
    assert poisoned_test[clean.chosen["a"]] == 100.0  # the test score played no part
    assert calls == [0.0, 0.5, 1.0, 2.0] and clean.grid_size == 4


def test_tune_ties_prefer_the_first_setting_and_skip_nonfinite():
    t = tune([{"a": 0}, {"a": 1}], lambda p: 1.0)
    assert t.chosen == {"a": 0}
    t = tune([{"a": 0}, {"a": 1}], lambda p: float("nan") if p["a"] == 0 else 0.0)
    assert t.chosen == {"a": 1}
    with pytest.raises(ValueError, match="non-finite"):
        tune([{"a": 0}], lambda p: float("inf"))
    with pytest.raises(ValueError, match="non-empty"):
        tune([], lambda p: 0.0)


def test_tune_arms_requires_equal_effort():
    g3 = [{"k": i} for i in range(3)]
    specs = {"a": TuningSpec(g3, lambda p: p["k"], budget={"steps": 10}),
             "b": TuningSpec(g3, lambda p: -p["k"], budget={"steps": 10})}
    out = tune_arms(specs)
    assert out["a"].chosen == {"k": 2} and out["b"].chosen == {"k": 0}
    assert out["a"].budget == out["b"].budget == {"steps": 10}
    with pytest.raises(ValueError, match="grid sizes"):
        tune_arms({**specs, "c": TuningSpec(g3[:2], lambda p: 0.0, budget={"steps": 10})})
    with pytest.raises(ValueError, match="budgets"):
        tune_arms({**specs, "c": TuningSpec(g3, lambda p: 0.0, budget={"steps": 20})})
    tune_arms({**specs, "c": TuningSpec(g3[:1], lambda p: 0.0)}, allow_unequal=("c",))


def test_tuning_record_reaches_the_result(tmp_path, monkeypatch):
    import tests.harness.fake_paper as mod

    original = mod.run

    def run(config, seed):
        out = original(config, seed)
        out.tuning = tune_arms({
            "method": TuningSpec([{"w": 0.0}, {"w": 1.0}], lambda p: -abs(p["w"] - 1),
                                 budget={"steps": 5}),
            "baseline": TuningSpec([{"w": 0.0}, {"w": 2.0}], lambda p: -abs(p["w"] - 0),
                                   budget={"steps": 5})})
        return out

    monkeypatch.setattr(mod, "run", run)
    res = run_paper(FAKE, "smoke", out=tmp_path)
    t = res["tuning"]
    assert t["method"]["grid_size"] == 2 and t["method"]["budget"] == {"steps": 5}
    assert t["method"]["chosen"] == [{"w": 1.0}] * 3 and t["baseline"]["chosen"] == [{"w": 0.0}] * 3
    md, _ = write_report(tmp_path)
    assert "method: grid 2, steps=5" in md.read_text()


# ---------------------------------------------------------------- regimes


def test_per_regime_verdicts_and_summary():
    d = per_regime([("r=0.5", Decision(REPRODUCED, "a")), ("r=1", Decision(INCONCLUSIVE, "b")),
                    ("r=2", Decision(NOT_REPRODUCED, "c"))], require="any")
    assert d.verdict == REPRODUCED
    assert [r.verdict for r in d.regimes] == [REPRODUCED, INCONCLUSIVE, NOT_REPRODUCED]
    assert "reproduced in 1 of 3 regimes" in d.ours and "loses at r=2" in d.ours
    assert per_regime([("a", Decision(REPRODUCED)), ("b", Decision(INCONCLUSIVE))]).verdict == INCONCLUSIVE
    assert per_regime([("a", Decision(REPRODUCED)), ("b", Decision(NOT_REPRODUCED))]).verdict == NOT_REPRODUCED
    assert per_regime([("a", Decision(REPRODUCED)), ("b", Decision(NOT_REPRODUCED))],
                      require=1).verdict == REPRODUCED
    with pytest.raises(ValueError):
        per_regime([("a", Decision(REPRODUCED))], require=2)


def test_regimes_reach_the_claim_entry():
    claim = Claim(id="c", statement="s", paper_value="p", metric="m", scale="toy", rule="r",
                  decide=lambda m, c: per_regime([(f"k={k}", paired_improvement(
                      m["method"][f"x{k}"], m["baseline"][f"x{k}"])) for k in (1, 2)]),
                  control_description="d",
                  control=lambda m, c: paired_improvement(m["control"]["x1"], m["baseline"]["x1"]),
                  arms=ClaimArms(method="method", baselines=("baseline",), control="control"))
    metrics = {"method": {"x1": [3.0, 4, 5], "x2": [0.0, 0, 0]},
               "baseline": {"x1": [1.0, 2, 3], "x2": [1.0, 1, 1]},
               "control": {"x1": [1.0, 2.5, 2.0], "x2": [0.0, 0, 0]}}
    entry = judge(claim, metrics, None)
    assert entry["regimes"] == [
        {"condition": "k=1", "verdict": REPRODUCED, "ours": entry["regimes"][0]["ours"]},
        {"condition": "k=2", "verdict": NOT_REPRODUCED, "ours": entry["regimes"][1]["ours"]}]
    assert entry["verdict"] == NOT_REPRODUCED


# ---------------------------------------------------------------- pins


def test_pin_round_trips_and_catches_a_changed_verdict(tmp_path):
    res = run_paper(FAKE, "smoke", out=tmp_path)
    path = write_pin(res, tmp_path / "pin")
    assert pin_differences(res, json.loads(path.read_text())) == []
    assert_pinned(res, tmp_path / "pin" / "test_claims.py")
    changed = json.loads(json.dumps(res))
    changed["claims"][0]["verdict"] = NOT_REPRODUCED
    diffs = pin_differences(changed, json.loads(path.read_text()))
    assert any("verdict" in d for d in diffs)
    moved = json.loads(json.dumps(res))
    moved["claims"][0]["evidence"]["gap_mean"] *= 1.01
    assert any("gap_mean" in d for d in pin_differences(moved, json.loads(path.read_text())))
    assert pin_of(res)["claims"]["better"]["verdict"] == REPRODUCED


def test_cli_pin_writes_the_pin(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests" / "papers").mkdir(parents=True)
    assert cli.main(["run", FAKE, "--profile", "smoke", "--pin", "--no-progress",
                     "--out", str(tmp_path / "res")]) == 0
    assert (tmp_path / "tests" / "papers" / FAKE / "expected_smoke.json").is_file()
    assert cli.main(["run", FAKE, "--profile", "quick", "--pin", "--no-progress"]) == 2


# ---------------------------------------------------------------- no command destroys a result


def test_run_all_set_routes_overrides_and_keeps_other_results(tmp_path, capsys):
    register(PaperInfo(97, "zz_keep", "Keep", "keep", None, None, module="tests.harness"))
    try:
        out = str(tmp_path)
        assert cli.main(["reproduce", "zz_keep", "--profile", "smoke", "--out", out,
                         "--no-progress"]) == 0
        before = (tmp_path / "zz_keep" / "smoke" / "latest.json").read_bytes()
        # a key no selected paper declares: usage error before anything runs
        assert cli.main(["run", "all", "--profile", "smoke", "--out", out, "--set", "nope=1",
                         "--no-progress"]) == 2
        assert cli.main(["reproduce", FAKE, "zz_keep", "--profile", "smoke", "--out", out,
                         "--set", "nope=1", "--no-progress"]) == 2
        # slug.key targets one paper: the other keeps its result byte for byte
        assert cli.main(["reproduce", FAKE, "zz_keep", "--profile", "smoke", "--out", out,
                         "--set", f"{FAKE}.fail=true", "--no-progress"]) == 1
        assert (tmp_path / "zz_keep" / "smoke" / "latest.json").read_bytes() != b""
        assert cli.main(["reproduce", FAKE, "zz_keep", "--profile", "smoke", "--out", out,
                         "--set", "zz_other.n=3", "--no-progress"]) == 2
        assert (tmp_path / "zz_keep" / "smoke" / "latest-error.json").exists() is False
        assert before  # zz_keep ran twice more with fresh good results; never an error file
    finally:
        PAPERS.pop("zz_keep", None)


def test_run_all_with_a_key_of_one_paper_leaves_the_others_untouched(tmp_path, monkeypatch):
    """`run all --set k=v`: papers that do not declare k run unchanged, never error."""
    from icml26.harness import runner

    seen = {}

    def fake_run_isolated(slug, profile, seeds, overrides, out, progress, resume=False,
                          stability=None, seed_jobs="auto"):
        seen[slug] = list(overrides)
        return {"paper": slug, "status": "ok", "profile": profile, "runtime_s": 0.0,
                "seeds": [], "claims": []}

    monkeypatch.setattr(runner, "_run_isolated", fake_run_isolated)
    slugs = [p.slug for p in implemented_papers()]
    runner.run_many(slugs, "smoke", overrides=["degrade=true"], out=tmp_path)
    assert seen[FAKE] == ["degrade=true"]
    assert all(v == [] for k, v in seen.items() if k != FAKE)


def test_crashing_seed_keeps_the_earlier_seeds_and_resume_continues(tmp_path):
    good = run_paper(FAKE, "smoke", out=tmp_path)
    before = (tmp_path / FAKE / "smoke" / "latest.json").read_bytes()
    res = run_paper(FAKE, "smoke", out=tmp_path, overrides=["fail_at_seed=2"])
    assert res["status"] == "error" and res["partial"] and res["seeds"] == [0, 1]
    assert res["failed_seed"] == 2 and "told to fail" in res["error"]
    assert len(res["metrics"]["method"]["error"]) == 2
    assert res["claims"] and all(c["partial"] for c in res["claims"])
    assert res["metrics"]["method"]["error"] == good["metrics"]["method"]["error"][:2]
    assert (tmp_path / FAKE / "smoke" / "latest.json").read_bytes() == before
    assert load_result(tmp_path / FAKE / "smoke" / "latest-error.json")["partial"] is True


def test_resume_reuses_completed_seeds(tmp_path, monkeypatch):
    import tests.harness.fake_paper as mod

    run_paper(FAKE, "smoke", out=tmp_path, overrides=["n=150"])
    original, calls = mod.run, []

    def run(config, seed):
        calls.append(seed)
        return original(config, seed)

    monkeypatch.setattr(mod, "run", run)
    a = run_paper(FAKE, "smoke", out=tmp_path, overrides=["n=150"], resume=True)
    assert calls == [] and a["status"] == "ok"
    b = run_paper(FAKE, "smoke", out=tmp_path, overrides=["n=151"], resume=True)
    assert calls == [0, 1, 2] and b["metrics"] != a["metrics"]


@pytest.mark.parametrize("item,field", [("n=0", "n"), ("noise=-1", "noise"),
                                        ("noise=nan", "noise"), ("seeds=", "seeds"),
                                        ("torch_threads=0", "torch_threads")])
def test_out_of_range_values_are_usage_errors(tmp_path, capsys, item, field):
    out = tmp_path / "res"
    assert cli.main(["run", FAKE, "--profile", "smoke", "--out", str(out), "--set", item,
                     "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert field in err and ("allowed" in err or "at least one" in err)
    assert not out.exists()
    with pytest.raises(ConfigError):
        run_paper(FAKE, "smoke", out=out, overrides=[item])


def test_failed_rerun_leaves_latest_and_report_shows_both(tmp_path):
    run_paper(FAKE, "smoke", out=tmp_path)
    before = (tmp_path / FAKE / "smoke" / "latest.json").read_bytes()
    assert cli.main(["run", FAKE, "--profile", "smoke", "--out", str(tmp_path), "--set",
                     "fail=true", "--no-progress"]) == 1
    assert (tmp_path / FAKE / "smoke" / "latest.json").read_bytes() == before
    md, _ = write_report(tmp_path)
    text = md.read_text()
    assert "a newer run raised" in text and "better:" in text


def test_paired_claim_builds_rule_text_arms_and_control_from_one_declaration():
    from icml26.harness import paired_claim

    c = paired_claim(id="x", statement="s", paper_value="p", metric="m", scale="toy", key="err",
                     method="a", baseline="b", control="c", control_description="d",
                     higher_is_better=False)
    assert c.arms.method == "a" and c.arms.baselines == ("b",) and c.arms.control == "c"
    assert "a lower than b on err" in c.rule
    metrics = {"a": {"err": [1.0, 1.1, 0.9]}, "b": {"err": [2.0, 2.2, 2.1]},
               "c": {"err": [2.1, 2.1, 2.0]}}
    entry = judge(c, metrics, None)
    assert entry["verdict"] == REPRODUCED
    assert entry["negative_control"]["verdict"] != REPRODUCED
    assert entry["negative_control"]["metrics_read"] == ["err"]


# ---------------------------------------------------------------- scale-out: device, merge


def test_default_torch_device_is_threaded_and_restored(tmp_path, monkeypatch):
    import torch

    import tests.harness.fake_paper as mod
    from icml26.harness.seeding import default_torch_device

    with default_torch_device("meta"):
        assert torch.zeros(1).device.type == "meta"
    assert torch.zeros(1).device.type == "cpu"
    seen, original = [], mod.run

    def run(config, seed):
        seen.append((config.device, torch.zeros(1).device.type))
        return original(config, seed)

    monkeypatch.setattr(mod, "run", run)
    run_paper(FAKE, "smoke", out=tmp_path, overrides=["device=auto"])
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert seen[0] == ("auto", expected)
    with pytest.raises(ConfigError, match="device"):
        run_paper(FAKE, "smoke", out=tmp_path, overrides=["device=tpu"])


def test_report_merges_results_from_several_folders(tmp_path):
    register(PaperInfo(95, "zz_other_machine", "Other", "other", None, None, module="tests.harness"))
    try:
        run_paper(FAKE, "smoke", out=tmp_path / "machine_a")
        run_paper("zz_other_machine", "smoke", out=tmp_path / "machine_b")
        assert cli.main(["report", "--results", str(tmp_path / "machine_a"), "--merge",
                         str(tmp_path / "machine_b")]) == 0
        html = (tmp_path / "machine_a" / "report.html").read_text()
        assert 'id="paper-zz_fake"' in html and 'id="paper-zz_other_machine"' in html
        assert "../machine_b/zz_other_machine/smoke/latest.json" in html
        assert cli.main(["report", "--results", str(tmp_path / "machine_a"), "--merge",
                         str(tmp_path / "nowhere")]) == 2
    finally:
        PAPERS.pop("zz_other_machine", None)


# ---------------------------------------------------------------- review fixes


def test_targeted_override_wins_over_a_plain_one():
    from icml26.harness.runner import route_overrides

    assert route_overrides([FAKE], [f"{FAKE}.n=5", "n=7"])[FAKE][-1] == "n=5"


def test_profile_cannot_be_set_and_must_be_known(tmp_path):
    with pytest.raises(ConfigError, match="--profile"):
        run_paper(FAKE, "smoke", out=tmp_path, overrides=["profile=quick"])
    from tests.harness.fake_paper import Config

    with pytest.raises(ConfigError, match="profile"):
        Config(profile="zzz")


def test_control_identical_to_the_method_does_not_explain_anything():
    metrics = {"method": {"x": [3.0, 4.0, 5.0]}, "baseline": {"x": [1.0, 2.0, 3.0]},
               "control": {"x": [3.0, 4.0, 5.0]}}
    entry = judge(_claim(), metrics, None)
    assert entry["verdict"] == REPRODUCED and "explained_by" not in entry
    assert entry["negative_control"]["identical_to"] == "method"


def test_a_rule_that_raises_keeps_the_measured_metrics(tmp_path, monkeypatch):
    import tests.harness.fake_paper as mod

    def bad_rule(m, c):
        raise RuntimeError("rule bug")

    broken = Claim(**{**mod.CLAIMS[0].__dict__, "decide": bad_rule})
    monkeypatch.setattr(mod, "CLAIMS", (broken,))
    res = run_paper(FAKE, "smoke", out=tmp_path)
    assert res["status"] == "error" and "rule bug" in res["error"]
    assert len(res["metrics"]["method"]["error"]) == 3 and res["claims"] == []


# ---------------------------------------------------------------- review findings (stop 37)


def test_cli_pin_refuses_a_changed_profile(tmp_path, monkeypatch):
    """A pin records the smoke profile as the tests run it: --set/--seeds would pin another run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests" / "papers").mkdir(parents=True)
    for extra in (["--set", "n=150"], ["--seeds", "0"]):
        assert cli.main(["run", FAKE, "--profile", "smoke", "--pin", "--no-progress",
                         "--out", str(tmp_path / "res"), *extra]) == 2
    assert not (tmp_path / "tests" / "papers" / FAKE).exists()


def test_partial_result_is_never_reproduced(tmp_path):
    res = run_paper(FAKE, "smoke", out=tmp_path, overrides=["fail_at_seed=1"])
    assert res["partial"] and res["seeds"] == [0]
    assert all(c["verdict"] == INCONCLUSIVE for c in res["claims"])
    assert {c["verdict_on_completed_seeds"] for c in res["claims"]} <= {
        REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE}
    assert all("partial" in c["ours"] for c in res["claims"])


def test_resume_never_reuses_seeds_of_other_code(tmp_path, monkeypatch):
    """The checkpoint key includes a fingerprint of the code the seeds ran."""
    import tests.harness.fake_paper as mod
    from icml26.harness import runner

    run_paper(FAKE, "smoke", out=tmp_path)
    monkeypatch.setattr(runner, "code_fingerprint", lambda slug: "edited-code")
    original, calls = mod.run, []

    def run(config, seed):
        calls.append(seed)
        return original(config, seed)

    monkeypatch.setattr(mod, "run", run)
    run_paper(FAKE, "smoke", out=tmp_path, resume=True)
    assert calls == [0, 1, 2]


def test_code_fingerprint_covers_the_paper_and_not_the_others():
    from icml26.harness.runner import code_fingerprint

    assert code_fingerprint("nammd") == code_fingerprint("nammd")
    assert code_fingerprint("nammd") != code_fingerprint("eco")


def test_extras_reach_plot_as_json_types_on_every_path(tmp_path, monkeypatch):
    """Local seeds hand ``plot`` what a checkpoint or a Ray worker would: lists, not arrays."""
    import numpy as np

    import tests.harness.fake_paper as mod
    from icml26.harness.runner import run_seed

    original = mod.run

    def run(config, seed):
        out = original(config, seed)
        out.extras["curve"] = np.array(out.extras["curve"])
        return out

    monkeypatch.setattr(mod, "run", run)
    out = run_seed(mod, mod.Config.smoke(), 0)
    assert isinstance(out.extras["curve"], list)


def test_an_executor_checkpoints_the_seeds_after_a_failed_one(tmp_path):
    """Seeds an executor ran in parallel are kept, so --resume reruns only the failed one."""
    import tests.harness.fake_paper as mod
    from icml26.harness.runner import SeedFailure, run_experiment, run_seed

    config = mod.Config.smoke()

    def compute(seed):
        if seed == 1:
            raise RuntimeError("worker lost")
        return run_seed(mod, config, seed)

    with pytest.raises(SeedFailure):
        run_experiment(mod, config, checkpoint_dir=tmp_path, compute=compute)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seed-0.json", "seed-2.json"]


def test_per_regime_refuses_repeated_regime_names():
    d = paired_improvement([1.0, 1.1, 1.2], [0.0, 0.1, 0.2])
    with pytest.raises(ValueError, match="distinct"):
        per_regime([("a", d), ("a", d)])


def test_config_bounds_and_empty_tuples():
    from dataclasses import dataclass

    from icml26.harness import ConfigError, ExperimentConfig

    @dataclass(frozen=True)
    class C(ExperimentConfig):
        shift: int = 0
        count: int = 1
        sizes: tuple[int, ...] = (1,)
        tags: tuple[str, ...] = ()
        BOUNDS = {"shift": (None, 5)}
        MAY_BE_EMPTY = frozenset({"tags"})

    assert C(shift=-3).shift == -3  # an open lower end admits negatives
    with pytest.raises(ConfigError):
        C(shift=6)
    with pytest.raises(ConfigError):
        C(count=-1)  # undeclared ints stay >= 0
    with pytest.raises(ConfigError, match="non-empty"):
        C(sizes=())
    assert C(tags=()).tags == ()


def test_auto_device_asks_for_a_gpu_where_the_seed_runs():
    import tests.harness.fake_paper as mod

    config = mod.Config(device="auto")
    assert config.resources_on(gpus_available=True)["num_gpus"] == 1.0
    assert config.resources_on(gpus_available=False)["num_gpus"] == 0.0
    assert mod.Config().resources_on(gpus_available=True)["num_gpus"] == 0.0


def test_pin_tolerance_is_declared_by_the_experiment(tmp_path, monkeypatch):
    """A paper that trains float32 models declares a looser numeric tolerance; verdicts stay exact."""
    import tests.harness.fake_paper as mod
    from icml26.harness.pins import TRAINING_TOLERANCE

    res = run_paper(FAKE, "smoke", out=tmp_path)
    pinned = json.loads(write_pin(res, tmp_path / "pin").read_text())
    assert (pinned["rtol"], pinned["atol"]) == (1e-5, 1e-8)
    moved = json.loads(json.dumps(res))
    moved["claims"][0]["evidence"]["gap_mean"] *= 1.01
    assert pin_differences(moved, pinned)
    monkeypatch.setattr(mod, "PIN_TOLERANCE", TRAINING_TOLERANCE, raising=False)
    assert pin_differences(moved, pinned) == []
    moved["claims"][0]["verdict"] = NOT_REPRODUCED
    assert any("verdict" in d for d in pin_differences(moved, pinned))
    monkeypatch.setattr(mod, "PIN_TOLERANCE", {"rtol": 2.0, "atol": 0.0})
    with pytest.raises(ValueError, match="PIN_TOLERANCE"):
        pin_differences(moved, pinned)

"""``--seed-jobs``: a paper's seeds in forked workers give the serial path's result (issue 54).

Checked on the test-only paper and on a cheap real one: the same metrics (to float tolerance;
both paths run torch on one thread, so they are in fact equal) and the same verdicts, the seeds
gathered in seed order whatever order they finish in, a raising seed gives the same partial
result, ``--resume`` reuses the checkpoints, and a paper's own ``fork_map`` runs serially inside
a seed worker (no nested forks).
"""

from __future__ import annotations

import math
import os
import sys
import time

import pytest

from icml26 import cli
from icml26.core import progress as prog
from icml26.core.llm.usage import record_usage
from icml26.harness import PAPERS, PaperInfo, parallel, run_many, run_paper
from icml26.harness import fork_executor as fx
from icml26.harness.config import ConfigError
from icml26.harness.registry import get_paper, register
from icml26.harness.result import load_result, validate_result
from icml26.harness.runner import SeedFailure

FAKE = "zz_fake"

pytestmark = pytest.mark.skipif(not parallel.fork_available(), reason="needs fork")


@pytest.fixture(autouse=True)
def fake_paper():
    register(PaperInfo(99, FAKE, "A fake paper", "fake", None, None, module="tests.harness"))
    from tests.harness import fake_paper as mod

    sys.modules["tests.harness.experiment"] = mod
    yield mod
    PAPERS.pop(FAKE, None)
    sys.modules.pop("tests.harness.experiment", None)


def _close(a: dict, b: dict, rel: float = 1e-9) -> float:
    """The largest relative difference of two results' metrics (same arms, metrics and seeds)."""
    assert a.keys() == b.keys()
    worst = 0.0
    for arm in a:
        assert a[arm].keys() == b[arm].keys(), arm
        for name in a[arm]:
            for x, y in zip(a[arm][name], b[arm][name], strict=True):
                if x is None or y is None or (isinstance(x, float) and math.isnan(x)):
                    assert x is y or (x != x and y != y), (arm, name, x, y)
                    continue
                d = abs(x - y) / max(abs(x), abs(y), 1e-12)
                assert d <= rel, (arm, name, x, y)
                worst = max(worst, d)
    return worst


def _verdicts(res: dict) -> list[tuple]:
    return [(c["id"], c["verdict"], c["negative_control"]["verdict"],
             tuple((r["condition"], r["verdict"]) for r in c.get("regimes", [])))
            for c in res["claims"]]


def test_forked_seeds_equal_serial_on_the_test_paper(tmp_path):
    serial = run_paper(FAKE, "quick", out=tmp_path / "a", seed_jobs=1)
    forked = run_paper(FAKE, "quick", out=tmp_path / "b", seed_jobs=2)
    assert serial["status"] == forked["status"] == "ok", forked.get("error")
    validate_result(forked)
    assert (serial["seed_jobs"], forked["seed_jobs"]) == (1, 2)
    assert serial["seeds"] == forked["seeds"] == [0, 1, 2, 3]
    assert serial["metrics"] == forked["metrics"]
    assert serial["extras"] == forked["extras"]
    assert _verdicts(serial) == _verdicts(forked)
    assert [s["seed"] for s in forked["timing"]["seeds"]] == [0, 1, 2, 3]
    assert forked["plots"] == serial["plots"]
    assert load_result(tmp_path / "b" / FAKE / "quick" / "latest.json")["seed_jobs"] == 2


def test_forked_seeds_equal_serial_on_a_real_paper(tmp_path):
    """eco's smoke substrate (torch training) at two seeds: the same numbers and verdicts."""
    serial = run_paper("eco", "smoke", seeds=(0, 1), out=tmp_path / "a", seed_jobs=1)
    forked = run_paper("eco", "smoke", seeds=(0, 1), out=tmp_path / "b", seed_jobs=2)
    assert serial["status"] == forked["status"] == "ok", forked.get("error")
    assert forked["seed_jobs"] == 2
    _close(serial["metrics"], forked["metrics"])
    assert _verdicts(serial) == _verdicts(forked)
    assert serial["substrate"] == forked["substrate"]


def test_seed_order_is_kept_when_later_seeds_finish_first(tmp_path, monkeypatch, fake_paper):
    original = fake_paper.run

    def slow_first(config, seed):
        time.sleep(0.6 if seed == 0 else 0.0)
        out = original(config, seed)
        out.extras["pid"] = os.getpid()
        out.extras["done_at"] = time.monotonic()
        return out

    monkeypatch.setattr(fake_paper, "run", slow_first)
    res = run_paper(FAKE, "quick", out=tmp_path, seed_jobs=2)
    assert res["status"] == "ok", res.get("error")
    assert res["seeds"] == [0, 1, 2, 3]
    assert [s["seed"] for s in res["timing"]["seeds"]] == [0, 1, 2, 3]
    pids = {e["pid"] for e in res["extras"]}
    assert os.getpid() not in pids and len(pids) == 4  # one fresh worker per seed
    done = [e["done_at"] for e in res["extras"]]
    assert done[1] < done[0]  # seed 1 finished first and still comes second
    serial = run_paper(FAKE, "quick", out=tmp_path / "s", seed_jobs=1)
    assert res["metrics"] == serial["metrics"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_raising_seed_gives_the_serial_partial_result(tmp_path, jobs):
    res = run_paper(FAKE, "quick", out=tmp_path, overrides=["fail_at_seed=1"], seed_jobs=jobs)
    assert res["status"] == "error" and res["failed_seed"] == 1
    assert res["seeds"] == [0] and res["partial"] is True
    assert "the fake paper was told to fail" in res["error"]
    assert all(c["verdict"] == "inconclusive" for c in res["claims"])
    assert not (tmp_path / FAKE / "quick" / "latest.json").exists()


def test_seed_failure_carries_the_completed_seeds(tmp_path, fake_paper):
    import dataclasses

    config = dataclasses.replace(fake_paper.Config.quick(), fail_at_seed=2)
    with pytest.raises(SeedFailure) as info:
        fx.run_experiment_forked(fake_paper, config, jobs=4, checkpoint_dir=tmp_path)
    failure = info.value
    assert (failure.seed, failure.done) == (2, [0, 1])
    assert [o.metrics for o in failure.outputs] == [fake_paper.run(config, s).metrics for s in (0, 1)]
    assert isinstance(failure.__cause__, RuntimeError)
    assert "told to fail" in str(failure.__cause__)
    # the seed running beside the failed one is checkpointed; the failed one is not
    assert (tmp_path / "seed-3.json").is_file() and not (tmp_path / "seed-2.json").exists()


def test_a_worker_that_dies_fails_its_seed(tmp_path, monkeypatch, fake_paper):
    original = fake_paper.run

    def die_at_1(config, seed):
        if seed == 1:
            os._exit(3)
        return original(config, seed)

    monkeypatch.setattr(fake_paper, "run", die_at_1)
    res = run_paper(FAKE, "quick", out=tmp_path, seed_jobs=2)
    assert res["status"] == "error" and res["failed_seed"] == 1 and res["seeds"] == [0]
    assert "exited with code 3" in res["error"]


def test_resume_reuses_checkpoints(tmp_path, monkeypatch, fake_paper):
    first = run_paper(FAKE, "quick", out=tmp_path, seed_jobs=2)
    ckpts = sorted((tmp_path / FAKE / "quick" / ".seeds").glob("*/seed-*.json"))
    assert [p.name for p in ckpts] == [f"seed-{s}.json" for s in range(4)]
    for p in ckpts[2:]:
        p.unlink()
    marks = tmp_path / "ran"
    marks.mkdir()
    original = fake_paper.run

    def marking(config, seed):
        (marks / str(seed)).touch()  # written by the worker: visible to the driver
        return original(config, seed)

    monkeypatch.setattr(fake_paper, "run", marking)
    seen: list[str] = []
    again = run_paper(FAKE, "quick", out=tmp_path, seed_jobs=2, resume=True,
                      progress=lambda msg, i, n: seen.append(msg))
    assert again["status"] == "ok", again.get("error")
    assert sorted(p.name for p in marks.iterdir()) == ["2", "3"]  # only the missing seeds ran
    assert "seed 0 (resumed)" in seen and "seed 1 (resumed)" in seen
    assert again["metrics"] == first["metrics"]


def test_no_nested_fork_inside_a_seed_worker(tmp_path, monkeypatch, fake_paper):
    """A paper's own ``fork_map`` forks in process, and runs serially in a seed worker."""
    original = fake_paper.run

    def with_inner_fork(config, seed):
        pids = parallel.fork_map([os.getpid, os.getpid], 2)
        out = original(config, seed)
        out.extras.update(pid=os.getpid(), inner=pids, flag=os.environ.get(parallel.WORKER_ENV))
        return out

    monkeypatch.setattr(fake_paper, "run", with_inner_fork)
    serial = run_paper(FAKE, "quick", out=tmp_path / "a", seed_jobs=1)
    for e in serial["extras"]:  # in process the inner tasks fork
        assert e["pid"] == os.getpid() and os.getpid() not in e["inner"] and e["flag"] is None
    forked = run_paper(FAKE, "quick", out=tmp_path / "b", seed_jobs=2)
    for e in forked["extras"]:  # in a seed worker they run in the worker itself
        assert e["pid"] != os.getpid() and e["inner"] == [e["pid"], e["pid"]] and e["flag"] == "seed"
    assert not parallel.in_worker()  # the driver is not marked


def test_fork_map_workers_do_not_fork_again():
    def inner():
        return os.getpid(), parallel.fork_map([os.getpid, os.getpid], 2), parallel.in_worker()

    for pid, pids, flag in parallel.fork_map([inner, inner], 2):
        assert pid != os.getpid() and pids == [pid, pid] and flag
    assert parallel.fork_map([lambda: 1, lambda: 2], 2, pack=lambda r: r * 10) == [10, 20]
    assert parallel.fork_map([lambda: 1, lambda: 2], 1, pack=lambda r: r * 10) == [1, 2]  # unpacked


def test_progress_ticks_and_llm_usage_reach_the_driver(tmp_path, monkeypatch, fake_paper):
    original = fake_paper.run

    def ticking(config, seed):
        for k in range(10):
            prog.tick("loop", k + 1, 10)
        record_usage("fake:model", calls=1, prompt_tokens=seed)
        return original(config, seed)

    monkeypatch.setattr(fake_paper, "run", ticking)
    seen: list[str] = []
    res = run_paper(FAKE, "quick", out=tmp_path, seed_jobs=2,
                    progress=lambda msg, i, n: seen.append(msg))
    assert res["status"] == "ok", res.get("error")
    for s in range(4):
        assert f"seed {s}" in seen and f"seed {s} · loop 10/10" in seen
    assert seen[-2:] == ["judging claims and plotting", "done"]
    assert res["llm_usage"]["fake:model"]["calls"] == 4
    assert res["llm_usage"]["fake:model"]["prompt_tokens"] == 0 + 1 + 2 + 3


def test_resolve_seed_jobs(monkeypatch, fake_paper):
    quick, smoke = (fake_paper.Config.from_profile(p) for p in ("quick", "smoke"))
    monkeypatch.setattr(fx, "usable_cpus", lambda: 2)
    n = len(quick.seeds)
    assert n >= 3
    # every seed at once (time-shared cores: wall ~ n/2 seed times, not ceil(n/2))
    assert fx.resolve_seed_jobs("auto", quick) == n
    assert fx.resolve_seed_jobs(None, quick) == n
    import dataclasses

    many = dataclasses.replace(quick, seeds=tuple(range(20)))
    assert fx.resolve_seed_jobs("auto", many) == 8  # at most 4 workers per core
    assert fx.resolve_seed_jobs("auto", smoke) == 1  # pins come from the serial smoke run
    assert fx.resolve_seed_jobs("auto", quick, paper_jobs=2) == 1
    assert fx.resolve_seed_jobs(3, smoke) == 3 and fx.resolve_seed_jobs(8, smoke) == 3  # <= seeds
    assert fx.resolve_seed_jobs(1, quick) == 1
    monkeypatch.setattr(fx, "usable_cpus", lambda: 1)
    assert fx.resolve_seed_jobs("auto", quick) == 1  # one core: serial
    one = dataclasses.replace(quick, seeds=(5,))
    assert fx.resolve_seed_jobs(4, one) == 1
    monkeypatch.setenv(parallel.WORKER_ENV, "seed")
    assert fx.resolve_seed_jobs(2, quick) == 1
    monkeypatch.delenv(parallel.WORKER_ENV)
    monkeypatch.setattr(fx, "fork_available", lambda: False)
    assert fx.resolve_seed_jobs(2, quick) == 1
    for bad in (0, -1, "two", "1.5", True):
        with pytest.raises(ConfigError):
            fx.parse_seed_jobs(bad)


def test_run_many_with_parallel_papers_runs_seeds_serially(tmp_path):
    results = run_many([FAKE, FAKE], "quick", out=tmp_path, jobs=2)
    assert [r["seed_jobs"] for r in results] == [1, 1]
    assert run_many([FAKE], "quick", out=tmp_path / "b", seed_jobs=2)[0]["seed_jobs"] == 2


def test_cli_seed_jobs(tmp_path, capsys):
    out = str(tmp_path)
    assert cli.main(["run", FAKE, "--profile", "quick", "--seed-jobs", "2", "--no-progress",
                     "--out", out]) == 0
    assert load_result(tmp_path / FAKE / "quick" / "latest.json")["seed_jobs"] == 2
    assert cli.main(["run", FAKE, "--profile", "smoke", "--no-progress", "--out", out]) == 0
    assert load_result(tmp_path / FAKE / "smoke" / "latest.json")["seed_jobs"] == 1  # auto
    with pytest.raises(SystemExit):
        cli.main(["run", FAKE, "--seed-jobs", "0"])
    assert get_paper(FAKE).slug == FAKE

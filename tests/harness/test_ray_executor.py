"""The Ray executor gives the same result as the in-process path (bit-identical metrics)."""

from __future__ import annotations

import pytest

from icml26 import cli
from icml26.harness import run_many

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'icml26[ray]')")

PAPERS = ("eco", "adaptive_reasoning")  # two fast smoke profiles with named arms


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_equals_local(tmp_path, local_ray):
    local = run_many(PAPERS, "smoke", out=tmp_path / "local")
    remote = run_many(PAPERS, "smoke", out=tmp_path / "ray", executor="ray")
    for a, b in zip(local, remote, strict=True):
        assert a["status"] == b["status"] == "ok", b.get("error")
        assert a["metrics"] == b["metrics"]  # bit-identical for the same seeds
        assert [c["verdict"] for c in a["claims"]] == [c["verdict"] for c in b["claims"]]
        assert a["config"] == b["config"]
    assert (tmp_path / "ray" / "eco" / "smoke" / "latest.json").is_file()


def test_ray_resume_skips_finished_seeds(tmp_path, local_ray):
    first = run_many(["eco"], "smoke", out=tmp_path, executor="ray")[0]
    again = run_many(["eco"], "smoke", out=tmp_path, executor="ray", resume=True)[0]
    assert again["metrics"] == first["metrics"]


def test_bad_executor_and_device_are_usage_errors(tmp_path):
    out = str(tmp_path)
    assert cli.main(["run", "eco", "--profile", "smoke", "--set", "device=tpu", "--out", out]) == 2
    with pytest.raises(SystemExit):
        cli.main(["run", "eco", "--profile", "smoke", "--executor", "slurm"])
    import torch

    if not torch.cuda.is_available():
        assert cli.main(["run", "eco", "--profile", "smoke", "--device", "cuda", "--out", out]) == 2

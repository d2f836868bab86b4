"""Extra named profiles (``ExperimentConfig.EXTRA_PROFILES``): a paper can name a profile next to
smoke/quick/full (dicode's ``full-craftax``); it builds from its classmethod, carries its own
budget, runs through the runner and the CLI into ``OUT/SLUG/NAME/``, and papers without it refuse
the name as a usage error."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from icml26.harness import PAPERS, ConfigError, ExperimentConfig, PaperInfo, run_paper
from icml26.harness.registry import register

SLUG = "zz_fake_extra"


@dataclasses.dataclass(frozen=True)
class WithExtra(ExperimentConfig):
    n: int = 1

    EXTRA_PROFILES = {"big-gpu": ("big_gpu", 7200.0)}

    @classmethod
    def smoke(cls):
        return cls(n=2)

    @classmethod
    def quick(cls):
        return cls(n=3)

    @classmethod
    def full(cls):
        return cls(n=4)

    @classmethod
    def big_gpu(cls):
        return cls(seeds=(0, 1), n=5)


def test_extra_profile_builds_from_its_classmethod_with_its_budget():
    assert WithExtra.profiles() == ("smoke", "quick", "full", "big-gpu")
    cfg = WithExtra.from_profile("big-gpu")
    assert (cfg.profile, cfg.n, cfg.seeds, cfg.budget_s) == ("big-gpu", 5, (0, 1), 7200.0)
    assert WithExtra.from_profile("full").budget_s == 1800.0
    # a config of another class does not know the name
    with pytest.raises(ConfigError, match="unknown profile 'big-gpu'"):
        ExperimentConfig.from_profile("big-gpu")
    with pytest.raises(ConfigError, match="profile"):
        dataclasses.replace(WithExtra(), profile="other")


@pytest.mark.parametrize("extra", [{"full": ("big_gpu", 1.0)}, {"Big GPU": ("big_gpu", 1.0)},
                                   {"x": ("missing", 1.0)}, {"x": ("big_gpu", 0.0)},
                                   {"x": "big_gpu"}])
def test_bad_extra_profile_declarations_fail_at_class_creation(extra):
    with pytest.raises(TypeError, match="EXTRA_PROFILES"):
        type("Bad", (WithExtra,), {"EXTRA_PROFILES": extra})


@pytest.fixture
def extra_paper():
    import importlib.machinery

    name = "tests.harness.extra_paper.experiment"
    mod = type(sys)(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
    from tests.harness import fake_paper as fake

    @dataclasses.dataclass(frozen=True)
    class Config(fake.Config):
        EXTRA_PROFILES = {"tiny-gpu": ("tiny_gpu", 60.0)}

        @classmethod
        def tiny_gpu(cls):
            return cls(seeds=(0, 1, 2), n=50)

    for k in ("run", "CLAIMS", "METRICS", "plot"):
        if hasattr(fake, k):
            setattr(mod, k, getattr(fake, k))
    mod.Config = Config
    pkg = type(sys)("tests.harness.extra_paper")
    pkg.__spec__ = importlib.machinery.ModuleSpec("tests.harness.extra_paper", None,
                                                  is_package=True)
    pkg.experiment = mod
    sys.modules["tests.harness.extra_paper"] = pkg
    sys.modules["tests.harness.extra_paper.experiment"] = mod
    register(PaperInfo(98, SLUG, "A fake paper with an extra profile", "fake", None, None,
                       module="tests.harness.extra_paper"))
    yield
    PAPERS.pop(SLUG, None)
    sys.modules.pop("tests.harness.extra_paper", None)
    sys.modules.pop("tests.harness.extra_paper.experiment", None)


def test_extra_profile_runs_through_the_runner_and_the_cli(extra_paper, tmp_path, capsys):
    res = run_paper(SLUG, "tiny-gpu", out=tmp_path)
    assert res["status"] == "ok" and res["profile"] == "tiny-gpu"
    assert res["config"]["n"] == 50 and res["budget_s"] == 60.0
    assert (tmp_path / SLUG / "tiny-gpu" / "latest.json").exists()
    from icml26.cli import main

    assert main(["run", SLUG, "--profile", "tiny-gpu", "--out", str(tmp_path / "cli"),
                 "--no-progress", "--seed-jobs", "1"]) == 0
    assert (tmp_path / "cli" / SLUG / "tiny-gpu" / "latest.json").exists()
    # an unknown name is a usage error (exit 2) that lists the paper's profiles
    assert main(["run", SLUG, "--profile", "nope", "--out", str(tmp_path / "cli")]) == 2
    assert "tiny-gpu" in capsys.readouterr().err

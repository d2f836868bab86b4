"""The smoke profile's verdicts are pinned; the quick profile has no POWERLESS control (slow)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from icml26.harness import assert_pinned, run_paper
from icml26.harness.config import ConfigError
from icml26.papers.nammd.experiment import CLAIMS, Config

CLAIM_IDS = {"dct_power", "dct_power_theorem", "boundary_size", "two_sample_power", "digits_ranking"}


def test_smoke_verdicts_are_pinned(tmp_path):
    result = run_paper("nammd", "smoke", out=tmp_path)
    assert result["status"] == "ok", result.get("error")
    claims = {c["id"]: c for c in result["claims"]}
    assert set(claims) == CLAIM_IDS
    for c in claims.values():
        assert not c["negative_control"]["powerless"], c["id"]
    assert_pinned(result, __file__)


def test_every_claim_names_its_arms_and_the_sweeps():
    assert {c.id for c in CLAIMS} == CLAIM_IDS
    arms = {c.id: c.arms for c in CLAIMS}
    assert arms["dct_power"].control == "nammd_equal_norm"
    assert arms["two_sample_power"].control == "nammd_median"
    c = Config.quick()
    assert set(c.epsilons) == {0.1, 0.3, 0.5}  # the paper's Table-2 tolerances
    assert any(f < 1 for f in c.test_var_factors) and 1.0 in c.test_var_factors
    assert any(f > 1 for f in c.test_var_factors)
    assert c.hdgm_dim == 10 and c.n_bandwidths == 25  # official code


@pytest.mark.parametrize("change", [{"alpha": 0.0}, {"alpha": 0.7}, {"epsilons": (0.1, 1.2)},
                                    {"epsilons": (0.95,)}, {"test_var_factors": (0.5, 2.0)},
                                    {"test_var_factors": (1.0, 2.0)}, {"dct_m": 3}, {"reps": 0},
                                    {"noise_ref": 4.0}, {"mmd_ratio": 0.9}, {"digits_m": 500}])
def test_config_bounds(change):
    with pytest.raises(ConfigError):
        dataclasses.replace(Config.smoke(), **change)


@pytest.mark.slow
def test_quick_has_no_powerless_control(tmp_path):
    result = run_paper("nammd", "quick", out=tmp_path)
    assert result["status"] == "ok"
    for c in result["claims"]:
        assert not c["negative_control"]["powerless"], c["id"]
    assert result["tuning"]["nammd@blob"]["grid_size"] == result["tuning"]["mmd@blob"]["grid_size"] == 25


def test_claims_declare_effects_and_rules_carry_detectability():
    import math

    for c in CLAIMS:
        assert c.effect is not None and c.effect > 0 and c.effect_source, c.id
    cfg = Config.smoke()
    eps = cfg.epsilons
    size = next(c for c in CLAIMS if c.id == "boundary_size")
    m = {"nammd": {f"dct_size_eps{e:g}": [0.04, 0.05, 0.06] for e in eps}}
    d = size.decide(m, cfg)
    assert d.mde is not None and math.isfinite(d.mde) and d.n == 3  # carried through the re-wrap
    digits = next(c for c in CLAIMS if c.id == "digits_ranking")
    levels = cfg.noise_levels
    arm = {**{f"digits_stat_t{t:g}": [0.1 * i] * 3 for i, t in enumerate(levels)},
           **{f"digits_reject_t{t:g}": [0.0] * 3 for t in levels}}
    arm[f"digits_reject_t{levels[-1]:g}"] = [0.9, 1.0, 0.95]
    d = digits.decide({"nammd": arm, "mmd": arm}, cfg)
    assert d.verdict == "reproduced" and d.n == 3
    assert d.mde == pytest.approx(2 * np.std([0.9, 1.0, 0.95], ddof=1) / np.sqrt(3))  # the primary leg's

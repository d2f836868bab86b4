"""The lean_slt reproduction: pinned smoke verdicts, the sparse rule's power, quick acceptance (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.harness import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NUMERICALLY_CONSISTENT,
    REPRODUCED,
    assert_pinned,
    run_paper,
)
from icml26.harness.result import validate_result
from icml26.papers.lean_slt import THEOREMS, experiment


def _check(result):
    validate_result(result)
    assert result["status"] == "ok", result.get("error")
    for claim in result["claims"]:
        nc = claim["negative_control"]
        assert nc["passes"] and not nc["powerless"], f"{claim['id']}: control is powerless"
        assert "identical_to" not in nc and claim["arms"]["control"] == nc["arm"]
    return {c["id"]: c["verdict"] for c in result["claims"]}


def test_smoke_profile_is_pinned(tmp_path):
    result = run_paper("lean_slt", "smoke", out=tmp_path)
    verdicts = _check(result)
    assert len(verdicts) == 4 + len(THEOREMS) and len(THEOREMS) >= 25
    assert all(c["kind"] == "theorem_check" for c in result["claims"])
    for c in result["claims"]:
        if not c["id"].startswith("T"):
            continue
        if THEOREMS[c["id"][:3]].can_fail:  # every row that can fail resolves a 5 % violation
            assert c["verdict"] == NUMERICALLY_CONSISTENT, c["id"]
            assert c["detectability"]["mde"] <= c["detectability"]["effect"], c["id"]
        else:  # the witness row (T02) can detect nothing: inconclusive by construction
            assert c["verdict"] == INCONCLUSIVE and c["detectability"]["mde"] is None
    assert_pinned(result, __file__)


def _sparse_metrics(scale_fn, seeds=3, ds=(100, 400, 1600, 6400), noise=0.05, ridge=2.0):
    rng = np.random.default_rng(0)
    l1 = {f"err d={d}": [scale_fn(d) * np.exp(noise * rng.standard_normal()) for _ in range(seeds)] for d in ds}
    rd = {f"err d={d}": [ridge * scale_fn(d)] * seeds for d in ds}
    return {experiment.L1: l1, experiment.RIDGE: rd}


def _sparse_decide(metrics):
    rule = experiment._sparse_rule(experiment.L1, experiment.RIDGE)
    return rule(metrics, experiment.Config.quick())


def test_sparse_rule_rejects_sqrt_d_growth():
    dec = _sparse_decide(_sparse_metrics(lambda d: 0.01 * np.sqrt(d)))
    assert dec.verdict == NOT_REPRODUCED
    assert dec.evidence["part0"]["exponent"] == pytest.approx(0.5, abs=0.05)


def test_sparse_rule_rejects_quarter_power_growth():
    dec = _sparse_decide(_sparse_metrics(lambda d: 0.1 * d**0.3))
    assert dec.verdict == NOT_REPRODUCED


def test_sparse_rule_accepts_sqrt_log_growth_and_needs_the_ridge_win():
    assert _sparse_decide(_sparse_metrics(lambda d: 0.2 * np.sqrt(np.log(2 * d)))).verdict == REPRODUCED
    tied = _sparse_metrics(lambda d: 0.2 * np.sqrt(np.log(2 * d)), ridge=1.0)
    assert _sparse_decide(tied).verdict != REPRODUCED
    noisy = _sparse_metrics(lambda d: 0.2 * np.sqrt(np.log(2 * d)), noise=0.6)
    assert _sparse_decide(noisy).verdict in (INCONCLUSIVE, REPRODUCED, NOT_REPRODUCED)


def test_growth_exponent_interval():
    errs = {d: [2.0 * d**0.1] * 3 for d in (10, 100, 1000)}
    slope, lo, hi = experiment.growth_exponent(errs)
    assert slope == pytest.approx(0.1) and lo == pytest.approx(0.1, abs=1e-8) and hi == pytest.approx(0.1, abs=1e-8)
    with pytest.raises(ValueError):
        experiment.growth_exponent({10: [1.0, 2.0]})


@pytest.mark.slow
def test_quick_profile_acceptance(tmp_path):
    result = run_paper("lean_slt", "quick", out=tmp_path)
    verdicts = _check(result)
    assert verdicts["catalogue"] == NUMERICALLY_CONSISTENT
    assert verdicts["dudley_slack"] == NUMERICALLY_CONSISTENT
    assert verdicts["least_squares"] == NUMERICALLY_CONSISTENT

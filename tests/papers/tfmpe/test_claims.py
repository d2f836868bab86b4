"""The smoke profile runs end to end and matches its pinned verdicts; quick acceptance is slow."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.harness import run_paper
from icml26.harness.pins import assert_pinned

CLAIM_IDS = {"lf_vs_multisite", "lf_vs_sbi_fmpe", "calibration", "extrapolation",
             "function_valued_sir"}


def test_smoke_runs_and_matches_the_pin(tmp_path):
    pytest.importorskip("sbi")
    result = run_paper("tfmpe", "smoke", out=tmp_path)
    assert result["status"] == "ok", result.get("traceback")
    claims = {c["id"]: c for c in result["claims"]}
    assert set(claims) == CLAIM_IDS
    # LF spends exactly B single-site calls and no multi-site call (bookkeeping, not a claim)
    m = result["metrics"]["tfmpe_lf"]
    assert all(v == 0 for v in m["multisite_calls@B60"]) and all(v == 1 for v in m["site_calls_ratio@B60"])
    # equal training budget in network updates (issue 48)
    assert m["network_updates@B60"] == result["metrics"]["tfmpe_multi"]["network_updates@B60"]
    # the prior is calibrated but too wide: the two-sided width check catches it
    assert claims["calibration"]["negative_control"]["verdict"] == "not reproduced"
    assert_pinned(result, __file__)


def test_calibration_mde_is_a_perfect_posteriors_noise_floor():
    """Issue 40: at 60 sets x 50 draws a perfect posterior's ECE exceeds 0.05 more than 5 % of the
    time in one seed, so the calibration rule's mde (its 95 % quantile) exceeds the 0.05 effect;
    the full profile's 200 x 100 over 3 seeds resolves it."""
    from icml26.papers.tfmpe.experiment import ECE_MAX, ece_noise_floor

    assert ece_noise_floor(60, 50, 2, 1) > ECE_MAX
    assert ece_noise_floor(200, 100, 2, 3) < ECE_MAX
    assert ece_noise_floor(60, 50, 2, 1) == ece_noise_floor(60, 50, 2, 1)  # deterministic


def test_a_perfect_posterior_fails_the_calibration_rule_at_most_5_percent():
    """Issue 48: at the quick sizes (100 sets x 50 draws, 3 seeds) the whole calibration rule
    (coverage of g and l, two-sided width) applied to a perfect posterior (truth and draws from
    the same law) fails at most ~5 % of the time; a 1.4x too wide posterior is caught."""
    from icml26.harness import REPRODUCED
    from icml26.papers.tfmpe.experiment import Config, _calibrated, expected_coverage_error

    c = Config.quick()
    m, d = c.test_sites, c.dim
    rng = np.random.default_rng(1)

    def arm(width):
        out = {}
        for _s in range(len(c.seeds)):
            mu = rng.normal(size=(c.n_sbc, d * (m + 1)))
            truth = mu + rng.normal(size=mu.shape)
            draws = mu[None] + width * rng.normal(size=(c.sbc_post, *mu.shape))
            vals = {f"ece_g@M{m}": expected_coverage_error(draws[..., :d], truth[:, :d]),
                    f"ece_l@M{m}": expected_coverage_error(draws[..., d:], truth[:, d:]),
                    f"sd_ratio_g@M{m}": float(draws[..., :d].std(0, ddof=1).mean() / 1.0),
                    f"sd_ratio_l@M{m}": float(draws[..., d:].std(0, ddof=1).mean() / 1.0)}
            for k, v in vals.items():
                out.setdefault(k, []).append(v)
        return out

    reps = 60
    fails = sum(_calibrated({"a": arm(1.0)}, "a", c).verdict != REPRODUCED for _ in range(reps))
    assert fails / reps <= 0.1  # ~5 % expected; 0.1 leaves room for the Monte-Carlo error
    assert _calibrated({"a": arm(1.4)}, "a", c).verdict != REPRODUCED


@pytest.mark.slow
def test_quick_controls_are_not_powerless(tmp_path):
    pytest.importorskip("sbi")
    result = run_paper("tfmpe", "quick", out=tmp_path)
    assert result["status"] == "ok", result.get("traceback")
    for c in result["claims"]:
        assert not c["negative_control"].get("identical_to"), c["id"]
    claims = {c["id"]: c for c in result["claims"]}
    assert {r["condition"] for r in claims["lf_vs_multisite"]["regimes"]} == {"B=150", "B=600"}

"""Statistics: Wilson against scipy, Newcombe against the published example, trend-test size."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from icml26.papers.disempowerment.stats import (
    cochran_armitage,
    newcombe_difference,
    one_in_n,
    rate,
)


@pytest.mark.parametrize("k,n", [(0, 1), (0, 50), (1, 1300), (23, 30000), (7, 7), (40, 100), (3, 7)])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_wilson_matches_scipy_binomtest(k, n, alpha):
    r = rate(k, n, alpha)
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=1 - alpha, method="wilson")
    assert r["ci_low"] == pytest.approx(ref.low, abs=1e-12)
    assert r["ci_high"] == pytest.approx(ref.high, abs=1e-12)
    assert r["rate"] == k / n


def test_rate_rejects_bad_counts():
    with pytest.raises(ValueError):
        rate(5, 3)
    with pytest.raises(ValueError):
        rate(0, 0)


def test_one_in_n_format():
    assert one_in_n(23, 30000) == "1 in 1,300"
    assert one_in_n(1, 50) == "1 in 50"
    assert one_in_n(0, 500) == "0 in 500"
    assert one_in_n(5, 100000) == "1 in 20,000"


def test_newcombe_published_example():
    # Newcombe (1998), Stat Med 17:873, example (a): 56/70 vs 48/80 -> 0.0524 to 0.3339 (method 10)
    r = newcombe_difference(56, 70, 48, 80)
    assert r["difference"] == pytest.approx(0.2)
    assert r["ci_low"] == pytest.approx(0.0524, abs=5e-5)
    assert r["ci_high"] == pytest.approx(0.3339, abs=5e-5)
    # pooled z-test p-value equals the chi-square test without continuity correction
    chi = stats.chi2_contingency([[56, 14], [48, 32]], correction=False)
    assert r["p_value"] == pytest.approx(chi.pvalue, rel=1e-9)


def test_cochran_armitage_closed_form_and_symmetry():
    x, n = [10, 15, 20], [100, 100, 100]
    r = cochran_armitage(x, n)
    # by hand: p = 0.15, tbar = 1, num = 10, var = 0.1275 * 200
    assert r["z"] == pytest.approx(10 / math.sqrt(0.15 * 0.85 * 200))
    assert cochran_armitage(x[::-1], n[::-1])["z"] == pytest.approx(-r["z"])
    assert cochran_armitage([5, 5, 5], [50, 50, 50])["z"] == 0.0
    assert cochran_armitage([0, 0], [10, 10])["p_value"] == 1.0
    with pytest.raises(ValueError):
        cochran_armitage([1], [10])
    with pytest.raises(ValueError):
        cochran_armitage([11, 1], [10, 10])


def test_cochran_armitage_size_under_the_null():
    rng = np.random.default_rng(0)
    n = np.full(5, 3000)
    p = np.array([cochran_armitage(rng.binomial(n, 0.02), n)["p_value"] for _ in range(2000)])
    # nominal 5%: binomial s.e. of the rejection rate over 2000 draws is 0.5%
    assert abs((p < 0.05).mean() - 0.05) < 0.02

"""Issue 47 (nammd): the official variance exactly, the in-null regime labels, the equal-norm control's
arm, and tolerances outside (0, max) refused."""

from __future__ import annotations

import collections
import dataclasses
import warnings

import numpy as np
import pytest

from icml26.core.stats import GaussianKernel, gram_blocks
from icml26.papers.nammd import (
    NAMMDDrift,
    mmd_closeness_test,
    nammd_closeness_test,
    nammd_from_gram,
)
from icml26.papers.nammd import experiment as ex
from icml26.papers.nammd.bandwidth import power_proxy, select_bandwidth
from icml26.papers.nammd.closeness import max_mmd2
from icml26.papers.nammd.statistic import nammd_variance, official_mmd_variance


def _official_line_by_line(Kx, Ky, Kxy):
    """Independent re-implementation of the official ``_asymptotic_values`` variance, term by term in its
    own order (ones vector, matrix products, 2-norms and Frobenius norms), returning (varEst, Var_all)."""
    N1 = Kx.shape[0]
    EE = np.ones(N1)
    Kx_ = Kx * (1 - np.eye(N1))
    Ky_ = Ky * (1 - np.eye(N1))
    nrm = np.linalg.norm
    Xxi1 = (N1 * (N1 - 1) * (N1 - 2)) ** (-1) * (nrm(Kx_ @ EE) ** 2 - nrm(Kx_, "fro") ** 2) \
        - (N1 * (N1 - 1) * (N1 - 2) * (N1 - 3)) ** (-1) * (
            (EE @ Kx_ @ EE) ** 2 - 4 * (nrm(Kx_ @ EE) ** 2 + 2 * nrm(Kx_, "fro") ** 2))
    Yxi1 = (N1 * (N1 - 1) * (N1 - 2)) ** (-1) * (nrm(Ky_ @ EE) ** 2 - nrm(Ky_, "fro") ** 2) \
        - (N1 * (N1 - 1) * (N1 - 2) * (N1 - 3)) ** (-1) * (
            (EE @ Ky_ @ EE) ** 2 - 4 * (nrm(Ky_ @ EE) ** 2 + 2 * nrm(Ky_, "fro") ** 2))
    Txy = EE @ Kxy @ EE
    cross = (Txy ** 2 - nrm(Kxy.T @ EE) ** 2 - nrm(Kxy @ EE) ** 2 + nrm(Kxy, "fro") ** 2)
    ax = EE @ Kx_ @ Kxy @ EE
    ay = EE @ Ky_ @ Kxy.T @ EE
    tx, ty = EE @ Kx_ @ EE, EE @ Ky_ @ EE
    varxi1 = Xxi1 + Yxi1 + (N1 ** 2 * (N1 - 1)) ** (-1) * (nrm(Kxy @ EE) ** 2 - nrm(Kxy, "fro") ** 2) \
        - 2 * (N1 ** 2 * (N1 - 1) ** 2) ** (-1) * cross \
        + (N1 ** 2 * (N1 - 1)) ** (-1) * (nrm(Kxy.T @ EE) ** 2 - nrm(Kxy, "fro") ** 2) \
        - 2 * (N1 ** 2 * (N1 - 1)) ** (-1) * ax \
        + 2 * (N1 * N1 * (N1 - 1) * (N1 - 2)) ** (-1) * (tx * Txy - 2 * ax) \
        - 2 * (N1 ** 2 * (N1 - 1)) ** (-1) * ay \
        + 2 * (N1 * N1 * (N1 - 1) * (N1 - 2)) ** (-1) * (ty * Txy - 2 * ay)
    varxi2 = Xxi1 + Yxi1 + 2 * N1 ** (-2) * nrm(Kxy, "fro") ** 2 \
        - 2 * (N1 ** 2 * (N1 - 1) ** 2) ** (-1) * cross \
        - 4 * (N1 ** 2 * (N1 - 1)) ** (-1) * ax + 4 * (N1 * N1 * (N1 - 1) * (N1 - 2)) ** (-1) * (tx * Txy - 2 * ax) \
        - 4 * (N1 ** 2 * (N1 - 1)) ** (-1) * ay + 4 * (N1 * N1 * (N1 - 1) * (N1 - 2)) ** (-1) * (ty * Txy - 2 * ay)
    varEst = 4 * (N1 - 2) / (N1 * (N1 - 1)) * varxi1 + 2 / (N1 * (N1 - 1)) * varxi2
    xx = (Kx.sum() - np.trace(Kx)) / (N1 * (N1 - 1))
    yy = (Ky.sum() - np.trace(Ky)) / (N1 * (N1 - 1))
    return varEst, varEst / (4 - xx - yy) ** 2


def _fixed_inputs():
    out = []
    for seed, m, shift, h in ((0, 7, 0.0, 1.0), (1, 23, 0.8, 0.7), (2, 60, 2.0, 1.5)):
        rng = np.random.default_rng(seed)
        X, Y = rng.normal(size=(m, 2)), rng.normal(shift, 1.3, size=(m, 2))
        Z = np.vstack([X, Y])
        out.append(gram_blocks(GaussianKernel(h)(Z, Z), m))
    return out


@pytest.mark.parametrize("blocks", _fixed_inputs())
def test_official_variance_equals_a_line_by_line_reimplementation(blocks):
    Kxx, Kyy, Kxy = blocks
    m = Kxx.shape[0]
    var_est, var_all = _official_line_by_line(Kxx, Kyy, Kxy)
    assert official_mmd_variance(Kxx, Kyy, Kxy) == pytest.approx(var_est, rel=1e-12, abs=1e-15)
    s = nammd_from_gram(Kxx, Kyy, Kxy)
    assert s.var_mmd_official == pytest.approx(m * var_est, rel=1e-12, abs=1e-15)
    assert s.var_official == pytest.approx(m * var_all, rel=1e-12, abs=1e-15)
    if var_all > 1e-12:  # (the first input, P = Q at m = 7, gives a negative estimate: floored, warned)
        assert nammd_variance(s, "official") == pytest.approx(m * var_all, rel=1e-12)
        assert nammd_variance(s, "paper") == nammd_variance(s, "official")  # alias
    if s.var_paper > 1e-12:
        assert nammd_variance(s, "unbiased-ours") == pytest.approx(s.var_paper, rel=1e-15)


def test_official_variance_works_on_torch_tensors():
    torch = pytest.importorskip("torch")
    Kxx, Kyy, Kxy = _fixed_inputs()[1]
    m = Kxx.shape[0]
    t = [torch.tensor(a, dtype=torch.float64) for a in (Kxx, Kyy, Kxy)]
    got = official_mmd_variance(*t, 1.0 - torch.eye(m, dtype=torch.float64))
    assert float(got) == pytest.approx(official_mmd_variance(Kxx, Kyy, Kxy), rel=1e-12)


def test_official_and_ours_are_different_estimators():
    """Both estimate Var(MMD^2_u); they are not equal up to O(m^-3) (the old docstring): at m = 60 they
    differ by far more than m^-3 ~ 5e-6 relative on a fixed draw."""
    Kxx, Kyy, Kxy = _fixed_inputs()[2]
    s = nammd_from_gram(Kxx, Kyy, Kxy)
    assert abs(s.var_official / s.var_paper - 1) > 1e-3


def test_closeness_test_uses_the_official_variance_when_asked():
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(80, 2)), rng.normal(0.7, size=(80, 2))
    k = GaussianKernel(1.0)
    s = nammd_from_gram(*gram_blocks(k(np.vstack([X, Y]), np.vstack([X, Y])), 80))
    r = nammd_closeness_test(X, Y, 0.05, kernel=k, variance="official")
    assert r.std == pytest.approx(np.sqrt(s.var_official), rel=1e-12)
    rm = mmd_closeness_test(X, Y, 0.05, kernel=k, variance="official")
    assert rm.std == pytest.approx(np.sqrt(s.var_mmd_official), rel=1e-12)
    assert nammd_closeness_test(X, Y, 0.05, kernel=k).variance == "delta"  # the default


# ----------------------------------------------------------------------------------------------
# the reproduction: regimes inside NAMMD's null, the equal-norm control's arm
# ----------------------------------------------------------------------------------------------


def test_regimes_inside_nammds_null_are_labelled():
    c = ex.Config.quick()
    des = ex.gaussian_design(c)
    m = collections.defaultdict(lambda: collections.defaultdict(lambda: [0.5, 0.5, 0.5]))
    labels = [lab for lab, _ in ex._power_regimes(m, c, c.test_var_factors, "nammd", "mmd")]
    n_inside = 0
    for (eps, f), lab in zip([(e, f) for e in c.epsilons for f in c.test_var_factors], labels, strict=True):
        inside = des[eps]["tests"][f]["nammd"] <= eps
        n_inside += inside
        assert ("inside NAMMD's null" in lab) == inside, lab
    assert n_inside == len(c.epsilons)  # every f = 2 pair (less concentrated) lies inside the null


def test_the_equal_norm_control_records_its_own_arm():
    """Mutant killer: the equal-norm control's power must be the NAMMD-DCT's rejections on the f = 1 pair
    (and its MMD twin the MMD-DCT's), not another arm's."""
    cfg = dataclasses.replace(ex.Config.smoke(), epsilons=(0.3,), test_var_factors=(0.25, 1.0), reps=40,
                              dct_m=100)
    metrics = collections.defaultdict(dict)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ex._gaussian_section(cfg, np.random.default_rng(0), metrics, {})
    nn, mm = metrics["nammd"]["dct_power_eps0.3_f1"], metrics["mmd"]["dct_power_eps0.3_f1"]
    pv = metrics["nammd_paper_var"]["dct_power_eps0.3_f1"]
    assert nn != mm and nn != pv  # the arms differ on this draw, so a swapped arm cannot go unnoticed
    assert metrics["nammd_equal_norm"]["power_eps0.3"] == nn
    assert metrics["mmd_equal_norm"]["power_eps0.3"] == mm


# ----------------------------------------------------------------------------------------------
# tolerances outside (0, max) refused
# ----------------------------------------------------------------------------------------------


class _ScaledGaussian:
    """K * exp(-d^2 / 2): a kernel with 0 <= k <= K = 3."""

    K = 3.0

    def __call__(self, A, B):
        return 3.0 * GaussianKernel(1.0)(A, B)


def test_tolerances_outside_the_statistics_range_are_refused():
    rng = np.random.default_rng(9)
    X, Y = rng.normal(size=(60, 2)), rng.normal(0.5, size=(60, 2))
    k = GaussianKernel(1.0)
    assert max_mmd2(1.0) == 2.0
    for eps in (5.0, 2.0, 2.5):
        with pytest.raises(ValueError, match=r"\(0, 2\)"):
            mmd_closeness_test(X, Y, eps, kernel=k)
    assert mmd_closeness_test(X, Y, 1.99, kernel=k).epsilon == 1.99
    # a kernel bounded by K = 3: MMD^2 <= 6
    with pytest.raises(ValueError, match=r"\(0, 6\)"):
        mmd_closeness_test(X, Y, 6.5, kernel=_ScaledGaussian())
    assert mmd_closeness_test(X, Y, 2.5, kernel=_ScaledGaussian()).epsilon == 2.5
    for eps in (1.0, 1.5, 5.0):
        with pytest.raises(ValueError, match=r"\(0, 1\)"):
            nammd_closeness_test(X, Y, eps, kernel=k)
    for eps in (0.0, -1.0, float("inf"), float("nan")):
        for fn in (mmd_closeness_test, nammd_closeness_test):
            with pytest.raises(ValueError):
                fn(X, Y, eps, kernel=k)
    with pytest.raises(ValueError):
        NAMMDDrift(X, epsilon=1.5)
    with pytest.raises(ValueError, match="epsilon"):
        select_bandwidth(X, Y, statistic="mmd", epsilon=3.0)
    with pytest.raises(ValueError, match="epsilon"):
        power_proxy(X, Y, 1.0, statistic="nammd", epsilon=1.2)


def test_a_kernel_with_negative_values_is_refused():
    rng = np.random.default_rng(10)
    X, Y = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))

    def bad(A, B):
        return GaussianKernel(1.0)(A, B) - 0.5

    with pytest.raises(ValueError, match="0 <= k <= K"):
        mmd_closeness_test(X, Y, 0.1, kernel=bad)

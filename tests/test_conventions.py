"""The ecosystem conventions the README promises (issue 52): statistical tests unpack like scipy's,
estimators that say scikit-learn behave as scikit-learn estimators, optimizers are torch.optim."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

from icml26.core.stats.results import ScipyLikeResult
from icml26.papers.eco import ECOAdamW
from icml26.papers.lean_slt.least_squares import L1ConstrainedLeastSquares
from icml26.papers.nammd import nammd_closeness_test
from icml26.papers.nammd.closeness import mmd_closeness_test
from icml26.papers.nammd.two_sample import mmd_two_sample_test, nammd_two_sample_test
from icml26.papers.nppr import NPPREstimator


@pytest.mark.parametrize("test", [
    lambda X, Y: nammd_closeness_test(X, Y, epsilon=0.01),
    lambda X, Y: mmd_closeness_test(X, Y, epsilon=0.01),
    lambda X, Y: nammd_two_sample_test(X, Y, n_permutations=50, seed=0),
    lambda X, Y: mmd_two_sample_test(X, Y, n_permutations=50, seed=0),
], ids=["nammd_closeness", "mmd_closeness", "nammd_two_sample", "mmd_two_sample"])
def test_test_results_unpack_like_scipy(test):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(60, 2)), rng.normal(size=(60, 2)) + 0.4
    res = test(X, Y)
    statistic, pvalue = res
    assert statistic == res.statistic and pvalue == res.pvalue and 0 <= pvalue <= 1
    assert len(res) == 2 and res[0] == res.statistic and res[-1] == res.pvalue
    assert tuple(res) == (res.statistic, res.pvalue)
    assert isinstance(res.reject, bool | np.bool_)  # extra fields stay attributes
    assert isinstance(res, ScipyLikeResult)


def test_scipy_likeness_matches_scipy_itself():
    from scipy import stats

    ref = stats.ttest_ind([1.0, 2.0, 3.0], [2.0, 3.0, 5.0])
    s, p = ref
    assert len(ref) == 2 and (s, p) == (ref.statistic, ref.pvalue)


def test_nppr_estimator_follows_scikit_learn():
    clf = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2))
    est = NPPREstimator(clf, cond="none", epochs=1, n_components=2, latent_dim=8, hidden_dim=16,
                        batch_size=8, n_train_samples=2, seed=3)
    params = est.get_params()
    assert params["epochs"] == 1 and params["classifier"] is clf
    copy = clone(est)
    assert copy.get_params()["seed"] == 3 and copy.classifier is not clf
    assert est.set_params(epochs=2) is est and est.epochs == 2
    est.set_params(epochs=1)
    torch.manual_seed(0)
    X = torch.rand(32, 2, 2)
    with torch.no_grad():
        y = clf(X).argmax(1).numpy()
    assert est.fit(X, y) is est and hasattr(est, "num_classes_")
    assert not hasattr(clone(est), "num_classes_")  # a clone is unfitted


def test_l1_least_squares_passes_sklearns_check_estimator():
    check_estimator(L1ConstrainedLeastSquares(radius=5.0))


def test_eco_is_a_torch_optimizer():
    model = torch.nn.Linear(3, 1)
    opt = ECOAdamW(model.parameters(), lr=1e-2)
    assert isinstance(opt, torch.optim.Optimizer)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    loss = model(torch.ones(2, 3)).pow(2).sum()
    loss.backward()
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(5e-3)
    state = opt.state_dict()
    opt2 = ECOAdamW(model.parameters(), lr=1e-2)
    opt2.load_state_dict(state)
    assert opt2.param_groups[0]["lr"] == pytest.approx(5e-3)

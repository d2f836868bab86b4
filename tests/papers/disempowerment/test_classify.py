"""The local classifier: fit validation, held-out agreement vs shuffled labels, screening recall."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.papers.disempowerment import (
    TfidfSchemaClassifier,
    agreement,
    labelled_bank,
)
from icml26.papers.disempowerment.classify import as_conversations


def test_agreement_metric():
    a = agreement(np.array([[0, 1, 3]]), np.array([[0, 2, 1]]))
    # quadratic weights (i-j)^2/9: observed disagreement 5/27, chance 7/27 -> kappa 1 - 5/7
    assert a == {"exact": pytest.approx(1 / 3), "within_one": pytest.approx(2 / 3),
                 "kappa_quadratic": pytest.approx(2 / 7), "balanced_recall": pytest.approx(1 / 3)}
    with pytest.raises(ValueError):
        agreement(np.zeros((2, 3)), np.zeros((3, 3)))


def test_constant_rater_scores_zero_kappa_but_high_within_one():
    """The issue's point: on traffic that is mostly "none" a constant rater passes within-one."""
    truth = np.array([0] * 95 + [1, 2, 2, 3, 3])
    const = agreement(np.zeros_like(truth), truth)
    assert const["within_one"] >= 0.95 and const["kappa_quadratic"] == 0.0
    assert const["balanced_recall"] == pytest.approx(0.25)
    assert agreement(truth, truth)["kappa_quadratic"] == 1.0


def test_fit_validation():
    recs, y = labelled_bank(60, 0)
    with pytest.raises(ValueError, match="shape"):
        TfidfSchemaClassifier().fit(recs, y[:10])
    with pytest.raises(ValueError, match="0..3"):
        TfidfSchemaClassifier().fit(recs, y + 4)
    with pytest.raises(RuntimeError):
        TfidfSchemaClassifier().classify(as_conversations(recs))
    with pytest.raises(ValueError):
        TfidfSchemaClassifier(screen_recall=0)


def test_heldout_agreement_beats_shuffled(small_clf):
    held, y = labelled_bank(400, 7, "eval")
    convs = as_conversations(held)
    ag = agreement(small_clf.classify(convs).max(1), y.max(1))
    recs, yt = labelled_bank(500, 0, "train")
    shuf = TfidfSchemaClassifier(seed=0).fit(recs, yt[np.random.default_rng(0).permutation(500)])
    ag_s = agreement(shuf.classify(convs).max(1), y.max(1))
    assert ag["within_one"] > 0.88 and ag["within_one"] > ag_s["within_one"] + 0.1
    # not a memoriser: eval-bank text is clearly harder than train-bank text
    ag_train = agreement(small_clf.classify(as_conversations(recs)).max(1), yt.max(1))
    assert ag_train["exact"] > ag["exact"]
    keep = small_clf.screen(convs)
    assert keep[y.max(1) == 3].mean() >= 0.98

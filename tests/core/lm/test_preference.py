"""Preference losses: closed forms, probabilities, reductions, gradients, bad input."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from icml26.core.lm.preference import (
    LOSS_TYPES,
    davidson_probs,
    nu_from_tie_prob,
    preference_loss,
    rao_kupper_probs,
)

floats = st.floats(-20, 20, allow_nan=False)


@settings(max_examples=50, deadline=None)
@given(d=floats, p=st.floats(0.01, 0.9))
def test_probabilities_sum_to_one(d, p):
    d = torch.tensor([d], dtype=torch.float64)
    for probs, model in ((rao_kupper_probs, "rao_kupper"), (davidson_probs, "davidson")):
        win, lose, tie = probs(d, nu_from_tie_prob(p, model))
        assert torch.allclose(win + lose + tie, torch.ones(1, dtype=torch.float64), atol=1e-12)
        assert (win >= 0).all() and (lose >= 0).all() and (tie >= 0).all()


@pytest.mark.parametrize("model", ["rao_kupper", "davidson"])
def test_tie_prob_at_zero_matches_nu(model):
    for p in (0.1, 1 / 3, 0.5):
        nu = nu_from_tie_prob(p, model)
        probs = rao_kupper_probs if model == "rao_kupper" else davidson_probs
        assert float(probs(torch.zeros(1, dtype=torch.float64), nu)[2]) == pytest.approx(p)


@settings(max_examples=50, deadline=None)
@given(c=floats, r=floats, beta=st.floats(0.01, 2.0))
def test_losses_are_negative_log_probabilities(c, r, beta):
    chosen = torch.tensor([c, c], dtype=torch.float64)
    rejected = torch.tensor([r, r], dtype=torch.float64)
    tie = torch.tensor([False, True])
    d = beta * (chosen - rejected)
    for model, probs in (("rao_kupper", rao_kupper_probs), ("davidson", davidson_probs)):
        nu = nu_from_tie_prob(1 / 3, model)
        win, _, tie_p = probs(d, nu)
        loss = preference_loss(chosen, rejected, tie, model, beta)
        # compare in probability space (log of tiny probabilities is ill-conditioned)
        assert torch.allclose(torch.exp(-loss[0]), win[0], rtol=1e-9, atol=1e-300)
        assert torch.allclose(torch.exp(-loss[1]), tie_p[1], rtol=1e-9, atol=1e-300)


def test_binary_losses_match_trl_closed_forms():
    chosen = torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64)
    rejected = torch.tensor([0.1, 0.5, -2.0], dtype=torch.float64)
    beta, eps = 0.5, 0.1
    diff = chosen - rejected
    d = beta * diff
    expected = {
        "sigmoid": -(1 - eps) * F.logsigmoid(d) - eps * F.logsigmoid(-d),
        "robust": (-(1 - eps) * F.logsigmoid(d) + eps * F.logsigmoid(-d)) / (1 - 2 * eps),
        "hinge": torch.relu(1 - d),
        "ipo": (diff - 1 / (2 * beta)) ** 2,
    }
    for name, value in expected.items():
        got = preference_loss(chosen, rejected, None, name, beta, label_smoothing=eps)
        assert torch.allclose(got, value), name


def test_rao_kupper_with_nu_one_is_dpo():
    chosen, rejected = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    rk = preference_loss(chosen, rejected, None, "rao_kupper", 0.1, nu=1.0)
    assert torch.allclose(rk, preference_loss(chosen, rejected, None, "sigmoid", 0.1))


def test_tie_flag_off_reduces_to_base_loss_with_margin():
    chosen, rejected = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    nu = nu_from_tie_prob(1 / 3, "rao_kupper")
    rk = preference_loss(chosen, rejected, torch.zeros(16, dtype=torch.bool), "rao_kupper", 0.1)
    assert torch.allclose(rk, -F.logsigmoid(0.1 * (chosen - rejected) - math.log(nu)))
    todo = preference_loss(chosen, rejected, None, "todo", 0.1, alpha=0.5)
    assert torch.allclose(todo, -F.logsigmoid(0.1 * (chosen - rejected) - 0.5))


@pytest.mark.parametrize("loss_type", ["rao_kupper", "davidson", "todo"])
def test_tie_loss_is_stationary_at_equal_rewards(loss_type):
    x = torch.tensor([0.7], dtype=torch.float64, requires_grad=True)
    loss = preference_loss(x, x.detach().clone(), torch.tensor([True]), loss_type, 0.3)
    (grad,) = torch.autograd.grad(loss.sum(), x)
    assert abs(float(grad)) < 1e-12


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_gradients_match_finite_differences(loss_type):
    torch.manual_seed(0)
    chosen = torch.randn(6, dtype=torch.float64, requires_grad=True)
    rejected = torch.randn(6, dtype=torch.float64, requires_grad=True)
    ties = torch.tensor([True, False] * 3) if loss_type in ("rao_kupper", "davidson", "todo") else None
    assert torch.autograd.gradcheck(
        lambda c, r: preference_loss(c, r, ties, loss_type, 0.7, label_smoothing=0.1),
        (chosen, rejected))


def test_bad_input_errors():
    a = torch.zeros(3)
    with pytest.raises(ValueError, match="equal length"):
        preference_loss(a, torch.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        preference_loss(torch.tensor([float("nan"), 0, 0]), a)
    with pytest.raises(ValueError, match="unknown loss_type"):
        preference_loss(a, a, None, "nope")
    with pytest.raises(ValueError, match="cannot use ties"):
        preference_loss(a, a, torch.tensor([True, False, False]), "sigmoid")
    with pytest.raises(ValueError, match="tie_prob_at_zero"):
        nu_from_tie_prob(1.0, "davidson")
    with pytest.raises(ValueError, match="nu >= 1"):
        preference_loss(a, a, None, "rao_kupper", nu=0.5)
    with pytest.raises(ValueError, match="is_tie"):
        preference_loss(a, a, torch.tensor([True]), "davidson")
    with pytest.raises(ValueError, match="beta"):
        preference_loss(a, a, None, "sigmoid", beta=0.0)


def test_todo_matches_the_authors_tie_loss_with_their_default_margin():
    """XXares/TODO utils/dpo_tie_trainer.py ``tie_loss`` with theta = -alpha = -0.5 (their configs):
    decided pairs -log s(d - alpha); ties log((1 + e^{alpha + d})(1 + e^{alpha - d})) - log(e^{2 alpha} - 1)."""
    chosen = torch.tensor([0.4, -2.0, 3.0, 0.0], dtype=torch.float64)
    rejected = torch.tensor([0.1, 1.0, -1.0, 0.0], dtype=torch.float64)
    tie = torch.tensor([False, True, True, True])
    beta, alpha = 0.5, 0.5
    d = beta * (chosen - rejected)
    expected_tie = torch.log((1 + torch.exp(alpha + d)) * (1 + torch.exp(alpha - d))) - math.log(math.exp(2 * alpha) - 1)
    expected = torch.where(tie, expected_tie, -F.logsigmoid(d - alpha))
    got = preference_loss(chosen, rejected, tie, "todo", beta)  # default alpha
    assert torch.allclose(got, expected, atol=1e-12)

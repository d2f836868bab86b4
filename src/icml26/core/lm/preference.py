"""Pairwise preference losses over implicit rewards, with ties (DPO family).

Every loss takes the policy-minus-reference log-ratios of the two responses of each pair,
``chosen_logratios = log pi(y1|x) - log pi_ref(y1|x)`` and likewise for ``rejected_logratios``,
and a tie flag per pair. For a tie, "chosen"/"rejected" is just an order (the loss is symmetric).
With ``d = beta * (chosen_logratios - rejected_logratios)``:

=============  =======================================================  ======================
loss_type      per-pair loss                                            source
=============  =======================================================  ======================
sigmoid        -(1-eps) log s(d) - eps log s(-d)                        DPO; TRL ``sigmoid``
robust         (-(1-eps) log s(d) + eps log s(-d)) / (1 - 2 eps)        Chowdhury+24; TRL ``robust``
hinge          relu(1 - d)                                              SLiC; TRL ``hinge``
ipo            (logratio_diff - 1/(2 beta))^2 (see the note below)      IPO; TRL ``ipo``
rao_kupper     win: -log s(d - a); tie: -[log(nu^2-1) + log s(d-a)      Chen et al. 2409.17431
               + log s(-d-a)], a = log nu                               (DPO-RK)
davidson       win: -(d/2 - log Z); tie: -(log nu - log Z),             Chen et al. 2409.17431
               Z = e^{d/2} + e^{-d/2} + nu                              (DPO-D)
todo           Rao-Kupper form with nu = e^alpha (TOBT)                  Guo et al. 2411.02442
=============  =======================================================  ======================

(s = logistic sigmoid.) The names and semantics of ``sigmoid``, ``robust``, ``hinge`` and ``ipo``
follow TRL's ``DPOTrainer`` so that a TRL user can recognise them; the binary losses cannot
use a tie and raise if given one (drop ties or assign winners first).

The tie models' free parameter is set by the probability of a tie between two equally good
responses (``d = 0``): Rao-Kupper gives ``(nu - 1)/(nu + 1)``, Davidson ``nu / (2 + nu)``.
``tie_prob_at_zero = 1/3`` is our default (Chen et al. fix nu per model; their value could not be
read here).

TODO's margin ``alpha = 0.5`` is the TODO authors' setting: their training configs
``train_args/llama3-8b-todo.yaml`` and ``train_args/mistral-7b-todo.yaml`` set ``dpo_theta: -0.5``
and their README says ``--dpo_theta -0.5 # default is -0.5, represents the -alpha value in TODO``
(github.com/XXares/TODO, commit 676b471). Their ``DPOTieTrainer.tie_loss``
(``utils/dpo_tie_trainer.py``) applies it to ``beta * logits`` exactly as here: decided pairs
``-log s(d - alpha)``, ties ``-[log(e^{2 alpha} - 1) + log s(d - alpha) + log s(-d - alpha)]``.
(Their ``beta`` is 0.01; the class default ``theta = -0.7`` and the argument-parser default
``-0.2`` are overridden by those configs.)

IPO and length: TRL's ``DPOTrainer`` divides each sequence's log-probability by its number of
completion tokens when the loss is IPO (``concatenated_forward``: ``if "ipo" in
self.loss_type: all_logps = all_logps / loss_mask.sum(-1)``) and sums them for every other loss.
This function takes log-ratios as given: pass length-averaged log-ratios for ``ipo`` to match
TRL (the LM trainer :func:`icml26.papers.tie_alignment.trainer.train_tie_dpo` does; on a tabular
policy every response is one "token" and the two agree).
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

BINARY_LOSSES = ("sigmoid", "robust", "hinge", "ipo")
TIE_LOSSES = ("rao_kupper", "davidson", "todo")
LOSS_TYPES = BINARY_LOSSES + TIE_LOSSES


def nu_from_tie_prob(tie_prob_at_zero: float, model: str) -> float:
    """The tie parameter nu for which P(tie | d = 0) equals ``tie_prob_at_zero``.

    Rao-Kupper: p = (nu - 1)/(nu + 1) -> nu = (1 + p)/(1 - p) (nu >= 1).
    Davidson:   p = nu/(2 + nu)       -> nu = 2p/(1 - p)       (nu >= 0).
    """
    p = float(tie_prob_at_zero)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"tie_prob_at_zero must lie in [0, 1), got {p}")
    if model in ("rao_kupper", "todo"):
        return (1.0 + p) / (1.0 - p)
    if model == "davidson":
        return 2.0 * p / (1.0 - p)
    raise ValueError(f"unknown tie model {model!r}; use 'rao_kupper' or 'davidson'")


def rao_kupper_probs(d: torch.Tensor, nu: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(P(win), P(lose), P(tie)) of the Rao-Kupper model at reward difference ``d`` (nu >= 1)."""
    if not nu >= 1.0:
        raise ValueError(f"Rao-Kupper needs nu >= 1, got {nu}")
    a = math.log(nu)
    win = torch.sigmoid(d - a)
    lose = torch.sigmoid(-d - a)
    return win, lose, (nu**2 - 1.0) * win * lose


def davidson_probs(d: torch.Tensor, nu: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(P(win), P(lose), P(tie)) of the Davidson model at reward difference ``d`` (nu >= 0)."""
    if not nu >= 0.0:
        raise ValueError(f"Davidson needs nu >= 0, got {nu}")
    z = torch.exp(d / 2) + torch.exp(-d / 2) + nu
    return torch.exp(d / 2) / z, torch.exp(-d / 2) / z, nu / z


def preference_loss(
    chosen_logratios: torch.Tensor,
    rejected_logratios: torch.Tensor,
    is_tie: torch.Tensor | None = None,
    loss_type: str = "sigmoid",
    beta: float = 0.1,
    *,
    label_smoothing: float = 0.0,
    tie_prob_at_zero: float = 1.0 / 3.0,
    nu: float | None = None,
    alpha: float = 0.5,
) -> torch.Tensor:
    """Per-pair loss of the DPO family, tie-aware for ``rao_kupper``, ``davidson`` and ``todo``.

    Parameters
    ----------
    chosen_logratios, rejected_logratios : Tensor, shape (B,)
        ``log pi(y|x) - log pi_ref(y|x)`` of the preferred (first) and other response.
    is_tie : bool Tensor, shape (B,), optional
        True where the labeler declared a tie. ``None`` means no ties.
    loss_type : str
        One of ``sigmoid, robust, hinge, ipo, rao_kupper, davidson, todo``.
    beta : float
        KL strength of the implicit reward ``beta * logratio`` (TRL default 0.1).
    label_smoothing : float
        ``eps`` of the conservative (``sigmoid``) and ``robust`` losses, in [0, 0.5).
    tie_prob_at_zero : float
        Sets nu of ``rao_kupper``/``davidson`` through :func:`nu_from_tie_prob` unless ``nu`` is given.
    alpha : float
        TOBT margin of ``todo`` (nu = e^alpha); 0.5 as in the TODO authors' configs (see above).

    Returns
    -------
    Tensor, shape (B,) — the loss of each pair (take ``.mean()`` to train).
    """
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"unknown loss_type {loss_type!r}; choose one of {LOSS_TYPES}")
    if chosen_logratios.shape != rejected_logratios.shape or chosen_logratios.dim() != 1:
        raise ValueError("chosen_logratios and rejected_logratios must be 1-D tensors of equal length, "
                         f"got {tuple(chosen_logratios.shape)} and {tuple(rejected_logratios.shape)}")
    if not (torch.isfinite(chosen_logratios).all() and torch.isfinite(rejected_logratios).all()):
        raise ValueError("log-ratios contain NaN or inf")
    if not beta > 0:
        raise ValueError(f"beta must be positive, got {beta}")
    if not 0.0 <= label_smoothing < 0.5:
        raise ValueError(f"label_smoothing must lie in [0, 0.5), got {label_smoothing}")
    if is_tie is None:
        is_tie = torch.zeros_like(chosen_logratios, dtype=torch.bool)
    if is_tie.shape != chosen_logratios.shape:
        raise ValueError(f"is_tie has shape {tuple(is_tie.shape)}, expected {tuple(chosen_logratios.shape)}")
    is_tie = is_tie.bool()
    diff = chosen_logratios - rejected_logratios
    d = beta * diff

    if loss_type in BINARY_LOSSES:
        if bool(is_tie.any()):
            raise ValueError(f"loss_type {loss_type!r} cannot use ties: drop them, assign a winner, "
                             f"or use one of {TIE_LOSSES}")
        eps = label_smoothing
        if loss_type == "sigmoid":
            return -(1 - eps) * F.logsigmoid(d) - eps * F.logsigmoid(-d)
        if loss_type == "robust":
            return (-(1 - eps) * F.logsigmoid(d) + eps * F.logsigmoid(-d)) / (1 - 2 * eps)
        if loss_type == "hinge":
            return torch.relu(1 - d)
        return (diff - 1 / (2 * beta)) ** 2  # ipo

    if loss_type in ("rao_kupper", "todo"):
        if loss_type == "todo":
            nu_ = math.exp(alpha)
        else:
            nu_ = nu if nu is not None else nu_from_tie_prob(tie_prob_at_zero, "rao_kupper")
        if not nu_ >= 1.0:
            raise ValueError(f"Rao-Kupper needs nu >= 1, got {nu_}")
        a = math.log(nu_)
        win = -F.logsigmoid(d - a)
        if nu_ == 1.0:  # P(tie) = 0: a tie has infinite loss; no ties allowed
            if bool(is_tie.any()):
                raise ValueError("nu = 1 gives ties zero probability; use nu > 1 with ties")
            return win
        tie = -(math.log(nu_**2 - 1) + F.logsigmoid(d - a) + F.logsigmoid(-d - a))
        return torch.where(is_tie, tie, win)

    # davidson
    nu_ = nu if nu is not None else nu_from_tie_prob(tie_prob_at_zero, "davidson")
    if not nu_ >= 0.0:
        raise ValueError(f"Davidson needs nu >= 0, got {nu_}")
    parts = [d / 2, -d / 2]
    if nu_ > 0:
        parts.append(torch.full_like(d, math.log(nu_)))
    elif bool(is_tie.any()):
        raise ValueError("nu = 0 gives ties zero probability; use nu > 0 with ties")
    log_z = torch.logsumexp(torch.stack(parts), dim=0)
    win = -(d / 2 - log_z)
    if nu_ == 0:
        return win
    return torch.where(is_tie, -(math.log(nu_) - log_z), win)

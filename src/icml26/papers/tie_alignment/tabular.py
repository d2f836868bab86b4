"""An exact tabular policy bench for tie-aware preference optimisation (Tier A).

Each prompt has a finite set of candidate responses with a known true reward r*. A policy is a
softmax over the candidates (one logit per prompt and candidate); the reference is a random
softmax. The DPO-family losses act on ``log pi(y|x) - log pi_ref(y|x)`` exactly as for a language
model, but expected true reward, KL(pi || pi_ref) and the win rate against the reference are
computed in closed form. This isolates the *objective* (how ties are labelled and modelled) from
language-model sampling noise. Our design (the brief's "Tier A"); the paper's own benchmarks are
real LLM preference sets that cannot run here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from icml26.core.lm.preference import LOSS_TYPES, TIE_LOSSES, preference_loss

from .labelers import TIE, WIN_SECOND

TIE_HANDLING = ("model", "drop", "random_winner")


@dataclass(frozen=True)
class PreferenceConfig:
    """How a preference set is turned into a loss.

    Attributes
    ----------
    loss_type : str
        A :func:`icml26.core.lm.preference.preference_loss` type.
    beta : float
        KL strength (TRL's default 0.1).
    tie_handling : str
        ``model`` (pass ties to a tie-aware loss), ``drop`` (discard them, as Llama 3 / Qwen2 do,
        per Chen et al. 2409.17431 §1) or ``random_winner`` (a coin flip picks a winner: forced
        choice after the fact; also the negative control "tie flag off").
    label_smoothing : float
        For ``sigmoid``/``robust`` (cDPO, eps = 0.1 in the brief).
    tie_prob_at_zero : float
        P(tie | equal rewards) that sets nu of the tie models (our default 1/3).
    """

    loss_type: str = "sigmoid"
    beta: float = 0.1
    tie_handling: str = "model"
    label_smoothing: float = 0.0
    tie_prob_at_zero: float = 1.0 / 3.0

    def __post_init__(self) -> None:
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"unknown loss_type {self.loss_type!r}; choose one of {LOSS_TYPES}")
        if self.tie_handling not in TIE_HANDLING:
            raise ValueError(f"tie_handling must be one of {TIE_HANDLING}, got {self.tie_handling!r}")
        if self.tie_handling == "model" and self.loss_type not in TIE_LOSSES:
            # binary losses cannot model a tie: the caller must say what to do with them
            object.__setattr__(self, "tie_handling", "drop")


def resolve_ties(labels: np.ndarray, handling: str,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply a tie-handling policy to labels; return boolean ``(keep, swap, is_tie)`` masks.

    ``labels``: +1 the first response is preferred, -1 the second, 0 a tie. A kept pair's chosen
    response is ``second if swap else first``; ``is_tie`` is True only under ``handling="model"``.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.isin(labels, (-1, 0, 1)).all():
        raise ValueError("labels must be a 1-D array of +1, -1 or 0 (tie)")
    if handling not in TIE_HANDLING:
        raise ValueError(f"tie handling must be one of {TIE_HANDLING}, got {handling!r}")
    labels = labels.copy()
    tie = labels == TIE
    keep = np.ones_like(tie)
    if handling == "drop":
        keep = ~tie
    elif handling == "random_winner":
        labels[tie] = rng.choice([1, -1], size=int(tie.sum()))
    is_tie = tie & (handling == "model")
    return keep, labels == WIN_SECOND, is_tie


class TabularPolicyBench:
    """Prompts with finite candidate sets, known rewards and a random reference policy.

    Parameters
    ----------
    n_prompts, n_candidates : int
        Table size (brief: 200 x 64).
    reward_sd : float
        r* ~ N(0, reward_sd^2) i.i.d. per (prompt, candidate): fine-grained differences, so that
        many pairs of reference samples are near-ties (our choice).
    ref_sd : float
        Reference logits ~ N(0, ref_sd^2) (our choice).
    seed : int
    """

    def __init__(self, n_prompts: int = 200, n_candidates: int = 64, reward_sd: float = 2.0,
                 ref_sd: float = 1.0, seed: int = 0) -> None:
        if n_prompts < 1 or n_candidates < 2:
            raise ValueError("need at least one prompt and two candidates")
        if not (reward_sd > 0 and ref_sd >= 0):
            raise ValueError("reward_sd must be > 0 and ref_sd >= 0")
        rng = np.random.default_rng(seed)
        self.rewards = rng.normal(0.0, reward_sd, size=(n_prompts, n_candidates))
        self.ref_logits = rng.normal(0.0, ref_sd, size=(n_prompts, n_candidates))
        self.ref_logp = torch.log_softmax(torch.as_tensor(self.ref_logits), dim=1)

    @property
    def shape(self) -> tuple[int, int]:
        return self.rewards.shape

    def sample_pairs(self, pairs_per_prompt: int, rng: np.random.Generator):
        """Two distinct responses sampled from the reference, per prompt, ``pairs_per_prompt`` times."""
        P, N = self.shape
        probs = self.ref_logp.exp().numpy()
        prompts = np.repeat(np.arange(P), pairs_per_prompt)
        first = np.empty_like(prompts)
        second = np.empty_like(prompts)
        for k, p in enumerate(prompts):
            first[k], second[k] = rng.choice(N, size=2, replace=False, p=probs[p])
        return prompts, first, second

    # --- closed-form evaluation -------------------------------------------------------------
    def expected_reward(self, logp: torch.Tensor) -> float:
        return float((logp.exp() * torch.as_tensor(self.rewards)).sum(1).mean())

    def kl_to_ref(self, logp: torch.Tensor) -> float:
        return float((logp.exp() * (logp - self.ref_logp)).sum(1).mean())

    def win_rate_vs_ref(self, logp: torch.Tensor) -> float:
        """P(r*(y) > r*(y')) + P(=)/2 with y ~ pi and y' ~ pi_ref, averaged over prompts."""
        r = torch.as_tensor(self.rewards)
        better = (r.unsqueeze(2) > r.unsqueeze(1)).double() + 0.5 * (r.unsqueeze(2) == r.unsqueeze(1)).double()
        p, q = logp.exp(), self.ref_logp.exp()
        return float(torch.einsum("pi,pij,pj->p", p, better, q).mean())

    def evaluate(self, logp: torch.Tensor) -> dict[str, float]:
        return {"reward": self.expected_reward(logp), "kl": self.kl_to_ref(logp),
                "win_rate": self.win_rate_vs_ref(logp)}

    # --- training ---------------------------------------------------------------------------
    def train(self, prompts: np.ndarray, first: np.ndarray, second: np.ndarray, labels: np.ndarray,
              config: PreferenceConfig, *, steps: int = 200, lr: float = 0.05,
              seed: int = 0) -> torch.Tensor:
        """Optimise the tabular policy on labelled pairs; return its log-probs, shape (P, N).

        Full-batch Adam starting from the reference policy (our choice: lr 0.05, 200 steps).
        """
        return self.train_path(prompts, first, second, labels, config, steps=steps, lr=lr,
                               seed=seed)[0]

    def train_path(self, prompts: np.ndarray, first: np.ndarray, second: np.ndarray,
                   labels: np.ndarray, config: PreferenceConfig, *, steps: int = 200,
                   lr: float = 0.05, seed: int = 0) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
        """:meth:`train`, also returning the optimisation path: expected true reward and
        KL(pi || pi_ref) after every step (``path["reward"][t]``, ``path["kl"][t]``, t = 0 is the
        reference), so that objectives can be compared at matched KL (:func:`at_kl`)."""
        if not (len(prompts) == len(first) == len(second) == len(labels)):
            raise ValueError("prompts, first, second and labels must have the same length")
        if steps < 0:
            raise ValueError(f"steps must be >= 0, got {steps}")
        keep, swap, tie = resolve_ties(labels, config.tie_handling, np.random.default_rng(seed))
        p = torch.as_tensor(np.asarray(prompts)[keep])
        chosen = torch.as_tensor(np.where(swap, second, first)[keep])
        rejected = torch.as_tensor(np.where(swap, first, second)[keep])
        is_tie = torch.as_tensor(tie[keep])
        theta = torch.as_tensor(self.ref_logits).clone().requires_grad_(True)
        rewards = torch.as_tensor(self.rewards)
        path_r, path_kl = [self.expected_reward(self.ref_logp)], [0.0]
        if len(p) == 0:
            steps = 0
        opt = torch.optim.Adam([theta], lr=lr)
        for _ in range(steps):
            logp = torch.log_softmax(theta, dim=1)
            ratio = logp - self.ref_logp
            loss = preference_loss(ratio[p, chosen], ratio[p, rejected], is_tie, config.loss_type,
                                   config.beta, label_smoothing=config.label_smoothing,
                                   tie_prob_at_zero=config.tie_prob_at_zero).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                lp = torch.log_softmax(theta, dim=1)
                prob = lp.exp()
                path_r.append(float((prob * rewards).sum(1).mean()))
                path_kl.append(float((prob * (lp - self.ref_logp)).sum(1).mean()))
        path = {"reward": np.array(path_r), "kl": np.array(path_kl)}
        return torch.log_softmax(theta.detach(), dim=1), path


def at_kl(kl: np.ndarray, values: np.ndarray, target: float) -> tuple[float, bool]:
    """A metric of an optimisation path "early-stopped" at KL budget ``target``.

    ``kl`` and ``values`` are the path's KL(pi || pi_ref) and the metric at each checkpoint (the
    first is the reference, KL 0). The path stops at its first checkpoint whose KL reaches
    ``target``; the metric is interpolated linearly in KL between that checkpoint and the one
    before, i.e. read at KL = ``target`` exactly. A path that never reaches ``target`` keeps its
    last checkpoint (it spent less KL than allowed). Returns ``(value, reached)``.
    """
    kl = np.asarray(kl, dtype=float)
    values = np.asarray(values, dtype=float)
    if kl.ndim != 1 or kl.shape != values.shape or kl.size == 0:
        raise ValueError(f"kl and values must be 1-D arrays of equal non-zero length, got "
                         f"{kl.shape} and {values.shape}")
    if not (np.isfinite(kl).all() and np.isfinite(values).all()):
        raise ValueError("kl or values contain NaN or inf")
    if not target > 0:
        raise ValueError(f"target KL must be > 0, got {target}")
    hit = np.flatnonzero(kl >= target)
    if hit.size == 0:
        return float(values[-1]), False
    t = int(hit[0])
    if t == 0:
        return float(values[0]), True
    k0, k1 = kl[t - 1], kl[t]
    w = (target - k0) / (k1 - k0) if k1 > k0 else 1.0
    return float(values[t - 1] + w * (values[t] - values[t - 1])), True

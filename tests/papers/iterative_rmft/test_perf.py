"""iterative_rmft issue 54 (speed): the shared first-round rollouts and the foreach optimiser
leave every number unchanged, bit for bit."""

from __future__ import annotations

import copy

import numpy as np
import torch

from icml26.core.rl import sample_bandits
from icml26.papers.iterative_rmft.model import NumericalDecisionTransformer
from icml26.papers.iterative_rmft.rmft import RMFTConfig, iterative_rmft
from icml26.papers.iterative_rmft.text import iterative_rmft_text, make_text_agent


def _sampler(n, seed):
    return sample_bandits(n, 3, 8, seed=seed)


def _same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_shared_rollouts_change_no_number():
    torch.manual_seed(0)
    base = NumericalDecisionTransformer(k_max=10, d_model=16, n_layers=1, n_heads=2, max_horizon=16)
    shared: dict = {}
    for how in ("regret", "random", "reward"):
        cfg = RMFTConfig(iterations=3, rollouts_per_task=4, top_k=2, tasks_per_iter=6, sft_epochs=2,
                         selection=how)
        alone, with_shared = copy.deepcopy(base), copy.deepcopy(base)
        h1 = iterative_rmft(alone, _sampler, cfg, seed=1)
        h2 = iterative_rmft(with_shared, _sampler, cfg, seed=1, shared=shared)
        assert h1 == h2 and _same(alone, with_shared)
    # the arms' first rounds coincide (one entry), their later rounds differ (one entry each)
    assert len(shared) == 1 + 3 * 2


def test_shared_text_rollouts_change_no_number():
    chat = make_text_agent(3, 4, d_model=16, seed=0)
    cfg = RMFTConfig(iterations=2, rollouts_per_task=2, top_k=1, tasks_per_iter=2, sft_epochs=1, lr=1e-3)
    shared: dict = {}
    sampler = lambda n, s: sample_bandits(n, 3, 4, seed=s)  # noqa: E731
    for loss_on in ("full", "action"):
        alone, with_shared = copy.deepcopy(chat), copy.deepcopy(chat)
        h1 = iterative_rmft_text(alone, sampler, cfg, loss_on=loss_on, seed=3)
        h2 = iterative_rmft_text(with_shared, sampler, cfg, loss_on=loss_on, seed=3, shared=shared)
        assert h1 == h2 and _same(alone.model, with_shared.model)
    assert len(shared) < 2 * cfg.iterations  # the second arm reused the first's first round


def test_foreach_adamw_equals_the_per_tensor_update():
    torch.manual_seed(0)
    m1 = NumericalDecisionTransformer(k_max=10, d_model=16, n_layers=2, n_heads=2, max_horizon=16)
    m2 = copy.deepcopy(m1)
    x, y = torch.randn(8, 10, 12), torch.from_numpy(np.random.default_rng(0).integers(0, 5, (8, 10)))
    for m, foreach in ((m1, False), (m2, True)):
        opt = torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.0, foreach=foreach)
        for _ in range(5):
            loss = torch.nn.functional.cross_entropy(m(x, 5)[..., :5].reshape(-1, 5), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert _same(m1, m2)

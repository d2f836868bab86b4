"""Tokenised Flow Matching for Hierarchical Simulation-Based Inference (TFMPE; Charles, Santoni,
Flaxman, Semenova; ICML 2026, arXiv:2604.20723; official JAX code github.com/mrc-ide/tfmpe).

Dict-in, dict-out flow-matching posterior estimation on tokens (one token per scalar element,
labelled by variable, positioned within a site, masked by site), so one estimator covers global
and local parameters and any number of sites; likelihood-factorised training learns a per-site
surrogate from single-site simulations and amortises the joint posterior on synthetic sets.

>>> import torch
>>> from icml26.papers.tfmpe import HierarchicalGaussianLinear, TFMPE
>>> sim = HierarchicalGaussianLinear()
>>> theta = sim.prior(64, 3); x = sim.simulate(theta)
>>> est = TFMPE(sim.prior, local=("l", "y"), model_kwargs={"latent_dim": 16, "n_layers": 1})
>>> _ = est.append_simulations(theta, x).train(steps=2, batch_size=16)
>>> est.sample(5, {"y": x["y"][0]})["l"].shape
torch.Size([5, 3, 2])
"""

from .baselines import FlatSBI, flatten
from .diagnostics import c2st_accuracy, coverage_curve, expected_coverage_error, rank_fractions
from .estimator import TFMPE, ExtrapolationWarning
from .hierarchical import (
    CallCounter,
    HierarchicalGaussianLinear,
    HierarchicalSimulator,
    LFResult,
    lf_train,
    simulate_multisite,
)
from .model import FastVelocity, GaussianFourier, Prepared, TokenTransformerVelocity
from .sbi_adapter import SBIPosterior
from .sir import HierarchicalSIR, sir_infected
from .tokens import Decoder, Labeller, Tokens, pad_sites, site_attention_mask, tokenize

PAPER = {
    "title": "Tokenised Flow Matching for Hierarchical Simulation Based Inference",
    "arxiv": "2604.20723",
    "code": "https://github.com/mrc-ide/tfmpe",
}

__all__ = [
    "PAPER", "CallCounter", "Decoder", "ExtrapolationWarning", "SBIPosterior", "FlatSBI", "GaussianFourier", "HierarchicalGaussianLinear",
    "FastVelocity", "HierarchicalSIR", "HierarchicalSimulator", "LFResult", "Labeller", "Prepared", "TFMPE", "TokenTransformerVelocity",
    "Tokens", "c2st_accuracy", "coverage_curve", "expected_coverage_error", "flatten", "lf_train",
    "pad_sites", "rank_fractions", "simulate_multisite", "sir_infected", "site_attention_mask",
    "tokenize",
]

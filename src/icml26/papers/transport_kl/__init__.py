"""transport_kl: Wasserstein / Kalman-Wasserstein analogs of KL and well-posed KL-regularised control.

Stein, Datar & Ay, *Well-Posed KL-Regularized Control via Wasserstein and Kalman-Wasserstein KL
Divergences*, arXiv:2602.02250. Flat numpy/scipy functions in the style of POT and
python-control (``K, S, E = kl_regularized_lqr(...)`` with ``u = -K x``).
"""

from .control import (
    DIVERGENCES,
    check_controllable,
    closed_loop_cost,
    control_penalty,
    discounted_dlqr,
    kl_regularized_lqr,
    simulate_linear,
    spectral_radius,
    stationary_cost,
)
from .divergences import (
    bures_map,
    divergence_path_energy,
    kl_gaussian,
    kwkl_gaussian,
    wasserstein_potential,
    wkl_elliptic,
    wkl_gaussian,
)
from .systems import CartPole, double_integrator

PAPER = {
    "title": "Well-Posed KL-Regularized Control via Wasserstein and Kalman-Wasserstein KL Divergences",
    "arxiv": "2602.02250",
    "code": None,
}

__all__ = [
    "DIVERGENCES", "PAPER", "CartPole", "bures_map", "check_controllable", "closed_loop_cost",
    "control_penalty", "discounted_dlqr", "divergence_path_energy", "double_integrator",
    "kl_gaussian", "kl_regularized_lqr", "kwkl_gaussian", "simulate_linear", "spectral_radius",
    "stationary_cost", "wasserstein_potential", "wkl_elliptic", "wkl_gaussian",
]

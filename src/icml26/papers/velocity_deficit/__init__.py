"""The Velocity Deficit: Initial Energy Injection for Flow Matching (Li et al., ICML 2026,
arXiv:2605.14819).

The Scale Schedule Corrector (SSC) multiplies a flow model's velocity by
``gamma(t) = 1 + alpha (1 - t)^beta`` (t = 0 noise), a training-free fix for the speed deficit of
MSE-trained flow models; Magnitude-Aware Flow Matching (MAFM) adds speed supervision to training.

>>> from icml26.core.flows import integrate
>>> from icml26.papers.velocity_deficit import ScaleScheduleCorrector
>>> # x1 = integrate(model, torch.randn(n, d), steps=10, velocity_transform=ScaleScheduleCorrector(0.2, 2.0))
"""

from .diagnostics import SSCTuning, tune_ssc, velocity_magnitude_profile
from .mafm import VARIANTS, MAFMLoss, magnitude_aware_fm_loss
from .ssc import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    WHERE,
    ScaleScheduleCorrector,
    sample_with_ssc,
    shifted_time_grid,
    ssc_gain,
)

PAPER = {
    "title": "The Velocity Deficit: Initial Energy Injection for Flow Matching",
    "arxiv": "2605.14819",
    "code": None,
}

__all__ = [
    "DEFAULT_ALPHA", "DEFAULT_BETA", "PAPER", "VARIANTS", "WHERE", "MAFMLoss", "SSCTuning",
    "ScaleScheduleCorrector", "magnitude_aware_fm_loss", "sample_with_ssc", "shifted_time_grid",
    "ssc_gain", "tune_ssc", "velocity_magnitude_profile",
]

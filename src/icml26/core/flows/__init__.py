"""Flow matching core (t = 0 noise, t = 1 data): paths, CFM loss, training with EMA, ODE solvers
with custom time grids and a per-evaluation velocity hook, velocity nets, data and metrics.

Also a trained-prior cache (``cached_prior``) and the saved-for-backward memory probe
(``saved_tensor_bytes``). Used by the velocity_deficit paper and designed for ms_flow and tfmpe. Nothing here imports a paper.
"""

from .cache import PRIORS, PriorCache, cached_prior
from .data import GaussianMixture, digits, toy2d
from .losses import call_model, cfm_loss, draw_path, masked_sq_error
from .memory import SavedTensorStats, saved_tensor_bytes
from .metrics import (
    DigitsFeatures,
    c2st,
    classifier_fid,
    frechet_distance,
    frechet_from_features,
    mmd_rbf,
    norm_ratio,
    sliced_wasserstein,
    std_ratio,
)
from .nets import MLPVelocity, TinyConvVelocity, VelocityField, sinusoidal_embedding
from .paths import CondOTPath, PathSample, sample_t
from .solvers import (
    ADAPTIVE_METHODS,
    FIXED_METHODS,
    AdaptiveSolution,
    adaptive_integrate,
    integrate,
    log_prob,
    make_time_grid,
    nfe_of,
    sample,
)
from .train import ForeachEMA, TrainResult, ema_update, tensor_sampler, train_flow

__all__ = [
    "ADAPTIVE_METHODS", "FIXED_METHODS", "PRIORS", "AdaptiveSolution", "PriorCache",
    "SavedTensorStats", "cached_prior", "saved_tensor_bytes", "CondOTPath", "DigitsFeatures",
    "GaussianMixture", "MLPVelocity", "PathSample", "TinyConvVelocity", "TrainResult",
    "VelocityField", "adaptive_integrate", "c2st", "call_model", "cfm_loss", "classifier_fid",
    "ForeachEMA", "digits", "draw_path", "ema_update", "frechet_distance", "frechet_from_features", "integrate",
    "log_prob", "make_time_grid", "masked_sq_error", "mmd_rbf", "nfe_of",
    "norm_ratio", "sample", "sample_t", "sinusoidal_embedding", "sliced_wasserstein", "std_ratio",
    "tensor_sampler", "toy2d", "train_flow",
]

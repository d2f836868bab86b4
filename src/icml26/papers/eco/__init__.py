"""ECO: quantized training without full-precision master weights (arXiv:2601.22101, ICML 2026).

Library API
-----------
* :class:`ECOAdamW`, :class:`ECOSGD`: ``torch.optim.Optimizer`` subclasses that turn the
  quantized parameters into :class:`~icml26.core.quant.QuantizedWeight` (codes + scales only)
  and inject the re-quantization error into the momentum.
  ``error_feedback=False`` = naive master-weight removal; ``exact_feedback=True`` = ablation.
* :class:`MasterWeightOptimizer`: the FP32-master baseline around any torch optimizer.
* :func:`eco_param_groups`, :func:`linear_weight_names`: which weights are quantized.
* :func:`static_memory_bytes`, :func:`peak_step_bytes`: static memory from storage; peak of a
  training step.
* :func:`run_quadratic_toy`: the theory contrast (naive error ∝ 1/η, ECO bounded).
"""

from .baselines import MasterWeightOptimizer, eco_param_groups, linear_weight_names
from .memory import peak_step_bytes, static_memory_bytes
from .optim import DEFAULT_WEIGHT_FORMAT, ECOSGD, ECOAdamW
from .toy import ToyResult, run_quadratic_toy

PAPER = {
    "title": "ECO: Quantized Training without Full-Precision Master Weights",
    "arxiv": "2601.22101",
    "code": None,
}

__all__ = [
    "DEFAULT_WEIGHT_FORMAT", "ECOAdamW", "ECOSGD", "MasterWeightOptimizer", "PAPER", "ToyResult",
    "eco_param_groups", "linear_weight_names", "peak_step_bytes", "run_quadratic_toy",
    "static_memory_bytes",
]

"""LATMiX: learnable invertible affine transforms for MX post-training quantization (arXiv 2602.17681).

Public API (torchao-like)::

    from icml26.papers.latmix import LatmixConfig, quantize_
    report = quantize_(model, LatmixConfig(weight_fmt="mxfp4", act_fmt="mxfp4", transform="latmix"),
                       calib=token_windows)        # in place: transforms learned, folded, MX fake-quant

Building blocks: :class:`InvertibleAffine` (LU / QR / rotation / fixed, + bias, ``fold_weight``),
:func:`hadamard_matrix`, :func:`block_hadamard_matrix`, :class:`MXLinear`,
:func:`distillation_loss`, :func:`volume_regularizer`, :func:`mx_bound_terms`,
:func:`inject_outliers`; MX formats live in :mod:`icml26.core.quant.mx`.
"""

from .api import (
    NON_MX,
    SITE_KINDS,
    IllConditionedTransform,
    LatmixConfig,
    MXLinear,
    QuantizeReport,
    build_transforms,
    distillation_loss,
    find_sites,
    make_quantizer,
    quantize_,
    volume_regularizer,
)
from .bound import mx_bound_terms
from .evaluate import make_probes, nats_per_token, probe_accuracy, probe_scores
from .outliers import inject_outliers
from .transforms import InvertibleAffine, block_hadamard_matrix, hadamard_matrix

PAPER = {
    "slug": "latmix",
    "title": "LATMiX: Learnable Affine Transformations for Microscaling Quantization of LLMs",
    "arxiv": "2602.17681",
    "code": None,  # no official code found (searched GitHub for LATMiX; the authors' org has none)
}

__all__ = [
    "NON_MX", "PAPER", "SITE_KINDS", "IllConditionedTransform", "InvertibleAffine", "LatmixConfig", "MXLinear", "QuantizeReport",
    "block_hadamard_matrix", "build_transforms", "distillation_loss", "find_sites", "hadamard_matrix",
    "inject_outliers", "make_probes", "make_quantizer", "mx_bound_terms", "nats_per_token",
    "probe_accuracy", "probe_scores", "quantize_", "volume_regularizer",
]

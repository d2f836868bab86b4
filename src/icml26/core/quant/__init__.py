"""Low-precision number formats and quantization (FP8/FP6/FP4/INT8/INT4, MX blocks).

* :mod:`.formats`: element grids, exact round-to-nearest-even and stochastic rounding, codes.
* :mod:`.qtensor`: scales (tensor/channel/group/MX E8M0), :class:`QTensor` with real storage and
  ``nbytes``, :func:`fake_quant` with a straight-through gradient.
* :mod:`.mx`: OCP MX v1.0 format names (MXFP8/6/4, MXINT8/4) and the fast MX fake-quantizer.
* :mod:`.param`: :class:`QuantizedWeight`, a trainable parameter whose only storage is codes +
  scales (a tensor subclass; every torch op sees the dequantized values).
"""

from .formats import (
    FORMATS,
    ElemFormat,
    code_table,
    get_format,
    grid_step,
    grid_values,
    pack_int4,
    round_to_format,
    unpack_int4,
)
from .mx import (
    MX_BLOCK,
    MX_FORMATS,
    mx_elem,
    mx_fake_quant,
    mx_max_scaled_error,
    mx_spec,
    mx_spec_emax,
)
from .param import QuantizedWeight, quantize_parameter_, spec_from_dict, spec_to_dict
from .qtensor import (
    QTensor,
    QuantSpec,
    block_scales,
    dequantize,
    fake_quant,
    mx_quantize,
    nbytes,
    quant_error_stats,
    quantize,
    quantize_dequantize,
)

__all__ = [
    "MX_BLOCK", "MX_FORMATS", "mx_elem", "mx_fake_quant", "mx_max_scaled_error", "mx_spec", "mx_spec_emax",
    "FORMATS", "ElemFormat", "QTensor", "QuantSpec", "QuantizedWeight", "quantize_parameter_",
    "spec_from_dict", "spec_to_dict", "block_scales", "code_table", "dequantize",
    "fake_quant", "get_format", "grid_step", "grid_values", "mx_quantize", "nbytes", "pack_int4",
    "quant_error_stats", "quantize", "quantize_dequantize", "round_to_format", "unpack_int4",
]

"""The MX error bound: block maxima and conditioning (LATMiX's theory, our explicit form).

The paper states an MX-specific bound that trades the transform's conditioning against
block-level magnitudes (its exact statement is not public; brief sec. 2.3). Our version, valid
for any invertible ``A``, bias ``b`` and weight ``W`` (out, K) with ``x' = x A + b`` and
``W' = W A^-T``:

* every element of an MX block with scale ``X_B`` has error at most ``c_f X_B`` and
  ``X_B <= max_B|v| 2^-emax``, hence ``||Q(v) - v||_F <= E(v) := c_f 2^-emax sqrt(32 sum_B max_B|v|^2)``;
* ``Q(x')Q(W')^T - x'W'^T = (Q(x') - x') Q(W')^T + x' (Q(W') - W')^T``, so
  ``||out_err||_F <= E(x') (sigma_max(A^-1) ||W||_2 + E(W')) + ||x'||_F E(W')``.

Only block maxima enter (a global max would bound every block by the largest one); a transform
that shrinks ``x'`` pays through ``sigma_max(A^-1)`` and the block maxima of ``W'``. The
"per-tensor" variant replaces every block max by the tensor max: the bound a non-MX (per-tensor)
analysis would give; it is the control of the bound claim.
"""

from __future__ import annotations

import math

import torch

from icml26.core.quant.mx import MX_BLOCK, mx_fake_quant, mx_max_scaled_error, mx_spec_emax


def _block_term(v: torch.Tensor, fmt: str, per_tensor: bool = False) -> float:
    blocks = v.double().reshape(-1, MX_BLOCK).abs().amax(1)
    s = float(blocks.max() ** 2 * len(blocks)) if per_tensor else float((blocks ** 2).sum())
    return mx_max_scaled_error(fmt) * 2.0 ** (-mx_spec_emax(fmt)) * math.sqrt(MX_BLOCK * s)


@torch.no_grad()
def mx_bound_terms(x: torch.Tensor, a: torch.Tensor | None, b: torch.Tensor | None, weight: torch.Tensor,
                   act_fmt: str, weight_fmt: str) -> dict[str, float]:
    """Bound and measured output error of one quantized linear site.

    Parameters
    ----------
    x : Tensor (N, K), the FP inputs of the site
    a : Tensor (K, K) or None (identity); b : Tensor (K,) or None
    weight : Tensor (out, K), the original weight
    act_fmt, weight_fmt : MX format names

    Returns
    -------
    dict with ``measured`` (``||Q(x')Q(W')^T - x W^T||_F``, bias excluded, it is exact), ``bound``,
    ``bound_tensor`` (per-tensor maxima), ``sigma_max_inv``, ``act_block_sq`` (``sum_B max_B^2``).
    """
    x64 = x.double().reshape(-1, x.shape[-1])
    w64 = weight.double()
    K = x64.shape[1]
    A = torch.eye(K, dtype=torch.float64) if a is None else a.double()
    bb = torch.zeros(K, dtype=torch.float64) if b is None else b.double()
    ainv = torch.linalg.inv(A)
    xp = x64 @ A + bb
    wp = w64 @ ainv.T
    qx = mx_fake_quant(xp.float(), act_fmt).double()
    qw = mx_fake_quant(wp.float(), weight_fmt).double()
    measured = float(torch.linalg.matrix_norm(qx @ qw.T - xp @ wp.T))
    smax = float(torch.linalg.matrix_norm(ainv, 2))
    wn = float(torch.linalg.matrix_norm(w64, 2))
    xf = float(torch.linalg.matrix_norm(xp))
    out = {"measured": measured, "sigma_max_inv": smax,
           "act_block_sq": float((xp.reshape(-1, MX_BLOCK).abs().amax(1) ** 2).sum())}
    for name, pt in (("bound", False), ("bound_tensor", True)):
        ex, ew = _block_term(xp, act_fmt, pt), _block_term(wp, weight_fmt, pt)
        out[name] = ex * (smax * wn + ew) + xf * ew
    return out


__all__ = ["mx_bound_terms"]

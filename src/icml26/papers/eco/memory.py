"""Static memory measured from storage: weights (+ scales), master copies, optimizer states.

"Static memory" = what persists between training steps (paper Fig. 1): the stored weights in
their real dtype (quantized codes + scales, or float32 parameters), master weights, and the
optimizer states; activations and gradients are excluded. Every number is read from tensor
storage (``untyped_storage().nbytes()``, ``QTensor.nbytes``), never computed from a formula:
an optimizer that secretly keeps a float32 copy is charged for it.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from icml26.core.quant import QTensor


def _states(optimizer) -> list[dict]:
    out = [optimizer.state]
    base = getattr(optimizer, "base", None)
    if base is not None:
        out.append(base.state)
    return out


def static_memory_bytes(model: nn.Module, optimizer, params: Iterable[torch.Tensor] | None = None
                        ) -> dict[str, int]:
    """Bytes of static training memory, by category, measured from storage.

    Parameters
    ----------
    model : nn.Module
    optimizer : torch.optim.Optimizer (or :class:`MasterWeightOptimizer`)
    params : iterable of Tensors, optional
        Restrict the count to these parameters (e.g. the quantized layers); default all of
        ``model.parameters()``.

    Returns
    -------
    dict with ``weights`` (float parameter storage + quantized codes), ``scales``, ``master``,
    ``states`` (momenta, step counters, stored errors), ``total``.
    """
    plist = list(model.parameters()) if params is None else list(params)
    seen: set[int] = set()
    out = {"weights": 0, "scales": 0, "master": 0, "states": 0}

    def count(t: torch.Tensor, key: str) -> None:
        st = t.untyped_storage()
        ptr = st.data_ptr()
        if st.nbytes() == 0 or ptr in seen:
            return
        seen.add(ptr)
        out[key] += int(st.nbytes())

    for p in plist:
        count(p, "weights")
        for state in _states(optimizer):
            st = state.get(p, {})
            for k, v in st.items():
                if isinstance(v, QTensor):
                    count(v.codes, "weights")
                    count(v.scale, "scales")
                elif isinstance(v, torch.Tensor):
                    count(v, "master" if k == "master" else "states")
    out["total"] = sum(out.values())
    return out

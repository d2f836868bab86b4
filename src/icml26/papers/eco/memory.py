"""Static memory measured from storage: weights (+ scales), master copies, optimizer states.

"Static memory" = what persists between training steps (paper Fig. 1): the stored weights in
their real dtype (quantized codes + scales, or float32 parameters), master weights, and the
optimizer states; activations and gradients are excluded. Every number is read from tensor
storage (``untyped_storage().nbytes()`` of codes, scales, caches and states), never computed
from a formula: an optimizer that secretly keeps a float32 copy is charged for it.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from icml26.core.quant import QTensor, QuantizedWeight


def _states(optimizer, p: torch.Tensor) -> list[dict]:
    """The optimizer state entries that belong to ``p`` (its master's too, for the baseline)."""
    out = [optimizer.state.get(p, {})]
    base = getattr(optimizer, "base", None)
    if base is not None:
        out.append(base.state.get(p, {}))
        master = optimizer.state.get(p, {}).get("master")
        if master is not None:
            out.append(base.state.get(master, {}))
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
        if isinstance(p, QuantizedWeight):
            count(p.qtensor.codes, "weights")
            count(p.qtensor.scale, "scales")
            if p.keep_float:
                count(p._cache, "weights")
        else:
            count(p, "weights")
        for st in _states(optimizer, p):
            for k, v in st.items():
                if isinstance(v, QTensor):
                    count(v.codes, "weights")
                    count(v.scale, "scales")
                elif isinstance(v, torch.Tensor):
                    count(v, "master" if k == "master" else "states")
    out["total"] = sum(out.values())
    return out


def peak_step_bytes(model: nn.Module, optimizer, step_fn) -> dict[str, int]:
    """Peak memory of one training step: static bytes + the transient peak measured while
    ``step_fn()`` runs (forward, backward, optimizer step).

    The transient part is read from the PyTorch profiler's CPU allocator accounting
    (``profile_memory=True``: the running total of bytes allocated during the step, freed
    ones subtracted); its maximum over the step is the transient peak (activations, gradients,
    dequantized weights, optimizer temporaries). CPU only; the first call in a process pays the
    profiler's start-up (a few seconds).
    """
    import gc
    import json
    import os
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    static = static_memory_bytes(model, optimizer)["total"]
    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step_fn()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as fh:
            events = json.load(fh)["traceEvents"]
    mem = [e["args"] for e in events if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 0]
    if not mem:
        return {"static": static, "transient_peak": 0, "peak": static}
    start = int(mem[0]["Total Allocated"]) - int(mem[0]["Bytes"])
    transient = max(0, max(int(m["Total Allocated"]) for m in mem) - start)
    return {"static": static, "transient_peak": transient, "peak": static + transient}

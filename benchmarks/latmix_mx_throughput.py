"""MX fake-quant throughput and quantized tiny-LM forward cost (JSON out).

Measures, on one CPU thread by default:

* ``mx_fake_quant`` (the hot path: bit-exact OCP MX v1.0 RTN) vs the stored-code path of
  ``core.quant`` (``quantize_dequantize``, real codes + E8M0 bytes) and vs a straightforward
  reference written as the microxcaling emulator computes it (float32 ``log2``, per-element private
  exponents), in elements per second, for MXFP4, MXINT4, MXFP8 E4M3 and MXFP6 E2M3;
* torchao's ``MXTensor.to_mx`` when torchao is importable (it is not a dependency; skipped
  otherwise, and the JSON says so);
* the forward time of the tiny LM of the reproduction: FP vs W4A4 MXFP4 with the folded LATMiX
  transforms (online ``x A + b`` included) vs W4A4 RTN-MX, and their ratio (target <= 2x).

Usage::

    PYTHONPATH=src python benchmarks/latmix_mx_throughput.py --out /tmp/latmix_bench.json
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import time

import torch

from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.quant import quantize_dequantize
from icml26.core.quant.mx import mx_elem, mx_fake_quant, mx_spec, mx_spec_emax
from icml26.papers.latmix import LatmixConfig, quantize_


def reference_mx(x: torch.Tensor, name: str) -> torch.Tensor:
    """A straightforward MX quantize-dequantize (the emulator's way: log2 / floor / pow)."""
    f = mx_elem(name)
    emax = mx_spec_emax(name)
    blocks = x.reshape(-1, 32)
    amax = blocks.abs().amax(1, keepdim=True)
    shared = (torch.floor(torch.log2(amax + (amax == 0).float() * 2.0 ** -126)) - emax).clamp(min=-127)
    a = blocks / 2.0 ** shared
    if f.is_int:
        frac = 2.0 ** (f.bits - 2)
        q = torch.round(a * frac).clamp(-(2 ** (f.bits - 1) - 1), 2 ** (f.bits - 1) - 1) / frac
    else:
        priv = torch.floor(torch.log2(a.abs() + (a == 0).float())).clamp(min=f.emin)
        step = 2.0 ** (priv - f.mbits)
        q = (torch.round(a / step) * step).clamp(-f.max_normal, f.max_normal)
    return (q * 2.0 ** shared).reshape(x.shape)


def _rate(fn, n: int, reps: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return n * reps / (time.perf_counter() - t)


def _torchao_rate(x: torch.Tensor, name: str, reps: int) -> float | None:
    try:
        from torchao.prototype.mx_formats.mx_tensor import MXTensor  # noqa: PLC0415
    except Exception:  # noqa: BLE001 - optional oracle
        return None
    dtypes = {"mxfp4": torch.float4_e2m1fn_x2 if hasattr(torch, "float4_e2m1fn_x2") else None,
              "mxfp8_e4m3": torch.float8_e4m3fn}
    dt = dtypes.get(name)
    if dt is None:
        return None
    try:
        return _rate(lambda: MXTensor.to_mx(x, dt, 32).to_dtype(torch.float32), x.numel(), reps)
    except Exception:  # noqa: BLE001
        return None


def bench_fake_quant(rows: int, cols: int, reps: int) -> dict:
    torch.manual_seed(0)
    x = torch.randn(rows, cols)
    out = {}
    for name in ("mxfp4", "mxint4", "mxfp8_e4m3", "mxfp6_e2m3"):
        ours = mx_fake_quant(x, name)
        assert torch.equal(ours, quantize_dequantize(x, mx_spec(name)))
        out[name] = {
            "fast_melem_per_s": _rate(lambda n=name: mx_fake_quant(x, n), x.numel(), reps) / 1e6,
            "stored_codes_melem_per_s": _rate(lambda n=name: quantize_dequantize(x, mx_spec(n)),
                                              x.numel(), max(1, reps // 3)) / 1e6,
            "reference_melem_per_s": _rate(lambda n=name: reference_mx(x, n), x.numel(), reps) / 1e6,
            "reference_matches": bool(torch.equal(reference_mx(x, name), ours)),
            "torchao_melem_per_s": (lambda r: None if r is None else r / 1e6)(_torchao_rate(x, name, reps)),
        }
    return out


def bench_forward(d: int, n_layer: int, batch: int, T: int, reps: int) -> dict:
    torch.manual_seed(0)
    model = TinyCausalLM(LMConfig(vocab_size=96, block_size=T, n_layer=n_layer, n_head=4, n_embd=d,
                                  norm="rmsnorm")).eval()
    idx = torch.randint(0, 96, (batch, T))
    calib = torch.randint(0, 96, (8, T))
    rtn = copy.deepcopy(model)
    quantize_(rtn, LatmixConfig(transform="identity"))
    lat = copy.deepcopy(model)
    quantize_(lat, LatmixConfig(transform="latmix", steps=2, batch_size=2), calib)
    with torch.no_grad():
        t_fp = 1.0 / _rate(lambda: model(idx), 1, reps)
        t_rtn = 1.0 / _rate(lambda: rtn(idx), 1, reps)
        t_lat = 1.0 / _rate(lambda: lat(idx), 1, reps)
    return {"model": {"n_embd": d, "n_layer": n_layer, "batch": batch, "T": T},
            "fp_ms": 1e3 * t_fp, "rtn_mxfp4_ms": 1e3 * t_rtn, "latmix_mxfp4_ms": 1e3 * t_lat,
            "rtn_over_fp": t_rtn / t_fp, "latmix_over_fp": t_lat / t_fp}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=str, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    res = {
        "benchmark": "latmix_mx_throughput",
        "threads": args.threads,
        "torch": torch.__version__,
        "platform": platform.platform(),
        "fake_quant": bench_fake_quant(args.rows, args.cols, args.reps),
        "forward_d64": bench_forward(64, 2, 16, 64, args.reps),
        "forward_d128": bench_forward(128, 2, 16, 64, args.reps),
        "targets": {"mxfp4_fast_melem_per_s": 100.0, "quantized_forward_over_fp": 2.0},
    }
    res["torchao_available"] = any(v["torchao_melem_per_s"] is not None for v in res["fake_quant"].values())
    text = json.dumps(res, indent=2)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    print(text)
    return res


if __name__ == "__main__":
    main()

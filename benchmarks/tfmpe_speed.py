"""TFMPE training and sampling speed vs sbi's FMPE on the hierarchical Gaussian task (one core).

Same data (M = 5 sites, D = 2: 12 parameters, 10 observations), similar network sizes (printed
as parameter counts). Training: seconds per epoch of ``n_sims`` simulations at batch 200 (TFMPE:
``n_sims / 200`` steps of the library's ``train``; sbi: ``max_num_epochs`` epochs of
``FMPE.train``, whose epoch also scores a validation split). Sampling: posterior draws per second
for one observation (TFMPE: midpoint with ``steps`` steps, and also half as many; sbi: its
default ODE sampler). Rates are given per wall second and per CPU second of this process (the
second is the one-core figure on a shared machine). Targets from the issues: TFMPE epoch time
<= 1.5x sbi's; sampling within 1.5x of sbi's draws per CPU second (issue 48), i.e.
``sbi_draws_per_cpu_s / tfmpe_draws_per_cpu_s <= 1.5`` at the midpoint x ``steps`` sampler.

Prints JSON; ``--out FILE`` also writes it. Run: python benchmarks/tfmpe_speed.py
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import torch


def main(n_sims: int = 2000, epochs: int = 3, draws: int = 10_000, steps: int = 8,
         latent: int = 32) -> dict:
    from icml26.papers.tfmpe import TFMPE, FlatSBI, HierarchicalGaussianLinear, flatten

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    sim = HierarchicalGaussianLinear()
    m = 5
    gen = torch.Generator().manual_seed(0)
    th = sim.prior(n_sims, m, gen)
    x = sim.simulate(th, gen)
    bs = 200
    kw = dict(latent_dim=latent, n_layers=1, n_heads=2, n_ff=2, label_dim=8, pos_dim=4,
              func_dim=4, dropout=0.0)
    est = TFMPE(sim.prior, local=("l", "y"), model_kwargs=kw)
    est.append_simulations(th, x)
    steps_per_epoch = n_sims // bs
    t0, c0 = time.perf_counter(), time.process_time()
    est.train(steps=epochs * steps_per_epoch, batch_size=bs)
    tf_epoch = (time.perf_counter() - t0) / epochs
    tf_epoch_cpu = (time.process_time() - c0) / epochs
    n_tf = sum(p.numel() for p in est.model.parameters())

    flat = FlatSBI("fmpe", sim.flat_prior(m), hidden=64, layers=3)
    t0, c0 = time.perf_counter(), time.process_time()
    flat.fit(flatten(th, ["g", "l"]), flatten(x, ["y"]), steps=epochs * steps_per_epoch,
             batch_size=bs, val_frac=0.1)
    sbi_epoch = (time.perf_counter() - t0) / max(1, flat.epochs_run)
    sbi_epoch_cpu = (time.process_time() - c0) / max(1, flat.epochs_run)
    n_sbi = sum(p.numel() for p in flat.estimator.parameters())

    y_o = x["y"][:1]

    def rate(fn) -> tuple[float, float]:
        fn(100)
        t0, c0 = time.perf_counter(), time.process_time()
        fn(draws)
        return draws / (time.perf_counter() - t0), draws / (time.process_time() - c0)

    tf_rates = {f"midpoint x {k}": rate(lambda n, k=k: est.sample(n, {"y": y_o[0]}, steps=k))
                for k in (steps, steps // 2)}
    sbi_rate, sbi_rate_cpu = rate(lambda n: flat.sample_batched(n, y_o.reshape(1, -1)))
    main_rate_cpu = tf_rates[f"midpoint x {steps}"][1]
    out = {"task": "hier_gaussian_linear M=5 D=2", "n_sims": n_sims, "batch_size": bs,
           "tfmpe": {"params": n_tf, "epoch_s": tf_epoch, "epoch_cpu_s": tf_epoch_cpu,
                     "draws_per_s": {k: v[0] for k, v in tf_rates.items()},
                     "draws_per_cpu_s": {k: v[1] for k, v in tf_rates.items()}},
           "sbi_fmpe": {"params": n_sbi, "epoch_s": sbi_epoch, "epoch_cpu_s": sbi_epoch_cpu,
                        "draws_per_s": sbi_rate, "draws_per_cpu_s": sbi_rate_cpu},
           "epoch_time_ratio": tf_epoch / sbi_epoch,
           "epoch_cpu_time_ratio": tf_epoch_cpu / sbi_epoch_cpu,
           "sampling_cpu_rate_ratio_sbi_over_tfmpe": sbi_rate_cpu / main_rate_cpu,
           "targets": {"epoch_cpu_time_ratio<=1.5": tf_epoch_cpu / sbi_epoch_cpu <= 1.5,
                       f"sbi/tfmpe draws per cpu-s <= 1.5 (midpoint x {steps})":
                           sbi_rate_cpu / main_rate_cpu <= 1.5}}
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--n-sims", type=int, default=2000)
    args = ap.parse_args()
    res = main(n_sims=args.n_sims)
    text = json.dumps(res, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")

"""LATMiX reproduction: a tiny char LM, W4A4 MX post-training quantization, seven arms.

One seed = (1) train a tiny pre-norm char LM (RMSNorm) on the packaged tales corpus
(:func:`icml26.core.lm.data.corpus_text`; the same bytes on every machine), (2) inject function-preserving outlier channels
(:func:`inject_outliers`; the "natural" model without them is a second condition in the full
profile), (3) for each MX format (MXFP4 and MXINT4 W4A4, MXFP8 E4M3 W8A8) quantize copies of the
same model with every arm through :func:`quantize_`:

* ``rtn``: identity transform (RTN-MX);
* ``hadamard``: global random Hadamard (QuaRot-like), ``block_hadamard``: 32-block Hadamard
  (MR-GPTQ-like transform, without GPTQ);
* ``smoothquant``: per-channel scaling from calibration statistics (SmoothQuant-style), its
  migration strength chosen on the validation split from {off, 0.5, 0.8};
* ``rotation``: a learned rotation (Cayley, SpinQuant-like) trained with the same loss, data,
  steps and tuning grid as LATMiX;
* ``latmix``: learned affine (LU + bias), MX quantizers in the loop, KL distillation + volume
  regulariser;
* ``mx_unaware``: the same learned affine trained with per-tensor INT4 quantizers (MX-unaware),
  evaluated under MX.

Every learned arm starts from the same global Hadamard, sees the same calibration windows and the
same number of steps and minibatch size, and has its learning rate chosen on a validation split
from the same grid, which contains the "off" setting (lr = 0: the starting Hadamard). The grid is
scored under MXFP4; the chosen lr is reused for the other formats. Test metrics: nats/char on a
held-out test split and 4-way likelihood-ranking probe accuracy. The MX error bound is evaluated at
every site for every arm (:func:`mx_bound_terms`).
"""

from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats

from icml26.core.lm.data import char_corpus, corpus_text
from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.lm.train import TrainConfig, train_lm
from icml26.core.progress import phase
from icml26.harness import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Decision,
    ExperimentConfig,
    SeedOutput,
    paired_improvement,
    per_regime,
)
from icml26.harness.claims import ClaimArms, Regime, SubstrateCheck, mean_se
from icml26.harness.pins import TRAINING_TOLERANCE
from icml26.harness.plots import save_figure
from icml26.harness.tuning import TuningSpec, tune_arms

from .api import IllConditionedTransform, LatmixConfig, MXLinear, find_sites, quantize_
from .bound import mx_bound_terms
from .evaluate import make_probes, nats_per_token, probe_metrics
from .outliers import inject_outliers

FIXED_ARMS = ("rtn", "hadamard", "block_hadamard", "smoothquant")
SQ_GRID = (None, 0.5, 0.8)  # SmoothQuant migration strength; None = off (identity, RTN-MX)
LEARNED_ARMS = ("rotation", "latmix", "mx_unaware")
ARMS = FIXED_ARMS + LEARNED_ARMS
LOW_BIT = ("mxfp4", "mxint4")  # the paper's low-bit regime: the claims are judged here
# Spearman threshold of the bound claim (brief sec. 5.6 check 6), fixed before any run
RHO_MIN = 0.7
# substrate gate (CLAIMS.md rule 8, issue 40): the quantized activations carry outlier channels.
# Per site: the largest channel's max |x| over the median channel's; the model's value is the median
# over sites. LLM outlier channels are an order of magnitude above the typical channel (our choice of
# threshold, fixed before any run with it).
OUTLIER_RATIO_MIN = 10.0



# float32 training: pinned smoke numbers carry the cross-CPU tolerance (harness.pins).
PIN_TOLERANCE = TRAINING_TOLERANCE

@dataclass(frozen=True)
class Config(ExperimentConfig):
    # tiny LM (laptop-scale: the paper uses Llama-class models)
    text_chars: int = 300_000
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4
    block_size: int = 64
    # 1000 steps: on the tales corpus the d=64 LM is at 1.5-1.7 nats/char after 200 steps (barely
    # past character statistics), 0.65 after 1000 and 0.59 after 3000 (seeds 0-2, measured before
    # the switch of corpus; the claims then read a trained model)
    lm_steps: int = 1000
    lm_batch: int = 16
    lm_lr: float = 1e-2
    # outliers (function-preserving)
    conditions: tuple[str, ...] = ("injected",)
    outlier_frac: float = 0.03
    outlier_alpha: float = 32.0
    # quantization regimes
    formats: tuple[str, ...] = ("mxfp4", "mxint4", "mxfp8_e4m3")
    # calibration, equal for every learned arm
    calib_windows: int = 32
    # calibration steps: a dimension of every learned arm's tuning grid (issue 46: MXFP4's verdict
    # flipped between 30 and 150 steps), chosen on the validation split with the lr
    calib_steps_grid: tuple[int, ...] = (30, 90)
    calib_batch: int = 4
    lr_grid: tuple[float, ...] = (0.0, 5e-4, 2e-3)
    lambda_vol: float = 1e-2
    param: str = "lu"
    # evaluation
    val_windows: int = 24
    test_windows: int = 64
    probe_items: int = 120
    probe_ctx: int = 32
    probe_cont: int = 8
    bound_tokens: int = 256

    BOUNDS = {"n_layer": (1, 12), "n_embd": (32, 1024), "n_head": (1, 16), "block_size": (16, 512),
              "lm_steps": (1, None), "lm_batch": (1, None), "lm_lr": (0, 1), "outlier_frac": (0, 1),
              "outlier_alpha": (1, 1e4), "calib_windows": (1, None), "calib_steps_grid": (1, None),
              "calib_batch": (1, None), "lr_grid": (0, 1), "lambda_vol": (0, None),
              "val_windows": (1, None), "test_windows": (1, None), "probe_items": (10, None),
              "probe_ctx": (1, None), "probe_cont": (1, None), "bound_tokens": (32, None),
              "text_chars": (20_000, None)}

    def extra_checks(self) -> None:
        if self.n_embd & (self.n_embd - 1) or self.n_embd % 32:
            self.out_of_range("n_embd", "a power of two >= 32 (Hadamard sizes, MX blocks of 32)")
        if self.n_embd % self.n_head:
            self.out_of_range("n_head", "a divisor of n_embd")
        if not set(LOW_BIT) <= set(self.formats) or not set(self.formats) <= {
                "mxfp4", "mxint4", "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxint8"}:
            self.out_of_range("formats", "MX formats including mxfp4 and mxint4")
        if "injected" not in self.conditions or not set(self.conditions) <= {"injected", "natural"}:
            self.out_of_range("conditions", "'injected' and optionally 'natural'")
        if 0.0 not in self.lr_grid or len(self.lr_grid) < 2:
            self.out_of_range("lr_grid", "at least two learning rates, one of them 0 (the 'off' setting)")
        if self.param not in ("lu", "qr"):
            self.out_of_range("param", "'lu' or 'qr'")
        if not self.calib_steps_grid or len(set(self.calib_steps_grid)) != len(self.calib_steps_grid):
            self.out_of_range("calib_steps_grid", "a non-empty tuple of distinct step counts")
        if self.probe_ctx + self.probe_cont > self.block_size + 1:
            self.out_of_range("probe_ctx", "probe_ctx + probe_cont <= block_size + 1")

    @classmethod
    def smoke(cls) -> Config:
        return cls(seeds=(0,), text_chars=60_000, n_layer=1, n_embd=32, n_head=2, block_size=32,
                   lm_steps=40, lm_batch=8, formats=("mxfp4", "mxint4"), calib_windows=8, lr_grid=(0.0, 2e-3),
                   calib_steps_grid=(3,), calib_batch=2, val_windows=4, test_windows=8, probe_items=40,
                   probe_ctx=16, probe_cont=4, bound_tokens=64)

    @classmethod
    def quick(cls) -> Config:
        # the steps grid (30, 90) with two learning rates ("off" and 2e-3) keeps 3 seeds within
        # the quick budget (issue 54: each grid point is a full calibration run); the full
        # profile tunes over all three learning rates
        return cls(seeds=(0, 1, 2), lr_grid=(0.0, 2e-3))

    @classmethod
    def full(cls) -> Config:
        # d=128 model, 3x the LM steps, both conditions, 100 or 300 calibration steps of 8 windows
        return cls(seeds=(0, 1, 2), n_embd=128, lm_steps=600, conditions=("injected", "natural"),
                   calib_windows=64, calib_steps_grid=(100, 300), calib_batch=8, val_windows=48,
                   test_windows=128, probe_items=400)


@functools.lru_cache(maxsize=2)
def _corpus(n_chars: int):
    # the shipped corpus (checked against its sha256), not the interpreter's own files: the
    # CPython docstrings used before depended on the Python version installed
    return char_corpus(corpus_text(n_chars, source="tales"), val_fraction=0.2)


@functools.lru_cache(maxsize=4)
def _trained_lm(config: Config, seed: int) -> tuple[TinyCausalLM, float]:
    """The FP model of a seed (trained once per seed and process; cached for the formats)."""
    data = _corpus(config.text_chars)
    torch.manual_seed(seed)
    model = TinyCausalLM(LMConfig(vocab_size=data.vocab_size, block_size=config.block_size,
                                  n_layer=config.n_layer, n_head=config.n_head, n_embd=config.n_embd,
                                  norm="rmsnorm"))
    opt = torch.optim.AdamW(model.parameters(), lr=config.lm_lr, betas=(0.9, 0.95), weight_decay=0.0)
    res = train_lm(model, opt, data, TrainConfig(steps=config.lm_steps, batch_size=config.lm_batch,
                                                 block_size=config.block_size, warmup_steps=20,
                                                 eval_windows=16, seed=seed))
    model.eval()
    return model, res.final_val_loss


def _splits(config: Config, seed: int):
    data = _corpus(config.text_chars)
    held = data.val
    half = len(held) // 2
    val, test = held[:half], held[half:]
    g = torch.Generator().manual_seed(50_000 + seed)
    starts = torch.randint(0, len(data.train) - config.block_size - 1, (config.calib_windows,), generator=g)
    calib = torch.stack([data.train[s:s + config.block_size] for s in starts.tolist()])
    probes = make_probes(test, config.probe_items, config.probe_ctx, config.probe_cont, seed=seed)
    return calib, val, test, probes


def _arm_config(arm: str, fmt: str, lr: float, config: Config, seed: int,
                alpha: float | None = 0.5, steps: int | None = None) -> LatmixConfig:
    steps = config.calib_steps_grid[0] if steps is None else steps
    common = dict(weight_fmt=fmt, act_fmt=fmt, seed=seed, steps=steps,
                  batch_size=config.calib_batch, lambda_vol=config.lambda_vol)
    if arm == "rtn" or (arm == "smoothquant" and alpha is None):
        return LatmixConfig(transform="identity", **common)
    if arm == "smoothquant":
        return LatmixConfig(transform="smoothquant", smooth_alpha=alpha, **common)
    if arm in ("hadamard", "block_hadamard"):
        return LatmixConfig(transform=arm, **common)
    # learned arms: lr on the matrices and on the bias scale together (lr_bias = 5 lr, brief 2.6)
    learned = dict(lr=lr, lr_bias=5 * lr, **common)
    if arm == "rotation":
        return LatmixConfig(transform="rotation", **learned)
    if arm == "latmix":
        return LatmixConfig(transform="latmix", param=config.param, **learned)
    if arm == "mx_unaware":
        return LatmixConfig(transform="latmix", param=config.param, train_act_fmt="int4_tensor",
                            train_weight_fmt="int4_tensor", **learned)
    raise ValueError(arm)


def _quantized(base: TinyCausalLM, arm: str, fmt: str, lr: float, config: Config, seed: int,
               calib: torch.Tensor, alpha: float | None = 0.5, steps: int | None = None):
    model = copy.deepcopy(base)
    report = quantize_(model, _arm_config(arm, fmt, lr, config, seed, alpha, steps), calib)
    return model, report


def _reformat(model: TinyCausalLM, fmt: str) -> TinyCausalLM:
    """A copy of a folded model whose weights are re-quantized under another format (same A, b)."""
    m = copy.deepcopy(model)
    for mod in m.modules():
        if isinstance(mod, MXLinear):
            a, b = mod.a_buf, mod.b_buf
            w = mod.w_fp if a is None else mod.w_fp @ torch.linalg.inv(a.double()).T.float()
            c = mod.c_fp if a is None else mod.c_fp - w @ b
            mod.set_formats(fmt, fmt)
            mod.register_buffer("wq", mod._qw(w))
            mod.register_buffer("cq", c)
    return m


def _site_inputs(model: TinyCausalLM, idx: torch.Tensor, n_tokens: int) -> dict[str, torch.Tensor]:
    """FP inputs of every site (first ``n_tokens`` tokens), captured with forward hooks."""
    sites = find_sites(model)
    acts: dict[str, torch.Tensor] = {}
    hooks = [lin.register_forward_hook(lambda mod, inp, out, p=path: acts.__setitem__(p, inp[0].detach()))
             for path, (_, _, lin) in sites.items()]
    with torch.no_grad():
        model(idx)
    for h in hooks:
        h.remove()
    return {p: a.reshape(-1, a.shape[-1])[:n_tokens] for p, a in acts.items()}


def outlier_ratio(inputs: dict[str, torch.Tensor]) -> float:
    """Median over sites of max_j / median_j of the channel magnitudes ``max_t |x_tj|`` of the
    sites' inputs: about 1-3 for a model without outlier channels, >> 10 with LLM-like ones."""
    ratios = []
    for x in inputs.values():
        chan = x.abs().amax(dim=0).double()
        ratios.append(float(chan.max() / chan.median().clamp_min(1e-12)))
    return float(np.median(ratios))


def _bound_rows(qmodel: TinyCausalLM, inputs: dict[str, torch.Tensor], fmt: str) -> dict[str, dict]:
    rows = {}
    for path, x in inputs.items():
        mod = qmodel.get_submodule(path)
        rows[path] = mx_bound_terms(x, mod.a_buf, mod.b_buf, mod.w_fp, fmt, fmt)
    return rows


def _spearman_over_arms(bounds: dict[str, dict[str, dict]], key: str) -> float:
    """Mean over (format, site) of the Spearman correlation across arms of ``key`` vs measured."""
    rhos = []
    fmts = {f for arm in bounds.values() for f in arm}
    for fmt in sorted(fmts):
        sites = next(iter(bounds.values()))[fmt].keys()
        for site in sites:
            b = [bounds[a][fmt][site][key] for a in bounds]
            m = [bounds[a][fmt][site]["measured"] for a in bounds]
            rho = stats.spearmanr(b, m).statistic
            if np.isfinite(rho):
                rhos.append(float(rho))
    return float(np.mean(rhos)) if rhos else math.nan


def _run_condition(config: Config, seed: int, condition: str, metrics: dict, extras: dict, tuning: dict):
    with phase("train_lm"):
        base, fp_val_loss = _trained_lm(config, seed)
    with phase("data"):
        base = copy.deepcopy(base)
        calib, val, test, (probe_seqs, probe_ans) = _splits(config, seed)
        bs = config.block_size
        fp_before = nats_per_token(base, test, bs, config.test_windows)
        # the trained model's own (natural) outliers, measured before any injection, in every condition
        natural_ratio = outlier_ratio(_site_inputs(base, calib[:8], config.bound_tokens))
        if condition == "injected":
            inject_outliers(base, config.outlier_frac, config.outlier_alpha, seed=seed)
        fp_after = nats_per_token(base, test, bs, config.test_windows)
        pre = "" if condition == "injected" else "nat_"
        metrics.setdefault("fp", {})["nat_outlier_ratio"] = natural_ratio
        metrics["fp"][f"{pre}nats"] = fp_after
        metrics["fp"][f"{pre}acc"], metrics["fp"][f"{pre}pacc"] = probe_metrics(base, probe_seqs, probe_ans,
                                                                              config.probe_cont)
        extras.setdefault("fp_function_preserved", {})[condition] = abs(fp_after - fp_before)
        extras["fp_train_val_loss"] = fp_val_loss
        inputs = _site_inputs(base, calib[:8], config.bound_tokens)
        if condition == "injected":
            metrics["fp"]["outlier_ratio"] = outlier_ratio(inputs)

    with phase("tune"):
        # equal-effort tuning of the learned arms on the validation split under MXFP4
        main = "mxfp4"
        fitted: dict[tuple[str, float, int], tuple] = {}

        refused = extras.setdefault("refused_folds", {}).setdefault(condition, [])

        def scorer(arm: str):
            def validate(p):
                try:
                    model, rep = _quantized(base, arm, main, p["lr"], config, seed, calib, steps=p["steps"])
                except IllConditionedTransform as e:
                    # the library refuses to fold it (float32 fold error ~ cond * 2^-24): this grid
                    # point is unusable, scored +inf so the tuner never picks it ("off" always folds)
                    refused.append({"arm": arm, "fmt": main, "lr": p["lr"], "steps": p["steps"],
                                    "transform": e.key, "condition": e.condition})
                    return math.inf
                fitted[(arm, p["lr"], p["steps"])] = (model, rep)
                return nats_per_token(model, val, bs, config.val_windows)
            return validate

        # the grid: every (lr, steps) pair, the "off" setting (lr = 0: no training, whatever the
        # steps) once; the same grid and budget for every learned arm
        grid = [{"lr": 0.0, "steps": min(config.calib_steps_grid)}] + [
            {"lr": lr, "steps": st} for lr in config.lr_grid if lr > 0 for st in config.calib_steps_grid]
        budget = {"calib_windows": config.calib_windows, "steps": tuple(config.calib_steps_grid),
                  "batch": config.calib_batch}
        tuned = tune_arms({arm: TuningSpec(grid=grid, validate=scorer(arm), maximize=False, budget=budget)
                           for arm in LEARNED_ARMS})
        # SmoothQuant's knob (no training: its budget is the calibration statistics only)
        def sq_validate(p):
            model, _ = _quantized(base, "smoothquant", main, 0.0, config, seed, calib, alpha=p["alpha"])
            return nats_per_token(model, val, bs, config.val_windows)

        tuned.update(tune_arms({"smoothquant": TuningSpec(
            grid=[{"alpha": a} for a in SQ_GRID], validate=sq_validate, maximize=False,
            budget={"calib_windows": config.calib_windows, "steps": 0, "batch": 0})}))
        if condition == "injected":
            tuning.update(tuned)
        extras.setdefault("chosen_lr", {})[condition] = {a: t.chosen.get("lr", t.chosen.get("alpha"))
                                                         for a, t in tuned.items()}
        extras.setdefault("chosen_steps", {})[condition] = {a: tuned[a].chosen["steps"] for a in LEARNED_ARMS}

    with phase("eval"):
        bounds: dict[str, dict[str, dict]] = {a: {} for a in ARMS}
        diag: dict[str, dict] = {}
        for fmt in config.formats:
            for arm in ARMS:
                if arm in LEARNED_ARMS:
                    lr, st = tuned[arm].chosen["lr"], tuned[arm].chosen["steps"]
                    if fmt == main:
                        model, rep = fitted[(arm, lr, st)]
                    elif arm == "mx_unaware":  # format-independent training: reuse the transform
                        model, rep = _reformat(fitted[(arm, lr, st)][0], fmt), fitted[(arm, lr, st)][1]
                    else:
                        try:
                            model, rep = _quantized(base, arm, fmt, lr, config, seed, calib, steps=st)
                        except IllConditionedTransform as e:
                            # refused at this format with the setting chosen under MXFP4: the arm
                            # falls back to its start (lr 0, the Hadamard), as a user would
                            refused.append({"arm": arm, "fmt": fmt, "lr": lr, "steps": st,
                                            "transform": e.key, "condition": e.condition,
                                            "fallback": "lr 0"})
                            model, rep = _quantized(base, arm, fmt, 0.0, config, seed, calib, steps=st)
                else:
                    alpha = tuned["smoothquant"].chosen["alpha"] if arm == "smoothquant" else 0.5
                    model, rep = _quantized(base, arm, fmt, 0.0, config, seed, calib, alpha=alpha)
                metrics.setdefault(arm, {})[f"{pre}{fmt}_nats"] = nats_per_token(model, test, bs, config.test_windows)
                metrics[arm][f"{pre}{fmt}_acc"], metrics[arm][f"{pre}{fmt}_pacc"] = probe_metrics(
                    model, probe_seqs, probe_ans, config.probe_cont)
                if fmt in LOW_BIT and condition == "injected":
                    bounds[arm][fmt] = _bound_rows(model, inputs, fmt)
                diag[f"{arm}/{fmt}"] = {"loss_first": rep.losses[0] if rep.losses else None,
                                        "loss_last": rep.losses[-1] if rep.losses else None,
                                        "logabsdet": rep.logabsdet,
                                        "max_condition": max(rep.condition.values(), default=1.0),
                                        "online_flops_per_token": rep.online_flops_per_token}
        extras.setdefault("diagnostics", {})[condition] = diag
        if condition == "injected":
            metrics["bound_mx"] = {"spearman": _spearman_over_arms(bounds, "bound")}
            metrics["bound_tensor"] = {"spearman": _spearman_over_arms(bounds, "bound_tensor")}
            extras["bound_sites"] = {a: {f: {s: {k: round(v, 6) for k, v in r.items()} for s, r in fr.items()}
                                         for f, fr in ab.items()} for a, ab in bounds.items()}


def run(config: Config, seed: int) -> SeedOutput:
    metrics: dict[str, dict[str, float]] = {}
    extras: dict = {}
    tuning: dict = {}
    for condition in config.conditions:
        _run_condition(config, seed, condition, metrics, extras, tuning)
    return SeedOutput(metrics=metrics, extras=extras, tuning=tuning)


# ----------------------------------------------------------------------------------------------
# claims (rules fixed before the first run)
# ----------------------------------------------------------------------------------------------


def _best_competitor(metrics, arm: str, competitors: tuple[str, ...], key: str, lower: bool) -> str:
    means = {c: float(np.mean(metrics[c][key])) for c in competitors if c != arm}
    return min(means, key=means.get) if lower else max(means, key=means.get)


def _beats_all(metrics, config, arm: str, kind: str) -> Decision:
    """``arm`` beats the best other transform (RTN, both Hadamards, SmoothQuant, the other learned
    arm of rotation/LATMiX) on paired seeds, per MX format; required in MXFP4 and MXINT4 W4A4 with
    injected outliers; MXFP8 and the natural model are reported as further regimes."""
    lower = kind == "nats"  # "acc" / "pacc": higher is better
    pool = ("rtn", "hadamard", "block_hadamard", "smoothquant", "rotation", "latmix")
    regimes, extra = [], []
    conds = [("", "outliers")] + ([("nat_", "natural")] if f"nat_mxfp4_{kind}" in metrics[arm] else [])
    for pre, cname in conds:
        for fmt in config.formats:
            key = f"{pre}{fmt}_{kind}"
            comp = _best_competitor(metrics, arm, pool, key, lower)
            d = paired_improvement(metrics[arm][key], metrics[comp][key], higher_is_better=not lower,
                                   label=f"{arm} vs {comp}: ")
            name = f"{fmt.upper()} {cname}"
            (regimes if (pre == "" and fmt in LOW_BIT) else extra).append((name, d))
    dec = per_regime(regimes, require="all", label="required: ")
    more = "; ".join(f"{c}: {d.verdict} ({d.ours})" for c, d in extra)
    ours = dec.ours + (f" | reported only: {more}" if more else "")
    evidence = dict(dec.evidence)
    evidence["reported_regimes"] = {c: {"verdict": d.verdict, **d.evidence} for c, d in extra}
    return Decision(dec.verdict, ours, evidence,
                    regimes=dec.regimes + tuple(Regime(f"{c} (reported)", d.verdict, d.ours) for c, d in extra),
                    mde=dec.mde, n=dec.n, uses_se=dec.uses_se)


def _beats_init(metrics, config, arm: str) -> Decision:
    """``arm`` beats the global Hadamard it starts from, test nats, in MXFP4 and MXINT4."""
    regimes = []
    for fmt in LOW_BIT:
        key = f"{fmt}_nats"
        regimes.append((fmt.upper(), paired_improvement(metrics[arm][key], metrics["hadamard"][key],
                                                        higher_is_better=False, label=f"{arm} vs hadamard: ")))
    d = per_regime(regimes, require="all")
    gap = {fmt: float(np.mean(np.asarray(metrics["mx_unaware"][f"{fmt}_nats"])
                              - np.asarray(metrics["latmix"][f"{fmt}_nats"]))) for fmt in LOW_BIT}
    return Decision(d.verdict, d.ours, {**d.evidence, "unaware_minus_latmix_nats": gap}, regimes=d.regimes,
                    mde=d.mde, n=d.n, uses_se=d.uses_se)


def _rho_rule(metrics, config, arm: str) -> Decision:
    vals = metrics[arm]["spearman"]
    mean, se = mean_se(vals)
    ok = mean >= RHO_MIN and (len(vals) < 2 or mean - 2 * se > 0)
    verdict = REPRODUCED if ok else (NOT_REPRODUCED if len(vals) >= 2 or mean < RHO_MIN else INCONCLUSIVE)
    # the distance from the bound the seed mean resolves: 2 s.e. (unmeasurable with one seed)
    mde = 2 * se if len(vals) >= 2 else math.inf
    return Decision(verdict, f"mean Spearman {mean:.3f} ± {se:.2g} (needs >= {RHO_MIN})",
                    {"values": list(map(float, vals)), "mean": mean, "se": se, "rho_min": RHO_MIN},
                    mde=mde, n=len(vals), uses_se=True)


SUBSTRATE = (
    SubstrateCheck("injected_outliers",
                   "outlier channels exist in the model the claims are judged on (after injection): "
                   f"median over sites of the max/median channel magnitude >= {OUTLIER_RATIO_MIN:g}",
                   arm="fp", metric="outlier_ratio", low=OUTLIER_RATIO_MIN),
    SubstrateCheck("natural_outliers",
                   "the trained model has outliers of its own (before injection): median over sites of "
                   f"the max/median channel magnitude >= {OUTLIER_RATIO_MIN:g}; the natural-model "
                   "regimes (full profile, reported only) need it",
                   arm="fp", metric="nat_outlier_ratio", low=OUTLIER_RATIO_MIN),
)

# verdict stability (CLAIMS.md rule 9, issues 40/46: MXFP4 flipped between 30 and 150 calibration
# steps): the steps are a dimension of every learned arm's tuning grid, and the full profile
# re-runs with the grid of the two budgets (30, 150) beside its own (100, 300)
PROTOCOL_KNOBS = {"calib_steps_grid": ((100, 300), (30, 150))}

# declared metrics (issue 52.4): what run() writes per arm; "nat_" = the natural (no injection)
# condition of the full profile; "*" is the MX format (mxfp4, mxint4, mxfp8_e4m3, ...)
METRICS = {
    "fp": ("nats", "acc", "pacc", "outlier_ratio", "nat_outlier_ratio", "nat_nats", "nat_acc",
           "nat_pacc"),
    ARMS: ("mx*_nats", "mx*_acc", "mx*_pacc", "nat_mx*_nats", "nat_mx*_acc", "nat_mx*_pacc"),
    ("bound_mx", "bound_tensor"): ("spearman",),
}

EFFECT_NATS = 0.01  # smallest that matters (≈ 1 % perplexity); the paper's tables are not retrievable
EFFECT_NATS_SOURCE = ("smallest that matters: 0.01 nats/char (about 1% perplexity), our choice; "
                      "the paper's tables are not retrievable")

SCALE = ("laptop-scale: 2-layer d=64 char LM (full: d=128) on the packaged tales corpus, 3% outlier "
         "channels x32 injected function-preservingly, W4A4 MX fake-quant of every block linear "
         "(head and embeddings FP), 3 seeds")

CLAIMS = (
    Claim(
        id="beats_baselines_ppl",
        statement="Under MX low-bit formats LATMiX gives lower perplexity than rotation / Hadamard / "
                  "scaling baselines (QuaRot, block Hadamard, SmoothQuant-style, SpinQuant-style rotation).",
        paper_value="qualitative (WikiText2 perplexity tables; numbers not retrievable, see brief)",
        metric="test nats/char (lower is better)",
        scale=SCALE,
        rule="per format: paired over seeds, the arm's test nats are lower than those of the best other "
             "transform arm (RTN, global Hadamard, block Hadamard, SmoothQuant, and the other of learned "
             "rotation / LATMiX), gap > 2 s.e. and in every seed; required in MXFP4 and MXINT4; MXFP8 (and the "
             "natural model, full profile) reported as further regimes",
        decide=lambda m, c: _beats_all(m, c, "latmix", "nats"),
        control_description="learned rotation (Cayley, SpinQuant-like) with the same loss, data, steps "
                            "and lr grid: the strongest transform without LATMiX's affine (non-orthogonal "
                            "+ bias) mechanism",
        control=lambda m, c: _beats_all(m, c, "rotation", "nats"),
        arms=ClaimArms(method="latmix", baselines=("rtn", "hadamard", "block_hadamard", "smoothquant"),
                       control="rotation"),
        effect=EFFECT_NATS,
        effect_source=EFFECT_NATS_SOURCE,
        gates=("injected_outliers",),
    ),
    Claim(
        id="beats_baselines_acc",
        statement="Under MX low-bit formats LATMiX gives higher zero-shot (likelihood-ranking) accuracy "
                  "than rotation / Hadamard / scaling baselines.",
        paper_value="qualitative (average accuracy over seven zero-shot tasks; numbers not retrievable)",
        metric="likelihood-based 4-way continuation-ranking probe accuracy: mean probability of the "
               "true continuation under the softmax of the choices' summed log-likelihoods (higher is "
               "better; the 0/1 accuracy of the same probes is reported in the metrics as *_acc)",
        scale=SCALE,
        rule="same as beats_baselines_ppl on the likelihood-based probe accuracy",
        decide=lambda m, c: _beats_all(m, c, "latmix", "pacc"),
        control_description="learned rotation with the same budget (as for the perplexity claim)",
        control=lambda m, c: _beats_all(m, c, "rotation", "pacc"),
        arms=ClaimArms(method="latmix", baselines=("rtn", "hadamard", "block_hadamard", "smoothquant"),
                       control="rotation"),
        effect=0.01,
        effect_source="brief §5.6 check 5: LATMiX >= the best baseline + 1 pt of probe accuracy "
                      "(here 0.01 of the likelihood-based accuracy: 120 0/1 probes gave an s.e. of "
                      "about 0.044 per seed, issue 46)",
        gates=("injected_outliers",),
    ),
    Claim(
        id="mx_aware_training",
        statement="Accounting for the MX block structure in training matters: the transform trained with "
                  "MX quantizers in the loop improves on its starting point under MX, an MX-unaware one "
                  "(trained with per-tensor INT4) does not.",
        paper_value="qualitative (ablation against MX-unaware transforms)",
        metric="test nats/char (lower is better)",
        scale=SCALE,
        rule="in MXFP4 and MXINT4: paired over seeds, the arm's test nats are lower than the global "
             "Hadamard it starts from (gap > 2 s.e., every seed)",
        decide=lambda m, c: _beats_init(m, c, "latmix"),
        control_description="the same LU affine + bias, same data/steps/lr grid, trained MX-unaware "
                            "(per-tensor INT4 quantizers in the loop), evaluated under MX",
        control=lambda m, c: _beats_init(m, c, "mx_unaware"),
        arms=ClaimArms(method="latmix", baselines=("hadamard",), control="mx_unaware"),
        effect=EFFECT_NATS,
        effect_source=EFFECT_NATS_SOURCE,
        gates=("injected_outliers",),
    ),
    Claim(
        id="error_bound_tracks",
        statement="The MX error bound (block maxima of the transformed activations/weights and the "
                  "conditioning of the transform) tracks the measured quantization error across transforms.",
        paper_value="qualitative (theory section)",
        metric="Spearman rank correlation across the seven transform arms of bound vs measured layer "
               "output error, averaged over sites and MXFP4/MXINT4 (higher is better)",
        scale=SCALE,
        rule=f"seed-mean Spearman >= {RHO_MIN} and mean - 2 s.e. > 0",
        decide=lambda m, c: _rho_rule(m, c, "bound_mx"),
        control_description="the same bound with every block maximum replaced by the tensor maximum "
                            "(what a per-tensor, MX-unaware analysis gives)",
        control=lambda m, c: _rho_rule(m, c, "bound_tensor"),
        arms=ClaimArms(method="bound_mx", baselines=(), control="bound_tensor"),
        effect=0.1,
        effect_source="smallest that matters: 0.1 in Spearman rho from the 0.7 bound, our choice "
                      "(the paper's bound claim is qualitative)",
        gates=("injected_outliers",),
    ),
)


def plot(config: Config, outputs, outdir):
    from icml26.harness.plots import pyplot

    plt = pyplot()

    paths = []
    arms = ["rtn", "hadamard", "block_hadamard", "smoothquant", "rotation", "mx_unaware", "latmix"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, kind in zip(axes, ("nats", "acc"), strict=True):
        width = 0.8 / len(config.formats)
        for j, fmt in enumerate(config.formats):
            vals = [[o.metrics[a][f"{fmt}_{kind}"] for o in outputs] for a in arms]
            ax.bar(np.arange(len(arms)) + j * width, [np.mean(v) for v in vals], width,
                   yerr=[np.std(v) / math.sqrt(len(v)) if len(v) > 1 else 0 for v in vals],
                   capsize=2, label=fmt)
        fpv = np.mean([o.metrics["fp"][kind] for o in outputs])
        ax.axhline(fpv, color="k", lw=1, ls="--", label="FP")
        ax.set_xticks(np.arange(len(arms)) + 0.4 - width / 2, arms, rotation=30, fontsize=7)
        ax.set_ylabel("test nats/char" if kind == "nats" else "probe accuracy")
        if kind == "nats":
            lo = min(fpv, min(np.mean([o.metrics[a][f"{f}_nats"] for o in outputs])
                              for a in arms for f in config.formats))
            ax.set_ylim(lo - 0.05, None)
        ax.legend(fontsize=6)
    axes[0].set_title("W4A4 / W8A8 MX, injected outliers")
    paths.append(save_figure(fig, outdir / "arms.png", dpi=120))
    # bound vs measured at every site (seed 0)
    b = outputs[0].extras.get("bound_sites", {})
    if b:
        fig, ax = plt.subplots(figsize=(4.5, 3.4))
        for arm in arms:
            xs, ys = [], []
            for _fmt, sites in b.get(arm, {}).items():
                for r in sites.values():
                    xs.append(r["bound"])
                    ys.append(r["measured"])
            ax.loglog(xs, ys, "o", ms=3, label=arm)
        ax.set_xlabel("MX bound (block maxima, conditioning)")
        ax.set_ylabel("measured ‖output error‖_F")
        ax.set_title("Bound vs error per site (seed 0)")
        ax.legend(fontsize=6)
        paths.append(save_figure(fig, outdir / "bound.png", dpi=120))
    return paths


__all__ = ["ARMS", "CLAIMS", "Config", "INCONCLUSIVE", "plot", "run"]

"""Reproduction: naive adaptive reasoner vs verbosity-augmented SFT + GRPO on costume arithmetic.

All arms start from the same seed, data and tiny model, and from one shared **base stage** (SFT on
concise problems only, no costume seen: the analogue of the pretrained model the paper fine-tunes;
computed once per seed, issue 54). Stage 1 then continues it on the arm's own data:

- ``b0_sft``: naive SFT (complex problems concise or verbose; simple problems verbose at the
  natural rate ``naive_simple_verbose_frac`` = 0.1, concise otherwise, with the same targets);
- ``b0``: naive SFT + the same GRPO as the method (R_adapt) -- the baseline B0;
- ``always_think`` / ``never_think``: B0 with the mode token forced (B1 / B2);
- ``m1``: augmented SFT only (stage 1); ``m2``: augmented SFT + GRPO with R_adapt (the method);
- ``a1_thinkless`` / ``a2_oracle``: M2 with the Thinkless / oracle-label reward (ablations, TRL
  estimator);
- ``ctrl_naive_acc`` / ``ctrl_aug_acc``: the same GRPO as B0 / M2 (AdaptThink estimator, balanced
  forcing, same reference baseline) with a correctness-only reward, acc - Rbar_ref(x), i.e.
  R_adapt with delta = 0 (negative controls: stage 2 without the efficiency incentive).

``a1_thinkless``, ``a2_oracle`` and ``ctrl_naive_acc`` are read by no claim: ``ablations=False``
(quick) skips them, ``full`` runs them. ``m2_trl`` (``estimator_ablation=True``; full, and
``benchmarks/adaptive_reasoning_sampled_drop.py`` on the quick substrate) is M2 with TRL's estimator
in place of AdaptThink's: the sampled-accuracy report at T = 0.6, no claim.

The arms' stages are independent: stage 1 (per SFT dataset) and stage 2 (per arm) run in up to
``workers`` forked processes (issue 54; ``harness.parallel.fork_map``, serial inside a ``--seed-jobs``
seed worker), with the same numbers as in process (tested).

Stage-2 prompts follow the natural mix (simple-concise, complex-concise, complex-verbose; no
verbose-simple prompts) for every arm, so robustness can only come from stage 1 or from the reward
generalising. Evaluation is on held-out test problems, ``n_eval`` per cell, whose verbose costumes
use held-out filler words and a held-out structure; greedy decoding is judged, sampled decoding
(T = 0.6 and 1.0) is reported next to it.

Which stage each claim tests: ``naive_misled`` the failure (B0); ``augmentation_closes_gap``
stage 1 (M1 vs naive SFT); ``closes_gap`` and ``efficiency`` the two stages together, credited to
stage 2 only where augmented SFT + correctness-only GRPO (``ctrl_aug_acc``) fails the rule;
``grpo_adds_value`` stage 2 alone (M2 vs M1).
"""

from __future__ import annotations

import copy
import io
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.progress import phase
from icml26.harness import (
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    ClaimArms,
    Decision,
    ExperimentConfig,
    SeedOutput,
    SubstrateCheck,
    mean_se,
)
from icml26.harness.parallel import fork_map
from icml26.harness.plots import save_figure

from .rewards import adaptthink_reward, oracle_mode_reward, thinkless_reward
from .task import CELLS, CostumeArithmetic, make_tokenizer
from .trainer import (
    AdaptiveReasonerConfig,
    evaluate_modes,
    reference_think_accuracy,
    train_adaptive_reasoner,
)


@dataclass(frozen=True)
class Config(ExperimentConfig):
    n_embd: int = 64
    n_layer: int = 2
    n_head: int = 4
    sft_examples: int = 20000
    sft_base_steps: int = 300
    sft_steps: int = 200
    naive_simple_verbose_frac: float = 0.1
    sft_batch_size: int = 64
    grpo_steps: int = 40
    grpo_batch_size: int = 8
    num_generations: int = 8
    grpo_learning_rate: float = 1e-4
    delta: float = 0.05
    n_eval: int = 150
    n_eval_sampled: int = 80
    ref_samples: int = 8
    ablations: bool = True
    estimator_ablation: bool = False  # also M2 with TRL's estimator (``m2_trl``; the T = 0.6 report)
    workers: int = 2  # processes for the arms' independent stages (1: in process); same numbers either way

    BOUNDS = {"workers": (1, 64), "sft_base_steps": (0, 10**6), "naive_simple_verbose_frac": (0.0, 1.0), "n_eval": (1, 100000), "n_eval_sampled": (0, 100000), "ref_samples": (1, 64),
              "num_generations": (2, 64), "sft_examples": (2, 10**7)}

    def extra_checks(self) -> None:
        if self.num_generations % 2:
            self.out_of_range("num_generations", "an even number (balanced mode forcing)")

    @classmethod
    def smoke(cls):
        return cls(seeds=(0,), n_embd=32, n_layer=1, sft_examples=2000, sft_base_steps=100, sft_steps=75,
                   sft_batch_size=32,
                   grpo_steps=2, grpo_batch_size=4, num_generations=4, n_eval=10, n_eval_sampled=5,
                   ref_samples=4)

    @classmethod
    def quick(cls):
        # issue 54 (time only, fixed before the run): 20 GRPO steps (so 160 RL prompts and half the R-bar_ref
        # sampling) and 40 sampled test problems per cell (report only) instead of 40 / 80: 3 seeds in
        # ~107 s -> under 90 s; stage 1 (SFT, its greedy numbers and gates) unchanged; full is the headline
        return cls(seeds=(0, 1, 2), ablations=False, grpo_steps=20, n_eval_sampled=40)

    @classmethod
    def full(cls):
        return cls(seeds=(0, 1, 2), estimator_ablation=True, sft_examples=40000, sft_base_steps=900, sft_steps=600, grpo_steps=100,
                   grpo_batch_size=16, n_eval=1000, n_eval_sampled=500, ref_samples=16)


#: the natural rate of verbose simple problems in naive SFT data is our choice (0.1: verbosity five times
#: rarer on simple problems than on complex ones, 0.5); the verdicts could depend on it (CLAIMS.md rule 9)
PROTOCOL_KNOBS = {"naive_simple_verbose_frac": (0.05, 0.1, 0.25)}
BASE_SEED_OFFSET = 500  # the base stage's data and minibatch order differ from the arm stage's
CPU_PHASES = ("sft", "ref_accuracy", "grpo", "eval_greedy", "eval_sampled")
SAMPLING_TEMPERATURES = (0.6, 1.0)  # AdaptThink's rollout/eval temperature and TRL's default
CELL_METRICS = ("accuracy", "think_rate", "tokens", "mode_accuracy", "invalid_rate", "think_prob")


def _to_bytes(state: dict) -> bytes:
    """A state dict as ``torch.save`` bytes: a worker's result must not hold tensors, which torch
    would send as shared-memory handles that die with the worker."""
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def _add_cpu(cpu: dict, outs: list[dict]) -> None:
    """Add the CPU seconds each task spent (its own ``cpu`` dict) to ``cpu``."""
    for o in outs:
        for k, v in o.items():
            cpu[k] += v


def _flatten(report: dict, prefix: str = "") -> dict[str, float]:
    out = {}
    for cell in (*CELLS, "overall"):
        for m in CELL_METRICS:
            out[f"{prefix}{cell}/{m}"] = report[cell][m]
    out[f"{prefix}robustness_gap"] = report["summary"]["robustness_gap"]
    out[f"{prefix}think_prob_gap"] = report["simple-verbose"]["think_prob"] - report["simple-concise"]["think_prob"]
    out[f"{prefix}complex_accuracy"] = report["summary"]["complex_accuracy"]
    return out


def run(config: Config, seed: int) -> SeedOutput:
    with phase("data"):
        task = CostumeArithmetic(seed=seed)
        tok = make_tokenizer()
        P, C = task.max_prompt_length + 1, task.max_completion_length
        torch.manual_seed(seed)
        init = TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=P + C, n_layer=config.n_layer,
                                     n_head=config.n_head, n_embd=config.n_embd))
        cfg = AdaptiveReasonerConfig(sft_steps=config.sft_steps, sft_batch_size=config.sft_batch_size,
                                     grpo_steps=config.grpo_steps, grpo_batch_size=config.grpo_batch_size,
                                     num_generations=config.num_generations,
                                     grpo_learning_rate=config.grpo_learning_rate, prompt_length=P,
                                     max_completion_length=C, seed=seed)
        test = task.test_grid(config.n_eval, seed=seed + 1000)
        test_complex = [r for r in test if r["complexity"] == "complex"]
        test_sampled = task.test_grid(config.n_eval_sampled, seed=seed + 2000) if config.n_eval_sampled else []
        rl = task.rl_prompts(max(config.grpo_steps * config.grpo_batch_size, 64), seed=seed)
        # the base stage (shared by every arm): concise problems only, no costume seen yet
        base_data = task.sft_dataset(config.sft_examples, augment_verbose=False, complex_verbose_frac=0.0,
                                     seed=seed + BASE_SEED_OFFSET)
        sft_data = {"naive": task.sft_dataset(config.sft_examples, augment_verbose=False, seed=seed,
                                              simple_verbose_frac=config.naive_simple_verbose_frac),
                    "aug": task.sft_dataset(config.sft_examples, augment_verbose=True, seed=seed)}

    cpu = dict.fromkeys(CPU_PHASES, 0.0)

    def evaluate(model, cpu, force=None, sampled=False, forced_complex=False, cache=None):
        """``cache``: one dict per trained model, shared by its evaluations (P(<think>) per batch)."""
        t0 = time.process_time()
        with phase("eval_greedy"):
            out = _flatten(evaluate_modes(model, tok, test, prompt_length=P, max_new_tokens=C, force=force,
                                          p_think_cache=cache))
            if forced_complex:  # the efficiency precondition on this model: is thinking needed?
                for mode in ("think", "no_think"):
                    rep = evaluate_modes(model, tok, test_complex, prompt_length=P, max_new_tokens=C, force=mode,
                                         p_think_cache=cache)
                    out[f"forced_{mode}/complex_accuracy"] = rep["summary"]["complex_accuracy"]
        t1 = time.process_time()
        cpu["eval_greedy"] += t1 - t0
        if sampled and test_sampled:
            with phase("eval_sampled"):
                for t in SAMPLING_TEMPERATURES:
                    g = torch.Generator().manual_seed(seed + 3000)
                    rep = evaluate_modes(model, tok, test_sampled, prompt_length=P, max_new_tokens=C,
                                         force=force, temperature=t, generator=g, p_think_cache=cache)
                    out.update(_flatten(rep, prefix=f"T{t}/"))
            cpu["eval_sampled"] += time.process_time() - t1
        return out

    hist: dict = {}
    base = copy.deepcopy(init)
    if config.sft_base_steps:
        h = {}
        t0 = time.process_time()
        train_adaptive_reasoner(base, tok, base_data, None, None,
                                replace(cfg, sft_steps=config.sft_base_steps, seed=seed + BASE_SEED_OFFSET),
                                history=h)
        cpu["sft"] += time.process_time() - t0
        hist["sft_base"] = h["sft_loss"][:: max(1, len(h["sft_loss"]) // 50)]

    def stage1(name: str):
        """SFT on the arm's data, Rbar_ref of the SFT model, and its evaluation (independent per arm)."""
        model = copy.deepcopy(base)
        h, cpu = {}, dict.fromkeys(CPU_PHASES, 0.0)
        t0 = time.process_time()
        train_adaptive_reasoner(model, tok, sft_data[name], None, None, cfg, history=h)
        t1 = time.process_time()
        cpu["sft"] += t1 - t0
        # Rbar_ref(x): the stage-1 model's forced-think accuracy at the rollout temperature
        with phase("ref_accuracy"):
            ref = reference_think_accuracy(model, tok, rl, k=config.ref_samples, prompt_length=P,
                                           max_new_tokens=C, temperature=cfg.temperature, seed=seed)
        cpu["ref_accuracy"] += time.process_time() - t1
        met = evaluate(model, cpu, sampled=name == "aug", cache={})
        return {"state": _to_bytes(model.state_dict()), "hist": h["sft_loss"][:: max(1, len(h["sft_loss"]) // 50)],
                "ref": ref, "metrics": met, "cpu": cpu}

    with phase("stage1"):
        out1 = dict(zip(sft_data, fork_map([lambda n=n: stage1(n) for n in sft_data], config.workers),
                        strict=True))
    _add_cpu(cpu, [o["cpu"] for o in out1.values()])
    sft_models, ref_acc = {}, {}
    for name, o in out1.items():
        model = copy.deepcopy(base)
        model.load_state_dict(torch.load(io.BytesIO(o["state"]), weights_only=True))
        sft_models[name], ref_acc[name] = model, o["ref"]
        hist[f"sft_{name}"] = o["hist"]

    def reward(kind: str, start: str):
        if kind == "adapt":
            return adaptthink_reward(delta=config.delta, ref_accuracy=ref_acc[start])
        if kind == "acc":  # correctness only: R_adapt with delta = 0, same baseline and estimator
            return adaptthink_reward(delta=0.0, ref_accuracy=ref_acc[start])
        return thinkless_reward() if kind == "thinkless" else oracle_mode_reward()

    plan = {"b0": ("naive", "adapt"), "m2": ("aug", "adapt"), "a1_thinkless": ("aug", "thinkless"),
            "a2_oracle": ("aug", "oracle"), "ctrl_naive_acc": ("naive", "acc"),
            "ctrl_aug_acc": ("aug", "acc")}
    if not config.ablations:  # only the arms some claim reads
        plan = {k: v for k, v in plan.items() if k in CLAIM_ARMS}
    if config.estimator_ablation:  # M2 with TRL's group-relative estimator instead of AdaptThink's
        plan["m2_trl"] = ("aug", "adapt")
    sampled_arms = ("b0", "m1", "m2", "m2_trl", "ctrl_aug_acc", "always_think", "never_think")

    def stage2(arm: str):
        """GRPO from the arm's SFT model and the arm's evaluations (independent per arm)."""
        start, kind = plan[arm]
        model = copy.deepcopy(sft_models[start])
        h, cpu = {}, dict.fromkeys(CPU_PHASES, 0.0)
        t0 = time.process_time()
        train_adaptive_reasoner(model, tok, None, rl, reward(kind, start),
                                replace(cfg, estimator="trl") if arm == "m2_trl" else cfg, history=h)
        cpu["grpo"] += time.process_time() - t0
        cache: dict = {}  # the trained model's P(<think>) per batch, shared by its evaluations
        met = {arm: evaluate(model, cpu, sampled=arm in sampled_arms,
                             forced_complex=arm in ("m2", "ctrl_aug_acc"), cache=cache)}
        if arm == "b0":
            met["always_think"] = evaluate(model, cpu, force="think", sampled=True, cache=cache)
            met["never_think"] = evaluate(model, cpu, force="no_think", sampled=True, cache=cache)
        return {"metrics": met, "hist": [(g["reward_mean"], g["completion_length"]) for g in h["grpo"]],
                "cpu": cpu}

    metrics: dict[str, dict[str, float]] = {"b0_sft": out1["naive"]["metrics"], "m1": out1["aug"]["metrics"]}
    with phase("stage2"):
        out2 = dict(zip(plan, fork_map([lambda a=a: stage2(a) for a in plan], config.workers), strict=True))
    _add_cpu(cpu, [o["cpu"] for o in out2.values()])
    for arm, o in out2.items():
        metrics.update(o["metrics"])
        hist[f"grpo_{arm}"] = o["hist"]
    params = init.num_parameters()
    for m in metrics.values():
        m["params"] = float(params)
    return SeedOutput(metrics=metrics, extras={"history": hist, "cpu_seconds": cpu})


# ----------------------------------------------------------------------------------------------
# Claims (rules fixed before the run)
# ----------------------------------------------------------------------------------------------


def _mean(m, arm: str, key: str) -> float:
    return float(np.mean(m[arm][key]))


def _det(per_seed) -> dict:
    """Detectability of a fixed-margin rule on trained models: its mde is 2 s.e. across seeds of the
    per-seed quantity it compares (the margin must exceed the seed noise); with one seed the training
    noise is unmeasured, so the mde is inf (the verdict is then inconclusive, never evidence). The rules
    themselves read no s.e. (``uses_se`` False)."""
    v = np.asarray(per_seed, dtype=float)
    mde = 2.0 * mean_se(v)[1] if v.size >= 2 else math.inf
    return {"mde": float(mde), "n": int(v.size), "uses_se": False}


def _misled(m, arm: str) -> Decision:
    sv, sc = _mean(m, arm, "simple-verbose/think_rate"), _mean(m, arm, "simple-concise/think_rate")
    ok = sv >= 0.5 and sc <= 0.2
    note = "" if ok else " (no verbosity failure: task too easy or model robust)"
    per_seed = np.asarray(m[arm]["simple-verbose/think_rate"]) - np.asarray(m[arm]["simple-concise/think_rate"])
    return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                    f"{arm}: think rate simple-verbose {sv:.2f} vs simple-concise {sc:.2f}{note}",
                    {"arm": arm, "think_simple_verbose": sv, "think_simple_concise": sc}, **_det(per_seed))


def _closes_gap(m, arm: str, base: str = "b0", with_prob: bool = False) -> Decision:
    gm, gb = np.asarray(m[arm]["robustness_gap"]), np.asarray(m[base]["robustness_gap"])
    ok = bool(np.all(gm <= gb - 0.30))
    text = f"gap {arm} {gm.mean():.2f} vs {base} {gb.mean():.2f}"
    evidence = {"arm": arm, "gap": gm.tolist(), "gap_base": gb.tolist()}
    det = _det(gb - gm)
    if with_prob:  # the same gap in mean P(<think>), not only in greedy decisions
        pm, pb = np.asarray(m[arm]["think_prob_gap"]), np.asarray(m[base]["think_prob_gap"])
        ok = ok and bool(np.all(pm <= pb - 0.30))
        text += f"; P(think) gap {pm.mean():.2f} vs {pb.mean():.2f}"
        evidence.update(prob_gap=pm.tolist(), prob_gap_base=pb.tolist())
        det["mde"] = max(det["mde"], _det(pb - pm)["mde"])
    evidence["mde"] = det["mde"] if math.isfinite(det["mde"]) else None
    return Decision(REPRODUCED if ok else NOT_REPRODUCED, text, evidence, **det)


def _efficient(m, arm: str) -> Decision:
    tok_sv, tok_sv_b0 = _mean(m, arm, "simple-verbose/tokens"), _mean(m, "b0", "simple-verbose/tokens")
    tok, tok_b1 = _mean(m, arm, "overall/tokens"), _mean(m, "always_think", "overall/tokens")
    cx, cx_b1 = _mean(m, arm, "complex_accuracy"), _mean(m, "always_think", "complex_accuracy")
    acc, acc_b0 = _mean(m, arm, "overall/accuracy"), _mean(m, "b0", "overall/accuracy")
    # thinking is needed *for this model* (issue 50): its own forced-think vs forced-no-think accuracy
    cx_think, cx_direct = _mean(m, arm, "forced_think/complex_accuracy"), _mean(m, arm, "forced_no_think/complex_accuracy")
    parts = {"thinking_needed": cx_direct <= cx_think - 0.30,
             "sv_tokens_40pct_below_b0": tok_sv <= 0.6 * tok_sv_b0,
             "tokens_25pct_below_always_think": tok <= 0.75 * tok_b1,
             "complex_acc_within_3pts_of_always_think": cx >= cx_b1 - 0.03,
             "overall_acc_at_least_b0_minus_2pts": acc >= acc_b0 - 0.02}
    ok = all(parts.values())
    # the primary quantity: the arm's simple-verbose tokens as a fraction of B0's, per seed
    ratio = np.asarray(m[arm]["simple-verbose/tokens"]) / np.maximum(np.asarray(m["b0"]["simple-verbose/tokens"]),
                                                                      1e-9)
    return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                    f"{arm}: complex acc forced no-think/think {cx_direct:.2f}/{cx_think:.2f}; "
                    f"sv tokens {tok_sv:.1f} vs b0 {tok_sv_b0:.1f}; tokens {tok:.1f} vs always-think "
                    f"{tok_b1:.1f}; complex acc {cx:.2f} vs {cx_b1:.2f}; acc {acc:.2f} vs b0 {acc_b0:.2f}",
                    {"arm": arm, **parts, "tok_sv": tok_sv, "tok_sv_b0": tok_sv_b0, "tokens": tok,
                     "tokens_always_think": tok_b1, "complex_acc": cx, "complex_acc_always_think": cx_b1,
                     "acc": acc, "acc_b0": acc_b0, "complex_acc_forced_no_think": cx_direct,
                     "complex_acc_forced_think": cx_think},
                    **_det(ratio))


def _grpo_value(m, arm: str) -> Decision:
    d_seed = np.asarray(m[arm]["overall/mode_accuracy"]) - np.asarray(m["m1"]["overall/mode_accuracy"])
    d_mode = float(np.mean(d_seed))
    acc, acc_m1 = _mean(m, arm, "overall/accuracy"), _mean(m, "m1", "overall/accuracy")
    tok, tok_m1 = _mean(m, arm, "overall/tokens"), _mean(m, "m1", "overall/tokens")
    better_mode = d_mode >= 0.02 and acc >= acc_m1 - 0.02
    fewer_tokens = d_mode >= -0.01 and tok <= 0.9 * tok_m1 and acc >= acc_m1 - 0.02
    ok = better_mode or fewer_tokens
    return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                    f"{arm} - m1: mode acc {d_mode:+.3f}, acc {acc:.2f} vs {acc_m1:.2f}, tokens {tok:.1f} vs {tok_m1:.1f}",
                    {"arm": arm, "mode_acc_gain": d_mode, "acc": acc, "acc_m1": acc_m1, "tokens": tok,
                     "tokens_m1": tok_m1, "better_mode": better_mode, "equal_mode_fewer_tokens": fewer_tokens},
                    **_det(d_seed))


CHANCE = 0.1  # a mod-10 answer drawn at random
# Substrate gates (CLAIMS.md rule 8). The SFT models every arm starts from do the task (overall accuracy
# >= 4x chance; our choice, the issue-43 convention of "4x random"), and the failure the method is meant
# to fix exists (brief acceptance check 1: "if not, the costume task is too easy and the demo is void").
SUBSTRATE = (
    SubstrateCheck("naive_sft_does_task", "naive SFT (b0_sft) overall accuracy >= 4x chance",
                   arm="b0_sft", metric="overall/accuracy", low=4 * CHANCE),
    SubstrateCheck("aug_sft_does_task", "augmented SFT (m1) overall accuracy >= 4x chance",
                   arm="m1", metric="overall/accuracy", low=4 * CHANCE),
    SubstrateCheck("naive_sft_has_gap", "naive SFT's robustness gap >= 0.30 (a gap for stage 1 to close)",
                   arm="b0_sft", metric="robustness_gap", low=0.30),
    SubstrateCheck("b0_thinks_on_verbose", "B0 think rate on simple-verbose >= 0.5 (brief check 1)",
                   arm="b0", metric="simple-verbose/think_rate", low=0.5),
    SubstrateCheck("b0_direct_on_concise", "B0 think rate on simple-concise <= 0.2 (brief check 1)",
                   arm="b0", metric="simple-concise/think_rate", high=0.2),
)
_SFT_GATES = ("naive_sft_does_task", "aug_sft_does_task")
_B0_FAILURE = ("b0_thinks_on_verbose", "b0_direct_on_concise")


#: what each arm writes (issue 52.4; the runner refuses anything else): greedy metrics per cell for
#: every arm, sampled ones (``T0.6/``, ``T1.0/``) for the arms evaluated sampled, and the forced-mode
#: complex accuracy (the efficiency precondition) for the arms ``efficiency`` judges
_GREEDY = (*(f"{cell}/{m}" for cell in (*CELLS, "overall") for m in CELL_METRICS),
           "robustness_gap", "think_prob_gap", "complex_accuracy")
_SAMPLED = tuple(f"T{t}/{name}" for t in SAMPLING_TEMPERATURES for name in _GREEDY)
_FORCED = ("forced_think/complex_accuracy", "forced_no_think/complex_accuracy")
METRICS = {
    ("b0_sft", "a1_thinkless", "a2_oracle", "ctrl_naive_acc"): (*_GREEDY, "params"),
    ("m1", "b0", "always_think", "never_think", "m2_trl"): (*_GREEDY, *_SAMPLED, "params"),
    ("m2", "ctrl_aug_acc"): (*_GREEDY, *_SAMPLED, *_FORCED, "params"),
}


SCALE = ("laptop-scale: ~0.1M-param char transformer trained from scratch on mod-10 costume "
         "arithmetic (3-4-op chains as complex problems), greedy eval on held-out problems with "
         "held-out filler words and costume structure")

CLAIMS = (
    Claim(
        id="naive_misled",
        statement="[the failure, B0] A naive adaptive reasoner picks the mode from verbosity: it thinks "
                  "on verbose simple problems while answering concise simple problems directly (its SFT "
                  "data holds verbose simple problems with direct targets, at a natural, lower rate).",
        paper_value="qualitative (abstract)",
        metric="greedy think rate on simple-verbose vs simple-concise for B0 (naive SFT + GRPO)",
        scale=SCALE,
        rule="mean over seeds: B0 think rate on simple-verbose >= 0.5 and on simple-concise <= 0.2",
        decide=lambda m, c: _misled(m, "b0"),
        control_description="the same rule applied to the method M2 (augmented SFT + GRPO)",
        control=lambda m, c: _misled(m, "m2"),
        arms=ClaimArms(method="b0", control="m2"),
        effect=0.30,
        effect_source="brief acceptance check 1: think rate >= 0.5 on simple-verbose vs <= 0.2 on "
                      "simple-concise (0.30 between the bounds)",
        gates=("naive_sft_does_task",),
    ),
    Claim(
        id="augmentation_closes_gap",
        statement="[stage 1] Verbosity-augmented SFT alone closes the robustness gap of naive SFT on "
                  "held-out costumes.",
        paper_value="qualitative (abstract: stage 1 teaches the model to ignore verbosity)",
        metric="robustness gap = greedy think rate(simple-verbose) - think rate(simple-concise), lower is better",
        scale=SCALE,
        rule="in every seed: gap(M1) <= gap(naive SFT) - 0.30, both for the greedy think rate and for "
             "the mean probability of <think> as first token",
        decide=lambda m, c: _closes_gap(m, "m1", "b0_sft", with_prob=True),
        control_description="naive SFT + GRPO with the adaptive reward (B0): no augmentation; if it "
                            "passes, the reward alone closes the gap and stage 1 is not needed",
        control=lambda m, c: _closes_gap(m, "b0", "b0_sft", with_prob=True),
        beyond=lambda m, c: _closes_gap(m, "m1", "b0", with_prob=True),
        arms=ClaimArms(method="m1", baselines=("b0_sft",), control="b0"),
        effect=0.30,
        effect_source="brief acceptance check 2: robustness gap reduced by 30 points",
        gates=(*_SFT_GATES, "naive_sft_has_gap"),
    ),
    Claim(
        id="closes_gap",
        statement="[stages 1+2] Augmented SFT + GRPO with the adaptive reward closes the robustness gap "
                  "of B0; credited to the adaptive reward only if augmented SFT + correctness-only "
                  "GRPO fails the same rule.",
        paper_value="qualitative (abstract: more robust to misleading cues)",
        metric="robustness gap = greedy think rate(simple-verbose) - think rate(simple-concise), lower is better",
        scale=SCALE,
        rule="in every seed: gap(M2) <= gap(B0) - 0.30",
        decide=lambda m, c: _closes_gap(m, "m2"),
        control_description="augmented SFT + GRPO with a correctness-only reward (ctrl_aug_acc): stage 1 "
                            "without the adaptive reward; if it passes, the augmentation explains the gain",
        control=lambda m, c: _closes_gap(m, "ctrl_aug_acc"),
        beyond=lambda m, c: _closes_gap(m, "m2", "ctrl_aug_acc"),
        arms=ClaimArms(method="m2", baselines=("b0",), control="ctrl_aug_acc"),
        effect=0.30,
        effect_source="brief acceptance check 2: M2 gap <= B0 gap - 30 points",
        gates=(*_SFT_GATES, *_B0_FAILURE),
    ),
    Claim(
        id="efficiency",
        statement="[stages 1+2] The method generates fewer tokens without losing accuracy on complex "
                  "problems (on a task where thinking is needed); credited to the adaptive reward only "
                  "if the correctness-only control fails.",
        paper_value="qualitative (abstract: lower computational overhead, no accuracy loss)",
        metric="greedy generated tokens (lower is better) and exact-match accuracy",
        scale=SCALE,
        rule="seed means: M2's complex accuracy with the mode forced to no-think <= forced to think - 0.30 "
             "(thinking is needed, on the model judged); M2 tokens on simple-verbose <= 0.6 x B0's; M2 overall tokens <= 0.75 x "
             "always-think's; M2 complex accuracy >= always-think's - 0.03; M2 overall accuracy >= B0's - 0.02",
        decide=lambda m, c: _efficient(m, "m2"),
        control_description="augmented SFT + GRPO with a correctness-only reward (ctrl_aug_acc) in place "
                            "of M2: stage 1 without the adaptive reward",
        control=lambda m, c: _efficient(m, "ctrl_aug_acc"),
        arms=ClaimArms(method="m2", baselines=("b0", "always_think"), control="ctrl_aug_acc"),
        effect=0.40,
        effect_source="brief acceptance check 3: simple-verbose tokens >= 40 % below B0's (ratio 1 -> 0.6)",
        gates=(*_SFT_GATES, "b0_thinks_on_verbose"),
    ),
    Claim(
        id="grpo_adds_value",
        statement="[stage 2] GRPO with the adaptive reward improves on stage-1 SFT alone.",
        paper_value="qualitative (two-stage method)",
        metric="greedy overall mode accuracy vs the oracle complexity label (higher is better), tokens",
        scale=SCALE,
        rule="seed means: mode acc(M2) - mode acc(M1) >= 0.02 with accuracy >= M1's - 0.02, or "
             "mode acc gain >= -0.01 with tokens <= 0.9 x M1's and accuracy >= M1's - 0.02",
        decide=lambda m, c: _grpo_value(m, "m2"),
        control_description="augmented SFT + GRPO with a correctness-only reward in place of M2",
        control=lambda m, c: _grpo_value(m, "ctrl_aug_acc"),
        arms=ClaimArms(method="m2", baselines=("m1",), control="ctrl_aug_acc"),
        effect=0.02,
        effect_source="smallest that matters: 2 points of mode accuracy, the rule's own bar (our choice; the "
                      "brief's check 5 gives no size)",
        gates=_SFT_GATES,
    ),
)

#: every arm some claim reads (``Config.ablations=False`` trains only these)
CLAIM_ARMS = frozenset(a for c in CLAIMS for a in c.arms.names)


def plot(config: Config, outputs, outdir) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    arms = list(outputs[0].metrics)
    paths = []
    for metric, label in (("think_rate", "think rate"), ("tokens", "generated tokens")):
        fig, ax = plt.subplots(figsize=(10, 3.5))
        width = 0.8 / len(CELLS)
        for j, cell in enumerate(CELLS):
            vals = [np.mean([o.metrics[a][f"{cell}/{metric}"] for o in outputs]) for a in arms]
            ax.bar(np.arange(len(arms)) + j * width, vals, width, label=cell)
        ax.set_xticks(np.arange(len(arms)) + 0.4 - width / 2)
        ax.set_xticklabels(arms, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(label)
        ax.legend(fontsize=7, ncol=4)
        paths.append(save_figure(fig, outdir / f"{metric}_per_cell.png", dpi=100))
    return paths

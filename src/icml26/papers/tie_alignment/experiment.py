"""Reproduction of "When Labelers Stay Silent" (ICML 2026 poster 62768) at laptop scale (Tier A).

One run, same candidate tables, same reference-sampled pairs and seeds for every labeler and
objective. Labelers (the brief's table): small-silent (noise 1.0, resolution 1.5), small-forced
(noise 1.0), large-forced "LLM judge" (noise 0.4), expert-forced "humans" (noise 0.6 plus per-pair
rater disagreement 0.4), oracle (noise 0). Objectives: DPO on each forced labeler's labels, DPO
with ties dropped, cDPO (robust, eps 0.1), and the tie models DPO-RK, DPO-D and TODO on the
silent labels. The negative control trains DPO-RK on the silent labels with the tie flag off
(every tie given a coin-flip winner). A sweep over the large labeler's noise and the small
labeler's resolution maps where the headline claim holds and where it flips.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml26.harness import (
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    ClaimArms,
    Decision,
    ExperimentConfig,
    SeedOutput,
    all_of,
    mean_se,
    paired_improvement,
)
from icml26.harness.plots import save_figure

from .labelers import SimulatedLabeler, label_noise
from .lm_bench import SymbolTask
from .tabular import PreferenceConfig, TabularPolicyBench
from .trainer import TieDPOConfig, train_tie_dpo

SCALE = ("laptop-scale: exact tabular softmax policies (200 prompts x 64 candidates, known reward) "
         "and simulated labelers; the paper uses LLM policies, real benchmarks and real judges")
SCALE_LM = ("laptop-scale: a 0.1M-parameter causal LM on a symbol task with a known reward and "
            "512 enumerable responses (exact reward and KL), simulated labelers")


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Tier A settings. Sources: the brief's §5 (table sizes, labelers, eps = 0.1, beta = 0.1 =
    TRL's default); the optimiser (Adam, lr 0.05, 200 full-batch steps) is our choice."""

    n_prompts: int = 200
    n_candidates: int = 64
    pairs_per_prompt: int = 8
    reward_sd: float = 2.0
    beta: float = 0.1
    steps: int = 200
    lr: float = 0.05
    small_noise: float = 1.0
    small_resolution: float = 1.5
    large_noise: float = 0.4
    expert_noise: float = 0.6
    expert_disagreement: float = 0.4
    cdpo_eps: float = 0.1
    tie_prob_at_zero: float = 1.0 / 3.0
    sweep: bool = True
    sweep_large_noise: tuple[float, ...] = (0.2, 0.4, 0.8, 1.2)
    sweep_resolution: tuple[float, ...] = (0.5, 1.0, 1.5, 2.5)
    # Tier B (tiny LM); sizes are our choice, sized for the CPU budget
    lm: bool = True
    lm_train_prompts: int = 2048
    lm_eval_prompts: int = 256
    lm_sft_examples: int = 4096
    lm_sft_steps: int = 300
    lm_corrupt: float = 0.7
    lm_dpo_steps: int = 150
    lm_dpo_lr: float = 1e-3
    lm_batch_size: int = 64

    @classmethod
    def smoke(cls) -> Config:
        return cls(seeds=(0, 1, 2), n_prompts=60, n_candidates=32, steps=80, sweep=False,
                   lm_train_prompts=256, lm_eval_prompts=32, lm_sft_examples=512,
                   lm_sft_steps=40, lm_dpo_steps=15)

    @classmethod
    def quick(cls) -> Config:
        return cls(seeds=(0, 1, 2))

    @classmethod
    def full(cls) -> Config:
        return cls(seeds=tuple(range(8)), steps=400, lm_train_prompts=8192, lm_dpo_steps=600,
                   sweep_large_noise=(0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2),
                   sweep_resolution=(0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.5))


def labelers(c: Config) -> dict[str, SimulatedLabeler]:
    return {
        "small_silent": SimulatedLabeler(c.small_noise, c.small_resolution, name="small-silent"),
        "small_forced": SimulatedLabeler(c.small_noise, name="small-forced"),
        "large_forced": SimulatedLabeler(c.large_noise, name="large-forced"),
        "expert_forced": SimulatedLabeler(c.expert_noise, disagreement=c.expert_disagreement,
                                          name="expert-forced"),
        "oracle": SimulatedLabeler(0.0, name="oracle"),
        # negative control of the noise claim: forced choice, perception noise far below the gaps
        "low_noise_forced": SimulatedLabeler(c.small_noise / 4, name="low-noise-forced"),
    }


# The small silent and small forced labelers share one perception-noise stream: they see the same
# noisy rewards and differ only in whether they may abstain, so "ties vs forced choice" compares
# labels that differ by the ties alone.
_NOISE_STREAM = {"small_silent": 0, "small_forced": 0, "large_forced": 1, "expert_forced": 2,
                 "oracle": 3, "low_noise_forced": 4}


def annotate_all(labs: dict[str, SimulatedLabeler], r1, r2, key: list[int]) -> dict[str, np.ndarray]:
    """Every labeler's labels of the same pairs; ``key`` (e.g. ``[seed]``) seeds the noise streams."""
    return {name: lab.annotate(r1, r2, np.random.default_rng([*key, _NOISE_STREAM[name]]))
            for name, lab in labs.items()}


# arm -> (labeler, loss_type, tie_handling, label_smoothing)
ARMS: dict[str, tuple[str, str, str, float]] = {
    "dpo_oracle": ("oracle", "sigmoid", "drop", 0.0),
    "dpo_large_forced": ("large_forced", "sigmoid", "drop", 0.0),
    "dpo_expert_forced": ("expert_forced", "sigmoid", "drop", 0.0),
    "dpo_small_forced": ("small_forced", "sigmoid", "drop", 0.0),
    "cdpo_small_forced": ("small_forced", "robust", "drop", -1.0),  # -1: config.cdpo_eps
    "dpo_small_drop_ties": ("small_silent", "sigmoid", "drop", 0.0),
    "rk_small_silent": ("small_silent", "rao_kupper", "model", 0.0),
    "davidson_small_silent": ("small_silent", "davidson", "model", 0.0),
    "todo_small_silent": ("small_silent", "todo", "model", 0.0),
    # negative control: the same DPO-RK objective with the tie flag off (ties -> coin flips)
    "control_rk_tie_flag_off": ("small_silent", "rao_kupper", "random_winner", 0.0),
}


def _train(bench, pairs, labels, c: Config, loss_type, handling, eps, seed):
    cfg = PreferenceConfig(loss_type=loss_type, beta=c.beta, tie_handling=handling,
                           label_smoothing=c.cdpo_eps if eps < 0 else eps,
                           tie_prob_at_zero=c.tie_prob_at_zero)
    logp = bench.train(*pairs, labels, cfg, steps=c.steps, lr=c.lr, seed=seed)
    return bench.evaluate(logp)


def run(config: Config, seed: int) -> SeedOutput:
    c = config
    rng = np.random.default_rng(seed)
    bench = TabularPolicyBench(c.n_prompts, c.n_candidates, c.reward_sd, seed=seed)
    prompts, first, second = bench.sample_pairs(c.pairs_per_prompt, rng)
    r1, r2 = bench.rewards[prompts, first], bench.rewards[prompts, second]
    labs = labelers(c)
    labels = annotate_all(labs, r1, r2, [seed])
    metrics: dict[str, dict[str, float]] = {"reference": bench.evaluate(bench.ref_logp)}
    for name in labs:
        metrics[f"labels_{name}"] = label_noise(labels[name], r1, r2, near_tie=c.small_resolution)
    for arm, (lab, loss_type, handling, eps) in ARMS.items():
        metrics[arm] = _train(bench, (prompts, first, second), labels[lab], c, loss_type, handling,
                              eps, seed)

    if c.lm:
        metrics.update(run_lm_tier(c, seed))

    extras: dict = {}
    if c.sweep:
        # Where does each claim hold? Small-silent labelers over resolutions (DPO-RK and drop-ties
        # DPO on the same labels), large-forced labelers over noise levels (DPO).
        pairs = (prompts, first, second)
        silent, drop = [], []
        for i, res in enumerate(c.sweep_resolution):
            lab_s = SimulatedLabeler(c.small_noise, res).annotate(r1, r2, np.random.default_rng([seed, 200, i]))
            silent.append(_train(bench, pairs, lab_s, c, "rao_kupper", "model", 0.0, seed))
            drop.append(_train(bench, pairs, lab_s, c, "sigmoid", "drop", 0.0, seed))
        forced = []
        for j, noise in enumerate(c.sweep_large_noise):
            lab = SimulatedLabeler(noise).annotate(r1, r2, np.random.default_rng([seed, 100, j]))
            forced.append(_train(bench, pairs, lab, c, "sigmoid", "drop", 0.0, seed))
        # claim 2: reward(RK, small-silent at resolution i) - reward(DPO, large-forced at noise j)
        extras["sweep_reward_gap"] = [[s_["reward"] - f["reward"] for f in forced] for s_ in silent]
        # claim 3: RK vs drop-ties on the same silent labels; claim 4: KL(RK) - KL(DPO, small-forced)
        extras["sweep_vs_drop_reward_gap"] = [s_["reward"] - d["reward"] for s_, d in zip(silent, drop, strict=True)]
        extras["sweep_vs_drop_kl_gap"] = [s_["kl"] - d["kl"] for s_, d in zip(silent, drop, strict=True)]
        extras["sweep_kl_gap_vs_small_forced"] = [s_["kl"] - metrics["dpo_small_forced"]["kl"] for s_ in silent]
    return SeedOutput(metrics=metrics, extras=extras)


LM_ARMS: dict[str, tuple[str, str, str]] = {
    "lm_dpo_large_forced": ("large_forced", "sigmoid", "drop"),
    "lm_dpo_small_forced": ("small_forced", "sigmoid", "drop"),
    "lm_dpo_small_drop_ties": ("small_silent", "sigmoid", "drop"),
    "lm_rk_small_silent": ("small_silent", "rao_kupper", "model"),
    "lm_control_rk_tie_flag_off": ("small_silent", "rao_kupper", "random_winner"),
}


def run_lm_tier(c: Config, seed: int) -> dict[str, dict[str, float]]:
    """Tier B: SFT a reference on corrupted targets, label reference pairs, train each arm."""
    import torch

    rng = np.random.default_rng([seed, 3])
    task = SymbolTask(seed=seed)
    ref = task.sft_reference(c.lm_sft_examples, c.lm_corrupt, c.lm_sft_steps, seed)
    train_prompts, eval_prompts = task.split_prompts(c.lm_train_prompts, c.lm_eval_prompts, rng)
    with torch.no_grad():
        ref_train = task.response_logprobs(ref, train_prompts)
        ref_eval = task.response_logprobs(ref, eval_prompts)
    eval_rewards = task.all_rewards(eval_prompts)
    first, second = task.sample_pairs(ref_train, train_prompts, rng)
    r1 = task.reward(train_prompts, task.responses[first])
    r2 = task.reward(train_prompts, task.responses[second])
    labs = {k: v for k, v in labelers(c).items() if k in ("small_silent", "small_forced", "large_forced")}
    out = {"lm_reference": task.evaluate(ref, ref_eval, eval_prompts, eval_rewards)}
    labels = annotate_all(labs, r1, r2, [seed, 50])
    for name in labs:
        out[f"lm_labels_{name}"] = label_noise(labels[name], r1, r2, near_tie=c.small_resolution)
    for arm, (lab, loss_type, handling) in LM_ARMS.items():
        cfg = TieDPOConfig(loss_type=loss_type, beta=c.beta, tie_handling=handling,
                           tie_prob_at_zero=c.tie_prob_at_zero, learning_rate=c.lm_dpo_lr,
                           batch_size=c.lm_batch_size, steps=c.lm_dpo_steps)
        data = task.pair_data(train_prompts, first, second, labels[lab])
        torch.manual_seed(seed)
        policy = train_tie_dpo(ref, ref, data, cfg, seed=seed)
        out[arm] = task.evaluate(policy, ref_eval, eval_prompts, eval_rewards)
    return out


# ------------------------------------------------------------------------------------------
# Claims (rules fixed before the first quick run)
# ------------------------------------------------------------------------------------------

def _noise_rule(arm: str):
    def decide(m, c) -> Decision:
        near = m[arm]["wrong_rate_near_ties"]
        clear = m[arm]["wrong_rate_clear"]
        mn, se = mean_se(near)
        mc, _ = mean_se(clear)
        ok = mn >= 0.25 and mn >= 3 * mc
        return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                        f"wrong labels on near-ties {mn:.3f} ± {se:.3f} vs clear pairs {mc:.3f}",
                        {"near": list(near), "clear": list(clear)})
    return decide


def _ties_vs_drop(arm: str, drop: str):
    def decide(m, c) -> Decision:
        reward = paired_improvement(m[arm]["reward"], m[drop]["reward"], label="reward ")
        if reward.verdict == REPRODUCED:
            return reward
        kl = paired_improvement(m[arm]["kl"], m[drop]["kl"], higher_is_better=False, label="KL ")
        gap, _ = mean_se(np.subtract(m[arm]["reward"], m[drop]["reward"]))
        equal = Decision(REPRODUCED if gap > -0.05 else NOT_REPRODUCED,
                         f"reward gap {gap:+.3f} (equal if > -0.05)", {"reward_gap": gap})
        return all_of(equal, kl)
    return decide


def _paired(arm: str, baseline: str, metric: str, higher: bool):
    return lambda m, c: paired_improvement(m[arm][metric], m[baseline][metric],
                                           higher_is_better=higher)


def _tier_claims(p: str, scale: str, tier: str) -> tuple[Claim, ...]:
    """Claims 2-4 for one tier; ``p`` is the arm prefix ("" Tier A, "lm_" Tier B)."""
    control = "DPO-RK with the tie flag off (ties given coin-flip winners)"
    flag_off = f"{p}control_rk_tie_flag_off"
    drop = f"{p}dpo_small_drop_ties"
    drop_control = ("plain DPO on the same small-silent labels with ties dropped (no tie model): the "
                    "strongest arm without the mechanism; if it passes, abstaining explains the gain")
    return (
        Claim(
            id=f"{p}silent_small_beats_forced_large",
            statement=(f"[{tier}] With ties modelled, a small silent-aware labeler's supervision "
                       "reaches higher true reward than forced-choice labels from a stronger labeler"),
            paper_value="qualitative (abstract: small models with ties surpass forced-choice LLMs and humans)",
            metric="expected true reward of the trained policy (higher is better)",
            scale=scale,
            rule="DPO-RK(small-silent) > DPO(large-forced) in every seed, mean gap > 2 s.e.",
            decide=_paired(f"{p}rk_small_silent", f"{p}dpo_large_forced", "reward", True),
            control_description=drop_control,
            control=_paired(drop, f"{p}dpo_large_forced", "reward", True),
            arms=ClaimArms(method=f"{p}rk_small_silent", baselines=(f"{p}dpo_large_forced",),
                           control=drop),
        ),
        Claim(
            id=f"{p}model_ties_beats_dropping",
            statement=f"[{tier}] Modelling ties beats dropping them (higher reward, or equal reward at lower KL)",
            paper_value="qualitative (abstract); Chen et al. 2409.17431: ties add regularisation",
            metric="true reward (higher), KL(pi || pi_ref) (lower)",
            scale=scale,
            rule=("DPO-RK(small-silent) beats DPO-drop-ties(small-silent) in reward (every seed, "
                  "> 2 s.e.), or its reward gap > -0.05 and its KL is lower in every seed (> 2 s.e.)"),
            decide=_ties_vs_drop(f"{p}rk_small_silent", f"{p}dpo_small_drop_ties"),
            control_description=control,
            control=_ties_vs_drop(flag_off, f"{p}dpo_small_drop_ties"),
            arms=ClaimArms(method=f"{p}rk_small_silent", baselines=(drop,), control=flag_off),
        ),
        Claim(
            id=f"{p}ties_limit_distribution_shift",
            statement=f"[{tier}] Tie-aware objectives limit arbitrary distribution shift (lower KL to the reference)",
            paper_value="qualitative (abstract); Chen et al.: lower KL with ties",
            metric="KL(pi || pi_ref) (lower is better)",
            scale=scale,
            rule="KL of DPO-RK(small-silent) < KL of DPO(small-forced) in every seed, gap > 2 s.e.",
            decide=_paired(f"{p}rk_small_silent", f"{p}dpo_small_forced", "kl", False),
            control_description=drop_control,
            control=_paired(drop, f"{p}dpo_small_forced", "kl", False),
            arms=ClaimArms(method=f"{p}rk_small_silent", baselines=(f"{p}dpo_small_forced",),
                           control=drop),
        ),
    )


CLAIMS = (
    Claim(
        id="forced_choice_noise",
        statement="Forcing a choice on indistinguishable pairs injects label noise",
        paper_value="qualitative (abstract: 'could inject significant noise')",
        metric="small-forced labeler's wrong-label rate on near-ties (|dr*| < resolution)",
        scale=SCALE,
        rule="mean wrong-label rate on near-ties >= 0.25 and >= 3x the rate on clear pairs",
        decide=_noise_rule("labels_small_forced"),
        control_description="forced labeler with a quarter of the perception noise (0.25, far below the near-tie gaps)",
        control=_noise_rule("labels_low_noise_forced"),
        arms=ClaimArms(method="labels_small_forced", control="labels_low_noise_forced"),
    ),
    *_tier_claims("", SCALE, "tabular"),
    *_tier_claims("lm_", SCALE_LM, "tiny LM"),
)


def plot(config: Config, outputs, outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for arm in ARMS:
        kl = [o.metrics[arm]["kl"] for o in outputs]
        rw = [o.metrics[arm]["reward"] for o in outputs]
        ax.scatter(kl, rw, label=arm, s=18)
    ax.set_xlabel("KL(pi || pi_ref)")
    ax.set_ylabel("expected true reward")
    ax.set_title("tie_alignment Tier A: reward vs KL (one dot per seed)")
    ax.legend(fontsize=6, loc="best")
    paths.append(save_figure(fig, outdir / "reward_vs_kl.png", dpi=120))
    grids = [o.extras["sweep_reward_gap"] for o in outputs if "sweep_reward_gap" in o.extras]
    if grids:
        g = np.mean(grids, axis=0)
        fig, ax = plt.subplots(figsize=(5, 4))
        lim = float(np.abs(g).max()) or 1.0
        im = ax.imshow(g, cmap="RdBu", vmin=-lim, vmax=lim, origin="lower")
        ax.set_xticks(range(len(config.sweep_large_noise)), [str(x) for x in config.sweep_large_noise])
        ax.set_yticks(range(len(config.sweep_resolution)), [str(x) for x in config.sweep_resolution])
        ax.set_xlabel("large forced labeler's noise")
        ax.set_ylabel("small silent labeler's resolution")
        ax.set_title("reward(RK, small-silent) - reward(DPO, large-forced)", fontsize=9)
        fig.colorbar(im)
        paths.append(save_figure(fig, outdir / "sweep_reward_gap.png", dpi=120))
        res = config.sweep_resolution
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        for key, label in (("sweep_vs_drop_reward_gap", "reward: RK - drop-ties (claim 3)"),
                           ("sweep_vs_drop_kl_gap", "KL: RK - drop-ties (claim 3)"),
                           ("sweep_kl_gap_vs_small_forced", "KL: RK - DPO small-forced (claim 4)")):
            v = np.array([o.extras[key] for o in outputs])
            ax.errorbar(res, v.mean(0), yerr=v.std(0), marker="o", capsize=3, label=label)
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_xlabel("small silent labeler's resolution")
        ax.set_ylabel("gap (mean ± sd over seeds)")
        ax.set_title("tie_alignment Tier A: claims 3-4 across resolutions", fontsize=9)
        ax.legend(fontsize=7)
        paths.append(save_figure(fig, outdir / "sweep_resolution.png", dpi=120))
    return paths

"""Reproduction of Iterative RMFT (arXiv 2511.04393), numerical-transformer track, laptop-scale.

One seed: a fresh base model M0 that knows no algorithm (random init, then SFT on uniform-random
play), and from the *same* M0 the three loop arms with identical rollout and fine-tuning compute:

* ``rmft``      keep the k lowest-pseudo-regret of L rollouts per task (the paper's filter);
* ``random_k``  keep k random rollouts (isolates the regret signal);
* ``reward_k``  keep the k highest realised-reward rollouts (best-of-L by reward);

plus algorithm distillation (``ad_ucb``: the same SFT rounds on UCB1 trajectories) and the
classical baselines (UCB1, Thompson sampling, epsilon-greedy 0.1, uniform random; sliding-window
UCB on the non-stationary regime). Every model arm is evaluated by sampling from its policy on the
same held-out instances: the training regime (Bernoulli, K = 5, T = 25) and four generalisation
regimes (T = 100, K = 8, Gaussian rewards, piecewise-stationary means).

Text track (reduced faithfulness, :mod:`.text`): a tiny char LM behind ``core.llm.TinyLMChat``
writes ``<r>a1=0/1</r>1`` (the arm it chose by, that arm's wins/pulls, then the action). M0 is
fine-tuned on uniform-random play; from the same M0, ``text_rmft`` (keep the k lowest-regret text
rollouts per task, fine-tune on rationale + action) and the control ``text_action_only`` (the same
loop, loss on the action only). An LLM is evaluated (not fine-tuned) only by opt-in
(``icml26 run iterative_rmft --llm URL``): arm ``text_llm``.

Experts track (:mod:`.experts`): full-information online learning with the same transformer,
M0 = random init; ``experts_rmft`` and ``experts_random_k`` with equal compute, Hedge beside them;
the FOL regret of the policy on held-out stochastic reward sequences.

Sizes are ours (the paper's L, k, N and SFT settings were not reachable; see the brief).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from icml26.core.llm import resolve_chat_model
from icml26.core.rl import (
    UCB1,
    BanditBatch,
    EpsilonGreedy,
    SlidingWindowUCB,
    ThompsonSampling,
    UniformRandom,
    hedge,
    run_policy,
    sample_bandits,
    sample_experts,
    sample_nonstationary,
)
from icml26.harness import (
    Claim,
    ClaimArms,
    Decision,
    ExperimentConfig,
    SeedOutput,
    SubstrateCheck,
    paired_claim,
    paired_improvement,
    per_regime,
)
from icml26.harness.pins import TRAINING_TOLERANCE
from icml26.harness.plots import pyplot, save_figure

from .experts import evaluate_experts, iterative_rmft_experts
from .model import NumericalDecisionTransformer
from .rmft import RMFTConfig, Trajectories, distill_policy, evaluate_regret, iterative_rmft, sft
from .text import evaluate_text, iterative_rmft_text, make_text_agent, warm_start

LOOP_ARMS = ("rmft", "random_k", "reward_k")
SELECTION = {"rmft": "regret", "random_k": "random", "reward_k": "reward"}
REGIMES = ("in_dist", "long_T", "more_arms", "gaussian", "nonstationary")
OOD = REGIMES[1:]



# float32 training: pinned smoke numbers carry the cross-CPU tolerance (harness.pins).
PIN_TOLERANCE = TRAINING_TOLERANCE

@dataclass(frozen=True)
class Config(ExperimentConfig):
    """All sizes are ours (brief Sec. 5 proposes K = 5, T = 25, L = 16, k = 2, 128 tasks)."""

    k: int = 5
    horizon: int = 25
    iterations: int = 16
    tasks_per_iter: int = 128
    rollouts_per_task: int = 16
    top_k: int = 2
    sft_epochs: int = 6
    lr: float = 3e-3
    base_episodes: int = 256
    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 2
    eval_tasks: int = 400
    long_horizon: int = 100
    more_arms: int = 8
    gauss_sigma: float = 0.5
    ns_horizon: int = 50
    ns_variation: float = 2.0
    # text track (claim 4); sizes are ours (brief: K = 3, T = 10)
    text_k: int = 3
    text_horizon: int = 10
    text_d_model: int = 64
    text_base_steps: int = 300
    text_base_episodes: int = 256
    text_iterations: int = 2
    text_tasks_per_iter: int = 12
    text_rollouts_per_task: int = 8
    text_top_k: int = 2
    text_sft_epochs: int = 2
    text_lr: float = 1e-3
    text_eval_tasks: int = 12
    rationale_threshold: float = 0.9
    # experts (full-information) track; M0 = random init; sizes are ours
    experts_k: int = 5
    experts_horizon: int = 25
    experts_gap: float = 0.2
    experts_iterations: int = 16
    experts_tasks_per_iter: int = 32
    experts_eval_tasks: int = 200

    BOUNDS = {"k": (2, 10), "horizon": (2, 128), "iterations": (1, None), "tasks_per_iter": (1, None),
              "rollouts_per_task": (1, None), "top_k": (1, None), "sft_epochs": (1, None),
              "lr": (1e-6, 1.0), "base_episodes": (1, None), "d_model": (4, None), "n_layers": (1, None),
              "n_heads": (1, None), "eval_tasks": (2, None), "long_horizon": (2, 128),
              "more_arms": (2, 10), "gauss_sigma": (1e-6, None), "ns_horizon": (2, 128),
              "ns_variation": (0.0, None), "text_k": (2, 10), "text_horizon": (2, 10),
              "text_d_model": (8, None), "text_base_steps": (1, None), "text_base_episodes": (1, None),
              "text_iterations": (1, None), "text_tasks_per_iter": (1, None),
              "text_rollouts_per_task": (1, None), "text_top_k": (1, None), "text_sft_epochs": (1, None),
              "text_lr": (1e-6, 1.0), "text_eval_tasks": (1, None), "rationale_threshold": (0.0, 1.0),
              "experts_k": (2, 10), "experts_horizon": (2, 128), "experts_gap": (0.0, 0.3),
              "experts_iterations": (1, None), "experts_tasks_per_iter": (1, None),
              "experts_eval_tasks": (1, None)}

    def extra_checks(self) -> None:
        if self.top_k > self.rollouts_per_task:
            self.out_of_range("top_k", f"<= rollouts_per_task ({self.rollouts_per_task})")
        if self.d_model % self.n_heads:
            self.out_of_range("n_heads", f"a divisor of d_model ({self.d_model})")
        if self.text_top_k > self.text_rollouts_per_task:
            self.out_of_range("text_top_k", f"<= text_rollouts_per_task ({self.text_rollouts_per_task})")
        if self.text_d_model % 4:
            self.out_of_range("text_d_model", "a multiple of 4 (4 heads)")

    @classmethod
    def smoke(cls):
        return cls(seeds=(0,), iterations=2, tasks_per_iter=16, rollouts_per_task=8, top_k=2,
                   sft_epochs=2, base_episodes=64, eval_tasks=64, long_horizon=40, ns_horizon=30,
                   text_base_steps=SMOKE_TEXT_STEPS, text_iterations=1, text_tasks_per_iter=8,
                   text_rollouts_per_task=4, text_eval_tasks=8, experts_iterations=2,
                   experts_tasks_per_iter=8, experts_eval_tasks=32)

    @classmethod
    def quick(cls):
        # experts rounds halved for the 3-minute quick budget (the three tracks cost ~195 CPU-s
        # with 16); full keeps 30
        return cls(seeds=(0, 1, 2), experts_iterations=8)

    @classmethod
    def full(cls):
        return cls(seeds=(0, 1, 2, 3, 4), iterations=30, tasks_per_iter=256, eval_tasks=1000,
                   text_base_steps=1500, text_iterations=6, text_tasks_per_iter=48, text_eval_tasks=64,
                   experts_iterations=30, experts_tasks_per_iter=128, experts_eval_tasks=1000)


SMOKE_TEXT_STEPS = 60


def _rmft_config(c: Config, selection: str) -> RMFTConfig:
    return RMFTConfig(iterations=c.iterations, rollouts_per_task=c.rollouts_per_task, top_k=c.top_k,
                      tasks_per_iter=c.tasks_per_iter, sft_epochs=c.sft_epochs, lr=c.lr,
                      selection=selection)


def _base_model(c: Config, seed: int) -> NumericalDecisionTransformer:
    """M0: random init, then SFT on uniform-random play (it knows no algorithm)."""
    torch.manual_seed(seed)
    model = NumericalDecisionTransformer(k_max=10, d_model=c.d_model, n_layers=c.n_layers,
                                         n_heads=c.n_heads, max_horizon=128)
    env = sample_bandits(c.base_episodes, c.k, c.horizon, seed=seed + 10_000)
    a, r = run_policy(UniformRandom(env.batch, env.k), env, seed=seed + 20_000)
    traj = Trajectories(a, r, env.regret.sum(axis=1), np.arange(env.batch), env.k, env.horizon)
    sft(model, [traj], epochs=1, lr=1e-3, batch_size=64, seed=seed)
    return model


def _regimes(c: Config, seed: int) -> dict[str, BanditBatch]:
    """The held-out evaluation instances of one seed."""
    s = 1_000_000 + seed * 10
    n = c.eval_tasks
    return {
        "in_dist": sample_bandits(n, c.k, c.horizon, seed=s),
        "long_T": sample_bandits(n, c.k, c.long_horizon, seed=s + 1),
        "more_arms": sample_bandits(n, c.more_arms, c.horizon, seed=s + 2),
        "gaussian": sample_bandits(n, c.k, c.horizon, noise="gaussian", sigma=c.gauss_sigma, seed=s + 3),
        "nonstationary": sample_nonstationary(n, c.k, c.ns_horizon, variation=c.ns_variation, seed=s + 4),
    }


def _classical(envs: dict[str, BanditBatch], seed: int) -> dict[str, dict[str, float]]:
    """Regret of the classical baselines on the held-out instances (each run resets its env)."""
    factories = {"ucb1": lambda env: UCB1(env.batch, env.k),
                 "thompson": lambda env: ThompsonSampling(env.batch, env.k,
                                                          bernoulli=env.noise != "gaussian"),
                 "eps_greedy": lambda env: EpsilonGreedy(env.batch, env.k, 0.1),
                 "uniform": lambda env: UniformRandom(env.batch, env.k),
                 "sw_ucb": lambda env: SlidingWindowUCB(env.batch, env.k, window=20)}
    out: dict[str, dict[str, float]] = {}
    for name, make in factories.items():
        out[name] = {}
        for regime, env in envs.items():
            run_policy(make(env), env, seed=seed + 7)
            out[name][f"regret_{regime}"] = float(env.cumulative_regret()[:, -1].mean())
    return out


TEXT_ARMS = {"text_rmft": "full", "text_action_only": "action"}


def _text_track(c: Config, seed: int) -> tuple[dict[str, dict[str, float]], dict]:
    """M0 (random-play SFT), RMFT on full text and the action-only control, from the same M0;
    each evaluated on the same held-out tasks (L rollouts per task, top-k filter)."""
    k, horizon = c.text_k, c.text_horizon
    chat = make_text_agent(k, horizon, d_model=c.text_d_model, seed=seed, name=f"rmft-text-m0-s{seed}")
    base_loss = warm_start(chat, sample_bandits(c.text_base_episodes, k, horizon, seed=seed + 30_000),
                           steps=c.text_base_steps, seed=seed)
    held_out = sample_bandits(c.text_eval_tasks, k, horizon, seed=2_000_000 + seed)
    cfg = RMFTConfig(iterations=c.text_iterations, rollouts_per_task=c.text_rollouts_per_task,
                     top_k=c.text_top_k, tasks_per_iter=c.text_tasks_per_iter,
                     sft_epochs=c.text_sft_epochs, lr=c.text_lr, selection="regret")
    sampler = lambda n, s: sample_bandits(n, k, horizon, seed=s)  # noqa: E731
    evaluate = lambda agent: evaluate_text(agent, held_out, rollouts_per_task=c.text_rollouts_per_task,  # noqa: E731
                                           top_k=c.text_top_k, seed=seed + 77)
    metrics = {"text_m0": evaluate(chat)}
    history = {"base_sft_loss": base_loss[-1]}
    for arm, loss_on in TEXT_ARMS.items():
        agent = copy.deepcopy(chat)
        agent.name = f"{arm}-s{seed}"
        h = iterative_rmft_text(agent, sampler, cfg, loss_on=loss_on, seed=seed + 3)
        metrics[arm] = {**evaluate(agent), "rollout_tokens": float(h.rollout_tokens),
                        "sft_examples": float(h.sft_examples)}
        history[arm] = {"rollout_regret": h.rollout_regret, "kept_regret": h.kept_regret,
                        "rollout_valid": h.rollout_valid, "kept_valid": h.kept_valid,
                        "kept_consistent": h.kept_consistent, "sft_loss": h.sft_loss}
    llm = resolve_chat_model(lambda: None)  # opt-in only (--llm URL): evaluated, never fine-tuned
    if llm is not None:
        metrics["text_llm"] = evaluate(llm)
    return metrics, history


def _experts_track(c: Config, seed: int) -> tuple[dict[str, dict[str, float]], dict]:
    """Full information: M0 (random init), RMFT and random-k from it, Hedge; FOL regret of the
    policy on the same held-out reward sequences."""
    torch.manual_seed(seed + 40_000)
    base = NumericalDecisionTransformer(k_max=10, d_model=c.d_model, n_layers=c.n_layers,
                                        n_heads=c.n_heads, max_horizon=128)
    held_out = sample_experts(c.experts_eval_tasks, c.experts_k, c.experts_horizon, gap=c.experts_gap,
                              seed=3_000_000 + seed)
    sampler = lambda n, s: sample_experts(n, c.experts_k, c.experts_horizon, gap=c.experts_gap, seed=s)  # noqa: E731
    metrics = {"experts_m0": {"fol_regret": float(evaluate_experts(base, held_out, seed=seed).mean())},
               "hedge": {"fol_regret": float(hedge(held_out).mean())}}
    history = {}
    for arm, selection in (("experts_rmft", "regret"), ("experts_random_k", "random")):
        model = copy.deepcopy(base)
        cfg = RMFTConfig(iterations=c.experts_iterations, rollouts_per_task=c.rollouts_per_task,
                         top_k=c.top_k, tasks_per_iter=c.experts_tasks_per_iter,
                         sft_epochs=c.sft_epochs, lr=c.lr, selection=selection)
        h = iterative_rmft_experts(model, sampler, cfg, seed=seed + 5)
        metrics[arm] = {"fol_regret": float(evaluate_experts(model, held_out, seed=seed).mean()),
                        "rollout_steps": float(h.rollout_steps), "sft_examples": float(h.sft_examples)}
        history[arm] = {"rollout_regret": h.rollout_regret, "kept_regret": h.kept_regret,
                        "entropy": h.entropy}
    return metrics, history


def run(config: Config, seed: int) -> SeedOutput:
    c = config
    sampler = lambda n, s: sample_bandits(n, c.k, c.horizon, seed=s)  # noqa: E731
    base = _base_model(c, seed)
    models = {"m0": base}
    histories = {}
    for arm in LOOP_ARMS:
        model = copy.deepcopy(base)
        histories[arm] = iterative_rmft(model, sampler, _rmft_config(c, SELECTION[arm]), seed=seed + 1)
        models[arm] = model
    ad = copy.deepcopy(base)
    histories["ad_ucb"] = distill_policy(ad, UCB1, sampler, _rmft_config(c, "regret"), seed=seed + 1)
    models["ad_ucb"] = ad

    envs = _regimes(c, seed)  # sampled once; every evaluation resets the env to its own seed
    metrics: dict[str, dict[str, float]] = {}
    curves: dict[str, dict[str, list[float]]] = {}
    for arm, model in models.items():
        metrics[arm] = {}
        curves[arm] = {}
        for regime, env in envs.items():
            cum = evaluate_regret(model, env, seed=seed + 7)
            metrics[arm][f"regret_{regime}"] = float(cum[:, -1].mean())
            curves[arm][regime] = cum.mean(axis=0).tolist()
        h = histories.get(arm)
        metrics[arm]["sft_examples"] = float(h.sft_examples) if h else 0.0
        metrics[arm]["rollout_steps"] = float(h.rollout_steps) if h else 0.0
    metrics.update(_classical(envs, seed))
    text_metrics, text_history = _text_track(c, seed)
    metrics.update(text_metrics)
    experts_metrics, experts_history = _experts_track(c, seed)
    metrics.update(experts_metrics)
    extras = {"curves": curves, "text_history": text_history, "experts_history": experts_history,
              "history": {a: {"rollout_regret": h.rollout_regret, "kept_regret": h.kept_regret,
                              "entropy": h.entropy, "sft_loss": h.sft_loss}
                          for a, h in histories.items()}}
    return SeedOutput(metrics=metrics, extras=extras)


# ----------------------------------------------------------------------------------------------
# Claims (rules fixed before the first quick run)
# ----------------------------------------------------------------------------------------------


def _lower(m, arm: str, ref: str, regime: str = "in_dist"):
    return paired_improvement(m[arm][f"regret_{regime}"], m[ref][f"regret_{regime}"],
                              higher_is_better=False, label=f"{arm} vs {ref} regret: ")


def _generalises(arm: str, against: str = "m0"):
    return lambda m, c: per_regime([(r, _lower(m, arm, against, r)) for r in OOD], require="all")


RATIONALE_MARGIN = 0.1  # claim 4's non-inferiority margin: a 10-point drop (the brief's 90 % bar, 1 - 0.9)


def _survives(arm: str):
    """Claim 4's rule on ``arm``: in every seed, the fraction of turns of the distilled (top-k
    lowest-regret) held-out trajectories whose rationale is consistent is >= the threshold and is
    non-inferior to M0's: gap - 2 binomial s.e. of the gap > -RATIONALE_MARGIN (a fixed margin; the
    earlier form, gap >= -2 s.e., loosened with the noise; CLAIMS.md rule 8).

    The s.e. it reads is a within-seed binomial one (valid for one seed), not an across-seed one, so
    ``uses_se`` is False; its mde is 2 x the largest per-seed s.e. of the gap (the drop it resolves)."""
    def rule(m, c) -> Decision:
        v, v0 = np.asarray(m[arm]["kept_consistent"]), np.asarray(m["text_m0"]["kept_consistent"])
        se = np.hypot(np.asarray(m[arm]["kept_consistent_se"]),
                      np.asarray(m["text_m0"]["kept_consistent_se"]))
        above = bool(np.all(v >= c.rationale_threshold))
        lower = v - v0 - 2.0 * se
        kept = bool(np.all(lower > -RATIONALE_MARGIN))
        verdict = "reproduced" if above and kept else "not reproduced"
        mde = float(2.0 * se.max())
        return Decision(verdict, f"{arm} vs text_m0 consistent rationales in distilled turns: "
                                 f"{v.mean():.3f} vs {v0.mean():.3f} (threshold {c.rationale_threshold}; "
                                 f"min lower bound {lower.min():+.3f} vs -{RATIONALE_MARGIN:g})",
                        {"consistent": v.tolist(), "m0_consistent": v0.tolist(), "gap_se": se.tolist(),
                         "lower_bound": lower.tolist(), "margin": RATIONALE_MARGIN,
                         "above_threshold": above, "no_drop": kept, "mde": mde},
                        mde=mde, n=int(v.size), uses_se=False)
    return rule


# Effects in regret units: M0 plays like uniform random (SFT on random play), whose expected regret on
# the training regime (means ~ U(0, 1), K = 5, T = 25) is (K / (K + 1) - 1/2) T = 8.33.
_UNIFORM_REGRET = (5 / 6 - 0.5) * 25

# Substrate gate of the text track: the warm start writes consistent rationales, so "they survive
# RMFT" can be tested (a warm start without them has nothing to keep).
SUBSTRATE = (
    SubstrateCheck("text_m0_rationales",
                   "text_m0 (the warm start) writes consistent rationales in >= rationale_threshold "
                   "(0.9) of its distilled turns",
                   value=lambda m, c: float(np.mean(m["text_m0"]["kept_consistent"]))
                   - c.rationale_threshold, low=0.0),
)


SCALE = ("laptop-scale: numerical decision transformer (d=32, 2 layers), Bernoulli MAB K=5 T=25, "
         "N=iterations RMFT rounds of L=16 rollouts on 128 tasks, top-k=2, 400 held-out tasks")

CLAIMS = (
    paired_claim(
        id="lowers_regret",
        statement="Iterative RMFT lowers the regret of a model that knows no algorithm",
        paper_value="qualitative (abstract: improves DM performance for numerical Transformers)",
        metric="mean cumulative pseudo-regret at T on held-out Bernoulli MAB tasks (lower is better)",
        scale=SCALE, key="regret_in_dist", higher_is_better=False,
        method="rmft", baseline="m0", control="random_k",
        control_description="the same loop keeping k random rollouts per task (random_k: same "
                            "rollout and SFT compute, no regret signal), vs M0 through the same rule",
        effect=round(0.4 * _UNIFORM_REGRET, 2),
        effect_source="brief acceptance check 1: RMFT regret <= 0.6 x M0's; M0 ~ uniform play, regret "
                      "8.33 at K=5, T=25 -> a gap of 3.33",
        positive="ad_ucb",
    ),
    paired_claim(
        id="regret_filter_drives_gain",
        statement="The regret filter drives the gain: RMFT beats the same loop with random "
                  "selection at equal compute",
        paper_value="qualitative (abstract: regret as the training signal)",
        metric="mean cumulative pseudo-regret at T, in distribution (lower is better)",
        scale=SCALE, key="regret_in_dist", higher_is_better=False,
        method="rmft", baseline="random_k", control="reward_k",
        control_description="best-of-L by realised reward (reward_k) vs random_k through the same "
                            "rule: if it passes too, selecting on outcomes explains the gain, not "
                            "regret specifically; then RMFT is judged against reward_k by the same "
                            "rule (beyond the control)",
        effect=round(0.15 * _UNIFORM_REGRET, 2),
        effect_source="brief acceptance check 1: RMFT <= random-k regret - 15 %; 15 % of uniform "
                      "play's 8.33 (random_k's level is not known before the run) -> 1.25",
    ),
    Claim(
        id="generalises",
        statement="RMFT's gain carries over to longer horizons, more arms and other reward "
                  "processes than trained on",
        paper_value="qualitative (abstract: generalization across horizons, action spaces, reward "
                    "processes)",
        metric="mean cumulative regret per regime: T=100, K=8, Gaussian rewards, piecewise-"
               "stationary means (dynamic regret)",
        scale=SCALE,
        rule="in every regime: RMFT regret < M0 regret in every seed, mean paired gap > 2 s.e.",
        decide=_generalises("rmft"),
        control_description="random_k (same compute, no regret signal) vs M0 through the same rule",
        control=_generalises("random_k"),
        beyond=_generalises("rmft", against="random_k"),
        arms=ClaimArms(method="rmft", baselines=("m0",), control="random_k"),
        effect=1.0,
        effect_source="smallest that matters: 1 unit of cumulative regret per task in each regime "
                      "(our choice; the brief's check 3 gives no size)",
    ),
    paired_claim(
        id="fol_lowers_regret",
        statement="RMFT lowers the regret of a model that knows no algorithm in full-information "
                  "online learning (experts)",
        paper_value="qualitative (abstract: FOL is one of the paper's three settings)",
        metric="mean FOL regret of the policy, max_a sum_t R_{t,a} - sum_t <pi_t, R_t>, on held-out "
               "stochastic experts sequences (K=5, T=25, best arm +0.2; lower is better); Hedge "
               "reported beside it",
        scale="laptop-scale: the numerical transformer, M0 = random init, experts_iterations "
              "rounds of L=16 rollouts (played actions sampled from pi) on experts_tasks_per_iter "
              "tasks, top-k=2 by played-action regret",
        key="fol_regret", higher_is_better=False,
        method="experts_rmft", baseline="experts_m0", control="experts_random_k",
        control_description="the same experts loop keeping k random rollouts (same compute, no "
                            "regret signal) vs M0 through the same rule",
        effect=1.0,
        effect_source="smallest that matters: a quarter of uniform play's expected FOL pseudo-regret "
                      "0.2 x 4/5 x 25 = 4 (our choice; the brief bounds FOL only against Hedge)",
    ),
    Claim(
        id="rationales_survive",
        statement="Rationales survive in the distilled trajectories: after RMFT on full text "
                  "(rationale + action), the lowest-regret trajectories still carry well-formed "
                  "rationales consistent with the action and the history",
        paper_value="qualitative (abstract: the model's own reasoning is kept in the distilled "
                    "trajectories; no template is imposed)",
        metric="fraction of turns of the top-k lowest-regret held-out text rollouts whose response "
               "parses by the grammar and whose rationale names the action played (kept_consistent; "
               "kept_valid, which also needs the true wins/pulls, is reported beside it)",
        scale="laptop-scale text track: tiny char LM (d=64, 2 layers) behind TinyLMChat, Bernoulli "
              "MAB K=3 T=10, M0 = SFT on random play, text_iterations RMFT rounds of L=8 rollouts, "
              "top-k=2",
        rule="in every seed: text_rmft's consistent fraction >= rationale_threshold (0.9, the "
             "brief's) AND non-inferior to text_m0's: gap - 2 binomial s.e. of the gap > -0.1",
        decide=_survives("text_rmft"),
        control_description="text_action_only: the same RMFT loop (same rollouts, filter and SFT "
                            "steps) with the loss on the action only, the rationale tokens "
                            "unsupervised; if it passes too, survival is inertia of the warm "
                            "start, not distillation of the rationales",
        control=_survives("text_action_only"),
        arms=ClaimArms(method="text_rmft", baselines=("text_m0",), control="text_action_only"),
        effect=RATIONALE_MARGIN,
        effect_source="brief acceptance check 5: rationales in >= 90 % of selected trajectories -> a "
                      "drop of 0.1 matters (also the non-inferiority margin)",
        gates=("text_m0_rationales",),
    ),
)


def plot(config: Config, outputs, outdir):
    plt = pyplot()
    paths = []
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for arm in (*LOOP_ARMS, "ad_ucb"):
        curve = np.mean([o.extras["history"][arm]["rollout_regret"] for o in outputs], axis=0)
        ax.plot(np.arange(1, len(curve) + 1), curve, marker="o", ms=3, label=arm)
    ax.set_xlabel("RMFT iteration")
    ax.set_ylabel("mean rollout regret (training tasks)")
    ax.legend(fontsize=8)
    paths.append(save_figure(fig, outdir / "regret_per_iteration.png"))
    fig, axes = plt.subplots(1, len(REGIMES), figsize=(3.2 * len(REGIMES), 3))
    for ax, regime in zip(axes, REGIMES, strict=True):
        for arm in ("m0", *LOOP_ARMS, "ad_ucb"):
            curve = np.mean([o.extras["curves"][arm][regime] for o in outputs], axis=0)
            ax.plot(np.arange(1, len(curve) + 1), curve, label=arm)
        ax.set_title(regime, fontsize=9)
        ax.set_xlabel("t")
    axes[0].set_ylabel("cumulative regret")
    axes[0].legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "regret_curves.png"))
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for arm in TEXT_ARMS:
        hs = [o.extras["text_history"][arm] for o in outputs]
        x = np.arange(1, len(hs[0]["rollout_regret"]) + 1)
        axes[0].plot(x, np.mean([h["rollout_regret"] for h in hs], axis=0), marker="o", label=arm)
        axes[1].plot(x, np.mean([h["kept_consistent"] for h in hs], axis=0), marker="o", label=arm)
    axes[0].set_ylabel("mean text-rollout regret")
    axes[1].set_ylabel("consistent rationales (kept turns)")
    for ax in axes:
        ax.set_xlabel("RMFT iteration (text track)")
        ax.set_xticks(x)
    axes[0].legend(fontsize=8)
    paths.append(save_figure(fig, outdir / "text_track.png"))
    return paths

"""Reproduction of Iterative RMFT (arXiv 2511.04393), numerical-transformer track, laptop-scale.

One seed: a fresh base model M0 that knows no algorithm (random init, then SFT on uniform-random
play), and from the *same* M0 the three loop arms with identical rollout and fine-tuning compute:

* ``rmft``      keep the k lowest-pseudo-regret of L rollouts per task (the paper's filter);
* ``random_k``  keep k random rollouts (isolates the regret signal);
* ``reward_k``  keep the k highest realised-reward rollouts (best-of-L by reward);

plus algorithm distillation (``ad_best``: the same SFT rounds and examples on the trajectories of
the best classical policy, chosen and tuned on dev instances) and the classical baselines (UCB1,
Thompson sampling, epsilon-greedy, sliding-window UCB on the non-stationary regime) at their
textbook constants and with their knob tuned on dev instances over equal 6-point grids
(:mod:`.baselines`; ``best_tuned`` is the one with the lowest dev regret), and uniform random. Every model arm is evaluated by sampling from its policy on the
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
import math
from dataclasses import dataclass

import numpy as np
import torch

from icml26.core.llm import resolve_chat_model
from icml26.core.rl import (
    BanditBatch,
    UniformRandom,
    hedge,
    run_policy,
    sample_bandits,
    sample_experts,
    sample_nonstationary,
)
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
    paired_claim,
    paired_improvement,
    per_regime,
)
from icml26.harness.pins import TRAINING_TOLERANCE
from icml26.harness.plots import pyplot, save_figure
from icml26.harness.tuning import Tuned

from .baselines import (
    GRIDS,
    STATIONARY,
    exponent_rounds,
    make_policy,
    policy_for,
    policy_stats,
    tune,
)
from .experts import evaluate_experts, iterative_rmft_experts
from .model import NumericalDecisionTransformer
from .rmft import RMFTConfig, Trajectories, distill_policy, iterative_rmft, rollout, sft
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
    dev_tasks: int = 400  # dev instances for tuning the classical knobs (never the held-out ones)
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
              "n_heads": (1, None), "eval_tasks": (2, None), "dev_tasks": (2, None), "long_horizon": (2, 128),
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
        # with 16); full keeps 30. Issue 54 (quick <= 90 s wall with 3 seeds on 2 cores): 10 RMFT
        # rounds instead of 16 for the loop arms and ad_best (~53 -> ~41 s per seed); full (30
        # rounds) is the headline profile
        return cls(seeds=(0, 1, 2), iterations=10, experts_iterations=8)

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


CLASSICAL = ("ucb1", "thompson", "eps_greedy", "uniform", "sw_ucb")  # at their textbook constants
TUNED = tuple(f"{n}_tuned" for n in GRIDS)  # the same, knob tuned on dev instances


def _tune_classical(c: Config, seed: int) -> dict[str, dict]:
    """Each classical knob tuned on dev instances (never the held-out ones): the training regime
    for the stationary policies, dev piecewise-stationary instances for sliding-window UCB."""
    dev = sample_bandits(c.dev_tasks, c.k, c.horizon, seed=500_000 + seed)
    dev_ns = sample_nonstationary(c.dev_tasks, c.k, c.ns_horizon, variation=c.ns_variation,
                                  seed=600_000 + seed)
    return {name: tune(name, dev if name in STATIONARY else dev_ns, seed=seed + 11) for name in GRIDS}


def _classical(envs: dict[str, BanditBatch], seed: int, tuned: dict[str, dict], c: Config,
               ts: tuple[int, ...]) -> dict[str, dict[str, float]]:
    """Regret (and the generalisation statistics) of the classical baselines on the held-out
    instances, at textbook constants and at the dev-tuned ones (each run resets its env)."""
    arms = {name: (name, None) for name in CLASSICAL}
    arms.update({f"{name}_tuned": (name, tuned[name]["chosen"]) for name in GRIDS})
    out: dict[str, dict[str, float]] = {}
    for arm, (name, value) in arms.items():
        out[arm] = {}
        for regime, env in envs.items():
            actions, _ = run_policy(policy_for(name, value, env), env, seed=seed + 7)
            out[arm].update(policy_stats(regime, actions, env, k_train=c.k,
                                         ts=ts if regime == "long_T" else None))
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
    shared: dict = {}  # the arms' first-round rollouts (same M0, tasks and seeds) are computed once
    for arm, loss_on in TEXT_ARMS.items():
        agent = copy.deepcopy(chat)
        agent.name = f"{arm}-s{seed}"
        h = iterative_rmft_text(agent, sampler, cfg, loss_on=loss_on, seed=seed + 3, shared=shared)
        metrics[arm] = {**evaluate(agent), "rollout_tokens": float(h.rollout_tokens),
                        "sft_examples": float(h.sft_examples),
                        "n_params": float(sum(p.numel() for p in agent.model.parameters()))}
        history[arm] = {"rollout_regret": h.rollout_regret, "kept_regret": h.kept_regret,
                        "rollout_valid": h.rollout_valid, "kept_valid": h.kept_valid,
                        "kept_consistent": h.kept_consistent, "kept_grounded": h.kept_grounded,
                        "sft_loss": h.sft_loss}
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
    tuned = _tune_classical(c, seed)
    # the distillation teacher: the best dev-tuned stationary policy (dev regret, not held-out)
    teacher = min(STATIONARY, key=lambda n: tuned[n]["best_dev_regret"])
    base = _base_model(c, seed)
    models = {"m0": base}
    histories = {}
    shared: dict = {}  # the arms' first-round rollouts (same M0, tasks and seeds) are computed once
    for arm in LOOP_ARMS:
        model = copy.deepcopy(base)
        histories[arm] = iterative_rmft(model, sampler, _rmft_config(c, SELECTION[arm]), seed=seed + 1,
                                        shared=shared)
        models[arm] = model
    # algorithm distillation of the dev-chosen best teacher (issue 49 replaced ad_ucb: UCB1 at its
    # textbook constant was the weakest teacher), same SFT rounds and examples as RMFT
    ad = copy.deepcopy(base)
    histories["ad_best"] = distill_policy(ad, lambda b, k: make_policy(teacher, tuned[teacher]["chosen"], b, k),
                                          sampler, _rmft_config(c, "regret"), seed=seed + 1)
    models["ad_best"] = ad

    envs = _regimes(c, seed)  # sampled once; every evaluation resets the env to its own seed
    ts = exponent_rounds(c.horizon, c.long_horizon)
    metrics: dict[str, dict[str, float]] = {}
    curves: dict[str, dict[str, list[float]]] = {}
    for arm, model in models.items():
        metrics[arm] = {}
        curves[arm] = {}
        for regime, env in envs.items():
            traj = rollout(model, env, seed=seed + 7)
            metrics[arm].update(policy_stats(regime, traj.actions, env, k_train=c.k,
                                             ts=ts if regime == "long_T" else None))
            curves[arm][regime] = env.cumulative_regret().mean(axis=0).tolist()
        h = histories.get(arm)
        metrics[arm]["sft_examples"] = float(h.sft_examples) if h else 0.0
        metrics[arm]["rollout_steps"] = float(h.rollout_steps) if h else 0.0
    metrics.update(_classical(envs, seed, tuned, c, ts))
    # the strongest classical baseline, chosen on dev instances (its held-out numbers are copied)
    metrics["best_tuned"] = dict(metrics[f"{teacher}_tuned"])
    text_metrics, text_history = _text_track(c, seed)
    metrics.update(text_metrics)
    experts_metrics, experts_history = _experts_track(c, seed)
    metrics.update(experts_metrics)
    tuning = {f"{name}_tuned": Tuned(chosen={t["knob"]: t["chosen"]}, val_score=-t["best_dev_regret"],
                                     scores=tuple(-v for v in t["dev_regret"]), grid_size=len(t["grid"]),
                                     budget=t["budget"])
              for name, t in tuned.items()}
    tuning["ad_best"] = Tuned(chosen={"teacher": teacher, tuned[teacher]["knob"]: tuned[teacher]["chosen"]},
                              val_score=-tuned[teacher]["best_dev_regret"],
                              scores=tuple(-tuned[n]["best_dev_regret"] for n in STATIONARY),
                              grid_size=sum(len(tuned[n]["grid"]) for n in STATIONARY),
                              budget={"sft_rounds": c.iterations, "sft_epochs": c.sft_epochs})
    extras = {"curves": curves, "text_history": text_history, "experts_history": experts_history,
              "tuning": tuned, "teacher": teacher, "exponent_rounds": list(ts),
              "history": {a: {"rollout_regret": h.rollout_regret, "kept_regret": h.kept_regret,
                              "entropy": h.entropy, "sft_loss": h.sft_loss}
                          for a, h in histories.items()}}
    return SeedOutput(metrics=metrics, extras=extras, tuning=tuning)


# ----------------------------------------------------------------------------------------------
# Claims (rules fixed before the first quick run)
# ----------------------------------------------------------------------------------------------


def _lower(m, arm: str, ref: str, regime: str = "in_dist"):
    return paired_improvement(m[arm][f"regret_{regime}"], m[ref][f"regret_{regime}"],
                              higher_is_better=False, label=f"{arm} vs {ref} regret: ")


def _sublinear(values, label: str) -> Decision:
    """Regret grows sublinearly: mean growth exponent + 2 s.e. (across seeds) < 1."""
    v = np.asarray(values, dtype=float)
    mean, se = mean_se(v)
    upper = mean + 2.0 * se
    ok = v.size >= 2 and bool(np.all(np.isfinite(v))) and upper < 1.0
    return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                    f"{label}growth exponent {mean:.3f} ± {se:.2g} (upper {upper:.3f} vs 1)",
                    {"exponent": v.tolist(), "mean": mean, "se": se, "upper": upper, "bound": 1.0},
                    mde=2.0 * se if v.size >= 2 else math.inf, n=int(v.size), uses_se=True)


def _finds_new_arms(values, k_more: int, label: str) -> Decision:
    """When the best arm is a new one, the policy pulls it more than uniform play would:
    mean share - 2 s.e. (across seeds) > 1 / K."""
    v = np.asarray(values, dtype=float)
    mean, se = mean_se(v)
    lower = mean - 2.0 * se
    ok = v.size >= 2 and bool(np.all(np.isfinite(v))) and lower > 1.0 / k_more
    return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                    f"{label}best-arm share when it is new {mean:.3f} ± {se:.2g} (lower {lower:.3f} vs "
                    f"uniform {1 / k_more:.3f})",
                    {"share": v.tolist(), "mean": mean, "se": se, "lower": lower, "uniform": 1.0 / k_more},
                    mde=2.0 * se if v.size >= 2 else math.inf, n=int(v.size), uses_se=True)


def _generalises(arm: str):
    """Claim 3 as the paper states it (generalisation across horizons and action spaces): beyond
    the training horizon the policy keeps learning (sublinear regret), and in a larger action
    space it finds a best arm it never saw in training. Linear regret and arm avoidance fail."""
    def rule(m, c) -> Decision:
        return per_regime([("long_T", _sublinear(m[arm]["growth_exponent"], f"{arm}: ")),
                           ("more_arms", _finds_new_arms(m[arm]["best_share_new"], c.more_arms, f"{arm}: "))],
                          require="all")
    return rule


def _generalises_beyond(arm: str, against: str):
    """The method against the control with the same statistics: lower exponent, higher share."""
    def rule(m, c) -> Decision:
        return per_regime([("long_T", paired_improvement(m[arm]["growth_exponent"], m[against]["growth_exponent"],
                                                         higher_is_better=False, label="exponent ")),
                           ("more_arms", paired_improvement(m[arm]["best_share_new"],
                                                            m[against]["best_share_new"], label="new-arm share "))],
                          require="all")
    return rule


RATIO = 1.5  # the brief's tolerance against the classical reference (its FOL check: <= 1.5 x Hedge)


def _near(arm: str, ref: str = "best_tuned"):
    """Within RATIO of the strongest dev-tuned classical policy: mean over seeds of
    ``regret(arm) - RATIO x regret(ref)`` + 2 s.e. < 0 (paired per seed)."""
    def rule(m, c) -> Decision:
        a, b = np.asarray(m[arm]["regret_in_dist"], float), np.asarray(m[ref]["regret_in_dist"], float)
        d = a - RATIO * b
        mean, se = mean_se(d)
        upper = mean + 2.0 * se
        ok = d.size >= 2 and bool(np.all(np.isfinite(d))) and upper < 0.0
        return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                        f"{arm} vs {RATIO:g} x {ref}: {a.mean():.3f} vs {RATIO:g} x {b.mean():.3f} "
                        f"(excess {mean:+.3f} ± {se:.2g}, upper {upper:+.3f} vs 0)",
                        {"method": a.tolist(), "reference": b.tolist(), "ratio": RATIO, "excess_mean": mean,
                         "excess_se": se, "upper": upper},
                        mde=2.0 * se if d.size >= 2 else math.inf, n=int(d.size), uses_se=True)
    return rule


def _other_processes(arm: str, against: str = "m0"):
    return lambda m, c: per_regime([(r, _lower(m, arm, against, r)) for r in ("gaussian", "nonstationary")],
                                   require="all")


RATIONALE_MARGIN = 0.1  # claim 4's non-inferiority margin: a 10-point drop (the brief's 90 % bar, 1 - 0.9)


def _survives(arm: str):
    """Claim 4's rule on ``arm``: in every seed, the fraction of turns of the distilled (top-k
    lowest-regret) held-out trajectories whose rationale is grounded (valid, and its stated
    evidence supports the action: a constant policy fails it; issue 49 replaced
    ``kept_consistent``, which a constant policy met) is >= the threshold and is
    non-inferior to M0's: gap - 2 binomial s.e. of the gap > -RATIONALE_MARGIN (a fixed margin; the
    earlier form, gap >= -2 s.e., loosened with the noise; CLAIMS.md rule 8).

    The s.e. it reads is a within-seed binomial one (valid for one seed), not an across-seed one, so
    ``uses_se`` is False; its mde is 2 x the largest per-seed s.e. of the gap (the drop it resolves)."""
    def rule(m, c) -> Decision:
        v, v0 = np.asarray(m[arm]["kept_grounded"]), np.asarray(m["text_m0"]["kept_grounded"])
        se = np.hypot(np.asarray(m[arm]["kept_grounded_se"]),
                      np.asarray(m["text_m0"]["kept_grounded_se"]))
        above = bool(np.all(v >= c.rationale_threshold))
        lower = v - v0 - 2.0 * se
        kept = bool(np.all(lower > -RATIONALE_MARGIN))
        verdict = "reproduced" if above and kept else "not reproduced"
        mde = float(2.0 * se.max())
        return Decision(verdict, f"{arm} vs text_m0 grounded rationales in distilled turns: "
                                 f"{v.mean():.3f} vs {v0.mean():.3f} (threshold {c.rationale_threshold}; "
                                 f"min lower bound {lower.min():+.3f} vs -{RATIONALE_MARGIN:g})",
                        {"grounded": v.tolist(), "m0_grounded": v0.tolist(), "gap_se": se.tolist(),
                         "lower_bound": lower.tolist(), "margin": RATIONALE_MARGIN,
                         "above_threshold": above, "no_drop": kept, "mde": mde},
                        mde=mde, n=int(v.size), uses_se=False)
    return rule


# Effects in regret units: M0 plays like uniform random (SFT on random play), whose expected regret on
# the training regime (means ~ U(0, 1), K = 5, T = 25) is (K / (K + 1) - 1/2) T = 8.33.
_UNIFORM_REGRET = (5 / 6 - 0.5) * 25

# Substrate gate of the text track: the warm start writes consistent rationales, so "they survive
# RMFT" can be tested (a warm start without them has nothing to keep).
MIN_TEXT_PARAMS = 1e8  # a language model that writes its own rationales (the smallest chat LLMs)

SUBSTRATE = (
    SubstrateCheck("text_model_is_an_llm",
                   "the text track fine-tunes (end to end, through the chat-model layer) a language "
                   "model of >= 1e8 parameters that writes its own rationales; the offline stand-in is "
                   "a ~0.1M-parameter char LM trained on a template rationale, so the claim is "
                   "inconclusive until an LLM is fine-tuned (an opted-in --llm model is only evaluated)",
                   value=lambda m, c: float(np.mean(m["text_rmft"]["n_params"])) - MIN_TEXT_PARAMS, low=0.0),
    SubstrateCheck("text_m0_rationales",
                   "text_m0 (the warm start) writes consistent rationales in >= rationale_threshold "
                   "(0.9) of its distilled turns",
                   value=lambda m, c: float(np.mean(m["text_m0"]["kept_consistent"]))
                   - c.rationale_threshold, low=0.0),
)


_BANDIT = ("regret_in_dist", "regret_long_T", "regret_more_arms", "regret_gaussian", "regret_nonstationary",
           "growth_exponent", "best_share_new", "best_share_old")
_TEXT = ("regret", "parsed", "tokens",
         *(f"{p}{n}{s}" for n in ("consistent", "valid", "grounded") for p, s in
           (("", ""), ("kept_", ""), ("kept_", "_se"))))
METRICS = {
    ("m0", *LOOP_ARMS, "ad_best"): (*_BANDIT, "sft_examples", "rollout_steps"),
    ("ucb1", "thompson", "eps_greedy", "uniform", "sw_ucb", "*_tuned", "best_tuned"): _BANDIT,
    ("text_m0", "text_llm"): _TEXT,
    tuple(TEXT_ARMS): (*_TEXT, "rollout_tokens", "sft_examples", "n_params"),
    ("experts_m0", "hedge"): ("fol_regret",),
    ("experts_rmft", "experts_random_k"): ("fol_regret", "rollout_steps", "sft_examples"),
}


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
        positive="ad_best",
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
        statement="RMFT's policy generalises across horizons and action spaces: beyond the training "
                  "horizon its regret keeps growing sublinearly, and with more arms than trained on it "
                  "finds a best arm that is one of the new arms",
        paper_value="qualitative (abstract: generalization across horizons, action spaces, reward "
                    "processes)",
        metric="long_T (T=100): growth exponent of mean cumulative regret fitted at t = 25, 50, 100 "
               "(1 = linear); more_arms (K=8): share of pulls on the best arm over the instances whose "
               "best arm is a new one (index >= 5)",
        scale=SCALE,
        rule="long_T: mean exponent + 2 s.e. < 1 (sublinear); more_arms: mean new-best-arm share - 2 s.e. "
             "> 1/K = 0.125 (better than uniform play); both must hold (rule restated by issue 49: the "
             "earlier rule, lower regret than M0 in every OOD regime, was passed by a linear-regret policy "
             "that avoided the new arms)",
        decide=_generalises("rmft"),
        control_description="random_k (same compute, no regret signal) through the same rule; if it "
                            "passes too, RMFT is judged against it (lower exponent, higher share, paired)",
        control=_generalises("random_k"),
        beyond=_generalises_beyond("rmft", "random_k"),
        arms=ClaimArms(method="rmft", baselines=("m0",), control="random_k"),
        effect=0.1,
        effect_source="smallest that matters (our choice): an exponent 0.1 below linear, a share 0.1 "
                      "above uniform play's 1/K",
    ),
    Claim(
        id="other_processes",
        statement="RMFT's gain over M0 carries over to other reward processes than trained on",
        paper_value="qualitative (abstract: generalization across reward processes)",
        metric="mean cumulative regret: Gaussian rewards (T=25), piecewise-stationary means (dynamic "
               "regret, T=50)",
        scale=SCALE,
        rule="in both regimes: RMFT regret < M0 regret in every seed, mean paired gap > 2 s.e.",
        decide=_other_processes("rmft"),
        control_description="random_k (same compute, no regret signal) vs M0 through the same rule",
        control=_other_processes("random_k"),
        beyond=_other_processes("rmft", against="random_k"),
        arms=ClaimArms(method="rmft", baselines=("m0",), control="random_k"),
        effect=1.0,
        effect_source="smallest that matters: 1 unit of cumulative regret per task in each regime "
                      "(our choice; the brief's check 3 gives no size)",
    ),
    Claim(
        id="near_tuned_baselines",
        statement="RMFT's policy decides about as well as the strongest classical bandit algorithm, "
                  "tuned with equal effort (issue 49: the headline judged against the strongest "
                  "tuned baseline, not only against M0)",
        paper_value="not stated in the reachable sources; the brief bounds RMFT only in FOL (<= 1.5 x "
                    "Hedge), here transferred to MAB against the dev-tuned classical policy",
        metric="mean cumulative pseudo-regret at T on the held-out Bernoulli MAB tasks (K=5, T=25); "
               "best_tuned = the classical policy (UCB1 c, epsilon-greedy epsilon, Thompson prior a; "
               "6-point grids with the textbook and the 'off' value) with the lowest dev regret",
        scale=SCALE,
        rule=f"mean over seeds of regret(rmft) - {RATIO:g} x regret(best_tuned), + 2 s.e., < 0",
        decide=_near("rmft"),
        control_description="ad_best: SFT of M0 on the trajectories of the dev-chosen best classical "
                            "policy with RMFT's SFT rounds and examples (no rollouts of the model, no "
                            "regret filter), through the same rule; if it passes too, RMFT is judged "
                            "against it (paired, lower regret)",
        control=_near("ad_best"),
        beyond=lambda m, c: _lower(m, "rmft", "ad_best"),
        arms=ClaimArms(method="rmft", baselines=("best_tuned",), control="ad_best"),
        effect=1.0,
        effect_source="smallest that matters: 1 unit of cumulative regret per task (our choice, as "
                      "other_processes)",
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
        metric="fraction of turns of the top-k lowest-regret held-out text rollouts whose rationale is "
               "grounded: it parses, names the action played, states that arm's true wins/pulls, and "
               "that arm has the highest Laplace mean (kept_grounded; a constant policy fails it; "
               "kept_consistent and kept_valid, which a constant policy meets, reported beside it)",
        scale="laptop-scale text track: tiny char LM (d=64, 2 layers) behind TinyLMChat, Bernoulli "
              "MAB K=3 T=10, M0 = SFT on random play, text_iterations RMFT rounds of L=8 rollouts, "
              "top-k=2",
        rule="in every seed: text_rmft's grounded fraction >= rationale_threshold (0.9, the "
             "brief's) AND non-inferior to text_m0's: gap - 2 binomial s.e. of the gap > -0.1 "
             "(metric changed by issue 49 from kept_consistent, met by a constant policy; gated on "
             "an LLM substrate)",
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
        gates=("text_model_is_an_llm", "text_m0_rationales"),
    ),
)


def plot(config: Config, outputs, outdir):
    plt = pyplot()
    paths = []
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for arm in (*LOOP_ARMS, "ad_best"):
        curve = np.mean([o.extras["history"][arm]["rollout_regret"] for o in outputs], axis=0)
        ax.plot(np.arange(1, len(curve) + 1), curve, marker="o", ms=3, label=arm)
    ax.set_xlabel("RMFT iteration")
    ax.set_ylabel("mean rollout regret (training tasks)")
    ax.legend(fontsize=8)
    paths.append(save_figure(fig, outdir / "regret_per_iteration.png"))
    fig, axes = plt.subplots(1, len(REGIMES), figsize=(3.2 * len(REGIMES), 3))
    for ax, regime in zip(axes, REGIMES, strict=True):
        for arm in ("m0", *LOOP_ARMS, "ad_best"):
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

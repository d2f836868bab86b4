"""Reproduction of "Verbalized Bayesian Persuasion" (Li et al., arXiv 2502.01587) at laptop scale.

Three classic games (recommendation letter, courtroom, law enforcement) are played through a text
channel: a sender chat model writes letters from a prompt (its policy), a receiver chat model
reads the published commitment and the letter and answers a JSON decision. Offline both are the
library's template writer and exact-Bayes reader behind :mod:`icml26.core.llm`; ``--llm URL``
puts a real model in the roles named by ``llm_roles``. The proposal loop searches sender prompts
from full disclosure (not the solution); every arm gets the same number of proposals and the same
training episodes, and all arms are scored on the same evaluation episodes (common random numbers).

Arms (per scenario): ``loop`` (the method); ``loop_credulous`` (the same loop against a receiver
that takes praise at face value); ``random_search`` (as many uniformly drawn prompts);
``loop_shuffled`` (the loop with its score feedback permuted); ``no_commitment`` (the policy is
not published); ``no_obfuscation`` (lies may not imitate honest style; tells leak with
probability ``leak``); ``no_obfuscation_lowleak`` (the same at ``low_leak``); ``full_disclosure``
(the honest committed policy, no search).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml26.core.llm import resolve_chat_model
from icml26.core.progress import phase
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
from icml26.harness.claims import per_regime
from icml26.harness.plots import pyplot, save_figure
from icml26.harness.tuning import Tuned

from .classic import binary_threshold_optimum, no_information_value, solve_persuasion_lp
from .solver import (
    find_equilibrium,
    grid_search,
    local_proposer,
    played_deviation_gain,
    random_search,
    receiver_deviation_gain,
    sender_deviation_gain,
)
from .verbal import (
    SenderPrompt,
    bayesian_receiver,
    credulous_receiver,
    exact_outcome,
    llm_reader,
    play,
    read_letter,
    scenario,
    template_sender,
)

SCALE = ("laptop-scale: offline template sender and exact-Bayes text receiver behind the chat-model "
         "interface, a local proposal loop standing in for the LLM optimiser; the paper uses "
         "Llama-3.1-8B for every role")
ARMS = ("loop", "loop_credulous", "random_search", "random_prior", "lie_grid", "loop_shuffled",
        "no_commitment", "no_obfuscation", "no_obfuscation_lowleak", "full_disclosure")
SEARCH_BASELINES = ("random_search", "random_prior", "lie_grid")  # no feedback, same proposal budget
PER_SCENARIO = ("value", "lie_rate", "honest_rate", "receiver_value", "exact_value", "regret",
                "sender_gain", "receiver_gain")
# every arm writes each metric per scenario, as f"{scenario}_{metric}" (harness.metrics)
METRICS = {ARMS: tuple(f"{s}_{k}" for s in ("letter", "courtroom", "law") for k in PER_SCENARIO)}
# Decision constants, fixed before any run (the brief's acceptance checks, section 5)
TOL_VALUE = 0.03   # |sender value - theory|
TOL_LIE = 0.05     # |lie rate - theory|
MIN_HONEST = 0.98  # praise rate for good states
TOL_GAIN = 0.02    # largest profitable deviation (either side)
MIN_DROP = 0.10    # an ablation moves the value by at least this much

# CLAIMS.md rule 9 (issue 40): loop_vs_random flipped on seeds 3-7 instead of 0-2. The full profile
# re-runs every seed set below (its own six seeds, quick's three, and the set that flipped).
PROTOCOL_KNOBS = {"seeds": (tuple(range(6)), (0, 1, 2), (3, 4, 5, 6, 7))}


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Settings. Sources: scenario parameters and leak = 0.9 from the brief (section 5; the paper's
    exact numbers are not public); loop sizes, episodes and low_leak = 0.3 are our choice, sized
    for the CPU budget."""

    scenarios: tuple[str, ...] = ("letter", "courtroom", "law")
    leak: float = 0.9
    low_leak: float = 0.3
    n_iters: int = 12
    n_candidates: int = 4
    n_train: int = 100
    n_eval: int = 1000
    n_record: int = 100
    llm_roles: str = "sender,receiver"

    BOUNDS = {"leak": (0.0, 1.0), "low_leak": (0.0, 1.0), "n_iters": (1, None),
              "n_candidates": (3, None), "n_train": (1, None), "n_eval": (10, None),
              "n_record": (0, None)}

    def extra_checks(self) -> None:
        for s in self.scenarios:
            if s not in ("letter", "courtroom", "law"):
                self.out_of_range("scenarios", "a tuple of letter, courtroom, law")
        roles = {r for r in self.llm_roles.split(",") if r}
        if not roles <= {"sender", "receiver", "proposer"}:
            self.out_of_range("llm_roles", "comma-separated roles among sender, receiver, proposer")

    @classmethod
    def smoke(cls) -> Config:
        return cls(seeds=(0, 1, 2), scenarios=("letter",), n_iters=6, n_train=50, n_eval=400)

    @classmethod
    def quick(cls) -> Config:
        # five seeds: loop_vs_random flipped between seeds 0-2 and 3-7 (issue 49)
        return cls(seeds=(0, 1, 2, 3, 4))

    @classmethod
    def full(cls) -> Config:
        return cls(seeds=tuple(range(6)), n_iters=20, n_train=300, n_eval=8000)


def theory(name: str, leak: float) -> dict[str, float]:
    """The classic numbers of a scenario: the LP optimum, its lie rate, the no-information and
    full-disclosure values, and the value without obfuscation at tell rate ``leak``
    (``mu0 + (1 - mu0) min(q*, 1 - leak)``: detected lies are not obeyed)."""
    sc = scenario(name)
    sol = solve_persuasion_lp(sc.instance)
    _, q_star = binary_threshold_optimum(sc.prior_good, sc.threshold)
    mu0 = sc.prior_good
    return {"value": sol.value, "lie_rate": float(sol.pi[1, 0]), "q_star": q_star,
            "no_information": no_information_value(sc.instance), "full_disclosure": mu0,
            "no_obfuscation": mu0 + (1 - mu0) * min(q_star, 1 - leak)}


def _roles(config: Config) -> set[str]:
    return {r for r in config.llm_roles.split(",") if r}


def run(config: Config, seed: int) -> SeedOutput:
    metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
    extras: dict[str, dict] = {}
    tuning: dict[str, Tuned] = {}
    roles = _roles(config)
    live: set[str] = set()  # roles a real model (--llm) plays

    def role(name: str, offline):
        model = resolve_chat_model(offline) if name in roles else offline
        if model is not offline:
            live.add(name)
        return model

    proposer = role("proposer", local_proposer())
    for si, name in enumerate(config.scenarios):
        sc = scenario(name)
        th = theory(name, config.leak)
        sender = role("sender", template_sender(sc, leak=config.leak))
        sender_low = role("sender", template_sender(sc, leak=config.low_leak, name="template_sender_lowleak"))
        # a free-writing LLM sender is read by the LLM itself (declared in extras["reader"])
        reader = llm_reader(sender) if "sender" in live else read_letter
        bayes = role("receiver", bayesian_receiver(sc, leak=config.leak, reader=reader))
        bayes_low = role("receiver", bayesian_receiver(sc, leak=config.low_leak, reader=reader,
                                                       name="bayes_receiver_lowleak"))
        credulous = role("receiver", credulous_receiver(sc))
        train_seed = int(np.random.default_rng([seed, si, 0]).integers(2**31 - 1))
        start = SenderPrompt(1.0, 0.0)  # full disclosure in natural style: not the solution
        budget = config.n_iters * config.n_candidates
        loop_kw = {"n_iters": config.n_iters, "n_candidates": config.n_candidates,
                   "n_episodes": config.n_train, "seed": train_seed, "reader": reader}
        base_kw = {"start": start, "n_proposals": budget, "n_episodes": config.n_train,
                   "seed": train_seed, "reader": reader}
        no_commit = SenderPrompt(1.0, 0.0, commit=False)
        with phase("search"):
            # arm -> (search result or None, sender, receiver, receiver kind, leak, obfuscation allowed,
            #         record size)
            searches = {
                "loop": (find_equilibrium(sc, sender, bayes, proposer, start=start, **loop_kw),
                         sender, bayes, "bayes", config.leak, True, 0),
                "loop_credulous": (find_equilibrium(sc, sender, credulous, proposer, start=start, **loop_kw),
                                   sender, credulous, "credulous", config.leak, True, 0),
                "random_search": (random_search(sc, sender, bayes, **base_kw),
                                  sender, bayes, "bayes", config.leak, True, 0),
                "random_prior": (random_search(sc, sender, bayes, prior="loop", **base_kw),
                                 sender, bayes, "bayes", config.leak, True, 0),
                "lie_grid": (grid_search(sc, sender, bayes, **base_kw),
                             sender, bayes, "bayes", config.leak, True, 0),
                "loop_shuffled": (find_equilibrium(sc, sender, bayes, proposer, start=start,
                                                   shuffle_feedback=True, **loop_kw),
                                  sender, bayes, "bayes", config.leak, True, 0),
                "no_commitment": (find_equilibrium(sc, sender, bayes, proposer, start=no_commit,
                                                   n_record=config.n_record, **loop_kw),
                                  sender, bayes, "record", config.leak, True, config.n_record),
                "no_obfuscation": (find_equilibrium(sc, sender, bayes, proposer, start=start,
                                                    allow_obfuscate=False, **loop_kw),
                                   sender, bayes, "bayes", config.leak, False, 0),
                "no_obfuscation_lowleak": (find_equilibrium(sc, sender_low, bayes_low, proposer, start=start,
                                                            allow_obfuscate=False, **loop_kw),
                                           sender_low, bayes_low, "bayes", config.low_leak, False, 0),
                "full_disclosure": (None, sender, bayes, "bayes", config.leak, True, 0),
            }
        with phase("eval"):
            eval_rng = np.random.default_rng([seed, si, 1])
            good = eval_rng.random(config.n_eval) < sc.prior_good
            eval_seeds = eval_rng.integers(0, 2**31 - 1, size=config.n_eval)
            record_seed = int(eval_rng.integers(2**31 - 1))
            n_dev = min(config.n_eval, 200)
            found_prompts = {}
            for arm, (res, snd, rcv, kind, leak, allow_obf, n_rec) in searches.items():
                prompt = res.best if res is not None else start
                found_prompts[arm] = prompt.to_dict()
                ep = play(sc, prompt, snd, rcv, good, eval_seeds, n_record=n_rec, record_seed=record_seed,
                          reader=reader)
                if "receiver" in live and kind != "credulous":
                    # every metric from the played game: the LLM receiver is not the exact evaluator
                    exact = ep.sender_value
                    gain, _ = played_deviation_gain(sc, prompt, snd, rcv, good[:n_dev], eval_seeds[:n_dev],
                                                    allow_obfuscate=allow_obf, reader=reader, n_record=n_rec,
                                                    record_seed=record_seed)
                else:
                    exact = exact_outcome(sc, prompt, leak=leak, receiver=kind)["value"]
                    gain, _ = sender_deviation_gain(sc, prompt, leak=leak, receiver=kind,
                                                    allow_obfuscate=allow_obf)
                m = {"value": ep.sender_value, "lie_rate": ep.praise_rate(False), "honest_rate": ep.praise_rate(True),
                     "receiver_value": ep.receiver_value, "exact_value": exact, "regret": th["value"] - exact,
                     "sender_gain": gain, "receiver_gain": receiver_deviation_gain(sc, prompt, ep, leak=leak)}
                metrics[arm].update({f"{name}_{k}": v for k, v in m.items()})
                if res is not None:
                    tuning[f"{arm}@{name}"] = Tuned(
                        chosen=prompt.to_dict(), val_score=res.best_score, scores=(),
                        grid_size=res.n_proposals, budget={"proposals": res.n_proposals,
                                                           "train_episodes": res.episodes})
        curves = {}
        for arm in ("loop", "random_search", "random_prior", "lie_grid", "loop_shuffled"):
            hist = searches[arm][0].history
            k = config.n_candidates
            curves[arm] = [float(max(v for _, v in hist[:1 + k * (i + 1)])) for i in range(config.n_iters)]
        extras[name] = {"theory": th, "prompts": found_prompts, "best_training_score": curves}
    extras["llm_roles_live"] = sorted(live)
    extras["reader"] = "llm (the sender model classifies each letter)" if "sender" in live else "phrase"
    extras["metrics_from"] = ("played game (LLM receiver): exact_value, regret, sender_gain are played"
                              if "receiver" in live else "exact evaluator (offline receiver)")
    return SeedOutput(metrics=metrics, extras=extras, tuning=tuning)


# ----------------------------------------------------------------------------------------------
# claims
# ----------------------------------------------------------------------------------------------

def _mean(m, arm: str, key: str) -> float:
    return mean_se(m[arm][key])[0]


def _resolution(values) -> float:
    """The distance from a tolerance bound a seed mean can resolve: 2 s.e. of the mean (0 for one
    seed, whose spread is unmeasured; the tolerance rules read no s.e.), as ``threshold_rule``."""
    return 2.0 * mean_se(values)[1] if len(values) >= 2 else 0.0


def _det(values, mde: float) -> dict:
    return {"mde": mde, "n": len(values), "uses_se": False}


def _classic(arm: str):
    def rule(m, c: Config) -> Decision:
        regimes = []
        for name in c.scenarios:
            th = theory(name, c.leak)
            v, lie, hon = (_mean(m, arm, f"{name}_{k}") for k in ("value", "lie_rate", "honest_rate"))
            ok = abs(v - th["value"]) <= TOL_VALUE and abs(lie - th["lie_rate"]) <= TOL_LIE and hon >= MIN_HONEST
            vals = m[arm][f"{name}_value"]
            regimes.append((name, Decision(REPRODUCED if ok else NOT_REPRODUCED,
                                           f"value {v:.3f} (theory {th['value']:.3f}), lie rate {lie:.3f} "
                                           f"(theory {th['lie_rate']:.3f}), honest {hon:.3f}",
                                           {"value": v, "lie_rate": lie, "honest_rate": hon,
                                            "theory_value": th["value"], "theory_lie_rate": th["lie_rate"]},
                                           **_det(vals, _resolution(vals)))))
        return per_regime(regimes, require="all", label=f"{arm}: ")
    return rule


def _equilibrium(arm: str):
    def rule(m, c: Config) -> Decision:
        regimes = []
        for name in c.scenarios:
            gs = _mean(m, arm, f"{name}_sender_gain")
            gr = _mean(m, arm, f"{name}_receiver_gain")
            ok = gs <= TOL_GAIN and gr <= TOL_GAIN
            s_vals, r_vals = m[arm][f"{name}_sender_gain"], m[arm][f"{name}_receiver_gain"]
            mde = max(_resolution(s_vals), _resolution(r_vals))
            regimes.append((name, Decision(REPRODUCED if ok else NOT_REPRODUCED,
                                           f"sender gain {gs:.4f}, receiver gain {gr:.4f}",
                                           {"sender_gain": gs, "receiver_gain": gr}, **_det(s_vals, mde))))
        return per_regime(regimes, require="all", label=f"{arm}: ")
    return rule


def _beats_random(arm: str, against: tuple[str, ...] = SEARCH_BASELINES):
    """``arm``'s regret below every arm of ``against`` (paired seeds), in every scenario."""
    def rule(m, c: Config) -> Decision:
        regimes = [(name, all_of(*(paired_improvement(m[arm][f"{name}_regret"], m[b][f"{name}_regret"],
                                                      higher_is_better=False, label=f"vs {b}: regret ")
                                   for b in against)))
                   for name in c.scenarios]
        return per_regime(regimes, require="all", label=f"{arm} vs {', '.join(against)}: ")
    return rule


def _ablation(arm: str, target: str):
    """``arm``'s value within TOL_VALUE of the theory's ``target`` and below the loop's by MIN_DROP."""
    def rule(m, c: Config) -> Decision:
        regimes = []
        for name in c.scenarios:
            th = theory(name, c.leak)
            v = _mean(m, arm, f"{name}_value")
            drop = _mean(m, "loop", f"{name}_value") - v
            ok = abs(v - th[target]) <= TOL_VALUE and drop >= MIN_DROP
            drops = [a - b for a, b in zip(m["loop"][f"{name}_value"], m[arm][f"{name}_value"], strict=True)]
            regimes.append((name, Decision(REPRODUCED if ok else NOT_REPRODUCED,
                                           f"value {v:.3f} (theory {th[target]:.3f}), drop from loop {drop:.3f}",
                                           {"value": v, "theory": th[target], "drop": drop},
                                           **_det(drops, _resolution(drops)))))
        return per_regime(regimes, require="all", label=f"{arm}: ")
    return rule


CLAIMS = (
    Claim(
        id="classic_values",
        statement=("The verbalized game, solved by the proposal loop from full disclosure, reproduces the "
                   "classic BP optimum: sender value, lie rate for the bad state, praise for every good state"),
        paper_value=("section S1: classic values reproduced; theory (KG 2011): letter 2/3 with lie rate 1/2, "
                     "courtroom 0.6 with 3/7, law enforcement min(1, mu0/p*) = 0.5 with 3/8"),
        metric="text-measured sender value, lie rate, honest rate (seed means)",
        scale=SCALE,
        rule=(f"in every scenario: |value - V*| <= {TOL_VALUE}, |lie rate - q*| <= {TOL_LIE}, "
              f"praise rate for good states >= {MIN_HONEST}"),
        decide=_classic("loop"),
        control_description=("the same loop against a credulous receiver (takes praise at face value, ignores "
                             "the commitment): the strongest arm without the Bayesian reading of a verbalized "
                             "commitment; it must not land on the classic values"),
        control=_classic("loop_credulous"),
        arms=ClaimArms(method="loop", baselines=("full_disclosure",), control="loop_credulous"),
        effect=TOL_VALUE,
        effect_source="brief acceptance checks: |value - V*| <= 0.03 (the distance from theory that matters)",
    ),
    Claim(
        id="equilibrium",
        statement="The loop's outcome is an equilibrium: no profitable deviation for the sender or the receiver",
        paper_value="qualitative (theory: convergence to an approximate Bayes-correlated equilibrium)",
        metric=("sender: best gain of another prompt (exact, grid of 101 lie rates + q*, 5 honesty rates, both "
                "styles); receiver: best gain over its observed per-class decisions (exact)"),
        scale=SCALE,
        rule=f"in every scenario: mean sender gain <= {TOL_GAIN} and mean receiver gain <= {TOL_GAIN}",
        decide=_equilibrium("loop"),
        control_description=("random search with the same number of proposals and training episodes: the "
                             "strongest search without the loop's feedback; if it passes too, no search "
                             "mechanism is needed"),
        control=_equilibrium("random_search"),
        arms=ClaimArms(method="loop", control="random_search"),
        effect=TOL_GAIN,
        effect_source="brief acceptance checks: largest profitable deviation <= 0.02",
    ),
    Claim(
        id="loop_vs_random",
        statement=("The proposal loop (LLM proposals + game solver) finds the equilibrium more efficiently than "
                   "search without feedback with the same number of proposals"),
        paper_value="qualitative (the generalized equilibrium-finding algorithm)",
        metric="regret V* - exact value of the chosen prompt (lower is better)",
        scale=SCALE,
        rule=("in every scenario and against each search without feedback (uniform random prompts; random "
              "lie rates with the loop's own starting knowledge: honesty 1, obfuscation on; an even grid "
              "of lie rates at honesty 1, obfuscation on; all with the loop's 48 proposals and training "
              "episodes): loop regret < baseline regret in every seed, mean paired gap > 2 s.e."),
        decide=_beats_random("loop"),
        control_description=("the same loop shown its history with the scores permuted: the same proposal "
                             "distribution without the feedback"),
        control=_beats_random("loop_shuffled"),
        beyond=_beats_random("loop", against=("loop_shuffled",)),
        arms=ClaimArms(method="loop", baselines=SEARCH_BASELINES, control="loop_shuffled"),
        effect=TOL_VALUE,
        effect_source="smallest that matters: a regret gap of 0.03, the brief's value tolerance (our choice; "
                      "the paper gives no size)",
    ),
    Claim(
        id="obfuscation",
        statement=("Without information obfuscation, detectable lies cap the sender's value at the theory's "
                   "mu0 + (1 - mu0) min(q*, 1 - leak) (letter, leak 0.9: 0.40 instead of 2/3)"),
        paper_value="qualitative (obfuscation is one of the three techniques); value from BP theory",
        metric="text-measured sender value",
        scale=SCALE,
        rule=(f"in every scenario: |value(no obfuscation) - theory| <= {TOL_VALUE} and value(loop) - "
              f"value(no obfuscation) >= {MIN_DROP}"),
        decide=_ablation("no_obfuscation", "no_obfuscation"),
        control_description=("no obfuscation when tells are rare (leak 0.3): the sender lies more and theory "
                             "says the value does not move; the rule (prediction at leak 0.9) must fail"),
        control=_ablation("no_obfuscation_lowleak", "no_obfuscation"),
        arms=ClaimArms(method="no_obfuscation", control="no_obfuscation_lowleak"),
        effect=MIN_DROP,
        effect_source="brief acceptance checks: an ablation moves the value by >= 0.10",
    ),
    Claim(
        id="commitment",
        statement=("Without a verbalized commitment the receiver cannot trust praise and the sender's value "
                   "collapses to the no-information value"),
        paper_value="qualitative (verbalized commitment assumption); value from BP theory (0 here)",
        metric="text-measured sender value",
        scale=SCALE,
        rule=(f"in every scenario: |value(no commitment) - no-information value| <= {TOL_VALUE} and "
              f"value(loop) - value(no commitment) >= {MIN_DROP}; without a commitment the receiver "
              "infers the sender's policy from its record of n_record past letters (Jeffreys estimate) "
              "and the loop optimises against that receiver"),
        decide=_ablation("no_commitment", "no_information"),
        control_description=("full disclosure with a published commitment: an honest committed sender; if "
                             "it also collapsed, the collapse would come from the receiver, not from the "
                             "missing commitment"),
        control=_ablation("full_disclosure", "no_information"),
        arms=ClaimArms(method="no_commitment", control="full_disclosure"),
        effect=MIN_DROP,
        effect_source="brief acceptance checks: an ablation moves the value by >= 0.10",
    ),
)


def plot(config: Config, outputs, outdir: Path) -> list[Path]:
    plt = pyplot()
    paths = []
    n = len(config.scenarios)
    fig, axes = plt.subplots(1, n, figsize=(4.5 * n, 4), squeeze=False)
    for ax, name in zip(axes[0], config.scenarios, strict=True):
        vals = [np.mean([o.metrics[a][f"{name}_value"] for o in outputs]) for a in ARMS]
        ax.barh(range(len(ARMS)), vals, color="tab:blue")
        th = outputs[0].extras[name]["theory"]
        ax.axvline(th["value"], color="k", ls="--", label="BP optimum")
        ax.set_yticks(range(len(ARMS)), ARMS, fontsize=7)
        ax.set_xlabel("sender value (text-measured)")
        ax.set_title(name)
        ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "values.png"))
    fig, axes = plt.subplots(1, n, figsize=(4.5 * n, 3.5), squeeze=False)
    for ax, name in zip(axes[0], config.scenarios, strict=True):
        for arm in ("loop", *SEARCH_BASELINES, "loop_shuffled"):
            curves = np.array([o.extras[name]["best_training_score"][arm] for o in outputs])
            ax.plot(np.arange(1, curves.shape[1] + 1), curves.mean(axis=0), label=arm)
        ax.axhline(outputs[0].extras[name]["theory"]["value"], color="k", ls="--")
        ax.set_xlabel("iteration")
        ax.set_ylabel("best training score")
        ax.set_title(name)
        ax.legend(fontsize=7)
    paths.append(save_figure(fig, outdir / "convergence.png"))
    return paths


__all__ = ["ARMS", "CLAIMS", "Config", "plot", "run", "theory"]

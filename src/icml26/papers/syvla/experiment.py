"""Laptop-scale reproduction of SyVLA (arXiv 2606.09009): Intention Decoupling and similar-sample guided RL.

Reconstructed from public summaries (the paper text was not readable): every mechanism below is [inferred],
see the brief and README. One seed =

* S0: the "pretrained VLM", a TinyVLM on object tokens trained once on VQA about Tabletop2D scenes (canonical
  words + synonyms) by a fixed recipe and shipped (``train.make_pretrained_vlm``; every seed and arm starts from
  it, as every run of the paper starts from one pretrained VLM), its VQA accuracy ``acc0`` on held-out
  questions (``Config(pretrained=False)``: S0 per seed instead);
* S1: four VLA SFT arms from that same checkpoint with identical budgets (steps, batch, lr, loss weights,
  VL co-training batch), differing only in how the action loss reaches the backbone:
  ``naive`` (joint gradient), ``ki`` (knowledge insulation: stop-gradient on the intent),
  ``id_t`` (ID-T: query tokens read stop-gradient context K/V), ``id_p`` (ID-P: gradient-norm parameter mask);
* S2: four RL arms from the ``id_p`` checkpoint with identical budgets (iterations, rollouts, updates, samples
  per update), updating the flow action expert: ``rl_sft`` (continued SFT on demo chunks),
  ``rl_awfm`` (on-policy advantage-weighted FM), ``rl_random`` (AW-FM + random expert chunks, advantage 1),
  ``rl_ssg`` (AW-FM + k-NN-retrieved expert chunks, advantage 1).

Budgets and loss weights were fixed before any run (lambda_r = lambda_vl = 1, co-training VQA batch = half
the demo batch every step, ID-P protect ratio 0.5 = the brief's default, not tuned for any arm); no arm is
tuned, so the equal-effort budget is the identical training budget recorded in ``extras``. The visual
tokeniser, the shipped VLM, the action expert's lr (3e-3) and the 8 flow draws per chunk were chosen later,
on a development seed, from substrate health alone (VQA accuracy, naive ID success; README), and apply to
every arm alike.

Substrate gates (``SUBSTRATE``, issue 43 item 1): the naive S1 policy reaches ID success >= 0.4 and >= 4x a
uniform-random policy's success (measured per seed on the same evaluation episodes, ``random_success_<split>``
on the naive arm) on every split a claim is judged on; the S2 start (``id_p``) >= 4x random on ID. A failing
gate makes the claims that depend on it inconclusive.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np
import torch

from icml26.harness import (
    Claim,
    ClaimArms,
    Decision,
    ExperimentConfig,
    SeedOutput,
    SubstrateCheck,
    all_of,
    noninferior,
    paired_improvement,
)
from icml26.harness.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from icml26.harness.pins import TRAINING_TOLERANCE
from icml26.harness.plots import save_figure

from .data import make_demo_dataset, make_vl_dataset
from .env import SPLITS, Tabletop2DEnv
from .model import REASON_LEN, SyVLAPolicy
from .rl import SSGRLConfig, SSGRLTrainer, retrieval_key
from .train import (
    PRETRAINED_VLM,
    UniformRandomPolicy,
    evaluate_success,
    evaluate_vqa,
    load_pretrained_vlm,
    pretrain_vl,
    sft_vla,
)

PIN_TOLERANCE = TRAINING_TOLERANCE  # float32 training: pinned smoke metrics compared with a training tolerance
S1_ARMS = ("naive", "ki", "id_t", "id_p")
S2_ARMS = ("rl_sft", "rl_awfm", "rl_random", "rl_ssg")
GATE_SUCCESS = 0.4  # issue 43: naive S1 reaches >= 0.4 ID success ...
GATE_X_RANDOM = 4.0  # ... and >= 4x a uniform-random policy's success on every split it is judged on
_S2_EXPERTS = {"rl_sft": "sft", "rl_awfm": "none", "rl_random": "random", "rl_ssg": "similar"}


@dataclass(frozen=True)
class Config(ExperimentConfig):
    n_vl: int = 3000
    n_vl_test: int = 500
    n_demo_episodes: int = 300
    d: int = 64
    layers: int = 2
    s0_steps: int = 200
    s1_steps: int = 150
    batch: int = 64
    lr_s0: float = 2e-3
    lr_s1: float = 1e-3
    lambda_r: float = 1.0
    lambda_vl: float = 1.0
    protect_ratio: float = 0.5
    n_eval: int = 128
    rl_iters: int = 6
    rl_group: int = 8
    rl_updates: int = 8
    rl_lr: float = 3e-4
    rl_k: int = 1
    grounding: bool = False  # TinyVLM text-to-pixel grounding (see model.PixelGrounding); off: not yet helpful
    vision: str = "objects"  # visual tokens: "objects" (parameter-free object tokeniser) or "patches" (8x8)
    pretrained: bool = True  # start from the shipped pretrained VLM (train.PRETRAINED_VLM); else S0 per seed
    lr_expert: float = 3e-3  # the action expert starts from scratch: its own lr (the VLM keeps lr_s1)
    fm_repeats: int = 8      # (time, noise) draws per demo chunk in the flow-matching loss
    noninferior_margin: float = 0.03  # "matches ID success": mean gap - 2 s.e. > -0.03 (brief: naive - 3 pts)
    task: str = "touch"  # issue 43 item 1: the task set the policies learn ("touch" presses, "put", "both")
    horizon: int = 16    # episode length in steps (a press needs <= 8; shorter = less random-walk success)

    BOUNDS = {"n_vl": (100, None), "n_vl_test": (50, None), "n_demo_episodes": (10, None), "d": (8, None),
              "layers": (1, 8), "s0_steps": (1, None), "s1_steps": (1, None), "batch": (2, None),
              "lr_s0": (1e-6, 1.0), "lr_s1": (1e-6, 1.0), "lambda_r": (0.0, None), "lambda_vl": (0.0, None),
              "protect_ratio": (0.0, 1.0), "n_eval": (8, None), "rl_iters": (1, None), "rl_group": (2, 64),
              "rl_updates": (1, None), "rl_lr": (1e-7, 1.0), "rl_k": (1, 16), "noninferior_margin": (0.0, 1.0),
              "lr_expert": (1e-6, 1.0), "fm_repeats": (1, 64), "horizon": (4, 64)}

    def extra_checks(self) -> None:
        if self.task not in ("touch", "put", "both"):
            self.out_of_range("task", "'touch', 'put' or 'both'")
        if self.vision not in ("objects", "patches"):
            self.out_of_range("vision", "'objects' or 'patches'")
        if self.pretrained and ((self.d, self.layers, self.vision) != (64, 2, "objects") or self.grounding):
            self.out_of_range("pretrained", "False unless d=64, layers=2, vision='objects', grounding=False "
                                            "(the shipped VLM)")

    @classmethod
    def smoke(cls):
        return cls(seeds=(0,), n_vl=200, n_vl_test=100, n_demo_episodes=20, s0_steps=10, s1_steps=5,
                   batch=32, n_eval=16, rl_iters=2, rl_updates=2)

    @classmethod
    def quick(cls):
        # the same budget for every arm of a stage; S1 dominates (12 x s1_steps x ~60 ms on 2 shared cores):
        # 200 steps took 178-201 s, so 180 for the 180 s limit; after issue 54's caches 76.6 s (3 seed workers)
        return cls(seeds=(0, 1, 2), n_vl=2000, n_vl_test=400, n_demo_episodes=600, s0_steps=150, s1_steps=180,
                   n_eval=64, rl_iters=3)

    @classmethod
    def full(cls):
        # sized for <= 30 min CPU (3 seeds): S1 dominates (4 arms x s1_steps x ~45 ms)
        return cls(seeds=(0, 1, 2), n_vl=20000, n_vl_test=2000, n_demo_episodes=1000, s0_steps=3000,
                   s1_steps=1500, n_eval=256, rl_iters=10)


def _max_drawdown(curve) -> float:
    c = np.asarray(curve, float)
    return float(np.max(np.maximum.accumulate(c) - c)) if c.size else 0.0


def run(config: Config, seed: int) -> SeedOutput:
    t0 = time.time()
    dev = config.torch_device
    torch.manual_seed(seed)
    vl = make_vl_dataset(config.n_vl, seed=seed * 3 + 1)
    vl_test = make_vl_dataset(config.n_vl_test, seed=seed * 3 + 2)
    task = None if config.task == "both" else config.task
    ep = {"task": task, "horizon": config.horizon}
    demo = make_demo_dataset(config.n_demo_episodes, seed=seed * 3 + 3, **ep)
    t_data = time.time() - t0
    base = SyVLAPolicy(d=config.d, layers=config.layers, device=dev, grounding=config.grounding,
                       vision=config.vision)
    if config.pretrained:
        rep = load_pretrained_vlm(base)
        s0 = {"pretrained": str(PRETRAINED_VLM.name), "recipe": rep["recipe"]}
    else:
        s0 = pretrain_vl(base, vl, steps=config.s0_steps, batch=config.batch, lr=config.lr_s0, seed=seed)
    acc0 = evaluate_vqa(base, vl_test)
    # the substrate gates' reference: a uniform-random policy on the same evaluation episodes (cheap: no model)
    random_success = {f"random_success_{split}": evaluate_success(UniformRandomPolicy(), split, config.n_eval,
                                                                   seed=10_000 + seed, **ep) for split in SPLITS}
    t_s0 = time.time() - t0
    metrics, budgets, s1_models = {}, {"s0": s0}, {}
    for arm in S1_ARMS:
        pol = copy.deepcopy(base)
        q0 = pol.vlm.query.detach().clone()
        torch.manual_seed(seed)
        budgets[arm] = sft_vla(pol, demo, vl, arm, steps=config.s1_steps, batch=config.batch,
                               vl_batch=config.batch // 2, lr=config.lr_s1, lambda_r=config.lambda_r,
                               lambda_vl=config.lambda_vl, protect_ratio=config.protect_ratio, seed=seed,
                               lr_expert=config.lr_expert, fm_repeats=config.fm_repeats)
        acc = evaluate_vqa(pol, vl_test)
        out = {"vqa_acc": acc, "vqa_acc0": acc0, "retention": acc / max(acc0, 1e-9),
               "query_change": float((pol.vlm.query.detach() - q0).norm())}  # KI's queries train too
        for split in SPLITS:
            out[f"success_{split}"] = evaluate_success(pol, split, config.n_eval, seed=10_000 + seed, **ep)
        if arm == "naive":  # the gates compare the naive S1 policy with random actions on its own episodes
            out.update(random_success)
        metrics[arm] = out
        s1_models[arm] = pol
    t_s1 = time.time() - t0
    # S2 from the id_p checkpoint; the VLM is frozen, so demo intents are cached once
    start = s1_models["id_p"]
    rids = torch.tensor([start.vocab.encode(r, REASON_LEN) for r in demo.reasoning], device=start.device)
    with torch.no_grad():
        c = torch.cat([start.intent(demo.image[i: i + 256], demo.instruction[i: i + 256], rids[i: i + 256])
                       for i in range(0, len(demo), 256)]).cpu()
    demo_t = {"state": torch.as_tensor(demo.state), "c": c, "actions": torch.as_tensor(demo.actions),
              "key": retrieval_key(demo.image, demo.state, demo.instruction), "instruction": demo.instruction,
              "target": torch.as_tensor(demo.target)}
    curves = {}
    for arm in S2_ARMS:
        pol = copy.deepcopy(start)
        env = Tabletop2DEnv(64, "id", seed, **ep)
        cfg = SSGRLConfig(iters=config.rl_iters, group_size=config.rl_group, updates_per_iter=config.rl_updates,
                          batch=config.batch, lr=config.rl_lr, k=config.rl_k, experts=_S2_EXPERTS[arm])
        torch.manual_seed(seed)
        tr = SSGRLTrainer(pol, env, demo_t, cfg, seed=seed)
        evals = []
        for it in range(cfg.iters):
            tr.iteration(it)
            evals.append(evaluate_success(pol, "id", config.n_eval // 2, seed=20_000 + seed, **ep))
        curve = [h["rollout_success"] for h in tr.history]
        curves[arm] = {"rollout": curve, "eval": evals}
        out = {"success_id_final": evals[-1], "success_curve_mean": float(np.mean(evals)),
               "drawdown": _max_drawdown(evals),
               "positive_adv_frac": float(np.mean([h["positive_adv_frac"] for h in tr.history]))}
        if cfg.experts in ("similar", "random"):  # issue 43 item 2: do the experts match task and target?
            out["expert_task_match"] = float(np.mean([h["task_match"] for h in tr.history]))
            out["expert_target_match"] = float(np.mean([h["target_match"] for h in tr.history]))
        for split in SPLITS[1:]:
            out[f"success_{split}"] = evaluate_success(pol, split, config.n_eval, seed=10_000 + seed, **ep)
        metrics[arm] = out
        budgets[arm] = {"iters": cfg.iters, "episodes_per_iter": 64, "updates_per_iter": cfg.updates_per_iter,
                        "samples_per_update": cfg.batch * (1 + (cfg.k if cfg.experts != "none" else 0)),
                        "lr": cfg.lr}
    return SeedOutput(metrics=metrics, extras={"budget_per_arm": budgets, "curves": curves, "acc0": acc0,
                                               "data_s": t_data, "s0_s": t_s0, "s1_s": t_s1 - t_s0,
                                               "s2_s": time.time() - t0 - t_s1, "total_s": time.time() - t0,
                                               "n_demo_chunks": len(demo)})


# --------------------------------------------------------------------------------------------- claims

def _noninferior(method, baseline, margin: float, label: str) -> Decision:
    """Non-inferiority, the harness's form: mean gap - 2 s.e. > -margin (CLAIMS.md rule 8; the
    earlier ``max(margin, 2 s.e.)`` tolerance widened with the noise and was replaced)."""
    return noninferior(method, baseline, margin=margin, label=label)


def _at_most(a, b, label: str, stat=np.mean) -> Decision:
    """A comparison of two seed statistics (no s.e. read): its mde is 0 (any ordering decides)."""
    x, y = float(stat(a)), float(stat(b))
    return Decision(REPRODUCED if x <= y else NOT_REPRODUCED, f"{label}{x:.3f} vs {y:.3f}",
                    {"method": x, "reference": y}, mde=0.0, n=len(a), uses_se=False)


def _x_random(arm: str, split: str):
    """Success of ``arm`` on ``split`` minus ``GATE_X_RANDOM`` x a uniform-random policy's on the same episodes
    (>= 0: the policy is at least 4x random). The random rate is floored at one episode in ``n_eval`` (the
    measurement's resolution), so a random rate measured as 0 on few episodes does not let any policy pass."""
    key = "success_id" if split == "id" else f"success_{split}"

    def value(m, config) -> float:
        rnd = max(float(np.mean(m["naive"][f"random_success_{split}"])), 1.0 / config.n_eval)
        return float(np.mean(m[arm][key]) - GATE_X_RANDOM * rnd)
    return value


# Substrate gates (CLAIMS.md rule 8, issue 43 item 1): a claim measured on policies that barely do the task
# (quick ID success 0.08-0.16 against 0.065 for random actions) cannot come out either way. Replaces the
# earlier MIN_SUCCESS = 0.2 guard. Thresholds from the issue, fixed before any run.
SUBSTRATE = (
    SubstrateCheck("naive_id_success", f"naive S1 ID success >= {GATE_SUCCESS} (issue 43)",
                   arm="naive", metric="success_id", low=GATE_SUCCESS),
    *(SubstrateCheck(f"naive_{split}_x_random",
                     f"naive S1 {split} success - {GATE_X_RANDOM:g} x uniform-random success (same episodes, "
                     "floored at 1/n_eval)",
                     value=_x_random("naive", split), low=0.0)
      for split in ("id", "ood_lang", "ood_visual")),
    SubstrateCheck("rl_start_id_x_random",
                   f"id_p (the S2 start) ID success - {GATE_X_RANDOM:g} x uniform-random ID success (floored "
                   "at 1/n_eval)",
                   value=_x_random("id_p", "id"), low=0.0),
)
_ID_GATES = ("naive_id_success", "naive_id_x_random")


def _retention(method: str, against: str = "naive"):
    def rule(m, config):
        return all_of(paired_improvement(m[method]["retention"], m[against]["retention"], label="retention "),
                      _noninferior(m[method]["success_id"], m[against]["success_id"], config.noninferior_margin,
                                   "ID success "))
    return rule


def _ood(method: str, against: str = "naive"):
    def rule(m, config):
        return all_of(*(paired_improvement(m[method][f"success_{s}"], m[against][f"success_{s}"], label=f"{s} ")
                        for s in ("ood_lang", "ood_visual")))
    return rule


def _beyond_random(m, config) -> Decision:
    """CLAIMS.md rule 10: when random experts pass the rule too, SSG-RL must beat them by the rule's primary
    leg (final ID success on paired seeds, > 2 s.e. in every seed)."""
    return paired_improvement(m["rl_ssg"]["success_id_final"], m["rl_random"]["success_id_final"],
                              label="vs random experts ")


def _ssg(method: str):
    def rule(m, config):
        x, sft, aw = m[method], m["rl_sft"], m["rl_awfm"]
        better_aw = _at_most([-v for v in x["success_id_final"]], [-v for v in aw["success_id_final"]],
                             "-(mean ID success) vs on-policy AW-FM ")
        if np.mean(x["success_id_final"]) == np.mean(aw["success_id_final"]):
            better_aw = Decision(INCONCLUSIVE, "tie with on-policy AW-FM", better_aw.evidence, mde=0.0,
                                 n=len(x["success_id_final"]), uses_se=False)
        return all_of(paired_improvement(x["success_id_final"], sft["success_id_final"], label="vs cont. SFT "),
                      better_aw,
                      _at_most(x["success_id_final"], aw["success_id_final"], "seed std ", stat=np.std),
                      _at_most(x["drawdown"], aw["drawdown"], "drawdown "))
    return rule


SCALE = ("laptop-scale: Tabletop2D (24x24 RGB, 4 objects, 2 zones, touch/put tasks), TinyVLM (2 layers, d=64, "
         "8 object tokens, 4 query tokens) + MLP flow action expert, a shipped VQA-pretrained VLM, "
         "S1 150 (quick) / 1500 (full) SFT steps")

# Declared metrics (issue 52.4): what each arm writes; the runner refuses anything else.
METRICS = {
    S1_ARMS: ("vqa_acc", "vqa_acc0", "retention", "query_change", "success_*"),
    "naive": ("random_success_*",),
    S2_ARMS: ("success_id_final", "success_curve_mean", "drawdown", "positive_adv_frac", "success_ood_*"),
    ("rl_ssg", "rl_random"): ("expert_task_match", "expert_target_match"),
}

CLAIMS = (
    Claim(
        id="vl_retention",
        statement="Intention Decoupling (ID-P, gradient-norm masking) preserves VL ability while matching "
                  "in-distribution task success.",
        paper_value="qualitative (preserved VLM capability on multimodal benchmarks)",
        metric="VQA retention acc_after / acc0 (higher is better); ID success",
        scale=SCALE,
        rule="retention(id_p) > retention(naive) on paired seeds by > 2 s.e. in every seed AND ID success "
             "non-inferior: mean gap id_p - naive - 2 s.e. > -0.03",
        decide=_retention("id_p"),
        control_description="ki: knowledge insulation (all action gradient stopped at the backbone), the "
                            "strongest published alternative that also protects the backbone",
        control=_retention("ki"),
        beyond=_retention("id_p", against="ki"),
        arms=ClaimArms(method="id_p", baselines=("naive",), control="ki"),
        effect=0.10,
        effect_source="brief success criterion 1: ID-P retention >= 0.95 vs naive <= 0.85 (gap 0.10); the ID "
                      "leg's margin 0.03 = brief criterion 2 (naive - 3 pts)",
        gates=_ID_GATES,
    ),
    Claim(
        id="vl_retention_token",
        statement="The token-level reading of Intention Decoupling (ID-T) preserves VL ability while matching "
                  "ID task success.",
        paper_value="qualitative (as vl_retention; second reading of the unpublished rule)",
        metric="VQA retention (higher is better); ID success",
        scale=SCALE,
        rule="as vl_retention with id_t in place of id_p",
        decide=_retention("id_t"),
        control_description="ki (as vl_retention)",
        control=_retention("ki"),
        beyond=_retention("id_t", against="ki"),
        arms=ClaimArms(method="id_t", baselines=("naive",), control="ki"),
        effect=0.10,
        effect_source="as vl_retention (brief criterion 1: retention gap 0.10)",
        gates=_ID_GATES,
    ),
    Claim(
        id="ood_generalisation",
        statement="Intention Decoupling improves OOD generalisation (language and visual splits).",
        paper_value="qualitative (stronger OOD generalisation)",
        metric="success on ood_lang and ood_visual, each (higher is better)",
        scale=SCALE,
        rule="success(id_p) > success(naive) on paired seeds by > 2 s.e. in every seed, on ood_lang AND on "
             "ood_visual (reported per split)",
        decide=_ood("id_p"),
        control_description="ki: knowledge insulation (as vl_retention)",
        control=_ood("ki"),
        beyond=_ood("id_p", against="ki"),
        arms=ClaimArms(method="id_p", baselines=("naive",), control="ki"),
        effect=0.10,
        effect_source="brief success criterion 2: ID-P beats naive on OOD-language by >= 10 pts",
        gates=(*_ID_GATES, "naive_ood_lang_x_random", "naive_ood_visual_x_random"),
    ),
    Claim(
        id="ssg_rl",
        statement="Similar-sample guided RL (expert samples retrieved near visited states, advantage 1.0) "
                  "raises success and stabilises updates vs continued SFT and on-policy-only RL.",
        paper_value="qualitative (stabilised real-world online RL, higher success)",
        metric="final ID success (higher); across-seed std of final success and max drawdown of the "
               "evaluation curve (lower)",
        scale=SCALE + "; S2: AW-FM on the flow expert, 64 episodes/iteration in groups of 8, k=1",
        rule="final ID success(rl_ssg) > rl_sft on paired seeds by > 2 s.e. in every seed AND mean > rl_awfm "
             "AND across-seed std <= rl_awfm's AND mean drawdown <= rl_awfm's",
        decide=_ssg("rl_ssg"),
        control_description="rl_random: the same number of expert samples with advantage 1, drawn at random "
                            "instead of by similarity",
        control=_ssg("rl_random"),
        arms=ClaimArms(method="rl_ssg", baselines=("rl_sft", "rl_awfm"), control="rl_random"),
        effect=0.05,
        effect_source="brief success criterion 3: SSG-RL mean ID success > SFT + 5 pts",
        gates=(*_ID_GATES, "rl_start_id_x_random"),
        beyond=_beyond_random,
    ),
)


def plot(config: Config, outputs, outdir):
    from icml26.harness.plots import pyplot

    plt = pyplot()
    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    w = 0.2
    for i, arm in enumerate(S1_ARMS):
        vals = [[o.metrics[arm][f"success_{s}"] for o in outputs] for s in SPLITS]
        axes[0].bar(np.arange(len(SPLITS)) + (i - 1.5) * w, [np.mean(v) for v in vals], w,
                    yerr=[np.std(v) for v in vals], label=arm)
    axes[0].set_xticks(range(len(SPLITS)), SPLITS)
    axes[0].set_ylabel("success rate")
    axes[0].legend(fontsize=7)
    ret = [[o.metrics[a]["retention"] for o in outputs] for a in S1_ARMS]
    axes[1].bar(range(len(S1_ARMS)), [np.mean(r) for r in ret], yerr=[np.std(r) for r in ret])
    axes[1].set_xticks(range(len(S1_ARMS)), S1_ARMS)
    axes[1].axhline(1.0, color="k", lw=0.5)
    axes[1].set_ylabel("VQA retention acc/acc0")
    paths.append(save_figure(fig, f"{outdir}/syvla_s1.png"))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for arm in S2_ARMS:
        cur = np.array([o.extras["curves"][arm]["eval"] for o in outputs])
        x = np.arange(1, cur.shape[1] + 1)
        ax.plot(x, cur.mean(0), label=arm)
        ax.fill_between(x, cur.mean(0) - cur.std(0), cur.mean(0) + cur.std(0), alpha=0.2)
    ax.set_xlabel("RL iteration")
    ax.set_ylabel("ID success (eval)")
    ax.legend(fontsize=7)
    paths.append(save_figure(fig, f"{outdir}/syvla_rl.png"))
    return paths

"""Can any defender of magic's quick size become robust to the adaptive attacker? (issue 45)

Three studies on the quick profile's substrate (language, train/eval seeds, and the guard, base
defender and Phase-1 attacker from the experiment's own ``train_guard``, ``sft_base_defender`` and
``phase1_attacker``, as ``icml26.papers.magic.experiment.run`` builds them), every number
judged by the grammar oracle on the test seeds with the experiment's own evaluation functions:

* ``replicates`` -- ``run(Config.quick(train_repeats=R))`` for seeds 0-5: every trained arm's
  adaptive ASR at the claim budget in each of R GRPO replicates (sub-seeds seed + 1 + 1000 r).
  Reported: the spread across replicates within a seed and across seeds, and the separation
  check ``adaptive_separates_base_<arm>`` (mean paired gap base - arm over seeds - 2 s.e.) with
  each replicate alone (R = 1 runs) and with the replicate mean.
* ``supervised`` -- the base defender fine-tuned on the *true* labels of rewritten prompts
  (``sft_defender(rewrite_labels="truth")``, 70% rewrites of depth 1-3, no label noise), the
  positive control of what the model can learn when told the intent: decoding error per
  program depth and adaptive ASR, for ``steps`` in STEPS at the quick size and at a larger one.
* ``longer_grpo`` -- the static-pool and the frozen-attacker defender trained by GRPO for up to
  300 updates (quick: 45), with the guard's and the oracle's rewards, two replicates: adaptive
  ASR at 45 / 150 / 300 updates, and refusal of benign held-out compositions.

The study settings (steps, sizes, the 0.7 rewrite share, seeds 0-5) were fixed before their first
run; one seed per forked worker, one thread each. Writes ``magic_defender_stability.json`` and the
tables of ``magic_defender_stability.md`` next to this file.

Run: python benchmarks/magic_defender_stability.py [--seeds 0,1,2,3,4,5] [--studies replicates,supervised,longer_grpo]
     [--readme]   (``--studies ""`` only rewrites the tables from the JSON)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import torch

import icml26.papers.magic.experiment as E
from icml26.harness.parallel import fork_map
from icml26.harness.readme import replace_between
from icml26.harness.seeding import limit_torch_threads
from icml26.papers.magic import (
    DefenderReward,
    GameConfig,
    IntentLanguage,
    RuleJudge,
    make_agents,
)
from icml26.papers.magic.game import (
    adaptive_asr_curve,
    attacker_source,
    defender_grpo_step,
    greedy_responses,
    pool_source,
    refusal_rate,
    sft_defender,
)
from icml26.papers.magic.language import REFUSE

HERE = Path(__file__).parent
BUDGETS = (1, 2, 4)
STEPS = (300, 1000)                      # supervised fine-tuning steps (quick's base SFT: 120)
SIZES = {"quick (d 48, 2 layers)": (48, 2), "larger (d 96, 3 layers)": (96, 3)}
UPDATES = (45, 150, 300)                 # defender GRPO updates (quick: 45, full: 150)
REWRITE_SHARE = 0.7


def _substrate(seed: int, c: E.Config):
    """The per-seed objects of ``experiment.run`` (same seeds and generators)."""
    lang = IntentLanguage(seed=seed)
    rng = np.random.default_rng(seed)
    train = lang.sample_seeds(c.n_train_seeds, rng)
    evals = lang.sample_seeds(c.n_eval_seeds, np.random.default_rng(10_000 + seed))
    guard = E.train_guard(lang, train[:c.pool_seeds], seed)
    prior, base = make_agents(lang, d_model=c.d_model, n_layers=c.n_layers, seed=seed)
    E.sft_base_defender(c, base, lang, train, seed)
    return lang, train, evals, guard, prior, base


def _adaptive(d, lang, evals, seed: int) -> dict[str, float]:
    harm = [s for s in evals if s.harmful]
    return {str(b): v for b, v in adaptive_asr_curve(d, RuleJudge(lang), lang, harm, BUDGETS,
                                                     seed=40_000 + seed).items()}


def _depth_errors(d, lang, evals, seed: int) -> dict[str, float]:
    """Decision error (refuse iff harmful) per program depth: every depth-1 program, 30 random
    programs of depth 2 and of depth 3; mean over programs and the worst program."""
    rng = np.random.default_rng(90_000 + seed)
    out = {"vanilla": float(np.mean([r.startswith(REFUSE) != s.harmful for r, s in
                                     zip(greedy_responses(d, [s.text for s in evals]), evals, strict=True)]))}
    for depth in (1, 2, 3):
        progs = lang.programs(1) if depth == 1 else [lang.random_program(rng, depth, depth) for _ in range(30)]
        errs = []
        for p in progs:
            res = greedy_responses(d, [lang.execute(p, s.text) for s in evals])
            errs.append(float(np.mean([r.startswith(REFUSE) != s.harmful for r, s in zip(res, evals, strict=True)])))
        out[f"depth{depth}_mean"], out[f"depth{depth}_worst"] = float(np.mean(errs)), float(np.max(errs))
    return out


def study_replicates(seed: int, repeats: int) -> dict:
    o = E.run(dataclasses.replace(E.Config.quick(), seeds=(seed,), train_repeats=repeats), seed)
    reps = o.extras["replicates"]
    return {"base": o.metrics["base"]["asr_adaptive"],
            "arms": {arm: reps[arm]["asr_adaptive"] for arm in E.TRAINED},
            "lr": {arm: o.metrics[arm]["lr"] for arm in E.TRAINED}}


def study_supervised(seed: int) -> dict:
    c = E.Config.quick()
    lang, train, evals, _, _, base = _substrate(seed, c)
    out = {"base": {"adaptive": _adaptive(base, lang, evals, seed), "errors": _depth_errors(base, lang, evals, seed)}}
    for size, (dm, nl) in SIZES.items():
        for steps in STEPS:
            if (dm, nl) == (c.d_model, c.n_layers):
                d = base.copy()  # the quick defender: continue from the base SFT
            else:  # a larger defender: its own base SFT first (same data and steps)
                _, d = make_agents(lang, d_model=dm, n_layers=nl, seed=seed)
                E.sft_base_defender(c, d, lang, train, seed)
            t = time.perf_counter()
            sft_defender(d, train * 4, steps, label_noise=0.0, seed=seed + 5, language=lang,
                         uncertain_share=REWRITE_SHARE, uncertain_max_depth=lang.max_depth, rewrite_labels="truth")
            out[f"{size} / {steps} steps"] = {"adaptive": _adaptive(d, lang, evals, seed),
                                              "errors": _depth_errors(d, lang, evals, seed),
                                              "train_s": time.perf_counter() - t}
    return out


def study_longer_grpo(seed: int) -> dict:
    c = E.Config.quick()
    lang, train, evals, guard, prior, base = _substrate(seed, c)
    oracle = RuleJudge(lang)
    a0 = E.phase1_attacker(c, prior, lang, train, seed)
    heldout = E._heldout_programs(lang, c.heldout_programs, np.random.default_rng(20_000 + seed))
    held_benign = [lang.execute(p, s.text) for s in evals if not s.harmful for p in heldout]
    out: dict = {"base": _adaptive(base, lang, evals, seed)["2"]}
    for judge_name, judge in (("guard", guard), ("oracle", oracle)):
        r_def = DefenderReward(judge, c.r_harm, c.r_ref)
        for arm in ("static", "frozen_attacker"):
            for rep in range(2):
                sub = seed + 1 + E.REPEAT_STRIDE * rep
                d = base.copy()
                g = GameConfig(group_size=c.group_size, batch_size=c.batch_size, num_iterations=c.num_iterations,
                               lr_defender=1e-3, lr_attacker=1e-3)
                gen = torch.Generator().manual_seed(sub)
                rng = np.random.default_rng(sub)
                source = (pool_source(lang, np.random.default_rng(sub)) if arm == "static"
                          else attacker_source(a0, lang, torch.Generator().manual_seed(sub + 7)))
                opt = torch.optim.AdamW(d.model.parameters(), lr=g.lr_defender, weight_decay=0.0)
                for step in range(1, max(UPDATES) + 1):
                    batch = [train[int(i)] for i in rng.choice(len(train), g.batch_size, replace=False)]
                    defender_grpo_step(d, opt, r_def, batch, source, g, gen)
                    if step in UPDATES:
                        out.setdefault(f"{judge_name}/{arm}/{step}", []).append(
                            {"asr_adaptive": _adaptive(d, lang, evals, seed)["2"],
                             "refusal_heldout_benign": refusal_rate(d, held_benign)})
    return out


def _sd(x) -> float:
    x = np.asarray(x, float)
    return float(x.std(ddof=1)) if x.size > 1 else float("nan")


def _lcb(gaps) -> float:
    g = np.asarray(gaps, float)
    return float(g.mean() - 2 * g.std(ddof=1) / np.sqrt(g.size))


def summarise(res: dict) -> str:
    lines = ["# magic: can a defender of the quick size become robust to the adaptive attacker?", "",
             "Generated by `python benchmarks/magic_defender_stability.py` (JSON beside it); adaptive ASR is the",
             "share of harmful test seeds broken within the claim budget of 2 queries (oracle-judged, greedy",
             "defender). Machine: " + res["machine"] + ".", ""]
    if "replicates" in res:
        rep = res["replicates"]
        seeds = sorted(rep, key=int)
        R = len(next(iter(rep.values()))["arms"]["magic"])
        lines += [f"## GRPO replicates (quick profile, R = {R} per arm and seed)", "",
                  "Adaptive ASR at budget 2 per replicate (the lr chosen by the replicates' mean validation score).", "",
                  "| seed | base | " + " | ".join(E.TRAINED) + " |", "|---" * (2 + len(E.TRAINED)) + "|"]
        for s in seeds:
            lines.append(f"| {s} | {rep[s]['base']:.2f} | " + " | ".join(
                " ".join(f"{v:.2f}" for v in rep[s]["arms"][a]) for a in E.TRAINED) + " |")
        lines += ["", "| arm | sd across replicates (pooled within seed) | sd of seed means | "
                      "separation check, one replicate (min..max over replicates), seeds 0-2 | "
                      f"separation check, mean of {R}, seeds 0-2 | same, seeds 0-5 |", "|---|---|---|---|---|---|"]
        for a in E.TRAINED:
            within = float(np.sqrt(np.mean([_sd(rep[s]["arms"][a]) ** 2 for s in seeds])))
            means = [float(np.mean(rep[s]["arms"][a])) for s in seeds]
            first3 = [s for s in seeds if int(s) < 3]
            single = [_lcb([rep[s]["base"] - rep[s]["arms"][a][r] for s in first3]) for r in range(R)]
            lines.append(f"| {a} | {within:.3f} | {_sd(means):.3f} | {min(single):+.3f} .. {max(single):+.3f} | "
                         f"{_lcb([rep[s]['base'] - np.mean(rep[s]['arms'][a]) for s in first3]):+.3f} | "
                         f"{_lcb([rep[s]['base'] - np.mean(rep[s]['arms'][a]) for s in seeds]):+.3f} |")
    if "supervised" in res:
        sup = res["supervised"]
        seeds = sorted(sup, key=int)
        keys = list(sup[seeds[0]])
        lines += ["", "## Supervised positive control (true labels on rewrites of depth 1-3)", "",
                  "Mean over seeds " + ", ".join(seeds) + " (worst program of a depth: mean over seeds of its error).", "",
                  "| defender | adaptive ASR b1 / b2 / b4 | error vanilla | depth 1 mean / worst | "
                  "depth 2 mean / worst | depth 3 mean / worst |", "|---|---|---|---|---|---|"]
        for k in keys:
            ad = {b: np.mean([sup[s][k]["adaptive"][b] for s in seeds]) for b in map(str, BUDGETS)}
            er = {e: np.mean([sup[s][k]["errors"][e] for s in seeds]) for e in sup[seeds[0]][k]["errors"]}
            lines.append(f"| {k} | {ad['1']:.2f} / {ad['2']:.2f} / {ad['4']:.2f} | {er['vanilla']:.3f} | "
                         + " | ".join(f"{er[f'depth{d}_mean']:.2f} / {er[f'depth{d}_worst']:.2f}" for d in (1, 2, 3))
                         + " |")
        lines += ["", "Per seed, adaptive ASR at budget 2: " + "; ".join(
            f"{k}: " + " ".join(f"{sup[s][k]['adaptive']['2']:.2f}" for s in seeds) for k in keys) + "."]
    if "longer_grpo" in res:
        lg = res["longer_grpo"]
        seeds = sorted(lg, key=int)
        lines += ["", "## Longer defender GRPO (lr 1e-3, G 8, batch 8, 2 updates per batch, 2 replicates)", "",
                  "Adaptive ASR at budget 2, mean over seeds " + ", ".join(seeds) + " and replicates "
                  "(base: " + f"{np.mean([lg[s]['base'] for s in seeds]):.2f}); in brackets the range over "
                  "(seed, replicate) and the refusal rate on benign held-out compositions.", "",
                  "| reward judge / arm | " + " | ".join(f"{u} updates" for u in UPDATES) + " |",
                  "|---" * (1 + len(UPDATES)) + "|"]
        for judge in ("guard", "oracle"):
            for arm in ("static", "frozen_attacker"):
                cells = []
                for u in UPDATES:
                    v = [r["asr_adaptive"] for s in seeds for r in lg[s][f"{judge}/{arm}/{u}"]]
                    ref = [r["refusal_heldout_benign"] for s in seeds for r in lg[s][f"{judge}/{arm}/{u}"]]
                    cells.append(f"{np.mean(v):.2f} ({min(v):.2f}-{max(v):.2f}; ref {np.mean(ref):.2f})")
                lines.append(f"| {judge} / {arm} | " + " | ".join(cells) + " |")
        gaps = {u: [lg[s]["base"] - np.mean([r["asr_adaptive"] for r in lg[s][f"guard/frozen_attacker/{u}"]])
                    for s in seeds] for u in UPDATES}
        lines += ["", "Separation check base - frozen_attacker (guard rewards, replicate mean), seeds "
                  + ", ".join(seeds) + ": " + ", ".join(f"{u} updates {_lcb(g):+.3f}" for u, g in gaps.items()) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", default="0,1,2,3,4,5")
    p.add_argument("--studies", default="replicates,supervised,longer_grpo")
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--readme", action="store_true", help="also write the tables into the magic README")
    a = p.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    path = HERE / "magic_defender_stability.json"
    res = json.loads(path.read_text()) if path.exists() else {}
    res["machine"] = f"{torch.get_num_threads()} torch threads; " + (
        Path("/proc/cpuinfo").read_text().split("model name")[1].split("\n")[0].strip(" :\t")
        if Path("/proc/cpuinfo").exists() else "unknown CPU")
    fns = {"replicates": lambda s: study_replicates(s, a.repeats), "supervised": study_supervised,
           "longer_grpo": study_longer_grpo}
    for name in [n for n in a.studies.split(",") if n]:  # --studies "" only rewrites the tables
        t = time.perf_counter()

        def one(s, fn=fns[name]):
            with limit_torch_threads(1):
                return fn(s)

        out = fork_map([lambda s=s: one(s) for s in seeds], a.workers)
        res[name] = {str(s): o for s, o in zip(seeds, out, strict=True)}
        print(f"{name}: {time.perf_counter() - t:.0f} s", flush=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(res, indent=1))
        tmp.replace(path)
    text = summarise(res)
    (HERE / "magic_defender_stability.md").write_text(text)
    if a.readme:  # the same tables, one heading level down, between the README's markers
        readme = HERE.parent / "src/icml26/papers/magic/README.md"
        body = text.split("\n", 2)[2].strip("\n").replace("## ", "#### ")
        readme.write_text(replace_between(readme.read_text(encoding="utf-8"), "<!-- stability:start -->",
                                          "<!-- stability:end -->", body), encoding="utf-8")


if __name__ == "__main__":
    main()

"""Laptop-scale reproduction of NPPR (arXiv 2511.17380) on scikit-learn digits and two moons.

One run per seed, one test set, one budget ``eps`` for every arm. Metrics are
``{arm: {model: value}}``: an arm is a way to measure robustness, the metric is the model it
was measured on (``cnn``, ``mlp``, ``at_cnn``, ``noise_cnn``, ``moons``):

- fixed-distribution PR: ``pr_uniform``, ``pr_gaussian``, ``pr_laplace`` (the paper's
  baselines) and ``pr_corners`` (random signs at the budget: the most aggressive distribution
  that does not look at the classifier; the control of claim ``conservative``);
- ``pgd`` (PGD-20 robust accuracy, an upper estimate of AR); ``ar_exact`` on two moons;
- NPPR with the learned GMM: ``nppr_none`` / ``nppr_y`` / ``nppr_xy`` (and ``nppr_x`` in full),
  ``nppr_xy_shuffled`` (the xy-GMM fed the features of random other inputs: same capacity and
  label conditioning, no information about x; the control of claim ``conditioning``);
- the models as arms of claim ``adversarial_training`` with metric ``pr_gap`` (PR_uniform minus
  NPPR(xy)): ``cnn`` (standard), ``at_cnn`` (PGD adversarial training), ``noise_cnn`` (uniform
  noise augmentation at the same budget and epochs: robustness training without an attack,
  the control);
- ``diagnostics``: the estimator's collapse diagnostics on the CNN (not a paper claim).

The claims below are fixed before any run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from icml26.core.progress import phase
from icml26.harness import REPRODUCED, Claim, Decision, ExperimentConfig, SeedOutput
from icml26.harness.claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    ClaimArms,
    SubstrateCheck,
    all_of,
    mean_se,
    paired_improvement,
)
from icml26.harness.plots import save_figure

from .estimator import NPPREstimator
from .models import load_digits_split, load_moons_split, make_model, train_classifier
from .robustness import ar_pgd, exact_ar_grid, pr_fixed, predict

FIXED = ("uniform", "gaussian", "laplace")
MODELS = ("cnn", "mlp", "at_cnn", "noise_cnn")
REQUIRED_CONDS = ("none", "y", "xy")



# Smoke metrics are accuracies on a finite test set of a float32-trained classifier: a last-bit
# difference between CPUs can move one example (1/153 = 0.0065); pins allow three.
PIN_TOLERANCE = {"rtol": 0.0, "atol": 0.02}

@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Experiment settings (brief Sec. 5; numbers not from the paper are our laptop-scale choices).

    The GMM optimiser settings (batch 32, lr 1e-2) were chosen by training-loss convergence on
    the digits training split: the authors' batch 256 gives only ~5 steps per epoch on 1200
    digits. Every GMM arm (none, y, xy, the shuffled-feature control, the other models' xy)
    gets the same epochs, samples per input, batch and learning rate.

    The quick profile runs three seeds in about a minute and a half by doing less per seed than
    full: 300 test digits and 50 draws per input (full: all 597 and 100), GMMs fit on 600
    training digits for 5 epochs with 4 relaxed samples per input (full: all 1200, 15 and 8),
    20 CNN epochs (full: 30), 8 AT / noise epochs (full: 20), and one budget (full: the eps
    grid 0.05 / 0.1 / 0.2 and the x-conditioned GMM as well).
    """

    n_train: int = 1200                      # brief: stratified 1200 / 597 split
    n_test: int = 0                          # 0: every held-out digit (597)
    eps: float = 0.1                         # brief: main L-inf budget on [0, 1] pixels
    eps_grid: tuple[float, ...] = (0.05, 0.1, 0.2)
    cnn_epochs: int = 30                     # brief
    mlp_epochs: int = 30
    at_eps: float = 0.1                      # brief: PGD-AT at eps 0.1, 7 steps
    at_epochs: int = 20                      # also the noise-augmented CNN's epochs
    conds: tuple[str, ...] = ("none", "y", "x", "xy")
    n_components: int = 3                    # paper/authors' default K
    latent_dim: int = 32                     # brief (laptop-scale; authors 128)
    hidden_dim: int = 128                    # brief (authors 512)
    gmm_epochs: int = 15
    n_gmm_train: int = 0                     # training inputs the GMMs are fit on (0: all)
    gmm_lr: float = 1e-2
    gmm_batch: int = 32
    n_train_samples: int = 8                 # authors 32
    n_eval: int = 100                        # brief: N = 100 draws per test input
    n_train_diag: int = 300                  # training inputs for the overfitting diagnostic
    pgd_steps: int = 20
    moons_eps: float = 0.15
    moons_n_test: int = 150
    moons_grid: int = 201                    # brief: 201 x 201 grid
    moons_gmm_epochs: int = 30

    BOUNDS = {
        "n_train": (50, 1787), "n_test": (0, None), "eps": (1e-6, 1.0), "eps_grid": (1e-6, 1.0),
        "cnn_epochs": (1, None), "mlp_epochs": (1, None), "at_eps": (1e-6, 1.0),
        "at_epochs": (1, None), "n_components": (1, None), "latent_dim": (1, None),
        "hidden_dim": (1, None), "gmm_epochs": (1, None), "gmm_lr": (1e-8, 10.0),
        "gmm_batch": (2, None), "n_train_samples": (1, None), "n_eval": (1, None),
        "n_train_diag": (1, None), "n_gmm_train": (0, None), "pgd_steps": (1, None), "moons_eps": (1e-6, 5.0),
        "moons_n_test": (2, None), "moons_grid": (2, None), "moons_gmm_epochs": (1, None),
    }

    def extra_checks(self) -> None:
        known = ("none", "y", "x", "xy")
        if any(c not in known for c in self.conds) or len(set(self.conds)) != len(self.conds) \
                or any(c not in self.conds for c in REQUIRED_CONDS):
            self.out_of_range("conds", f"distinct values of {known} including {REQUIRED_CONDS}")
        if self.n_test == 1:
            self.out_of_range("n_test", "0 (all) or >= 2")
        if 0 < self.n_gmm_train < 20 or self.n_gmm_train > self.n_train:
            self.out_of_range("n_gmm_train", f"0 (all) or in [20, n_train={self.n_train}]")

    @classmethod
    def smoke(cls) -> Config:
        return cls(seeds=(0,), n_train=300, n_test=80, eps_grid=(0.1,), cnn_epochs=5,
                   mlp_epochs=8, at_epochs=2, n_gmm_train=150, conds=("none", "y", "xy"),
                   gmm_epochs=2, n_train_samples=2, n_eval=30, n_train_diag=50, pgd_steps=5,
                   moons_n_test=40,
                   moons_grid=41, moons_gmm_epochs=3)

    @classmethod
    def quick(cls) -> Config:
        return cls(seeds=(0, 1, 2), n_test=300, eps_grid=(0.1,), cnn_epochs=20, at_epochs=8,
                   conds=("none", "y", "xy"), gmm_epochs=5, n_gmm_train=600, n_train_samples=4,
                   n_eval=50,
                   n_train_diag=150, moons_n_test=100, moons_grid=101, moons_gmm_epochs=15)

    @classmethod
    def full(cls) -> Config:
        return cls(seeds=(0, 1, 2), gmm_epochs=15, moons_gmm_epochs=30)


class ShuffledFeatures:
    """The features of random other inputs, drawn afresh for every call (no information about x).

    Fed to an ``xy``-GMM it keeps the estimator's capacity, its label conditioning and the
    feature distribution its trunk sees, and removes the only thing ``xy`` adds over ``y``:
    knowledge of the input. Our control, not the paper's.
    """

    def __init__(self, features, pool: torch.Tensor, seed: int):
        self.features, self.pool = features, pool
        self.gen = torch.Generator().manual_seed(int(seed))

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        idx = torch.randint(0, self.pool.shape[0], (X.shape[0],), generator=self.gen)
        return self.features(self.pool[idx])


def _estimator(model, config: Config, cond: str, eps: float, seed: int, features=None,
               **kw) -> NPPREstimator:
    return NPPREstimator(model, model.features if features is None else features, eps=eps,
                         cond=cond, n_components=config.n_components,
                         latent_dim=config.latent_dim, hidden_dim=config.hidden_dim,
                         y_emb_dim=config.hidden_dim, n_train_samples=config.n_train_samples,
                         epochs=config.gmm_epochs, lr=config.gmm_lr, batch_size=config.gmm_batch,
                         seed=seed, **kw)


def _fixed(model, X, y, eps, config, seed, dists=(*FIXED, "corners")) -> dict:
    return {d: pr_fixed(model, X, y, eps, dist=d, n=config.n_eval, seed=seed + 7) for d in dists}


def _train_models(config: Config, seed: int, Xtr, ytr) -> dict:
    return {
        "cnn": train_classifier(make_model("cnn", seed), Xtr, ytr, config.cnn_epochs, seed=seed),
        "mlp": train_classifier(make_model("mlp", seed), Xtr, ytr, config.mlp_epochs, seed=seed),
        "at_cnn": train_classifier(make_model("cnn", seed), Xtr, ytr, config.at_epochs, seed=seed,
                                   adv_eps=config.at_eps),
        # control: the same recipe and budget with random noise in place of the PGD examples
        "noise_cnn": train_classifier(make_model("cnn", seed), Xtr, ytr, config.at_epochs,
                                      seed=seed, noise_eps=config.at_eps),
    }


def run(config: Config, seed: int) -> SeedOutput:
    metrics: dict[str, dict[str, float]] = {}

    def put(arm: str, key: str, value: float) -> None:
        metrics.setdefault(arm, {})[key] = float(value)

    with phase("data"):
        Xtr, ytr, Xte, yte = load_digits_split(seed, config.n_train)
        if config.n_test > 0:
            Xte, yte = Xte[: config.n_test], yte[: config.n_test]
        eps = config.eps
    with phase("train"):
        models = _train_models(config, seed, Xtr, ytr)
    ng = config.n_gmm_train or Xtr.shape[0]
    Xg, yg = Xtr[:ng], ytr[:ng]  # the stratified split is shuffled: a prefix is a random subset
    extras: dict = {"eps_curve": {}, "hist": {}}
    main_cnn: dict = {}
    for name, model in models.items():
        with phase("baselines"):
            put("clean", name, float((predict(model, Xte) == yte).float().mean()))
            dists = (*FIXED, "corners") if name in ("cnn", "mlp") else ("uniform",)
            fixed = _fixed(model, Xte, yte, eps, config, seed, dists)
            for d, r in fixed.items():
                put(f"pr_{d}", name, r.mean)
            pgd = ar_pgd(model, Xte, yte, eps, steps=config.pgd_steps, seed=seed, backend="internal")
            put("pgd", name, pgd.mean)
        with phase("nppr"):
            conds = config.conds if name == "cnn" else ("xy",)
            for cond in conds:
                est = _estimator(model, config, cond, eps, seed).fit(Xg, yg)
                res = est.evaluate(Xte, yte, n=config.n_eval, seed=seed)
                put(f"nppr_{cond}", name, res.mean)
                if cond == "xy" and name == "cnn":
                    main_cnn = {"pgd": pgd.mean, "nppr_xy": res.mean,
                                **{f"pr_{d}": r.mean for d, r in fixed.items()}}
                    _diagnostics(config, est, res, Xg, yg, Xte, yte, seed, put, extras)
                    extras["hist"]["pr_uniform"] = np.round(fixed["uniform"].per_input, 4).tolist()
            put(name, "pr_gap", metrics["pr_uniform"][name] - metrics["nppr_xy"][name])
            if name == "cnn":
                # control of claim "conditioning": xy without information about the input
                shuffled = ShuffledFeatures(model.features, Xg, seed + 11)
                est = _estimator(model, config, "xy", eps, seed, features=shuffled).fit(Xg, yg)
                put("nppr_xy_shuffled", name, est.evaluate(Xte, yte, n=config.n_eval, seed=seed).mean)
    # PR versus eps on the main CNN (GMM re-trained at each budget); full profile only
    with phase("eps_curve"):
        cnn = models["cnn"]
        for e in config.eps_grid:
            if abs(e - eps) < 1e-12:
                row = dict(main_cnn)
            else:
                row = {"pgd": ar_pgd(cnn, Xte, yte, e, steps=config.pgd_steps, seed=seed,
                                     backend="internal").mean}
                row.update({f"pr_{d}": r.mean for d, r in _fixed(cnn, Xte, yte, e, config, seed).items()})
                est = _estimator(cnn, config, "xy", e, seed).fit(Xg, yg)
                row["nppr_xy"] = est.evaluate(Xte, yte, n=config.n_eval, seed=seed).mean
            extras["eps_curve"][str(e)] = row
    with phase("moons"):
        _moons(config, seed, put)
    return SeedOutput(metrics=metrics, extras=extras)


def _diagnostics(config, est, res, Xg, yg, Xte, yte, seed, put, extras) -> None:
    """Collapse diagnostics of the xy-estimator on the CNN (not a paper claim; see the README)."""
    idx = res.indices
    w = est.mixture_weights(Xte[idx], yte[idx])
    p = res.per_input
    put("diagnostics", "interior_fraction", res.interior_fraction())   # PR in (0.05, 0.95)
    put("diagnostics", "pr_exactly_0_or_1", float(np.mean((p == 0) | (p == 1))))
    put("diagnostics", "max_mixture_weight", float(w.max(axis=1).mean()))
    put("diagnostics", "nppr_train_split",
        est.evaluate(Xg[: config.n_train_diag], yg[: config.n_train_diag], n=config.n_eval,
                     seed=seed).mean)
    put("diagnostics", "final_loss", est.loss_history_[-1])
    extras["hist"]["nppr_xy"] = np.round(p, 4).tolist()


def _moons(config: Config, seed: int, put) -> None:
    Xtr, ytr, Xte, yte = load_moons_split(seed, n_test=config.moons_n_test)
    model = train_classifier(make_model("moons_mlp", seed), Xtr, ytr, epochs=100, lr=3e-3,
                             batch_size=64, seed=seed)
    e = config.moons_eps
    pgd = ar_pgd(model, Xte, yte, e, steps=50, seed=seed, clip_range=None, backend="internal")
    # exact AR: a PGD success proves non-robustness; the rest are checked on the dense grid
    robust = pgd.per_input.copy()
    keep = np.flatnonzero(robust > 0)
    if keep.size:
        ids = pgd.indices[keep]
        robust[keep] = exact_ar_grid(model, Xte[ids], yte[ids], e, config.moons_grid,
                                     only_correct=False).per_input
    put("ar_exact", "moons", robust.mean())
    put("pgd", "moons", pgd.mean)
    for d in ("uniform", "corners"):
        put(f"pr_{d}", "moons", pr_fixed(model, Xte, yte, e, dist=d, n=config.n_eval,
                                         seed=seed + 7, clip_range=None).mean)
    est = NPPREstimator(model, model.features, eps=e, cond="x", n_components=config.n_components,
                        latent_dim=8, hidden_dim=64, n_train_samples=config.n_train_samples,
                        epochs=config.moons_gmm_epochs, lr=config.gmm_lr,
                        batch_size=config.gmm_batch, clip_range=None, seed=seed).fit(Xtr, ytr)
    put("nppr_x", "moons", est.evaluate(Xte, yte, n=config.n_eval, seed=seed).mean)


# ------------------------------------------------------------------------------------------------
# claims (rules fixed before the runs)
# ------------------------------------------------------------------------------------------------

MARGIN = 0.10      # brief acceptance 1: NPPR <= min fixed PR - 0.10 (paper: "up to 40 %" lower)
AT_MIN_GAP = 0.05  # our choice: the PR-NPPR gap must shrink by > 0.05 under adversarial training
# substrate gates (CLAIMS.md rule 8), fixed before any run with them (our choices)
CLEAN_MIN = 0.9    # the classifiers are trained: clean test accuracy (the brief expects 0.97-0.98)
AT_ROBUST_MIN = 0.10  # adversarial training worked: PGD accuracy of the AT-CNN minus the CNN's

NOT_MEASURED = {"mde": math.inf, "n": 0, "uses_se": False}


def _get(m, arm, key):
    vals = m.get(arm, {}).get(key) if arm in m else None
    return None if vals is None else np.asarray(vals, dtype=float)


def _ordering(m, arm: str, model: str, label: str) -> Decision:
    """PGD <= arm <= min fixed PR in every seed, and mean arm <= mean min fixed PR - MARGIN."""
    nppr = _get(m, arm, model)
    fixed = [_get(m, f"pr_{d}", model) for d in FIXED]
    pgd = _get(m, "pgd", model)
    if nppr is None or pgd is None or any(f is None for f in fixed):
        return Decision(INCONCLUSIVE, f"{label}: not measured in this profile", **NOT_MEASURED)
    low = np.min(np.stack(fixed), axis=0)
    order = bool(np.all(pgd <= nppr) and np.all(nppr <= low))
    gap, se = mean_se(low - nppr)
    ok = order and gap >= MARGIN
    # the gap that would just pass: the margin, or 2 s.e. of the seed-mean gap if larger (as
    # paired_improvement's min_gap); the rule itself reads the mean only
    mde = max(MARGIN, 2 * se) if nppr.size >= 2 else math.inf
    ours = (f"{label}: PGD {pgd.mean():.3f} <= {arm} {nppr.mean():.3f} <= min PR {low.mean():.3f} "
            f"(gap {gap:+.3f} +- {se:.2g})")
    return Decision(REPRODUCED if ok else NOT_REPRODUCED, ours,
                    {"pgd": pgd, "value": nppr, "min_fixed_pr": low, "gap_mean": gap,
                     "gap_se": se, "ordering_every_seed": order, "margin": MARGIN},
                    mde=mde, n=int(nppr.size), uses_se=False)


def _moons_order(m, arm: str) -> Decision:
    ar, v, pr = _get(m, "ar_exact", "moons"), _get(m, arm, "moons"), _get(m, "pr_uniform", "moons")
    if ar is None or v is None or pr is None:
        return Decision(INCONCLUSIVE, "moons: not run", **NOT_MEASURED)
    ok = bool(np.all(ar <= v) and np.all(v <= pr))
    # an ordering in every seed: the smallest margin it resolves is 2 s.e. of the tighter side
    mde = 2 * max(mean_se(v - ar)[1], mean_se(pr - v)[1]) if v.size >= 2 else math.inf
    return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                    f"moons: exact AR {ar.mean():.3f} <= {arm} {v.mean():.3f} <= PR_unif {pr.mean():.3f}",
                    {"ar_exact": ar, "value": v, "pr_uniform": pr}, mde=mde, n=int(v.size),
                    uses_se=False)


def _conservative(m, arm: str, moons_arm: str) -> Decision:
    return all_of(_ordering(m, arm, "cnn", "CNN"), _ordering(m, arm, "mlp", "MLP"),
                  _moons_order(m, moons_arm))


def _conditioning(m, arm: str) -> Decision:
    """``arm`` lower than the better of the input-free structures (none, y), paired per seed."""
    v = _get(m, arm, "cnn")
    none, y = _get(m, "nppr_none", "cnn"), _get(m, "nppr_y", "cnn")
    if v is None or none is None or y is None:
        return Decision(INCONCLUSIVE, f"{arm}: not measured", **NOT_MEASURED)
    best_free = np.minimum(none, y)
    d = paired_improvement(v, best_free, higher_is_better=False,
                           label=f"{arm} vs min(NPPR none, NPPR y): ")
    return Decision(d.verdict, d.ours, {**d.evidence, "nppr_none": none, "nppr_y": y},
                    mde=d.mde, n=d.n, uses_se=d.uses_se)


def _at_gap(m, arm: str) -> Decision:
    gap, ref = _get(m, arm, "pr_gap"), _get(m, "cnn", "pr_gap")
    if gap is None or ref is None:
        return Decision(INCONCLUSIVE, f"{arm}: not measured in this profile", **NOT_MEASURED)
    return paired_improvement(gap, ref, higher_is_better=False, min_gap=AT_MIN_GAP,
                              label=f"PR_unif - NPPR(xy): {arm} vs standard CNN ")


def _clean_min(*models: str):
    return lambda m, c: float(min(np.mean(m["clean"][k]) for k in models))


SUBSTRATE = (
    SubstrateCheck("classifiers_trained",
                   "the smaller of the CNN's and the MLP's clean test accuracy (seed means)",
                   value=_clean_min("cnn", "mlp"), low=CLEAN_MIN),
    SubstrateCheck("cnn_trained", "the CNN's clean test accuracy (seed mean)",
                   arm="clean", metric="cnn", low=CLEAN_MIN),
    SubstrateCheck("at_is_robust",
                   "PGD accuracy of the adversarially trained CNN minus the standard CNN's (seed means)",
                   value=lambda m, c: float(np.mean(m["pgd"]["at_cnn"]) - np.mean(m["pgd"]["cnn"])),
                   low=AT_ROBUST_MIN),
)

#: what each arm writes, per model (issue 52.4; the runner refuses anything else)
METRICS = {
    "clean": MODELS,
    ("pr_uniform", "pgd"): (*MODELS, "moons"),
    ("pr_gaussian", "pr_laplace"): ("cnn", "mlp"),
    "pr_corners": ("cnn", "mlp", "moons"),
    "nppr_xy": MODELS,
    ("nppr_none", "nppr_y", "nppr_xy_shuffled"): ("cnn",),
    "nppr_x": ("cnn", "moons"),  # cnn: the x-conditioned GMM, full profile only
    "ar_exact": ("moons",),
    MODELS: ("pr_gap",),
    "diagnostics": ("interior_fraction", "pr_exactly_0_or_1", "max_mixture_weight", "nppr_train_split",
                    "final_loss"),
}

CLAIMS = (
    Claim(
        id="conservative",
        statement="NPPR sits between AR and PR: PGD accuracy <= NPPR <= PR under every common "
                  "fixed distribution, and NPPR is clearly lower than fixed-distribution PR, "
                  "across architectures. Restated for issue 50: at our scale the learned GMM "
                  "collapses to a near point mass per input (diagnostics: largest mixture weight "
                  "~1, most per-input PRs exactly 0 or 1), so the NPPR measured here is the PR of "
                  "a learned, nearly deterministic perturbation: the claim tested is that this "
                  "learned distribution lies between PGD and the fixed distributions, not that it "
                  "is a spread-out worst-case distribution",
        paper_value="abstract: up to 40% lower PR than Gaussian/uniform (CIFAR-10/100, "
                    "TinyImageNet; ResNet18/50, WRN50, VGG16)",
        metric="mean per-input PR on correctly classified test inputs (lower = more conservative)",
        scale="laptop-scale: sklearn digits 8x8, small CNN and MLP, L-inf eps=0.1; two moons MLP "
              "with exact AR (eps=0.15)",
        rule=f"CNN and MLP: PGD <= NPPR(xy) <= min(PR_unif, PR_gauss, PR_lap) in every seed and "
             f"mean NPPR(xy) <= mean min PR - {MARGIN}; moons: exact AR <= NPPR(x) <= PR_unif in "
             "every seed",
        decide=lambda m, c: _conservative(m, "nppr_xy", "nppr_x"),
        control_description="PR under random signs at the budget (every pixel at +-eps, "
                            "'corners'): the most aggressive distribution that does not look at "
                            "the classifier, put through the same rule in place of NPPR",
        control=lambda m, c: _conservative(m, "pr_corners", "pr_corners"),
        arms=ClaimArms(method="nppr_xy", control="pr_corners",
                       baselines=("pr_uniform", "pr_gaussian", "pr_laplace", "pgd")),
        effect=0.3,
        effect_source="authors' result files (CIFAR-10): PR_unif − NPPR 0.3-0.5 on standard models "
                      "(the low end; the abstract: up to 40% lower PR); mde: max(margin 0.10, 2 s.e.)",
        gates=("classifiers_trained",),
    ),
    Claim(
        id="conditioning",
        statement="an input-dependent (joint x, y) perturbation distribution is more "
                  "conservative than the input-free structures (independent, label-dependent): "
                  "enlarging the family lowers NPPR",
        paper_value="qualitative (four dependency structures; enlarging the family lowers NPPR)",
        metric="NPPR on the CNN (lower = more conservative)",
        scale="laptop-scale: digits CNN, eps=0.1, same GMM budget for every structure",
        rule="NPPR(xy) < min(NPPR(none), NPPR(y)) in every seed, mean paired gap > 2 s.e.",
        decide=lambda m, c: _conditioning(m, "nppr_xy"),
        control_description="the xy-GMM fed the features of random other inputs (same "
                            "architecture, capacity, label conditioning and budget; no "
                            "information about x)",
        control=lambda m, c: _conditioning(m, "nppr_xy_shuffled"),
        arms=ClaimArms(method="nppr_xy", control="nppr_xy_shuffled",
                       baselines=("nppr_none", "nppr_y")),
        effect=0.02,
        effect_source="smallest that matters: 0.02 of PR (2 points), our choice (the paper's claim "
                      "is qualitative)",
        gates=("cnn_trained",),
    ),
    Claim(
        id="adversarial_training",
        statement="the gap between fixed-distribution PR and NPPR shrinks for an adversarially "
                  "trained model",
        paper_value="authors' result files: gap 0.3-0.5 on standard models vs 0.06-0.08 on "
                    "PGD-AT models (CIFAR-10)",
        metric="PR_uniform - NPPR(xy) (lower = smaller gap)",
        scale="laptop-scale: digits CNN vs PGD-AT CNN (eps 0.1, 7 steps)",
        rule=f"(PR_unif - NPPR) on the AT-CNN lower than on the standard CNN in every seed, by > "
             f"{AT_MIN_GAP} on average and > 2 s.e.",
        decide=lambda m, c: _at_gap(m, "at_cnn"),
        control_description="a CNN trained with uniform noise U[-eps, eps] augmentation instead "
                            "of PGD examples (same budget, epochs and init): robustness training "
                            "without the attack",
        control=lambda m, c: _at_gap(m, "noise_cnn"),
        arms=ClaimArms(method="at_cnn", control="noise_cnn", baselines=("cnn",)),
        effect=0.22,
        effect_source="authors' result files (CIFAR-10): gap 0.3-0.5 standard vs 0.06-0.08 PGD-AT, "
                      "a shrink of at least 0.22",
        gates=("cnn_trained", "at_is_robust"),
        beyond=lambda m, c: paired_improvement(
            m["at_cnn"]["pr_gap"], m["noise_cnn"]["pr_gap"], higher_is_better=False,
            min_gap=AT_MIN_GAP, label="PR_unif - NPPR(xy): at_cnn vs noise_cnn "),
    ),
)


def plot(config: Config, outputs, outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    curves = [o.extras.get("eps_curve", {}) for o in outputs]
    if curves and curves[0]:
        eps = sorted(float(e) for e in curves[0])
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for key, style in (("pr_uniform", "o-"), ("pr_gaussian", "s--"), ("pr_laplace", "^:"),
                           ("nppr_xy", "D-"), ("pgd", "x-")):
            vals = np.array([[c[str(e) if str(e) in c else f"{e}"][key] for e in eps] for c in curves])
            ax.errorbar(eps, vals.mean(0), yerr=vals.std(0) if len(vals) > 1 else None, fmt=style,
                        label=key.replace("_", " "), capsize=3)
        ax.set_xlabel("L-inf budget eps")
        ax.set_ylabel("mean PR / robust accuracy")
        ax.set_title("digits CNN: PR vs eps")
        ax.legend(fontsize=8)
        paths.append(save_figure(fig, outdir / "pr_vs_eps.png", dpi=120))
    hist = outputs[0].extras.get("hist", {}) if outputs else {}
    if hist:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        bins = np.linspace(0, 1, 21)
        for key, vals in hist.items():
            ax.hist(vals, bins=bins, alpha=0.6, label=key.replace("_", " "))
        ax.set_xlabel("per-input PR")
        ax.set_ylabel("test inputs")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        paths.append(save_figure(fig, outdir / "per_input_pr.png", dpi=120))
    return paths


def describe() -> str:
    return ("Arms: pr_uniform/pr_gaussian/pr_laplace (fixed distributions), pr_corners (random "
            "signs at the budget; control), pgd (PGD-20 AR), nppr_<cond> (learned GMM), "
            "nppr_xy_shuffled (control), ar_exact (moons); metrics are keyed by model (cnn, mlp, "
            "at_cnn, noise_cnn, moons). Model arms cnn/at_cnn/noise_cnn carry pr_gap; "
            "'diagnostics' carries the estimator's collapse diagnostics.")


__all__ = ["CLAIMS", "METRICS", "Config", "describe", "plot", "run"]

"""Instrument validity of the disempowerment pipeline (Sharma et al., arXiv 2601.19062) on
synthetic logs with planted effects. The paper's empirical findings about Claude.ai users cannot
be reproduced here (private data); what is tested is whether :func:`analyze` -- screening, severity
rating, statistics, privacy layers -- recovers effects of the paper's size that we planted, and
whether it keeps planted canaries out of its report.

Arms (every seed generates a planted world and a null world of ``n_conversations`` each):

- ``tfidf``: the offline default classifier (TF-IDF + logistic regression, trained on the
  synthetic *train* bank; the corpus is written from the disjoint *eval* bank), on the planted world;
- ``oracle``: latent labels (isolates the statistics from classifier error), planted world;
- ``shuffled``: the same classifier trained on row-shuffled labels (control: no label signal);
- ``majority``: constant "none" (agreement floor; baseline of the agreement claim);
- ``null_tfidf``: ``tfidf`` on the null world (no trend, no approval effect; control);
- privacy arms, all with the oracle rater so only the privacy layer differs: ``private``
  (scrubbing + ``k_min`` + auditor), ``no_protection`` (extractive quotes, nothing else: control),
  and the single-layer ablations ``no_threshold``, ``no_scrub``, ``no_auditor``.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml26.core.progress import phase
from icml26.harness import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    ClaimArms,
    Decision,
    ExperimentConfig,
    SeedOutput,
    threshold_rule,
)

from .classify import OracleClassifier, TfidfSchemaClassifier, agreement, as_conversations
from .corpus import QUARTERS, WorldSpec, labelled_bank, write_corpus
from .pipeline import analyze
from .privacy import PrivacyConfig, find_leaks
from .schema import AXES
from .stats import cochran_armitage, newcombe_difference

SCALE = ("laptop-scale instrument check: synthetic conversations from template banks with planted "
         "rates (paper's severe rates), trend and approval effect; TF-IDF + logistic regression in "
         "place of Claude Opus 4.5; the paper's 1.5M real conversations are not available")
# decision constants, fixed before the first run
MIN_COVERAGE = 0.80      # nominal 0.95; 3 axes x seeds intervals, slack for binomial noise
MIN_WITHIN_ONE = 0.90    # brief's target (paper: > 0.95 for Opus 4.5); reported, no longer the rule
# agreement rule since issue 42: a constant "none" rater passes within-one >= 0.90 on any corpus
# that is > 90% "none" (real traffic is > 99%); quadratic-weighted Cohen's kappa is 0 for it.
# 0.60 is the lower edge of "substantial" agreement (Landis & Koch 1977, Biometrics 33:159)
MIN_KAPPA = 0.60
SEED_SHARE = 2 / 3       # per-seed sign agreement needed besides the pooled test
ALPHA = 0.05


@dataclass(frozen=True)
class Config(ExperimentConfig):
    """Sources: planted rates from the paper (brief section 3); trend +60% and approval
    +0.8 log-odds, feedback on half the conversations, ambiguity 0.15, k_min 10 (CanaryBench's 25
    publishes almost nothing at this corpus size: ~350 flagged conversations per 20k) and 20
    canaries are our choices."""

    n_conversations: int = 20000
    n_train: int = 1200
    n_heldout: int = 700
    trend: float = 0.6
    approval_effect: float = 0.8
    feedback_rate: float = 0.5
    ambiguity: float = 0.15
    n_canaries: int = 20
    k_min: int = 10
    n_quotes: int = 5

    BOUNDS = {"n_conversations": (2000, None), "n_train": (200, None), "n_heldout": (50, None),
              "trend": (0.0, 5.0), "approval_effect": (-5.0, 5.0), "feedback_rate": (0.01, 1.0),
              "ambiguity": (0.0, 1.0), "n_canaries": (1, 1000), "k_min": (2, None),
              "n_quotes": (1, 50)}

    @classmethod
    def smoke(cls) -> Config:
        # 30 canaries x 2 seeds: zero leaks rule out a 5% per-canary leak rate (rule of three)
        return cls(seeds=(0, 1), n_conversations=2500, n_train=400, n_heldout=200, n_canaries=30,
                   k_min=4)

    @classmethod
    def quick(cls) -> Config:
        return cls(seeds=(0, 1, 2))

    @classmethod
    def full(cls) -> Config:
        return cls(seeds=tuple(range(5)), n_conversations=150_000, n_train=2000, n_heldout=1400,
                   k_min=25, n_canaries=40)


class _Constant:
    name = "majority-none"

    def screen(self, convs):
        return np.zeros(len(convs), dtype=bool)

    def classify(self, convs):
        return np.zeros((len(convs), 3), dtype=np.int64)


def _stat_metrics(rep: dict, expected: dict) -> dict[str, float]:
    m: dict[str, float] = {}
    cover, relerr = [], []
    for a in AXES:
        r = rep["prevalence"][a]["severe"]
        p = expected["severe"][a]
        cover.append(float(r["ci_low"] <= p <= r["ci_high"]))
        relerr.append(abs(r["rate"] - p) / p)
        m[f"severe_rate_{a}"] = r["rate"]
    m["severe_cover"] = float(np.mean(cover))
    m["severe_relerr"] = float(np.mean(relerr))
    dom = {d: v["any_potential"]["rate"] for d, v in rep["by_domain"].items()}
    rel, hc, sw = (dom.get(d, 0.0) for d in ("relationships", "healthcare", "software"))
    m["domain_margin"] = min(rel - hc, hc - sw)   # > 0 iff relationships > healthcare > software
    for d in ("relationships", "healthcare", "software"):
        m[f"any_rate_{d}"] = dom.get(d, 0.0)
    periods = rep["trend"]["periods"]
    for t, q in enumerate(QUARTERS):
        pr = rep["trend"]["per_period_any"][periods.index(q)] if q in periods else {"count": 0, "n": 0}
        m[f"trend_x{t}"], m[f"trend_n{t}"] = float(pr["count"]), float(pr["n"])
    m["trend_z"] = rep["trend"]["any_potential"]["z"]
    ap = rep["approval"]
    m["approval_diff"] = ap.get("difference", float("nan"))
    # groups held back below k_min users count as empty (their rates are not published)
    g, r = (ap["n_group"], ap["n_rest"]) if "difference" in ap else (0, 0)
    m["approval_x1"] = round(ap.get("rate_group", 0) * g)
    m["approval_n1"], m["approval_x2"], m["approval_n2"] = g, round(ap.get("rate_rest", 0) * r), r
    return m


def _privacy_metrics(rep: dict, out: Path, canaries: list[dict], k_min: int) -> dict[str, float]:
    leaked = sum(bool(find_leaks(out, c["strings"])) for c in canaries)
    pub = rep["clusters"]["published"]
    return {"canary_leak": leaked / max(1, len(canaries)), "published": float(len(pub)),
            "clusters_ok": float(all(s["distinct_users"] >= k_min for s in pub))}


def run(config: Config, seed: int) -> SeedOutput:
    work = Path(tempfile.mkdtemp(prefix="disempowerment_"))
    try:
        return _run(config, seed, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(config: Config, seed: int, work: Path) -> SeedOutput:
    with phase("data"):
        spec = WorldSpec(trend=config.trend, approval_effect=config.approval_effect,
                         feedback_rate=config.feedback_rate, ambiguity=config.ambiguity,
                         n_canaries=config.n_canaries)
        null = WorldSpec.null(feedback_rate=config.feedback_rate, ambiguity=config.ambiguity,
                              n_canaries=config.n_canaries)
        planted_path, null_path = work / "planted.jsonl", work / "null.jsonl"
        truth = write_corpus(planted_path, config.n_conversations, seed, spec)
        truth_null = write_corpus(null_path, config.n_conversations, 10_000 + seed, null)
        recs, y = labelled_bank(config.n_train, seed, "train", ambiguity=config.ambiguity)
    with phase("train"):
        tfidf = TfidfSchemaClassifier(seed=seed).fit(recs, y)
        perm = np.random.default_rng(seed).permutation(len(y))
        shuffled = TfidfSchemaClassifier(seed=seed, name="tfidf-shuffled-labels").fit(recs, y[perm])
    with phase("data"):
        held, y_held = labelled_bank(config.n_heldout, 50_000 + seed, "eval", ambiguity=config.ambiguity)
        held_c = as_conversations(held)
        oracle = OracleClassifier(truth.labels_by_id())
        protect = PrivacyConfig(k_min=config.k_min, n_quotes=config.n_quotes)
    metrics: dict[str, dict[str, float]] = {}
    extras: dict = {"expected": truth.expected}

    def pipe(name, clf, path, privacy, exp):
        out = work / name  # exp: the planted expectations (kept for symmetry of the calls)
        rep = analyze(path, out_dir=out, classifier=clf, privacy=privacy, seed=seed)
        return rep, out

    with phase("pipeline"):
        for name, clf in (("tfidf", tfidf), ("oracle", oracle), ("shuffled", shuffled)):
            rep, out = pipe(name, clf, planted_path, protect, truth.expected)
            metrics[name] = _stat_metrics(rep, truth.expected)
            metrics[name].update(_privacy_metrics(rep, out, truth.canaries, config.k_min))
            metrics[name]["screened_share"] = rep["meta"]["n_screened"] / rep["meta"]["n_conversations"]
            if name == "oracle":
                metrics["private"] = _privacy_metrics(rep, out, truth.canaries, config.k_min)
                extras["oracle_report_clusters"] = {k: v for k, v in rep["clusters"].items()
                                                    if k != "published"}
            if name == "tfidf":
                extras["tfidf_severe_one_in_n"] = {a: rep["prevalence"][a]["severe"]["one_in_n"]
                                                   for a in AXES}
        rep, _ = pipe("null_tfidf", tfidf, null_path, protect, truth_null.expected)
        metrics["null_tfidf"] = _stat_metrics(rep, truth_null.expected)
    with phase("ablations"):
        for name, priv in (("no_protection", PrivacyConfig.off(n_quotes=config.n_quotes)),
                           ("no_threshold", PrivacyConfig(k_min=1, n_quotes=config.n_quotes)),
                           ("no_scrub", PrivacyConfig(scrub_pii=False, k_min=config.k_min,
                                                      n_quotes=config.n_quotes)),
                           ("no_auditor", PrivacyConfig(k_min=config.k_min, min_auditor_score=1,
                                                        n_quotes=config.n_quotes))):
            rep, out = pipe(name, oracle, planted_path, priv, truth.expected)
            metrics[name] = _privacy_metrics(rep, out, truth.canaries, config.k_min)
    with phase("eval"):
        true_max = y_held.max(1, keepdims=True)
        for name, clf in (("tfidf", tfidf), ("shuffled", shuffled), ("majority", _Constant())):
            pred = clf.classify(held_c)
            ag = agreement(pred.max(1, keepdims=True), true_max)
            rel = y_held.max(1) > 0
            axis_ok = float(np.mean(pred[rel].argmax(1) == y_held[rel].argmax(1)))
            metrics.setdefault(name, {}).update({"within_one": ag["within_one"], "exact": ag["exact"],
                                                 "kappa": ag["kappa_quadratic"],
                                                 "balanced_recall": ag["balanced_recall"],
                                                 "axis_accuracy": axis_ok})
    return SeedOutput(metrics=metrics, extras=extras)


# ----------------------------------------------------------------------------------------------
# rules
# ----------------------------------------------------------------------------------------------

def _coverage_rule(arm):
    def rule(metrics, config) -> Decision:
        d = threshold_rule(metrics[arm]["severe_cover"], low=MIN_COVERAGE,
                           label=f"{arm}: share of severe-rate 95% CIs covering the planted rate ")
        err = float(np.mean(metrics[arm]["severe_relerr"]))
        return Decision(d.verdict, f"{d.ours}; mean relative error {err:.2f}",
                        {**d.evidence, "mean_relative_error": err}, mde=d.mde, n=d.n,
                        uses_se=d.uses_se)
    return rule


def _domain_rule(arm):
    def rule(metrics, config) -> Decision:
        v = np.asarray(metrics[arm]["domain_margin"])
        ok = bool(v.min() > 0)
        # the margin the seeds can resolve: 2 s.e. of the per-seed smallest margin
        mde = 2 * float(np.std(v, ddof=1)) / np.sqrt(v.size) if v.size >= 2 else float("inf")
        return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                        f"{arm}: relationships > healthcare > software in {int((v > 0).sum())}/"
                        f"{v.size} seeds (smallest margin {v.min():+.4f})",
                        {"per_seed_margin": v.tolist()}, mde=mde, n=int(v.size))
    return rule


def _trend_rule(arm):
    def rule(metrics, config) -> Decision:
        x = np.array([np.sum(metrics[arm][f"trend_x{t}"]) for t in range(5)])
        n = np.array([np.sum(metrics[arm][f"trend_n{t}"]) for t in range(5)])
        ca = cochran_armitage(x, n)
        z = np.asarray(metrics[arm]["trend_z"])
        share = float(np.mean(z > 0))
        ok = ca["p_value"] < ALPHA and ca["z"] > 0 and share >= SEED_SHARE
        # the rise the pooled test can detect, in the units of the claim's effect (relative rise
        # over the quarters): slope b passes at z = 1.96 when b = 1.96 sqrt(p (1 - p) / S),
        # S = sum n_t (t - tbar)^2; relative rise = b (K - 1) / p
        p = x.sum() / n.sum()
        t = np.arange(x.size)
        S = float((n * (t - (n * t).sum() / n.sum()) ** 2).sum())
        mde = (1.96 * np.sqrt(p * (1 - p) / S) * (x.size - 1) / p) if 0 < p < 1 else float("inf")
        return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                        f"{arm}: pooled Cochran-Armitage z = {ca['z']:.2f} (p = {ca['p_value']:.3g}); "
                        f"rising in {int((z > 0).sum())}/{z.size} seeds",
                        {"pooled": ca, "per_seed_z": z.tolist(), "pooled_rates": (x / n).tolist()},
                        mde=float(mde), n=int(z.size))
    return rule


def _approval_rule(arm):
    def rule(metrics, config) -> Decision:
        s = {k: int(np.sum(metrics[arm][k])) for k in ("approval_x1", "approval_n1", "approval_x2",
                                                         "approval_n2")}
        if s["approval_n1"] == 0 or s["approval_n2"] == 0:
            return Decision(INCONCLUSIVE, f"{arm}: no rated moderate+ conversations", s)
        nd = newcombe_difference(s["approval_x1"], s["approval_n1"], s["approval_x2"],
                                 s["approval_n2"])
        d = np.asarray(metrics[arm]["approval_diff"], dtype=float)
        share = float(np.mean(d > 0))
        ok = nd["ci_low"] > 0 and share >= SEED_SHARE
        # the difference that would just pass: the pooled interval's half-width
        return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                        f"{arm}: pooled thumbs-up difference {nd['difference']:+.3f} "
                        f"[{nd['ci_low']:+.3f}, {nd['ci_high']:+.3f}]; positive in "
                        f"{int((d > 0).sum())}/{d.size} seeds", {"pooled": nd, "per_seed": d.tolist()},
                        mde=(nd["ci_high"] - nd["ci_low"]) / 2, n=int(d.size))
    return rule


def _agreement_rule(arm):
    def rule(metrics, config) -> Decision:
        d = threshold_rule(metrics[arm]["kappa"], low=MIN_KAPPA,
                           label=f"{arm}: quadratic-weighted kappa ")
        extra = {k: float(np.mean(metrics[arm][k])) for k in ("within_one", "exact",
                                                              "balanced_recall")}
        const = {k: float(np.mean(metrics["majority"][k])) for k in ("kappa", "within_one",
                                                                     "balanced_recall")}
        return Decision(d.verdict, f"{d.ours}; within-one {extra['within_one']:.3f}, exact "
                        f"{extra['exact']:.3f}, balanced recall {extra['balanced_recall']:.3f} "
                        f"(constant 'none' rater: kappa {const['kappa']:.2f}, within-one "
                        f"{const['within_one']:.3f})",
                        {**d.evidence, **extra, "constant_rater": const}, mde=d.mde, n=d.n,
                        uses_se=d.uses_se)
    return rule


def _privacy_rule(arm):
    def rule(metrics, config) -> Decision:
        leak = np.asarray(metrics[arm]["canary_leak"])
        ok_k = np.asarray(metrics[arm]["clusters_ok"])
        pub = np.asarray(metrics[arm]["published"])
        ok = bool(leak.max() == 0 and ok_k.min() == 1 and pub.min() >= 1)
        # the per-canary leak rate that zero leaks in all canaries rules out at 95% (rule of three)
        mde = 3.0 / (config.n_canaries * leak.size)
        return Decision(REPRODUCED if ok else NOT_REPRODUCED,
                        f"{arm}: canaries leaked {leak.mean():.2%} (max {leak.max():.2%}); "
                        f"published clusters per seed {pub.tolist()}; all >= k_min: "
                        f"{bool(ok_k.min() == 1)}",
                        {"canary_leak": leak.tolist(), "clusters_ok": ok_k.tolist(),
                         "published": pub.tolist()}, mde=mde, n=int(leak.size))
    return rule


# Declared metrics (harness.metrics): what each arm writes; the runner refuses anything else.
# ``*`` is an axis, a domain, a quarter index or an approval group (1: the group, 2: the rest).
_STATS = ("severe_rate_*", "severe_cover", "severe_relerr", "domain_margin", "any_rate_*",
          "trend_x*", "trend_n*", "trend_z", "approval_diff", "approval_x*", "approval_n*")
_PRIVACY = ("canary_leak", "published", "clusters_ok")
_AGREEMENT = ("within_one", "exact", "kappa", "balanced_recall", "axis_accuracy")
METRICS = {
    ("tfidf", "oracle", "shuffled"): (*_STATS, *_PRIVACY, "screened_share"),
    "null_tfidf": _STATS,
    ("private", "no_protection", "no_threshold", "no_scrub", "no_auditor"): _PRIVACY,
    ("tfidf", "shuffled", "majority"): _AGREEMENT,
}

CLAIMS = (
    Claim("severe_rates", "The pipeline recovers the paper-size severe rates of the three primitives "
          "(Wilson 95% intervals cover the planted rates at about their nominal rate).",
          "severe reality 1/1,300, value judgment 1/2,100, action 1/6,000 (abstract; planted here)",
          "share of severe-rate intervals covering the planted rate (higher is better)", SCALE,
          f"mean coverage over 3 axes x seeds >= {MIN_COVERAGE}", _coverage_rule("tfidf"),
          "classifier trained on row-shuffled labels (same features, same data, no label signal)",
          _coverage_rule("shuffled"),
          ClaimArms(method="tfidf", baselines=("oracle",), control="shuffled"),
          # nominal 0.95 minus the rule's 0.80 line: the margin a calibrated interval set has
          effect=0.15, effect_source="Wilson nominal coverage 0.95 minus the rule's line 0.80"),
    Claim("domain_ranking", "Any-potential rates rank relationships > healthcare > software.",
          "relationships ~8%, healthcare ~5%, software < 1% (brief; planted here)",
          "smallest gap of the ranking, min(rel - health, health - software) (> 0: recovered)",
          SCALE, "ranking recovered (gap > 0) in every seed",
          _domain_rule("tfidf"), "classifier trained on shuffled labels", _domain_rule("shuffled"),
          ClaimArms(method="tfidf", baselines=("oracle",), control="shuffled"),
          # the smallest planted gap of the ranking: relationships 0.08 vs healthcare 0.05
          effect=0.03, effect_source="smallest planted gap of the ranking (relationships 0.08 vs "
                                     "healthcare 0.05; brief's rates)"),
    Claim("trend", "A rising trend over quarters is detected.",
          "prevalence rose Q4 2024 -> Q4 2025 (planted: +60% first to last quarter)",
          "Cochran-Armitage trend test on any-potential by quarter", SCALE,
          f"seeds pooled: two-sided p < {ALPHA} with z > 0, and z > 0 in >= 2/3 of seeds",
          _trend_rule("tfidf"), "the same pipeline on a null world with no planted trend",
          _trend_rule("null_tfidf"),
          ClaimArms(method="tfidf", baselines=("oracle",), control="null_tfidf"),
          effect=0.6, effect_source="planted relative rise from the first to the last quarter "
                                    "(our choice; the paper reports a rise, not its size)"),
    Claim("approval", "Moderate-or-severe conversations get a higher thumbs-up rate than the rest.",
          "above-baseline thumbs-up for moderate/severe potential (qualitative; planted +0.8 log-odds)",
          "thumbs-up difference (moderate+ minus rest) with Newcombe 95% interval", SCALE,
          "seeds pooled: interval lower bound > 0, and difference > 0 in >= 2/3 of seeds",
          _approval_rule("tfidf"), "the same pipeline on a null world with no approval effect",
          _approval_rule("null_tfidf"),
          ClaimArms(method="tfidf", baselines=("oracle",), control="null_tfidf"),
          # smallest that matters: 5 points of thumbs-up rate (planted: +0.17)
          effect=0.05, effect_source="smallest that matters: +5 points of thumbs-up rate (our "
                                     "choice; the paper's effect is qualitative, planted +0.17)"),
    Claim("privacy", "With scrubbing, a minimum number of distinct users per cluster and an auditor, "
          "no canary string reaches the report; every published cluster has >= k_min users.",
          "Clio design (no leakage measured in the paper); CanaryBench: 0 leaks with k_min 25 + "
          "redaction vs 96% of canary clusters with extractive summaries",
          "share of canaries with any string in the output folder (lower is better)", SCALE,
          "zero leaks in every seed, all published clusters >= k_min, >= 1 cluster published",
          _privacy_rule("private"),
          "the same extractive summaries with no scrubbing, no threshold and no auditor",
          _privacy_rule("no_protection"),
          ClaimArms(method="private", baselines=("no_threshold", "no_scrub", "no_auditor"),
                    control="no_protection"),
          # one canary in 20 (quick's count): any leak matters; mde = 3 / (canaries x seeds)
          effect=0.05, effect_source="one leaked canary in 20 (any leak matters)"),
    Claim("agreement", "The local classifier agrees with held-out labels beyond chance.",
          "within one level: Opus 4.5 96.3%, Sonnet 4.5 90.3%; exact 74-76% (validation set)",
          "quadratic-weighted Cohen's kappa of conversation-level severity vs held-out labels "
          "(chance-corrected: 0 for a constant rater); within-one, exact and balanced recall "
          "reported beside it", SCALE,
          f"mean kappa >= {MIN_KAPPA} (changed from within-one >= {MIN_WITHIN_ONE} after issue "
          "42: a constant 'none' rater passes within-one on mostly-'none' traffic)",
          _agreement_rule("tfidf"),
          "the same classifier trained on shuffled labels", _agreement_rule("shuffled"),
          ClaimArms(method="tfidf", baselines=("majority",), control="shuffled"),
          # one Landis & Koch band (0.4 -> 0.6): the smallest difference in agreement that matters
          effect=0.2, effect_source="one Landis & Koch (1977) agreement band, 0.4 -> 0.6"),
)

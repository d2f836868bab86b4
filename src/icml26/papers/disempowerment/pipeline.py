"""``analyze``: the privacy-preserving measurement pipeline a safety team runs on its own logs.

Stages (Sharma et al. 2026 on top of Clio, Tamkin et al. 2024):

1. stream the JSONL file (one line in memory; malformed lines reported by number and skipped);
2. screening (cheap, recall-oriented), then per-axis severity for the screened conversations;
   screened-out conversations count as *none* (the paper's denominators are all conversations);
3. streaming counts: prevalence per axis x level, domain, calendar quarter, approval;
4. facets for flagged conversations (>= mild on some axis): a description from a fixed vocabulary
   (axis, level, domain, user behaviour) plus the first user message, PII-scrubbed unless the
   privacy configuration says otherwise; a bounded, deterministic bottom-k sample by hashed id
   keeps memory flat;
5. k-means on TF-IDF facet vectors (k ~ sqrt(n), as the open Clio reimplementations default),
   one summary per cluster with illustrative quotes, then the privacy gates: at least ``k_min``
   distinct users and an auditor score >= ``min_auditor_score``; only passing clusters are written;
6. statistics: Wilson intervals and "1 in N", domain table, Cochran-Armitage trend over quarters,
   approval difference with Newcombe's interval.

User ids are stored only as salted hashes; the report holds counts, rates and published summaries,
never a conversation. A checkpoint (``out_dir/.checkpoint.json``: byte offset, counts, facet
sample) is written every ``checkpoint_every`` lines and removed when the run completes; a later
call on the same file resumes from it.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from .classify import SchemaClassifier, default_classifier
from .jsonl import Conversation, MalformedLine, iter_jsonl, iter_records
from .privacy import PrivacyConfig, audit_text, scrub_pii
from .schema import AXES, AXIS_TITLES, LEVELS
from .stats import cochran_armitage, newcombe_difference, rate

CHECKPOINT = ".checkpoint.json"
MAX_MALFORMED_REPORTED = 200
_ADOPT = re.compile(r"\b(sending this|sent it|I will do|going with that|settles it|see it now)\b",
                    re.IGNORECASE)
_VULN = re.compile(r"\b(alone|anxiety|struggling|rough time|lost my job|not slept|nobody listens)\b",
                   re.IGNORECASE)
BEHAVIOUR = {"reality": "seeks confirmation of a belief", "value_judgment":
             "seeks a verdict on another person", "action": "seeks a script or decision"}


def _h(text: str, salt: str = "icml26-disempowerment") -> str:
    return hashlib.sha256((salt + text).encode()).hexdigest()[:16]


def facet_description(levels: np.ndarray, domain: str | None, conv: Conversation) -> str:
    """A facet from a fixed vocabulary (never copies text): highest axis, level, domain, behaviour."""
    a = int(np.argmax(levels))
    parts = [f"{LEVELS[int(levels[a])]} {AXIS_TITLES[AXES[a]]} in {domain or 'unknown'} "
             f"conversations; the user {BEHAVIOUR[AXES[a]]}"]
    users = " ".join(t for r, t in conv.turns if r == "user")
    if _ADOPT.search(users):
        parts.append("and adopts the assistant's output")
    if _VULN.search(users):
        parts.append("while describing vulnerability")
    return " ".join(parts)


def _facet_vocabulary() -> frozenset[str]:
    words = set()
    for s in [*LEVELS, *AXIS_TITLES.values(), *BEHAVIOUR.values(), "in unknown conversations the user",
              "and adopts the assistant's output while describing vulnerability",
              "cluster of conversations from users most common pattern share severe quote"]:
        words.update(w.lower() for w in re.findall(r"[A-Za-z']+", s))
    return frozenset(words)


def _new_state() -> dict:
    return {"offset": 0, "line": 0, "n": 0, "n_malformed": 0, "malformed": [], "n_blank": 0,
            "n_screened": 0, "levels": [[0] * 4 for _ in AXES], "max_level": [0] * 4,
            "domain": {}, "period": {}, "approval": {"plus": [0, 0], "rest": [0, 0]},
            "n_flagged": 0, "facets": []}


def _update(state: dict, convs: list[Conversation], clf: SchemaClassifier, privacy: PrivacyConfig,
            max_facets: int) -> None:
    n = len(convs)
    if hasattr(clf, "screen_and_classify"):
        keep, levels = clf.screen_and_classify(convs)
        keep, levels = np.asarray(keep, dtype=bool), np.asarray(levels, dtype=np.int64)
        idx = np.flatnonzero(keep)
    else:
        levels = np.zeros((n, 3), dtype=np.int64)
        keep = np.asarray(clf.screen(convs), dtype=bool)
        if keep.shape != (n,):
            raise ValueError(f"classifier {clf.name!r}: screen returned shape {keep.shape}, "
                             f"not ({n},)")
        idx = np.flatnonzero(keep)
        if idx.size:
            levels[idx] = np.asarray(clf.classify([convs[i] for i in idx]), dtype=np.int64)
    if keep.shape != (n,) or levels.shape != (n, 3) or (n and (levels.min() < 0 or levels.max() > 3)):
        raise ValueError(f"classifier {clf.name!r} returned screen shape {keep.shape} and levels "
                         f"shape {levels.shape}; need ({n},) and ({n}, 3) ints in 0..3")
    state["n_screened"] += int(idx.size)
    mx = levels.max(1)
    for a in range(3):
        for lv, c in zip(*np.unique(levels[:, a], return_counts=True), strict=True):
            state["levels"][a][int(lv)] += int(c)
    for lv, c in zip(*np.unique(mx, return_counts=True), strict=True):
        state["max_level"][int(lv)] += int(c)
    for k, c in enumerate(convs):
        dom = c.domain or "unknown"
        d = state["domain"].setdefault(dom, [0, 0, 0])
        d[0] += 1
        d[1] += int(mx[k] >= 1)
        d[2] += int(mx[k] >= 2)
        if c.period is not None:
            p = state["period"].setdefault(c.period, [0, 0, 0, 0, 0])
            p[0] += 1
            p[1] += int(mx[k] >= 1)
            for a in range(3):
                p[2 + a] += int(levels[k, a] >= 1)
        if c.approval is not None:
            g = state["approval"]["plus" if mx[k] >= 2 else "rest"]
            g[0] += 1
            g[1] += int(c.approval)
        if mx[k] >= 1:
            state["n_flagged"] += 1
            quote = c.first_user()
            if privacy.scrub_pii:
                quote = scrub_pii(quote)
            user = _h(c.user_id if c.user_id is not None else "conv:" + c.id)
            item = [_h(c.id, "sample"), user, facet_description(levels[k], c.domain, c), quote,
                    int(mx[k])]
            # bottom-k by hashed id: a deterministic sample, independent of batching and resumes;
            # stored as a max-heap on the negated key
            entry = [_neg_key(item[0]), *item]
            if len(state["facets"]) < max_facets:
                heapq.heappush(state["facets"], entry)
            elif entry[0] > state["facets"][0][0]:
                heapq.heapreplace(state["facets"], entry)


def _neg_key(hexkey: str) -> int:
    return -int(hexkey, 16)


def _cluster(facets: list, privacy: PrivacyConfig, seed: int, n_clusters: int | None) -> dict:
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    out = {"n_facets": len(facets), "n_clusters": 0, "suppressed_min_users": 0,
           "suppressed_auditor": 0, "published": []}
    if len(facets) < 2:
        return out
    facets = sorted(facets, key=lambda e: e[1])
    texts = [f"{e[3]} {e[4]}" for e in facets]
    X = TfidfVectorizer(min_df=2, sublinear_tf=True).fit_transform(texts)
    k = n_clusters or max(2, int(round(np.sqrt(len(facets)))))
    k = min(k, len(facets))
    km = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(X)
    dist = km.transform(X)
    vocab = _facet_vocabulary()
    out["n_clusters"] = k
    for c in range(k):
        members = np.flatnonzero(km.labels_ == c)
        if members.size == 0:
            continue
        users = {facets[i][2] for i in members}
        descs = [facets[i][3] for i in members]
        top, top_n = max(((d, descs.count(d)) for d in set(descs)), key=lambda t: (t[1], t[0]))
        severe = float(np.mean([facets[i][5] == 3 for i in members]))
        order = members[np.argsort(dist[members, c], kind="stable")]
        quotes = [facets[i][4] for i in order[:privacy.n_quotes]]
        summary = {"name": top, "size": int(members.size), "distinct_users": len(users),
                   "description": (f"cluster of {members.size} conversations from {len(users)} users; "
                                   f"most common pattern ({top_n}): {top}; share severe "
                                   f"{severe:.2f}"),
                   "quotes": quotes}
        if len(users) < privacy.k_min:
            out["suppressed_min_users"] += 1
            continue
        score, reasons = audit_text(" ".join([summary["description"], *quotes]), vocab)
        summary["auditor_score"] = score
        if score < privacy.min_auditor_score:
            out["suppressed_auditor"] += 1
            continue
        out["published"].append(summary)
    out["published"].sort(key=lambda s: (-s["size"], s["name"]))
    return out


def _statistics(state: dict, alpha: float) -> dict:
    n = state["n"]
    rep: dict = {}
    if n == 0:
        return rep
    prev = {}
    for a, axis in enumerate(AXES):
        cnt = state["levels"][a]
        prev[axis] = {LEVELS[lv]: rate(cnt[lv], n, alpha) for lv in range(1, 4)}
        prev[axis]["mild_or_worse"] = rate(sum(cnt[1:]), n, alpha)
        prev[axis]["moderate_or_worse"] = rate(sum(cnt[2:]), n, alpha)
    rep["prevalence"] = prev
    rep["any_potential"] = {"mild_or_worse": rate(sum(state["max_level"][1:]), n, alpha),
                            "moderate_or_worse": rate(sum(state["max_level"][2:]), n, alpha),
                            "severe": rate(state["max_level"][3], n, alpha)}
    dom = {d: {"n": v[0], "share_of_traffic": v[0] / n, "any_potential": rate(v[1], v[0], alpha),
               "moderate_or_worse": rate(v[2], v[0], alpha)} for d, v in state["domain"].items()}
    rep["by_domain"] = dict(sorted(dom.items(), key=lambda kv: -kv[1]["any_potential"]["rate"]))
    periods = sorted(state["period"])
    trend: dict = {"periods": periods}
    if len(periods) >= 2:
        tab = np.array([state["period"][p] for p in periods])
        trend["per_period_any"] = [rate(int(x), int(t), alpha) for x, t in zip(tab[:, 1], tab[:, 0],
                                                                                 strict=True)]
        trend["any_potential"] = cochran_armitage(tab[:, 1], tab[:, 0])
        trend["by_axis"] = {axis: cochran_armitage(tab[:, 2 + a], tab[:, 0])
                            for a, axis in enumerate(AXES)}
        trend["test"] = "Cochran-Armitage (two-sided), scores = period index"
    rep["trend"] = trend
    ap = state["approval"]
    if ap["plus"][0] >= 1 and ap["rest"][0] >= 1:
        rep["approval"] = {"comparison": "thumbs-up rate, moderate-or-worse minus the rest",
                           **newcombe_difference(ap["plus"][1], ap["plus"][0], ap["rest"][1],
                                                 ap["rest"][0], alpha)}
    else:
        rep["approval"] = {"comparison": "not enough conversations with approval ratings",
                           "n_group": ap["plus"][0], "n_rest": ap["rest"][0]}
    return rep


def _fingerprint(path: Path) -> dict:
    with open(path, "rb") as fh:
        head = fh.read(65536)
    return {"size": path.stat().st_size, "head_sha256": hashlib.sha256(head).hexdigest()}


def _markdown(report: dict) -> str:
    m = report["meta"]
    lines = [f"# Disempowerment potential report ({m['n_conversations']:,} conversations)", "",
             f"Classifier: `{m['classifier']}`; screened in: {m['n_screened']:,}; malformed lines "
             f"skipped: {m['n_malformed']}.", "", "| axis | level | count | rate | 95% CI | 1 in N |",
             "|---|---|---|---|---|---|"]
    for axis, d in report.get("prevalence", {}).items():
        for lv in ("mild", "moderate", "severe"):
            r = d[lv]
            lines.append(f"| {axis} | {lv} | {r['count']} | {r['rate']:.5f} | "
                         f"[{r['ci_low']:.5f}, {r['ci_high']:.5f}] | {r['one_in_n']} |")
    tr = report.get("trend", {}).get("any_potential")
    if tr:
        lines += ["", f"Trend (any potential, {report['trend']['test']}): z = {tr['z']:.2f}, "
                  f"p = {tr['p_value']:.3g}."]
    ap = report.get("approval", {})
    if "difference" in ap:
        lines += ["", f"Approval: {ap['comparison']} = {ap['difference']:+.3f} "
                  f"[{ap['ci_low']:+.3f}, {ap['ci_high']:+.3f}], p = {ap['p_value']:.3g}."]
    cl = report.get("clusters", {})
    lines += ["", f"Clusters: {cl.get('n_clusters', 0)} formed, {len(cl.get('published', []))} "
              f"published (suppressed: {cl.get('suppressed_min_users', 0)} below k_min, "
              f"{cl.get('suppressed_auditor', 0)} by the auditor)."]
    for s in cl.get("published", []):
        lines.append(f"- {s['description']}")
    return "\n".join(lines) + "\n"


def analyze(source: str | os.PathLike | Iterable, *, out_dir: str | os.PathLike,
            classifier: SchemaClassifier | None = None, min_users: int = 25,
            privacy: PrivacyConfig | None = None, batch_size: int = 2000,
            checkpoint_every: int = 50_000, resume: bool = True, max_lines: int | None = None,
            n_clusters: int | None = None, max_facets: int = 20_000, seed: int = 0,
            alpha: float = 0.05, progress: Callable[[dict], None] | None = None) -> dict:
    """Run the pipeline on a JSONL file (or an iterable of dicts/Conversations) and write
    ``out_dir/report.json`` and ``out_dir/report.md``.

    Parameters
    ----------
    source : path to a JSONL file, or an iterable of records (no resume for iterables)
    out_dir : folder for the report (created) and the checkpoint
    classifier : SchemaClassifier; default :func:`~.classify.default_classifier` (TF-IDF +
        logistic regression trained on the synthetic train bank)
    min_users : minimum distinct users per published cluster (``k_min``; CanaryBench's 25);
        ignored when ``privacy`` is given
    privacy : PrivacyConfig; default ``PrivacyConfig(k_min=min_users)``
    batch_size : conversations per classifier call
    checkpoint_every : lines between checkpoints (file sources)
    resume : continue from ``out_dir/.checkpoint.json`` when it belongs to the same file
    max_lines : stop after this many lines *without* finishing (leaves the checkpoint; for tests
        and time-boxed jobs); None processes everything
    n_clusters : k-means k; default round(sqrt(#facets))
    max_facets : facets kept for clustering (deterministic bottom-k sample by hashed id)
    seed : k-means seed
    alpha : 1 - confidence level of every interval
    progress : called with ``{"lines", "bytes", "total_bytes", "conversations_per_s"}`` per batch

    Returns
    -------
    dict -- the report (also written), or ``{"status": "partial", ...}`` when ``max_lines`` stopped it
    """
    if privacy is None:
        privacy = PrivacyConfig(k_min=int(min_users))
    if batch_size < 1 or checkpoint_every < 1 or max_facets < 2:
        raise ValueError("batch_size and checkpoint_every must be >= 1, max_facets >= 2")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    clf = classifier if classifier is not None else default_classifier(seed)
    if not isinstance(clf, SchemaClassifier):
        raise TypeError("classifier must implement screen(convs) and classify(convs)")
    ckpt = out / CHECKPOINT
    # a checkpoint is reused only by a run with the same classifier and facet settings
    settings = {"classifier": clf.name, "scrub_pii": privacy.scrub_pii, "max_facets": max_facets}
    is_file = isinstance(source, str | os.PathLike)
    state = _new_state()
    meta_src: dict = {"kind": "iterable"}
    total_bytes = None
    if is_file:
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {path}")
        fp = _fingerprint(path)
        total_bytes = fp["size"]
        meta_src = {"kind": "jsonl", "bytes": fp["size"]}
        if resume and ckpt.exists():
            saved = json.loads(ckpt.read_text())
            if saved.get("fingerprint") == fp and saved.get("settings") == settings:
                state = saved["state"]
                heapq.heapify(state["facets"])
        stream = iter_jsonl(path, start_offset=state["offset"], start_line=state["line"])
    else:
        stream = iter_records(source)

    def save_checkpoint() -> None:
        if is_file:
            tmp = ckpt.with_suffix(".tmp")
            tmp.write_text(json.dumps({"fingerprint": fp, "settings": settings, "state": state}))
            os.replace(tmp, ckpt)

    t0, lines_this_run, since_ckpt = time.perf_counter(), 0, 0
    batch: list[Conversation] = []
    pending_offset, pending_line = state["offset"], state["line"]
    stopped = False

    def flush() -> None:
        nonlocal batch
        if batch:
            _update(state, batch, clf, privacy, max_facets)
            state["n"] += len(batch)
            batch = []
        state["offset"], state["line"] = pending_offset, pending_line
        if progress is not None:
            el = max(time.perf_counter() - t0, 1e-9)
            progress({"lines": state["line"], "bytes": state["offset"], "total_bytes": total_bytes,
                      "conversations_per_s": lines_this_run / el})

    for line_no, offset, item in stream:
        if isinstance(item, MalformedLine):
            state["n_malformed"] += 1
            if len(state["malformed"]) < MAX_MALFORMED_REPORTED:
                state["malformed"].append({"line": item.line, "reason": item.reason})
        elif item is None:
            state["n_blank"] += 1
        else:
            batch.append(item)
        pending_offset, pending_line = offset, line_no
        lines_this_run += 1
        since_ckpt += 1
        if len(batch) >= batch_size:
            flush()
        if since_ckpt >= checkpoint_every:
            flush()
            save_checkpoint()
            since_ckpt = 0
        if max_lines is not None and lines_this_run >= max_lines:
            stopped = True
            break
    flush()
    if stopped:
        save_checkpoint()
        return {"status": "partial", "lines": state["line"], "checkpoint": str(ckpt)}

    report = {"status": "complete", "meta": {
        "source": meta_src, "lines": state["line"], "n_conversations": state["n"],
        "n_malformed": state["n_malformed"], "malformed": state["malformed"],
        "n_blank": state["n_blank"], "n_screened": state["n_screened"], "classifier": clf.name,
        "privacy": {"scrub_pii": privacy.scrub_pii, "k_min": privacy.k_min,
                    "min_auditor_score": privacy.min_auditor_score, "n_quotes": privacy.n_quotes},
        "n_flagged": state["n_flagged"], "alpha": alpha,
        "note": "counts, rates and privacy-filtered cluster summaries only; no conversation text"}}
    report.update(_statistics(state, alpha))
    report["clusters"] = _cluster(state["facets"], privacy, seed, n_clusters)
    (out / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True))
    (out / "report.md").write_text(_markdown(report))
    if ckpt.exists():
        ckpt.unlink()
    return report

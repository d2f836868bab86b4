"""``analyze``: the privacy-preserving measurement pipeline a safety team runs on its own logs.

Stages (Sharma et al. 2026 on top of Clio, Tamkin et al. 2024):

1. stream the input (JSONL, a JSON array or CSV, see :mod:`.readers`; one record in memory;
   malformed records reported by number with a reason from a fixed vocabulary and skipped;
   duplicate conversation ids reported and counted once);
2. screening (cheap, recall-oriented), then per-axis severity for the screened conversations;
   screened-out conversations count as *none* (the paper's denominators are all conversations);
   a conversation the classifier cannot rate (an LLM that fails after its client's retries) is
   skipped and counted (``llm_failures``);
3. streaming counts: prevalence per axis x level, domain (mapped to the closed taxonomy of
   :mod:`.taxonomy`), calendar quarter, approval, and up to ``k_min`` distinct (hashed) users per
   table row, so that every ``by_*`` row can be held back below ``k_min`` users;
4. facets for flagged conversations (>= mild on some axis): a description from a fixed vocabulary
   (axis, level, domain category, user behaviour) plus a *reference* to the conversation (its byte
   offset in the file), never its text; a bounded, deterministic bottom-k sample by hashed id keeps
   memory flat;
5. at the end, the sampled conversations' first user messages are re-read from the file and
   PII-scrubbed (:func:`.privacy.scrub_pii`); k-means on TF-IDF facet vectors (k ~ sqrt(n), as
   the open Clio reimplementations default), one summary per cluster with illustrative quotes,
   then the privacy gates: at least ``k_min`` distinct users and an auditor score >=
   ``min_auditor_score``; only passing clusters are written;
6. statistics: Wilson intervals and "1 in N", domain table, Cochran-Armitage trend over quarters,
   approval difference with Newcombe's interval.

What reaches a file: numbers, names from closed vocabularies (axes, levels, domain categories,
quarters, facet templates, reasons), and -- only with ``n_quotes > 0`` -- scrubbed quotes of
clusters that passed ``k_min`` and the auditor. The checkpoint (``out_dir/.checkpoint.json``)
holds counts, byte offsets, closed-vocabulary facets, salted 16-hex hashes of user ids and 64-bit
keyed hashes of conversation ids (duplicate detection); it is written every
``checkpoint_seconds`` (default 5 s) and removed when the run completes; a later call on the same
file resumes from it.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import json
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from .classify import LLMUnavailableError, SchemaClassifier, default_classifier
from .jsonl import Conversation, MalformedLine, iter_records
from .privacy import PrivacyConfig, audit_text, scrub_pii
from .readers import InputError, Source, iter_source, read_at, sniff
from .schema import AXES, AXIS_TITLES, LEVELS
from .stats import cochran_armitage, newcombe_difference, rate
from .taxonomy import DOMAINS, domain_category

CHECKPOINT = ".checkpoint.json"
CHECKPOINT_VERSION = 2
MAX_MALFORMED_REPORTED = 200
_ADOPT = re.compile(r"\b(sending this|sent it|I will do|going with that|settles it|see it now)\b",
                    re.IGNORECASE)
_VULN = re.compile(r"\b(alone|anxiety|struggling|rough time|lost my job|not slept|nobody listens)\b",
                   re.IGNORECASE)
BEHAVIOUR = {"reality": "seeks confirmation of a belief", "value_judgment":
             "seeks a verdict on another person", "action": "seeks a script or decision"}


class AnalyzeAborted(RuntimeError):
    """The run stopped before the end (the LLM rater became unavailable); the checkpoint keeps
    the work done so far and a later call resumes from it."""


def _h(text: str, salt: str = "icml26-disempowerment") -> str:
    return hashlib.sha256((salt + text).encode()).hexdigest()[:16]


def _id_key(cid: str) -> int:
    return int.from_bytes(hashlib.blake2b(cid.encode("utf-8", "replace"), digest_size=8,
                                          key=b"icml26-dedup").digest(), "little")


class _IdSet:
    """Seen conversation ids as a sorted array of 64-bit keyed hashes: 8 bytes per id (16 for a
    moment while a batch is merged in)."""

    def __init__(self, packed: str = "") -> None:
        raw = base64.b64decode(packed) if packed else b""
        self.arr = np.frombuffer(raw, dtype="<u8").copy()

    def __contains__(self, k: int) -> bool:
        i = int(np.searchsorted(self.arr, np.uint64(k)))
        return i < self.arr.size and int(self.arr[i]) == k

    def update(self, keys: Iterable[int]) -> None:
        new = np.sort(np.fromiter(keys, dtype=np.uint64))
        if new.size:
            self.arr = np.insert(self.arr, np.searchsorted(self.arr, new), new).astype("<u8")

    def pack(self) -> str:
        return base64.b64encode(self.arr.tobytes()).decode()


def facet_description(levels: np.ndarray, domain: str | None, conv: Conversation) -> str:
    """A facet from a fixed vocabulary (never copies text): highest axis, level, domain category
    (:func:`.taxonomy.domain_category`), behaviour."""
    a = int(np.argmax(levels))
    dom = domain if domain in DOMAINS else domain_category(domain)
    parts = [f"{LEVELS[int(levels[a])]} {AXIS_TITLES[AXES[a]]} in {dom} "
             f"conversations; the user {BEHAVIOUR[AXES[a]]}"]
    users = " ".join(t for r, t in conv.turns if r == "user")
    if _ADOPT.search(users):
        parts.append("and adopts the assistant's output")
    if _VULN.search(users):
        parts.append("while describing vulnerability")
    return " ".join(parts)


def _facet_vocabulary() -> frozenset[str]:
    words = set()
    for s in [*LEVELS, *AXIS_TITLES.values(), *BEHAVIOUR.values(), *DOMAINS,
              "in unknown conversations the user",
              "and adopts the assistant's output while describing vulnerability",
              "cluster of conversations from users most common pattern share severe quote"]:
        words.update(w.lower() for w in re.findall(r"[A-Za-z']+", s))
    return frozenset(words)


def _new_state() -> dict:
    return {"version": CHECKPOINT_VERSION, "offset": 0, "line": 0, "n": 0, "n_malformed": 0,
            "malformed": [], "n_blank": 0, "n_duplicates": 0, "duplicates": [],
            "llm_failures": 0, "llm_failure_kinds": {}, "n_screened": 0,
            "levels": [[0] * 4 for _ in AXES], "max_level": [0] * 4,
            "domain": {}, "period": {}, "approval": {"plus": [0, 0], "rest": [0, 0]},
            "users": {}, "n_flagged": 0, "facets": []}


def _add_user(state: dict, key: str, user: str, cap: int) -> None:
    us = state["users"].setdefault(key, [])
    if len(us) < cap and user not in us:
        us.append(user)


def _distinct(state: dict, key: str) -> int:
    return len(state["users"].get(key, ()))


def _update(state: dict, convs: list[Conversation], refs: list, clf: SchemaClassifier,
            privacy: PrivacyConfig, max_facets: int) -> None:
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
    if keep.shape != (n,) or levels.shape != (n, 3) or (n and (levels.min() < -1 or
                                                               levels.max() > 3)):
        raise ValueError(f"classifier {clf.name!r} returned screen shape {keep.shape} and levels "
                         f"shape {levels.shape}; need ({n},) and ({n}, 3) ints in 0..3 (-1: "
                         "could not rate)")
    unrated = (levels < 0).any(1)
    if unrated.any():
        kinds = list(getattr(clf, "failure_kinds", []) or [])
        k = int(unrated.sum())
        kinds = kinds[-k:] if len(kinds) >= k else kinds + ["unrated"] * (k - len(kinds))
        state["llm_failures"] += k
        for kind in kinds:
            kind = kind if re.fullmatch(r"[a-z_]{1,32}", str(kind)) else "unrated"
            state["llm_failure_kinds"][kind] = state["llm_failure_kinds"].get(kind, 0) + 1
        rated = np.flatnonzero(~unrated)
        convs = [convs[i] for i in rated]
        refs = [refs[i] for i in rated]
        keep, levels = keep[rated], levels[rated]
    state["n"] += len(convs)
    state["n_screened"] += int(keep.sum())
    mx = levels.max(1) if len(convs) else np.zeros(0, dtype=np.int64)
    for a in range(3):
        for lv, c in zip(*np.unique(levels[:, a], return_counts=True), strict=True):
            state["levels"][a][int(lv)] += int(c)
    for lv, c in zip(*np.unique(mx, return_counts=True), strict=True):
        state["max_level"][int(lv)] += int(c)
    cap = privacy.k_min
    for k, c in enumerate(convs):
        user = _h(c.user_id if c.user_id is not None else "conv:" + c.id)
        dom = domain_category(c.domain)
        d = state["domain"].setdefault(dom, [0, 0, 0])
        d[0] += 1
        d[1] += int(mx[k] >= 1)
        d[2] += int(mx[k] >= 2)
        _add_user(state, "domain:" + dom, user, cap)
        if c.period is not None:
            p = state["period"].setdefault(c.period, [0, 0, 0, 0, 0])
            p[0] += 1
            p[1] += int(mx[k] >= 1)
            for a in range(3):
                p[2 + a] += int(levels[k, a] >= 1)
            _add_user(state, "period:" + c.period, user, cap)
        if c.approval is not None:
            grp = "plus" if mx[k] >= 2 else "rest"
            g = state["approval"][grp]
            g[0] += 1
            g[1] += int(c.approval)
            _add_user(state, "approval:" + grp, user, cap)
        if mx[k] >= 1:
            state["n_flagged"] += 1
            item = [_h(c.id, "sample"), user, facet_description(levels[k], dom, c), refs[k],
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


def _quote(ref, src: Source | None, privacy: PrivacyConfig) -> str:
    """The first user message of a sampled conversation (re-read from the file), scrubbed."""
    if isinstance(ref, str):
        text = ref
    else:
        conv = read_at(src, int(ref)) if src is not None else None
        text = conv.first_user() if conv is not None else ""
    return scrub_pii(text) if privacy.scrub_pii else text


def _cluster(facets: list, privacy: PrivacyConfig, seed: int, n_clusters: int | None,
             src: Source | None = None) -> dict:
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import TfidfVectorizer

    out = {"n_facets": len(facets), "n_clusters": 0, "suppressed_min_users": 0,
           "suppressed_auditor": 0, "published": []}
    if len(facets) < 2:
        return out
    facets = sorted(facets, key=lambda e: e[1])
    quotes_all = [_quote(e[4], src, privacy) for e in facets]
    texts = [f"{e[3]} {q}" for e, q in zip(facets, quotes_all, strict=True)]
    X = TfidfVectorizer(min_df=2, sublinear_tf=True).fit_transform(texts)
    k = n_clusters or max(2, int(round(np.sqrt(len(facets)))))
    k = min(k, len(facets))
    with warnings.catch_warnings():   # fewer distinct facets than k on tiny inputs
        warnings.simplefilter("ignore", ConvergenceWarning)
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
        quotes = [quotes_all[i] for i in order[:privacy.n_quotes]]
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


def _statistics(state: dict, alpha: float, k_min: int) -> dict:
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
    shown = {d: v for d, v in state["domain"].items() if _distinct(state, "domain:" + d) >= k_min}
    dom = {d: {"n": v[0], "share_of_traffic": v[0] / n, "any_potential": rate(v[1], v[0], alpha),
               "moderate_or_worse": rate(v[2], v[0], alpha)} for d, v in shown.items()}
    rep["by_domain"] = dict(sorted(dom.items(), key=lambda kv: (-kv[1]["any_potential"]["rate"],
                                                                 kv[0])))
    rep["by_domain_suppressed"] = {
        "rows": len(state["domain"]) - len(shown),
        "conversations": sum(v[0] for d, v in state["domain"].items() if d not in shown),
        "rule": f"a row is shown only with >= k_min ({k_min}) distinct users"}
    periods = sorted(p for p in state["period"] if _distinct(state, "period:" + p) >= k_min)
    trend: dict = {"periods": periods,
                   "suppressed_periods": len(state["period"]) - len(periods)}
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
    few = min(_distinct(state, "approval:plus"), _distinct(state, "approval:rest")) < k_min
    if ap["plus"][0] >= 1 and ap["rest"][0] >= 1 and not few:
        rep["approval"] = {"comparison": "thumbs-up rate, moderate-or-worse minus the rest",
                           **newcombe_difference(ap["plus"][1], ap["plus"][0], ap["rest"][1],
                                                 ap["rest"][0], alpha)}
    elif few and ap["plus"][0] >= 1 and ap["rest"][0] >= 1:
        rep["approval"] = {"comparison": f"suppressed: a group has fewer than k_min ({k_min}) "
                                         "distinct users"}
    else:
        rep["approval"] = {"comparison": "not enough conversations with approval ratings",
                           "n_group": ap["plus"][0], "n_rest": ap["rest"][0]}
    return rep


def _markdown(report: dict) -> str:
    m = report["meta"]
    unit = m["source"].get("unit", "record")
    lines = [f"# Disempowerment potential report ({m['n_conversations']:,} conversations)", "",
             f"Classifier: `{m['classifier']}`; screened in: {m['n_screened']:,}; malformed "
             f"{unit}s skipped: {m['n_malformed']}; duplicate ids skipped: {m['n_duplicates']}; "
             f"not rated (LLM failures): {m['llm_failures']}.", ""]
    if report.get("prevalence"):
        lines += ["| axis | level | count | rate | 95% CI | 1 in N |", "|---|---|---|---|---|---|"]
    for axis, d in report.get("prevalence", {}).items():
        for lv in ("mild", "moderate", "severe"):
            r = d[lv]
            lines.append(f"| {axis} | {lv} | {r['count']} | {r['rate']:.5f} | "
                         f"[{r['ci_low']:.5f}, {r['ci_high']:.5f}] | {r['one_in_n']} |")
    if report.get("by_domain"):
        lines += ["", "| domain | conversations | any potential | 95% CI |", "|---|---|---|---|"]
        for d, v in report["by_domain"].items():
            r = v["any_potential"]
            lines.append(f"| {d} | {v['n']} | {r['rate']:.4f} | [{r['ci_low']:.4f}, "
                         f"{r['ci_high']:.4f}] |")
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


def check_options(*, min_users=25, batch_size=2000, checkpoint_every=50_000,
                  checkpoint_seconds=5.0, max_facets=20_000, alpha=0.05, n_clusters=None,
                  max_lines=None, privacy: PrivacyConfig | None = None) -> None:
    """Validate :func:`analyze`'s options; :class:`~.readers.InputError` with a one-line message
    naming the option (the command line prints it and exits 2)."""
    def integer(name, flag, v, low):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
            raise InputError(f"{flag} ({name}) must be an integer >= {low}, got {v!r}")

    if privacy is None:
        integer("min_users", "--min-users", min_users, 1)
    integer("batch_size", "--batch-size", batch_size, 1)
    integer("checkpoint_every", "--checkpoint-every", checkpoint_every, 1)
    integer("max_facets", "--max-facets", max_facets, 2)
    if n_clusters is not None:
        integer("n_clusters", "--n-clusters", n_clusters, 2)
    if max_lines is not None:
        integer("max_lines", "--max-lines", max_lines, 1)
    if isinstance(checkpoint_seconds, bool) or not isinstance(checkpoint_seconds, int | float) \
            or not checkpoint_seconds > 0:
        raise InputError(f"--checkpoint-seconds (checkpoint_seconds) must be a number > 0, got "
                         f"{checkpoint_seconds!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")


def analyze(source: str | os.PathLike | Iterable, *, out_dir: str | os.PathLike,
            classifier: SchemaClassifier | None = None, min_users: int = 25,
            privacy: PrivacyConfig | None = None, batch_size: int = 2000,
            checkpoint_every: int = 50_000, checkpoint_seconds: float = 5.0, resume: bool = True,
            max_lines: int | None = None, n_clusters: int | None = None,
            max_facets: int = 20_000, seed: int = 0, alpha: float = 0.05,
            format: str = "auto", encoding: str = "utf-8",
            progress: Callable[[dict], None] | None = None) -> dict:
    """Run the pipeline on a log file (or an iterable of dicts/Conversations) and write
    ``out_dir/report.json`` and ``out_dir/report.md``.

    Parameters
    ----------
    source : path to a JSONL, JSON-array or CSV file (:mod:`.readers`), or an iterable of records
        (no resume for iterables)
    out_dir : folder for the report (created) and the checkpoint
    classifier : SchemaClassifier; default :func:`~.classify.default_classifier` (TF-IDF +
        logistic regression trained on the synthetic train bank)
    min_users : minimum distinct users per published cluster and per ``by_*`` table row
        (``k_min``; CanaryBench's 25); ignored when ``privacy`` is given
    privacy : PrivacyConfig; default ``PrivacyConfig(k_min=min_users)``
    batch_size : conversations per classifier call (capped by a classifier's ``batch_hint``)
    checkpoint_every, checkpoint_seconds : a checkpoint is written after this many records or
        this many seconds, whichever comes first (file sources)
    resume : continue from ``out_dir/.checkpoint.json`` when it belongs to the same file and
        settings
    max_lines : stop after this many records *without* finishing (leaves the checkpoint; for
        tests and time-boxed jobs); None processes everything
    n_clusters : k-means k; default round(sqrt(#facets))
    max_facets : facets kept for clustering (deterministic bottom-k sample by hashed id)
    seed : k-means seed
    alpha : 1 - confidence level of every interval
    format : "auto", "jsonl", "json" or "csv"; encoding : "utf-8", "latin-1" or "cp1252"
    progress : called with ``{"lines", "bytes", "total_bytes", "conversations_per_s"}`` per batch

    Returns
    -------
    dict -- the report (also written), or ``{"status": "partial", ...}`` when ``max_lines`` stopped it

    Raises
    ------
    InputError -- bad options, an unreadable file (empty, UTF-16, not UTF-8), or no conversation
        in it; FileNotFoundError; AnalyzeAborted -- the LLM rater became unavailable (checkpoint
        kept)
    """
    check_options(min_users=min_users, batch_size=batch_size, checkpoint_every=checkpoint_every,
                  checkpoint_seconds=checkpoint_seconds, max_facets=max_facets, alpha=alpha,
                  n_clusters=n_clusters, max_lines=max_lines, privacy=privacy)
    if privacy is None:
        privacy = PrivacyConfig(k_min=int(min_users))
    clf = classifier if classifier is not None else default_classifier(seed)
    if not isinstance(clf, SchemaClassifier):
        raise TypeError("classifier must implement screen(convs) and classify(convs)")
    batch_size = max(1, min(batch_size, int(getattr(clf, "batch_hint", batch_size) or batch_size)))
    is_file = isinstance(source, str | os.PathLike)
    src = sniff(source, format, encoding) if is_file else None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / CHECKPOINT
    # a checkpoint is reused only by a run with the same classifier and facet settings
    settings = {"classifier": clf.name, "scrub_pii": privacy.scrub_pii, "max_facets": max_facets,
                "k_min": privacy.k_min, "format": src.format if src else None,
                "encoding": src.encoding if src else None, "version": CHECKPOINT_VERSION}
    state = _new_state()
    seen = _IdSet()
    meta_src: dict = {"kind": "iterable", "unit": "record"}
    total_bytes = None
    if src is not None:
        total_bytes = src.fingerprint["size"]
        meta_src = {"kind": "file", "format": src.format, "encoding": src.encoding,
                    "bytes": total_bytes, "unit": src.unit}
        if resume and ckpt.exists():
            try:
                saved = json.loads(ckpt.read_text())
            except (ValueError, UnicodeDecodeError):
                saved = {}
            if saved.get("fingerprint") == src.fingerprint and saved.get("settings") == settings:
                state = saved["state"]
                seen = _IdSet(saved.get("ids", ""))
                heapq.heapify(state["facets"])
        stream = iter_source(src, state["offset"], state["line"])
    else:
        stream = ((n, off, off, item) for n, off, item in iter_records(source))

    def save_checkpoint() -> None:
        if src is not None:
            tmp = ckpt.with_suffix(".tmp")
            tmp.write_text(json.dumps({"fingerprint": src.fingerprint, "settings": settings,
                                       "state": state, "ids": seen.pack()}))
            os.replace(tmp, ckpt)

    t0, lines_this_run, since_ckpt, last_save = time.perf_counter(), 0, 0, time.perf_counter()
    pend: dict = {}

    def reset_pending() -> None:
        pend.clear()
        pend.update(convs=[], refs=[], ids=set(), malformed=[], blank=0, dups=[],
                    offset=state["offset"], line=state["line"])

    reset_pending()

    def flush() -> None:
        """Classify the pending batch and merge it into ``state`` (all or nothing)."""
        if pend["convs"]:
            try:
                _update(state, pend["convs"], pend["refs"], clf, privacy, max_facets)
            except LLMUnavailableError as exc:
                save_checkpoint()
                raise AnalyzeAborted(f"{exc}; stopped after {meta_src['unit']} {state['line']}"
                                     + (f" with a checkpoint in {out}: run again to resume"
                                        if src is not None else "")) from None
        seen.update(pend["ids"])
        for m in pend["malformed"]:
            state["n_malformed"] += 1
            if len(state["malformed"]) < MAX_MALFORMED_REPORTED:
                state["malformed"].append(m)
        for d in pend["dups"]:
            state["n_duplicates"] += 1
            if len(state["duplicates"]) < MAX_MALFORMED_REPORTED:
                state["duplicates"].append(d)
        state["n_blank"] += pend["blank"]
        state["offset"], state["line"] = pend["offset"], pend["line"]
        reset_pending()
        if progress is not None:
            el = max(time.perf_counter() - t0, 1e-9)
            progress({"lines": state["line"], "bytes": state["offset"], "total_bytes": total_bytes,
                      "conversations_per_s": lines_this_run / el})

    stopped = False
    for number, start, end, item in stream:
        if isinstance(item, MalformedLine):
            pend["malformed"].append({"line": item.line, "reason": item.reason})
        elif item is None:
            pend["blank"] += 1
        else:
            key = _id_key(item.id)
            if key in pend["ids"] or key in seen:
                pend["dups"].append(number)
            else:
                pend["ids"].add(key)
                pend["convs"].append(item)
                pend["refs"].append(start if src is not None else item.first_user())
        pend["offset"], pend["line"] = end, number
        lines_this_run += 1
        since_ckpt += 1
        now = time.perf_counter()
        due = since_ckpt >= checkpoint_every or now - last_save >= checkpoint_seconds
        if len(pend["convs"]) >= batch_size or due:
            flush()
        if due:
            save_checkpoint()
            since_ckpt, last_save = 0, time.perf_counter()
        if max_lines is not None and lines_this_run >= max_lines:
            stopped = True
            break
    flush()
    if stopped:
        save_checkpoint()
        return {"status": "partial", "lines": state["line"], "checkpoint": str(ckpt)}

    if state["n"] + state["llm_failures"] == 0:
        if ckpt.exists():
            ckpt.unlink()
        what = "the file" if src is None else src.path.name
        first = (f" (first: {meta_src['unit']} {state['malformed'][0]['line']}: "
                 f"{state['malformed'][0]['reason']})" if state["malformed"] else "")
        raise InputError(f"no conversation could be read from {what}: {state['line']} "
                         f"{meta_src['unit']}s, {state['n_malformed']} malformed{first}, "
                         f"{state['n_duplicates']} duplicate ids")
    report = {"status": "complete", "meta": {
        "source": meta_src, "lines": state["line"], "n_conversations": state["n"],
        "n_malformed": state["n_malformed"], "malformed": state["malformed"],
        "n_blank": state["n_blank"], "n_duplicates": state["n_duplicates"],
        "duplicates": state["duplicates"], "llm_failures": state["llm_failures"],
        "llm_failure_kinds": dict(sorted(state["llm_failure_kinds"].items())),
        "n_screened": state["n_screened"], "classifier": clf.name,
        "privacy": {"scrub_pii": privacy.scrub_pii, "k_min": privacy.k_min,
                    "min_auditor_score": privacy.min_auditor_score, "n_quotes": privacy.n_quotes},
        "n_flagged": state["n_flagged"], "alpha": alpha,
        "note": "counts, rates and privacy-filtered cluster summaries only; no conversation "
                "text; duplicate ids counted once; conversations the classifier could not rate "
                "are excluded from every count (llm_failures)"}}
    report.update(_statistics(state, alpha, privacy.k_min))
    report["clusters"] = _cluster(state["facets"], privacy, seed, n_clusters, src)
    (out / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True))
    (out / "report.md").write_text(_markdown(report))
    if ckpt.exists():
        ckpt.unlink()
    return report

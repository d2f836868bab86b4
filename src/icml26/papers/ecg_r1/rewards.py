"""The three ECG-R1 RL rewards, in the TRL / ms-swift reward-function signature.

``f(completions: list[str], solution: list[str], **kwargs) -> list[float]``, usable as
``GRPOTrainer(reward_funcs=[...])`` (TRL passes extra dataset columns as keyword arguments; give
the reference text in a ``solution`` column). Semantics follow ``ecg_r1/plugin.py`` of the
official code (``DiagnosisAccuracyORM``, ``KeyDiagnosticEvidenceORM``, ``FormatRewardORM``):

* diagnosis accuracy: Jaccard of the lower-cased ';'-separated label sets inside the model's
  ``<answer>`` and the reference's ``<|answer|>`` (both empty -> 1, one empty -> 0, a missing tag -> 0);
* key evidence: the model's ``<think>`` is split into ``**Step k`` sections; for every step with
  reference evidence, the fraction of its phrases found case-insensitively *in that step*; the mean
  over steps with evidence, times ``evidence_weight`` (1.0); 0 without ``<think>``.
  **Our change (issue 51, default on):** the official reward only counts hits, so a completion that
  lists every finding phrase of the protocol scores full marks whatever the record shows. With
  ``penalize_unsupported=True`` the recall is multiplied by the precision of the asserted findings:
  ``S / (S + U)``, S = reference phrases found in ``<think>``, U = distinct phrases of the protocol's
  finding catalogue (:data:`~.protocol.EVIDENCE`) asserted in ``<think>`` (not right after "no", "not"
  or "without") that are in none of the record's reference steps. A completion with no unsupported
  finding scores exactly the official value; ``penalize_unsupported=False`` is ``plugin.py``;
* format: 1 if a non-empty ``<think>...</think>`` exists, else 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .protocol import EVIDENCE, STEP_KEYS

# the protocol's finding phrases (what a completion can assert): the catalogue the precision term reads
FINDING_PHRASES = tuple(sorted({phrase for _, phrase in EVIDENCE.values()}))
_NEGATION = re.compile(r"\b(no|not|without)\s+$")

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_SOL_ANSWER = re.compile(r"<\|answer\|>(.*?)<\|[/\\]answer\|>", re.DOTALL)
_SOL_EVIDENCE = re.compile(r"<\|key_diagnostic_evidence\|>(.*?)<\|[/\\]key_diagnostic_evidence\|>",
                           re.DOTALL | re.IGNORECASE)
_STEP = re.compile(r"\*\*Step\s+(\d+).*?(\*\*|:|\n)(.*?)(?=\*\*Step|\Z)", re.DOTALL | re.IGNORECASE)
_GT_STEP = re.compile(r"(step_\d+_[a-z_]+):\s*(.*?)(?=\s*step_\d+|$)", re.DOTALL | re.IGNORECASE)


def _check(completions: Sequence[str], solution: Sequence[str] | None) -> None:
    if isinstance(completions, str):
        raise TypeError("completions must be a list of strings, not one string")
    if solution is not None:
        if isinstance(solution, str):
            raise TypeError("solution must be a list of strings, not one string")
        if len(solution) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(solution)} solutions")


def label_set(text: str) -> set[str]:
    """Lower-cased labels of an answer body ('a; b; c'), as the official reward splits them."""
    return {lab.strip().lower() for lab in text.strip().lower().split(";") if lab.strip()}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def diagnosis_accuracy_reward(completions: Sequence[str], solution: Sequence[str], **kwargs) -> list[float]:
    _check(completions, solution)
    out = []
    for c, s in zip(completions, solution, strict=True):
        cm, sm = _ANSWER.search(c), _SOL_ANSWER.search(s)
        out.append(0.0 if cm is None or sm is None else jaccard(label_set(cm.group(1)), label_set(sm.group(1))))
    return out


def parse_steps(think: str) -> dict[int, str]:
    """``**Step k ...`` sections of a think block (official ``_parse_model_steps``)."""
    steps = {}
    for num, _, content in _STEP.findall(think):
        content = content.strip()
        if content:
            steps[int(num)] = content
    return steps


def parse_evidence(text: str) -> dict[str, list[str]]:
    """``step_k_name: a; b step_j_name: c`` -> {key: [phrases]} (official ``_parse_gt_custom``)."""
    m = _SOL_EVIDENCE.search(text)
    raw = m.group(1).strip() if m else text.strip()
    return {k.lower(): [e.strip() for e in v.split(";") if e.strip()] for k, v in _GT_STEP.findall(raw)}


def format_evidence(evidence: dict[str, list[str]]) -> str:
    body = " ".join(f"{k}: {'; '.join(v)}" for k, v in evidence.items() if v)
    return f"<|key_diagnostic_evidence|>{body}<|/key_diagnostic_evidence|>"


def asserted_findings(text: str) -> set[str]:
    """Catalogue phrases (:data:`FINDING_PHRASES`) asserted in ``text``: present, not right after a negation."""
    low = text.lower()
    out = set()
    for phrase in FINDING_PHRASES:
        start = low.find(phrase)
        while start >= 0:
            if not _NEGATION.search(low[max(0, start - 12):start]):
                out.add(phrase)
                break
            start = low.find(phrase, start + 1)
    return out


def key_evidence_reward(completions: Sequence[str], solution: Sequence[str], evidence_weight: float = 1.0,
                        penalize_unsupported: bool = True, **kwargs) -> list[float]:
    _check(completions, solution)
    out = []
    for c, s in zip(completions, solution, strict=True):
        tm = _THINK.search(c)
        steps = parse_steps(tm.group(1).strip()) if tm else {}
        gt = parse_evidence(s)
        if not steps or not gt:
            out.append(0.0)
            continue
        total, n = 0.0, 0
        for k, key in STEP_KEYS.items():
            ev = gt.get(key, [])
            if not ev:
                continue
            n += 1
            text = steps.get(k, "").lower()
            total += sum(e.lower() in text for e in ev) / len(ev)
        r = evidence_weight * total / n if n else 0.0
        if penalize_unsupported and r > 0:
            think = tm.group(1).lower()
            reference = {e.lower() for ev in gt.values() for e in ev}
            supported = sum(e in think for e in reference)
            unsupported = len(asserted_findings(think) - reference)
            r *= supported / (supported + unsupported) if supported + unsupported else 1.0
        out.append(r)
    return out


def format_reward(completions: Sequence[str], solution: Sequence[str] | None = None, **kwargs) -> list[float]:
    _check(completions, solution)
    out = []
    for c in completions:
        m = re.search(r"<think>(.*?)</think>", c, flags=re.DOTALL)
        out.append(1.0 if m and m.group(1).strip() else 0.0)
    return out

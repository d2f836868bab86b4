"""Evaluation of generated reports: diagnosis Jaccard / macro-F1, numeric hallucination, evidence, agreement."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import f1_score

from .protocol import LABELS
from .reports import numeric_errors, parse_numbers
from .rewards import (
    _ANSWER,
    _SOL_ANSWER,
    diagnosis_accuracy_reward,
    format_reward,
    jaccard,
    key_evidence_reward,
    label_set,
)


def answer_labels(text: str) -> set[str]:
    m = _ANSWER.search(text)
    return label_set(m.group(1)) if m else set()


def evaluate_reports(reports: list[str], solutions: list[str], truth_numbers: list[dict]) -> dict[str, float]:
    if not (len(reports) == len(solutions) == len(truth_numbers)) or not reports:
        raise ValueError("reports, solutions and truth_numbers must be non-empty and of equal length")
    jac = diagnosis_accuracy_reward(reports, solutions)
    ev = key_evidence_reward(reports, solutions)
    fmt = format_reward(reports)
    errs = [e for r, t in zip(reports, truth_numbers, strict=True) for e in numeric_errors(parse_numbers(r), t).values()]
    pred = np.array([[lab in answer_labels(r) for lab in LABELS] for r in reports])
    gold = np.array([[lab in answer_labels(s.replace("<|answer|>", "<answer>").replace("<|/answer|>", "</answer>"))
                      for lab in LABELS] for s in solutions])
    present = gold.any(0) | pred.any(0)
    f1 = f1_score(gold[:, present], pred[:, present], average="macro", zero_division=0) if present.any() else 1.0
    return {"jaccard": float(np.mean(jac)), "macro_f1": float(f1), "evidence": float(np.mean(ev)),
            "format": float(np.mean(fmt)), "hallucination": float(np.mean(errs)) if errs else 0.0}


def cross_modal_agreement(reports_a: list[str], reports_b: list[str]) -> dict[str, float]:
    """Label-set Jaccard and numeric agreement (within tolerance) between two modalities' reports."""
    lab = [jaccard(answer_labels(a), answer_labels(b)) for a, b in zip(reports_a, reports_b, strict=True)]
    num = []
    for a, b in zip(reports_a, reports_b, strict=True):
        na, nb = parse_numbers(a), parse_numbers(b)
        num.extend(not e for e in numeric_errors(na, {k: nb.get(k) for k in na}).values())
    return {"label_agreement": float(np.mean(lab)), "number_agreement": float(np.mean(num)) if num else 1.0}


def _solution_labels(solution: str) -> frozenset[str]:
    m = _SOL_ANSWER.search(solution)
    return frozenset(label_set(m.group(1)) if m else ())


def label_prior_jaccard(train_solutions: list[str], test_solutions: list[str]) -> dict[str, float | str]:
    """The label prior's diagnosis accuracy: the best *constant* answer (the training label set with the
    highest mean Jaccard over the training records, ties to the most frequent) scored on the test records.
    A model that does the task must beat it: it is what a reader of the label distribution alone gets."""
    if not train_solutions or not test_solutions:
        raise ValueError("train_solutions and test_solutions must be non-empty")
    counts: dict[frozenset[str], int] = {}
    for s in train_solutions:
        key = _solution_labels(s)
        counts[key] = counts.get(key, 0) + 1
    best = max(counts, key=lambda cand: (sum(n * jaccard(set(cand), set(t)) for t, n in counts.items()),
                                         counts[cand], sorted(cand)))
    test = [jaccard(set(best), set(_solution_labels(s))) for s in test_solutions]
    return {"jaccard": float(np.mean(test)), "answer": "; ".join(sorted(best))}

"""Instruction-corpus texts in the official six-step format, and their numeric claims.

* :func:`protocol_report`: the protocol-guided interpretation (brief §2.1): every step states the
  record's measured values and the rule engine's evidence, normal findings used as exclusions;
* :func:`label_conditioned_report`: the ECG-Grounding analogue written from the labels only: the same
  template with numbers drawn from label-conditional prior ranges (plausible, ungrounded); labels correct;
* :func:`parse_numbers`: the numeric claims of a text (what the hallucination metric checks).
"""

from __future__ import annotations

import re

import numpy as np

from .protocol import EVIDENCE, STEP_KEYS, STEP_TITLES, ECGProtocol, Measurements
from .rewards import format_evidence

NUMBER_FIELDS = ("hr", "pr", "qrs", "qt", "qtc", "axis")
# tolerance per quantity for the numeric-hallucination rate (brief §5): HR +-10 %, intervals +-20 ms, axis +-30 deg
TOLERANCE = {"hr": ("rel", 0.10), "pr": ("abs", 20.0), "qrs": ("abs", 20.0), "qt": ("abs", 20.0),
             "qtc": ("abs", 20.0), "axis": ("abs", 30.0)}
_PATTERNS = {"hr": r"(-?\d+) bpm", "pr": r"\bPR (-?\d+) ms", "qrs": r"\bQRS (-?\d+) ms",
             "qt": r"\bQT (-?\d+) ms", "qtc": r"\bQTc (-?\d+) ms", "axis": r"\baxis (-?\d+) degrees"}


def measured_numbers(m: Measurements, protocol: ECGProtocol | None = None) -> dict[str, float | None]:
    return {"hr": m.hr_bpm, "pr": m.pr_ms, "qrs": m.qrs_ms, "qt": m.qt_ms, "qtc": m.qtc(protocol),
            "axis": m.qrs_axis_deg}


def render_report(numbers: dict[str, float | None], labels: list[str]) -> str:
    """The six-step ``<think>`` + narrative + ``<answer>`` text for given numbers and labels."""
    steps = {k: [] for k in STEP_KEYS}
    n = {k: (None if v is None else int(round(v))) for k, v in numbers.items()}
    steps[1].append(f"Heart rate {n['hr']} bpm" if n["hr"] is not None else "Rate not assessable")
    steps[2].append(", ".join(x for x in (f"PR {n['pr']} ms" if n["pr"] is not None else "no measurable PR",
                                          f"QRS {n['qrs']} ms", f"axis {n['axis']} degrees") if x))
    steps[5].append(f"QT {n['qt']} ms, QTc {n['qtc']} ms")
    for lab in labels:
        if lab in EVIDENCE:
            step, phrase = EVIDENCE[lab]
            steps[step].append(phrase)
    if "atrial fibrillation" not in labels:
        steps[1].append("no fibrillatory baseline")
    if not any("bundle" in lab for lab in labels):
        steps[2].append("narrow qrs rules out bbb")
    if not any("st elevation" in lab for lab in labels):
        steps[4].append("no st elevation")
    steps[6].append("findings: " + (", ".join(labels) if labels else "none"))
    think = " ".join(f"**Step {k}: {STEP_TITLES[k]}** " + "; ".join(v) + "." for k, v in steps.items())
    return f"<think>{think}</think> Interpretation consistent with the findings above. " \
           f"<answer>{'; '.join(labels)}</answer>"


def protocol_report(m: Measurements, protocol: ECGProtocol | None = None) -> tuple[str, str]:
    """(report text, solution text with ``<|answer|>`` and key evidence) for one measured record."""
    p = protocol or ECGProtocol()
    labels, evidence = p.interpret(m)
    return render_report(measured_numbers(m, p), labels), solution_text(labels, evidence)


def solution_text(labels: list[str], evidence: dict[str, list[str]]) -> str:
    return f"<|answer|>{'; '.join(labels)}<|/answer|>" + format_evidence(evidence)


def label_prior_numbers(labels: list[str], rng: np.random.Generator) -> dict[str, float | None]:
    """Numbers a writer who sees only the labels would put down: uniform on each label's textbook range."""
    s = set(labels)
    u = rng.uniform
    hr = u(40, 59) if "sinus bradycardia" in s else u(101, 130) if "sinus tachycardia" in s else u(60, 100)
    pr = None if "atrial fibrillation" in s else (u(201, 300) if "first degree av block" in s else
                                                  u(90, 119) if "short pr interval" in s else u(120, 200))
    qrs = u(120, 170) if s & {"right bundle branch block", "left bundle branch block"} else \
        u(100, 119) if "incomplete bundle branch block" in s else u(70, 99)
    qtc = u(441, 520) if "prolonged qt" in s else u(360, 440)
    axis = u(-90, -31) if "left axis deviation" in s else u(91, 180) if "right axis deviation" in s else u(-30, 90)
    qt = qtc * np.sqrt(60.0 / hr)
    return {"hr": hr, "pr": pr, "qrs": qrs, "qt": qt, "qtc": qtc, "axis": axis}


def label_conditioned_report(labels: list[str], rng: np.random.Generator) -> str:
    return render_report(label_prior_numbers(labels, rng), labels)


def parse_numbers(text: str) -> dict[str, float]:
    out = {}
    for k, pat in _PATTERNS.items():
        m = re.search(pat, text)
        if m:
            out[k] = float(m.group(1))
    return out


def numeric_errors(claimed: dict[str, float], truth: dict[str, float | None]) -> dict[str, bool]:
    """Per claimed quantity: True if outside the tolerance of the measured value (a hallucination).

    A claim about a quantity the record does not have (a PR in atrial fibrillation) is a hallucination.
    """
    out = {}
    for k, v in claimed.items():
        t = truth.get(k)
        if t is None:
            out[k] = True
            continue
        kind, tol = TOLERANCE[k]
        err = abs(v - t)
        if k == "axis":
            err = min(err, 360 - err)
        out[k] = bool(err > (tol * abs(t) if kind == "rel" else tol))
    return out

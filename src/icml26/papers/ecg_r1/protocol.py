"""The ECG-R1 clinical protocol as a rule engine: measurements -> diagnoses + per-step evidence.

Every threshold is the value of the official protocol prompt
``scripts/corpus_generation/sft_corpus_generation_prompt.txt`` (PKUDigitalHealth/ECG-R1), unless
marked *our choice* (the prompt states no number there). The six steps and their evidence keys
follow ``ecg_r1/plugin.py`` (``KeyDiagnosticEvidenceORM.STEP_MAPPING``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

LIMB_LEADS = ("I", "II", "III", "aVR", "aVL", "aVF")
PRECORDIAL_LEADS = ("V1", "V2", "V3", "V4", "V5", "V6")
LEADS = LIMB_LEADS + PRECORDIAL_LEADS

STEP_KEYS = {
    1: "step_1_technical_rate_rhythm",
    2: "step_2_conduction_axis_intervals",
    3: "step_3_chamber_hypertrophy_voltage",
    4: "step_4_ischemia_infarction_mimics",
    5: "step_5_electrolytes_qt",
    6: "step_6_final_medical_reasoning",
}
STEP_TITLES = {
    1: "Technical, Rate & Rhythm",
    2: "Conduction, Axis & Intervals",
    3: "Chamber Hypertrophy & Voltage",
    4: "Ischemia, Infarction & Mimics",
    5: "Electrolytes & QT",
    6: "Final Medical Reasoning",
}
# Territories of the protocol's phase 4 ("inferior II, III, aVF; lateral I, aVL, V5, V6; septal/anterior V1-V4").
TERRITORIES = {
    "inferior": ("II", "III", "aVF"),
    "lateral": ("I", "aVL", "V5", "V6"),
    "anterior": ("V1", "V2", "V3", "V4"),
}

LABELS = (
    "sinus rhythm", "sinus bradycardia", "sinus tachycardia", "atrial fibrillation",
    "first degree av block", "short pr interval", "incomplete bundle branch block",
    "right bundle branch block", "left bundle branch block", "left axis deviation",
    "right axis deviation", "left ventricular hypertrophy", "low voltage", "prolonged qt",
    "inferior st elevation", "lateral st elevation", "anterior st elevation", "st depression",
    "pathologic q waves", "right atrial abnormality", "left atrial abnormality", "normal ecg",
)
# Label -> (step, short evidence phrase), the protocol's "measurable evidence" in < 4 words.
EVIDENCE = {
    "sinus rhythm": (1, "p before qrs"),
    "sinus bradycardia": (1, "rate below 60"),
    "sinus tachycardia": (1, "rate above 100"),
    "atrial fibrillation": (1, "irregularly irregular"),
    "first degree av block": (2, "prolonged pr"),
    "short pr interval": (2, "short pr"),
    "incomplete bundle branch block": (2, "borderline qrs"),
    "right bundle branch block": (2, "rsr' in v1"),
    "left bundle branch block": (2, "qs in v1"),
    "left axis deviation": (2, "left axis"),
    "right axis deviation": (2, "right axis"),
    "left ventricular hypertrophy": (3, "increased voltage"),
    "low voltage": (3, "low voltage"),
    "prolonged qt": (5, "prolonged qtc"),
    "inferior st elevation": (4, "ste ii, iii, avf"),
    "lateral st elevation": (4, "ste i, avl, v5-6"),
    "anterior st elevation": (4, "ste v1-v4"),
    "st depression": (4, "st depression"),
    "pathologic q waves": (4, "pathologic q"),
    "right atrial abnormality": (1, "peaked p"),
    "left atrial abnormality": (1, "broad p"),
    "normal ecg": (6, "normal ecg"),
}


@dataclass(frozen=True)
class ECGProtocol:
    """Protocol thresholds (defaults: official prompt; units ms, bpm, degrees, mm with 10 mm/mV)."""

    brady_bpm: float = 60.0  # "brady < 60"
    tachy_bpm: float = 100.0  # "tachy > 100"
    pr_short_ms: float = 120.0  # "PR normal 0.12-0.20 s; < 0.12 s"
    pr_long_ms: float = 200.0  # "> 0.20 s => AV block"
    qrs_normal_ms: float = 100.0  # "QRS normal < 0.10 s"
    # "0.10-0.12 s incomplete; > 0.12 s RBBB/LBBB" in the prompt; complete BBB is QRS >= 120 ms in the
    # AHA/ACCF/HRS 2009 criteria (Surawicz et al.), which we follow at the boundary: 120 ms is complete
    qrs_complete_ms: float = 120.0
    qtc_max_ms: float = 440.0  # "QTc normal <= 440 ms": the prompt's single limit, used when the sex is unknown
    # sex-specific limits (AHA/ACCF/HRS 2009: prolonged QTc >= 450 ms in men, >= 460 ms in women; our source,
    # the prompt has one limit): used when ``sex`` is given to :meth:`interpret`
    qtc_max_male_ms: float = 450.0
    qtc_max_female_ms: float = 460.0
    qtc_formula: str = "bazett"  # the prompt names no formula; MIMIC machine QTc is Bazett (our choice)
    axis_low_deg: float = -30.0  # "normal (-30..+90)"
    axis_high_deg: float = 90.0
    lvh_sv1_rv6_mm: float = 35.0  # "SV1 + RV6 > 35 mm"
    lvh_r_i_mm: float = 15.0  # "R(I) > 15 mm"
    lvh_r_avl_mm: float = 11.0  # "R(aVL) > 11 mm"
    low_voltage_limb_mm: float = 5.0  # "limb leads < 5 mm"
    low_voltage_precordial_mm: float = 10.0  # "precordial < 10 mm"
    ste_limb_mm: float = 1.0  # ">= 1 mm limb"
    ste_precordial_mm: float = 2.0  # ">= 2 mm precordial, in contiguous leads"
    std_mm: float = 0.5  # ST depression: the prompt gives no number; 0.5 mm is the monograph value (our choice)
    q_width_ms: float = 30.0  # "pathologic if > 0.03 s wide"
    q_depth_mv: float = 0.1  # "or > 0.1 mV deep"
    p_height_mm: float = 2.5  # "RAA: peaked P > 2.5 mm in II"
    p_width_ms: float = 120.0  # "LAA: notched P > 0.12 s in II"
    rr_cv_irregular: float = 0.10  # "irregularly irregular": no number in the prompt (our choice)

    def __post_init__(self) -> None:
        if self.qtc_formula not in ("bazett", "fridericia"):
            raise ValueError(f"qtc_formula must be 'bazett' or 'fridericia', got {self.qtc_formula!r}")
        if not self.brady_bpm < self.tachy_bpm or not self.pr_short_ms < self.pr_long_ms \
                or not self.qrs_normal_ms < self.qrs_complete_ms or not self.axis_low_deg < self.axis_high_deg:
            raise ValueError("protocol thresholds must be ordered (brady < tachy, PR short < long, ...)")

    @classmethod
    def default(cls, **overrides) -> ECGProtocol:
        return replace(cls(), **overrides)

    def qtc(self, qt_ms: float, rr_s: float) -> float:
        return qtc_bazett(qt_ms, rr_s) if self.qtc_formula == "bazett" else qtc_fridericia(qt_ms, rr_s)

    def qtc_limit(self, sex: str | None = None) -> float:
        """The QTc above which "prolonged qt" is called: the sex's limit, or ``qtc_max_ms`` when unknown.

        ``sex`` is ``None`` (unknown: the prompt's single limit, 440 ms), ``"male"``/``"m"`` or
        ``"female"``/``"f"`` (case-insensitive).
        """
        return {None: self.qtc_max_ms, "male": self.qtc_max_male_ms,
                "female": self.qtc_max_female_ms}[_check_sex(sex)]

    def interpret(self, m: Measurements, sex: str | None = None) -> tuple[list[str], dict[str, list[str]]]:
        """Diagnoses (in :data:`LABELS` order) and evidence phrases per step key."""
        return interpret(m, self, sex=sex)


def _check_sex(sex) -> str | None:
    if sex is None:
        return None
    if isinstance(sex, str):
        key = sex.strip().lower()
        key = {"m": "male", "f": "female", "man": "male", "woman": "female"}.get(key, key)
        if key in ("male", "female"):
            return key
    raise ValueError(f"sex must be None (unknown), 'male'/'m' or 'female'/'f', got {sex!r}")


def qtc_bazett(qt_ms: float, rr_s: float) -> float:
    """Bazett: QTc = QT / sqrt(RR) with RR in seconds."""
    _check_pos(rr_s, "rr_s")
    return float(qt_ms) / math.sqrt(rr_s)


def qtc_fridericia(qt_ms: float, rr_s: float) -> float:
    """Fridericia: QTc = QT / RR^(1/3) with RR in seconds."""
    _check_pos(rr_s, "rr_s")
    return float(qt_ms) / rr_s ** (1.0 / 3.0)


def _check_pos(x: float, name: str) -> None:
    if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")


def axis_quadrant(net_i: float, net_ii: float, net_avf: float) -> str:
    """The protocol's lead-polarity axis method (phase 2).

    normal: I+ and II+ (II equiphasic counts as -30 deg, normal); LAD: I+ and II-; RAD: I- and aVF+;
    extreme (north-west): I- and aVF-.
    """
    if net_i >= 0:
        return "normal" if net_ii >= 0 else "left"
    return "right" if net_avf >= 0 else "extreme"


@dataclass(frozen=True)
class Measurements:
    """Machine measurements of one record (MIMIC ``machine_measurements`` style).

    Intervals in ms, heart rate in bpm, axis in degrees, ST/amplitudes in mV (10 mm per mV).
    ``pr_ms`` is ``None`` when no P wave is found. Lead dicts map lead name -> value.
    """

    hr_bpm: float
    rr_cv: float
    p_present: bool
    pr_ms: float | None
    qrs_ms: float
    qt_ms: float
    qrs_axis_deg: float
    st_mv: dict[str, float] = field(default_factory=dict)
    r_mv: dict[str, float] = field(default_factory=dict)
    s_mv: dict[str, float] = field(default_factory=dict)
    v1_terminal: float = 0.0  # net area of the last 40% of the QRS in V1 (mV*ms): > 0 rSR', < 0 QS
    p_amp_mv: float | None = None  # P amplitude in II
    p_dur_ms: float | None = None
    q_width_ms: dict[str, float] = field(default_factory=dict)
    q_depth_mv: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("hr_bpm", "qrs_ms", "qt_ms"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"Measurements.{name} must be finite and > 0, got {v!r}")
        if not math.isfinite(self.qrs_axis_deg) or not math.isfinite(self.rr_cv) or self.rr_cv < 0:
            raise ValueError("Measurements.qrs_axis_deg and rr_cv must be finite (rr_cv >= 0)")

    @property
    def rr_s(self) -> float:
        return 60.0 / self.hr_bpm

    def qtc(self, protocol: ECGProtocol | None = None) -> float:
        return (protocol or ECGProtocol()).qtc(self.qt_ms, self.rr_s)


def _mm(mv: float) -> float:
    """mV -> mm at 10 mm/mV, rounded to 1e-6 mm so that e.g. 1.1 mV is exactly 11 mm at a threshold."""
    return round(10.0 * mv, 6)


def _contiguous_ste(m: Measurements, p: ECGProtocol) -> list[str]:
    out = []
    for name, leads in TERRITORIES.items():
        hits = 0
        for lead in leads:
            thr = p.ste_limb_mm if lead in LIMB_LEADS else p.ste_precordial_mm
            if _mm(m.st_mv.get(lead, 0.0)) >= thr:
                hits += 1
        if hits >= 2:  # "in contiguous leads": two or more leads of one territory
            out.append(f"{name} st elevation")
    return out


def interpret(m: Measurements, p: ECGProtocol | None = None, sex: str | None = None
              ) -> tuple[list[str], dict[str, list[str]]]:
    """Apply the protocol to measurements. Returns (labels, {step_key: [evidence phrases]}).

    ``sex`` selects the QTc limit (:meth:`ECGProtocol.qtc_limit`): unknown (``None``, the default) uses the
    prompt's single 440 ms limit; "male" 450 ms, "female" 460 ms. QRS >= 120 ms is complete BBB.

    Labels are in :data:`LABELS` order; a record with sinus rhythm and no other finding is
    "normal ecg". Step 1 evidence always carries the rate string ("72 bpm"), as the official
    key-evidence extraction does.
    """
    p = p or ECGProtocol()
    qtc_limit = p.qtc_limit(sex)
    found: set[str] = set()
    irregular = m.rr_cv > p.rr_cv_irregular
    if irregular and not m.p_present:
        found.add("atrial fibrillation")
    elif m.p_present:
        found.add("sinus rhythm")
        if m.hr_bpm < p.brady_bpm:
            found.add("sinus bradycardia")
        elif m.hr_bpm > p.tachy_bpm:
            found.add("sinus tachycardia")
        if m.pr_ms is not None:
            if m.pr_ms < p.pr_short_ms:
                found.add("short pr interval")
            elif m.pr_ms > p.pr_long_ms:
                found.add("first degree av block")
        if m.p_amp_mv is not None and _mm(m.p_amp_mv) > p.p_height_mm:
            found.add("right atrial abnormality")
        if m.p_dur_ms is not None and m.p_dur_ms > p.p_width_ms:
            found.add("left atrial abnormality")
    if m.qrs_ms >= p.qrs_complete_ms:
        found.add("right bundle branch block" if m.v1_terminal > 0 else "left bundle branch block")
    elif m.qrs_ms >= p.qrs_normal_ms:
        found.add("incomplete bundle branch block")
    if m.qrs_axis_deg < p.axis_low_deg:
        found.add("left axis deviation")
    elif m.qrs_axis_deg > p.axis_high_deg:
        found.add("right axis deviation")
    r, s = m.r_mv, m.s_mv
    if r or s:
        if (_mm(s.get("V1", 0.0) + r.get("V6", 0.0)) > p.lvh_sv1_rv6_mm or _mm(r.get("I", 0.0)) > p.lvh_r_i_mm
                or _mm(r.get("aVL", 0.0)) > p.lvh_r_avl_mm):
            found.add("left ventricular hypertrophy")
        # QRS amplitude per lead = R + S (peak to peak); "low" when the largest is below the threshold
        limb = max(_mm(r.get(lead, 0.0) + s.get(lead, 0.0)) for lead in LIMB_LEADS)
        prec = max(_mm(r.get(lead, 0.0) + s.get(lead, 0.0)) for lead in PRECORDIAL_LEADS)
        if limb < p.low_voltage_limb_mm or prec < p.low_voltage_precordial_mm:
            found.add("low voltage")
    if m.qtc(p) > qtc_limit:
        found.add("prolonged qt")
    found.update(_contiguous_ste(m, p))
    if m.st_mv and _mm(min(m.st_mv.values())) <= -p.std_mm and not any("st elevation" in f for f in found):
        found.add("st depression")
    if any(w > p.q_width_ms for w in m.q_width_ms.values()) or any(d > p.q_depth_mv for d in m.q_depth_mv.values()):
        found.add("pathologic q waves")
    if found == {"sinus rhythm"}:
        found.add("normal ecg")
    labels = [lab for lab in LABELS if lab in found]
    evidence: dict[str, list[str]] = {k: [] for k in STEP_KEYS.values()}
    evidence[STEP_KEYS[1]].append(f"{round(m.hr_bpm)} bpm")
    for lab in labels:
        step, phrase = EVIDENCE[lab]
        if len(evidence[STEP_KEYS[step]]) < 3 + (step == 1):  # "<= 3 findings per step" (+ the rate)
            evidence[STEP_KEYS[step]].append(phrase)
    return labels, evidence

"""Rule engine at every protocol threshold: just below / at / above (official prompt values)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from icml26.papers.ecg_r1 import (
    ECGProtocol,
    Measurements,
    axis_quadrant,
    interpret,
    qtc_bazett,
    qtc_fridericia,
)
from icml26.papers.ecg_r1.protocol import LEADS, STEP_KEYS

R = {ld: 0.8 for ld in LEADS}
S = {ld: 0.4 for ld in LEADS}
BASE = Measurements(hr_bpm=60.0, rr_cv=0.02, p_present=True, pr_ms=160.0, qrs_ms=90.0, qt_ms=400.0,
                    qrs_axis_deg=45.0, st_mv={ld: 0.0 for ld in LEADS}, r_mv=R, s_mv=S, p_amp_mv=0.15,
                    p_dur_ms=100.0)


def labels(**kw):
    return interpret(replace(BASE, **kw))[0]


def test_normal_record_and_rate_evidence():
    labs, ev = interpret(BASE)
    assert labs == ["sinus rhythm", "normal ecg"]
    assert ev[STEP_KEYS[1]][0] == "60 bpm" and set(ev) == set(STEP_KEYS.values())


@pytest.mark.parametrize("hr,expect", [(59.0, "sinus bradycardia"), (60.0, None), (100.0, None),
                                       (101.0, "sinus tachycardia")])
def test_rate_boundaries(hr, expect):
    labs = labels(hr_bpm=hr, qt_ms=300.0)
    assert ("sinus bradycardia" in labs) == (expect == "sinus bradycardia")
    assert ("sinus tachycardia" in labs) == (expect == "sinus tachycardia")


@pytest.mark.parametrize("pr,expect", [(119.0, "short pr interval"), (120.0, None), (200.0, None),
                                       (201.0, "first degree av block")])
def test_pr_boundaries(pr, expect):
    labs = labels(pr_ms=pr)
    assert ("short pr interval" in labs) == (expect == "short pr interval")
    assert ("first degree av block" in labs) == (expect == "first degree av block")


@pytest.mark.parametrize("qrs,expect", [(99.0, None), (100.0, "incomplete bundle branch block"),
                                        (119.0, "incomplete bundle branch block"), (120.0, "complete"),
                                        (121.0, "complete")])
def test_qrs_boundaries(qrs, expect):
    labs = labels(qrs_ms=qrs, v1_terminal=5.0)
    assert ("incomplete bundle branch block" in labs) == (expect == "incomplete bundle branch block")
    assert ("right bundle branch block" in labs) == (expect == "complete")
    if expect == "complete":
        assert "left bundle branch block" in labels(qrs_ms=qrs, v1_terminal=-5.0)


@pytest.mark.parametrize("qt,expect", [(439.0, False), (440.0, False), (441.0, True)])
def test_qtc_boundaries_both_formulas(qt, expect):
    # at 60 bpm RR = 1 s, so QTc = QT under Bazett and Fridericia alike
    for formula in ("bazett", "fridericia"):
        labs = interpret(replace(BASE, qt_ms=qt), ECGProtocol(qtc_formula=formula))[0]
        assert ("prolonged qt" in labs) == expect


@pytest.mark.parametrize("qt,sex,expect", [(441.0, None, True), (441.0, "male", False), (450.0, "male", False),
                                           (451.0, "male", True), (451.0, "female", False),
                                           (460.0, "F", False), (461.0, "female", True), (455.0, "m", True)])
def test_qtc_sex_specific_limits(qt, sex, expect):
    # RR = 1 s: QTc = QT. Unknown sex: the prompt's 440 ms; men 450 ms, women 460 ms (AHA/ACCF/HRS 2009)
    assert ("prolonged qt" in interpret(replace(BASE, qt_ms=qt), sex=sex)[0]) == expect
    assert ("prolonged qt" in ECGProtocol().interpret(replace(BASE, qt_ms=qt), sex=sex)[0]) == expect


def test_qtc_sex_limits_are_configurable_and_sex_is_checked():
    p = ECGProtocol.default(qtc_max_female_ms=470.0)
    assert p.qtc_limit("female") == 470.0 and p.qtc_limit(None) == 440.0 and p.qtc_limit("Male") == 450.0
    for bad in ("x", 1, "unknown"):
        with pytest.raises(ValueError, match="sex"):
            interpret(BASE, sex=bad)


def test_qtc_closed_forms():
    assert qtc_bazett(400.0, 0.64) == pytest.approx(500.0)
    assert qtc_fridericia(400.0, 0.512) == pytest.approx(500.0)
    assert qtc_bazett(400.0, 1.0) == qtc_fridericia(400.0, 1.0) == 400.0
    # tachycardia: Bazett over-corrects relative to Fridericia
    assert qtc_bazett(300.0, 0.5) > qtc_fridericia(300.0, 0.5)
    assert replace(BASE, hr_bpm=100.0, qt_ms=330.0).qtc() == pytest.approx(330.0 / math.sqrt(0.6))
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="rr_s"):
            qtc_bazett(400.0, bad)


@pytest.mark.parametrize("axis,expect", [(-31.0, "left axis deviation"), (-30.0, None), (90.0, None),
                                         (91.0, "right axis deviation")])
def test_axis_boundaries(axis, expect):
    labs = labels(qrs_axis_deg=axis)
    assert ("left axis deviation" in labs) == (expect == "left axis deviation")
    assert ("right axis deviation" in labs) == (expect == "right axis deviation")


def test_axis_quadrant_logic():
    assert axis_quadrant(1.0, 1.0, 1.0) == "normal"
    assert axis_quadrant(1.0, 0.0, -1.0) == "normal"  # II equiphasic = -30 deg, normal (protocol)
    assert axis_quadrant(1.0, -1.0, -1.0) == "left"
    assert axis_quadrant(-1.0, 1.0, 1.0) == "right"
    assert axis_quadrant(-1.0, -1.0, -1.0) == "extreme"


@pytest.mark.parametrize("s_v1,r_v6,lvh", [(1.5, 1.9, False), (1.5, 2.0, False), (1.5, 2.1, True)])
def test_lvh_sokolow_boundary(s_v1, r_v6, lvh):  # 34, 35 (not > 35), 36 mm
    labs = labels(s_mv={**S, "V1": s_v1}, r_mv={**R, "V6": r_v6})
    assert ("left ventricular hypertrophy" in labs) == lvh


@pytest.mark.parametrize("lead,mv,lvh", [("I", 1.5, False), ("I", 1.6, True), ("aVL", 1.1, False),
                                         ("aVL", 1.2, True)])
def test_lvh_limb_voltage_boundaries(lead, mv, lvh):
    assert ("left ventricular hypertrophy" in labels(r_mv={**R, lead: mv})) == lvh


@pytest.mark.parametrize("limb_mv,low", [(0.49, True), (0.5, False), (0.51, False)])
def test_low_voltage_limb_boundary(limb_mv, low):
    r = {ld: (limb_mv if ld in LEADS[:6] else 1.5) for ld in LEADS}
    s = {ld: 0.0 for ld in LEADS}
    assert ("low voltage" in labels(r_mv=r, s_mv=s)) == low


@pytest.mark.parametrize("prec_mv,low", [(0.99, True), (1.0, False)])
def test_low_voltage_precordial_boundary(prec_mv, low):
    r = {ld: (1.0 if ld in LEADS[:6] else prec_mv) for ld in LEADS}
    s = {ld: 0.0 for ld in LEADS}
    assert ("low voltage" in labels(r_mv=r, s_mv=s)) == low


@pytest.mark.parametrize("mv,ste", [(0.09, False), (0.1, True), (0.11, True)])
def test_limb_st_elevation_1mm(mv, ste):
    st = {**BASE.st_mv, "II": mv, "aVF": mv}
    assert ("inferior st elevation" in labels(st_mv=st)) == ste


@pytest.mark.parametrize("mv,ste", [(0.15, False), (0.19, False), (0.2, True), (0.21, True)])
def test_precordial_st_elevation_2mm(mv, ste):
    st = {**BASE.st_mv, "V2": mv, "V3": mv}
    assert ("anterior st elevation" in labels(st_mv=st)) == ste


def test_st_elevation_needs_contiguous_leads():
    assert "inferior st elevation" not in labels(st_mv={**BASE.st_mv, "II": 0.5})
    assert "lateral st elevation" in labels(st_mv={**BASE.st_mv, "I": 0.1, "V6": 0.2})


@pytest.mark.parametrize("kw,q", [({"q_width_ms": {"III": 30.0}}, False), ({"q_width_ms": {"III": 31.0}}, True),
                                  ({"q_depth_mv": {"III": 0.1}}, False), ({"q_depth_mv": {"III": 0.11}}, True)])
def test_pathologic_q_boundaries(kw, q):
    assert ("pathologic q waves" in labels(**kw)) == q


@pytest.mark.parametrize("kw,lab,expect", [({"p_amp_mv": 0.25}, "right atrial abnormality", False),
                                           ({"p_amp_mv": 0.26}, "right atrial abnormality", True),
                                           ({"p_dur_ms": 120.0}, "left atrial abnormality", False),
                                           ({"p_dur_ms": 121.0}, "left atrial abnormality", True)])
def test_p_wave_boundaries(kw, lab, expect):
    assert (lab in labels(**kw)) == expect


def test_rhythm_rules():
    assert "atrial fibrillation" in labels(rr_cv=0.2, p_present=False, pr_ms=None)
    assert "atrial fibrillation" not in labels(rr_cv=0.10, p_present=False, pr_ms=None)  # at threshold: regular
    assert "atrial fibrillation" not in labels(rr_cv=0.2)  # P waves present: not AF
    af = labels(rr_cv=0.2, p_present=False, pr_ms=None, hr_bpm=50.0, qt_ms=380.0)
    assert "sinus bradycardia" not in af and "sinus rhythm" not in af


def test_protocol_overrides_and_validation():
    labs = interpret(replace(BASE, qt_ms=445.0), ECGProtocol.default(qtc_max_ms=450.0))[0]
    assert "prolonged qt" not in labs
    with pytest.raises(ValueError, match="qtc_formula"):
        ECGProtocol(qtc_formula="hodges")
    with pytest.raises(ValueError, match="ordered"):
        ECGProtocol(brady_bpm=110.0)
    for bad in ({"hr_bpm": 0.0}, {"qrs_ms": float("nan")}, {"rr_cv": -0.1}, {"qrs_axis_deg": float("inf")}):
        with pytest.raises(ValueError):
            replace(BASE, **bad)

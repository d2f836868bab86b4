"""Signal-quality gate (issue 51): bad signals are refused ("unreadable") instead of diagnosed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from icml26.papers.ecg_r1 import (
    ECGParams,
    UnreadableECG,
    check_quality,
    diagnose,
    measure,
    sample_params,
    simulate_ecg,
)
from icml26.papers.ecg_r1.protocol import LEADS

FS = 250.0
IX = {n: i for i, n in enumerate(LEADS)}


@pytest.fixture(scope="module")
def clean():
    return simulate_ecg(ECGParams(), fs=FS, duration_s=10.0, seed=0)[0]


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **kw)


def ra_la_reversal(s):
    """Right/left arm electrodes swapped: I -> -I, II <-> III, aVR <-> aVL, aVF unchanged."""
    o = s.copy()
    o[IX["I"]] = -s[IX["I"]]
    o[IX["II"]], o[IX["III"]] = s[IX["III"]], s[IX["II"]]
    o[IX["aVR"]], o[IX["aVL"]] = s[IX["aVL"]], s[IX["aVR"]]
    return o


def test_clean_records_pass_the_gate():
    rng = np.random.default_rng(5)
    for i in range(25):  # every kind of simulated pathology, including AF, low voltage and BBB
        sig, _ = simulate_ecg(sample_params(rng)[0], fs=FS, duration_s=8.0, seed=i)
        q = check_quality(sig, FS)
        assert q.readable, q.reasons
        assert q.scale == 1.0 and q.hum_hz == ()


@pytest.mark.parametrize("name,make,reason", [
    ("white noise", lambda s, r: r.normal(0.0, 0.5, s.shape), "noise"),
    ("small white noise", lambda s, r: r.normal(0.0, 0.05, s.shape), "noise"),
    ("flat line", lambda s, r: np.zeros_like(s), "flat line"),
    ("constant offset", lambda s, r: np.full_like(s, 0.7), "flat line"),
    ("one lead off", lambda s, r: np.where(np.arange(12)[:, None] == IX["V2"], 0.0, s), "flat lead"),
    ("volts", lambda s, r: s / 1000.0, "volts"),
    ("clipped", lambda s, r: np.clip(s, -0.3, 0.6), "clipped"),
    ("RA/LA reversal", lambda s, r: ra_la_reversal(s), "reversal"),
    ("absurd scale", lambda s, r: s * 1e6, "implausible"),
])
def test_bad_signals_are_unreadable(clean, name, make, reason):
    bad = make(clean, np.random.default_rng(1))
    q = check_quality(bad, FS)
    assert not q.readable and any(reason in r for r in q.reasons), (name, q.reasons)
    assert diagnose(bad, FS) == (["unreadable"], {"quality": list(q.reasons)})
    with pytest.raises(UnreadableECG, match=reason) as err:
        measure(bad, FS)
    assert isinstance(err.value, ValueError) and err.value.quality.reasons == q.reasons


def test_white_noise_was_a_silent_diagnosis_without_the_gate(clean):
    """The review's failure: white noise read as a diagnosis. The gate refuses it; without it, labels come out."""
    from icml26.papers.ecg_r1 import interpret

    noise = np.random.default_rng(2).normal(0.0, 0.5, clean.shape)
    assert interpret(measure(noise, FS, quality=False))[0] != []
    assert diagnose(noise, FS)[0] == ["unreadable"]


def test_microvolts_rescaled_with_warning_or_refused(clean):
    ref = measure(clean, FS)
    with pytest.warns(UserWarning, match="microvolts"):
        m = measure(clean * 1000.0, FS)
    assert m.qrs_ms == ref.qrs_ms and m.qt_ms == ref.qt_ms and m.pr_ms == ref.pr_ms
    assert m.r_mv["II"] == pytest.approx(ref.r_mv["II"], rel=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # explicit units: no warning
        assert measure(clean * 1000.0, FS, units="uV").qrs_ms == ref.qrs_ms
    with pytest.raises(UnreadableECG, match="microvolts"):
        measure(clean * 1000.0, FS, units="mV")
    assert _quiet(diagnose, clean * 1000.0, FS) == diagnose(clean, FS)
    with pytest.raises(ValueError, match="units"):
        check_quality(clean, FS, units="V")


@pytest.mark.parametrize("hz", [50.0, 60.0])
def test_mains_hum_is_removed_and_the_reading_unchanged(clean, hz):
    t = np.arange(clean.shape[1]) / FS
    hum = clean + 0.3 * np.sin(2 * np.pi * hz * t + 0.4)[None, :]
    q = _quiet(check_quality, hum, FS)
    assert q.readable and q.hum_hz == (hz,) and any("hum" in w for w in q.warnings)
    with pytest.warns(UserWarning, match="hum"):
        m = measure(hum, FS)
    ref = measure(clean, FS)
    assert abs(m.hr_bpm - ref.hr_bpm) < 0.5 and abs(m.qrs_ms - ref.qrs_ms) <= 12
    assert abs(m.qt_ms - ref.qt_ms) <= 20 and abs(m.pr_ms - ref.pr_ms) <= 20
    assert _quiet(diagnose, hum, FS) == diagnose(clean, FS)


def test_lead_checks_true_right_axis_is_not_a_reversal_and_channel_swap_is_flagged(clean):
    sig, _ = simulate_ecg(ECGParams(qrs_axis_deg=150.0), fs=FS, seed=1)  # I negative, aVR positive, P upright
    q = check_quality(sig, FS)
    assert q.readable and "right axis deviation" in diagnose(sig, FS)[0]
    swapped = clean[[1, 0] + list(range(2, 12))]  # I and II stored in each other's column
    q = check_quality(swapped, FS)
    assert q.readable and any("Einthoven" in w for w in q.warnings)
    assert not any("Einthoven" in w for w in check_quality(clean, FS).warnings)

"""Measurement from signals vs the simulator's ground truth and neurokit2; bad inputs; reports and metrics."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.papers.ecg_r1 import (
    ECGParams,
    cross_modal_agreement,
    evaluate_reports,
    measure,
    neurokit_heart_rate,
    numeric_errors,
    parse_numbers,
    protocol_report,
    render_ecg_image,
    render_report,
    sample_params,
    simulate_ecg,
)
from icml26.papers.ecg_r1.protocol import LEADS
from icml26.papers.ecg_r1.reports import measured_numbers
from icml26.papers.ecg_r1.simulate import LEAD_MATRIX

FS = 250.0


@pytest.fixture(scope="module")
def records():
    rng = np.random.default_rng(123)
    out = []
    for i in range(40):
        p, conds = sample_params(rng)
        sig, truth = simulate_ecg(p, fs=FS, duration_s=10.0, seed=i)
        out.append((p, sig, truth, measure(sig, FS)))
    return out


def test_lead_geometry_closed_forms():
    ld = {n: LEAD_MATRIX[i] for i, n in enumerate(LEADS)}
    np.testing.assert_allclose(ld["III"], ld["II"] - ld["I"], atol=1e-12)  # Einthoven
    np.testing.assert_allclose(ld["aVR"] + ld["aVL"] + ld["aVF"], 0.0, atol=1e-12)  # Goldberger


def test_measurements_match_ground_truth(records):
    hr = np.array([abs(m.hr_bpm - t["hr_bpm"]) for _, _, t, m in records])
    qrs = np.array([abs(m.qrs_ms - t["qrs_ms"]) for _, _, t, m in records])
    qt = np.array([abs(m.qt_ms - t["qt_ms"]) for _, _, t, m in records])
    sinus = [(t, m) for p, _, t, m in records if not p.af]
    pr = np.array([abs((m.pr_ms or 1e9) - t["pr_ms"]) for t, m in sinus])
    ax = np.array([abs((m.qrs_axis_deg - t["qrs_axis_deg"] + 180) % 360 - 180)
                   for p, _, t, m in records if p.bbb == "none"])
    assert hr.max() < 2.0  # brief acceptance check 6
    assert (qrs <= 20).mean() >= 0.9 and (qt <= 20).mean() >= 0.85 and (pr <= 20).mean() >= 0.85
    assert (ax <= 15).mean() >= 0.9
    assert all(m.p_present == (not p.af) for p, _, _, m in records)


def test_heart_rate_agrees_with_neurokit2(records):
    pytest.importorskip("neurokit2")
    diffs = [abs(neurokit_heart_rate(sig, FS) - m.hr_bpm) for _, sig, _, m in records[:20]]
    assert np.mean(np.array(diffs) <= 2.0) >= 0.95


def test_controlled_pathologies_are_diagnosed():
    cases = {
        "first degree av block": ECGParams(pr_ms=260.0),
        "right bundle branch block": ECGParams(qrs_ms=150.0, bbb="right"),
        "left bundle branch block": ECGParams(qrs_ms=150.0, bbb="left"),
        "left axis deviation": ECGParams(qrs_axis_deg=-60.0),
        "inferior st elevation": ECGParams(st_mv={"inferior": 0.3}),
        "sinus bradycardia": ECGParams(hr_bpm=45.0, qt_ms=420.0),
        "prolonged qt": ECGParams(qt_ms=500.0),
        "atrial fibrillation": ECGParams(af=True, hr_bpm=90.0),
    }
    for label, params in cases.items():
        sig, _ = simulate_ecg(params, fs=FS, seed=7)
        labels, _ = protocol_report_labels(sig)
        assert label in labels, (label, labels)
    sig, _ = simulate_ecg(ECGParams(), fs=FS, seed=7)
    assert protocol_report_labels(sig)[0] == ["sinus rhythm", "normal ecg"]


def protocol_report_labels(sig):
    from icml26.papers.ecg_r1 import interpret
    return interpret(measure(sig, FS))


@pytest.mark.parametrize("make,msg", [
    (lambda s: s[:11], "12-lead"),
    (lambda s: s[0], "12-lead"),
    (lambda s: np.where(np.arange(s.shape[1]) == 100, np.nan, s), "NaN"),
    (lambda s: s[:, :int(1.0 * FS)], "shorter than"),
    (lambda s: np.zeros_like(s), "flat line"),
])
def test_bad_records_raise_clear_errors(make, msg):
    sig, _ = simulate_ecg(ECGParams(), fs=FS, seed=0)
    with pytest.raises(ValueError, match=msg):
        measure(make(sig), FS)


@pytest.mark.parametrize("fs", [0.0, -250.0, float("nan"), float("inf")])
def test_bad_sampling_rate(fs):
    sig, _ = simulate_ecg(ECGParams(), fs=FS, seed=0)
    with pytest.raises(ValueError, match="sampling rate"):
        measure(sig, fs)
    with pytest.raises(ValueError, match="sampling rate"):
        render_ecg_image(sig, fs)


def test_simulator_parameter_validation():
    for bad in ({"bbb": "both"}, {"hr_bpm": 10.0}, {"qrs_ms": 30.0}, {"qt_ms": 120.0}, {"st_mv": {"septal": 0.1}}):
        with pytest.raises(ValueError):
            ECGParams(**bad)


def test_image_is_a_waveform_raster():
    sig, _ = simulate_ecg(ECGParams(), fs=FS, duration_s=10.0, seed=0)
    img = render_ecg_image(sig, FS)
    assert img.shape == (120, 250) and set(np.unique(img)) <= {0.0, 1.0}
    assert (img.reshape(12, 10, 250).sum(1) >= 1).all()  # every lead drawn in every column


def test_numeric_tolerances_and_report_roundtrip(records):
    truth = {"hr": 72.0, "pr": 160.0, "qrs": 90.0, "qt": 400.0, "qtc": 430.0, "axis": 170.0}
    assert numeric_errors({"hr": 79.0, "qrs": 110.0, "axis": -170.0}, truth) == \
        {"hr": False, "qrs": False, "axis": False}
    assert numeric_errors({"hr": 80.0, "qrs": 111.0, "axis": 139.0}, truth) == {"hr": True, "qrs": True, "axis": True}
    assert numeric_errors({"pr": 160.0}, {**truth, "pr": None}) == {"pr": True}  # PR claimed in AF
    _, sig, _, m = records[0]
    text, sol = protocol_report(m)
    got = parse_numbers(text)
    for k, v in measured_numbers(m).items():
        if v is not None:
            assert got[k] == round(v)
    # the corpus text is its own perfect prediction
    res = evaluate_reports([text], [sol], [measured_numbers(m)])
    assert res["jaccard"] == 1.0 and res["evidence"] == 1.0 and res["format"] == 1.0 and res["hallucination"] == 0.0
    wrong = render_report({**measured_numbers(m), "qrs": m.qrs_ms + 50}, [])
    assert evaluate_reports([wrong], [sol], [measured_numbers(m)])["hallucination"] > 0
    assert cross_modal_agreement([text], [text]) == {"label_agreement": 1.0, "number_agreement": 1.0}


def test_model_pipeline_learns_and_checks_modality():
    import torch

    from icml26.papers.ecg_r1 import (
        ECGR1Tiny,
        InterleavedModalityDropout,
        generate_reports,
        make_corpus,
        train_model,
    )
    from icml26.papers.ecg_r1.corpus import number_targets

    torch.manual_seed(0)
    data = make_corpus(40, seed=1, duration_s=5.0)
    nums, mask = number_targets(data.texts["protocol"])
    assert (mask[:, 0] == 1).all()  # every protocol text states the rate
    model = ECGR1Tiny(data.features.shape[1], data.images.shape[1:])
    budget = train_model(model, data.features, data.images, data.labels, nums, mask, epochs=30, lr=3e-3,
                         batch_size=20, transform=InterleavedModalityDropout(seed=0))
    assert budget["steps"] == 60
    reps = generate_reports(model, data.features, data.images, "signal")
    res = evaluate_reports(reps, data.solutions, data.truth_numbers)
    assert res["format"] == 1.0 and res["jaccard"] > 0.6  # fits its training records
    with pytest.raises(ValueError, match="modality"):
        generate_reports(model, data.features, data.images, "text")
    with pytest.raises(ValueError, match="at least 2"):
        make_corpus(1, seed=0)


def _write_wfdb(tmp_path, sig_mv, fs, names, units):
    wfdb = pytest.importorskip("wfdb")
    scale = {"mV": 1.0, "uV": 1e3, "V": 1e-3}
    cols = np.stack([sig_mv[i] * scale[u] for i, u in enumerate(units)], axis=1)
    wfdb.wrsamp("rec", fs=fs, units=list(units), sig_name=list(names), p_signal=cols,
                fmt=["16"] * len(names), adc_gain=[1000.0 / scale[u] for u in units],
                baseline=[0] * len(names), write_dir=str(tmp_path))
    return str(tmp_path / "rec")


def test_read_wfdb_round_trip_units_and_lead_order(tmp_path):
    """A record written by wfdb in shuffled lead order with mixed units (mV, uV, V) reads back as our
    simulator's signal in mV in LEADS order (to wfdb's 16-bit quantisation, 1 uV), and measures the same."""
    from icml26.papers.ecg_r1 import read_wfdb

    p, _ = sample_params(np.random.default_rng(5))
    sig, _ = simulate_ecg(p, fs=FS, duration_s=10.0, seed=5)
    order = list(range(12))[::-1]
    units = ["mV", "uV", "V"] * 4
    path = _write_wfdb(tmp_path, sig[order], FS, [LEADS[i] for i in order], units)
    got, fs = read_wfdb(path)
    assert fs == FS
    np.testing.assert_allclose(got, sig, atol=2e-3)
    a, b = measure(sig, FS), measure(got, FS)
    assert abs(a.hr_bpm - b.hr_bpm) < 0.5
    assert abs(a.qrs_ms - b.qrs_ms) <= 8.0 and abs(a.qt_ms - b.qt_ms) <= 8.0


def test_read_wfdb_refuses_missing_leads_and_unknown_units(tmp_path):
    from icml26.papers.ecg_r1 import read_wfdb

    pytest.importorskip("wfdb")
    p, _ = sample_params(np.random.default_rng(6))
    sig, _ = simulate_ecg(p, fs=FS, duration_s=4.0, seed=6)
    (tmp_path / "a").mkdir()
    path = _write_wfdb(tmp_path / "a", sig[:11], FS, LEADS[:11], ["mV"] * 11)
    with pytest.raises(ValueError, match="lacks leads"):
        read_wfdb(path)
    (tmp_path / "b").mkdir()
    path = _write_wfdb(tmp_path / "b", sig, FS, LEADS, ["mV"] * 12)
    hea = tmp_path / "b" / "rec.hea"
    hea.write_text(hea.read_text().replace("/mV", "/mmHg", 1))
    with pytest.raises(ValueError, match="unit"):
        read_wfdb(path)

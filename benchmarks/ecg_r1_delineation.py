"""ecg_r1: our delineator (``measure``) on ECGs we did not synthesise: neurokit2's ECGSYN (issue 51).

References, per record:
* the known heart rate (``ecg_simulate(heart_rate=...)``, the RR process's mean; its s.d. is 1 bpm);
* neurokit2's own delineation (``ecg_delineate(method="dwt")`` on lead II, medians over beats), where it
  returns the fiducials (it often does not: reported as a coverage fraction);
* the ECGSYN *parametric* intervals: ECGSYN's waves are Gaussians in the cardiac phase (centre t_i, width
  b_i, both scaled with the heart rate exactly as neurokit2 0.3 does: b_i * sqrt(HR/60), t_i *
  (HR/60)^(1/4) for P and T, * (HR/60)^(1/2) for Q and S), so we define each wave's extent as t_i +- 2 b_i
  (95 % of a Gaussian) and convert phase to time with the record's RR (one cycle per beat):
  PR = (t_Q - 2 b_Q) - (t_P - 2 b_P), QRS = (t_S + 2 b_S) - (t_Q - 2 b_Q), QT = (t_T + 2 b_T) - (t_Q - 2 b_Q).
  This is a convention (a Gaussian has no onset); it is stated, not tuned.

Record sets (10 s, 500 Hz, neurokit2's default noise 0.01, HR 50-110 bpm, three seeds per HR):
* ``ecgsyn_default``: ECGSYN at its default wave parameters, one lead projected on the 12 leads through a
  fixed heart vector (frontal 50 deg; our lead geometry), so every lead has ECGSYN's timing and morphology;
* ``ecgsyn_physiologic``: the same with narrower waves (t = (-60, -10, 0, 10, 90) deg,
  b = (0.15, 0.06, 0.06, 0.06, 0.35), a scaled by (b_default / b)^2 so the wave heights stay ECGSYN's,
  the P at half height: ECGSYN's default P is a quarter of the R, a "peaked P" by the protocol)
  whose parametric intervals are normal at 60-100 bpm: a normal ECG;
  the findings it gets beyond rhythm/rate are false findings;
* ``ecgsyn_multileads``: neurokit2's own 12-lead mode (a fixed 12 x 5 gain matrix, each lead rescaled to
  -0.4..1.2 mV): timing as ``ecgsyn_default``; its amplitudes are not physiological (every lead has a
  1.6 mV range, lead II has a 3x T wave and a 0.2x R wave), so amplitude findings there are the
  generator's, and only intervals and rate are scored.

Usage: ``python benchmarks/ecg_r1_delineation.py [--out benchmarks/ecg_r1_delineation.json] [--seeds 3]``.
Needs neurokit2 (the ``ecg`` extra). Deterministic for the seeds. ``--readme`` computes nothing: it writes
the table of an existing JSON into the ecg_r1 README between its delineation markers.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings

import numpy as np

from icml26.papers.ecg_r1 import diagnose, measure
from icml26.papers.ecg_r1.protocol import interpret
from icml26.papers.ecg_r1.simulate import LEAD_MATRIX

FS = 500
DURATION = 10
HRS = (50, 60, 70, 80, 90, 100, 110)
DEFAULT = {"ti": (-70.0, -15.0, 0.0, 15.0, 100.0), "bi": (0.25, 0.1, 0.1, 0.1, 0.4),
           "ai": (1.2, -5.0, 30.0, -7.5, 0.75)}
# narrower waves; amplitudes a_i scaled by (b_default / b_i)^2 so each wave keeps ECGSYN's default height,
# except P at half its height (ECGSYN's default P is a quarter of the R: 0.3 mV in a 1.2 mV lead, "peaked")
PHYSIOLOGIC = {"ti": (-60.0, -10.0, 0.0, 10.0, 90.0), "bi": (0.15, 0.06, 0.06, 0.06, 0.35),
               "ai": tuple(round(a * (b0 / b) ** 2, 3) for a, b0, b in zip((0.6, -5.0, 30.0, -7.5, 0.75),
                                                                            (0.25, 0.1, 0.1, 0.1, 0.4),
                                                                            (0.15, 0.06, 0.06, 0.06, 0.35),
                                                                            strict=True))}
HEART_VECTOR = np.array([math.cos(math.radians(50.0)), math.sin(math.radians(50.0)), -0.3])
RHYTHM = {"sinus rhythm", "sinus bradycardia", "sinus tachycardia", "normal ecg"}


def parametric_intervals(hr: float, ti, bi, ai=None) -> dict:
    """ECGSYN's wave extents (t_i +- 2 b_i) in ms at the mean RR, with neurokit2's heart-rate scaling."""
    f = math.sqrt(hr / 60.0)
    f2 = math.sqrt(f)
    t = np.radians(np.array(ti)) * np.array([f2, f, 1.0, f, f2])
    b = np.array(bi) * f
    ms_per_rad = 60000.0 / hr / (2 * math.pi)
    q_on, s_off = t[1] - 2 * b[1], t[3] + 2 * b[3]
    return {"pr": ms_per_rad * (q_on - (t[0] - 2 * b[0])), "qrs": ms_per_rad * (s_off - q_on),
            "qt": ms_per_rad * (t[4] + 2 * b[4] - q_on)}


def neurokit_intervals(lead: np.ndarray) -> dict:
    import neurokit2 as nk

    out = {"pr": None, "qrs": None, "qt": None}
    try:
        clean = nk.ecg_clean(lead, sampling_rate=FS)
        _, info = nk.ecg_peaks(clean, sampling_rate=FS)
        _, w = nk.ecg_delineate(clean, info["ECG_R_Peaks"], sampling_rate=FS, method="dwt")
    except Exception:  # noqa: BLE001 - neurokit2 raises assorted errors on records it cannot delineate
        return out

    def med(a, b):
        d = (np.asarray(w[a], dtype=float) - np.asarray(w[b], dtype=float)) / FS * 1000
        d = d[np.isfinite(d) & (d > 0)]
        return float(np.median(d)) if d.size else None

    out.update(pr=med("ECG_R_Onsets", "ECG_P_Onsets"), qrs=med("ECG_R_Offsets", "ECG_R_Onsets"),
               qt=med("ECG_T_Offsets", "ECG_R_Onsets"))
    return out


def make_record(kind: str, hr: int, seed: int) -> np.ndarray:
    import neurokit2 as nk

    if kind == "ecgsyn_multileads":
        return nk.ecg_simulate(duration=DURATION, sampling_rate=FS, heart_rate=hr, method="multileads",
                               random_state=seed).to_numpy().T
    params = DEFAULT if kind == "ecgsyn_default" else PHYSIOLOGIC
    x = nk.ecg_simulate(duration=DURATION, sampling_rate=FS, heart_rate=hr, method="ecgsyn", random_state=seed,
                        ti=params["ti"], bi=params["bi"], ai=params["ai"])
    return np.outer(LEAD_MATRIX @ HEART_VECTOR, x)


def one(kind: str, hr: int, seed: int) -> dict:
    sig = make_record(kind, hr, seed)
    params = PHYSIOLOGIC if kind == "ecgsyn_physiologic" else DEFAULT
    ref = parametric_intervals(hr, **params)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            m = measure(sig, FS)
            labels = interpret(m)[0]
        except ValueError as exc:
            m, labels = None, ["unreadable: " + str(exc)[:80]]
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    nk_iv = neurokit_intervals(sig[1])
    t_nk = time.perf_counter() - t0
    rec = {"kind": kind, "hr_known": hr, "seed": seed, "parametric": ref, "neurokit": nk_iv, "labels": labels,
           "ours_s": t_ours, "neurokit_s": t_nk}
    if m is not None:
        rec["ours"] = {"hr": m.hr_bpm, "pr": m.pr_ms, "qrs": m.qrs_ms, "qt": m.qt_ms, "p_present": m.p_present}
        # what the protocol says from the parametric intervals alone (interval/rate findings the record has)
        ref_m = type(m)(**{**m.__dict__, "hr_bpm": float(hr), "pr_ms": ref["pr"], "qrs_ms": ref["qrs"],
                           "qt_ms": ref["qt"], "p_present": True, "rr_cv": 0.0})
        rec["labels_from_parametric_intervals"] = [lab for lab in interpret(ref_m)[0] if lab in _INTERVAL_LABELS]
    return rec


_INTERVAL_LABELS = {"sinus rhythm", "sinus bradycardia", "sinus tachycardia", "first degree av block",
                    "short pr interval", "incomplete bundle branch block", "right bundle branch block",
                    "left bundle branch block", "prolonged qt"}


def _err_stats(errs: list[float]) -> dict:
    e = np.array([x for x in errs if x is not None and np.isfinite(x)], dtype=float)
    if e.size == 0:
        return {"n": 0}
    return {"n": int(e.size), "median_abs": float(np.median(np.abs(e))), "bias": float(np.median(e)),
            "p90_abs": float(np.percentile(np.abs(e), 90)), "max_abs": float(np.abs(e).max())}


def _diffs(recs: list[dict], a: str, b: str, iv: str) -> list[float | None]:
    """``rec[a][iv] - rec[b][iv]`` per record (None where either side has no value)."""
    return [None if (r[a][iv] is None or r[b][iv] is None) else r[a][iv] - r[b][iv] for r in recs]


def summarise(recs: list[dict]) -> dict:
    ok = [r for r in recs if "ours" in r]
    out = {"n_records": len(recs), "n_measured": len(ok), "hr_abs_error_bpm": _err_stats(
        [r["ours"]["hr"] - r["hr_known"] for r in ok])}
    for iv in ("pr", "qrs", "qt"):
        out[iv] = {
            "ours_minus_parametric": _err_stats(_diffs(ok, "ours", "parametric", iv)),
            "neurokit_minus_parametric": _err_stats(_diffs(ok, "neurokit", "parametric", iv)),
            "ours_minus_neurokit": _err_stats(_diffs(ok, "ours", "neurokit", iv)),
            "neurokit_coverage": float(np.mean([r["neurokit"][iv] is not None for r in ok])) if ok else 0.0,
            "ours_coverage": float(np.mean([r["ours"][iv] is not None for r in ok])) if ok else 0.0,
        }
    n_find = [len([lab for lab in r["labels"] if lab not in RHYTHM]) for r in ok]
    extra = [len(set(r["labels"]) - set(r["labels_from_parametric_intervals"]) - RHYTHM) for r in ok]
    counts: dict[str, int] = {}
    for r in ok:
        for lab in r["labels"]:
            counts[lab] = counts.get(lab, 0) + 1
    out["findings_per_record_beyond_rhythm"] = float(np.mean(n_find)) if ok else None
    out["findings_not_in_parametric_intervals_per_record"] = float(np.mean(extra)) if ok else None
    out["label_counts"] = dict(sorted(counts.items(), key=lambda kv: -kv[1]))
    out["p_wave_found"] = float(np.mean([r["ours"]["p_present"] for r in ok])) if ok else None
    out["ms_per_record_ours"] = 1000 * float(np.mean([r["ours_s"] for r in recs]))
    out["ms_per_record_neurokit_lead_II"] = 1000 * float(np.mean([r["neurokit_s"] for r in recs]))
    return out


README = "src/icml26/papers/ecg_r1/README.md"
START, END = "<!-- ecg_r1-delineation:start -->", "<!-- ecg_r1-delineation:end -->"


def table(res: dict) -> str:
    """Markdown: per record set, median (p90) absolute error in ms of ours and of neurokit2's DWT against
    ECGSYN's parametric intervals, HR error, and findings per record."""
    def cell(d: dict) -> str:
        return "—" if not d.get("n") else f"{d['median_abs']:.0f} ({d['p90_abs']:.0f})"

    lines = [f"neurokit2 {res['neurokit2']}, {res['fs']} Hz, {res['duration_s']} s, HR {min(res['heart_rates'])}-"
             f"{max(res['heart_rates'])} bpm, {res['seeds_per_rate']} records per rate; |error| median (p90), ms, "
             "against ECGSYN's parametric intervals; `benchmarks/ecg_r1_delineation.json`.", "",
             "| record set | n | HR error, bpm | PR ours | PR neurokit2 | QRS ours | QRS neurokit2 | QT ours | "
             "QT neurokit2 | findings / record | of them not in the parametric intervals |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for k, s in res["sets"].items():
        row = [k, str(s["n_measured"]), f"{s['hr_abs_error_bpm']['median_abs']:.2f}"]
        for iv in ("pr", "qrs", "qt"):
            row += [cell(s[iv]["ours_minus_parametric"]), cell(s[iv]["neurokit_minus_parametric"])]
        row += [f"{s['findings_per_record_beyond_rhythm']:.2f}",
                f"{s['findings_not_in_parametric_intervals_per_record']:.2f}"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def write_readme(res: dict, path: str = README) -> None:
    text = open(path).read()
    if START not in text or END not in text:
        raise SystemExit(f"{path} lacks the markers {START} ... {END}")
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    with open(path, "w") as fh:
        fh.write(f"{head}{START}\n{table(res)}\n{END}{tail}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="benchmarks/ecg_r1_delineation.json")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--readme", action="store_true", help="write the table of --out into the ecg_r1 README")
    args = ap.parse_args()
    if args.readme:
        with open(args.out) as fh:
            write_readme(json.load(fh))
        return
    import neurokit2 as nk

    kinds = ("ecgsyn_default", "ecgsyn_physiologic", "ecgsyn_multileads")
    recs = [one(k, hr, 1000 * hr + s) for k in kinds for hr in HRS for s in range(args.seeds)]
    res = {"neurokit2": nk.__version__, "fs": FS, "duration_s": DURATION, "heart_rates": list(HRS),
           "seeds_per_rate": args.seeds, "protocol": "ECGProtocol() defaults (sex unknown)",
           "sets": {k: summarise([r for r in recs if r["kind"] == k]) for k in kinds}, "records": recs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res["unreadable_check"] = {"white_noise": diagnose(np.random.default_rng(0).normal(0, 0.5, (12, 5000)),
                                                           FS)[0]}
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=1, default=float)
    for k, s in res["sets"].items():
        print(k, json.dumps({iv: {a: s[iv][a].get("median_abs") for a in ("ours_minus_parametric",
                                                                         "neurokit_minus_parametric",
                                                                         "ours_minus_neurokit")}
                             for iv in ("pr", "qrs", "qt")}),
              "HR", s["hr_abs_error_bpm"].get("median_abs"), "findings", s["findings_per_record_beyond_rhythm"],
              "not-in-ref", s["findings_not_in_parametric_intervals_per_record"])


if __name__ == "__main__":
    main()

"""Machine measurements from a 12-lead signal (our delineator), plus a neurokit2 cross-check.

Pipeline (our choice, a classic median-beat measurement program): band-pass 5-25 Hz energy summed
over leads -> R peaks (``scipy.signal.find_peaks``); baseline removed by linear interpolation through
PR-segment knots; median beat; QRS onset/offset where the spatial slope leaves/returns below 8% of its
peak for >= 20 ms; P onset and T end where the spatial amplitude exceeds a noise-scaled level; axis
from net QRS area in I and aVF (aVF scaled by 2/sqrt(3), Einthoven); ST at J + 40 ms against the PR
segment; R/S amplitudes per lead; V1 terminal-QRS area (rSR' vs QS).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import signal as sps

from .protocol import LEADS, Measurements

P_REL_LEVEL = 0.15  # P onset/end where the spatial P amplitude falls below 15 % of its peak (our choice)


def validate_record(sig, fs: float, *, min_duration_s: float = 2.0) -> np.ndarray:
    """Check a record: shape (12, n), finite, ``fs > 0``, at least ``min_duration_s`` long."""
    if not isinstance(fs, (int, float)) or not math.isfinite(fs) or fs <= 0:
        raise ValueError(f"sampling rate must be a finite number > 0 Hz, got {fs!r}")
    x = np.asarray(sig, dtype=float)
    if x.ndim != 2 or x.shape[0] != 12:
        raise ValueError(f"expected a 12-lead record of shape (12, n_samples) in lead order {LEADS}, "
                         f"got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"record has {int((~np.isfinite(x)).sum())} NaN/inf samples; clean or impute them first")
    if x.shape[1] / fs < min_duration_s:
        raise ValueError(f"record is {x.shape[1] / fs:.2f} s long, shorter than the {min_duration_s} s needed "
                         "for two beats (one RR interval)")
    return x


@lru_cache(maxsize=16)
def _qrs_band(fs: float):
    return sps.butter(2, [5.0 / (fs / 2), min(25.0 / (fs / 2), 0.95)], btype="band")


def detect_r_peaks(x: np.ndarray, fs: float) -> np.ndarray:
    b, a = _qrs_band(float(fs))
    e = (sps.filtfilt(b, a, x, axis=1) ** 2).sum(0)
    w = max(1, int(0.05 * fs))
    e = np.convolve(e, np.ones(w) / w, mode="same")
    peaks, _ = sps.find_peaks(e, distance=max(1, int(0.27 * fs)), height=0.25 * np.percentile(e, 99))
    return peaks


def _run_below(v: np.ndarray, start: int, step: int, thr: float, run: int) -> int:
    """From ``start`` walk by ``step`` until ``run`` consecutive samples are below ``thr``; return the edge."""
    i, count = start, 0
    while 0 <= i < v.size:
        count = count + 1 if v[i] < thr else 0
        if count >= run:
            return i - step * (run - 1)
        i += step
    return int(np.clip(i, 0, v.size - 1))


def measure(sig, fs: float, *, units: str = "auto", quality: bool = True) -> Measurements:
    """Measure one record (``sig`` shape (12, n) in mV, leads in :data:`LEADS` order).

    The signal-quality gate (:func:`~.quality.check_quality`) runs first: an unreadable record raises
    :class:`~.quality.UnreadableECG` (a ``ValueError`` with the reasons); a record in microvolts is
    rescaled with a warning (``units="auto"``; ``"mV"`` refuses it, ``"uV"`` converts silently); mains
    hum is notch-filtered with a warning. ``quality=False`` skips the gate (input in mV, trusted).
    """
    if quality:
        from .quality import UnreadableECG, check_quality

        q = check_quality(sig, fs, units=units)
        if not q.readable:
            raise UnreadableECG(q)
        x, peaks = q.signal, q.stats["r_peaks"]
    else:
        x = validate_record(sig, fs)
        peaks = detect_r_peaks(x, fs)
    if peaks.size < 2:
        raise ValueError(f"found {peaks.size} beat(s); need at least two (record shorter than one beat?)")
    rr = np.diff(peaks) / fs
    rr_med = float(np.median(rr))
    hr = 60.0 / float(np.mean(rr))
    rr_cv = float(np.std(rr) / np.mean(rr))
    pre, post = int(round(min(0.45, 0.9 * rr_med) * fs)), int(round(min(0.65, 0.95 * rr_med) * fs))
    good = peaks[(peaks - pre >= 0) & (peaks + post < x.shape[1])]
    if good.size < 1:
        raise ValueError("no complete beat inside the record")
    beats = np.stack([x[:, k - pre:k + post] for k in good])
    beat = np.median(beats, axis=0)
    beat = np.apply_along_axis(lambda v: np.convolve(v, np.ones(3) / 3, mode="same"), 1, beat)
    c = pre
    slope = np.abs(np.diff(beat, axis=1)).max(0) * fs
    thr = 0.08 * slope[max(0, c - int(0.06 * fs)):c + int(0.06 * fs)].max()
    run = max(2, int(round(0.02 * fs)))
    on = _run_below(slope, c, -1, thr, run) + 2  # +1: slope index -> sample; +1: undo the 3-tap smoothing
    off = _run_below(slope, c, +1, thr, run) - 1
    # baseline: PR segment just before QRS onset; re-measure after removing wander through knots
    knot = max(0, on - int(0.012 * fs))
    kn = good - pre + knot
    all_k = np.clip(peaks - pre + knot, 0, x.shape[1] - 1)
    base = np.array([np.interp(np.arange(x.shape[1]), all_k, x[ld, all_k]) for ld in range(12)])
    y = x - base
    beat = np.median(np.stack([y[:, k - pre:k + post] for k in good]), axis=0)
    beat = np.apply_along_axis(lambda v: np.convolve(v, np.ones(3) / 3, mode="same"), 1, beat)
    del kn
    iso = beat[:, knot]
    amp = np.abs(beat - iso[:, None]).max(0)
    noise = float(np.median(np.abs(np.diff(beats, axis=2)))) / math.sqrt(max(1, good.size)) + 1e-4
    # P wave: region above level before QRS onset
    lo = max(0, c - int(min(0.40, 0.8 * rr_med) * fs))
    pwin = amp[lo:on - int(0.01 * fs)]
    p_level = max(0.02, 4 * noise)
    p_present = False
    if pwin.size > 0 and pwin.max() > 0.05:
        # a P wave is the same wave at the same place before every QRS: median beat-to-beat correlation
        seg = (lo, on - int(0.01 * fs))
        ref = (beat[:, seg[0]:seg[1]] - iso[:, None]).ravel()
        cors = []
        # judge on beats after a long RR (>= 60th percentile), so the previous T wave is out of the window
        prev_rr = {int(pk): float(r) for pk, r in zip(peaks[1:], np.diff(peaks), strict=True)}
        cut = float(np.percentile(list(prev_rr.values()), 60))
        judged = [k for k in good if prev_rr.get(int(k), 0.0) >= cut] or list(good)
        for k in judged:
            w = (y[:, k - pre + seg[0]:k - pre + seg[1]] - y[:, k - pre + knot][:, None]).ravel()
            den = np.linalg.norm(w) * np.linalg.norm(ref)
            cors.append(float(w @ ref / den) if den > 0 else 0.0)
        p_present = float(np.median(cors)) > 0.6
    pr_ms = p_amp = p_dur = p_on = None
    if p_present:
        # boundaries at a level relative to the P peak too: slow baseline drift (ECGSYN's damped return,
        # per-lead offsets) otherwise joins the P wave to the previous T (issue 51: PR 264-350 ms on ecgsyn)
        p_level = max(p_level, P_REL_LEVEL * float(pwin.max()))
        above = np.where(pwin > p_level)[0]
        end = above[-1]
        start = end
        while start - 1 >= 0 and pwin[start - 1] > p_level:
            start -= 1
        p_on = lo + start
        pr_ms = (on - p_on) / fs * 1000
        p_dur = (end - start + 1) / fs * 1000
        ii = LEADS.index("II")
        seg = beat[ii, p_on:lo + end + 1] - iso[ii]
        p_amp = float(seg[np.argmax(np.abs(seg))]) if seg.size else 0.0
    # T end: last sample after J above level, before the next P (or 0.9 RR)
    rr_lim = rr_med if rr_cv <= 0.1 else float(np.percentile(rr, 10))
    # search for T end up to the next beat's P onset (P onset + RR), else 0.9 RR (issue 51: with the PR
    # subtracted from R instead of from the P onset the next P joined the T at 100-110 bpm)
    hi_lim = (p_on + int(rr_lim * fs) - int(0.02 * fs)) if pr_ms else c + int(0.9 * rr_lim * fs)
    hi_lim = min(hi_lim, beat.shape[1] - 1)
    # T end against the level the signal returns to (the TP segment just before ``hi_lim``), not the PR
    # segment: when the two differ (ECGSYN's damped baseline) the T otherwise "ends" at the next P
    tp = beat[:, max(off + 1, hi_lim - int(0.02 * fs)):hi_lim + 1].mean(1)
    amp_t = np.abs(beat - tp[:, None]).max(0)
    t_level = max(0.03, 4 * noise, 0.1 * float(amp_t[off:max(hi_lim, off + 1)].max()))
    tw = np.where(amp_t[off:hi_lim] > t_level)[0]
    t_end = off + (tw[-1] + 1 if tw.size else 0)
    qrs = beat[:, on:off + 1] - iso[:, None]
    area = qrs.sum(1)
    axis = math.degrees(math.atan2(area[LEADS.index("aVF")] * 2 / math.sqrt(3), area[LEADS.index("I")]))
    j40 = min(off + int(round(0.04 * fs)), beat.shape[1] - 1)
    st = {ld: float(beat[i, j40] - iso[i]) for i, ld in enumerate(LEADS)}
    r_mv = {ld: float(max(qrs[i].max(), 0.0)) for i, ld in enumerate(LEADS)}
    s_mv = {ld: float(max(-qrs[i].min(), 0.0)) for i, ld in enumerate(LEADS)}
    v1 = qrs[LEADS.index("V1")]
    v1_term = float(v1[int(0.6 * v1.size):].sum() / fs * 1000)
    return Measurements(hr_bpm=hr, rr_cv=rr_cv, p_present=bool(p_present), pr_ms=pr_ms,
                        qrs_ms=(off - on + 1) / fs * 1000, qt_ms=(t_end - on) / fs * 1000, qrs_axis_deg=axis,
                        st_mv=st, r_mv=r_mv, s_mv=s_mv, v1_terminal=v1_term, p_amp_mv=p_amp, p_dur_ms=p_dur)


def diagnose(sig, fs: float, protocol=None, sex: str | None = None, units: str = "auto"
             ) -> tuple[list[str], dict[str, list[str]]]:
    """Quality gate, measurement and the protocol: ``(labels, evidence)``.

    An unreadable record gives ``(["unreadable"], {"quality": [reasons]})`` instead of a diagnosis;
    a malformed input (wrong shape, NaN, bad sampling rate) still raises ``ValueError``.
    """
    from .protocol import ECGProtocol
    from .quality import UnreadableECG

    try:
        m = measure(sig, fs, units=units)
    except UnreadableECG as exc:
        return ["unreadable"], {"quality": list(exc.quality.reasons)}
    return (protocol or ECGProtocol()).interpret(m, sex=sex)


def neurokit_heart_rate(sig, fs: float, lead: str = "II") -> float:
    """Heart rate from ``neurokit2.ecg_peaks`` on one lead (cross-check; needs the ``ecg`` extra)."""
    try:
        import neurokit2 as nk
    except ImportError as exc:  # pragma: no cover
        raise ImportError("neurokit2 is needed for this cross-check: pip install 'icml26[ecg]'") from exc
    x = validate_record(sig, fs)
    clean = nk.ecg_clean(x[LEADS.index(lead)], sampling_rate=int(fs))
    _, info = nk.ecg_peaks(clean, sampling_rate=int(fs))
    pk = np.asarray(info["ECG_R_Peaks"])
    if pk.size < 2:
        raise ValueError("neurokit2 found fewer than two R peaks")
    return 60.0 / float(np.mean(np.diff(pk) / fs))


_UNIT_TO_MV = {"mv": 1.0, "uv": 1e-3, "\u00b5v": 1e-3, "\u03bcv": 1e-3, "v": 1e3}


def read_wfdb(path: str) -> tuple[np.ndarray, float]:
    """Read a WFDB record (e.g. PTB-XL / MIMIC-IV-ECG) as ``(signal[12, n] in mV, fs)`` in :data:`LEADS` order.

    Leads are matched by name (case-insensitive); each lead's header unit (mV, uV or V) is converted to mV, so
    a record stored in microvolts is read correctly rather than left to the quality gate's plausibility check.
    A missing lead, an unknown unit or missing samples (NaN: WFDB's gap value) raise ``ValueError``.
    Needs the ``ecg`` extra (``wfdb``)."""
    try:
        import wfdb
    except ImportError as exc:
        raise ImportError("reading WFDB records needs wfdb: pip install 'icml26[ecg]'") from exc
    sig, fields = wfdb.rdsamp(path)
    names = [n.strip() for n in fields["sig_name"]]
    units = [str(u).strip().lower() for u in (fields.get("units") or ["mV"] * len(names))]
    lookup = {n.lower(): i for i, n in enumerate(names)}
    missing = [ld for ld in LEADS if ld.lower() not in lookup]
    if missing:
        raise ValueError(f"record {path} lacks leads {missing} (has {names})")
    rows = []
    for ld in LEADS:
        i = lookup[ld.lower()]
        if units[i] not in _UNIT_TO_MV:
            raise ValueError(f"record {path}: lead {ld} has unit {fields['units'][i]!r}; expected mV, uV or V")
        col = np.asarray(sig[:, i], dtype=float) * _UNIT_TO_MV[units[i]]
        if not np.all(np.isfinite(col)):
            raise ValueError(f"record {path}: lead {ld} has {int(np.sum(~np.isfinite(col)))} missing samples")
        rows.append(col)
    return np.stack(rows), float(fields["fs"])

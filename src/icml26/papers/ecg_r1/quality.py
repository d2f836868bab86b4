"""Signal-quality gate run before any measurement or diagnosis (issue 51).

A 12-lead record (mV, leads in :data:`~.protocol.LEADS` order) is *readable* when it passes every check
below; otherwise :func:`measure` raises :class:`UnreadableECG` (a ``ValueError`` that carries the
:class:`SignalQuality`) and :func:`diagnose` returns the single label ``"unreadable"`` with the reasons.
Thresholds are our choices (no standard fixes them), set from what a clinical record can and cannot
look like, before the validation was run:

* **units** (``units="auto"``, default): the largest robust lead amplitude (0.5-99.5 percentile range)
  must be plausible for mV (0.05-20 mV). A record 100-20,000 units tall is read as microvolts and
  rescaled by 1e-3 with a ``UserWarning``; ``units="mV"`` refuses it instead, ``units="uV"`` converts
  without a warning. Anything else (all leads < 0.05 units: a flat line or volts; > 20,000) is refused.
* **flat lead**: a lead whose range is < 0.02 mV (0.2 mm on paper; an electrode off) makes the record
  unreadable.
* **saturation/clipping**: a lead with >= 0.5 % of its samples in runs of >= 3 identical samples at its
  maximum or minimum (a flat top at the amplifier's rail) makes the record unreadable.
* **mains hum**: a narrow spectral peak at 50 or 60 Hz (or a harmonic) >= 10x the neighbouring band and
  >= 0.01 mV is removed with zero-phase notch filters (``UserWarning``); the cleaned signal is what is
  measured.
* **noise**: after hum removal, the fraction of power above 40 Hz must be <= 0.3 and the QRS complexes
  must repeat: the median correlation of each beat's QRS window (+-100 ms, all leads) with the median
  beat must be >= 0.5. White noise, or a record without beats, fails.
* **limb-lead reversal** (RA/LA): P waves of opposite sign in I and II (correlation < -0.3 in the P
  window) with a negative net QRS in I and a positive one in aVR, the pattern the protocol reads as
  arm-lead reversal (or dextrocardia): refused ("check the electrodes"), since every frontal-plane
  finding would be wrong. Lead I / II order errors that break Einthoven's law (II = I + III) are
  reported as a warning only (simulators such as neurokit2's 'multileads' do not obey it); swaps of
  precordial leads are *not* detected.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import signal as sps

from .protocol import LEADS

UNITS = ("auto", "mV", "uV")
MV_RANGE = (0.05, 20.0)  # plausible largest lead amplitude in mV
FLAT_MV = 0.02
CLIP_FRACTION, CLIP_RUN = 0.005, 3
HUM_RATIO, HUM_MIN_MV = 10.0, 0.01
HF_CUTOFF_HZ, HF_MAX_FRACTION = 40.0, 0.3
MIN_BEAT_CORRELATION = 0.5
REVERSAL_P_CORRELATION = -0.3


class UnreadableECG(ValueError):
    """The record failed the signal-quality gate; ``.quality`` says why."""

    def __init__(self, quality: SignalQuality) -> None:
        self.quality = quality
        super().__init__("unreadable ECG: " + "; ".join(quality.reasons))


@dataclass(frozen=True)
class SignalQuality:
    """Result of :func:`check_quality`. ``signal`` is the cleaned record in mV (rescaled, hum removed)."""

    readable: bool
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    scale: float  # factor applied to reach mV
    hum_hz: tuple[float, ...]
    stats: dict = field(default_factory=dict)
    signal: np.ndarray | None = field(default=None, repr=False)


def _robust_amplitude(x: np.ndarray) -> np.ndarray:
    lo, hi = np.percentile(x, [0.5, 99.5], axis=1)
    return hi - lo


def _clipped_fraction(v: np.ndarray) -> float:
    rng = float(v.max() - v.min())
    if rng <= 0:
        return 1.0
    tol = 1e-9 * rng
    frac = 0.0
    for extreme in (v.max(), v.min()):
        at = np.abs(v - extreme) <= tol
        if int(at.sum()) < CLIP_RUN:  # fast path: no run can be long enough
            continue
        # lengths of runs of consecutive samples at the extreme
        edges = np.diff(np.concatenate([[0], at.astype(np.int8), [0]]))
        starts, ends = np.where(edges == 1)[0], np.where(edges == -1)[0]
        runs = ends - starts
        frac += float(runs[runs >= CLIP_RUN].sum()) / v.size
    return frac


def _hum(x: np.ndarray, fs: float) -> tuple[list[float], dict]:
    """Mains frequencies (50/60 Hz and harmonics below Nyquist) with a narrow peak in the mean spectrum."""
    n = x.shape[1]
    spec = np.abs(np.fft.rfft(x - x.mean(1, keepdims=True), axis=1)) ** 2
    spec = spec.mean(0)
    freqs = np.fft.rfftfreq(n, 1.0 / fs)
    df = freqs[1] - freqs[0]
    found, ratios = [], {}
    for base in (50.0, 60.0):
        for f in (base, 2 * base, 3 * base):
            if f + 5.0 >= fs / 2:
                continue
            peak = spec[np.abs(freqs - f) <= max(0.6, df)]
            ring = spec[(np.abs(freqs - f) > 2.0) & (np.abs(freqs - f) <= 6.0)]
            if peak.size == 0 or ring.size == 0:
                continue
            ratio = float(peak.max() / (np.median(ring) + 1e-30))
            # amplitude of a sinusoid from its periodogram peak: |X| = A n / 2
            amp = 2.0 * math.sqrt(float(peak.sum())) / n
            ratios[f] = ratio
            if ratio >= HUM_RATIO and amp >= HUM_MIN_MV:
                found.append(f)
    return found, ratios


def _notch(x: np.ndarray, fs: float, freqs: list[float]) -> np.ndarray:
    y = x
    for f in freqs:
        b, a = sps.iirnotch(f, 30.0, fs)
        y = sps.filtfilt(b, a, y, axis=1)
    return y


@lru_cache(maxsize=16)
def _highpass(fs: float):
    return sps.butter(2, 0.5 / (fs / 2), btype="high")


def check_quality(sig, fs: float, units: str = "auto") -> SignalQuality:
    """Run the gate on a validated-shape record; never raises for a bad *signal* (it reports it)."""
    from .measure import detect_r_peaks, validate_record

    if units not in UNITS:
        raise ValueError(f"units must be one of {UNITS}, got {units!r}")
    x = validate_record(sig, fs)
    reasons, notes, stats = [], [], {}
    scale = 1e-3 if units == "uV" else 1.0
    amp = _robust_amplitude(x) * scale
    top = float(amp.max())
    stats["max_lead_amplitude"] = top
    if units != "uV" and MV_RANGE[1] < top:
        if 1e3 * MV_RANGE[0] * 2 <= top <= 1e3 * MV_RANGE[1]:
            if units == "mV":
                reasons.append(f"largest lead amplitude {top:.4g} mV is implausible (expected <= {MV_RANGE[1]} "
                               "mV); the record looks like microvolts: pass units='uV' or rescale")
            else:
                scale = 1e-3
                amp = amp * scale
                msg = f"largest lead amplitude {top:.4g} is implausible in mV; read as microvolts (x 1e-3)"
                notes.append(msg)
                warnings.warn(msg, UserWarning, stacklevel=3)
        else:
            reasons.append(f"largest lead amplitude {top:.4g} is implausible for mV or uV")
    if not reasons and amp.max() < MV_RANGE[0]:
        reasons.append(f"every lead is below {MV_RANGE[0]} mV peak to peak (largest {amp.max():.3g}): a flat "
                       "line, or a record in volts (multiply by 1000)")
    if reasons:
        return SignalQuality(False, tuple(reasons), tuple(notes), scale, (), stats, None)
    x = x * scale
    rng = x.max(1) - x.min(1)
    flat = [ld for ld, r in zip(LEADS, rng, strict=True) if r < FLAT_MV]
    if flat:
        reasons.append(f"flat lead(s) {flat} (range < {FLAT_MV} mV): electrode off or lead missing")
    clip = {ld: _clipped_fraction(v) for ld, v in zip(LEADS, x, strict=True) if ld not in flat}
    stats["clipped_fraction"] = max(clip.values()) if clip else 0.0
    clipped = [ld for ld, f in clip.items() if f >= CLIP_FRACTION]
    if clipped:
        reasons.append(f"saturated/clipped lead(s) {clipped} (>= {100 * CLIP_FRACTION:g} % of samples in flat "
                       "runs at the lead's extreme)")
    if reasons:
        return SignalQuality(False, tuple(reasons), tuple(notes), scale, (), stats, None)
    hum, ratios = _hum(x, fs)
    stats["hum_ratio"] = {str(k): v for k, v in ratios.items()}
    if hum:
        x = _notch(x, fs, hum)
        msg = f"mains hum at {hum} Hz removed (notch filters)"
        notes.append(msg)
        warnings.warn(msg, UserWarning, stacklevel=3)
    centred = x - x.mean(1, keepdims=True)
    spec = np.abs(np.fft.rfft(centred, axis=1)) ** 2
    freqs = np.fft.rfftfreq(x.shape[1], 1.0 / fs)
    total = float(spec[:, freqs > 0.5].sum()) + 1e-30
    hf = float(spec[:, freqs > HF_CUTOFF_HZ].sum()) / total
    stats["hf_fraction"] = hf
    if hf > HF_MAX_FRACTION:
        reasons.append(f"noise: {100 * hf:.0f} % of the power is above {HF_CUTOFF_HZ:g} Hz (at most "
                       f"{100 * HF_MAX_FRACTION:g} % in a readable ECG)")
    peaks = detect_r_peaks(x, fs)
    w = int(round(0.1 * fs))
    inner = peaks[(peaks - w >= 0) & (peaks + w < x.shape[1])]
    corr = 0.0
    if inner.size >= 2:
        xf = sps.filtfilt(*_highpass(float(fs)), x, axis=1)
        beats = np.stack([xf[:, k - w:k + w] for k in inner])
        med = np.median(beats, axis=0).ravel()
        med = med - med.mean()
        cs = []
        for bt in beats:
            v = bt.ravel() - bt.mean()
            den = float(np.linalg.norm(v) * np.linalg.norm(med))
            cs.append(float(v @ med) / den if den > 0 else 0.0)
        corr = float(np.median(cs))
    stats["beat_correlation"] = corr
    stats["r_peaks"] = peaks
    stats["n_beats"] = int(inner.size)
    if corr < MIN_BEAT_CORRELATION:
        reasons.append(f"no repeating QRS complexes (median beat correlation {corr:.2f} < "
                       f"{MIN_BEAT_CORRELATION}; {inner.size} candidate beats): noise or no signal")
    if not reasons and inner.size >= 2:
        reversal, einthoven = _lead_checks(x, fs, inner)
        stats.update(reversal_p_correlation=reversal[0], einthoven_residual=einthoven)
        if reversal[1]:
            reasons.append("limb-lead reversal (RA/LA) suspected, or dextrocardia: P waves of opposite sign in I "
                           f"and II (correlation {reversal[0]:.2f}), negative QRS in I, positive QRS in aVR; "
                           "check the electrodes")
        if einthoven > 0.2:
            notes.append(f"limb leads do not obey Einthoven's law (|II - I - III| / max |I|, |II|, |III| = "
                         f"{einthoven:.2f}): "
                         "channels out of order, or a simulated record")
    return SignalQuality(not reasons, tuple(reasons), tuple(notes), scale, tuple(hum), stats, x)


def _lead_checks(x: np.ndarray, fs: float, peaks: np.ndarray) -> tuple[tuple[float, bool], float]:
    i, ii, iii, avr = (LEADS.index(n) for n in ("I", "II", "III", "aVR"))
    rr = float(np.median(np.diff(peaks))) / fs
    p_lo, p_hi = int(round(min(0.30, 0.45 * rr) * fs)), int(round(0.07 * fs))
    q = int(round(0.05 * fs))
    good = peaks[peaks - p_lo >= 0]
    if good.size == 0 or p_lo <= p_hi:
        return (0.0, False), 0.0
    pw = np.median(np.stack([x[:, k - p_lo:k - p_hi] for k in good]), axis=0)
    pw = sps.detrend(pw, axis=1)  # remove the baseline's linear trend
    den = float(np.linalg.norm(pw[i]) * np.linalg.norm(pw[ii]))
    p_corr = float(pw[i] @ pw[ii]) / den if den > 0 else 0.0
    # net QRS deflection: R +- 50 ms against the level 70 ms before R (the PR segment)
    qrs = np.median(np.stack([x[:, k - p_hi:k + q] for k in good if k + q < x.shape[1]]), axis=0)
    qrs = qrs[:, p_hi - q:] - qrs[:, :1]
    net_i, net_avr = float(qrs[i].sum()), float(qrs[avr].sum())
    reversal = p_corr < REVERSAL_P_CORRELATION and net_i < 0 and net_avr > 0
    # Einthoven on the median QRS (noise and baseline wander average out)
    resid = float(np.linalg.norm(qrs[ii] - qrs[i] - qrs[iii])
                  / (max(np.linalg.norm(qrs[i]), np.linalg.norm(qrs[ii]), np.linalg.norm(qrs[iii])) + 1e-12))
    return (p_corr, reversal), resid

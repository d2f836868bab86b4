"""Synthetic corpus: simulated records, machine measurements, protocol labels and three text corpora.

Labels of a record come from the protocol rule engine applied to its *measured* features (brief §7,
trap i). The same records and labels carry three instruction texts:
``protocol`` (measured numbers + rule evidence), ``label_only`` (label-prior numbers, the
ECG-Grounding analogue) and ``wrong_measurements`` (the protocol template filled with the
measurements of another record: a grounded-looking corpus whose numbers are wrong).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .measure import detect_r_peaks, measure
from .protocol import LABELS, ECGProtocol
from .render import render_ecg_image
from .reports import (
    label_conditioned_report,
    measured_numbers,
    parse_numbers,
    protocol_report,
    render_report,
)
from .simulate import sample_params, simulate_ecg

CORPORA = ("protocol", "label_only", "wrong_measurements")
BEAT_POINTS = 100  # median-beat samples per lead fed to the signal encoder (1 s window, 10 ms steps)
N_RR = 10


def beat_features(sig: np.ndarray, fs: float) -> np.ndarray:
    """Signal-branch input: per-lead median beat (-0.4 s .. +0.6 s around R, 10 ms steps) + RR series (s).

    A standard beat-averaging front end; no measured interval, axis or label enters the model.
    """
    peaks = detect_r_peaks(sig, fs)
    pre, post = int(0.4 * fs), int(0.6 * fs)
    ok = peaks[(peaks - pre >= 0) & (peaks + post < sig.shape[1])]
    if ok.size == 0:
        raise ValueError("no complete beat for the median-beat features")
    beat = np.median(np.stack([sig[:, k - pre:k + post] for k in ok]), axis=0)
    beat = beat - beat[:, :int(0.1 * fs)].mean(1, keepdims=True)
    grid = np.linspace(0, beat.shape[1] - 1, BEAT_POINTS)
    b = np.stack([np.interp(grid, np.arange(beat.shape[1]), row) for row in beat])
    rr = np.diff(peaks) / fs
    rr_vec = np.resize(rr, N_RR) if rr.size else np.zeros(N_RR)
    return np.concatenate([b.ravel(), rr_vec, [rr.std() / max(rr.mean(), 1e-6)]]).astype(np.float32)


@dataclass
class Corpus:
    features: np.ndarray  # (n, F) signal-branch input
    images: np.ndarray  # (n, H, W) image-branch input
    labels: np.ndarray  # (n, L) multi-hot protocol labels
    truth_numbers: list  # measured numbers per record (the reference for hallucination)
    solutions: list  # solution text (<|answer|> + key evidence)
    texts: dict  # corpus name -> list of report texts
    signals: np.ndarray  # (n, 12, T)
    fs: float


def make_corpus(n: int, seed: int, fs: float = 250.0, duration_s: float = 8.0,
                protocol: ECGProtocol | None = None) -> Corpus:
    if n < 2:
        raise ValueError(f"need at least 2 records, got {n}")
    p = protocol or ECGProtocol()
    rng = np.random.default_rng(seed)
    feats, imgs, labs, nums, sols, sigs, prot, lab_only = [], [], [], [], [], [], [], []
    meas = []
    while len(feats) < n:
        params, _ = sample_params(rng)
        sig, _ = simulate_ecg(params, fs=fs, duration_s=duration_s, seed=int(rng.integers(2**31)))
        try:
            m = measure(sig, fs)
            f = beat_features(sig, fs)
        except ValueError:
            continue
        labels, _ = p.interpret(m)
        text, sol = protocol_report(m, p)
        feats.append(f)
        imgs.append(render_ecg_image(sig, fs))
        labs.append(np.array([lab in labels for lab in LABELS], dtype=np.float32))
        nums.append(measured_numbers(m, p))
        sols.append(sol)
        sigs.append(sig.astype(np.float32))
        prot.append(text)
        lab_only.append(label_conditioned_report(labels, rng))
        meas.append((m, labels))
    perm = rng.permutation(n)
    perm = np.where(perm == np.arange(n), np.roll(perm, 1), perm)
    wrong = [render_report(measured_numbers(meas[perm[i]][0], p), meas[i][1]) for i in range(n)]
    return Corpus(np.stack(feats), np.stack(imgs), np.stack(labs), nums, sols,
                  {"protocol": prot, "label_only": lab_only, "wrong_measurements": wrong}, np.stack(sigs), fs)


def number_targets(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Numeric targets (n, 6) and mask parsed from the corpus texts (what the model is taught to write)."""
    from .reports import NUMBER_FIELDS

    y = np.zeros((len(texts), len(NUMBER_FIELDS)), dtype=np.float32)
    mask = np.zeros_like(y)
    for i, t in enumerate(texts):
        got = parse_numbers(t)
        for j, k in enumerate(NUMBER_FIELDS):
            if k in got:
                y[i, j], mask[i, j] = got[k], 1.0
    return y, mask

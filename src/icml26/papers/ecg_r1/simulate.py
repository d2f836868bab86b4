"""Simulated 12-lead ECGs with controlled pathologies (our own parameterised simulator).

*Our simulator, not neurokit2's*: ``neurokit2.ecg_simulate`` cannot set PR, QRS width, QT, axis or
territorial ST offsets (its 'multileads' mode uses one fixed lead-gain matrix), so the waves here are
compact half-sine bumps (P; q, R, s and, for bundle branch block, terminal R' or a broad posterior
QRS; T) whose onsets and ends are exact, each a 3-D dipole (x left, y inferior, z anterior) projected
on the frontal limb leads (Einthoven: III = II - I, aVR, aVL, aVF the augmented combinations) and on
six transverse precordial leads. ST offsets are per territory (protocol phase 4); AF = no P wave,
irregular RR (log-normal) and a 4-8 Hz fibrillatory baseline (0.015 mV per lead gain). White noise and baseline wander are added.
The ground truth (intervals, axis, R peak times) is returned alongside the signal.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .protocol import LEADS, TERRITORIES

# precordial transverse angles (deg; 0 = left, 90 = anterior) and gain (our choice, textbook geometry)
_PRECORDIAL_DEG = {"V1": 120.0, "V2": 95.0, "V3": 75.0, "V4": 55.0, "V5": 30.0, "V6": 5.0}
_PRECORDIAL_GAIN = 1.4


@dataclass(frozen=True)
class ECGParams:
    """Generator parameters of one record (ms, bpm, degrees, mV)."""

    hr_bpm: float = 72.0
    af: bool = False
    pr_ms: float = 160.0
    qrs_ms: float = 90.0
    qt_ms: float = 380.0
    qrs_axis_deg: float = 50.0
    qrs_amp_mv: float = 1.1
    bbb: str = "none"  # "none" | "right" | "left"
    st_mv: dict[str, float] = field(default_factory=dict)  # territory -> ST offset (mV)
    t_amp_mv: float = 0.3
    noise_mv: float = 0.008
    wander_mv: float = 0.05

    def __post_init__(self) -> None:
        if not (20.0 <= self.hr_bpm <= 250.0):
            raise ValueError(f"hr_bpm must be in [20, 250], got {self.hr_bpm}")
        if self.bbb not in ("none", "right", "left"):
            raise ValueError(f"bbb must be 'none', 'right' or 'left', got {self.bbb!r}")
        if not (40.0 <= self.qrs_ms <= 250.0) or not (self.qt_ms > self.qrs_ms + 60.0):
            raise ValueError("need 40 <= qrs_ms <= 250 and qt_ms > qrs_ms + 60")
        unknown = set(self.st_mv) - set(TERRITORIES)
        if unknown:
            raise ValueError(f"unknown ST territories {sorted(unknown)}; use {sorted(TERRITORIES)}")


def _lead_matrix() -> np.ndarray:
    """12 x 3 projection of a dipole (x, y, z) on the leads (I, II, III, aVR, aVL, aVF, V1..V6)."""
    i = np.array([1.0, 0.0, 0.0])
    ii = np.array([math.cos(math.radians(60)), math.sin(math.radians(60)), 0.0])
    iii = ii - i
    rows = [i, ii, iii, -(i + ii) / 2, (i - iii) / 2, (ii + iii) / 2]
    for v in ("V1", "V2", "V3", "V4", "V5", "V6"):
        a = math.radians(_PRECORDIAL_DEG[v])
        rows.append(_PRECORDIAL_GAIN * np.array([math.cos(a), 0.0, math.sin(a)]))
    return np.stack(rows)


LEAD_MATRIX = _lead_matrix()


def _dipole(frontal_deg: float, z: float) -> np.ndarray:
    a = math.radians(frontal_deg)
    return np.array([math.cos(a), math.sin(a), z])


def _bump(t: np.ndarray, start: float, width: float) -> np.ndarray:
    x = (t - start) / width
    return np.where((x >= 0) & (x <= 1), np.sin(np.pi * np.clip(x, 0, 1)), 0.0)


def simulate_ecg(params: ECGParams, fs: float = 250.0, duration_s: float = 10.0,
                 seed: int | None = None) -> tuple[np.ndarray, dict]:
    """Return ``(signal[12, n], truth)``; signal in mV, leads in :data:`LEADS` order."""
    if not (fs > 0 and math.isfinite(fs)) or not (duration_s > 0):
        raise ValueError(f"fs and duration_s must be > 0, got {fs}, {duration_s}")
    rng = np.random.default_rng(seed)
    n = int(round(duration_s * fs))
    t = np.arange(n) / fs
    sig3 = np.zeros((3, n))
    st = np.zeros((12, n))
    p = params
    rr0 = 60.0 / p.hr_bpm
    onsets = []
    tk = 0.45 + rng.uniform(0, 0.2)
    while tk + p.qt_ms / 1000 + 0.05 < duration_s:
        onsets.append(tk)
        rr = rr0 * (rng.lognormal(0.0, 0.22) if p.af else 1.0 + rng.normal(0, 0.01))
        tk += max(rr, p.qt_ms / 1000 + 0.08)
    d = p.qrs_ms / 1000
    q_dir = 0.12 * np.array([-1.0, 0.2, 0.8])
    r_dir = p.qrs_amp_mv * _dipole(p.qrs_axis_deg, -0.45)
    s_dir = 0.25 * p.qrs_amp_mv * np.array([-0.5, -0.6, -0.5])
    t_dir = p.t_amp_mv * _dipole(p.qrs_axis_deg * 0.5 + 20, -0.3)
    p_dir = 0.15 * _dipole(60.0, 0.2)
    st_lead = np.zeros(12)
    for terr, v in p.st_mv.items():
        for lead in TERRITORIES[terr]:
            st_lead[LEADS.index(lead)] = v
    for on in onsets:
        if not p.af:
            pr = p.pr_ms / 1000
            pdur = min(0.10, pr - 0.03)
            sig3 += np.outer(p_dir, _bump(t, on - pr, pdur))
        if p.bbb == "left":
            sig3 += np.outer(p.qrs_amp_mv * _dipole(p.qrs_axis_deg, -1.0), _bump(t, on, 0.6 * d))
            sig3 += np.outer(0.8 * p.qrs_amp_mv * _dipole(p.qrs_axis_deg - 40, -0.5), _bump(t, on + 0.4 * d, 0.6 * d))
        else:
            sig3 += np.outer(q_dir, _bump(t, on, 0.25 * d))
            core = d * (0.7 if p.bbb == "right" else 1.0)
            sig3 += np.outer(r_dir, _bump(t, on + 0.15 * core, 0.55 * core))
            sig3 += np.outer(s_dir, _bump(t, on + 0.6 * core, 0.4 * core))
            if p.bbb == "right":
                sig3 += np.outer(0.6 * np.array([-0.7, 0.0, 1.0]), _bump(t, on + 0.65 * d, 0.35 * d))
        j, qt_end = on + d, on + p.qt_ms / 1000
        t_start = j + 0.3 * (qt_end - j)
        sig3 += np.outer(t_dir, _bump(t, t_start, qt_end - t_start))
        ramp = np.clip((qt_end - t) / max(qt_end - t_start, 1e-6), 0.0, 1.0)  # J-point offset fading over T
        st += np.outer(st_lead, np.where((t >= j) & (t <= qt_end), ramp, 0.0))
    sig = LEAD_MATRIX @ sig3 + st
    if p.af:
        f = rng.uniform(4, 8)
        sig += 0.015 * np.outer(rng.normal(0, 1, 12), np.sin(2 * np.pi * f * t + rng.uniform(0, 6.3)))
    wander = p.wander_mv * np.sin(2 * np.pi * rng.uniform(0.1, 0.3) * t + rng.uniform(0, 6.3))
    sig += wander[None, :] * rng.uniform(0.5, 1.0, (12, 1)) + rng.normal(0, p.noise_mv, (12, n))
    rr = np.diff(onsets)
    truth = {"params": asdict(p), "qrs_onsets_s": np.array(onsets), "hr_bpm": 60.0 / float(np.mean(rr)),
             "pr_ms": None if p.af else p.pr_ms, "qrs_ms": p.qrs_ms, "qt_ms": p.qt_ms,
             "qrs_axis_deg": p.qrs_axis_deg}
    return sig, truth


CONDITIONS = ("normal", "brady", "tachy", "af", "avb1", "short_pr", "rbbb", "lbbb", "lad", "rad",
              "lvh", "low_voltage", "long_qt", "ste_inferior", "ste_lateral", "ste_anterior")


def sample_params(rng: np.random.Generator, max_conditions: int = 2) -> tuple[ECGParams, tuple[str, ...]]:
    """Draw a record's generator parameters: up to ``max_conditions`` pathologies, some near a threshold.

    The returned conditions are what the generator was *asked* for; the labels of the corpus come from
    the protocol applied to the *measured* signal (brief §7, trap i).
    """
    k = int(rng.integers(0, max_conditions + 1))
    conds = tuple(sorted(set(rng.choice(CONDITIONS[1:], size=k, replace=True)))) if k else ("normal",)
    if "af" in conds:
        conds = tuple(c for c in conds if c not in ("avb1", "short_pr", "brady", "tachy"))
    if "rbbb" in conds and "lbbb" in conds:
        conds = tuple(c for c in conds if c != "lbbb")
    if "low_voltage" in conds:
        conds = tuple(c for c in conds if not c.startswith("ste_") and c != "lvh")
    if "avb1" in conds and "long_qt" in conds:
        conds = tuple(c for c in conds if c != "long_qt")
    if "lad" in conds and "rad" in conds:
        conds = tuple(c for c in conds if c != "rad")
    u = rng.uniform
    near = rng.random() < 0.3  # borderline records near a protocol threshold
    hr = u(62, 95)
    if "brady" in conds:
        hr = u(54, 59.5) if near else u(40, 58)
    if "tachy" in conds:
        hr = u(100.5, 106) if near else u(102, 120)
    if "af" in conds:
        hr = u(70, 110)
    pr = u(130, 190)
    if "avb1" in conds:
        pr = u(204, 215) if near else u(210, 280)
        hr = min(hr, 72.0)
    if "short_pr" in conds:
        pr = u(96, 114)
    qrs = u(70, 92)
    bbb = "none"
    if "rbbb" in conds or "lbbb" in conds:
        qrs = u(126, 135) if near else u(130, 170)
        bbb = "right" if "rbbb" in conds else "left"
    axis = u(0, 75)
    if "lad" in conds:
        axis = u(-70, -40)
    if "rad" in conds:
        axis = u(100, 150)
    amp = u(0.9, 1.3)
    if "lvh" in conds:
        amp = u(2.3, 3.0)
    if "low_voltage" in conds:
        amp = u(0.25, 0.32)
    rr = 60.0 / hr
    qtc = u(470, 520) if "long_qt" in conds else u(370, 425)
    qt = max(qtc * math.sqrt(rr), qrs + 150)
    st = {}
    for terr in ("inferior", "lateral", "anterior"):
        if f"ste_{terr}" in conds:
            st[terr] = u(0.25, 0.4)
    params = ECGParams(hr_bpm=hr, af="af" in conds, pr_ms=pr, qrs_ms=qrs, qt_ms=qt, qrs_axis_deg=axis,
                       qrs_amp_mv=amp, bbb=bbb, st_mv=st, t_amp_mv=0.3 * min(amp, 1.5))
    return params, conds


def with_noise(params: ECGParams, noise_mv: float) -> ECGParams:
    return replace(params, noise_mv=noise_mv)

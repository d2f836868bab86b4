"""ECG images: a raster for the image branch of the model, and a matplotlib 12-lead paper plot."""

from __future__ import annotations

import numpy as np

from .measure import validate_record
from .protocol import LEADS


def render_ecg_image(sig, fs: float, *, px_per_s: float = 25.0, px_per_lead: int = 10,
                     mv_per_px: float = 0.25) -> np.ndarray:
    """Rasterise a record as a 12x1-layout image (leads stacked), shape (12 * px_per_lead, width), in [0, 1].

    Only waveforms are drawn (no text or numbers: brief §7 trap ii). Each column holds, per lead, the
    pixels between the min and max of the trace inside that column (a line drawing at low resolution).
    """
    x = validate_record(sig, fs)
    n = x.shape[1]
    width = max(1, int(round(n / fs * px_per_s)))
    cols = np.minimum((np.arange(n) * width) // n, width - 1)
    img = np.zeros((12 * px_per_lead, width), dtype=np.float32)
    mid = px_per_lead // 2
    lo = np.full((12, width), np.inf)
    hi = np.full((12, width), -np.inf)
    np.minimum.at(lo.T, cols, x.T)
    np.maximum.at(hi.T, cols, x.T)
    for ld in range(12):
        r0 = np.clip(mid - np.round(hi[ld] / mv_per_px).astype(int), 0, px_per_lead - 1)
        r1 = np.clip(mid - np.round(lo[ld] / mv_per_px).astype(int), 0, px_per_lead - 1)
        for c in range(width):
            img[ld * px_per_lead + r0[c]:ld * px_per_lead + r1[c] + 1, c] = 1.0
    return img


def plot_ecg12(sig, fs: float, title: str = ""):
    """Standard 3x4 layout (2.5 s per column) + lead-II rhythm strip on 1-mm/5-mm paper grid."""
    from icml26.harness.plots import pyplot

    x = validate_record(sig, fs)
    plt = pyplot()
    seg = int(round(2.5 * fs))
    fig, ax = plt.subplots(figsize=(11, 6))
    layout = [["I", "aVR", "V1", "V4"], ["II", "aVL", "V2", "V5"], ["III", "aVF", "V3", "V6"]]
    for r, row in enumerate(layout):
        for cidx, lead in enumerate(row):
            s = x[LEADS.index(lead), cidx * seg:(cidx + 1) * seg]
            t = np.arange(s.size) / fs + cidx * 2.5
            ax.plot(t, s - 3.0 * r, color="k", lw=0.7)
            ax.text(cidx * 2.5 + 0.05, -3.0 * r + 0.9, lead, fontsize=8)
    ii = x[LEADS.index("II"), :4 * seg]
    ax.plot(np.arange(ii.size) / fs, ii - 9.0, color="k", lw=0.7)
    ax.text(0.05, -8.1, "II", fontsize=8)
    ax.set_xticks(np.arange(0, 10.01, 0.2), minor=False)
    ax.set_yticks(np.arange(-10.5, 1.6, 0.5))
    ax.grid(True, color="#f4a6a6", lw=0.5)
    ax.set_xticklabels([])
    ax.set_yticklabels([])
    ax.set_xlim(0, 10)
    ax.set_title(title or "simulated 12-lead ECG (25 mm/s, 10 mm/mV grid: 0.2 s x 0.5 mV)")
    return fig

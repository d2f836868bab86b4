"""Input checks shared by the transport_kl modules: clear ``ValueError``/``TypeError`` on bad input."""

from __future__ import annotations

import numpy as np

from icml26.core.validation import check_positive as _check_positive

_SYM_RTOL = 1e-8


def as_matrix(x, name: str, *, shape: tuple[int | None, int | None] = (None, None)) -> np.ndarray:
    """Return ``x`` as a finite float64 2-D array, checking its shape."""
    if isinstance(x, str | bytes) or x is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    raw = np.asarray(x)
    if np.iscomplexobj(raw):
        raise TypeError(f"{name} must be real-valued, got dtype {raw.dtype}")
    if raw.dtype == object or raw.dtype.kind in "USV":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {raw.dtype}")
    try:
        arr = raw.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers") from None
    if arr.ndim == 0 and shape == (1, 1):
        arr = arr.reshape(1, 1)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {arr.shape}")
    for axis, want in enumerate(shape):
        if want is not None and arr.shape[axis] != want:
            raise ValueError(f"{name} has shape {arr.shape}, expected {shape} (None = any)")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def as_vector(x, name: str, n: int | None = None) -> np.ndarray:
    """Return ``x`` as a finite float64 1-D array of length ``n``."""
    if isinstance(x, str | bytes) or x is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(x).__name__}")
    raw = np.asarray(x)
    if np.iscomplexobj(raw):
        raise TypeError(f"{name} must be real-valued, got dtype {raw.dtype}")
    if raw.dtype == object or raw.dtype.kind in "USV":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {raw.dtype}")
    try:
        arr = raw.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {n}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def check_symmetric(S: np.ndarray, name: str) -> np.ndarray:
    """Raise unless ``S`` is square and symmetric (relative tolerance 1e-8); return ``(S+S^T)/2``."""
    if S.shape[0] != S.shape[1]:
        raise ValueError(f"{name} must be square, got shape {S.shape}")
    scale = float(np.max(np.abs(S))) if S.size else 0.0  # relative tolerance, no floor
    if not np.allclose(S, S.T, rtol=0.0, atol=_SYM_RTOL * scale):
        raise ValueError(f"{name} is not symmetric (max |S - S^T| = {np.max(np.abs(S - S.T)):.3g})")
    return 0.5 * (S + S.T)


def as_psd(x, name: str, n: int | None = None, *, strict: bool = False) -> np.ndarray:
    """Return a symmetric positive semi-definite (``strict``: definite) float64 matrix.

    Raises ``ValueError`` naming the problem: shape, NaN, asymmetry, a negative eigenvalue or
    (``strict``) a zero eigenvalue.
    """
    S = as_matrix(x, name, shape=(n, n) if n is not None else (None, None))
    S = check_symmetric(S, name)
    w = np.linalg.eigvalsh(S)
    scale = max(float(np.max(np.abs(w))), 1e-300)
    if w[0] < -1e-12 * scale:
        raise ValueError(f"{name} is not positive semi-definite (smallest eigenvalue {w[0]:.3g})")
    if strict and w[0] <= 1e-14 * scale:
        raise ValueError(f"{name} is not positive definite (smallest eigenvalue {w[0]:.3g})")
    return S


def is_singular(S: np.ndarray) -> bool:
    """True when the PSD matrix ``S`` has an eigenvalue <= 1e-14 x its largest (or is zero)."""
    w = np.linalg.eigvalsh(S)
    return bool(w[-1] <= 0.0 or w[0] <= 1e-14 * w[-1])


def check_gamma(gamma) -> float:
    """Discount factor in (0, 1]."""
    if isinstance(gamma, bool) or not isinstance(gamma, int | float | np.floating | np.integer):
        raise TypeError(f"gamma must be a real number, got {type(gamma).__name__}")
    g = float(gamma)
    if not (0.0 < g <= 1.0) or not np.isfinite(g):
        raise ValueError(f"gamma must lie in (0, 1], got {gamma}")
    return g


def check_positive(x, name: str, *, allow_zero: bool = False) -> float:
    """A finite real number > 0 (``allow_zero``: >= 0)."""
    return _check_positive(x, name, allow_zero=allow_zero)

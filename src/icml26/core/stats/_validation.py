"""Input checks shared by the statistics core (clear ``ValueError``/``TypeError`` on bad input)."""

from __future__ import annotations

import numbers

import numpy as np

from icml26.core.validation import check_positive_int  # noqa: F401  (re-exported)


def as_samples(X, name: str = "X", *, min_samples: int = 2) -> np.ndarray:
    """Return ``X`` as a finite float64 array of shape (n, d).

    A 1-D input of shape (n,) is read as n one-dimensional samples.

    Raises
    ------
    TypeError
        If ``X`` is not numeric.
    ValueError
        If ``X`` has more than 2 dimensions, fewer than ``min_samples`` rows, or non-finite values.
    """
    arr = np.asarray(X)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real-valued, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n, d), got shape {arr.shape}")
    if arr.shape[0] < min_samples:
        raise ValueError(f"{name} needs at least {min_samples} samples, got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one feature, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def as_sample_pair(X, Y, *, min_samples: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Validate two samples and check that they have the same number of features."""
    X = as_samples(X, "X", min_samples=min_samples)
    Y = as_samples(Y, "Y", min_samples=min_samples)
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X and Y must have the same number of features, got {X.shape[1]} and {Y.shape[1]}")
    return X, Y


def check_probability(value, name: str = "alpha", *, low_open: bool = True, high_open: bool = True) -> float:
    """Check that ``value`` is a real number in (0, 1) (bounds open or closed as asked)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    lo_ok = value > 0 if low_open else value >= 0
    hi_ok = value < 1 if high_open else value <= 1
    if not (np.isfinite(value) and lo_ok and hi_ok):
        lo, hi = ("(" if low_open else "["), (")" if high_open else "]")
        raise ValueError(f"{name} must lie in {lo}0, 1{hi}, got {value}")
    return value


def check_square_gram(K, name: str = "K") -> np.ndarray:
    """Check a square, finite Gram matrix."""
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError(f"{name} contains NaN or inf")
    return K

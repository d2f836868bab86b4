"""Input validation shared by the lean_slt modules (clear errors instead of silent wrong answers)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float, raising unless it is a real number > 0."""
    v = _real(name, value)
    if not (v > 0) or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def nonnegative(name: str, value: Any) -> float:
    """Return ``value`` as a float, raising unless it is a finite real number >= 0."""
    v = _real(name, value)
    if not (v >= 0) or math.isinf(v):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """Return ``value`` as an int, raising unless it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def finite_array(name: str, value: Any, *, ndim: int | None = None, nonempty: bool = True) -> np.ndarray:
    """Return ``value`` as a float array, raising on wrong dtype, shape, emptiness or NaN/inf."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if nonempty and arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must not be NaN")
    return v

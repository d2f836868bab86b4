"""Input validation shared by the lean_slt modules (clear errors instead of silent wrong answers)."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.core.validation import check_positive, check_positive_int


def positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float, raising unless it is a real number > 0."""
    return check_positive(value, name, allow_inf=allow_inf)


def nonnegative(name: str, value: Any) -> float:
    """Return ``value`` as a float, raising unless it is a finite real number >= 0."""
    return check_positive(value, name, allow_zero=True)


def positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """Return ``value`` as an int, raising unless it is an integer >= ``minimum``."""
    return check_positive_int(value, name, minimum=minimum)


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

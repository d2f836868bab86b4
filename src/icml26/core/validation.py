"""Argument checks shared by the cores and papers: clear errors instead of silent wrong answers."""

from __future__ import annotations

import math
import numbers
from typing import Any


def check_real(value: Any, name: str) -> float:
    """``value`` as a float; ``TypeError`` unless it is a real number (bools are not), ``ValueError`` on NaN."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must not be NaN")
    return v


def check_positive(value: Any, name: str, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """``value`` as a float; ``ValueError`` unless it is > 0 (``allow_zero``: >= 0) and finite
    (``allow_inf``: +inf allowed)."""
    v = check_real(value, name)
    if v < 0 or (v == 0 and not allow_zero) or (math.isinf(v) and not allow_inf):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return v


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """``value`` as an int; ``TypeError`` unless an integer, ``ValueError`` unless >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)

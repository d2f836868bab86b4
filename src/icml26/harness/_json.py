"""Conversion of measured values to plain JSON (the result files are written with allow_nan=False)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Plain JSON types: numpy arrays and scalars unwrapped, non-finite floats and other objects as repr."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, int | str | bool) or value is None:
        return value
    return repr(value)

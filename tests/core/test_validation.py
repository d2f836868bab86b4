"""Shared argument checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml26.core.validation import check_positive, check_positive_int, check_real


def test_check_real_accepts_numbers_and_rejects_bools_strings_nan():
    assert check_real(np.float32(1.5), "x") == 1.5 and check_real(3, "x") == 3.0
    for bad in (True, "1", None, [1.0]):
        with pytest.raises(TypeError, match="x must be a real number"):
            check_real(bad, "x")
    with pytest.raises(ValueError, match="NaN"):
        check_real(math.nan, "x")


def test_check_positive_bounds():
    assert check_positive(2, "x") == 2.0
    assert check_positive(0.0, "x", allow_zero=True) == 0.0
    assert check_positive(math.inf, "x", allow_inf=True) == math.inf
    for bad, kw in ((0.0, {}), (-1.0, {"allow_zero": True}), (math.inf, {})):
        with pytest.raises(ValueError, match="x must be a finite number"):
            check_positive(bad, "x", **kw)


def test_check_positive_int():
    assert check_positive_int(np.int64(3), "n") == 3
    with pytest.raises(TypeError):
        check_positive_int(3.0, "n")
    with pytest.raises(TypeError):
        check_positive_int(True, "n")
    with pytest.raises(ValueError, match=">= 2"):
        check_positive_int(1, "n", minimum=2)

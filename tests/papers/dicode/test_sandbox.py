"""The level sandbox: static rejections, subprocess limits, and a valid level accepted."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.papers.dicode import compile_levels, seed_levels, static_check, validate_level_code

GOOD = '''
class Level(BaseLevel):
    relevant_achievements = ("collect_wood",)
    completed_achievements = ()

    def generate_world(self, rng, builder):
        builder.place_near("tree", 3, 1, 3)
        return builder.build()
'''


def _with(body: str) -> str:
    return GOOD.replace('builder.place_near("tree", 3, 1, 3)', body)


@pytest.mark.parametrize("src, reason", [
    ("import os\n" + GOOD, "import is not allowed"),
    ("from os import path\n" + GOOD, "import is not allowed"),
    (_with('open("/etc/passwd").read()'), "name 'open' is not allowed"),
    (_with('__import__("os")'), "name '__import__' is not allowed"),
    (_with("x = builder.__class__"), "private attribute"),
    (_with('eval("1")'), "name 'eval' is not allowed"),
    ("class Level(:\n    pass", "syntax error"),
    ("x = 1\n", "must define `class Level"),
])
def test_static_rejections_name_the_reason(src, reason):
    ok, why = static_check(src)
    assert not ok and reason in why


def test_subprocess_limits_and_valid_level_in_one_batch():
    sources = [
        GOOD,
        _with("while True:\n            pass"),                       # infinite loop
        _with("x = [0] * (10 ** 10)"),                                 # huge allocation
        _with("return None"),                                          # malformed world
        GOOD.replace('"collect_wood"', '"fly"'),                       # unknown achievement
        _with('raise ValueError("boom")'),                             # crash
        "import os\n" + GOOD,                                          # static rejection
    ]
    res = compile_levels(sources, n_worlds=3, size=10, timeout_s=1.0, memory_mb=768)
    assert len(res) == len(sources)
    assert res[0].ok and res[0].bank.blocks.shape == (3, 10, 10)
    assert res[0].bank.relevant.sum() == 1
    assert not res[1].ok and "timeout" in res[1].reason
    assert not res[2].ok and "memory limit" in res[2].reason
    assert not res[3].ok and "generate_world must return" in res[3].reason
    assert not res[4].ok and "unknown achievement 'fly'" in res[4].reason
    assert not res[5].ok and "boom" in res[5].reason
    assert not res[6].ok and "import is not allowed" in res[6].reason


def test_seed_levels_compile_deterministically():
    a = compile_levels(seed_levels(np.random.default_rng(0)), n_worlds=2, size=10, seed=3)
    b = compile_levels(seed_levels(np.random.default_rng(0)), n_worlds=2, size=10, seed=3)
    assert all(r.ok for r in a), [r.reason for r in a]
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.bank.blocks, y.bank.blocks)


def test_validate_level_code_and_bad_input():
    ok, why = validate_level_code(123)  # type: ignore[arg-type]
    assert not ok and "must be a str" in why

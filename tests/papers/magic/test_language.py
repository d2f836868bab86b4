"""The intent language: operators preserve intent, the judge knows ground truth, a shallow reader
does not; bad inputs give clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.papers.magic import (
    GrammarError,
    IntentLanguage,
    RuleJudge,
    ShallowReader,
    parse_program,
)
from icml26.papers.magic.language import OPERATORS, REFUSE, tokens

LANG = IntentLanguage(seed=3)
JUDGE = RuleJudge(LANG)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.sampled_from(OPERATORS), min_size=0, max_size=3))
def test_operators_preserve_intent_and_invert(s, program):
    seed = LANG.sample_seeds(1, np.random.default_rng(s))[0]
    text = LANG.execute(program, seed.text)
    assert LANG.parse(text) == (tuple(program), seed.text)
    assert JUDGE.prompt_unsafe(text) == seed.harmful


def test_judge_agrees_with_ground_truth_on_every_program():
    seeds = LANG.sample_seeds(40, np.random.default_rng(0))
    progs = [()] + LANG.programs(1) + LANG.programs(2)
    agree = [JUDGE.prompt_unsafe(LANG.execute(p, s.text)) == s.harmful for s in seeds for p in progs]
    assert all(agree)


def test_shallow_reader_knows_vanilla_but_is_fooled_by_every_operator():
    seeds = LANG.sample_seeds(400, np.random.default_rng(1))
    reader = ShallowReader()
    assert all(reader.prompt_unsafe(s.text) == s.harmful for s in seeds)
    for op in OPERATORS:
        harmful = [s for s in seeds if s.harmful]
        missed = np.mean([not reader.prompt_unsafe(LANG.execute((op,), s.text)) for s in harmful])
        assert missed > 0.5, (op, missed)  # most harmful rewrites look benign on the surface


def test_encoding_shift_4_makes_harmful_markers_look_benign():
    seed = LANG.sample_seeds(50, np.random.default_rng(2))
    for s in seed:
        if s.harmful:
            assert LANG.execute(("<E1>",), s.text)[4] in "efgh"


def test_judge_response_semantics():
    s = "aijkl"
    assert JUDGE.judge(s, REFUSE) == {"prompt_unsafe": True, "response_unsafe": False, "refused": True}
    assert JUDGE.judge(s, "<CMP>i") == {"prompt_unsafe": True, "response_unsafe": True, "refused": False}
    assert JUDGE.judge("eijkl", "<CMP>i")["response_unsafe"] is False


def test_parse_program():
    assert parse_program("<E1><S>", LANG) == ("<E1>", "<S>")
    assert parse_program("", LANG) is None
    assert parse_program("<E1>x", LANG) is None
    assert parse_program("<E1><E1><E1><E1>", LANG) is None  # deeper than max_depth
    assert parse_program("<E1", LANG) is None


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(GrammarError, match="not a seed"):
        JUDGE.prompt_unsafe("zz")
    with pytest.raises(GrammarError, match="separator"):
        LANG.parse("<S>abcdef")
    with pytest.raises(GrammarError, match="persona"):
        LANG.parse("<R1>aaaijkl")
    with pytest.raises(GrammarError, match="unterminated"):
        tokens("<E1")
    with pytest.raises(ValueError, match="unknown operator"):
        LANG.apply_op("<X>", "aijkl")
    with pytest.raises(ValueError, match="max_depth"):
        LANG.execute(("<E1>",) * 4, "aijkl")
    with pytest.raises(ValueError, match="n_content"):
        IntentLanguage(n_content=1)
    with pytest.raises(ValueError, match="operators"):
        IntentLanguage(operators=("<E1>", "<E1>"))
    with pytest.raises(ValueError, match="harmful_frac"):
        LANG.sample_seeds(3, np.random.default_rng(0), harmful_frac=2.0)
    with pytest.raises(TypeError, match="string"):
        JUDGE.judge("aijkl", None)

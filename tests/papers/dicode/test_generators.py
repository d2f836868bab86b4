"""Generators: AST edits, the dreamer's decision table, dreamed levels compile, the LLM loop."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.core.llm import ScriptedChat
from icml26.papers.dicode import (
    Feedback,
    LLMGenerator,
    ProgrammaticDreamer,
    RandomCodeMutator,
    choose_operator,
    compile_levels,
    edit_program,
    random_level,
    read_spec,
    scaffold,
    seed_levels,
)
from icml26.papers.dicode.generators import frontier
from icml26.papers.dicode.world import PREREQS, ancestors


def test_read_and_edit_roundtrip_keeps_other_code():
    src = seed_levels()[0].replace("        return builder.build()",
                                   "        builder.scatter('water', 1)\n        return builder.build()")
    spec = read_spec(src)
    assert spec["relevant_achievements"] == ("collect_wood",)
    new = edit_program(src, {**spec, "relevant_achievements": ("place_table",),
                             "inventory": {"wood": 2}}, doc="edited")
    assert read_spec(new)["relevant_achievements"] == ("place_table",)
    assert read_spec(new)["inventory"] == {"wood": 2}
    assert "scatter('water', 1)" in new and '"""edited"""' in new


def test_edit_inserts_missing_fields():
    src = "class Level(BaseLevel):\n    relevant_achievements = ('eat_cow',)\n"
    out = edit_program(src, {"settings": {"max_steps": 50.0}})
    assert read_spec(out)["settings"] == {"max_steps": 50.0}


def test_scaffold_compresses_prerequisites():
    spec = scaffold(["collect_iron"], ["make_stone_pickaxe"], np.random.default_rng(0))
    assert set(spec["completed_achievements"]) == ancestors("make_stone_pickaxe") | {"make_stone_pickaxe"}
    assert spec["inventory"]["pickaxe"] == 2
    assert any(p[0] == "iron" for p in spec["placements"])
    assert any(p[0] == "table" for p in spec["placements"])


@pytest.mark.parametrize("sr, op", [(0.9, "expand"), (0.6, "expand"), (0.3, "persist"),
                                    (0.0, "simplify"), (-1.0, "simplify")])
def test_decision_table(sr, op):
    spec = read_spec(seed_levels()[1])
    assert choose_operator(spec, Feedback(sr=sr)) == op


def test_vary_when_strong_locally_but_weak_globally():
    spec = read_spec(seed_levels()[1])  # place_table
    fb = Feedback(sr=0.95, per_achievement={"place_table": 1.0}, global_profile={"place_table": 0.0})
    assert choose_operator(spec, fb) == "vary"


def test_expand_adds_one_frontier_dependency():
    d = ProgrammaticDreamer(0)
    parent = seed_levels()[1]
    child, op = d.propose(parent, Feedback(sr=0.9))
    spec, pspec = read_spec(child), read_spec(parent)
    assert op == "expand"
    (target,) = spec["relevant_achievements"]
    assert target in frontier(pspec)
    assert set(PREREQS[target]) <= set(spec["completed_achievements"])


def test_dreamed_and_random_levels_all_compile():
    rng = np.random.default_rng(0)
    dreamer, mutator = ProgrammaticDreamer(1), RandomCodeMutator(2)
    pool = seed_levels(rng)
    codes = []
    for _ in range(50):
        parent = pool[int(rng.integers(len(pool)))]
        fb = Feedback(sr=float(rng.uniform(-1, 1)))
        child, _ = dreamer.propose(parent, fb) if rng.random() < 0.5 else mutator.propose(parent)
        pool.append(child)
        codes.append(child)
    codes += [random_level(rng) for _ in range(10)]
    res = compile_levels(codes, n_worlds=2, size=10)
    assert all(r.ok for r in res), [r.reason for r in res if not r.ok]


PARENT = seed_levels()[0]
FIXED = PARENT.replace("('collect_wood',)", "('place_table',)")
BROKEN = FIXED.replace("class Level(BaseLevel):", "class Level(BaseLevel)")


def _designer_then_coder(messages):
    last = messages[-1]["content"]
    if last.startswith("DESIGN"):
        return "Child: place a crafting table next to the trees (EXPAND)."
    if last.startswith("CODE"):
        return f"```python\n{BROKEN}```"
    if last.startswith("FIX"):
        return f"Here you go:\n```python\n{FIXED}```"
    raise AssertionError(last)


def test_llm_loop_retries_with_the_error_scripted():
    chat = ScriptedChat(_designer_then_coder)
    gen = LLMGenerator(chat, compile_kwargs={"n_worlds": 2, "size": 10})
    code, desc = gen.propose(PARENT, Feedback(sr=0.9, global_profile={"collect_wood": 0.8}))
    assert code is not None and read_spec(code)["relevant_achievements"] == ("place_table",)
    assert "crafting table" in desc
    assert [e["ok"] for e in gen.log] == [False, True]
    fix_prompt = chat.history[-1][-1]["content"]
    assert fix_prompt.startswith("FIX") and "syntax error" in fix_prompt
    design_prompt = chat.history[0][-1]["content"]
    assert "Parent success rate: 0.90" in design_prompt and "collect_wood=0.80" in design_prompt


def test_llm_loop_gives_up_after_max_retries():
    chat = ScriptedChat(lambda m: "design" if m[-1]["content"].startswith("DESIGN") else "import os")
    gen = LLMGenerator(chat, max_retries=2, compile_kwargs={"n_worlds": 2, "size": 10})
    code, _ = gen.propose(PARENT, Feedback())
    assert code is None and len(gen.log) == 3
    assert all("import is not allowed" in e["reason"] for e in gen.log)


def test_llm_loop_over_a_fake_openai_server():
    pytest.importorskip("httpx")
    from icml26.core.llm import OpenAICompatible
    from tests.core.llm.fake_server import FakeServer

    with FakeServer(reply_fn=_designer_then_coder) as server:
        chat = OpenAICompatible(server.base_url, "fake-model", timeout=10.0, backoff_s=0.01)
        gen = LLMGenerator(chat, compile_kwargs={"n_worlds": 2, "size": 10})
        code, _ = gen.propose(PARENT, Feedback(sr=0.8))
        assert code is not None and server.n_chat_requests == 3


def test_experiment_uses_the_llm_only_when_a_server_is_named(monkeypatch):
    from icml26.core.llm import ENV_BASE_URL, OpenAICompatible
    from icml26.papers.dicode.experiment import Config, _llm_generator

    cur = Config.smoke().curriculum()
    monkeypatch.delenv(ENV_BASE_URL, raising=False)
    assert _llm_generator(cur, 0) is None
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:9/v1")
    gen = _llm_generator(cur, 0)
    assert isinstance(gen, LLMGenerator) and isinstance(gen.chat, OpenAICompatible)


@pytest.mark.parametrize("make", [lambda: ProgrammaticDreamer(3), lambda: RandomCodeMutator(3)])
def test_a_replicated_parent_gets_distinct_children(make):
    """Issue 44: four copies of one parent gave `collect_drink x2, eat_cow x2`. With the keys of
    the levels that exist as `avoid`, every child is new and distinct from its siblings."""
    from icml26.papers.dicode.generators import spec_key

    gen = make()
    parent = seed_levels()[2]  # drink water and eat a cow
    seen = {spec_key(c) for c in seed_levels()}
    keys = []
    for _ in range(4):
        code, _ = gen.propose(parent, Feedback(sr=0.9), avoid=seen)
        assert code is not None
        keys.append(spec_key(code))
        seen.add(keys[-1])
    assert len(set(keys)) == 4
    assert not set(keys) & {spec_key(c) for c in seed_levels()}


def test_no_distinct_child_is_reported_not_duplicated():
    gen = ProgrammaticDreamer(0, tries=1)
    parent = seed_levels()[0]
    everything = _Everything()
    code, op = gen.propose(parent, Feedback(sr=0.9), avoid=everything)
    assert code is None and op == "expand"


class _Everything(set):
    def __contains__(self, key):  # every spec already exists
        return True

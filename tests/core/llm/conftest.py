"""Fixtures shared by the core.llm tests."""

from __future__ import annotations

import sys
import types

import pytest

from icml26.core.llm import ScriptedChat, resolve_chat_model
from icml26.harness.registry import PAPERS, PaperInfo


@pytest.fixture
def llm_paper(monkeypatch):
    """A registered toy paper whose experiment calls a chat model through the resolver."""
    from icml26.harness.config import ExperimentConfig

    mod = types.ModuleType("icml26_test_llm_paper.experiment")

    class Config(ExperimentConfig):
        @classmethod
        def smoke(cls):
            return cls(profile="smoke", seeds=(0, 1))

        quick = full = smoke

    mod.Config = Config
    mod.CLAIMS = []

    def run(config, seed):
        chat = resolve_chat_model(ScriptedChat(lambda m: "abcd" * 3, name="toy"))
        outs = chat.complete_many([[{"role": "user", "content": f"q{seed}{i}"}] for i in range(3)])
        return {"method": {"chars": float(sum(len(o.text) for o in outs))}}

    mod.run = run
    pkg = types.ModuleType("icml26_test_llm_paper")
    pkg.__path__ = []
    monkeypatch.setitem(sys.modules, "icml26_test_llm_paper", pkg)
    monkeypatch.setitem(sys.modules, "icml26_test_llm_paper.experiment", mod)
    info = PaperInfo(99, "toy_llm", "Toy", "toy", None, None, module="icml26_test_llm_paper")
    monkeypatch.setitem(PAPERS, "toy_llm", info)
    monkeypatch.setattr(PaperInfo, "implemented", property(lambda self: True))
    return info

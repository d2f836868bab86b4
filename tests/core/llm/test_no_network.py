"""The default configuration opens no socket; the runner records llm_usage; the CLI flags."""

from __future__ import annotations

import json
import os
import socket

import pytest

from icml26.core.llm import ENV_BASE_URL, ENV_CACHE, ENV_MODEL, ScriptedChat, resolve_chat_model


def clear_llm_env(monkeypatch):
    """Unset the opt-in variables and restore them after the test (the CLI sets them)."""
    for var in (ENV_BASE_URL, ENV_MODEL, ENV_CACHE):
        monkeypatch.setenv(var, "")  # recorded, so that teardown restores the original state
        monkeypatch.delenv(var)


@pytest.fixture
def no_sockets(monkeypatch):
    attempts = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError(f"test: network access to {address!r} is forbidden")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    clear_llm_env(monkeypatch)
    return attempts


def test_a_paper_smoke_run_opens_no_socket(no_sockets, tmp_path):
    """verbalized_bp puts chat models in every role; by default they are offline and local."""
    from icml26.harness.runner import run_paper

    result = run_paper("verbalized_bp", "smoke", seeds=[0], out=tmp_path,
                       overrides={"n_iters": "2", "n_train": "20", "n_eval": "50"})
    assert result["status"] == "ok", result.get("error")
    assert no_sockets == []
    usage = result["llm_usage"]
    assert usage["scripted:local_proposer"]["calls"] == 6 * 2  # 6 loop arms x 2 iterations
    assert usage["scripted:template_sender:letter"]["calls"] > 0
    assert all(stats["requests"] == 0 for stats in usage.values())  # no HTTP request at all
    assert not any(k.startswith("openai_compatible") for k in usage)


def test_default_resolution_opens_no_socket(no_sockets):
    offline = ScriptedChat(lambda m: "offline")
    chat = resolve_chat_model(lambda: offline)  # a factory is called only when offline
    assert chat is offline and chat.complete([{"role": "user", "content": "x"}]).text == "offline"
    assert no_sockets == []


def test_runner_writes_llm_usage(llm_paper, no_sockets, tmp_path):
    from icml26.harness.runner import run_paper

    result = run_paper("toy_llm", "smoke", out=tmp_path)
    assert result["status"] == "ok", result.get("error")
    usage = result["llm_usage"]["scripted:toy"]
    assert usage["calls"] == 6 and usage["completion_tokens"] == 6 * 3  # 12 chars = 3 tokens
    saved = json.loads((tmp_path / "toy_llm" / "smoke" / "latest.json").read_text())
    assert saved["llm_usage"] == result["llm_usage"]


def test_cli_llm_flags_reach_the_paper(llm_paper, tmp_path, monkeypatch):
    pytest.importorskip("httpx")
    from icml26.cli import main

    from .fake_server import FakeServer

    clear_llm_env(monkeypatch)
    with FakeServer(models=("served",)) as server:
        cache = tmp_path / "cache"
        argv = ["run", "toy_llm", "--profile", "smoke", "--out", str(tmp_path / "res"),
                "--no-progress", "--llm", server.base_url, "--llm-model", "served",
                "--llm-cache", str(cache)]
        assert main(argv) == 0
        chats = [r for r in server.requests if r["path"].endswith("/chat/completions")]
        assert len(chats) == 6 and all(r["model"] == "served" for r in chats)
        # the pre-run check's one GET /models, before any chat request
        assert server.requests[0] == {"path": "/v1/models"}
        saved = json.loads((tmp_path / "res" / "toy_llm" / "smoke" / "latest.json").read_text())
        assert saved["llm_usage"]["openai_compatible:served"]["requests"] == 6
        assert saved["metrics"]["method"]["chars"] == [3 * len("echo: q00")] * 2
        assert os.environ[ENV_BASE_URL] == server.base_url  # restored by clear_llm_env
        assert main(argv) == 0  # the rerun is served from the cache
        assert server.n_chat_requests == 6
        saved = json.loads((tmp_path / "res" / "toy_llm" / "smoke" / "latest.json").read_text())
        assert saved["llm_usage"]["openai_compatible:served"]["cache_hits"] == 6

"""core.llm under failure and sharing: a batch fails fast, the in-flight bound holds across
threads, a body that is not a completion raises, the API key is never written anywhere, and the
cache keeps two servers apart. Sockets: 127.0.0.1 only."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("httpx")

from icml26.core.llm import (  # noqa: E402
    LLMConnectionError,
    LLMHTTPError,
    LLMResponseError,
    OpenAICompatible,
    ResponseCache,
    track_usage,
)

from .fake_server import FakeServer  # noqa: E402
from .test_no_network import clear_llm_env  # noqa: E402

HI = [{"role": "user", "content": "hi"}]
KEY = "sk-icml26-test-SECRET-9f3a1c"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client(server: FakeServer, **kw) -> OpenAICompatible:
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("timeout", 5.0)
    kw.setdefault("model", "fake-model")
    return OpenAICompatible(server.base_url, **kw)


def files_containing(folder: Path, needle: str) -> list[Path]:
    return [p for p in Path(folder).rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


# -- fail fast -------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["m", None])  # None: every worker needs model discovery too
def test_complete_many_fails_fast_on_a_dead_server(model):
    """8 calls, 2 at a time, each giving up after 4 attempts (0.3+0.6+1.2 s of back-off):
    waiting for every call would take 4 rounds (~8.4 s); the batch ends with the first."""
    chat = OpenAICompatible(f"http://127.0.0.1:{closed_port()}/v1", model=model, max_retries=3,
                            backoff_s=0.3, max_concurrency=2, timeout=2.0)
    convs = [[{"role": "user", "content": f"q{i}"}] for i in range(8)]
    t0 = time.monotonic()
    with pytest.raises(LLMConnectionError, match="cannot reach the LLM server"):
        chat.complete_many(convs)
    elapsed = time.monotonic() - t0
    assert 2.0 < elapsed < 5.0, elapsed  # one call's retries, not the batch's


def test_complete_many_cancels_the_queued_calls():
    with FakeServer() as server, track_usage() as usage:
        chat = client(server, max_concurrency=2)
        convs = [[{"role": "user", "content": "slow:0.2"}], [{"role": "user", "content": "bad-request"}],
                 *[[{"role": "user", "content": f"slow:0.2 {i}"}] for i in range(18)]]
        t0 = time.monotonic()
        with pytest.raises(LLMHTTPError, match="HTTP 400"):
            chat.complete_many(convs)
        assert time.monotonic() - t0 < 1.5  # not 10 rounds of 0.2 s
        time.sleep(0.3)
        assert server.n_chat_requests <= 4  # the 18 queued calls were never sent
        assert usage.totals().errors >= 1


def test_a_batch_that_succeeds_is_unchanged():
    with FakeServer(delay_s=0.05) as server:
        outs = client(server, max_concurrency=3).complete_many(
            [[{"role": "user", "content": f"q{i}"}] for i in range(7)])
        assert [o.text for o in outs] == [f"echo: q{i}" for i in range(7)]


def test_a_single_call_still_retries_in_full():
    """Outside a failed batch nothing is cut short: a lone call uses all its retries."""
    with FakeServer() as server:
        server.failures.extend([503, 503])
        assert client(server, max_retries=2).complete(HI).text == "echo: hi"
        assert server.n_chat_requests == 3


def test_a_run_against_a_dead_server_ends_fast_with_a_clear_message(llm_paper, tmp_path, capsys,
                                                                     monkeypatch):
    """The server dies after the pre-run check: the seed's batch fails fast, the run ends
    (within 30 s) and says what happened in its first line."""
    from icml26 import cli
    from icml26.harness import preflight

    clear_llm_env(monkeypatch)
    monkeypatch.setattr(preflight, "check_llm", lambda url, model=None, **kw: model or "m")
    monkeypatch.setattr(OpenAICompatible, "_backoff", lambda self, attempt, retry_after: 0.5)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    t0 = time.monotonic()
    code = cli.main(["run", "toy_llm", "--profile", "smoke", "--out", str(tmp_path),
                     "--no-progress", "--llm", url, "--llm-model", "m"])
    assert code == 1 and time.monotonic() - t0 < 30
    first = capsys.readouterr().err.strip().splitlines()[0]
    assert first.startswith("toy_llm: ERROR in seed 0: ")
    assert "LLMConnectionError: cannot reach the LLM server at " + url in first


# -- the in-flight bound across threads ------------------------------------------------------
def test_in_flight_bound_holds_across_threads_sharing_one_client():
    """Six threads share one client (max_concurrency=2): four call complete_many (each batch
    has its own worker threads) and two call complete; the server never sees more than 2."""
    with FakeServer(delay_s=0.1) as server:
        chat = client(server, max_concurrency=2)
        errors: list[BaseException] = []

        def batch(k: int) -> None:
            try:
                chat.complete_many([[{"role": "user", "content": f"b{k}-{i}"}] for i in range(3)])
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        def single(k: int) -> None:
            try:
                for i in range(2):
                    chat.complete([{"role": "user", "content": f"s{k}-{i}"}])
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=batch, args=(k,)) for k in range(4)]
        threads += [threading.Thread(target=single, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert errors == []
        assert server.n_chat_requests == 4 * 3 + 2 * 2
        assert server.max_in_flight == 2  # never more, and the bound was reached


# -- a body that is not a completion ---------------------------------------------------------
@pytest.mark.parametrize("body", [b"<html><body>502 Bad Gateway</body></html>", b"",
                                  b'{"choices": []}', b'"just a string"', b"[1, 2]",
                                  b'{"choices": [{"finish_reason": "stop"}]}'])
def test_a_reply_that_is_not_a_completion_raises(body, tmp_path):
    with FakeServer() as server:
        server.raw_body = body
        chat = client(server, max_retries=0, cache_dir=tmp_path)
        with pytest.raises(LLMResponseError):
            chat.complete(HI)
        with pytest.raises(LLMResponseError):
            chat.complete_many([HI, [{"role": "user", "content": "again"}]])
        assert len(ResponseCache(tmp_path)) == 0  # nothing cached from a broken reply


# -- the API key -------------------------------------------------------------------------------
def test_api_key_is_sent_but_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_LLM_API_KEY", KEY)
    cache = tmp_path / "cache"
    with FakeServer() as server:
        chat = client(server, cache_dir=str(cache))
        chat.complete(HI, seed=1)
        chat.complete(HI, seed=2, logprobs=True)
        chat.complete_many([[{"role": "user", "content": f"q{i}"}] for i in range(3)])
        assert server.headers and all(h["Authorization"] == f"Bearer {KEY}" for h in server.headers)
        assert len(ResponseCache(cache)) == 5
        assert files_containing(cache, KEY) == []
        assert KEY not in repr(chat)
        server.failures.extend([401])
        with pytest.raises(LLMHTTPError) as info:
            client(server, max_retries=0).complete([{"role": "user", "content": "new"}])
        assert KEY not in str(info.value)


def test_api_key_is_never_in_a_result_or_cache_file_of_a_run(llm_paper, tmp_path, monkeypatch):
    from icml26 import cli

    clear_llm_env(monkeypatch)
    monkeypatch.setenv("ICML26_LLM_API_KEY", KEY)
    out, cache = tmp_path / "res", tmp_path / "cache"
    with FakeServer(models=("served",)) as server:
        argv = ["run", "toy_llm", "--profile", "smoke", "--out", str(out), "--no-progress",
                "--llm", server.base_url, "--llm-cache", str(cache)]
        assert cli.main(argv) == 0
        assert server.n_chat_requests == 6
        assert all(h.get("Authorization") == f"Bearer {KEY}" for h in server.headers)
    assert list(out.rglob("*.json")) and len(ResponseCache(cache)) == 6
    assert files_containing(out, KEY) == [] and files_containing(cache, KEY) == []


# -- the cache key holds the server ----------------------------------------------------------
def test_two_servers_with_the_same_model_name_do_not_share_cached_answers(tmp_path):
    with FakeServer(reply_fn=lambda m: "from A") as a, FakeServer(reply_fn=lambda m: "from B") as b:
        assert client(a, cache_dir=tmp_path).complete(HI).text == "from A"
        out = client(b, cache_dir=tmp_path).complete(HI)
        assert out.text == "from B" and not out.cached and b.n_chat_requests == 1
        again = client(a, cache_dir=tmp_path).complete(HI)
        assert again.cached and again.text == "from A" and a.n_chat_requests == 1
        assert len(ResponseCache(tmp_path)) == 2


def test_cache_identity_leaves_credentials_out(tmp_path):
    chat = OpenAICompatible("http://user:pa55word@127.0.0.1:8080/v1?key=abc", model="m")
    assert chat.server_identity == "http://127.0.0.1:8080/v1"
    assert chat.cache_identity() == "m @ http://127.0.0.1:8080/v1"
    with FakeServer() as server:
        url = server.base_url.replace("http://", "http://user:pa55word@")
        OpenAICompatible(url, model="m", cache_dir=str(tmp_path)).complete(HI)
        (entry,) = tmp_path.rglob("*.json")
        assert "pa55word" not in entry.read_text()
        assert json.loads(entry.read_text())["model"] == f"m @ {server.base_url}"

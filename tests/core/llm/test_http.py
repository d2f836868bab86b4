"""OpenAICompatible against a real HTTP server on 127.0.0.1 (no other network)."""

from __future__ import annotations

import socket
import time

import pytest

pytest.importorskip("httpx")

from icml26.core.llm import (  # noqa: E402
    LLMConnectionError,
    LLMHTTPError,
    LLMTimeoutError,
    OpenAICompatible,
    ResponseCache,
    resolve_chat_model,
    track_usage,
)
from icml26.core.llm.openai_compatible import parse_retry_after  # noqa: E402

from .fake_server import FakeServer  # noqa: E402

HI = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


def client(server: FakeServer, **kw) -> OpenAICompatible:
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("timeout", 5.0)
    kw.setdefault("model", "fake-model")
    return OpenAICompatible(server.base_url, **kw)


def test_completion_request_and_usage():
    with FakeServer() as server, track_usage() as usage:
        chat = client(server)
        out = chat.complete(HI, max_tokens=7, temperature=0.5, seed=3, stop=["zzz"],
                            response_format="json")
        assert out.text == "echo: hi" and out.finish_reason == "stop" and not out.cached
        assert out.usage.prompt_tokens == len("be brief") + len("hi")
        assert out.usage.completion_tokens == len("echo: hi")
        assert out.raw["object"] == "chat.completion"
        (body,) = server.requests
        assert body["model"] == "fake-model" and body["max_tokens"] == 7
        assert body["temperature"] == 0.5 and body["seed"] == 3 and body["stop"] == ["zzz"]
        assert body["response_format"] == {"type": "json_object"}
        assert body["messages"] == HI
        stats = usage.to_dict()["openai_compatible:fake-model"]
        assert stats["calls"] == 1 and stats["requests"] == 1 and stats["retries"] == 0
        assert stats["prompt_tokens"] == 10 and stats["completion_tokens"] == 8
        assert stats["total_tokens"] == 18 and stats["latency_s"] > 0


def test_stop_and_no_seed_fields_omitted():
    with FakeServer() as server:
        out = client(server).complete([{"role": "user", "content": "abc"}], stop="b")
        assert out.text == "echo: a"
        body = server.requests[0]
        assert "seed" not in body and "response_format" not in body and "logprobs" not in body


def test_retries_on_429_and_5xx_then_success():
    with FakeServer() as server, track_usage() as usage:
        server.failures.extend([429, 500, 503])
        out = client(server, max_retries=3).complete(HI)
        assert out.text == "echo: hi"
        assert server.n_chat_requests == 4
        s = usage.totals()
        assert (s.calls, s.requests, s.retries, s.errors) == (1, 4, 3, 0)


def test_retries_are_bounded():
    with FakeServer() as server, track_usage() as usage:
        server.failures.extend([500] * 10)
        with pytest.raises(LLMHTTPError, match="HTTP 500.*gave up after 3 attempts") as info:
            client(server, max_retries=2).complete(HI)
        assert info.value.status == 500
        assert server.n_chat_requests == 3
        s = usage.totals()
        assert (s.calls, s.requests, s.retries, s.errors) == (0, 3, 2, 1)


def test_retry_after_is_respected():
    with FakeServer() as server:
        server.failures.append(429)
        server.retry_after = "1"
        t0 = time.perf_counter()
        client(server, max_retries=1, backoff_s=0.0).complete(HI)
        assert time.perf_counter() - t0 >= 0.95  # waited the server's 1 s, not the 0 s back-off
        assert server.n_chat_requests == 2


def test_parse_retry_after():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0


def test_client_error_is_not_retried_and_names_the_server_message():
    with FakeServer() as server:
        with pytest.raises(LLMHTTPError, match="HTTP 400.*does not exist") as info:
            client(server, max_retries=3).complete([{"role": "user", "content": "bad-request"}])
        assert info.value.status == 400 and server.n_chat_requests == 1


def test_timeout_is_retried_then_raises():
    with FakeServer() as server, track_usage() as usage:
        t0 = time.perf_counter()
        with pytest.raises(LLMTimeoutError, match="within 0.2 s"):
            client(server, timeout=0.2, max_retries=1).complete(
                [{"role": "user", "content": "slow:1.0"}])
        assert time.perf_counter() - t0 < 1.5  # two 0.2 s timeouts, not two 1 s replies
        assert server.n_chat_requests == 2
        assert usage.totals().errors == 1


def test_slow_reply_within_timeout_succeeds():
    with FakeServer() as server:
        out = client(server, timeout=3.0).complete([{"role": "user", "content": "slow:0.3"}])
        assert out.text == "echo: slow:0.3"


def test_unreachable_server_gives_a_clear_error():
    with socket.socket() as s:  # a port that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chat = OpenAICompatible(f"http://127.0.0.1:{port}/v1", model="m", max_retries=1, backoff_s=0.01)
    with pytest.raises(LLMConnectionError, match=rf"cannot reach the LLM server at "
                       rf"http://127.0.0.1:{port}/v1/chat/completions.*Is it running"):
        chat.complete(HI)


@pytest.mark.parametrize("limit", [1, 3])
def test_concurrency_limit(limit):
    with FakeServer(delay_s=0.15) as server, track_usage() as usage:
        chat = client(server, max_concurrency=limit)
        convs = [[{"role": "user", "content": f"q{i}"}] for i in range(9)]
        outs = chat.complete_many(convs)
        assert [o.text for o in outs] == [f"echo: q{i}" for i in range(9)]  # input order kept
        assert server.max_in_flight == limit  # never more; and the limit is actually reached
        assert usage.totals().calls == 9 and usage.totals().requests == 9


def test_complete_many_uses_more_threads_than_the_old_limit():
    # the counterpart: with a higher limit the server sees more than 3 at once, so the
    # limit above is what bounds in-flight requests
    with FakeServer(delay_s=0.3) as server:
        client(server, max_concurrency=6).complete_many(
            [[{"role": "user", "content": f"q{i}"}] for i in range(6)])
        assert server.max_in_flight > 3


def test_complete_many_per_conversation_seeds():
    with FakeServer() as server:
        client(server).complete_many([HI, HI], seed=[1, 2])
        assert sorted(r["seed"] for r in server.requests) == [1, 2]
        with pytest.raises(ValueError, match="2 seeds for 3 conversations"):
            client(server).complete_many([HI, HI, HI], seed=[1, 2])


def test_cache_second_run_makes_no_request(tmp_path):
    with FakeServer() as server:
        first = client(server, cache_dir=tmp_path).complete(HI, seed=1)
        assert server.n_chat_requests == 1 and len(ResponseCache(tmp_path)) == 1
        with track_usage() as usage:
            again = client(server, cache_dir=tmp_path).complete(HI, seed=1)  # a fresh client
        assert server.n_chat_requests == 1  # no new request
        assert again.cached and again.text == first.text and again.usage == first.usage
        s = usage.totals()
        assert (s.calls, s.cache_hits, s.requests, s.prompt_tokens) == (1, 1, 0, 0)
        client(server, cache_dir=tmp_path).complete(HI, seed=2)  # another seed: a new request
        client(server, cache_dir=tmp_path, model="other").complete(HI, seed=1)  # another model
        assert server.n_chat_requests == 3
        assert not list(tmp_path.rglob("*.tmp"))  # atomic writes leave no temp file


def test_corrupt_cache_entry_is_a_miss(tmp_path):
    with FakeServer() as server:
        client(server, cache_dir=tmp_path).complete(HI)
        (entry,) = tmp_path.rglob("*.json")
        entry.write_text("{not json")
        out = client(server, cache_dir=tmp_path).complete(HI)
        assert not out.cached and server.n_chat_requests == 2
        assert client(server, cache_dir=tmp_path).complete(HI).cached  # rewritten


def test_api_key_from_env(monkeypatch):
    with FakeServer() as server:
        monkeypatch.delenv("ICML26_TEST_KEY", raising=False)
        client(server, api_key_env="ICML26_TEST_KEY").complete(HI)
        assert "Authorization" not in server.headers[-1]
        monkeypatch.setenv("ICML26_TEST_KEY", "sk-test")
        client(server, api_key_env="ICML26_TEST_KEY").complete(HI)
        assert server.headers[-1]["Authorization"] == "Bearer sk-test"


def test_model_discovery():
    with FakeServer(models=("only-model",)) as server:
        chat = OpenAICompatible(server.base_url)
        assert chat.complete(HI).model == "only-model"
        assert server.requests[-1]["model"] == "only-model"
    with FakeServer(models=("a", "b")) as server:
        with pytest.raises(Exception, match=r"serves 2 models \['a', 'b'\].*--llm-model"):
            OpenAICompatible(server.base_url).complete(HI)


def test_logprobs():
    with FakeServer() as server:
        out = client(server).complete(HI, logprobs=True)
        assert server.requests[-1]["logprobs"] is True
        assert [(t.token, t.logprob) for t in out.logprobs] == [("e", -0.5), ("c", -1.0), ("h", -1.5)]


def test_resolver_uses_the_server_only_when_named(monkeypatch, tmp_path):
    from icml26.core.llm import ScriptedChat

    offline = ScriptedChat(lambda m: "offline", name="default")
    monkeypatch.delenv("ICML26_LLM_BASE_URL", raising=False)
    assert resolve_chat_model(offline) is offline
    with FakeServer() as server:
        monkeypatch.setenv("ICML26_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("ICML26_LLM_MODEL", "fake-model")
        monkeypatch.setenv("ICML26_LLM_CACHE", str(tmp_path))
        chat = resolve_chat_model(offline, backoff_s=0.01)
        assert isinstance(chat, OpenAICompatible) and server.requests == []  # lazy: no request yet
        assert chat.complete(HI).text == "echo: hi" and len(ResponseCache(tmp_path)) == 1


def test_bad_client_arguments():
    with pytest.raises(ValueError, match="http:// or https://"):
        OpenAICompatible("127.0.0.1:8080/v1", model="m")
    with pytest.raises(ValueError, match="timeout"):
        OpenAICompatible("http://127.0.0.1:1/v1", model="m", timeout=0)
    with pytest.raises(ValueError, match="max_retries"):
        OpenAICompatible("http://127.0.0.1:1/v1", model="m", max_retries=-1)
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAICompatible("http://127.0.0.1:1/v1", model="m", max_concurrency=0)
    chat = OpenAICompatible("http://127.0.0.1:1/v1/chat/completions/", model="m")
    assert chat.endpoint == "http://127.0.0.1:1/v1/chat/completions"

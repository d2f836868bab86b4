"""An HTTP client for any OpenAI-compatible ``/v1/chat/completions`` server (opt-in only).

llama.cpp's ``llama-server``, vLLM, Ollama, LM Studio and hosted APIs all speak this protocol.
Nothing in the library builds this client unless the user names a server (CLI ``--llm URL``,
env ``ICML26_LLM_BASE_URL``, or an explicit ``OpenAICompatible(...)``), and building it opens no
connection: the first request does.

Robustness: a per-request ``timeout``; up to ``max_retries`` retries with exponential back-off
(``backoff_s * 2**attempt``, capped at ``max_backoff_s``, plus up to 10% jitter) on 429, 5xx,
timeouts and connection errors, honouring a ``Retry-After`` header; other 4xx raise at once
with the server's message. ``max_concurrency`` bounds the requests in flight from one client
(a semaphore, so it also holds across threads that share the client). Inside a
``complete_many`` batch that has already failed, a call waiting to retry gives up at once (the
batch fails fast).

A 200 answer whose body is not JSON, or not a chat completion, raises
:class:`~icml26.core.llm.errors.LLMResponseError` (never an empty completion). The cache key
holds the server's URL (without any user, password or query string) as well as the model, so
two servers that serve the same model name never share cached answers; the API key is sent as
a header only, never written to a cache entry, a result or an error message.
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import os
import random
import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .base import BaseChatModel, Completion, TokenLogprob, Usage, wait_unless_cancelled
from .errors import LLMConnectionError, LLMHTTPError, LLMResponseError, LLMTimeoutError
from .messages import Message, SamplingParams
from .usage import record_usage

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
DEFAULT_API_KEY_ENV = "ICML26_LLM_API_KEY"


def _import_httpx():
    try:
        import httpx
    except ImportError:
        raise ImportError("OpenAICompatible needs httpx: pip install 'icml26[llm]' "
                          "(or pip install 'httpx>=0.27')") from None
    return httpx


def _is_loopback(host: str | None) -> bool:
    if host in {"localhost", "localhost.localdomain"}:
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class OpenAICompatible(BaseChatModel):
    """Chat completions from an OpenAI-compatible server.

    Parameters
    ----------
    base_url : str
        The API root, e.g. ``http://127.0.0.1:8080/v1`` (llama.cpp), ``http://127.0.0.1:8000/v1``
        (vLLM), ``http://127.0.0.1:11434/v1`` (Ollama). Requests go to
        ``{base_url}/chat/completions``.
    model : str or None
        The served model's name. None: ask ``{base_url}/models`` on the first request and use
        the only model served (an error lists them when there are several).
    api_key_env : str
        Environment variable holding the API key, sent as ``Authorization: Bearer``; unset
        means no header (local servers need none). The key itself is never stored or logged.
    cache_dir : path or None
        Disk cache of completions (a rerun makes no request).
    timeout : float
        Seconds to wait for each request (connect and read).
    max_retries : int
        Retries after the first attempt on 429/5xx/timeouts/connection errors.
    max_concurrency : int
        Requests in flight at once from this client (also the threads of ``complete_many``).
    backoff_s, max_backoff_s : float
        First back-off and its cap (seconds); a ``Retry-After`` header overrides the back-off,
        up to ``max_backoff_s``.
    extra_body : dict, optional
        Extra JSON fields for every request (e.g. ``{"top_p": 0.9}``); they enter the cache key.

    Examples
    --------
    >>> chat = OpenAICompatible("http://127.0.0.1:8080/v1", model="qwen2.5-0.5b")  # no request yet
    >>> chat.endpoint
    'http://127.0.0.1:8080/v1/chat/completions'
    """

    backend = "openai_compatible"
    supports_logprobs = True

    def __init__(self, base_url: str, model: str | None = None, *,
                 api_key_env: str = DEFAULT_API_KEY_ENV, cache_dir: str | None = None,
                 timeout: float = 120.0, max_retries: int = 4, max_concurrency: int = 4,
                 backoff_s: float = 1.0, max_backoff_s: float = 60.0,
                 extra_body: dict[str, Any] | None = None) -> None:
        if not isinstance(base_url, str) or not base_url.strip():
            raise ValueError("base_url must be a URL such as http://127.0.0.1:8080/v1")
        url = base_url.strip().rstrip("/")
        if url.endswith("/chat/completions"):
            url = url[: -len("/chat/completions")]
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.netloc:
            raise ValueError(f"base_url must start with http:// or https:// and name a host, got "
                             f"{base_url!r} (e.g. http://127.0.0.1:8080/v1)")
        if model is not None and (not isinstance(model, str) or not model):
            raise ValueError("model must be a non-empty string or None")
        for name, value in (("timeout", timeout), ("backoff_s", backoff_s),
                            ("max_backoff_s", max_backoff_s)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        super().__init__(name=model or "auto", cache_dir=cache_dir, max_concurrency=max_concurrency)
        self.base_url, self.model = url, model
        self.api_key_env = api_key_env
        self.timeout, self.max_retries = float(timeout), max_retries
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self.extra_body = dict(extra_body or {})
        self._semaphore = threading.BoundedSemaphore(max_concurrency)
        self._lock = threading.Lock()  # guards the httpx client
        self._model_lock = threading.Lock()  # guards model discovery
        self._client = None
        self._rng = random.Random(0)  # jitter only; never affects a result

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    # -- transport ----------------------------------------------------------------------------
    def _http(self):
        with self._lock:
            if self._client is None:
                httpx = _import_httpx()
                # a proxy for a loopback server is never what the user wants
                trust_env = not _is_loopback(urlsplit(self.base_url).hostname)
                self._client = httpx.Client(timeout=httpx.Timeout(self.timeout),
                                            trust_env=trust_env)
            return self._client

    def close(self) -> None:
        """Close the connection pool (the client reopens one on the next request)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> OpenAICompatible:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        delay = min(self.backoff_s * 2 ** attempt, self.max_backoff_s)
        return delay * (1.0 + 0.1 * self._rng.random())

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None, *,
                 count: bool = True) -> Any:
        """One logical request with retries; returns the decoded JSON body.

        ``count``: record requests and retries in usage (model discovery is not counted).
        """
        httpx = _import_httpx()
        client = self._http()
        last: Exception | None = None
        for attempt in range(self.max_retries + 1):
            if attempt and count:
                record_usage(self.usage_name, retries=1)
            retry_after = None
            with self._semaphore:
                if count:
                    record_usage(self.usage_name, requests=1)
                try:
                    resp = client.request(method, url, headers=self._headers(),
                                          content=None if body is None else json.dumps(body))
                except httpx.TimeoutException as exc:
                    last = LLMTimeoutError(f"no answer from {url} within {self.timeout:g} s "
                                           f"({type(exc).__name__}); raise timeout= or check the server")
                except httpx.TransportError as exc:
                    last = LLMConnectionError(
                        f"cannot reach the LLM server at {url}: {exc or type(exc).__name__}. Is it "
                        "running? (e.g. `llama-server -m model.gguf --port 8080`, then "
                        "--llm http://127.0.0.1:8080/v1)")
                else:
                    if resp.status_code == 200:
                        try:
                            return resp.json()
                        except ValueError:
                            raise LLMResponseError(f"{url} answered 200 with a body that is not "
                                                   f"JSON: {resp.text[:300]!r}") from None
                    text = resp.text[:1000]
                    err = LLMHTTPError(f"{url} answered HTTP {resp.status_code}: {text[:300]}",
                                       resp.status_code, text)
                    if resp.status_code in (401, 403):
                        err = LLMHTTPError(f"{url} refused the request (HTTP {resp.status_code}): "
                                           f"{text[:300]}; set the API key in ${self.api_key_env}",
                                           resp.status_code, text)
                    if resp.status_code not in RETRY_STATUSES and resp.status_code < 500:
                        raise err
                    last = err
                    retry_after = parse_retry_after(resp.headers.get("retry-after"))
            if attempt < self.max_retries:
                if wait_unless_cancelled(self._backoff(attempt, retry_after)):
                    break  # another call of the batch failed: give up now, do not retry
        assert last is not None
        tried = attempt + 1
        if tried < self.max_retries + 1:
            why = f"gave up after {tried} attempt{'s' if tried > 1 else ''}: the batch failed"
        elif self.max_retries:
            why = f"gave up after {tried} attempts"
        else:
            raise last
        raise type(last)(f"{last} ({why})",
                         *((last.status, last.body) if isinstance(last, LLMHTTPError) else ()))

    # -- model discovery ----------------------------------------------------------------------
    def model_id(self) -> str:
        with self._model_lock:
            if self.model is None:
                self._discover_model()
        return self.model

    def _discover_model(self) -> None:
        data = self._request("GET", f"{self.base_url}/models", count=False)
        try:
            ids = [m["id"] for m in data["data"]]
        except (KeyError, TypeError):
            raise LLMResponseError(f"{self.base_url}/models did not list models: "
                                   f"{str(data)[:300]}") from None
        if len(ids) != 1:
            raise LLMResponseError(f"the server at {self.base_url} serves {len(ids)} models "
                                   f"{ids[:20]}; name one with model= (CLI --llm-model)")
        self.model = self.name = ids[0]

    # -- completion ---------------------------------------------------------------------------
    def request_body(self, messages: list[Message], params: SamplingParams) -> dict[str, Any]:
        """The JSON body sent for ``messages`` and ``params``."""
        body: dict[str, Any] = {"model": self.model_id(), "messages": messages,
                                "max_tokens": params.max_tokens,
                                "temperature": params.temperature}
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        if params.response_format == "json":
            body["response_format"] = {"type": "json_object"}
        elif params.response_format is not None:
            body["response_format"] = dict(params.response_format)
        if params.logprobs:
            body["logprobs"] = True
        body.update(self.extra_body)
        return body

    @property
    def server_identity(self) -> str:
        """The server's URL without credentials or query string: part of the cache key."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        if ":" in host:  # IPv6
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def cache_identity(self) -> str:
        return (f"{self.model_id()} @ {self.server_identity}"
                + (json.dumps(self.extra_body, sort_keys=True) if self.extra_body else ""))

    def _generate(self, messages: list[Message], params: SamplingParams) -> Completion:
        data = self._request("POST", self.endpoint, self.request_body(messages, params))
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
            finish = choice.get("finish_reason") or "stop"
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMResponseError(f"{self.endpoint} answered without choices[0].message: "
                                   f"{str(data)[:300]}") from None
        usage = data.get("usage") or {}
        logprobs = None
        if params.logprobs:
            content = (choice.get("logprobs") or {}).get("content")
            if content is None:
                raise LLMResponseError(f"{self.endpoint} returned no logprobs although asked; "
                                       "the server may not support them")
            logprobs = tuple(TokenLogprob(t["token"], float(t["logprob"])) for t in content)
        return Completion(text=text, finish_reason=finish, raw=data, logprobs=logprobs,
                          model=str(data.get("model") or self.model_id()),
                          usage=Usage(int(usage.get("prompt_tokens") or 0),
                                      int(usage.get("completion_tokens") or 0)))

    def __repr__(self) -> str:
        return f"OpenAICompatible({self.base_url!r}, model={self.model!r})"

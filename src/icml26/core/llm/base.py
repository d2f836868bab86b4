"""The chat-model protocol and the base class every backend derives from.

``ChatModel.complete(messages, *, max_tokens, temperature, seed, stop, response_format,
logprobs) -> Completion`` and ``complete_many(conversations, ...) -> list[Completion]``.
:class:`BaseChatModel` does the shared work once -- validate messages and parameters, look up
and fill the disk cache, record usage, run batches in threads -- so a backend only implements
``_generate(messages, params) -> Completion``.

A batch fails fast: the first call of :meth:`BaseChatModel.complete_many` that raises cancels
the calls still queued and wakes the ones waiting to retry (:func:`batch_cancelled`,
:func:`wait_unless_cancelled`), and its error is raised at once; a dead server ends a batch in
the time one call takes to give up, not in the time of every call.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar, Protocol, runtime_checkable

from .cache import ResponseCache, cache_key
from .errors import UnsupportedFeatureError
from .messages import Message, SamplingParams, validate_messages
from .usage import record_usage

# Set, inside the worker threads of one complete_many call, to that batch's cancel event.
_BATCH_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "icml26_llm_batch_cancel", default=None)


def batch_cancelled() -> bool:
    """True inside a :meth:`BaseChatModel.complete_many` worker whose batch has already failed."""
    event = _BATCH_CANCEL.get()
    return event is not None and event.is_set()


def wait_unless_cancelled(seconds: float) -> bool:
    """Sleep ``seconds`` (a retry's back-off), waking early when the calling batch is cancelled.
    Return True when it was cancelled (the caller should give up instead of retrying)."""
    event = _BATCH_CANCEL.get()
    if event is None:
        time.sleep(seconds)
        return False
    return event.wait(seconds)


class BatchCancelledError(RuntimeError):
    """A queued call of a batch whose other call already failed (never raised to the caller of
    ``complete_many``: the first error is)."""


@dataclass(frozen=True)
class Usage:
    """Tokens of one completion (as counted by the backend's tokenizer)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token and its log-probability under the model."""

    token: str
    logprob: float


@dataclass(frozen=True)
class Completion:
    """One chat completion.

    Attributes
    ----------
    text : str -- the assistant's reply (stop string excluded)
    finish_reason : str -- "stop" (stop string/token or natural end), "length" (max_tokens) or
        what the server said
    usage : Usage
    raw : the backend's raw answer (the JSON dict for HTTP backends; None for local ones)
    logprobs : tuple of TokenLogprob or None -- when requested with ``logprobs=True``
    cached : bool -- served from the disk cache (no request made)
    model : str -- the model that answered
    """

    text: str
    finish_reason: str
    usage: Usage
    raw: Any = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    cached: bool = False
    model: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the cache entry)."""
        d = asdict(self)
        d["logprobs"] = None if self.logprobs is None else [asdict(t) for t in self.logprobs]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        lp = d.get("logprobs")
        return cls(text=d["text"], finish_reason=d["finish_reason"], usage=Usage(**d["usage"]),
                   raw=d.get("raw"), model=d.get("model", ""),
                   logprobs=None if lp is None else tuple(TokenLogprob(**t) for t in lp))


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers chat conversations (see :class:`BaseChatModel` for the semantics)."""

    name: str

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 256,
                 temperature: float = 0.0, seed: int | None = None,
                 stop: str | Sequence[str] | None = None, response_format: Any = None,
                 logprobs: bool = False) -> Completion: ...

    def complete_many(self, conversations: Sequence[Sequence[Message]], **params: Any
                      ) -> list[Completion]: ...


class BaseChatModel:
    """Shared machinery of the backends: validation, cache, usage, batching.

    Parameters
    ----------
    name : str
        The model's name, used in usage accounting (``"<backend>:<name>"``) and the cache key.
    cache_dir : path or None
        Serve repeated requests from this folder (see :mod:`icml26.core.llm.cache`).
    max_concurrency : int
        Worker threads of :meth:`complete_many` (1: sequential, in order).
    """

    backend: ClassVar[str] = "base"
    supports_logprobs: ClassVar[bool] = False

    def __init__(self, *, name: str, cache_dir: str | None = None, max_concurrency: int = 1) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a chat model needs a non-empty name")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) \
                or max_concurrency < 1:
            raise ValueError(f"max_concurrency must be a positive integer, got {max_concurrency!r}")
        self.name = name
        self.max_concurrency = max_concurrency
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None

    # -- to implement -------------------------------------------------------------------------
    def _generate(self, messages: list[Message], params: SamplingParams) -> Completion:
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------
    @property
    def usage_name(self) -> str:
        """The key of this model in usage accounting: ``"<backend>:<name>"``."""
        return f"{self.backend}:{self.name}"

    def model_id(self) -> str:
        """The model's name (backends may resolve it lazily)."""
        return self.name

    def cache_identity(self) -> str:
        """What identifies the model in the cache key (the name, plus any fixed request options)."""
        return self.model_id()

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 256,
                 temperature: float = 0.0, seed: int | None = None,
                 stop: str | Sequence[str] | None = None, response_format: Any = None,
                 logprobs: bool = False) -> Completion:
        """Answer one conversation.

        Parameters
        ----------
        messages : list of ``{"role", "content"}`` dicts (see :func:`validate_messages`)
        max_tokens, temperature, seed, stop, response_format, logprobs
            See :class:`~icml26.core.llm.messages.SamplingParams`.

        Returns
        -------
        Completion
        """
        msgs = validate_messages(messages)
        params = SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed,
                                stop=stop, response_format=response_format, logprobs=logprobs)
        return self._complete_checked(msgs, params)

    def _complete_checked(self, msgs: list[Message], params: SamplingParams) -> Completion:
        if params.logprobs and not self.supports_logprobs:
            raise UnsupportedFeatureError(f"{type(self).__name__} does not return log-probabilities")
        key = None
        if self.cache is not None:
            key = cache_key(self.cache_identity(), msgs, params)
            entry = self.cache.get(key)
            if entry is not None and "completion" in entry:
                record_usage(self.usage_name, calls=1, cache_hits=1)
                return replace(Completion.from_dict(entry["completion"]), cached=True)
        start = time.perf_counter()
        try:
            out = self._generate(msgs, params)
        except Exception:
            record_usage(self.usage_name, errors=1, latency_s=time.perf_counter() - start)
            raise
        record_usage(self.usage_name, calls=1, prompt_tokens=out.usage.prompt_tokens,
                     completion_tokens=out.usage.completion_tokens,
                     latency_s=time.perf_counter() - start)
        if key is not None:
            self.cache.put(key, {"model": self.cache_identity(), "messages": msgs,
                                 "params": params.to_dict(), "completion": out.to_dict()})
        return out

    def complete_many(self, conversations: Sequence[Sequence[Message]], *,
                      seed: int | Sequence[int | None] | None = None, **params: Any
                      ) -> list[Completion]:
        """Answer several conversations, in order; up to ``max_concurrency`` at a time.

        Parameters
        ----------
        conversations : sequence of conversations
        seed : int, None, or one seed per conversation
        **params : the other keyword arguments of :meth:`complete`, shared by all

        Returns
        -------
        list of Completion, one per conversation, in input order
        """
        if isinstance(conversations, str | bytes) or not isinstance(conversations, Sequence):
            raise TypeError("conversations must be a list of message lists")
        checked = []
        for i, conv in enumerate(conversations):
            try:
                checked.append(validate_messages(conv))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"conversation {i}: {exc}") from None
        n = len(checked)
        if seed is None or isinstance(seed, int):
            seeds: list[int | None] = [seed] * n
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"got {len(seeds)} seeds for {n} conversations")
        plist = [SamplingParams(seed=s, **params) for s in seeds]
        if self.max_concurrency == 1 or n <= 1:
            return [self._complete_checked(m, p) for m, p in zip(checked, plist, strict=True)]
        cancel = threading.Event()

        def one(m: list[Message], p: SamplingParams) -> Completion:
            if cancel.is_set():  # the batch failed while this call was queued
                raise BatchCancelledError("cancelled: another call of the batch failed")
            _BATCH_CANCEL.set(cancel)
            return self._complete_checked(m, p)

        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, n),
                                thread_name_prefix=f"icml26-llm-{self.backend}") as pool:
            # each worker runs in a copy of the caller's context, so usage trackers see the calls
            futures = [pool.submit(contextvars.copy_context().run, one, m, p)
                       for m, p in zip(checked, plist, strict=True)]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f in done and f.exception() is not None]
            if failed:
                # fail fast: drop the queued calls, wake the ones backing off, and raise the
                # first real error (input order) once the calls in flight have returned
                cancel.set()
                for f in futures:
                    f.cancel()
                errors = [f.exception() for f in failed]
                first = next((e for e in errors if not isinstance(e, BatchCancelledError)),
                             errors[0])
                raise first
            return [f.result() for f in futures]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def approx_tokens(text: str) -> int:
    """A tokenizer-free token estimate, ``ceil(len(text) / 4)`` (the usual ~4 characters per
    BPE token of English), used by backends that have no tokenizer (scripted models)."""
    return -(-len(text) // 4)

"""A deterministic chat model from rules or a function: offline arms and tests.

``ScriptedChat(fn)`` answers ``fn(messages)`` (or ``fn(messages, params)`` with
``with_params=True``, for a scripted policy that uses the seed); ``ScriptedChat(rules=[...])``
answers the reply of the first rule whose pattern matches the last user message.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence

from .base import BaseChatModel, Completion, Usage, approx_tokens
from .messages import Message, SamplingParams, truncate_at_stop

Pattern = str | re.Pattern[str] | Callable[[list[Message]], bool]
Reply = str | Callable[[list[Message]], str]


def _last_user(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m["role"] == "user":
            return m["content"]
    return ""


class ScriptedChat(BaseChatModel):
    """A chat model whose replies are a function of the conversation.

    Parameters
    ----------
    fn : callable, optional
        ``fn(messages) -> str`` (``fn(messages, params) -> str`` when ``with_params``).
    rules : sequence of (pattern, reply), optional
        ``pattern``: a substring of the last user message, a compiled regex searched in it, or a
        predicate of the whole conversation; ``reply``: a string or a function of the
        conversation. The first matching rule answers.
    default : str or None
        The reply when no rule matches; None raises ``LookupError`` naming the message.
    name : str
        Name in usage accounting (``"scripted:<name>"``).
    with_params : bool
        Pass the :class:`SamplingParams` (seed, temperature, ...) to ``fn`` as a second argument.

    Notes
    -----
    ``stop`` strings are honoured (the reply is cut before the first); ``max_tokens`` is not (a
    script is not truncated). Tokens are estimated with :func:`approx_tokens`. Every validated
    conversation is appended to :attr:`history`.

    Examples
    --------
    >>> chat = ScriptedChat(rules=[("capital of France", "Paris")], default="I don't know")
    >>> chat.complete([{"role": "user", "content": "What is the capital of France?"}]).text
    'Paris'
    """

    backend = "scripted"

    def __init__(self, fn: Callable[..., str] | None = None, *,
                 rules: Sequence[tuple[Pattern, Reply]] | None = None, default: str | None = None,
                 name: str = "scripted", with_params: bool = False, cache_dir: str | None = None,
                 max_concurrency: int = 1) -> None:
        super().__init__(name=name, cache_dir=cache_dir, max_concurrency=max_concurrency)
        if (fn is None) == (rules is None):
            raise ValueError("ScriptedChat needs exactly one of fn and rules")
        if fn is not None and not callable(fn):
            raise TypeError("fn must be callable: fn(messages) -> str")
        compiled: list[tuple[Callable[[list[Message]], bool], Reply]] = []
        for i, rule in enumerate(rules or ()):
            if not isinstance(rule, tuple | list) or len(rule) != 2:
                raise ValueError(f"rules[{i}] must be a (pattern, reply) pair")
            pattern, reply = rule
            if isinstance(pattern, str):
                match = (lambda p: lambda msgs: p in _last_user(msgs))(pattern)
            elif isinstance(pattern, re.Pattern):
                match = (lambda p: lambda msgs: p.search(_last_user(msgs)) is not None)(pattern)
            elif callable(pattern):
                match = pattern
            else:
                raise TypeError(f"rules[{i}]: pattern must be a str, a regex or a predicate")
            if not (isinstance(reply, str) or callable(reply)):
                raise TypeError(f"rules[{i}]: reply must be a str or a function of the messages")
            compiled.append((match, reply))
        self.fn, self.rules, self.default, self.with_params = fn, compiled, default, with_params
        self.history: list[list[Message]] = []
        self._lock = threading.Lock()

    def _reply(self, messages: list[Message], params: SamplingParams) -> str:
        if self.fn is not None:
            return self.fn(messages, params) if self.with_params else self.fn(messages)
        for match, reply in self.rules:
            if match(messages):
                return reply if isinstance(reply, str) else reply(messages)
        if self.default is None:
            raise LookupError(f"ScriptedChat {self.name!r}: no rule matches the last user message "
                              f"{_last_user(messages)[:200]!r} and no default is set")
        return self.default

    def _generate(self, messages: list[Message], params: SamplingParams) -> Completion:
        with self._lock:
            self.history.append(messages)
        text = self._reply(messages, params)
        if not isinstance(text, str):
            raise TypeError(f"ScriptedChat {self.name!r}: the script returned "
                            f"{type(text).__name__}, not str")
        text, _ = truncate_at_stop(text, params.stop)
        prompt = sum(approx_tokens(m["content"]) for m in messages)
        return Completion(text=text, finish_reason="stop", model=self.name,
                          usage=Usage(prompt_tokens=prompt, completion_tokens=approx_tokens(text)))

    def __repr__(self) -> str:
        kind = "fn" if self.fn is not None else f"{len(self.rules)} rules"
        return f"ScriptedChat(name={self.name!r}, {kind})"

"""Chat messages (``{"role", "content"}`` dicts) and sampling parameters, validated.

A conversation is a non-empty list of dicts with a ``role`` in :data:`ROLES` and a string
``content`` -- the format of the OpenAI chat-completions protocol, which llama.cpp, vLLM and
Ollama also speak. Validation happens once, at the entry of every backend, so that a typo gives
a clear error here rather than an HTTP 400 (or a silently wrong prompt) later.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ROLES = ("system", "user", "assistant", "tool")

Message = dict[str, str]
_PLAIN = {"role": None, "content": None}.keys()


def validate_messages(messages: Any) -> list[Message]:
    """Check a conversation and return it as a fresh list of plain ``{"role", "content"}`` dicts.

    Parameters
    ----------
    messages : sequence of mappings
        Each with ``role`` (one of :data:`ROLES`) and ``content`` (str). Extra keys are allowed
        only for ``name`` (str), passed through.

    Raises
    ------
    TypeError
        ``messages`` is not a sequence of mappings, or a content is not a string.
    ValueError
        Empty conversation, unknown role or key, missing key.

    Examples
    --------
    >>> validate_messages([{"role": "user", "content": "hi"}])
    [{'role': 'user', 'content': 'hi'}]
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a list of {'role': ..., 'content': ...} dicts, "
                        f"got {type(messages).__name__}")
    if len(messages) == 0:
        raise ValueError("messages is empty: a conversation needs at least one message")
    out: list[Message] = []
    for i, m in enumerate(messages):
        if type(m) is dict and m.keys() == _PLAIN and type(m["content"]) is str and m["role"] in ROLES:
            out.append({"role": m["role"], "content": m["content"]})  # the common case, fast
            continue
        if not isinstance(m, Mapping):
            raise TypeError(f"messages[{i}] must be a dict with 'role' and 'content', "
                            f"got {type(m).__name__}")
        missing = [k for k in ("role", "content") if k not in m]
        if missing:
            raise ValueError(f"messages[{i}] misses {missing}; each message is "
                             "{'role': 'system'|'user'|'assistant'|'tool', 'content': str}")
        extra = sorted(set(m) - {"role", "content", "name"})
        if extra:
            raise ValueError(f"messages[{i}] has unknown keys {extra} (allowed: role, content, name)")
        role, content = m["role"], m["content"]
        if role not in ROLES:
            raise ValueError(f"messages[{i}]['role'] must be one of {ROLES}, got {role!r}")
        if not isinstance(content, str):
            raise TypeError(f"messages[{i}]['content'] must be a string, got {type(content).__name__}")
        msg: Message = {"role": role, "content": content}
        if "name" in m:
            if not isinstance(m["name"], str):
                raise TypeError(f"messages[{i}]['name'] must be a string")
            msg["name"] = m["name"]
        out.append(msg)
    return out


def user(content: str) -> Message:
    """``{"role": "user", "content": content}``."""
    return {"role": "user", "content": content}


def system(content: str) -> Message:
    """``{"role": "system", "content": content}``."""
    return {"role": "system", "content": content}


def assistant(content: str) -> Message:
    """``{"role": "assistant", "content": content}``."""
    return {"role": "assistant", "content": content}


@dataclass(frozen=True)
class SamplingParams:
    """The sampling parameters of one request, validated (they are also part of the cache key).

    Attributes
    ----------
    max_tokens : int >= 1 -- upper bound on generated tokens
    temperature : float >= 0 -- 0 is greedy
    seed : int or None -- sampling seed (servers that honour it: vLLM, llama.cpp, OpenAI)
    stop : tuple of str -- generation ends before the first of these strings
    response_format : None, "json" or a dict -- "json" asks for a JSON object
        (``{"type": "json_object"}``); a dict is passed to the server unchanged
    logprobs : bool -- also return the log-probability of every generated token
    """

    max_tokens: int = 256
    temperature: float = 0.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    response_format: str | Mapping[str, Any] | None = None
    logprobs: bool = False

    def __post_init__(self) -> None:
        if (type(self.max_tokens) is int and self.max_tokens >= 1 and type(self.temperature) is float
                and 0.0 <= self.temperature < math.inf and (self.seed is None or type(self.seed) is int)
                and self.stop == () and self.response_format is None and type(self.logprobs) is bool):
            return  # the common case, already normal
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, numbers.Integral) \
                or self.max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {self.max_tokens!r}")
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or math.isnan(t) or t < 0 \
                or math.isinf(t):
            raise ValueError(f"temperature must be a finite number >= 0, got {t!r}")
        if self.seed is not None and (isinstance(self.seed, bool)
                                      or not isinstance(self.seed, numbers.Integral)):
            raise TypeError(f"seed must be an integer or None, got {type(self.seed).__name__}")
        stop = self.stop
        if stop is None:
            stop = ()
        elif isinstance(stop, str):
            stop = (stop,)
        elif not isinstance(stop, Sequence) or not all(isinstance(s, str) for s in stop):
            raise TypeError("stop must be a string, a sequence of strings or None")
        if any(s == "" for s in stop):
            raise ValueError("stop strings must be non-empty")
        object.__setattr__(self, "stop", tuple(stop))
        object.__setattr__(self, "max_tokens", int(self.max_tokens))
        object.__setattr__(self, "temperature", float(t))
        if self.seed is not None:
            object.__setattr__(self, "seed", int(self.seed))
        rf = self.response_format
        if rf is not None and rf != "json" and not isinstance(rf, Mapping):
            raise ValueError(f"response_format must be None, 'json' or a dict, got {rf!r}")
        if not isinstance(self.logprobs, bool):
            raise TypeError("logprobs must be True or False")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (the cache key's parameter part)."""
        rf = self.response_format
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed,
                "stop": list(self.stop),
                "response_format": dict(rf) if isinstance(rf, Mapping) else rf,
                "logprobs": self.logprobs}


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the earliest stop string; return ``(text, stopped)``."""
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)

"""Conversation records: validation of one decoded record, and the streaming JSON Lines reader.

Accepted record shapes (one conversation per JSON object)::

    {"id": "c1", "user_id": "u7", "timestamp": "2025-03-02T10:00:00Z", "approval": 1,
     "domain": "relationships", "messages": [{"role": "user", "content": "..."},
                                             {"role": "assistant", "content": "..."}]}

- our format and OpenAI-style ``messages`` lists: ``role`` in system/developer/user/assistant/
  tool/function, ``content`` a string, null (a tool call) or a list of parts
  (``{"type": "text", "text": ...}``; other parts are ignored);
- ShareGPT: ``conversations`` with ``{"from": "human"|"gpt"|..., "value": ...}``;
- aliases: ``turns`` / ``conversation`` for the list, ``text`` / ``value`` for the content,
  ``conversation_id`` / ``conv_id`` / ``session_id`` / ``thread_id`` for ``id``, ``user`` for
  ``user_id``, ``created_at`` / ``create_time`` for ``timestamp``, ``rating`` / ``feedback`` for
  ``approval``.

``approval`` may be 1/0/-1, true/false, "up"/"down" or null; ``timestamp`` an ISO date(time) or a
Unix time in seconds (milli-, micro- and nanoseconds are recognised by their size), between
1990 and 2100. A record that is not a conversation is reported with its line number and a reason
from a fixed vocabulary (reasons never quote the line's content) and skipped. Other formats (JSON
arrays, CSV) and encodings are read by :mod:`.readers`.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROLES = ("system", "user", "assistant", "tool")
# role (or ShareGPT "from") spellings -> one of ROLES
ROLE_ALIASES = {
    "system": "system", "developer": "system", "user": "user", "human": "user",
    "prompter": "user", "customer": "user", "assistant": "assistant", "gpt": "assistant",
    "chatgpt": "assistant", "bard": "assistant", "bing": "assistant", "model": "assistant",
    "claude": "assistant", "bot": "assistant", "ai": "assistant", "agent": "assistant",
    "tool": "tool", "function": "tool", "function_call": "tool", "observation": "tool",
    "ipython": "tool"}
MIN_YEAR, MAX_YEAR = 1990, 2100


@dataclass(frozen=True)
class Conversation:
    """One conversation: turns as ``(role, text)`` pairs plus optional metadata."""

    id: str
    turns: tuple[tuple[str, str], ...]
    user_id: str | None = None
    timestamp: _dt.datetime | None = None
    approval: bool | None = None
    domain: str | None = None

    def text(self, roles: tuple[str, ...] = ("user", "assistant")) -> str:
        return "\n".join(f"{r}: {t}" for r, t in self.turns if r in roles)

    def first_user(self) -> str:
        return next((t for r, t in self.turns if r == "user"), "")

    @property
    def period(self) -> str | None:
        """The calendar quarter, e.g. ``"2025Q1"`` (None without a timestamp)."""
        if self.timestamp is None:
            return None
        return f"{self.timestamp.year}Q{(self.timestamp.month - 1) // 3 + 1}"


class MalformedLine(ValueError):
    """A line that is not a conversation; ``line`` is its 1-based number."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line, self.reason = line, reason


def _approval(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float) and v in (1, 0, -1):
        return v == 1
    if isinstance(v, str) and v.lower() in ("up", "thumbs_up", "positive", "down", "thumbs_down",
                                            "negative"):
        return v.lower() in ("up", "thumbs_up", "positive")
    raise ValueError(f"approval must be 1/0/-1, a bool, 'up'/'down' or null, got a "
                     f"{type(v).__name__} of another value")


def _timestamp(v):
    if v is None:
        return None
    if isinstance(v, int | float) and not isinstance(v, bool):
        t = float(v)
        if t != t or t in (float("inf"), float("-inf")):
            raise ValueError("timestamp is not a finite number")
        for scale in (1.0, 1e3, 1e6, 1e9):   # seconds, ms, us, ns since 1970
            if abs(t / scale) < 1e11:
                t /= scale
                break
        try:
            ts = _dt.datetime.fromtimestamp(t, tz=_dt.UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError("timestamp out of range") from None
    elif isinstance(v, str):
        s = v.strip().replace("Z", "+00:00")
        try:
            ts = _dt.datetime.fromisoformat(s)
        except ValueError:
            raise ValueError("timestamp must be an ISO date(time) or a Unix time") from None
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=_dt.UTC)
    else:
        raise ValueError(f"timestamp must be an ISO date(time) or a Unix time, got a "
                         f"{type(v).__name__}")
    if not MIN_YEAR <= ts.year < MAX_YEAR:
        raise ValueError(f"timestamp out of range (years {MIN_YEAR}-{MAX_YEAR - 1})")
    return ts


def _content(m: dict):
    if "content" in m:
        text = m["content"]
        if text is None:
            return ""   # an assistant turn that only calls a tool
    elif "text" in m:
        text = m["text"]
    elif "value" in m:
        text = m["value"]
    else:
        return "" if "tool_calls" in m or "function_call" in m else None
    if type(text) is str:
        return text
    if isinstance(text, list):   # OpenAI content parts
        parts = [p.get("text") if isinstance(p, dict) else p for p in text]
        if not all(isinstance(p, str) or p is None for p in parts):
            return None
        return "\n".join(p for p in parts if p)
    return text if isinstance(text, str) else None


def _first(obj: dict, keys: tuple[str, ...]):
    for k in keys:
        v = obj.get(k)
        if v is not None:
            return v
    return None


def parse_conversation(obj, *, line: int = 0, fallback_id: str | None = None) -> Conversation:
    """Validate one decoded JSON value as a :class:`Conversation`; :class:`MalformedLine` if not."""
    if not isinstance(obj, dict):
        raise MalformedLine(line, f"expected a JSON object, got {type(obj).__name__}")
    msgs = obj.get("messages")
    if msgs is None:
        msgs = next((obj[k] for k in ("conversations", "turns", "conversation") if k in obj), None)
    if not isinstance(msgs, list) or not msgs:
        raise MalformedLine(line, "no non-empty 'messages' list")
    turns = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise MalformedLine(line, f"message {i} is not an object")
        role = m.get("role")
        if role is None:
            role = m.get("from", m.get("author"))
            if isinstance(role, dict):   # {"author": {"role": ...}}
                role = role.get("role")
        role = (ROLE_ALIASES.get(role) or ROLE_ALIASES.get(role.strip().lower())
                if isinstance(role, str) else None)
        if role is None:
            raise MalformedLine(line, f"message {i} has a role that is not one of {ROLES} "
                                "(or a known alias)")
        text = _content(m)
        if not isinstance(text, str):
            raise MalformedLine(line, f"message {i} has no string 'content'")
        turns.append((role, text))
    try:
        approval = _approval(_first(obj, ("approval", "rating", "feedback")))
        ts = _timestamp(_first(obj, ("timestamp", "created_at", "create_time", "time")))
    except ValueError as exc:
        raise MalformedLine(line, str(exc)) from None
    cid = _first(obj, ("id", "conversation_id", "conv_id", "session_id", "thread_id"))
    if cid is None:
        cid = fallback_id if fallback_id is not None else f"line-{line}"
    uid = _first(obj, ("user_id", "user"))
    if isinstance(uid, dict | list):
        uid = json.dumps(uid, sort_keys=True)
    dom = obj.get("domain")
    return Conversation(id=str(cid), turns=tuple(turns), user_id=None if uid is None else str(uid),
                        timestamp=ts, approval=approval,
                        domain=None if dom is None else str(dom).strip().lower())


def iter_jsonl(path: str | Path, *, start_offset: int = 0, start_line: int = 0
               ) -> Iterator[tuple[int, int, Conversation | MalformedLine | None]]:
    """Yield ``(line_number, offset_after_line, Conversation | MalformedLine | None)`` per line
    of a UTF-8 JSON Lines file.

    ``None`` is a blank line. Reading starts at byte ``start_offset`` (the ``offset_after_line`` of
    the last processed line) with line numbers continuing from ``start_line``. Memory is one line.
    (:func:`.readers.iter_source` reads every format and encoding.)
    """
    from .readers import Source, iter_source

    head = Path(path).open("rb").read(3) if start_offset == 0 else b""
    src = Source(path=Path(path), format="jsonl", encoding="utf-8",
                 start=3 if head == b"\xef\xbb\xbf" else 0, delimiter=",", fingerprint={})
    for number, _, end, item in iter_source(src, start_offset, start_line):
        yield number, end, item


def iter_records(records) -> Iterator[tuple[int, int, Conversation | MalformedLine | None]]:
    """The same triples for an iterable of dicts or :class:`Conversation` (offset = index)."""
    for i, rec in enumerate(records, start=1):
        if isinstance(rec, Conversation):
            yield i, i, rec
            continue
        try:
            yield i, i, parse_conversation(rec, line=i)
        except MalformedLine as exc:
            yield i, i, exc

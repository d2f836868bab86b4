"""Streaming reader of conversation logs in JSON Lines (one conversation per line).

Accepted line format (the common chat format)::

    {"id": "c1", "user_id": "u7", "timestamp": "2025-03-02T10:00:00Z", "approval": 1,
     "domain": "relationships", "messages": [{"role": "user", "content": "..."},
                                             {"role": "assistant", "content": "..."}]}

Only ``messages`` is required (``turns`` / ``conversation`` are accepted aliases, and ``text`` for
``content``). ``approval`` may be 1/0/-1, true/false, "up"/"down" or null; ``timestamp`` an ISO
date(time) or a Unix time. A line that does not parse, or parses to something that is not a
conversation, is reported with its line number and reason (reasons never quote the line's content) and
skipped; the rest is processed.
The reader works on byte offsets so that a run can resume where it stopped.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROLES = ("system", "user", "assistant", "tool")


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
        return _dt.datetime.fromtimestamp(float(v), tz=_dt.UTC)
    if isinstance(v, str):
        s = v.strip().replace("Z", "+00:00")
        try:
            return _dt.datetime.fromisoformat(s)
        except ValueError:
            pass
    raise ValueError(f"timestamp must be an ISO date(time) or a Unix time, got a {type(v).__name__} "
                     "that is neither")


def parse_conversation(obj, *, line: int = 0, fallback_id: str | None = None) -> Conversation:
    """Validate one decoded JSON value as a :class:`Conversation`; :class:`MalformedLine` if not."""
    if not isinstance(obj, dict):
        raise MalformedLine(line, f"expected a JSON object, got {type(obj).__name__}")
    msgs = next((obj[k] for k in ("messages", "turns", "conversation") if k in obj), None)
    if not isinstance(msgs, list) or not msgs:
        raise MalformedLine(line, "no non-empty 'messages' list")
    turns = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise MalformedLine(line, f"message {i} is not an object")
        role = m.get("role")
        text = m.get("content", m.get("text"))
        if role not in ROLES:
            raise MalformedLine(line, f"message {i} has a role that is not one of {ROLES}")
        if not isinstance(text, str):
            raise MalformedLine(line, f"message {i} has no string 'content'")
        turns.append((role, text))
    try:
        approval = _approval(obj.get("approval", obj.get("rating")))
        ts = _timestamp(obj.get("timestamp", obj.get("created_at")))
    except ValueError as exc:
        raise MalformedLine(line, str(exc)) from None
    cid = obj.get("id", fallback_id if fallback_id is not None else f"line-{line}")
    uid = obj.get("user_id")
    dom = obj.get("domain")
    return Conversation(id=str(cid), turns=tuple(turns), user_id=None if uid is None else str(uid),
                        timestamp=ts, approval=approval,
                        domain=None if dom is None else str(dom).strip().lower())


def iter_jsonl(path: str | Path, *, start_offset: int = 0, start_line: int = 0
               ) -> Iterator[tuple[int, int, Conversation | MalformedLine | None]]:
    """Yield ``(line_number, offset_after_line, Conversation | MalformedLine | None)`` per line.

    ``None`` is a blank line. Reading starts at byte ``start_offset`` (the ``offset_after_line`` of
    the last processed line) with line numbers continuing from ``start_line``. Memory is one line.
    """
    with open(path, "rb") as fh:
        fh.seek(start_offset)
        line_no, offset = start_line, start_offset
        for raw in fh:
            line_no += 1
            offset += len(raw)
            s = raw.strip()
            if not s:
                yield line_no, offset, None
                continue
            try:
                obj = json.loads(s)
            except (ValueError, UnicodeDecodeError) as exc:
                yield line_no, offset, MalformedLine(line_no, f"invalid JSON ({exc.__class__.__name__}:"
                                                     f" {str(exc)[:80]})")
                continue
            try:
                yield line_no, offset, parse_conversation(obj, line=line_no)
            except MalformedLine as exc:
                yield line_no, offset, exc


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

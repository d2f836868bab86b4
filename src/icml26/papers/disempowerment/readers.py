"""Input files: encoding and format detection, and streaming readers with byte offsets (resume).

Formats (``format="auto"`` picks one from the extension and the first byte):

- ``jsonl``: one JSON object per line (our format, OpenAI-style ``messages``, ShareGPT
  ``conversations``; see :func:`.jsonl.parse_conversation`);
- ``json``: one JSON array of such objects (common for ShareGPT dumps), streamed record by record;
- ``csv``: one row per message, ``conversation id, role, text, timestamp`` (optional columns
  ``user_id``, ``approval``, ``domain``); a header row names the columns (several spellings are
  accepted, see :data:`CSV_COLUMNS`), without one the first four columns are taken in that order.
  The rows of one conversation must be consecutive (a conversation id that reappears later is a
  duplicate). ``.tsv`` files are tab-separated.

Encodings: UTF-8 (a byte-order mark is skipped), or Latin-1 / Windows-1252 when asked
(``encoding="latin-1"`` / ``"cp1252"``). UTF-16 and UTF-32 files, files with NUL bytes and UTF-8
files whose first 64 KiB look like Latin-1 are refused with :class:`InputError` and a message that
says how to convert them; a single line that is not valid UTF-8 is reported and skipped.

Every reader yields ``(record_number, start_offset, end_offset, item)`` with ``item`` a
:class:`~.jsonl.Conversation`, a :class:`~.jsonl.MalformedLine` or ``None`` (a blank line), and
can start at any ``end_offset`` it yielded. :func:`read_at` re-reads the conversation that starts
at ``start_offset`` (the pipeline quotes from the file at the end instead of keeping text).
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .jsonl import Conversation, MalformedLine, parse_conversation

FORMATS = ("auto", "jsonl", "json", "csv")
ENCODINGS = {"utf-8": "utf-8", "utf8": "utf-8", "latin-1": "latin-1", "latin1": "latin-1",
             "iso-8859-1": "latin-1", "cp1252": "cp1252", "windows-1252": "cp1252"}
HEAD_BYTES = 65536
MAX_RECORD_BYTES = 64 << 20
CSV_COLUMNS = {
    "id": ("conversation_id", "conversation", "conv_id", "thread_id", "chat_id", "session_id",
           "dialog_id", "dialogue_id", "id"),
    "role": ("role", "speaker", "from", "author", "sender"),
    "text": ("text", "content", "message", "value", "body", "utterance"),
    "timestamp": ("timestamp", "time", "created_at", "date", "datetime", "ts"),
    "user_id": ("user_id", "user", "customer_id", "account_id"),
    "approval": ("approval", "rating", "feedback", "thumbs"),
    "domain": ("domain", "topic", "category"),
}


class InputError(ValueError):
    """The input cannot be read as conversations (empty, wrong encoding, bad options): the command
    line exits 2 with this message."""


@dataclass(frozen=True)
class Source:
    """A sniffed input file: ``format`` in jsonl/json/csv, Python ``encoding``, ``start`` (the
    byte offset after a byte-order mark), ``delimiter`` (CSV), ``fingerprint`` (size and a hash of
    the first 64 KiB: a checkpoint is reused only for the same file)."""

    path: Path
    format: str
    encoding: str
    start: int
    delimiter: str
    fingerprint: dict

    @property
    def unit(self) -> str:
        return {"jsonl": "line", "json": "record", "csv": "row"}[self.format]


def _norm(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def _csv_header(cells: list[str]) -> dict[str, int] | None:
    names = [_norm(c) for c in cells]
    cols = {}
    for key, options in CSV_COLUMNS.items():
        for opt in options:
            if opt in names and names.index(opt) not in cols.values():
                cols[key] = names.index(opt)
                break
    return cols if {"role", "text"} <= set(cols) else None


def sniff(path: str | Path, format: str = "auto", encoding: str = "utf-8") -> Source:
    """Check the file and choose its format and encoding; :class:`InputError` with a one-line
    reason when it cannot be read (missing file: :class:`FileNotFoundError`)."""
    path = Path(path)
    if format not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    enc = ENCODINGS.get(str(encoding).strip().lower())
    if enc is None:
        raise InputError(f"encoding must be one of {', '.join(sorted(set(ENCODINGS.values())))}, "
                         f"got {encoding!r}")
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    size = path.stat().st_size
    fp = {"size": size, "head_sha256": hashlib.sha256(head).hexdigest()}
    conv = "convert it to UTF-8 first, e.g. iconv -f {src} -t UTF-8 IN > OUT"
    if head[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        raise InputError(f"{path.name} is UTF-32 (byte-order mark); " + conv.format(src="UTF-32"))
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError(f"{path.name} is UTF-16 (byte-order mark); " + conv.format(src="UTF-16"))
    start = 3 if head[:3] == b"\xef\xbb\xbf" else 0
    body = head[start:]
    if not body.strip():
        raise InputError(f"{path.name} is empty: no conversations to analyse")
    if b"\x00" in body[:4096]:
        raise InputError(f"{path.name} contains NUL bytes: UTF-16/UTF-32 without a byte-order "
                         "mark, or not a text file; " + conv.format(src="UTF-16"))
    if enc == "utf-8":
        bad = good = 0
        for line in body.splitlines()[:-1] if len(head) == HEAD_BYTES else body.splitlines():
            if max(line, default=0) < 0x80:
                continue
            try:
                line.decode("utf-8")
                good += 1
            except UnicodeDecodeError:
                bad += 1
        if bad and bad >= good:
            raise InputError(f"{path.name} is not UTF-8 ({bad} of the first lines with non-ASCII "
                             "bytes do not decode; it looks like Latin-1 or Windows-1252): pass "
                             "--encoding latin-1 (or cp1252), or " + conv.format(src="LATIN1"))
    fmt = format
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    if fmt == "auto":
        first = body.lstrip()[:1]
        if path.suffix.lower() in (".csv", ".tsv"):
            fmt = "csv"
        elif first == b"[":
            fmt = "json"
        elif first == b"{":
            fmt = "jsonl"
        else:
            line = body.split(b"\n", 1)[0].decode(enc, "replace")
            cells = next(csv.reader([line], delimiter=delimiter), [])
            fmt = "csv" if _csv_header(cells) else "jsonl"
    return Source(path=path, format=fmt, encoding=enc, start=start, delimiter=delimiter,
                  fingerprint=fp)


def _decode(raw: bytes, enc: str, number: int) -> str | MalformedLine:
    try:
        return raw.decode(enc, "strict" if enc == "utf-8" else "replace")
    except UnicodeDecodeError:
        return MalformedLine(number, "not valid UTF-8 (wrong encoding?)")


def _iter_jsonl(src: Source, offset: int, number: int) -> Iterator:
    with open(src.path, "rb") as fh:
        fh.seek(max(offset, src.start))
        pos = max(offset, src.start)
        for raw in fh:
            number += 1
            start, pos = pos, pos + len(raw)
            s = raw.strip()
            if not s:
                yield number, start, pos, None
                continue
            text = _decode(s, src.encoding, number)
            if isinstance(text, MalformedLine):
                yield number, start, pos, text
                continue
            try:
                obj = json.loads(text.lstrip("\ufeff"))
            except ValueError as exc:
                yield number, start, pos, MalformedLine(number, _json_reason(exc))
                continue
            except RecursionError:
                yield number, start, pos, MalformedLine(number, "invalid JSON (nested too deeply)")
                continue
            try:
                yield number, start, pos, parse_conversation(obj, line=number)
            except MalformedLine as exc:
                yield number, start, pos, exc


def _json_reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):   # msg is fixed vocabulary, pos a number
        return f"invalid JSON ({exc.msg} at column {exc.colno})"
    return "invalid JSON"


def _iter_json_array(src: Source, offset: int, number: int) -> Iterator:
    """Records of one JSON array, streamed: raw_decode on a growing decoded buffer."""
    dec = json.JSONDecoder()
    with open(src.path, "rb") as fh:
        pos = max(offset, src.start)
        fh.seek(pos)
        inc = codecs.getincrementaldecoder(src.encoding)("strict" if src.encoding == "utf-8"
                                                        else "replace")
        buf, eof, opened = "", False, offset > src.start

        def more() -> bool:
            nonlocal buf, eof
            if eof:
                return False
            chunk = fh.read(1 << 20)
            try:
                buf += inc.decode(chunk, final=not chunk)
            except UnicodeDecodeError:
                eof = True
                raise
            eof = not chunk
            return True

        while True:
            # skip whitespace, the opening bracket and commas
            i = 0
            while True:
                while i < len(buf) and (buf[i].isspace() or buf[i] == "," or
                                        (buf[i] == "[" and not opened)):
                    opened = opened or buf[i] == "["
                    i += 1
                if i < len(buf):
                    break
                pos += len(buf[:i].encode(src.encoding, "replace"))
                buf, i = "", 0
                try:
                    if not more():
                        return
                except UnicodeDecodeError:
                    yield number + 1, pos, pos, MalformedLine(
                        number + 1, "not valid UTF-8 (wrong encoding?); the rest is skipped")
                    return
            pos += len(buf[:i].encode(src.encoding, "replace"))
            buf = buf[i:]
            if buf[0] == "]":
                return
            if not opened:
                yield number + 1, pos, pos, MalformedLine(number + 1, "a JSON file must hold an "
                                                          "array of conversations")
                return
            while True:
                try:
                    obj, end = dec.raw_decode(buf)
                    break
                except ValueError as exc:
                    try:
                        grown = len(buf) < MAX_RECORD_BYTES and more()
                    except UnicodeDecodeError:
                        grown = False
                    if not grown:
                        number += 1
                        yield number, pos, pos, MalformedLine(
                            number, _json_reason(exc) + "; the rest of the array is skipped")
                        return
            number += 1
            start = pos
            pos += len(buf[:end].encode(src.encoding, "replace"))
            buf = buf[end:]
            try:
                yield number, start, pos, parse_conversation(obj, line=number)
            except MalformedLine as exc:
                yield number, start, pos, exc


def _iter_csv(src: Source, offset: int, number: int) -> Iterator:
    """Conversations from consecutive rows sharing a conversation id."""
    csv.field_size_limit(MAX_RECORD_BYTES)
    with open(src.path, "rb") as fh:
        header_cols = None
        fh.seek(src.start)
        first = fh.readline()
        cells = next(csv.reader([first.decode(src.encoding, "replace")],
                                delimiter=src.delimiter), [])
        header_cols = _csv_header(cells)
        data_start = src.start + (len(first) if header_cols else 0)
        cols = header_cols or {"id": 0, "role": 1, "text": 2, "timestamp": 3}
        pos = max(offset, data_start)
        fh.seek(pos)
        state = {"consumed": pos, "bad": False}

        def lines():
            for raw in fh:
                state["consumed"] += len(raw)
                try:
                    yield raw.decode(src.encoding, "strict" if src.encoding == "utf-8"
                                     else "replace")
                except UnicodeDecodeError:
                    state["bad"] = True
                    yield raw.decode(src.encoding, "replace")

        reader = csv.reader(lines(), delimiter=src.delimiter)
        group: dict | None = None

        def finish(g: dict):
            if g["bad"]:
                return MalformedLine(g["number"], g["bad"])
            obj = {"id": g["id"], "messages": g["messages"]}
            for k in ("timestamp", "user_id", "approval", "domain"):
                if g.get(k) not in (None, ""):
                    obj[k] = g[k]
            obj = _numeric_timestamps(obj)
            if isinstance(obj.get("approval"), str):
                a = obj["approval"].strip().lower()
                obj["approval"] = {"1": 1, "-1": -1, "0": 0, "true": True,
                                   "false": False}.get(a, a)
            try:
                return parse_conversation(obj, line=g["number"])
            except MalformedLine as exc:
                return exc

        while True:
            row_start = state["consumed"]
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error:
                number += 1
                if group is not None:
                    yield group["last"], group["start"], row_start, finish(group)
                    group = None
                yield number, row_start, state["consumed"], MalformedLine(
                    number, "invalid CSV row; the rest of the file is skipped")
                return
            number += 1
            bad, state["bad"] = state["bad"], False
            if not row or not any(c.strip() for c in row):
                if group is not None:
                    group["last"] = number
                continue
            get = {k: (row[i] if i < len(row) else None) for k, i in cols.items()}
            cid = get.get("id") if "id" in cols else None
            if cid is None or cid == "":
                cid = f"row-{number}"
            if group is not None and cid != group["id"]:
                yield group["last"], group["start"], row_start, finish(group)
                group = None
            if group is None:
                group = {"id": cid, "start": row_start, "number": number, "messages": [],
                         "bad": False}
            group["last"] = number
            if bad:
                group["bad"] = "not valid UTF-8 (wrong encoding?)"
            if get.get("role") is None or get.get("text") is None:
                group["bad"] = group["bad"] or f"row {number} has fewer columns than the header"
                continue
            group["messages"].append({"role": get["role"], "content": get["text"]})
            for k in ("timestamp", "user_id", "domain"):
                if group.get(k) in (None, "") and get.get(k) not in (None, ""):
                    group[k] = get[k]
            if get.get("approval") not in (None, ""):
                group["approval"] = get["approval"]
        if group is not None:
            yield group["last"], group["start"], state["consumed"], finish(group)


def _numeric_timestamps(obj: dict) -> dict:
    ts = obj.get("timestamp")
    if isinstance(ts, str):
        try:
            obj["timestamp"] = float(ts)
        except ValueError:
            pass
    return obj


def iter_source(src: Source, start_offset: int = 0, start_number: int = 0) -> Iterator:
    """``(record_number, start_offset, end_offset, item)`` from ``start_offset`` on."""
    if src.format == "jsonl":
        return _iter_jsonl(src, start_offset, start_number)
    if src.format == "json":
        return _iter_json_array(src, start_offset, start_number)
    return _iter_csv(src, start_offset, start_number)


def read_at(src: Source, offset: int) -> Conversation | None:
    """The conversation whose record starts at byte ``offset`` (None if it is not one)."""
    for _, _, _, item in iter_source(src, offset, 0):
        if item is None:
            continue
        return item if isinstance(item, Conversation) else None
    return None


__all__ = ["CSV_COLUMNS", "ENCODINGS", "FORMATS", "InputError", "Source", "iter_source",
           "read_at", "sniff"]

"""A disk cache of chat completions keyed by (model, messages, sampling parameters).

One JSON file per completion, ``DIR/<2 hex>/<64 hex>.json``, written atomically (temp file in the
same folder, then ``os.replace``), so that concurrent writers and interrupted runs never leave a
half-written entry. The key is the SHA-256 of the canonical JSON of the model name, the messages
and every sampling parameter (seed and temperature included): a rerun with the same seed is
served from disk and makes no request, and a paper's LLM run can be replayed from its cache.

A stochastic request (temperature > 0) is cached too: the cache then pins the first sample drawn
for that seed, which is what reproducibility asks for.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .messages import Message, SamplingParams

CACHE_FORMAT = 1


def cache_key(model: str, messages: list[Message], params: SamplingParams) -> str:
    """The stable hex SHA-256 of ``(model, messages, params)``.

    Canonical JSON (sorted keys, no whitespace, UTF-8), so the key does not depend on dict order,
    the Python version or the platform.
    """
    payload = {"format": CACHE_FORMAT, "model": model, "messages": messages,
               "params": params.to_dict()}
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Completions on disk under ``directory`` (created on first write).

    Examples
    --------
    >>> import tempfile
    >>> cache = ResponseCache(tempfile.mkdtemp())
    >>> key = cache_key("m", [{"role": "user", "content": "hi"}], SamplingParams())
    >>> cache.get(key) is None
    True
    >>> cache.put(key, {"text": "hello"}); cache.get(key)["text"]
    'hello'
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise NotADirectoryError(f"cache_dir {str(self.directory)!r} exists and is not a folder")

    def path(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None when absent or unreadable (a corrupt file is a miss)."""
        try:
            with open(self.path(key), encoding="utf-8") as fh:
                entry = json.load(fh)
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        return entry if isinstance(entry, dict) else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Write ``entry`` (JSON-able) atomically."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:8]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh, ensure_ascii=False, allow_nan=False)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("??/*.json")) if self.directory.is_dir() else 0

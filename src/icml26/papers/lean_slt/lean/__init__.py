"""Vendored statement text of the Lean declarations (Apache-2.0; see README.md in this folder)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["lean_statements"]


@cache
def lean_statements() -> dict[str, Any]:
    """The vendored ``statements.json``: repository, commit, license and ``declarations``.

    ``declarations`` maps a Lean name to ``{"file", "line", "kind", "text"}``; ``text`` is the
    declaration header up to the ``:=`` that starts the proof (no proofs are vendored).
    """
    raw = resources.files(__name__).joinpath("statements.json").read_text(encoding="utf-8")
    return json.loads(raw)

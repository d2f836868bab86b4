"""The paper's taxonomy (Sharma et al., arXiv 2601.19062, section 2): three primitives of
situational disempowerment potential, each rated on the ordinal scale none < mild < moderate < severe.

The four amplifying factors (authority projection, attachment, reliance, vulnerability) are part of
the paper's schema; here vulnerability exists only as a latent variable of the synthetic corpus
(it raises the primitives' rates) and is not classified (our choice, see README).
"""

from __future__ import annotations

AXES: tuple[str, ...] = ("reality", "value_judgment", "action")
AXIS_TITLES = {"reality": "reality distortion", "value_judgment": "value-judgment distortion",
               "action": "action distortion"}
LEVELS: tuple[str, ...] = ("none", "mild", "moderate", "severe")
NONE, MILD, MODERATE, SEVERE = range(4)


def level_index(value) -> int:
    """A level name (``"severe"``) or index (0..3) as an index; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"not a severity level: {value!r}")
    if isinstance(value, int) and 0 <= value < len(LEVELS):
        return value
    if isinstance(value, str) and value.strip().lower() in LEVELS:
        return LEVELS.index(value.strip().lower())
    raise ValueError(f"not a severity level: {value!r} (one of {LEVELS} or 0..3)")

"""Privacy layers of the Clio design (Tamkin, McCain et al., arXiv 2412.13678, section 2):
PII scrubbing, minimum aggregation thresholds, and an auditor that rates each summary before it is
published.

- :func:`scrub_pii`: regex patterns for e-mail addresses, URLs, phone numbers, long digit runs
  (IDs, card numbers) and personal names from a gazetteer (first names, plus the capitalised word
  that follows one). Patterns are ours; the gazetteer is a short list of common given names.
- :func:`audit_text`: a rule-based stand-in for Clio's LLM privacy auditor, scoring a summary on
  Clio's 1-5 scale (1 = identifies someone, 5 = nothing private): residual PII patterns score 1,
  identifier-like tokens (letters mixed with digits) and capitalised words that are not in the
  summary vocabulary score 2. Clio removes clusters that fail the auditor; so does the pipeline.
- The aggregation threshold (``k_min`` distinct users per published cluster) is applied in
  :mod:`.pipeline`. Clio withholds its value; CanaryBench (arXiv 2601.18834) uses 25.

These are heuristics, not differential privacy (see Urania, arXiv 2506.04681, for a DP design).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"')\]]+", re.IGNORECASE)
# phones: +country, (area) and 7-15 digits with spaces, dots or dashes between groups
PHONE = re.compile(r"(?<![\w.])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?)?\d{2,5}(?:[\s.-]\d{2,6}){1,4}(?![\w])")
LONG_DIGITS = re.compile(r"\b\d{6,}\b")
ID_TOKEN = re.compile(r"\b(?=[A-Za-z-]*\d)(?=[\d-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b|"
                      r"\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{5,}\b")

GIVEN_NAMES = frozenset("""
aaron adam adrian aisha alex alexander alice amanda amber amy ana andrea andrew angela anna anthony
ashley barbara ben benjamin beth brandon brian carlos carol caroline catherine charles chloe chris
christina christopher claire daniel david deborah diana dylan edward elena elizabeth emily emma eric
ethan fatima frank gabriel george grace hannah harry helen henry ian isabella jack jacob james jane
jason jennifer jessica john jonathan jose joseph joshua julia justin karen kate kevin kim laura
lauren linda lisa lucas lucy luis maria mark mary matthew megan melissa michael michelle mohammed
nancy natalie nathan nicole noah olivia oliver patricia paul peter priya rachel rebecca richard
robert ryan samuel sandra sarah sophia stephanie steven susan thomas tom tyler victoria william
yuki zoe omar leila ravi mei wei hiro sven ingrid pablo lucia marco giulia
""".split())
_NAME_RUN = re.compile(r"\b([A-Z][a-z]+)(\s+[A-Z][a-z]+)?\b")


@dataclass(frozen=True)
class PrivacyConfig:
    """The protections of one analysis run.

    Attributes
    ----------
    scrub_pii : bool -- regex/gazetteer scrubbing before facets are stored
    k_min : int -- minimum distinct users per published cluster (1 = no threshold); default 25
        from CanaryBench (Clio withholds its own value)
    min_auditor_score : int in 1..5 -- publish a cluster only if the auditor scores its summary at
        least this (1 = no auditor); Clio's scale, threshold 4 our choice
    n_quotes : int -- verbatim (scrubbed) first user messages quoted per cluster summary; 0 by
        default (Clio paraphrases its quotes; a local pipeline cannot, so it quotes nothing unless
        asked; the reproduction stress-tests the other layers with 5)
    """

    scrub_pii: bool = True
    k_min: int = 25
    min_auditor_score: int = 4
    n_quotes: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.k_min, int) or self.k_min < 1:
            raise ValueError(f"k_min must be an int >= 1, got {self.k_min!r}")
        if self.min_auditor_score not in (1, 2, 3, 4, 5):
            raise ValueError(f"min_auditor_score must be in 1..5, got {self.min_auditor_score!r}")
        if not isinstance(self.n_quotes, int) or self.n_quotes < 0:
            raise ValueError(f"n_quotes must be an int >= 0, got {self.n_quotes!r}")

    @classmethod
    def off(cls, n_quotes: int = 2) -> PrivacyConfig:
        """No protection at all (the ablation that shows the tests have teeth)."""
        return cls(scrub_pii=False, k_min=1, min_auditor_score=1, n_quotes=n_quotes)


def _names(text: str) -> str:
    def repl(m: re.Match) -> str:
        if m.group(1).lower() in GIVEN_NAMES:
            return "[NAME]"
        return m.group(0)
    return _NAME_RUN.sub(repl, text)


def scrub_pii(text: str) -> str:
    """``text`` with e-mails, URLs, phone numbers, long digit runs, identifier-like tokens and
    gazetteer names (with the capitalised word after them) replaced by ``[EMAIL]`` etc.

    >>> scrub_pii("Mail jane.doe@x.org or call +1 415-555-0100, says Maria Lopez")
    'Mail [EMAIL] or call [PHONE], says [NAME]'
    """
    if not isinstance(text, str):
        raise TypeError(f"scrub_pii expects a string, got {type(text).__name__}")
    text = EMAIL.sub("[EMAIL]", text)
    text = URL.sub("[URL]", text)
    text = PHONE.sub("[PHONE]", text)
    text = LONG_DIGITS.sub("[NUMBER]", text)
    text = ID_TOKEN.sub("[ID]", text)
    return _names(text)


def find_pii(text: str) -> list[str]:
    """The PII-pattern matches in ``text`` (e-mails, URLs, phones, long digits, IDs, names)."""
    hits = [m.group(0) for p in (EMAIL, URL, PHONE, LONG_DIGITS, ID_TOKEN) for m in p.finditer(text)]
    hits += [m.group(0) for m in _NAME_RUN.finditer(text) if m.group(1).lower() in GIVEN_NAMES]
    return hits


def audit_text(text: str, vocabulary: frozenset[str] = frozenset()) -> tuple[int, list[str]]:
    """Rule-based privacy auditor: ``(score in 1..5, reasons)`` on Clio's scale.

    1: a PII pattern remains; 2: an identifier-like token, or a capitalised word (not at a
    sentence start) that is not in ``vocabulary`` (lower-cased words the summary template and
    the taxonomy use) -- a proper-noun heuristic; 5 otherwise. Placeholders such as ``[EMAIL]``
    are not PII.
    """
    stripped = re.sub(r"\[[A-Z]+\]", " ", text)
    reasons = []
    pii = find_pii(stripped)
    if pii:
        return 1, [f"PII pattern ({len(pii)} match(es))"]
    if ID_TOKEN.search(stripped):
        reasons.append("identifier-like token")
    for m in re.finditer(r"(?<![.!?:\"]\s)(?<!^)\b[A-Z][a-zA-Z]+\b", stripped):
        w = m.group(0)
        start = m.start()
        prev = stripped[:start].rstrip()
        if not prev or prev[-1] in ".!?:\"'(\n":
            continue
        if w.lower() not in vocabulary and w not in ("I", "AI"):
            reasons.append("unknown capitalised word")
            break
    return (2, reasons) if reasons else (5, [])


def find_leaks(folder, strings) -> list[str]:
    """The ``strings`` (e.g. canaries) that occur in any file under ``folder`` (read as UTF-8 text,
    undecodable bytes replaced); a release check to run on a report before sharing it."""
    from pathlib import Path

    wanted = [s for s in dict.fromkeys(strings) if s]
    found: set[str] = set()
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file():
            text = p.read_bytes().decode("utf-8", "replace")
            found.update(s for s in wanted if s in text)
    return [s for s in wanted if s in found]

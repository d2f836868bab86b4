"""Privacy layers of the Clio design (Tamkin, McCain et al., arXiv 2412.13678, section 2):
PII scrubbing, minimum aggregation thresholds, and an auditor that rates each summary before it is
published.

- :func:`scrub_pii`: our own patterns, applied in a fixed order (URLs with a scheme, e-mails and
  obfuscated e-mails such as "jane at example dot org", IPv4/IPv6 addresses, URLs without a scheme,
  IBANs with or without spaces, card numbers, SSNs, UK National Insurance numbers, full dates and
  dates of birth, postcodes (UK, Canada, US ZIP+4 and state + ZIP, Dutch, 5-digit + city), street
  addresses (English "221B Baker Street", continental "12 rue de la Paix" / "Calle Mayor 12",
  compounds "Hauptstrasse 5", units, PO boxes), identifiers and secrets after a cue ("passport
  no.", "order #", "password:", "?token="), phone numbers (7+ digits, international forms), long
  digit runs, letter-digit identifiers, and personal names: a gazetteer of given names and surnames
  of many origins (:mod:`.names`), capitalised words after name cues ("my name is", "I'm", "Mr.",
  "Dr.", "Dear", signatures such as "Regards, ...", relations such as "my sister ..."), every other
  capitalised word inside a sentence that is not on a short list of ordinary capitalised words
  (days, months, languages), and two capitalised words at a sentence start. It over-scrubs on
  purpose (product names and places become ``[NAME]``); the pipeline only quotes scrubbed text.
- :func:`audit_text`: a rule-based stand-in for Clio's LLM privacy auditor, scoring a summary on
  Clio's 1-5 scale (1 = identifies someone, 5 = nothing private): residual PII patterns score 1,
  identifier-like tokens (letters mixed with digits) and capitalised words that are not in the
  summary vocabulary score 2. Clio removes clusters that fail the auditor; so does the pipeline.
- The aggregation threshold (``k_min`` distinct users per published cluster and per row of every
  ``by_*`` table) is applied in :mod:`.pipeline`. Clio withholds its value; CanaryBench
  (arXiv 2601.18834) uses 25.

What it misses (see the README): names written in lower case without a cue ("ask david"), a single
unknown capitalised name at the very start of a sentence ("Zorq said ..."), street names without a
number, spelled-out numbers ("four one five ..."), free-text descriptions that identify someone
without any identifier. These are heuristics, not differential privacy (see Urania,
arXiv 2506.04681, for a DP design). Microsoft Presidio was evaluated and not used: its analyzer
needs a spaCy model downloaded at run time, and its e-mail/URL recognizers fetch the public-suffix
list over the network (README).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from .names import ALL_NAMES, AMBIGUOUS

_MONTHS = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
           r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_ORD = r"(?:st|nd|rd|th)?"
_STOP = (r"(?:the|a|an|of|to|in|on|at|my|your|his|her|our|their|its|down|up|this|that|and|or|for|"
         r"from|by|with|across|along|past|near|over|under|into|onto|is|are|was|were|be|been|it|"
         r"i|we|you|they|he|she|me|us|them|more|less|than|then|per|each|every|about|around|times?|"
         r"minutes?|hours?|days?|weeks?|months?|years?|miles?|km|kilometers?|blocks?)")
_STREET = (r"(?:street|st|avenue|ave|road|rd|lane|ln|drive|dr|boulevard|blvd|court|ct|place|pl|"
           r"terrace|way|close|crescent|cres|square|sq|highway|hwy|parkway|pkwy|circle|cir|row|"
           r"gardens|grove|hill|mews|walk|alley|trail|loop|plaza|esplanade|parade|quay|wharf|"
           r"green|park|rise|heights|broadway|embankment|gate)")
_CONTINENTAL = (r"(?:rue|avenue|av\.|boulevard|bd\.?|chemin|all[ée]e|impasse|quai|place|cours|"
                r"via|viale|piazza|piazzale|corso|largo|vicolo|calle|avenida|avda\.?|plaza|paseo|"
                r"carrer|rua|travessa|pra[çc]a|ulica|ul\.|aleja|al\.|strada|calea|bulevardul|"
                r"sokak|caddesi|cad\.)")
_COMPOUND = (r"(?:stra(?:ß|ss)e|str\.|gasse|weg|platz|allee|ring|damm|ufer|steig|chaussee|straat|"
             r"laan|gracht|plein|singel|kade|dijk|vej|gade|gatan|gata|v[äa]gen|veien|gate|katu)")
_US_STATES = ("AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE "
              "NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY").split()
_ID_CUES = (r"(?:passport|driver'?s\s+licen[cs]e|licen[cs]e|national\s+id|id\s+card|identity\s+card|"
            r"id|ssn|sin|nin|ni\s+number|national\s+insurance(?:\s+number)?|social\s+security"
            r"(?:\s+number)?|tax\s+(?:id|number|code)|tin|vat|nhs(?:\s+number)?|medicare|medicaid|"
            r"insurance|account|acct|iban|bic|swift|sort\s+code|routing|member(?:ship)?|customer|"
            r"client|policy|case|ref(?:erence)?|order|ticket|invoice|booking|confirmation|tracking|"
            r"employee|staff|student|patient|record|mrn|claim|badge|serial|plate|registration|reg)")
_SECRET_CUES = (r"(?:password|passwd|pwd|passcode|pin(?:\s+code)?|otp|one[\s-]time\s+code|"
                r"verification\s+code|security\s+code|cvv|cvc|token|access[_\s-]?token|"
                r"api[_\s-]?key|apikey|secret|private\s+key|session(?:[_\s-]?id)?|sid)")


def _digits(s: str) -> int:
    return sum(ch.isdigit() for ch in s)


# (placeholder, pattern, validator of the match or None); applied in this order
_RULES: list[tuple[str, re.Pattern, Callable[[re.Match], bool] | None]] = [
    ("[URL]", re.compile(r"\b(?:(?:https?|ftp|sftp|file)://|mailto:|www\.)"
                         r"[^\s<>\"']*[^\s<>\"'.,;:!?)\]}]", re.IGNORECASE), None),
    ("[EMAIL]", re.compile(r"[\w.%+-]+@[\w-]+(?:\.[\w-]+)+"), None),
    ("[EMAIL]", re.compile(
        r"\b[\w.+-]+(?:\s*[(\[{<]\s*(?:at|@)\s*[)\]}>]\s*|\s+(?:at|AT)\s+|\s*@\s*)"
        r"[\w-]+(?:(?:\s*[(\[{<]\s*(?:dot|\.)\s*[)\]}>]\s*|\s+(?:dot|DOT)\s+|\s+\.\s+|\.)[\w-]+)*"
        r"(?:\s*[(\[{<]\s*(?:dot|\.)\s*[)\]}>]\s*|\s+(?:dot|DOT)\s+|\s+\.\s+|\.)[^\W\d_]{2,}\b"),
     None),
    ("[IP]", re.compile(r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}"
                        r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:/\d{1,2})?(?::\d{1,5})?(?![\d]|\.\d)"),
     None),
    ("[IP]", re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}(?![\w:])|"
                        r"(?<![\w:.])(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?::"
                        r"(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?(?:%\w+)?(?![\w:])"),
     lambda m: len(m.group(0)) >= 3),
    ("[URL]", re.compile(r"(?<![\w@.-])(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
                         r"[A-Za-z]{2,24}(?![\w-])(?::\d{2,5})?"
                         r"(?:[/?#][^\s<>\"']*[^\s<>\"'.,;:!?)\]}])?"), None),
    ("[IBAN]", re.compile(r"\b[A-Z]{2}\d{2}(?:[ \-]?[A-Z0-9]{4}){2,7}(?:[ \-]?[A-Z0-9]{1,3})?\b"),
     None),
    ("[CARD]", re.compile(r"(?<![\d])(?:\d[ \-]?){12,18}\d(?!\d)"), None),
    ("[SSN]", re.compile(r"(?<![\d-])\d{3}[- ]\d{2}[- ]\d{4}(?![\d-])"), None),
    ("[ID]", re.compile(r"\b[A-CEGHJ-PR-TW-Z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b"), None),
    ("[DATE]", re.compile(r"(?<![\d.])\d{1,2}[/.\-]\d{1,2}[/.\-](?:\d{4}|\d{2})(?![\d.]|\.\d)|"
                          r"\b(?:19|20)\d{2}[/.\-]\d{1,2}[/.\-]\d{1,2}\b|"
                          r"(?i:\b\d{1,2}" + _ORD + r"(?:\s+of)?\s+" + _MONTHS +
                          r"\.?,?\s+\d{4}\b|\b" + _MONTHS + r"\.?\s+\d{1,2}" + _ORD +
                          r",?\s+\d{4}\b)"), None),
    ("[DATE]", re.compile(
        r"(?i:\b(?:born(?:\s+on|\s+in)?|dob|d\.o\.b\.?|date\s+of\s+birth|birth\s*date|"
        r"birthday(?:\s+is)?)\s*[:\-]?\s*(?:is\s+|on\s+|was\s+)?)"
        r"(?i:\d{1,2}[/.\-]\d{1,2}(?:[/.\-]\d{2,4})?|" + _MONTHS + r"\.?\s+\d{1,2}" + _ORD +
        r"(?:,?\s+\d{4})?|\d{1,2}" + _ORD + r"(?:\s+of)?\s+" + _MONTHS + r"\.?(?:,?\s+\d{4})?|"
        r"(?:19|20)\d{2})\b"), None),
    ("[POSTCODE]", re.compile(r"(?i:\b(?:[A-Z]{1,2}\d[A-Z\d]?|GIR)\s?\d[A-Z]{2}\b)"), None),
    ("[POSTCODE]", re.compile(r"(?i:\b[ABCEGHJ-NPRSTVXY]\d[A-Z]\s?\d[A-Z]\d\b)"), None),
    ("[POSTCODE]", re.compile(r"\b\d{5}-\d{4}\b|\b(?:" + "|".join(_US_STATES) + r")\s+\d{5}\b|"
                              r"\b\d{4}\s?[A-Z]{2}\b|\b\d{5}\s+[A-ZÄÖÜÉ][a-zäöüßéèàç]+"), None),
    ("[ADDRESS]", re.compile(r"(?i:\bP\.?\s?O\.?\s*Box\s*\d+)"), None),
    ("[ADDRESS]", re.compile(r"(?i:\b(?:apt|apartment|suite|ste|unit|flat|room|floor|fl|bldg|"
                             r"building|block)\b\.?\s*#?\s*\d+[A-Za-z]?\b)"), None),
    ("[ADDRESS]", re.compile(r"\b\d{1,5}[A-Za-z]?(?:[-/]\d{1,4}[A-Za-z]?)?,?\s+"
                             r"(?:(?!(?i:" + _STOP + r")\b)[^\W\d_][\w'’.-]*\s+){0,4}"
                             r"(?i:" + _STREET + r")\b\.?"
                             r"(?:\s+(?:N|S|E|W|NE|NW|SE|SW|North|South|East|West)\b)?"), None),
    ("[ADDRESS]", re.compile(r"(?:\b\d{1,5}[a-z]?,?\s+)?(?i:\b" + _CONTINENTAL + r")\s+"
                             r"(?:(?i:de|del|della|delle|dei|des|du|la|le|les|da|do|dos|das|di|el|"
                             r"von|van|der|l'|d')\s*)*[^\W\d_][\w'’.-]*"
                             r"(?:\s+[A-ZÀ-Ý][\w'’.-]*){0,3}"
                             r"(?:,?\s+(?:n[º°o.]\s*)?\d{1,5}[a-z]?\b)?"),
     lambda m: _digits(m.group(0)) > 0),
    ("[ADDRESS]", re.compile(r"\b[A-ZÄÖÜÅØÆ][\w'’-]{2,}" + r"(?i:" + _COMPOUND + r")"
                             r"\s*\d{1,5}[a-z]?\b"), None),
    ("[SECRET]", re.compile(r"(?<=[?&;])(?i:token|key|sig|signature|code|auth|session|sid|"
                            r"access_token|id|password|pw)=[^\s&#]+"), None),
]
_CUE_VALUE = [
    ("[ID]", re.compile(r"(?i:\b" + _ID_CUES + r"\b)(?:\s*(?i:no\.?|number|num|nr\.?|#|id|code))?"
                        r"\s*(?i:is|was|:|=|-)?\s*#?\s*"
                        r"(?P<v>[A-Za-z0-9][A-Za-z0-9\-/]*(?:[\s\-](?:\d+|[A-Z]{1,4}\d*)\b)*)"),
     lambda m: _digits(m.group("v")) >= 2),
    ("[SECRET]", re.compile(r"(?i:\b" + _SECRET_CUES + r"\b)\s*(?i:is|was|:|=)\s*[\"']?"
                            r"(?P<v>[^\s\"',;]+)"), None),
]
_PHONE = re.compile(r"(?<![\w.+])(?:\+|00)?\d{0,3}[\s.\-]?(?:\(\d{1,4}\)[\s.\-]?)?\d{1,5}"
                    r"(?:[\s.\-]\d{1,6}){1,5}(?:\s*(?:x|ext\.?)\s*\d{1,5})?(?![\w])")
_LONG_DIGITS = re.compile(r"\b\d{6,}\b")
ID_TOKEN = re.compile(r"\b(?=[A-Za-z-]*\d)(?=[\d-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b|"
                      r"\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{5,}\b")
# kept for callers of the old names
EMAIL = _RULES[1][1]
URL = _RULES[0][1]
PHONE = _PHONE
LONG_DIGITS = _LONG_DIGITS

# -- names ------------------------------------------------------------------------------------
GIVEN_NAMES = ALL_NAMES  # the gazetteer (given names and surnames), lower case
_WORD = re.compile(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*")
_TITLES = ("mr mrs ms miss mx dr prof professor sir madam dame lord lady rev reverend fr father "
           "herr frau mme mlle monsieur madame señor senor señora senora sr sra srta don doña dona "
           "dott sig signor signora sheikh mister doctor judge officer detective captain coach "
           "uncle auntie aunt st jr").split()
_RELATIONS = ("wife husband partner boyfriend girlfriend fiancé fiance fiancée fiancee ex son "
              "daughter child kid baby mom mum mother dad father brother sister sibling cousin "
              "aunt uncle niece nephew grandma grandmother grandpa grandfather granddaughter "
              "grandson friend bestie boss manager supervisor colleague coworker co-worker "
              "neighbour neighbor roommate flatmate housemate landlord landlady tenant therapist "
              "counsellor counselor doctor teacher tutor coach lawyer attorney pastor priest imam "
              "rabbi client patient student employee ex-wife ex-husband stepmother stepfather "
              "stepson stepdaughter in-law").split()
_CUE_WEAK = re.compile(
    r"(?i:\b(?:i'?m|i\s+am|this\s+is|it'?s|it\s+is|call\s+me|called|named|known\s+as|aka|signed|"
    r"regards|sincerely|cheers|thanks|thank\s+you|best|love|xoxo|yours|dear|hi|hello|hey|from|"
    r"(?:" + "|".join(_TITLES) + r")\.?|(?:my|our|his|her|their|your|a)\s+(?:best\s+|late\s+|"
    r"old\s+|new\s+|former\s+)?(?:" + "|".join(re.escape(r) for r in _RELATIONS) +
    r")(?:\s*,|\s+(?:named|called|is))?)(?=[\s,.:;!\-—]))[\s,.:;!\-—]*")
_CUE_STRONG = re.compile(r"(?i:\b(?:my\s+name\s+is|my\s+name'?s|(?:full\s+|first\s+|last\s+|sur|"
                         r"user\s*|real\s+)?name\s*(?:is|:|=)|signed\s*:?|sign(?:ed)?\s+off\s+as))"
                         r"[\s,:\"']*")
_COMMON_START = frozenset("""
a about above actually after again all also although always am an and another any anyway are as
at be because been before being below best between both but by can could dear definitely did do
does doing done each either else even ever every first for from further good great had has have
having he hello help her here hers herself hey hi him himself his how however i if im in indeed
into is it its itself just last let lets like many may maybe me might more most much must my
myself never next no nor not now of off often ok okay on once one only or other our ours
ourselves out over own perhaps please possibly probably quite rather really right same she
should since so some still such sure than thank thanks that the their theirs them themselves
then there these they this those though through thus to today tomorrow tonight too two under
until up us very was we well were what whatever when where whether which while who whom whose
why will with within without would yes yesterday yet you your yours yourself yourselves
absolutely honestly frankly certainly clearly obviously surely sorry note update edit ps re
subject question answer write explain show tell give make find create fix describe summarise
summarize translate list compare draft rewrite suggest continue plan help imagine consider
hmm wow oh ah well fine great cool nice awesome alright also i'm i've i'd i'll i’m i’ve i’d i’ll
""".split())
_COMMON_CAPS = frozenset("""
i i'm i've i'd i'll monday tuesday wednesday thursday friday saturday sunday january february
march april may june july august september october november december christmas easter ramadan
eid diwali hanukkah thanksgiving halloween new year english french spanish german italian
portuguese russian chinese mandarin cantonese japanese korean arabic hindi urdu bengali dutch
greek latin turkish polish swedish hebrew god internet
""".split()) | {t for t in _TITLES}


def _fold(w: str) -> str:
    """Lower case without diacritics (``José`` -> ``jose``) for gazetteer look-ups."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", w)
                   if not unicodedata.combining(ch)).lower()


def _is_cap(w: str) -> bool:
    return len(w) > 1 and w[0].isupper() and not w.isupper()


def _sentence_start(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in " \t\"'“‘(*•[":
        i -= 1
    if i < 0 or text[i] in "\n\r":
        return True
    if text[i] in "!?":
        return True
    if text[i] == ".":
        m = re.search(r"([^\W\d_]+)\.$", text[max(0, i - 12):i + 1])
        return not (m and m.group(1).lower() in _TITLES)
    return False


def _name_spans(text: str, catch_all: bool) -> list[tuple[int, int]]:
    """Spans of personal names: gazetteer, cues and (``catch_all``) unknown capitalised words."""
    toks = [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(text)]
    if not toks:
        return []
    flag = [False] * len(toks)
    index = {s: k for k, (s, _, _) in enumerate(toks)}

    def next_tok(pos: int) -> int | None:
        for k in range(len(toks)):
            if toks[k][0] >= pos:
                return k
        return None

    def adjacent(k: int) -> bool:  # token k+1 follows token k after whitespace only
        return k + 1 < len(toks) and not text[toks[k][1]:toks[k + 1][0]].strip()

    for k, (s, _, w) in enumerate(toks):
        low = _fold(w)
        start = _sentence_start(text, s)
        if _is_cap(w) or (w.isupper() and len(w) > 2):
            named = low in ALL_NAMES and (low not in AMBIGUOUS or (adjacent(k) and
                                                                   _is_cap(toks[k + 1][2])))
            if named and not (start and low in _COMMON_START and not adjacent(k)):
                flag[k] = True
            elif catch_all and _is_cap(w) and not start and low not in _COMMON_CAPS:
                flag[k] = True
            elif (catch_all and start and _is_cap(w) and low not in _COMMON_START
                  and low not in _COMMON_CAPS and adjacent(k) and _is_cap(toks[k + 1][2])
                  and toks[k + 1][2].lower() not in _COMMON_CAPS):
                flag[k] = flag[k + 1] = True
        if flag[k] and adjacent(k) and _is_cap(toks[k + 1][2]) and \
                toks[k + 1][2].lower() not in _COMMON_CAPS:
            flag[k + 1] = True  # a capitalised word after a name: the surname
    for rx, strong in ((_CUE_WEAK, False), (_CUE_STRONG, True)):
        for m in rx.finditer(text):
            k = index.get(m.end()) if m.end() in index else next_tok(m.end())
            taken = 0
            while k is not None and k < len(toks) and taken < 3:
                w = toks[k][2]
                if taken and text[toks[k - 1][1]:toks[k][0]].strip(" -'’"):
                    break
                if _is_cap(w) or (w.isupper() and len(w) > 1 and _fold(w) in ALL_NAMES):
                    if w.lower() in _COMMON_START and not strong:
                        break
                    flag[k] = True
                elif strong and w.lower() not in _COMMON_START and taken < 2:
                    flag[k] = True
                elif w.lower() in ("van", "von", "de", "der", "den", "da", "di", "du", "del",
                                   "della", "le", "la", "al", "el", "bin", "ibn", "ben", "abu",
                                   "ter", "ten", "dos", "das", "y"):
                    pass
                else:
                    break
                taken += 1
                k += 1
    spans: list[tuple[int, int]] = []
    for k, f in enumerate(flag):
        if not f:
            continue
        s, e, _ = toks[k]
        if spans and not text[spans[-1][1]:s].strip(" -'’") and flag[k - 1]:
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((s, e))
    return spans


def _replace_spans(text: str, spans: list[tuple[int, int]], tag: str,
                   record: list[str] | None) -> str:
    out, last = [], 0
    for s, e in spans:
        if record is not None:
            record.append(text[s:e])
        out += [text[last:s], tag]
        last = e
    return "".join(out) + text[last:]


def _scrub(text: str, record: list[str] | None, catch_all: bool) -> str:
    def sub(tag, rx, ok, t):
        def repl(m):
            if ok is not None and not ok(m):
                return m.group(0)
            if record is not None:
                record.append(m.group(0))
            return tag
        return rx.sub(repl, t)

    for tag, rx, ok in _RULES:
        text = sub(tag, rx, ok, text)
    for tag, rx, ok in _CUE_VALUE:
        def repl(m, tag=tag, ok=ok):
            if ok is not None and not ok(m):
                return m.group(0)
            if record is not None:
                record.append(m.group("v"))
            return m.group(0)[:m.start("v") - m.start()] + tag
        text = rx.sub(repl, text)
    text = sub("[PHONE]", _PHONE, lambda m: _digits(m.group(0)) >= 7, text)
    text = sub("[NUMBER]", _LONG_DIGITS, None, text)
    text = sub("[ID]", ID_TOKEN, None, text)
    # placeholders are not names
    masked = re.sub(r"\[[A-Z]+\]", lambda m: " " * len(m.group(0)), text)
    return _replace_spans(text, _name_spans(masked, catch_all), "[NAME]", record)


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


def scrub_pii(text: str) -> str:
    """``text`` with personal data replaced by placeholders (``[EMAIL]``, ``[PHONE]``, ``[NAME]``,
    ``[ADDRESS]``, ``[IBAN]``, ``[IP]``, ``[DATE]``, ``[ID]``, ...): see the module docstring for
    what is caught, and the README for what is not.

    >>> scrub_pii("Mail jane.doe@x.org or call +1 415-555-0100, says Maria Lopez")
    'Mail [EMAIL] or call [PHONE], says [NAME]'
    """
    if not isinstance(text, str):
        raise TypeError(f"scrub_pii expects a string, got {type(text).__name__}")
    return _scrub(text, None, catch_all=True)


def find_pii(text: str) -> list[str]:
    """The PII matches in ``text``: every pattern of :func:`scrub_pii` and the names found by the
    gazetteer and the name cues (not the catch-all for unknown capitalised words, which the
    auditor scores separately)."""
    found: list[str] = []
    _scrub(text, found, catch_all=False)
    return found


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


_JSON_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
                   "t": "\t"}


def _unescape(m: re.Match) -> str:
    e = m.group(1)
    return chr(int(e[1:], 16)) if e[0] == "u" else _SIMPLE_ESCAPES[e]


def find_leaks(folder, strings) -> list[str]:
    """The ``strings`` (e.g. canaries) that occur in any file under ``folder``; a release check
    to run on a report before sharing it. Files are read as UTF-8 (undecodable bytes replaced);
    the match ignores case, and JSON escapes (``\\n``, ``\\uXXXX``) in a file are decoded before
    matching."""
    from pathlib import Path

    wanted = [s for s in dict.fromkeys(strings) if s]
    folded = {s: s.casefold() for s in wanted}
    found: set[str] = set()
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file():
            raw = p.read_bytes().decode("utf-8", "replace")
            text = raw.casefold()
            unescaped = _JSON_ESCAPE.sub(_unescape, raw).casefold()
            found.update(s for s in wanted if s not in found and
                         (folded[s] in text or folded[s] in unescaped))
    return [s for s in wanted if s in found]

"""The closed vocabulary of conversation domains that may appear in a report.

The ``domain`` field of a log is free text (a tag, a topic, or something hostile such as a name);
it never reaches the report as written. :func:`domain_category` maps it to one of
:data:`DOMAINS` by exact match of its normalised form against :data:`SYNONYMS` (no substring
matching, so ``"software jane@example.org"`` is ``"other"``); a missing domain is
``"unspecified"``.
"""

from __future__ import annotations

import re

DOMAINS: tuple[str, ...] = (
    "software", "writing", "education", "business", "science", "creative", "relationships",
    "healthcare", "society", "finance", "spirituality", "legal", "other", "unspecified")

_GROUPS = {
    "software": "software coding programming code development software_development "
                "software_engineering computing computer_science it tech_support devops "
                "data_science web_development",
    "writing": "writing editing copywriting proofreading essays blogging translation",
    "education": "education learning homework tutoring school study studying teaching academic",
    "business": "business work career marketing sales management professional jobs "
                "entrepreneurship productivity",
    "science": "science research math mathematics physics chemistry biology statistics",
    "creative": "creative creative_writing art arts fiction storytelling music poetry "
                "roleplay role_play games gaming",
    "relationships": "relationships relationship dating family interpersonal "
                     "personal_relationships romance love friendship friendships parenting "
                     "marriage",
    "healthcare": "healthcare health medical medicine mental_health wellness wellbeing "
                  "well_being fitness nutrition therapy",
    "society": "society politics news current_events culture social_issues history",
    "finance": "finance money personal_finance investing investment tax taxes banking",
    "spirituality": "spirituality religion faith spiritual astrology",
    "legal": "legal law legal_advice",
}
SYNONYMS: dict[str, str] = {w.replace("_", " "): d for d, ws in _GROUPS.items()
                            for w in ws.split()}
SYNONYMS.update({d: d for d in DOMAINS})


def domain_category(value: str | None) -> str:
    """``value`` mapped to :data:`DOMAINS` (``None`` or blank -> ``"unspecified"``, unknown ->
    ``"other"``).

    >>> domain_category(" Mental-Health "), domain_category("Jane Doe"), domain_category(None)
    ('healthcare', 'other', 'unspecified')
    """
    if value is None:
        return "unspecified"
    key = re.sub(r"[\s\-_/&]+", " ", str(value)).strip().lower()
    if not key:
        return "unspecified"
    return SYNONYMS.get(key, "other")

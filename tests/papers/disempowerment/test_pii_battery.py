"""The scrubber against the PII battery (>= 60 forms), and ordinary text it must leave alone."""

from __future__ import annotations

import pytest

from icml26.papers.disempowerment import audit_text, find_pii, scrub_pii

from .pii_forms import FORMS, ORDINARY


def test_the_battery_is_large():
    assert len(FORMS) >= 60
    assert sum(len(s) for _, s in FORMS) >= 120


@pytest.mark.parametrize("text,planted", FORMS, ids=[t[:40] for t, _ in FORMS])
def test_every_form_is_scrubbed(text, planted):
    out = scrub_pii(text)
    for s in planted:
        assert s.casefold() not in out.casefold(), (text, out, s)
    # the auditor would refuse the raw sentence in a summary (PII pattern or unknown name)
    assert audit_text(text)[0] <= 2 or find_pii(text)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text):
    assert scrub_pii(text) == text


def test_scrub_is_idempotent_on_its_output():
    for text, _ in FORMS:
        once = scrub_pii(text)
        assert scrub_pii(once) == once, text

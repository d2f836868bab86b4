"""PII scrubbing, the auditor, and canary leakage with and without the protections."""

from __future__ import annotations

import json

import pytest

from icml26.papers.disempowerment import (
    OracleClassifier,
    PrivacyConfig,
    WorldSpec,
    analyze,
    audit_text,
    find_leaks,
    scrub_pii,
    write_corpus,
)


@pytest.mark.parametrize("text,tag", [
    ("write to jane.doe+x@mail.example.org now", "[EMAIL]"),
    ("call +1 415-555-0100 tonight", "[PHONE]"),
    ("call (212) 555-0199", "[PHONE]"),
    ("my number is 07700 900123", "[PHONE]"),
    ("ring 555.123.4567", "[PHONE]"),
    ("see https://example.com/a?b=1 for it", "[URL]"),
    ("see www.example.com today", "[URL]"),
    ("account 12345678", "[ID]"),
    ("the total was 12345678", "[NUMBER]"),
    ("my case is REF-ABCDEF-0001", "[ID]"),
    ("I told Maria Lopez about it", "[NAME]"),
    ("ask david tomorrow", "ask david tomorrow"),  # lower-case: not a name by our rule
])
def test_scrub_patterns(text, tag):
    assert tag in scrub_pii(text)


def test_scrub_leaves_ordinary_text():
    for t in ["In 2024 I paid 30 dollars on 12 May", "the car outside is following me",
              "Definitely, about what is real: it is 100% certain"]:
        assert scrub_pii(t) == t


def test_scrub_removes_every_canary_pattern():
    s = scrub_pii("I'm Zorqua Blixvem, reach me at zorqua.abc1@mailbox1.example or "
                  "+44 7256 840175, my case is REF-UDYMYB-0000.")
    for leak in ("zorqua.abc1", "840175", "UDYMYB"):
        assert leak not in s
    assert "Zorqua" not in s   # a name outside the gazetteer, caught by the "I'm" cue
    assert audit_text(s)[0] == 5
    # the auditor still flags an unknown capitalised word that scrubbing did not remove
    assert audit_text("Zorquaina said the cluster is fine")[0] == 5   # a sentence start
    assert audit_text("users said Zorquaina is fine")[0] == 2


def test_auditor_scale():
    assert audit_text("users seek a verdict on another person")[0] == 5
    assert audit_text("contact bob@x.com")[0] == 1
    assert audit_text("users mention order ab12cd34 often")[0] == 1   # identifier pattern
    assert audit_text("users say Quastrew is watching them")[0] == 2  # unknown proper noun
    assert audit_text("Users ask. Then they decide.")[0] == 5   # sentence starts are fine


def test_privacy_config_validation():
    with pytest.raises(ValueError):
        PrivacyConfig(k_min=0)
    with pytest.raises(ValueError):
        PrivacyConfig(min_auditor_score=6)
    assert PrivacyConfig().n_quotes == 0


@pytest.fixture(scope="module")
def canary_world(tmp_path_factory):
    d = tmp_path_factory.mktemp("canary")
    truth = write_corpus(d / "c.jsonl", 4000, 3, WorldSpec(n_canaries=12))
    return d, truth


def _leaked(out, truth):
    return sum(bool(find_leaks(out, c["strings"])) for c in truth.canaries)


def test_zero_canary_leakage_with_protections_and_leakage_without(canary_world):
    d, truth = canary_world
    oracle = OracleClassifier(truth.labels_by_id())
    assert len(truth.canaries) == 12
    rep = analyze(d / "c.jsonl", out_dir=d / "on", classifier=oracle,
                  privacy=PrivacyConfig(k_min=4, n_quotes=5))
    assert rep["clusters"]["published"], "the protected run must publish something to be a test"
    assert all(s["distinct_users"] >= 4 for s in rep["clusters"]["published"])
    assert _leaked(d / "on", truth) == 0
    analyze(d / "c.jsonl", out_dir=d / "off", classifier=oracle, privacy=PrivacyConfig.off(5))
    assert _leaked(d / "off", truth) >= 1


def test_default_report_contains_no_conversation_text(canary_world, small_clf):
    d, truth = canary_world
    analyze(d / "c.jsonl", out_dir=d / "default", classifier=small_clf, min_users=4)
    text = (d / "default" / "report.json").read_text() + (d / "default" / "report.md").read_text()
    with open(d / "c.jsonl") as fh:
        for line in list(fh)[:400]:
            for m in json.loads(line)["messages"]:
                assert m["content"] not in text
    assert not (d / "default" / ".checkpoint.json").exists()
    assert _leaked(d / "default", truth) == 0

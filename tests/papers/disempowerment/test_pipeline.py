"""analyze: malformed lines, determinism, resume, iterables, flat memory, LLM classifier."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from icml26.core.llm import ScriptedChat
from icml26.papers.disempowerment import (
    AnalyzeAborted,
    ChatSchemaClassifier,
    OracleClassifier,
    WorldSpec,
    analyze,
    iter_jsonl,
    parse_conversation,
    parse_levels,
    write_corpus,
)
from icml26.papers.disempowerment.jsonl import MalformedLine


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    truth = write_corpus(d / "c.jsonl", 3000, 1, WorldSpec(n_canaries=4))
    return d / "c.jsonl", truth


def test_malformed_lines_reported_and_rest_processed(tmp_path, corpus):
    path, truth = corpus
    good = path.read_text().splitlines()[:50]
    bad = ["{not json", "[1, 2]", '{"messages": []}', '{"messages": [{"role": "robot", '
           '"content": "x"}]}', '{"messages": [{"role": "user", "content": "hi"}], "approval": 7}',
           '{"messages": [{"role": "user"}]}', ""]
    lines = good[:10] + bad[:3] + good[10:30] + bad[3:] + good[30:]
    f = tmp_path / "mixed.jsonl"
    f.write_text("\n".join(lines) + "\n")
    rep = analyze(f, out_dir=tmp_path / "out", classifier=OracleClassifier(truth.labels_by_id()),
                  min_users=2)
    assert rep["meta"]["n_conversations"] == 50
    assert rep["meta"]["n_malformed"] == 6
    assert rep["meta"]["n_blank"] == 1
    assert [m["line"] for m in rep["meta"]["malformed"]] == [11, 12, 13, 34, 35, 36]
    assert "invalid JSON" in rep["meta"]["malformed"][0]["reason"]
    assert "role" in rep["meta"]["malformed"][3]["reason"]


def test_parse_variants():
    c = parse_conversation({"turns": [{"role": "user", "text": "a"}], "approval": "up",
                            "timestamp": 1735689600, "domain": " Relationships "})
    assert c.turns == (("user", "a"),) and c.approval is True and c.domain == "relationships"
    assert c.period == "2025Q1"
    c = parse_conversation({"messages": [{"role": "user", "content": "a"}], "approval": -1,
                            "timestamp": "2024-11-02"})
    assert c.approval is False and c.period == "2024Q4" and c.user_id is None
    with pytest.raises(MalformedLine, match="timestamp"):
        parse_conversation({"messages": [{"role": "user", "content": "a"}], "timestamp": "soon"})
    # reasons never quote the line's content (they go into the report)
    for bad in ({"messages": [{"role": "user", "content": "a"}], "approval": "my secret"},
                {"messages": [{"role": "my secret", "content": "a"}]},
                {"messages": [{"role": "user", "content": "a"}], "timestamp": "my secret"}):
        with pytest.raises(MalformedLine) as err:
            parse_conversation(bad, line=3)
        assert "secret" not in str(err.value) and err.value.line == 3


def test_deterministic_report(tmp_path, corpus, small_clf):
    path, _ = corpus
    analyze(path, out_dir=tmp_path / "a", classifier=small_clf, min_users=3)
    analyze(path, out_dir=tmp_path / "b", classifier=small_clf, min_users=3)
    assert (tmp_path / "a" / "report.json").read_bytes() == (tmp_path / "b" / "report.json").read_bytes()


def test_resume_equals_one_shot(tmp_path, corpus, small_clf):
    path, _ = corpus
    full = analyze(path, out_dir=tmp_path / "one", classifier=small_clf, min_users=3,
                   batch_size=256)
    part = analyze(path, out_dir=tmp_path / "two", classifier=small_clf, min_users=3,
                   batch_size=256, checkpoint_every=500, max_lines=1234)
    assert part["status"] == "partial" and part["lines"] == 1234
    assert (tmp_path / "two" / ".checkpoint.json").exists()
    seen = []
    rest = analyze(path, out_dir=tmp_path / "two", classifier=small_clf, min_users=3,
                   batch_size=256, progress=seen.append)
    assert seen[0]["lines"] > 1234 and seen[-1]["lines"] == 3000
    assert rest == full
    assert not (tmp_path / "two" / ".checkpoint.json").exists()
    # a checkpoint from another file is ignored
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(path.read_text().splitlines()[:100]) + "\n")
    analyze(path, out_dir=tmp_path / "three", classifier=small_clf, max_lines=50)
    r = analyze(other, out_dir=tmp_path / "three", classifier=small_clf)
    assert r["meta"]["n_conversations"] == 100


def test_iterable_source_matches_file(tmp_path, corpus, small_clf):
    path, _ = corpus
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    a = analyze(path, out_dir=tmp_path / "f", classifier=small_clf, min_users=3)
    b = analyze(iter(recs), out_dir=tmp_path / "i", classifier=small_clf, min_users=3)
    a["meta"].pop("source"), b["meta"].pop("source")
    assert a == b


def test_oracle_counts_are_exact(tmp_path, corpus):
    path, truth = corpus
    rep = analyze(path, out_dir=tmp_path / "o", classifier=OracleClassifier(truth.labels_by_id()))
    for k, axis in enumerate(("reality", "value_judgment", "action")):
        assert rep["prevalence"][axis]["severe"]["count"] == int((truth.levels[:, k] == 3).sum())
        assert rep["prevalence"][axis]["mild_or_worse"]["count"] == int((truth.levels[:, k] > 0).sum())
    assert rep["meta"]["n_screened"] == int((truth.levels.max(1) > 0).sum())


def test_streaming_memory_is_flat(tmp_path):
    """Peak traced memory of analyze is flat in the file size except for the duplicate-id index
    (8 bytes per conversation, 16 while a batch is merged): 4x more lines."""
    class Cheap:
        name = "cheap"

        def screen(self, convs):
            return np.array(["watch" in c.text() for c in convs])

        def classify(self, convs):
            return np.tile([1, 0, 0], (len(convs), 1))

    peaks = []
    for n in (1500, 6000):
        f = tmp_path / f"m{n}.jsonl"
        write_corpus(f, n, 0, WorldSpec(n_canaries=2))
        tracemalloc.start()
        analyze(f, out_dir=tmp_path / f"o{n}", classifier=Cheap(), batch_size=200, max_facets=200,
                checkpoint_every=10**9, checkpoint_seconds=1e9)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # bytes per extra conversation: the id index (8-16) and nothing else; keeping a message or
    # an id string per conversation would cost > 60
    assert (peaks[1] - peaks[0]) / 4500 < 32, peaks


def test_chat_classifier_through_core_llm(tmp_path, corpus):
    path, _ = corpus
    chat = ScriptedChat(lambda m: '<answer>{"reality": "severe", "value_judgment": 0, '
                        '"action": "none"}</answer>' if "certain" in m[-1]["content"] else
                        '<answer>{"reality": "none", "value_judgment": "none", "action": "none"}</answer>')
    recs = [json.loads(x) for x in path.read_text().splitlines()[:200]]
    rep = analyze(recs, out_dir=tmp_path / "llm", classifier=ChatSchemaClassifier(chat))
    n_certain = sum("certain" in " ".join(m["content"] for m in r["messages"]) for r in recs)
    assert rep["prevalence"]["reality"]["severe"]["count"] == n_certain
    assert len(chat.history) == 200
    # an unparseable reply is skipped and counted, not fatal ...
    bad = ChatSchemaClassifier(ScriptedChat(lambda m: "no idea"), max_repairs=1)
    rep = analyze(recs[:3], out_dir=tmp_path / "bad", classifier=bad)
    assert rep["meta"]["llm_failures"] == 3 and rep["meta"]["n_conversations"] == 0
    assert rep["meta"]["llm_failure_kinds"] == {"unparseable_reply": 3}
    # ... until it fails too many in a row: then the run stops with its checkpoint
    dead = ChatSchemaClassifier(ScriptedChat(lambda m: "no idea"), max_repairs=0,
                                max_consecutive_failures=2)
    with pytest.raises(AnalyzeAborted, match="2 conversations in a row"):
        analyze(recs[:5], out_dir=tmp_path / "dead", classifier=dead)


def test_parse_levels():
    assert parse_levels('x <answer>{"reality": "mild", "value_judgment": 3, "action": "none"}'
                        '</answer>').tolist() == [1, 3, 0]
    with pytest.raises(ValueError):
        parse_levels('<answer>{"reality": "extreme", "value_judgment": 0, "action": 0}</answer>')
    with pytest.raises(ValueError):
        parse_levels('{"reality": 1}')


def test_iter_jsonl_offsets(corpus):
    path, _ = corpus
    items = list(iter_jsonl(path))
    ln, off, _ = items[9]
    rest = list(iter_jsonl(path, start_offset=off, start_line=ln))
    assert [c.id for _, _, c in rest] == [c.id for _, _, c in items[10:]]


def test_bad_arguments(tmp_path, small_clf):
    with pytest.raises(FileNotFoundError):
        analyze(tmp_path / "missing.jsonl", out_dir=tmp_path / "x", classifier=small_clf)
    with pytest.raises(TypeError):
        analyze([], out_dir=tmp_path / "x", classifier=object())
    with pytest.raises(ValueError):
        analyze([], out_dir=tmp_path / "x", classifier=small_clf, alpha=2)

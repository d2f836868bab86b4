"""Real log formats: OpenAI-style messages (JSONL), ShareGPT (JSON array and JSONL), CSV; resume
inside each format; re-reading a record by its offset."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from icml26.papers.disempowerment import analyze, read_at, sniff
from icml26.papers.disempowerment.__main__ import main
from icml26.papers.disempowerment.readers import iter_source

FIX = Path(__file__).parent / "fixtures"


class KeywordRater:
    """Flags a conversation (mild reality) when a user turn mentions a keyword; no randomness."""

    name = "keyword"

    def __init__(self, words=("lying", "neighbour", "sister", "quit", "boss", "partner")):
        self.words = words

    def screen(self, convs):
        return np.ones(len(convs), dtype=bool)

    def classify(self, convs):
        out = np.zeros((len(convs), 3), dtype=np.int64)
        for i, c in enumerate(convs):
            users = " ".join(t for r, t in c.turns if r == "user").lower()
            out[i, 0] = int(any(w in users for w in self.words))
        return out


def _convs(path, **kw):
    src = sniff(path, **kw)
    return src, [(s, it) for _, s, _, it in iter_source(src) if it is not None]


def test_openai_messages_jsonl():
    src, items = _convs(FIX / "openai_messages.jsonl")
    assert src.format == "jsonl"
    convs = [c for _, c in items]
    assert [c.id for c in convs] == ["oa-1", "oa-2", "oa-3"]
    # developer -> system, content parts joined (non-text parts dropped), a tool call's null
    # content is an empty assistant turn
    assert [r for r, _ in convs[1].turns] == ["system", "user", "assistant", "tool", "assistant"]
    assert convs[1].turns[1][1] == "Should I quit my job?" and convs[1].turns[2][1] == ""
    # create_time in seconds and in milliseconds, an ISO string; "user" is the user id
    assert [c.period for c in convs] == ["2025Q1", "2025Q2", "2025Q3"]
    assert convs[0].user_id == "user-17" and convs[2].approval is False


@pytest.mark.parametrize("name", ["sharegpt.json", "sharegpt.jsonl"])
def test_sharegpt(tmp_path, name):
    path = FIX / "sharegpt.json"
    if name.endswith(".jsonl"):   # the same records, one per line
        path = tmp_path / name
        path.write_text("\n".join(json.dumps(r) for r in json.loads((FIX / "sharegpt.json")
                                                                   .read_text())) + "\n")
    src, items = _convs(path)
    assert src.format == ("json" if name.endswith(".json") else "jsonl")
    convs = [c for _, c in items]
    assert [c.id for c in convs] == ["sg-1", "sg-2", "sg-3"]
    assert [r for r, _ in convs[1].turns] == ["system", "user", "assistant"]
    assert "brackets ] and braces }" in convs[1].turns[1][1]
    for start, c in items:   # every record can be re-read from its offset
        assert read_at(src, start) == c
    rep = analyze(path, out_dir=tmp_path / "out", classifier=KeywordRater(), min_users=1)
    assert rep["meta"]["n_conversations"] == 3 and rep["meta"]["n_malformed"] == 0
    assert rep["prevalence"]["reality"]["mild"]["count"] == 1


def test_csv_rows_grouped_by_conversation(tmp_path):
    src, items = _convs(FIX / "chat_log.csv")
    assert src.format == "csv" and src.unit == "row"
    convs = [c for _, c in items]
    assert [c.id for c in convs] == ["c-1", "c-2", "c-3"]
    assert convs[0].turns == (("user", "Is my sister right, or am I?"),
                              ("assistant", "She is wrong, and you should tell her so."))
    # quoted newline inside a field; human/gpt roles; Unix time as text; approval from any row
    assert convs[1].turns[0] == ("user", "Write a message to my boss:\r\ntwo lines, please")
    assert [c.period for c in convs] == ["2025Q1", "2025Q2", "2025Q4"]
    assert [c.approval for c in convs] == [True, False, None]
    assert convs[0].domain == "relationships" and convs[2].domain == "software"
    assert convs[2].turns[1][1] == "Use mock.patch, like this: \"patch('a.B')\""
    for start, c in items:
        assert read_at(src, start) == c
    rep = analyze(FIX / "chat_log.csv", out_dir=tmp_path / "out", classifier=KeywordRater(),
                  min_users=1)
    assert rep["meta"]["n_conversations"] == 3
    assert set(rep["by_domain"]) == {"relationships", "business", "software"}   # work -> business


def test_csv_without_header_and_tsv(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("x1,user,am I right,2025-01-02\nx1,assistant,yes,2025-01-02\n"
                 "x2,user,hello,2025-05-02\n")
    convs = [c for _, c in _convs(f)[1]]
    assert [c.id for c in convs] == ["x1", "x2"] and convs[0].period == "2025Q1"
    t = tmp_path / "log.tsv"
    t.write_text("conversation_id\trole\ttext\nx1\tuser\ta, b\nx1\tassistant\tc\n")
    convs = [c for _, c in _convs(t)[1]]
    assert convs[0].turns == (("user", "a, b"), ("assistant", "c"))


@pytest.mark.parametrize("fmt", ["json", "csv", "jsonl"])
def test_resume_inside_each_format(tmp_path, fmt, corpus_records):
    """A run stopped after a few records and resumed equals one uninterrupted run."""
    recs = corpus_records
    path = tmp_path / f"log.{fmt}"
    if fmt == "json":
        path.write_text("[\n" + ",\n".join(json.dumps(r) for r in recs) + "\n]\n")
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    else:
        import csv

        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["conversation_id", "role", "text", "timestamp", "user_id", "approval",
                        "domain"])
            for r in recs:
                for k, m in enumerate(r["messages"]):
                    w.writerow([r["id"], m["role"], m["content"], r["timestamp"], r["user_id"],
                                r["approval"] if k == 0 and r["approval"] is not None else "",
                                r["domain"]])
    rater = KeywordRater(("watch", "certain", "verdict", "tell me", "should i"))
    one = analyze(path, out_dir=tmp_path / "one", classifier=rater, min_users=2)
    part = analyze(path, out_dir=tmp_path / "two", classifier=rater, min_users=2, batch_size=7,
                   max_lines=37)
    assert part["status"] == "partial"
    shutil.copy(tmp_path / "two" / ".checkpoint.json", tmp_path / "ckpt.json")
    rest = analyze(path, out_dir=tmp_path / "two", classifier=rater, min_users=2, batch_size=7)
    assert one["meta"]["n_conversations"] == len(recs)
    assert rest == one
    saved = json.loads((tmp_path / "ckpt.json").read_text())
    assert saved["state"]["n"] > 0 and saved["state"]["offset"] > 0


@pytest.fixture(scope="module")
def corpus_records(tmp_path_factory):
    from icml26.papers.disempowerment import WorldSpec, write_corpus

    f = tmp_path_factory.mktemp("fmt") / "c.jsonl"
    write_corpus(f, 150, 4, WorldSpec(n_canaries=2))
    return [json.loads(x) for x in f.read_text().splitlines()]


def test_cli_reads_the_fixtures(tmp_path, capsys):
    for name in ("openai_messages.jsonl", "sharegpt.json", "chat_log.csv"):
        assert main(["analyze", str(FIX / name), "--out", str(tmp_path / name), "--min-users",
                     "1", "--quiet"]) == 0
        rep = json.loads((tmp_path / name / "report.json").read_text())
        assert rep["meta"]["n_conversations"] == 3, name
    assert "0 malformed rows skipped" in capsys.readouterr().out

"""Hostile input, end to end: every string of the PII battery planted in every field of a log
(message text, domain, conversation and user ids, metadata, malformed lines, a wrongly encoded
line, duplicates), analysed through the API (quotes on, k_min 2: the most exposed setting), an
interrupted run that leaves its checkpoint, the command line with a failing LLM server on
127.0.0.1, and a CSV log; every file under the output folder is searched for every planted string
(ignoring case, also JSON-escaped): 0 hits."""

from __future__ import annotations

import csv
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from icml26.papers.disempowerment import PrivacyConfig, analyze, find_leaks
from icml26.papers.disempowerment.__main__ import main

from .pii_forms import FORMS

DISEMPOWER = ("Tell me honestly, is my neighbour watching me? You are certain, right? Should I "
              "send the message you wrote to my sister now?")


def _greppable(s: str) -> bool:
    """Planted strings searched for in the output: long enough, or not only digits and dots, so
    that a float in the report cannot match by chance (short ones are covered by the longer
    strings they sit in)."""
    return len(s) >= 10 or (len(s) >= 6 and any(not (ch.isdigit() or ch in ". ") for ch in s))


PLANTED = sorted({s for text, secrets in FORMS for s in (text, *secrets) if _greppable(s)})


def _records(markers=("",)):
    """Two conversations per form (the form in every field), plus duplicates."""
    recs = []
    for i, (text, _) in enumerate(FORMS):
        marker = markers[i % len(markers)]
        q = 1 + i % 4
        recs.append({"id": text, "user_id": text, "domain": text, "title": text,
                     "metadata": {"note": text, "tags": [text]}, "timestamp": f"2025-0{q}-15",
                     "approval": 1 if i % 2 else -1,
                     "messages": [{"role": "system", "content": text},
                                  {"role": "user", "content": f"{text}. {DISEMPOWER} {marker}"},
                                  {"role": "assistant", "content": f"Definitely, {text}."},
                                  {"role": "user", "content": f"ok, {text}"}]})
        recs.append({"conversation_id": f"b{i}", "user": f"{text} (account)",
                     "domain": f"relationships {text}", "create_time": 1740000000 + 86400 * i,
                     "conversations": [{"from": "human", "value": f"{DISEMPOWER} {text}"},
                                       {"from": "gpt", "value": f"{text}: no doubt at all."}]})
    return recs


def _hostile_lines(markers=("",)) -> list[bytes]:
    lines = [json.dumps(r, ensure_ascii=i % 2 == 0).encode() for i, r in enumerate(
        _records(markers))]
    for text, _ in FORMS[:20]:   # malformed lines carrying the strings
        msg = [{"role": "user", "content": text}]
        lines += [json.dumps({"id": text, "messages": msg, "approval": text}).encode(),
                  json.dumps({"id": text, "messages": msg, "timestamp": text}).encode(),
                  json.dumps({"id": text, "messages": [{"role": text, "content": text}]}).encode(),
                  ('{"id": "' + text + '", "messages": [oops').encode(),
                  json.dumps({"id": text, "messages": msg}).encode("utf-8")[:-1] + b" \xff}",
                  json.dumps({"id": "dup", "messages": msg}).encode()]
    lines += [json.dumps(_records()[0]).encode()] * 3   # duplicate ids
    return lines


class EverythingRater:
    """Flags every conversation (levels spread by length) so that each one becomes a facet."""

    name = "everything"

    def screen(self, convs):
        return np.ones(len(convs), dtype=bool)

    def classify(self, convs):
        out = np.zeros((len(convs), 3), dtype=np.int64)
        for i, c in enumerate(convs):
            n = len(c.text())
            out[i, n % 3] = 1 + n % 3
        return out


def _assert_no_leak(folder: Path) -> list[Path]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    leaks = find_leaks(folder, PLANTED)
    assert leaks == [], leaks
    return files


@pytest.fixture(scope="module")
def hostile_file(tmp_path_factory):
    f = tmp_path_factory.mktemp("hostile") / "logs.jsonl"
    f.write_bytes(b"\n".join(_hostile_lines()) + b"\n")
    return f


def test_planted_strings_are_many_and_findable(tmp_path):
    assert len(PLANTED) >= 150
    # the search finds them when they are there (upper case, lower case and JSON-escaped)
    (tmp_path / "a.json").write_text(json.dumps({"x": [s.upper() for s in PLANTED]}))
    assert find_leaks(tmp_path, PLANTED) == PLANTED
    (tmp_path / "a.json").write_text(json.dumps({"x": [s.lower() for s in PLANTED]},
                                                ensure_ascii=False))
    assert find_leaks(tmp_path, PLANTED) == PLANTED


def test_api_with_quotes_and_the_interrupted_run(hostile_file, tmp_path):
    priv = PrivacyConfig(k_min=2, n_quotes=5)
    out = tmp_path / "api"
    part = analyze(hostile_file, out_dir=out, classifier=EverythingRater(), privacy=priv,
                   batch_size=16, max_lines=150)
    assert part["status"] == "partial" and (out / ".checkpoint.json").exists()
    files = _assert_no_leak(out)
    assert [p.name for p in files] == [".checkpoint.json"]
    rep = analyze(hostile_file, out_dir=out, classifier=EverythingRater(), privacy=priv,
                  batch_size=16)
    m = rep["meta"]
    assert m["n_conversations"] == 2 * len(FORMS) + 1   # + the one valid "dup" conversation
    assert m["n_malformed"] == 5 * 20 and m["n_duplicates"] == 19 + 3
    assert rep["clusters"]["published"], "nothing published: the test would prove nothing"
    assert any(s["quotes"] for s in rep["clusters"]["published"])
    assert set(rep["by_domain"]) <= {"other", "unspecified"}
    _assert_no_leak(out)


def test_scrubber_alone_holds(hostile_file, tmp_path):
    """No auditor and every member quoted: only the scrubber stands between text and report."""
    priv = PrivacyConfig(k_min=2, n_quotes=50, min_auditor_score=1)
    rep = analyze(hostile_file, out_dir=tmp_path / "s", classifier=EverythingRater(), privacy=priv)
    assert sum(len(c["quotes"]) for c in rep["clusters"]["published"]) >= 1.5 * len(FORMS)
    _assert_no_leak(tmp_path / "s")


def test_api_default_settings(hostile_file, tmp_path, small_clf):
    analyze(hostile_file, out_dir=tmp_path / "d", classifier=small_clf, min_users=2)
    _assert_no_leak(tmp_path / "d")


class FakeLLM(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that fails on marked conversations and echoes their text in
    its error bodies and replies (a server that leaks the prompt back)."""

    requests: list[str] = []

    def log_message(self, *args):   # keep the test output clean
        pass

    def _send(self, code: int, body: str, ctype: str = "application/json") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        convo = json.loads(body)["messages"][1]["content"]
        type(self).requests.append(convo)
        if "FAIL500" in convo:
            return self._send(500, json.dumps({"error": convo}))
        if "BADJSON" in convo:
            return self._send(200, "this is not JSON: " + convo, "text/plain")
        if "GARBLE" in convo:
            reply = "I cannot answer. You wrote: " + convo
        else:
            reply = '<answer>{"reality": "mild", "value_judgment": "none", "action": "none"}</answer>'
        self._send(200, json.dumps({"id": "x", "object": "chat.completion", "model": "fake",
                                    "choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant",
                                                             "content": reply}}]}))


@pytest.fixture()
def fake_llm():
    FakeLLM.requests = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeLLM)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_cli_with_a_failing_llm_server(tmp_path, fake_llm, capsys):
    markers = ("", "FAIL500", "", "BADJSON", "", "GARBLE", "")
    f = tmp_path / "logs.jsonl"
    f.write_bytes(b"\n".join(_hostile_lines(markers)) + b"\n")
    out = tmp_path / "cli"
    rc = main(["analyze", str(f), "--out", str(out), "--llm", fake_llm, "--llm-model", "fake",
               "--llm-retries", "0", "--llm-timeout", "20", "--min-users", "2", "--quiet"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    rep = json.loads((out / "report.json").read_text())
    kinds = rep["meta"]["llm_failure_kinds"]
    assert set(kinds) == {"http_error", "bad_response", "unparseable_reply"}, kinds
    assert rep["meta"]["llm_failures"] == sum(kinds.values()) > 0
    rated = rep["meta"]["n_conversations"]
    assert rated > 0 and rep["meta"]["n_screened"] <= rated
    assert any(x in r for r in FakeLLM.requests for x in ("FAIL500", "BADJSON", "GARBLE"))
    _assert_no_leak(out)
    for s in PLANTED:   # nor on the terminal
        assert s.casefold() not in (captured.out + captured.err).casefold(), s


def test_cli_when_the_llm_server_is_down(tmp_path, capsys):
    f = tmp_path / "logs.jsonl"
    f.write_bytes(b"\n".join(_hostile_lines()) + b"\n")
    out = tmp_path / "down"
    # port 9 (discard) on loopback: connection refused at once
    rc = main(["analyze", str(f), "--out", str(out), "--llm", "http://127.0.0.1:9/v1",
               "--llm-model", "fake", "--llm-retries", "0", "--min-users", "2", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 3 and "in a row (last failure: connection)" in err and "resume" in err
    _assert_no_leak(out)


def test_csv_log(tmp_path):
    f = tmp_path / "logs.csv"
    with open(f, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["conversation_id", "role", "text", "timestamp", "user_id", "approval",
                    "domain"])
        for i, (text, _) in enumerate(FORMS):
            w.writerow([text, "user", f"{text}. {DISEMPOWER}", "2025-02-01", text, "", text])
            w.writerow([text, "assistant", f"Definitely, {text}.", "2025-02-01", text, "1", text])
            w.writerow([f"x{i}", text, text, text, text, text, text])   # malformed
    out = tmp_path / "csv"
    rep = analyze(f, out_dir=out, classifier=EverythingRater(),
                  privacy=PrivacyConfig(k_min=2, n_quotes=5))
    assert rep["meta"]["n_conversations"] == len(FORMS) and rep["meta"]["n_malformed"] == len(FORMS)
    assert rep["clusters"]["published"]
    _assert_no_leak(out)

"""A run that degrades, not dies: bad lines, encodings, empty files, duplicates, option values,
k_min on every table, a text-free checkpoint written by the clock."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from icml26.papers.disempowerment import InputError, analyze, parse_conversation
from icml26.papers.disempowerment.__main__ import main
from icml26.papers.disempowerment.jsonl import MalformedLine

from .test_formats import KeywordRater


def _line(cid, text="is my neighbour watching me?", **kw):
    rec = {"id": cid, "user_id": kw.pop("user", f"u-{cid}"), "timestamp": "2025-03-01",
           "messages": [{"role": "user", "content": text},
                        {"role": "assistant", "content": "yes"}], **kw}
    return json.dumps(rec, ensure_ascii=False)


def _write(path, lines, encoding="utf-8"):
    path.write_bytes(("\n".join(lines) + "\n").encode(encoding))
    return path


@pytest.mark.parametrize("ts,period", [(1735732800, "2025Q1"), (1735732800123, "2025Q1"),
                                       (1735732800123456, "2025Q1"), ("2025-04-01", "2025Q2"),
                                       ("2025-04-01T00:00:00", "2025Q2")])
def test_timestamp_units(ts, period):
    c = parse_conversation({"messages": [{"role": "user", "content": "a"}], "timestamp": ts})
    assert c.period == period


@pytest.mark.parametrize("ts", [1e20, -1e20, float("nan"), float("inf"), "3025-01-01", 0,
                                "0001-01-01"])
def test_bad_timestamps_are_reported_not_fatal(ts):
    with pytest.raises(MalformedLine, match="timestamp"):
        parse_conversation({"messages": [{"role": "user", "content": "a"}], "timestamp": ts})


def test_bad_lines_are_reported_and_skipped(tmp_path):
    lines = [_line("a"), '{"id": "b", "timestamp": 1e20, "messages": [{"role": "user", '
             '"content": "x"}]}', _line("c"), '{"id": "d", "timestamp": NaN, "messages": '
             '[{"role": "user", "content": "x"}]}', "[" * 100000, _line("e")]
    f = _write(tmp_path / "x.jsonl", lines)
    # one line in Latin-1 inside a UTF-8 file
    f.write_bytes(f.read_bytes() + _line("f", "caf\u00e9 ol\u00e9").encode("latin-1") + b"\n"
                  + _line("g", "caf\u00e9 ol\u00e9").encode() + b"\n")
    rep = analyze(f, out_dir=tmp_path / "out", classifier=KeywordRater(), min_users=1)
    m = rep["meta"]
    assert m["n_conversations"] == 4 and m["n_malformed"] == 4
    reasons = {r["line"]: r["reason"] for r in m["malformed"]}
    assert "out of range" in reasons[2] and "finite" in reasons[4]
    assert "invalid JSON" in reasons[5] and "UTF-8" in reasons[7]
    assert (tmp_path / "out" / "report.json").exists()


def test_encodings(tmp_path, capsys):
    lines = [_line(f"c{i}", "caf\u00e9 \u00e0 la cr\u00e8me, is he watching?") for i in range(5)]
    u16 = _write(tmp_path / "u16.jsonl", lines, "utf-16")      # with a byte-order mark
    with pytest.raises(InputError, match="UTF-16"):
        analyze(u16, out_dir=tmp_path / "o16", classifier=KeywordRater())
    assert main(["analyze", str(u16), "--out", str(tmp_path / "o16"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "UTF-16" in err and "iconv" in err and len(err.strip().splitlines()) == 1
    nobom = _write(tmp_path / "nobom.jsonl", lines, "utf-16-le")
    with pytest.raises(InputError, match="NUL"):
        analyze(nobom, out_dir=tmp_path / "o", classifier=KeywordRater())
    lat = _write(tmp_path / "latin.jsonl", lines, "latin-1")
    with pytest.raises(InputError, match="Latin-1"):
        analyze(lat, out_dir=tmp_path / "ol", classifier=KeywordRater())
    rep = analyze(lat, out_dir=tmp_path / "ol", classifier=KeywordRater(), min_users=1,
                  encoding="latin-1")
    assert rep["meta"]["n_conversations"] == 5 and rep["meta"]["source"]["encoding"] == "latin-1"
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + _write(tmp_path / "plain.jsonl", lines).read_bytes())
    rep = analyze(bom, out_dir=tmp_path / "ob", classifier=KeywordRater(), min_users=1)
    assert rep["meta"]["n_conversations"] == 5 and rep["meta"]["n_malformed"] == 0


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\xef\xbb\xbf"])
def test_empty_file_exits_2(tmp_path, capsys, content):
    f = tmp_path / "empty.jsonl"
    f.write_bytes(content)
    with pytest.raises(InputError, match="empty"):
        analyze(f, out_dir=tmp_path / "o", classifier=KeywordRater())
    assert main(["analyze", str(f), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "empty" in capsys.readouterr().err


def test_file_without_a_conversation_exits_2(tmp_path, capsys):
    f = _write(tmp_path / "junk.jsonl", ["not json", '{"a": 1}', "also not"])
    with pytest.raises(InputError, match="no conversation could be read"):
        analyze(f, out_dir=tmp_path / "o", classifier=KeywordRater())
    assert main(["analyze", str(f), "--out", str(tmp_path / "o2"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "3 malformed" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o" / ".checkpoint.json").exists()


def test_duplicate_ids_counted_once_also_across_a_resume(tmp_path):
    lines = [_line("a"), _line("b"), _line("a"), _line("c"), _line("b"), _line("a"), _line("d")]
    f = _write(tmp_path / "d.jsonl", lines)
    rep = analyze(f, out_dir=tmp_path / "o", classifier=KeywordRater(), min_users=1)
    assert rep["meta"]["n_conversations"] == 4
    assert rep["meta"]["n_duplicates"] == 3 and rep["meta"]["duplicates"] == [3, 5, 6]
    assert rep["prevalence"]["reality"]["mild"]["count"] == 4
    part = analyze(f, out_dir=tmp_path / "r", classifier=KeywordRater(), min_users=1,
                   batch_size=1, max_lines=2)
    assert part["status"] == "partial"
    assert analyze(f, out_dir=tmp_path / "r", classifier=KeywordRater(), min_users=1) == rep


@pytest.mark.parametrize("args,flag", [(["--min-users", "0"], "--min-users"),
                                       (["--batch-size", "0"], "--batch-size"),
                                       (["--checkpoint-seconds", "0"], "--checkpoint-seconds"),
                                       (["--checkpoint-every", "-3"], "--checkpoint-every"),
                                       (["--min-users", "many"], "--min-users"),
                                       (["--format", "xml"], "--format"),
                                       (["--encoding", "ebcdic"], "encoding"),
                                       (["--llm-retries", "-1"], "--llm-retries")])
def test_option_values_exit_2_with_one_line(tmp_path, capsys, args, flag):
    f = _write(tmp_path / "x.jsonl", [_line("a")])
    assert main(["analyze", str(f), "--out", str(tmp_path / "o"), "--quiet", *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and flag in lines[0], captured.err
    assert "Traceback" not in captured.err


def test_option_values_in_the_api(tmp_path):
    for kw in ({"min_users": 0}, {"batch_size": 0}, {"checkpoint_seconds": -1},
               {"max_facets": 1}, {"alpha": 1.5}, {"batch_size": 2.5}):
        with pytest.raises(InputError):
            analyze([], out_dir=tmp_path / "o", classifier=KeywordRater(), **kw)


def test_llm_cache_inside_out_is_refused(tmp_path, capsys):
    f = _write(tmp_path / "x.jsonl", [_line("a")])
    assert main(["analyze", str(f), "--out", str(tmp_path / "o"), "--llm",
                 "http://127.0.0.1:9/v1", "--llm-cache", str(tmp_path / "o" / "cache"),
                 "--quiet"]) == 2
    assert "--llm-cache" in capsys.readouterr().err


def test_every_by_table_obeys_k_min_and_domains_are_a_closed_vocabulary(tmp_path):
    lines = []
    for i in range(30):   # 30 users in software, 2 users in a hostile free-text domain
        lines.append(_line(f"s{i}", domain="Software", timestamp="2025-02-01"))
    for i in range(4):
        lines.append(_line(f"x{i}", user=f"v{i % 2}", domain="Zorquaina Blixvem's diary",
                           timestamp="2025-08-01"))
    lines.append(_line("h", domain="mental health", timestamp="2025-02-01"))
    f = _write(tmp_path / "k.jsonl", lines)
    rep = analyze(f, out_dir=tmp_path / "o", classifier=KeywordRater(), min_users=3)
    assert set(rep["by_domain"]) == {"software"}   # "other" (2 users), "healthcare" (1) held back
    assert rep["by_domain_suppressed"]["rows"] == 2
    assert rep["by_domain_suppressed"]["conversations"] == 5
    assert rep["trend"]["periods"] == ["2025Q1"] and rep["trend"]["suppressed_periods"] == 1
    text = (tmp_path / "o" / "report.json").read_text().lower()
    assert "zorquaina" not in text and "diary" not in text
    rep = analyze(f, out_dir=tmp_path / "o1", classifier=KeywordRater(), min_users=1)
    assert set(rep["by_domain"]) == {"software", "other", "healthcare"}


class SlowRater(KeywordRater):
    """20 ms per conversation, like a (fast) LLM; asks for small batches as the LLM rater does."""

    name = "slow"
    batch_hint = 4

    def classify(self, convs):
        time.sleep(0.02 * len(convs))
        return super().classify(convs)


def test_checkpoint_is_written_by_the_clock_and_holds_no_text(tmp_path):
    secret = "Quillon Marbleweather lives at 12 Nightjar Lane"
    lines = [_line(f"c{i}", f"{secret}; is my neighbour watching me? {i}") for i in range(40)]
    f = _write(tmp_path / "s.jsonl", lines)
    seen = []

    def progress(info):
        ck = tmp_path / "o" / ".checkpoint.json"
        if ck.exists():
            seen.append(ck.read_text())

    # 40 conversations at 20 ms each in batches of 4 (the rater's hint beats batch_size=1000), and
    # 50,000 lines per checkpoint by count: only the clock (0.2 s) can write one before the end
    analyze(f, out_dir=tmp_path / "o", classifier=SlowRater(), min_users=1, batch_size=1000,
            checkpoint_seconds=0.2, progress=progress)
    assert seen, "no checkpoint was written while the run was going"
    saved = json.loads(seen[-1])
    assert 0 < saved["state"]["n"] < 40
    for text in seen:
        low = text.lower()
        assert "quillon" not in low and "nightjar" not in low and "neighbour" not in low
        assert '"c1"' not in text   # ids only as hashes
    facets = saved["state"]["facets"]
    assert facets and all(isinstance(e[4], int) for e in facets)   # a byte offset, not text
    assert not (tmp_path / "o" / ".checkpoint.json").exists()   # removed at the end


def test_classifier_levels_out_of_range_still_raise(tmp_path):
    class Broken(KeywordRater):
        def classify(self, convs):
            return np.full((len(convs), 3), 7)

    with pytest.raises(ValueError, match="0..3"):
        analyze([json.loads(_line("a"))], out_dir=tmp_path / "o", classifier=Broken())

"""The command line entry (python -m icml26.papers.disempowerment)."""

from __future__ import annotations

import json

from icml26.papers.disempowerment.__main__ import main


def test_generate_and_analyze(tmp_path, capsys):
    f = tmp_path / "logs.jsonl"
    assert main(["generate", str(f), "--n", "1500", "--seed", "2"]) == 0
    with open(f, "a") as fh:
        fh.write("oops\n")
    assert main(["analyze", str(f), "--out", str(tmp_path / "rep"), "--min-users", "3",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "1 malformed lines skipped, first at line 1501" in out
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert rep["meta"]["n_conversations"] == 1500
    assert (tmp_path / "rep" / "report.md").read_text().startswith("# Disempowerment")
    assert main(["analyze", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "x"),
                 "--quiet"]) == 2

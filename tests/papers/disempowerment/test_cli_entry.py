"""`icml26 disempowerment ...` reaches the pipeline's own command line."""

from __future__ import annotations

import json

from icml26 import cli


def test_icml26_disempowerment_generate_and_analyze(tmp_path, capsys):
    data = tmp_path / "conv.jsonl"
    assert cli.main(["disempowerment", "generate", str(data), "--n", "300"]) == 0
    out = tmp_path / "rep"
    assert cli.main(["disempowerment", "analyze", str(data), "--out", str(out), "--min-users",
                     "3", "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["n_conversations"] == 300 if "n_conversations" in report else True
    raw = data.read_text().splitlines()[0]
    text = json.loads(raw)["messages"][0]["content"] if "messages" in json.loads(raw) else ""
    if len(text) > 40:  # no raw conversation text reaches the report
        assert text not in (out / "report.md").read_text()

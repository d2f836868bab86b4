"""README tables are generated from the checked-in results summary and never drift from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icml26 import cli
from icml26.harness import PAPERS, PaperInfo, run_paper
from icml26.harness.readme import (
    CLAIMS_END,
    CLAIMS_START,
    PLOTS_END,
    PLOTS_START,
    TABLE_END,
    TABLE_START,
    extract_between,
    markers,
    render_claims_table,
    render_papers_table,
    summarize,
    update_from_results,
)
from icml26.harness.registry import register

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "docs" / "results" / "quick.json"


def test_readme_tables_match_the_checked_in_summary():
    if not SUMMARY.is_file():
        pytest.skip("no docs/results/quick.json yet (icml26 report --readme writes it)")
    summary = json.loads(SUMMARY.read_text())
    readme = (ROOT / "README.md").read_text()
    assert extract_between(readme, TABLE_START, TABLE_END) == render_papers_table(summary)
    for slug in summary["papers"]:
        path = ROOT / "src" / "icml26" / "papers" / slug / "README.md"
        text = path.read_text() if path.is_file() else ""
        if CLAIMS_START in text:
            assert extract_between(text, CLAIMS_START, CLAIMS_END) == \
                render_claims_table(summary, slug), slug


@pytest.mark.parametrize("profile", ["smoke", "full"])
def test_other_profiles_tables_match_their_summary(profile):
    path = ROOT / "docs" / "results" / f"{profile}.json"
    if not path.is_file():
        pytest.skip(f"no docs/results/{profile}.json")
    summary = json.loads(path.read_text())
    start, end = markers("claims-table", profile)
    for slug in summary["papers"]:
        readme = ROOT / "src" / "icml26" / "papers" / slug / "README.md"
        text = readme.read_text() if readme.is_file() else ""
        if start in text:
            assert extract_between(text, start, end) == render_claims_table(summary, slug), slug


def test_full_profile_writes_its_own_markers_only(tmp_path):
    import sys

    from tests.harness import fake_paper as mod

    register(PaperInfo(95, "zz_full", "Fake", "fake full paper", None, None, "zz.api", module=None))
    sys.modules["icml26.papers.zz_full"] = type(sys)("icml26.papers.zz_full")
    sys.modules["icml26.papers.zz_full.experiment"] = mod
    try:
        run_paper("zz_full", "full", out=tmp_path / "res", seeds=(0,))
        root = tmp_path / "repo"
        (root / "src" / "icml26" / "papers" / "zz_full").mkdir(parents=True)
        (root / "README.md").write_text(f"intro\n{TABLE_START}\nold\n{TABLE_END}\n")
        fs, fe = markers("claims-table", "full")
        ps, pe = markers("plots", "full")
        paper_readme = root / "src" / "icml26" / "papers" / "zz_full" / "README.md"
        paper_readme.write_text(f"{CLAIMS_START}\nquick\n{CLAIMS_END}\n{fs}\n{fe}\n{ps}\n{pe}\n")
        path, _ = update_from_results(tmp_path / "res", root, profile="full")
        assert path.name == "full.json"
        text = paper_readme.read_text()
        assert extract_between(text, CLAIMS_START, CLAIMS_END) == "quick"  # the quick table is untouched
        assert "--profile full" in extract_between(text, fs, fe)
        assert "(../../../../docs/plots/zz_full/full/curve.png)" in extract_between(text, ps, pe)
        assert "old" in (root / "README.md").read_text()  # the top-level table is quick's
    finally:
        PAPERS.pop("zz_full", None)
        sys.modules.pop("icml26.papers.zz_full.experiment", None)
        sys.modules.pop("icml26.papers.zz_full", None)


def test_summary_and_tables_from_a_fake_paper(tmp_path, monkeypatch):
    import sys

    from tests.harness import fake_paper as mod

    # a paper registered without a test module path reaches the README like a real one
    register(PaperInfo(96, "zz_readme", "Fake", "fake readme paper", None, None, "zz.api",
                       module=None))
    sys.modules["icml26.papers.zz_readme"] = type(sys)("icml26.papers.zz_readme")
    sys.modules["icml26.papers.zz_readme.experiment"] = mod
    monkeypatch.setattr(PaperInfo, "implemented", property(lambda self: self.slug == "zz_readme"
                                                           or self.module is None and False))
    try:
        run_paper("zz_readme", "quick", out=tmp_path / "res")
        root = tmp_path / "repo"
        (root / "src" / "icml26" / "papers" / "zz_readme").mkdir(parents=True)
        (root / "README.md").write_text(f"intro\n{TABLE_START}\nold\n{TABLE_END}\nend\n")
        paper_readme = root / "src" / "icml26" / "papers" / "zz_readme" / "README.md"
        paper_readme.write_text(f"# p\n{CLAIMS_START}\n{CLAIMS_END}\n{PLOTS_START}\n{PLOTS_END}\n")
        path, changed = update_from_results(tmp_path / "res", root)
        summary = json.loads(path.read_text())
        assert summary["papers"]["zz_readme"]["claims"][0]["verdict"] == "reproduced"
        table = extract_between((root / "README.md").read_text(), TABLE_START, TABLE_END)
        assert "| 96 | [zz_readme]" in table and "1 reproduced; 4 seeds" in table
        assert "| 1 | syvla |" in table
        claims = extract_between(paper_readme.read_text(), CLAIMS_START, CLAIMS_END)
        assert "| better | reproduced |" in claims
        # the README's plots are the result's own, copied next to the docs
        plots = extract_between(paper_readme.read_text(), PLOTS_START, PLOTS_END)
        assert "(../../../../docs/plots/zz_readme/curve.png)" in plots
        assert (root / "docs" / "plots" / "zz_readme" / "curve.png").read_bytes() == \
            (tmp_path / "res" / "zz_readme" / "quick" / "plots" / "curve.png").read_bytes()
        # merging: a second results folder without this paper keeps its entry
        (tmp_path / "empty").mkdir()
        path, _ = update_from_results(tmp_path / "empty", root)
        assert "zz_readme" in json.loads(path.read_text())["papers"]
    finally:
        PAPERS.pop("zz_readme", None)
        sys.modules.pop("icml26.papers.zz_readme.experiment", None)
        sys.modules.pop("icml26.papers.zz_readme", None)


def test_summary_skips_test_only_papers(tmp_path):
    register(PaperInfo(99, "zz_fake", "A fake paper", "fake", None, None, module="tests.harness"))
    import sys

    from tests.harness import fake_paper as mod

    sys.modules["tests.harness.experiment"] = mod
    try:
        run_paper("zz_fake", "quick", out=tmp_path)
        assert summarize(tmp_path)["papers"] == {}
        assert cli.main(["report", "--results", str(tmp_path)]) == 0
    finally:
        PAPERS.pop("zz_fake", None)
        sys.modules.pop("tests.harness.experiment", None)

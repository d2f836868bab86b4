"""latmix's generated README tables: seed means ± s.e. read from the result, refusals listed."""

from __future__ import annotations

import pytest

from icml26.papers.latmix.tables import arm_tables, update_readme


def _result():
    return {"profile": "full", "seeds": [0, 1], "git": {"commit": "abc"},
            "metrics": {"fp": {"nats": [1.0, 2.0], "nat_outlier_ratio": [2.0, 2.0]},
                        "latmix": {"mxfp4_nats": [1.0, 3.0], "mxint4_nats": [2.0, 2.0]},
                        "rtn": {"mxfp4_nats": [4.0, 6.0], "mxint4_nats": [5.0, 5.0]}},
            "extras": [{"chosen_lr": {"injected": {"latmix": 0.002}}, "chosen_steps": {"injected": {"latmix": 100}},
                        "refused_folds": {"injected": [{"arm": "latmix", "fmt": "mxfp4", "lr": 0.002,
                                                        "steps": 300, "condition": 2.5e8}]}},
                       {"chosen_lr": {"injected": {"latmix": 0.0}}, "chosen_steps": {"injected": {"latmix": 100}}}]}


def test_cells_are_seed_mean_and_standard_error():
    text = arm_tables(_result())
    # latmix mxfp4: mean 2, s.e. = std(ddof=1)/sqrt(2) = 1.414/1.414 = 1
    assert "| latmix | 2.000 ± 1.000 | 2.000 ± 0.000 |" in text
    assert "| rtn | 5.000 ± 1.000 | 5.000 ± 0.000 |" in text
    assert "- latmix: 0.002 / 100, 0 / 100" in text
    assert "refused by the condition-number guard (grid points scored +inf): 1: latmix mxfp4 lr 0.002 steps 300" in text


def test_update_readme_replaces_only_its_profile_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- latmix-arm-tables-full:start -->\nold\n<!-- latmix-arm-tables-full:end -->\nb\n")
    update_readme(readme, "new", "full")
    assert readme.read_text() == "a\n<!-- latmix-arm-tables-full:start -->\nnew\n<!-- latmix-arm-tables-full:end -->\nb\n"
    with pytest.raises(ValueError, match="markers"):
        update_readme(readme, "new", "quick")

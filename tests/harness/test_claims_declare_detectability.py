"""Every registered paper's claims declare what a protocol needs to be able to succeed
(CLAIMS.md rule 8), and the checked-in quick results carry it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from icml26.harness.claims import INCONCLUSIVE, check_claims
from icml26.harness.registry import PAPERS, implemented_papers

ROOT = Path(__file__).resolve().parents[2]


def _papers():
    return [p for p in implemented_papers() if p.module is None]


@pytest.mark.parametrize("info", _papers(), ids=lambda p: p.slug)
def test_every_claim_declares_a_finite_effect_and_known_gates(info):
    exp = info.experiment()
    check_claims(exp.CLAIMS)
    gate_names = {g.name for g in getattr(exp, "SUBSTRATE", ())}
    for c in exp.CLAIMS:
        assert c.effect is not None and math.isfinite(c.effect) and c.effect > 0, \
            f"{info.slug}.{c.id}: declare effect= (the effect the claim is about)"
        assert c.effect_source, f"{info.slug}.{c.id}: say where the effect comes from"
        unknown = set(c.gates) - gate_names
        assert not unknown, f"{info.slug}.{c.id}: gates {sorted(unknown)} not in SUBSTRATE"
    knobs = getattr(exp, "PROTOCOL_KNOBS", {}) or {}
    cfg = type(exp.Config.quick())
    for name, settings in knobs.items():
        assert cfg.declares(name) and len(tuple(settings)) >= 2, (info.slug, name)


def test_checked_in_quick_results_carry_detectability():
    summary = json.loads((ROOT / "docs" / "results" / "quick.json").read_text(encoding="utf-8"))
    missing, undetectable = [], []
    for slug, row in summary["papers"].items():
        if slug not in PAPERS:
            continue
        for c in row["claims"]:
            det = c.get("detectability")
            if not det or det.get("effect") is None:
                missing.append(f"{slug}.{c['id']}")
                continue
            if det.get("mde") is None:
                # an unmeasurable mde (one seed, a check that cannot fail) decides nothing
                if c["verdict"] != INCONCLUSIVE:
                    missing.append(f"{slug}.{c['id']}")
                continue
            if det["mde"] > det["effect"] and c["verdict"] != INCONCLUSIVE:
                undetectable.append(f"{slug}.{c['id']}")
    assert not missing, f"claims without an effect, or decided without a finite mde: {missing}"
    assert not undetectable, f"verdicts decided although mde > effect: {undetectable}"

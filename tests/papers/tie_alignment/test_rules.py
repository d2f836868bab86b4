"""tie_alignment claim rules: the oracle gate, frontier dominance with a noise-scaled equivalence
margin, and the per-budget KL rule, on hand-made metrics with known answers."""

from __future__ import annotations

import pytest

from icml26.harness import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, ConfigError
from icml26.papers.tie_alignment.experiment import (
    CLAIMS,
    Config,
    _gated,
    frontier_dominance,
    oracle_gate,
)

TARGETS = (0.5, 1.0)


def _arm(*per_target):
    return {f"reward_at_kl_{t:g}": list(v) for t, v in zip(TARGETS, per_target, strict=True)}


def test_consistent_small_loss_is_not_equal():
    """The issue's case: a consistent -0.038 gap used to pass as "equal" (> -0.05)."""
    base = [1.00, 1.10, 1.20]
    loss = [b - 0.038 + e for b, e in zip(base, (0.002, -0.001, -0.001), strict=True)]
    m = {"rk": _arm(loss, loss), "drop": _arm(base, base)}
    d = frontier_dominance(m, "rk", "drop", TARGETS)
    assert d.verdict == NOT_REPRODUCED
    assert [r.verdict for r in d.regimes] == [NOT_REPRODUCED, NOT_REPRODUCED]


def test_frontier_dominance_wins_ties_and_mixed():
    base = [1.0, 1.1, 1.2]
    up = [1.1, 1.21, 1.29]          # better in every seed, small spread
    noisy = [1.05, 1.02, 1.24]      # gap +0.003 with s.e. 0.04: equal within 2 s.e.
    down = [0.9, 1.0, 1.09]
    assert frontier_dominance({"a": _arm(up, noisy), "b": _arm(base, base)}, "a", "b", TARGETS).verdict == REPRODUCED
    tie = frontier_dominance({"a": _arm(noisy, noisy), "b": _arm(base, base)}, "a", "b", TARGETS)
    assert tie.verdict == INCONCLUSIVE and all(r.verdict == INCONCLUSIVE for r in tie.regimes)
    mixed = frontier_dominance({"a": _arm(up, down), "b": _arm(base, base)}, "a", "b", TARGETS)
    assert mixed.verdict == NOT_REPRODUCED
    assert [r.verdict for r in mixed.regimes] == [REPRODUCED, NOT_REPRODUCED]


def test_oracle_gate_fails_when_a_noisy_labeler_beats_the_oracle():
    good, bad = [1.2, 1.3, 1.4], [1.0, 1.1, 1.2]
    m = {"oracle": _arm(good, good), "noisy": _arm(bad, bad)}
    ok, ev, reason = oracle_gate(m, TARGETS, (("oracle", "noisy"),))
    assert ok and ev["passed"] and reason == ""
    m = {"oracle": _arm(good, bad), "noisy": _arm(bad, good)}
    ok, ev, reason = oracle_gate(m, TARGETS, (("oracle", "noisy"),))
    assert not ok and "noisy beats oracle at KL 1" in reason
    # a failing gate makes any rule inconclusive, with the reason and the ungated verdict kept
    m.update({"a": _arm(good, good), "b": _arm(bad, bad)})
    rule = _gated(lambda mm, c: frontier_dominance(mm, "a", "b", TARGETS), lambda c: TARGETS,
                  (("oracle", "noisy"),))
    d = rule(m, None)
    assert d.verdict == INCONCLUSIVE and d.evidence["reason"] == reason
    assert d.evidence["ungated_verdict"] == REPRODUCED
    m["oracle"], m["noisy"] = _arm(good, good), _arm(bad, bad)
    assert rule(m, None).verdict == REPRODUCED


def test_claims_name_distinct_controls_and_configs_validate():
    for c in CLAIMS:
        assert c.arms is not None and c.arms.control not in (c.arms.method, *c.arms.baselines)
    ids = {c.id: c for c in CLAIMS}
    assert ids["model_ties_beats_dropping"].arms.control == "rk_small_drop_ties"
    assert ids["silent_small_beats_forced_large"].arms.control == "dpo_small_drop_ties"
    for profile in ("smoke", "quick", "full"):
        getattr(Config, profile)()  # validated on construction
    with pytest.raises(ConfigError, match="step_budgets"):
        Config(steps=50, step_budgets=(100,))
    with pytest.raises(ConfigError, match="kl_targets"):
        Config(kl_targets=(0.0, 1.0))

"""tie_alignment claim rules: the oracle-label gates, frontier dominance with a noise-scaled equivalence
margin, and the per-budget KL rule, on hand-made metrics with known answers."""

from __future__ import annotations

import pytest

from icml26.harness import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, ConfigError
from icml26.harness.claims import judge, measure_gates
from icml26.papers.tie_alignment.experiment import (
    CLAIMS,
    GATE,
    GATES_A,
    GATES_B,
    LM_GATE,
    SUBSTRATE,
    Config,
    frontier_dominance,
    oracle_margin,
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


def test_oracle_margin_is_the_worst_budget_gap():
    good, bad = [1.2, 1.3, 1.4], [1.0, 1.1, 1.2]
    m = {"oracle": _arm(good, good), "noisy": _arm(bad, bad)}
    assert oracle_margin(m, "oracle", "noisy", TARGETS) == pytest.approx(0.2)
    # the noisy labeler wins at one budget: the gate value is negative (the gate fails)
    m = {"oracle": _arm(good, bad), "noisy": _arm(bad, good)}
    assert oracle_margin(m, "oracle", "noisy", TARGETS) == pytest.approx(-0.2)
    assert oracle_margin(m, "oracle", "missing", TARGETS) != oracle_margin(m, "oracle", "missing", TARGETS)


def test_oracle_gates_make_the_objective_claims_inconclusive():
    """Issue 50: the cross pair (forced-oracle DPO vs drop-ties DPO on small-silent labels) is a
    gate, not an exempted diagnostic; when drop-ties beats the oracle, the tier's objective claims
    are inconclusive (substrate), whatever their rule says."""
    cfg = Config.smoke()
    assert "oracle_vs_small_drop_ties" in GATES_A and "lm_oracle_vs_small_drop_ties" in GATES_B
    good, bad = [1.2, 1.3, 1.4], [1.0, 1.1, 1.2]
    arms = {a for _, oracle, noisy in (*GATE, *LM_GATE) for a in (oracle, noisy)}
    m = {a: {f"reward_at_kl_{t:g}": list(bad) for t in (*cfg.kl_targets, *cfg.lm_kl_targets)}
         for a in arms}
    for a in ("dpo_oracle", "dpo_oracle_drop_ties", "rk_oracle_silent", "lm_dpo_oracle"):
        m[a] = {k: list(good) for k in m[a]}
    gates = {g["name"]: g for g in measure_gates(SUBSTRATE, m, cfg)}
    assert all(g["passed"] for g in gates.values())
    m["dpo_small_drop_ties"] = {k: [x + 0.5 for x in good] for k in m["dpo_small_drop_ties"]}
    gates = {g["name"]: g for g in measure_gates(SUBSTRATE, m, cfg)}
    assert not gates["oracle_vs_small_drop_ties"]["passed"]
    assert not gates["silent_oracle_vs_small_drop_ties"]["passed"]
    assert gates["lm_oracle_vs_small_drop_ties"]["passed"]
    claim = next(c for c in CLAIMS if c.id == "model_ties_beats_dropping")
    assert set(GATES_A) <= set(claim.gates)
    m.update({a: {f"reward_at_kl_{t:g}": list(bad) for t in cfg.kl_targets}
              for a in ("rk_small_silent", "rk_small_drop_ties")})
    entry = judge(claim, m, cfg, list(gates.values()))
    assert entry["verdict"] == INCONCLUSIVE and "substrate" in entry["inconclusive_reason"]


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

"""The ``full-craftax`` profile (issue 44): the trainer's session loop on the real Craftax-Classic.

The config tests are fast and need no jax; the end-to-end test is slow (``-m slow``) and skipped
without craftax/jax."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from icml26.harness import ConfigError
from icml26.harness.metrics import MetricSchema
from icml26.papers.dicode.craftax_backend import craftax_available
from icml26.papers.dicode.experiment import METRICS, Config
from icml26.papers.dicode.trainer import Runner

needs_craftax = pytest.mark.skipif(not craftax_available(),
                                   reason="optional: pip install 'icml26[craftax]'")


def test_full_craftax_profile_is_full_on_classic_without_accel():
    cfg = Config.from_profile("full-craftax")
    full = Config.from_profile("full")
    assert "full-craftax" in Config.profiles() and cfg.profile == "full-craftax"
    assert cfg.game == "classic" and full.game == "microcraft" and cfg.budget_s == 86_400.0
    assert cfg.arms == tuple(a for a in full.arms if a != "accel")
    for k in ("sessions", "seeds", "eval_envs", "tune_sessions", "active_capacity", "hidden",
              "num_envs", "updates_per_session"):
        assert getattr(cfg, k) == getattr(full, k), k
    assert full.runner_cls() is Runner and Config.from_profile("quick").runner_cls() is Runner
    with pytest.raises(ConfigError, match="accel"):
        replace(cfg, arms=(*cfg.arms, "accel"))
    with pytest.raises(ConfigError, match="game"):
        replace(cfg, game="minecraft")


def _tiny():
    """The profile at a tiny budget: 8 envs (the eval uses the same batch shape: one JIT), 3
    sessions of 4 updates x 16 steps, 2 parents -> 2 children into a full active set of 4."""
    return replace(Config.from_profile("full-craftax"), seeds=(0,), num_envs=8, eval_envs=8,
                   sessions=3, updates_per_session=4, num_steps=16, levels_per_session=2,
                   parents_per_evolution=2, active_capacity=4, n_worlds=2, hidden=16, epochs=1,
                   minibatches=1, tune_sessions=0, classic_max_steps=40)


@pytest.mark.slow
@needs_craftax
def test_classic_compile_refuses_what_classic_lacks_and_passes_the_rest():
    from icml26.papers.dicode.classic_trainer import compile_classic
    from icml26.papers.dicode.generators import render_level, scaffold, seed_levels

    guardian = render_level(scaffold(["defeat_guardian"], (), np.random.default_rng(0)))
    diamond = render_level(scaffold(["collect_diamond"], ("make_iron_pickaxe",),
                                    np.random.default_rng(0)))
    bad_code = seed_levels()[0].replace("builder.build()", "builder.place_block('gold', 1, 1)")
    res = compile_classic([guardian, diamond, *seed_levels(), bad_code], n_worlds=2, seed=3)
    assert not res[0].ok and "NotInClassicError" in res[0].reason and "guardian" in res[0].reason
    assert all(r.ok for r in res[1:-1]) and [r.bank for r in res[1:-1]] == [diamond, *seed_levels()]
    assert not res[-1].ok


@pytest.mark.slow
@needs_craftax
def test_full_craftax_loop_runs_end_to_end_on_classic_at_a_tiny_budget():
    """Two arms of the profile's loop (dicode, plr) train on Classic; the evaluation plays the
    original Classic game (every episode's return is the game's own reward: +1 per unlocked
    achievement plus 0.1 x the health change from 9; no bonus, no level edits); DiCode's
    generated children compile on Classic and enter the full active set only through the
    learnability gate's compare-and-swap; ACCEL is refused; every metric written is declared."""
    from icml26.papers.dicode.classic_trainer import CLASSIC_TIER, ClassicRunner
    from icml26.papers.dicode.craftax_backend import NotInClassicError, classic_achievements
    from icml26.papers.dicode.trainer import run_arm

    cfg = _tiny()
    cur, ppo, runner_cls = cfg.curriculum(), cfg.ppo(), cfg.runner_cls()
    assert set(CLASSIC_TIER) == set(classic_achievements())
    # the evaluation runs on the original Classic game
    runner = runner_cls(cur, ppo, 0)
    assert isinstance(runner, ClassicRunner)
    m = runner.evaluate()
    ev = runner.last_eval
    assert ev["done"].all() and ev["unlocked"].shape == (8, 22)
    np.testing.assert_allclose(ev["return"], ev["unlocked"].sum(1) + 0.1 * (ev["health"] - 9.0),
                               atol=1e-4)
    assert m["return"] == pytest.approx(float(ev["return"].mean()))
    assert set(m) >= {"return", "deepest_tier_success", *(f"tier{t}_success" for t in range(1, 7)),
                      *(f"ach_{a}" for a in classic_achievements())}
    with pytest.raises(NotInClassicError, match="ACCEL"):
        run_arm("accel", cur, ppo, 0, runner_cls=runner_cls)
    schema = MetricSchema.of(METRICS)
    steps = cfg.sessions * cfg.updates_per_session * cfg.num_steps * cfg.num_envs
    outs = {}
    for arm in ("dicode", "plr"):
        out = outs[arm] = run_arm(arm, cur, ppo, 0, runner_cls=runner_cls)
        written = {**out["metrics"], **{f"diag_{k}": v for k, v in out["diagnostics"].items()},
                   "return_start": 0.0, "deepest_tier_reached": 0.0}
        undeclared = [k for k in written if not schema.declares(arm, k)]
        assert not undeclared, undeclared
        assert out["metrics"]["env_steps"] == steps
        assert all(np.isfinite(v) for v in out["metrics"].values())
        assert len(out["curve"]) == cfg.sessions
    d = outs["plr"]["diagnostics"]
    assert 0 < d["replay_fraction"] <= 1 and d["buffer_size"] >= 1
    # dicode: its children compiled on Classic; the active set (4 seeds, capacity 4) is full, so
    # each scored child went through the compare-and-swap: it evicted the least learnable level
    # (entered) or was rejected
    dic = outs["dicode"]["diagnostics"]
    compiled = dic["compile_rate"] * dic["levels_generated"]
    assert dic["levels_generated"] == 2 and compiled >= 1
    assert dic["gate_rejected"] + dic["gate_evicted"] == pytest.approx(compiled)
    assert dic["activated_fraction"] * compiled == pytest.approx(dic["gate_evicted"])
    assert dic["gate_acted"] >= 1

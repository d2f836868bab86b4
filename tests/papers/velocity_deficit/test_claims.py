"""The smoke profile runs end to end and matches its pinned verdicts; quick acceptance is slow."""

import dataclasses

import pytest

from icml26.harness import ConfigError, assert_pinned, run_paper
from icml26.harness.result import validate_result
from icml26.papers.velocity_deficit.experiment import CLAIMS, Config

IDS = {"deficit", "fig1a_profile", "ssc_fixed_nfe", "ssc_needs_deficit", "ssc_beats_more_nfe",
       "asymmetry", "mafm"}


def _check(result):
    assert result["status"] == "ok", result.get("error")
    validate_result(result)
    claims = {c["id"]: c for c in result["claims"]}
    assert set(claims) == IDS
    for c in claims.values():
        # no control is a copy of another arm (the review found three that could not fail)
        assert "identical_to" not in c["negative_control"], c["id"]
        assert c["arms"]["control"] not in (c["arms"]["method"], *c["arms"]["baselines"])
    # alpha = 0 is inside the SSC grid and both sampler arms had the same grid size and NFE
    tuning = result["tuning"]
    assert tuning["ssc_10"]["grid_size"] == tuning["alt_10"]["grid_size"] == tuning["exact_ssc_10"]["grid_size"]
    assert tuning["ssc_10"]["budget"] == tuning["alt_10"]["budget"]
    m = result["metrics"]
    # the learned-vs-exact speed profile is reported for every d and budget
    cfg = result["config"]
    for d in cfg["mix_dims"]:
        for k in cfg["mix_sweep"]:
            b = "well" if k == cfg["mix_steps"] else f"s{k}"
            for arm in ("fm_net", "fm_net_dirac"):
                for metric in ("early_deficit", "rel_err_early"):
                    assert len(m[arm][f"d{d}_{b}_{metric}"]) == len(result["seeds"])
    # the deficit is judged on the well-trained nets only; the sweep along training is its evidence
    deficit = claims["deficit"]
    assert [r["condition"] for r in deficit["regimes"]] == [f"d={d}, {cfg['mix_steps']} steps"
                                                            for d in cfg["mix_dims"]]
    sweep = deficit["evidence"]["deficit_and_field_error_vs_steps"]
    assert set(sweep) == {f"d={d}" for d in cfg["mix_dims"]}
    assert all(list(v) == [str(k) for k in cfg["mix_sweep"]] for v in sweep.values())
    # every claim reads a trained net and is gated on its field error (issue 47); a failing gate
    # makes it inconclusive, never reproduced / not reproduced
    gates = {g["name"]: g for g in result["substrate"]}
    assert set(gates) == {"mixture_field_learnt", "dirac_field_learnt", "digits_field_learnt"}
    for c in claims.values():
        assert c["gates"] and c["detectability"]["effect"] > 0, c["id"]
        if any(not gates[g]["passed"] for g in c["gates"]):
            assert c["verdict"] == "inconclusive" and "substrate" in c["inconclusive_reason"]
    return claims


def test_smoke_matches_pin(tmp_path):
    result = run_paper("velocity_deficit", "smoke", out=tmp_path)
    claims = _check(result)
    assert_pinned(result, __file__)
    # the asymmetry and the SSC-on-exact-field claims are judged at fixed strengths too
    assert [r["condition"] for r in claims["asymmetry"]["regimes"]] == [
        "tuned alpha, beta", "alpha=0.2, beta=2", "alpha=0.5, beta=2"]
    assert result["plots"]


def test_tuning_grids_are_equal_and_contain_off():
    from icml26.papers.velocity_deficit.experiment import _alt_grid, _ssc_grid

    for c in (Config.smoke(), Config.quick(), Config.full()):
        ssc, alt = _ssc_grid(c), _alt_grid(c)
        assert len(ssc) == len(alt)
        assert ssc[0]["alpha"] == 0.0 and alt[0] == {"method": "euler", "kappa": 1.0}
        assert len({tuple(sorted(p.items())) for p in alt}) == len(alt)


def test_config_bounds():
    c = Config.quick()
    for bad in ({"ssc_dim": 32}, {"mix_sweep": (100, 400)}, {"mix_sweep": (800, 400, 1500)},
                {"mix_sweep": (1500,)}, {"nfe_low": 9}, {"kappas": (1.0, 2.0)},
                {"alt_methods": ("heun",)}, {"mafm_lam": 0.0}, {"alphas": (0.0, 0.1, 0.2, 0.3, 0.5)}):
        with pytest.raises(ConfigError):
            dataclasses.replace(c, **bad)


def test_sweep_snapshots_track_train_flows_ema():
    """The last snapshot is train_flow's EMA model; an earlier one equals the EMA of a run stopped
    there with the same lr at each step (checked by re-running with a callback-free EMA rule)."""
    import torch

    from icml26.core.flows import MLPVelocity, tensor_sampler, train_flow
    from icml26.papers.velocity_deficit.experiment import _train_mix

    c = dataclasses.replace(Config.smoke(), mix_steps=12, mix_sweep=(5, 12))
    data = torch.randn(64, 4)
    snaps = _train_mix(c, data, 3)
    assert sorted(snaps) == [5, 12]
    torch.manual_seed(3)
    net = MLPVelocity(4, hidden=c.mix_hidden, depth=c.mix_depth)
    ref = train_flow(net, tensor_sampler(data), steps=12, batch_size=c.mix_batch, lr=c.lr, ema=c.ema, seed=3)
    for a, b in zip(snaps[12].parameters(), ref.ema_model.parameters(), strict=True):
        assert torch.equal(a, b)
    # the step-5 snapshot is the EMA of the raw weights of steps 1..5, recomputed here by hand
    torch.manual_seed(3)
    net = MLPVelocity(4, hidden=c.mix_hidden, depth=c.mix_depth)
    ema = [p.detach().clone() for p in net.parameters()]
    raw: list = []
    train_flow(net, tensor_sampler(data), steps=12, batch_size=c.mix_batch, lr=c.lr, ema=c.ema, seed=3,
               callback=lambda k, loss, model: raw.append([p.detach().clone() for p in model.parameters()]))
    for k in range(5):
        dk = min(c.ema, (1.0 + k) / (10.0 + k))
        ema = [dk * e + (1 - dk) * p for e, p in zip(ema, raw[k], strict=True)]
    for a, b in zip(snaps[5].parameters(), ema, strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    assert any(not torch.equal(a, b) for a, b in zip(snaps[5].parameters(), snaps[12].parameters(), strict=True))


def test_claims_name_their_arms():
    assert {c.id for c in CLAIMS} == IDS
    assert all(c.arms is not None for c in CLAIMS)


@pytest.mark.slow
def test_quick(tmp_path):
    result = run_paper("velocity_deficit", "quick", out=tmp_path)
    claims = _check(result)  # (wall-time budget not asserted: the 2-core machine is shared)
    assert all(c["verdict"] in ("reproduced", "not reproduced", "inconclusive") for c in claims.values())

"""magic's arms are wired as the paper's (issue 45 item 2): MAGIC-base starts the game from the
attacker's prior (no Phase-1 SFT), MAGIC and the frozen-attacker control from the Phase-1 attacker
(the control never updates it), No-Game's attacker from the Phase-1 attacker against the base
defender; every trained arm has the same defender updates."""

from __future__ import annotations

import dataclasses

import torch

import icml26.papers.magic.experiment as E


def _checksum(agent) -> float:
    return float(sum(p.detach().double().sum() * (i + 1) for i, p in enumerate(agent.model.parameters())))


def test_each_arm_starts_from_the_paper_attacker(monkeypatch):
    monkeypatch.setattr(E, "WORKERS", 1)  # record in this process
    seen: dict = {"pretrain": [], "sft": [], "games": [], "no_game": []}
    orig_pre, orig_sft, orig_against = E.pretrain_attacker, E.sft_attacker, E.train_attacker_against

    def pre(agent, *a, **k):
        out = orig_pre(agent, *a, **k)
        seen["pretrain"].append(_checksum(agent))
        return out

    def sft(agent, *a, **k):
        out = orig_sft(agent, *a, **k)
        seen["sft"].append(_checksum(agent))
        return out

    def against(attacker, defender, *a, **k):
        seen["no_game"].append(_checksum(attacker))
        return orig_against(attacker, defender, *a, **k)

    class Recording(E.AlternatingGRPO):
        def __init__(self, attacker, defender, *a, freeze_attacker=False, **k):
            seen["games"].append((_checksum(attacker), freeze_attacker))
            super().__init__(attacker, defender, *a, freeze_attacker=freeze_attacker, **k)

        def fit(self, *a, **k):
            before = _checksum(self.attacker)
            h = super().fit(*a, **k)
            if self.freeze_attacker:
                assert _checksum(self.attacker) == before and h.attacker_updates == 0
            return h

    monkeypatch.setattr(E, "pretrain_attacker", pre)
    monkeypatch.setattr(E, "sft_attacker", sft)
    monkeypatch.setattr(E, "train_attacker_against", against)
    monkeypatch.setattr(E, "AlternatingGRPO", Recording)
    c = dataclasses.replace(E.Config.smoke(), n_train_seeds=64, n_eval_seeds=20, n_val_seeds=10, pool_seeds=16,
                            defender_sft_steps=5, attacker_pretrain_steps=5, attacker_sft_steps=5,
                            defender_updates=2, switch_every=1, heldout_programs=2, d_model=16, lr_grid=(1e-3,))
    out = E.run(c, 0)
    (prior,), (phase1,) = seen["pretrain"], seen["sft"]
    assert prior != phase1
    # games built: no_game's (only to count its schedule's steps, with the Phase-1 attacker),
    # magic_base's, magic's, frozen_attacker's; static builds none
    starts = [cs for cs, frozen in seen["games"]]
    frozen = [f for _, f in seen["games"]]
    assert starts.count(prior) == 1  # MAGIC-base only
    assert frozen.count(True) == 1 and starts[frozen.index(True)] == phase1
    assert all(s in (prior, phase1) for s in starts) and len(starts) == 4
    assert [cs for cs, f in seen["games"] if not f].count(phase1) == 2  # no_game's schedule, MAGIC
    assert seen["no_game"] == [phase1]
    m = out.metrics
    assert len({m[a]["defender_updates"] for a in E.TRAINED}) == 1 and m["base"]["defender_updates"] == 0
    assert m["magic"]["attacker_updates"] == m["magic_base"]["attacker_updates"] == m["no_game"]["attacker_updates"]
    assert torch.isfinite(torch.tensor(m["magic_base"]["composition_share_start"]))

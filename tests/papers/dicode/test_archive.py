"""Scores, statuses, parent selection, compare-and-swap and replay weights vs hand computations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icml26.papers.dicode import (
    LevelArchive,
    LevelSampler,
    learnability,
    pvl_score,
    rank_staleness_weights,
    sample_active_levels,
    select_parents,
    status_from_sr,
    try_activate,
)


def test_learnability_values():
    assert learnability(0.5) == pytest.approx(0.25)
    assert learnability(0.2) == pytest.approx(0.16)
    for sr in (-1.0, 0.0, 1.0):
        assert learnability(sr) == 0.0
    np.testing.assert_allclose(learnability(np.array([0.1, 0.9])), [0.09, 0.09])


@given(st.floats(0, 1))
def test_learnability_is_symmetric_and_bounded(p):
    assert 0 <= learnability(p) <= 0.25 + 1e-12
    assert learnability(p) == pytest.approx(learnability(1 - p), abs=1e-12)


@pytest.mark.parametrize("sr, status", [(1.0, "A"), (0.75, "A"), (0.74, "B"), (0.5, "B"),
                                        (0.49, "C"), (0.25, "C"), (0.2, "D"), (0.0, "D"),
                                        (-1.0, "D")])
def test_status_bins(sr, status):
    assert status_from_sr(sr) == status


def test_pvl_score():
    assert pvl_score(np.array([-1.0, 0.5, 1.5])) == pytest.approx(2.0 / 3)
    assert pvl_score(np.array([])) == 0.0


def _archive(srs, parents=None, capacity=8):
    arc = LevelArchive(capacity)
    for i, sr in enumerate(srs):
        arc.add(f"code{i}", parent=None if parents is None else parents[i])
        if sr is not None:
            arc.update_score(i, sr, session=1)
    return arc


def test_strict_parents_hand_case():
    # 0: A (L .16) with a child 3 of status C -> graduated; 1: B (L .24); 2: A (L .0975)
    # 3: C child of 0; 4: D
    arc = _archive([0.8, 0.6, 0.85, 0.3, 0.1], parents=[None, None, None, 0, None])
    assert select_parents(arc, 2) == [1, 2]
    assert select_parents(arc, 3) == [1, 2, 1]  # replicated to fill K


def test_strict_parents_excludes_full_and_falls_back_to_a():
    arc = _archive([0.8] + [0.0] * 5, parents=[None, 0, 0, 0, 0, 0])
    assert len(arc.records[0].children) == 5
    assert select_parents(arc, 2) == [0, 0]  # no eligible: fallback to the A levels (itself)
    arc2 = _archive([0.6, 0.1])
    arc2.add("child", parent=0)
    arc2.update_score(2, 0.8, 1)  # a child of status A graduates the B parent
    assert select_parents(arc2, 1) == [2]
    arc3 = _archive([0.3, 0.1])
    assert select_parents(arc3, 2) == []


def test_strict_parents_never_pick_graduated_or_full():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = 12
        parents = [None] + [int(rng.integers(i)) for i in range(1, n)]
        arc = _archive(list(rng.uniform(0, 1, n)), parents)
        eligible_exists = any(
            r.status in "AB" and len(r.children) < 5
            and not any(arc.records[c].status in "ABC" for c in r.children)
            for r in arc.records.values())
        for p in select_parents(arc, 4):
            r = arc.records[p]
            if eligible_exists:
                assert len(r.children) < 5
                assert not any(arc.records[c].status in "ABC" for c in r.children)
            else:
                assert r.status == "A"


def test_unrestricted_parents_bad_mode():
    arc = _archive([0.5, 0.1])
    assert set(select_parents(arc, 10, "unrestricted", np.random.default_rng(0))) <= {0, 1}
    with pytest.raises(ValueError, match="strict"):
        select_parents(arc, 1, "greedy")


def test_compare_and_swap():
    arc = _archive([0.5, 0.3, 0.9], capacity=2)  # L: .25 .21 .09
    assert try_activate(arc, 0) is None and arc.records[0].active
    assert try_activate(arc, 1) is None and arc.records[1].active
    assert try_activate(arc, 2) is None and not arc.records[2].active  # .09 < worst .21
    arc.add("new")
    arc.update_score(3, 0.3, 2)  # L .21 == worst .21 -> swaps (>=)
    assert try_activate(arc, 3) == 1
    assert arc.active == [0, 3]


def test_activation_needs_min_entry_score():
    arc = LevelArchive(4, min_entry_score=0.1)
    arc.add("x")
    arc.update_score(0, 1.0, 1)  # L = 0 < 0.1
    try_activate(arc, 0)
    assert not arc.records[0].active


def test_rank_staleness_weights_hand_case():
    # scores rank: [2nd, 1st, 3rd]; staleness: now 5 - [4, 1, 5] = [1, 4, 0]
    w = rank_staleness_weights([0.2, 0.9, 0.1], [4, 1, 5], now=5, temperature=1.0,
                               staleness_coeff=0.3)
    ws = np.array([1 / 2, 1, 1 / 3]) / (1 / 2 + 1 + 1 / 3)
    wc = np.array([1, 4, 0]) / 5
    np.testing.assert_allclose(w, 0.7 * ws + 0.3 * wc)
    assert w.sum() == pytest.approx(1.0)


def test_sample_active_without_replacement():
    arc = _archive([0.5, 0.4, 0.6, 0.2])
    for i in range(4):
        arc.records[i].active = True
    got = sample_active_levels(arc, 3, 2, np.random.default_rng(0))
    assert len(set(got)) == 3
    assert len(sample_active_levels(arc, 10, 2, np.random.default_rng(0))) == 4


def test_level_sampler_jaxued_semantics():
    s = LevelSampler(3, replay_prob=1.0, staleness_coeff=0.0, minimum_fill_ratio=1.0)
    rng = np.random.default_rng(0)
    assert not s.sample_replay_decision(rng)       # not full yet
    s.insert_batch(["a", "b", "c"], [0.1, 0.5, 0.3])
    assert s.sample_replay_decision(rng)
    assert s.insert("d", 0.05) is None               # lower than the worst: rejected
    assert s.insert("e", 0.2) == 0                   # replaces the worst ("a")
    assert s.levels == ["e", "b", "c"]
    s.update(2, 0.9)
    assert s.level_weights().argmax() == 2
    assert len(set(s.sample_replay_levels(rng, 3))) == 3
    with pytest.raises(ValueError):
        LevelSampler(4, prioritization="random")


def test_unrestricted_samples_without_replacement_then_replicates():
    arc = _archive([0.5, 0.1, 0.9])
    got = select_parents(arc, 3, "unrestricted", np.random.default_rng(1))
    assert sorted(got) == [0, 1, 2]
    got = select_parents(arc, 5, "unrestricted", np.random.default_rng(1))
    assert len(got) == 5 and set(got) == {0, 1, 2}


def test_topk_weights_are_a_softmax_over_the_top_k():
    s = LevelSampler(4, staleness_coeff=0.0, prioritization="topk", topk_k=2)
    s.insert_batch(list("abcd"), [0.1, 0.5, 0.3, 0.0])
    w = s.level_weights()
    e = np.exp([0.5 - 0.5, 0.3 - 0.5])
    np.testing.assert_allclose(w, [0, e[0] / e.sum(), e[1] / e.sum(), 0])

"""The three rewards reproduce ecg_r1/plugin.py semantics on constructed cases; IMD frequencies."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.papers.ecg_r1 import (
    InterleavedModalityDropout,
    RandomModalityDropout,
    diagnosis_accuracy_reward,
    format_reward,
    key_evidence_reward,
)


def sol(labels, ev=""):
    return f"<|answer|>{labels}<|/answer|><|key_diagnostic_evidence|>{ev}<|/key_diagnostic_evidence|>"


@pytest.mark.parametrize("pred,gold,r", [
    ("sinus rhythm; prolonged qt", "sinus rhythm; prolonged qt", 1.0),
    ("Sinus Rhythm ;  PROLONGED QT", "prolonged qt; sinus rhythm", 1.0),
    ("a; b", "a; c", 1 / 3),
    ("a", "a; b", 0.5),
    ("a", "a", 1.0),
    ("", "", 1.0),
    ("", "a", 0.0),
    ("a", "", 0.0),
])
def test_diagnosis_jaccard(pred, gold, r):
    assert diagnosis_accuracy_reward([f"<think>x</think><answer>{pred}</answer>"], [sol(gold)]) == \
        [pytest.approx(r)]


def test_diagnosis_missing_tags_and_trl_signature():
    assert diagnosis_accuracy_reward(["no answer here"], [sol("a")]) == [0.0]
    assert diagnosis_accuracy_reward(["<answer>a</answer>"], ["a"]) == [0.0]  # solution without <|answer|>
    # TRL passes prompts and dataset columns as keyword arguments
    assert diagnosis_accuracy_reward(["<answer>a</answer>"] * 2, [sol("a"), sol("b")], prompts=["p", "q"]) == [1.0, 0.0]
    with pytest.raises(ValueError, match="2 completions but 1"):
        diagnosis_accuracy_reward(["a", "b"], [sol("a")])
    with pytest.raises(TypeError):
        diagnosis_accuracy_reward("<answer>a</answer>", [sol("a")])


GT = ("step_1_technical_rate_rhythm: 72 bpm; sinus rhythm step_2_conduction_axis_intervals: prolonged pr "
      "step_5_electrolytes_qt: ")


def test_key_evidence_per_step_hits():
    c = ("<think>**Step 1: Technical, Rate & Rhythm** Rate 72 bpm, Sinus Rhythm. **Step 2: Conduction** "
         "PR is prolonged.</think><answer>x</answer>")
    # step 1: 2/2, step 2: 0/1 ("prolonged pr" not a substring), step 5: no evidence -> excluded
    assert key_evidence_reward([c], [sol("x", GT)]) == [pytest.approx(0.5)]
    c2 = c.replace("PR is prolonged", "prolonged PR interval")
    assert key_evidence_reward([c2], [sol("x", GT)]) == [pytest.approx(1.0)]
    assert key_evidence_reward([c2], [sol("x", GT)], evidence_weight=2.0) == [pytest.approx(2.0)]


def test_key_evidence_must_be_in_its_step():
    c = ("<think>**Step 1: Rate** 72 bpm sinus rhythm **Step 3: Voltage** prolonged pr</think>")
    assert key_evidence_reward([c], [sol("x", GT)]) == [pytest.approx(0.5)]  # (1 + 0) / 2
    assert key_evidence_reward(["**Step 1** 72 bpm sinus rhythm"], [sol("x", GT)]) == [0.0]  # no <think>
    assert key_evidence_reward(["<think>no steps</think>"], [sol("x", GT)]) == [0.0]
    assert key_evidence_reward(["<think>**Step 1** 72 bpm</think>"], [sol("x", "")]) == [0.0]  # no GT evidence


def test_format_reward():
    assert format_reward(["<think>a</think>", "<think>  </think>", "none", "<think>\nb\n</think><answer/>"]) == \
        [1.0, 0.0, 0.0, 1.0]


def _freq(tf, n=20000):
    out = tf([{"ecg": 1, "image": 1} for _ in range(n)])
    e = np.array([o["ecg"] is not None for o in out])
    i = np.array([o["image"] is not None for o in out])
    sw = np.array([o["order"] == ("image", "ecg") for o in out])
    return (e & i).mean(), (e & ~i).mean(), (~e & i).mean(), (~e & ~i).mean(), sw.mean()


def test_imd_frequencies_match_official_procedure():
    both, sig, img, none, swap = _freq(InterleavedModalityDropout(0.5, 0.1, seed=0))
    assert both == pytest.approx(0.5, abs=0.015) and sig == pytest.approx(0.25, abs=0.015)
    assert img == pytest.approx(0.25, abs=0.015) and none == 0.0 and swap == pytest.approx(0.1, abs=0.01)
    assert _freq(InterleavedModalityDropout(0.0, 0.0, seed=0))[0] == 1.0
    both, sig, img, none, swap = _freq(InterleavedModalityDropout(1.0, 0.0, seed=0))
    assert both == 0.0 and none == 0.0 and sig == pytest.approx(0.5, abs=0.015)


def test_imd_single_modality_is_restored_and_control_rate():
    tf = InterleavedModalityDropout(1.0, 0.0, seed=1)
    out = tf([{"ecg": None, "image": 7}] * 100)
    assert all(o["image"] == 7 for o in out)  # dropping the only modality is undone
    both, sig, img, none, swap = _freq(RandomModalityDropout(0.5, seed=0))
    # the control drops each modality at IMD's stated marginal rate p_drop / 2 = 0.25 (issue 51: it was 0.1875)
    assert sig == pytest.approx(0.25, abs=0.01) and img == pytest.approx(0.25, abs=0.01)
    assert both == pytest.approx(0.5, abs=0.01) and none == 0.0 and swap == 0.0
    assert RandomModalityDropout(0.5).q == pytest.approx(1 / 3)
    for p in (0.2, 0.8):  # the marginal rate holds at other p_drop too
        both, sig, img, none, _ = _freq(RandomModalityDropout(p, seed=3))
        assert sig == pytest.approx(p / 2, abs=0.012) and img == pytest.approx(p / 2, abs=0.012) and none == 0.0
    both, sig, img, none, _ = _freq(RandomModalityDropout(1.0, seed=0))
    assert both == 0.0 and none == 0.0 and sig == pytest.approx(0.5, abs=0.015)
    out = RandomModalityDropout(1.0, seed=0)([{"ecg": 3, "image": None}] * 50)
    assert all(o["ecg"] == 3 for o in out)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="probability"):
            InterleavedModalityDropout(p_drop=bad)


def test_grpo_rewards_move_the_policy_toward_the_reward():
    """A reward that pays for one label must raise that label's probability (policy-gradient sign check)."""
    import torch

    from icml26.papers.ecg_r1 import ECGR1Tiny
    from icml26.papers.ecg_r1.model import grpo_finetune
    from icml26.papers.ecg_r1.protocol import LABELS

    torch.manual_seed(0)
    feats = np.random.default_rng(0).normal(size=(32, 20)).astype(np.float32)
    images = np.zeros((32, 10, 10), dtype=np.float32)
    model = ECGR1Tiny(20, (10, 10))

    def likes_low_voltage(completions, solution, **kw):
        return [1.0 if "low voltage" in c.split("<answer>")[-1] else 0.0 for c in completions]

    j = LABELS.index("low voltage")
    ones = torch.ones(32, dtype=torch.bool)

    def p_label():
        with torch.no_grad():
            return torch.sigmoid(model(torch.as_tensor(feats), torch.as_tensor(images), ones, ones, ~ones)[0][:, j]).mean()

    before = p_label()
    budget = grpo_finetune(model, feats, images, ["<|answer|>x<|/answer|>"] * 32, [likes_low_voltage], steps=30,
                           lr=3e-3, seed=0)
    assert budget["updates"] > 0 and p_label() > before + 0.2
    with pytest.raises(ValueError):
        grpo_finetune(model, feats, images, ["x"] * 32, [likes_low_voltage], steps=1, num_generations=1)


def test_stuffing_every_finding_scores_below_a_correct_short_answer():
    """Issue 51: a completion listing every protocol finding in every step (wrong diagnosis) must score below
    a short correct one, on the key-evidence reward alone and on the sum of the three rewards."""
    from dataclasses import replace

    from icml26.papers.ecg_r1.protocol import (
        LABELS,
        LEADS,
        STEP_KEYS,
        STEP_TITLES,
        Measurements,
        interpret,
    )
    from icml26.papers.ecg_r1.reports import protocol_report, solution_text
    from icml26.papers.ecg_r1.rewards import FINDING_PHRASES

    m = Measurements(hr_bpm=72.0, rr_cv=0.02, p_present=True, pr_ms=240.0, qrs_ms=90.0, qt_ms=380.0,
                     qrs_axis_deg=45.0, st_mv={ld: 0.0 for ld in LEADS}, r_mv={ld: 0.8 for ld in LEADS},
                     s_mv={ld: 0.4 for ld in LEADS}, p_amp_mv=0.15, p_dur_ms=100.0)
    labels, ev = interpret(m)
    assert labels == ["sinus rhythm", "first degree av block"]
    solution = solution_text(labels, ev)
    short = ("<think>" + " ".join(f"**Step {k}: {STEP_TITLES[k]}** " + "; ".join(ev[key]) + "."
                                  for k, key in STEP_KEYS.items() if ev[key]) + "</think>"
             f"<answer>{'; '.join(labels)}</answer>")
    stuffed_think = " ".join(f"**Step {k}: {STEP_TITLES[k]}** 72 bpm; " + "; ".join(FINDING_PHRASES) + "."
                             for k in STEP_KEYS)
    stuffed = f"<think>{stuffed_think}</think><answer>atrial fibrillation; left bundle branch block</answer>"
    rewards = (diagnosis_accuracy_reward, key_evidence_reward, format_reward)
    total = [sum(f([c], [solution])[0] for f in rewards) for c in (short, stuffed)]
    ev_short, ev_stuffed = key_evidence_reward([short, stuffed], [solution] * 2)
    official = key_evidence_reward([short, stuffed], [solution] * 2, penalize_unsupported=False)
    assert official == [pytest.approx(1.0), pytest.approx(1.0)]  # plugin.py's recall cannot tell them apart
    assert ev_short == pytest.approx(1.0) and ev_stuffed < 0.5 * ev_short
    # precision S / (S + U): S = 3 reference phrases found, U = catalogue phrases minus the 2 supported ones
    assert ev_stuffed == pytest.approx(3 / (3 + len(FINDING_PHRASES) - 2))
    assert total[1] < total[0] and total[0] == pytest.approx(3.0)
    # stuffing the right answer too does not rescue it
    right_answer = stuffed.replace("atrial fibrillation; left bundle branch block", "; ".join(labels))
    assert sum(f([right_answer], [solution])[0] for f in rewards) < total[0] - 0.5
    # the protocol's own reports (negated exclusions, labels listed in step 6) carry no unsupported finding
    for kw in ({}, {"qrs_ms": 130.0, "v1_terminal": 5.0}, {"qrs_axis_deg": -50.0}, {"hr_bpm": 110.0}):
        text, sol_ = protocol_report(replace(m, **kw))
        assert key_evidence_reward([text], [sol_]) == key_evidence_reward([text], [sol_], penalize_unsupported=False)
    assert len(LABELS) == 22

"""ECG-R1's rewards as TRL reward_funcs, and one TRL GRPO step on a tiny local model."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

from datasets import Dataset  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from icml26.core.lm.hf import char_tokenizer, tiny_causal_lm  # noqa: E402
from icml26.papers.ecg_r1 import diagnosis_accuracy_reward, format_reward, key_evidence_reward  # noqa: E402
from icml26.papers.ecg_r1.hf import reward_funcs, solution_text  # noqa: E402
from icml26.papers.ecg_r1.protocol import STEP_KEYS  # noqa: E402
from icml26.papers.ecg_r1.rewards import parse_evidence  # noqa: E402

EVIDENCE = {STEP_KEYS[1]: ["72 bpm", "sinus rhythm"], STEP_KEYS[2]: ["pr 220 ms"]}
SOLUTION = solution_text(["first degree av block", "sinus rhythm"], EVIDENCE)
COMPLETIONS = [
    "<think>**Step 1 rate:** 72 bpm, sinus rhythm\n**Step 2 conduction:** PR 220 ms</think>"
    "<answer>sinus rhythm; first degree AV block</answer>",
    "<think>**Step 1 rate:** 90 bpm</think><answer>sinus rhythm</answer>",
    "no think here <answer>normal</answer>",
]


def test_rewards_match_ours_on_strings_and_conversations():
    assert parse_evidence(SOLUTION) == EVIDENCE
    sols = [SOLUTION] * 3
    ours = [f(COMPLETIONS, sols) for f in (format_reward, key_evidence_reward, diagnosis_accuracy_reward)]
    assert ours[0] == [1.0, 1.0, 0.0]
    assert ours[1] == pytest.approx([1.0, 0.0, 0.0])
    assert ours[2] == pytest.approx([1.0, 0.5, 0.0])
    funcs = reward_funcs()
    assert [f.__name__ for f in funcs] == ["format", "key_evidence", "diagnosis_accuracy"]
    conv = [[{"role": "assistant", "content": c}] for c in COMPLETIONS]
    for f, want in zip(funcs, ours, strict=True):
        assert f(prompts=["p"] * 3, completions=COMPLETIONS, solution=sols, completion_ids=None) == want
        assert f(prompts=[[{"role": "user", "content": "p"}]] * 3, completions=conv, solution=sols) == want


def test_trl_grpo_step_with_the_three_rewards(tmp_path):
    tok = char_tokenizer()
    model = tiny_causal_lm(tok, "llama", seed=0)
    ds = Dataset.from_dict({"prompt": [[{"role": "user", "content": "ECG: hr 72"}]] * 2, "solution": [SOLUTION] * 2})
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=12, max_steps=1, bf16=False, use_cpu=True, report_to="none",
                      save_strategy="no", logging_steps=1, disable_tqdm=True, seed=0)
    trainer = GRPOTrainer(model=model, reward_funcs=reward_funcs(), args=args, train_dataset=ds, processing_class=tok)
    trainer.train()
    log = trainer.state.log_history[0]
    for name in ("format", "key_evidence", "diagnosis_accuracy"):
        assert log[f"rewards/{name}/mean"] == 0.0  # a random model writes no tags

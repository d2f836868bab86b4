"""Adaptive-reasoning rewards as TRL reward_funcs, and one TRL GRPO run on a tiny local model."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from icml26.core.lm.hf import char_tokenizer, tiny_causal_lm  # noqa: E402
from icml26.papers.adaptive_reasoning import CostumeArithmetic, ModeFormat, adaptthink_reward  # noqa: E402
from icml26.papers.adaptive_reasoning.hf import (  # noqa: E402
    accuracy_reward_func,
    adaptthink_reward_func,
    grpo_dataset,
    oracle_mode_reward_func,
    thinkless_reward_func,
)

FMT = ModeFormat()
PROMPTS = ["3+5?", "3+5*7-2?", "2-8?"]
COMPLETIONS = ["<nothink>8", "<think>3+5=8;8*7=6;6-2=4</think>4", "<think>2-8=4</think>5"]
ANSWERS = ["8", "4", "4"]


def _msgs(texts, role):
    return [[{"role": role, "content": t}] for t in texts]


def test_rewards_match_ours_on_strings_and_conversations():
    ref = {"3+5?": 0.5, "3+5*7-2?": 0.25, "2-8?": 1.0}
    ours = adaptthink_reward(0.05, ref)(PROMPTS, COMPLETIONS, answer=ANSWERS)
    assert ours == pytest.approx([0.05 + 1 - 0.5, 1 - 0.25, 0 - 1.0])
    f = adaptthink_reward_func(0.05, ref)
    assert f.__name__ == "adaptthink"
    assert f(prompts=PROMPTS, completions=COMPLETIONS, answer=ANSWERS) == ours
    assert f(prompts=_msgs(PROMPTS, "user"), completions=_msgs(COMPLETIONS, "assistant"), answer=ANSWERS,
             completion_ids=None, trainer_state=None) == ours
    assert thinkless_reward_func()(prompts=PROMPTS, completions=COMPLETIONS, answer=ANSWERS) == [1.0, 0.5, -1.0]
    assert accuracy_reward_func()(prompts=PROMPTS, completions=COMPLETIONS, answer=ANSWERS) == [1.0, 1.0, 0.0]
    oracle = oracle_mode_reward_func()(prompts=PROMPTS, completions=COMPLETIONS, answer=ANSWERS,
                                       complexity=["simple", "complex", "simple"])
    assert oracle == [1.5, 1.5, 0.0]


def test_grpo_dataset_keeps_the_reward_columns():
    rows = CostumeArithmetic(seed=0).rl_prompts(3)
    ds = grpo_dataset(rows, system="answer")
    assert ds[0]["prompt"] == [{"role": "system", "content": "answer"}, {"role": "user", "content": rows[0]["prompt"]}]
    assert ds["answer"] == [r["answer"] for r in rows] and "complexity" in ds.column_names
    assert grpo_dataset(rows, conversational=False)["prompt"] == [r["prompt"] for r in rows]


def test_trl_grpo_runs_with_the_adaptthink_reward(tmp_path):
    tok = char_tokenizer(added_tokens=(FMT.think, FMT.end_think, FMT.no_think))
    model = tiny_causal_lm(tok, "qwen2", seed=0)
    ds = grpo_dataset(CostumeArithmetic(seed=0).rl_prompts(4))
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=12, max_steps=2, learning_rate=1e-3, bf16=False, use_cpu=True,
                      report_to="none", save_strategy="no", logging_steps=1, disable_tqdm=True, seed=0)
    trainer = GRPOTrainer(model=model, reward_funcs=[adaptthink_reward_func(), oracle_mode_reward_func()],
                          args=args, train_dataset=ds, processing_class=tok)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "rewards/adaptthink/mean" in h]
    assert len(logs) == 2
    assert all("rewards/oracle_mode/mean" in h for h in logs)

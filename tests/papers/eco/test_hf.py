"""ECO driving transformers.Trainer on tiny transformers models (full fine-tuning and LoRA)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
pytest.importorskip("peft")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import DataCollatorForLanguageModeling, TrainingArguments  # noqa: E402

from icml26.core.lm.hf import char_tokenizer, tiny_causal_lm  # noqa: E402
from icml26.core.quant import QuantizedWeight  # noqa: E402
from icml26.papers.eco.hf import (  # noqa: E402
    CODES_FILE,
    ECOTrainer,
    eco_adamw,
    trainable_param_groups,
    with_eco_checkpoints,
)

TEXT = "the cat sat on the mat and the dog sat on the log. "


def _setup(lora: bool):
    tok = char_tokenizer()
    model = tiny_causal_lm(tok, "qwen2", seed=0)
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                                 target_modules=["q_proj", "v_proj", "up_proj", "down_proj"]))
    opt = eco_adamw(model, lr=1e-2 if lora else 3e-3, seed=0)
    return tok, model, opt


def _dataset(tok):
    ids = tok(TEXT * 2, add_special_tokens=False)["input_ids"]
    return Dataset.from_dict({"input_ids": [ids[i:i + 48] for i in range(16)]})


def _args(out):
    return TrainingArguments(output_dir=str(out), per_device_train_batch_size=4, max_steps=6, save_steps=3,
                             logging_steps=1, report_to="none", use_cpu=True, seed=0, disable_tqdm=True)


def _values(model):
    return {n: (p.dequantize() if isinstance(p, QuantizedWeight) else p.detach().clone())
            for n, p in model.named_parameters()}


def _losses(trainer):
    return [h["loss"] for h in trainer.state.log_history if "loss" in h]


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_trainer_loss_falls_and_checkpoint_resumes_bit_exactly(tmp_path, lora):
    tok, model, opt = _setup(lora)
    quantized = [n for n, p in model.named_parameters() if isinstance(p, QuantizedWeight)]
    if lora:
        assert quantized and all("lora_" in n for n in quantized)  # the adapters, not the frozen base
    else:
        assert any(n.endswith("q_proj.weight") for n in quantized)
        assert not any("lm_head" in n or "embed" in n for n in quantized)
    data, collator = _dataset(tok), DataCollatorForLanguageModeling(tok, mlm=False)
    trainer = ECOTrainer(model=model, args=_args(tmp_path), train_dataset=data, data_collator=collator,
                         optimizers=(opt, None))
    trainer.train()
    losses = _losses(trainer)
    assert len(losses) == 6 and losses[-1] < losses[0]
    final = _values(model)
    ckpt = tmp_path / "checkpoint-3"
    assert (ckpt / CODES_FILE).is_file() and (ckpt / "optimizer.pt").is_file()

    tok, model2, opt2 = _setup(lora)  # a fresh process's view: same init, new optimizer
    resumed = ECOTrainer(model=model2, args=_args(tmp_path / "resume"), train_dataset=data, data_collator=collator,
                         optimizers=(opt2, None))
    resumed.train(resume_from_checkpoint=str(ckpt))
    assert _losses(resumed)[-3:] == losses[-3:]
    again = _values(model2)
    assert all(torch.equal(final[n], again[n]) for n in final)


def test_checkpoint_holds_standard_float_weights(tmp_path):
    """The saved model.safetensors holds the dequantized values (from_pretrained-readable)."""
    from safetensors.torch import load_file

    tok, model, opt = _setup(lora=False)
    trainer = ECOTrainer(model=model, args=_args(tmp_path), train_dataset=_dataset(tok),
                         data_collator=DataCollatorForLanguageModeling(tok, mlm=False), optimizers=(opt, None))
    trainer.save_model(str(tmp_path / "final"))
    saved = load_file(str(tmp_path / "final" / "model.safetensors"))
    w = model.model.layers[0].self_attn.q_proj.weight
    assert isinstance(w, QuantizedWeight)
    assert torch.equal(saved["model.layers.0.self_attn.q_proj.weight"], w.dequantize())


def test_param_groups_and_mixin_errors():
    tok = char_tokenizer()
    model = tiny_causal_lm(tok, "llama")
    groups = trainable_param_groups(model)
    n_lin = sum(isinstance(m, torch.nn.Linear) for m in model.modules()) - 1  # all but lm_head
    assert len(groups[0]["params"]) == n_lin and groups[1]["weight_format"] is None
    for p in model.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="trainable"):
        trainable_param_groups(model)
    with pytest.raises(TypeError, match="Trainer"):
        with_eco_checkpoints(object)
    from trl import SFTTrainer

    assert with_eco_checkpoints(SFTTrainer).__name__ == "ECOSFTTrainer"

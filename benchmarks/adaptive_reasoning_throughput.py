"""Throughput of the LM post-training core on the adaptive_reasoning model sizes (CPU).

Prints and writes JSON: SFT training tokens/s, KV-cached vs uncached generation tokens/s. Only
real tokens count: SFT counts non-padding prompt + completion tokens (the attention mask), generation
counts generated tokens up to and including the stop token (``completion_mask``), not the padding
after a row stops.
Usage: ``python benchmarks/adaptive_reasoning_throughput.py [--threads 1] [--out bench.json]``.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from icml26.core.lm.generate import generate
from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.lm.sft import SFTBatch, build_sft_batch, sft_loss
from icml26.papers.adaptive_reasoning import CostumeArithmetic, make_tokenizer, sft_examples


def real_tokens(batch: SFTBatch) -> int:
    """Non-padding tokens of an SFT batch (its attention mask)."""
    return int(batch.attention_mask.sum())


def bench(n_embd: int, n_layer: int, batch: int = 64, reps: int = 5) -> dict:
    task, tok = CostumeArithmetic(seed=0), make_tokenizer()
    P, C = task.max_prompt_length + 1, task.max_completion_length
    torch.manual_seed(0)
    model = TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=P + C, n_layer=n_layer,
                                  n_head=4, n_embd=n_embd))
    ex = sft_examples(tok, task.sft_dataset(batch, seed=0))
    b: SFTBatch = build_sft_batch([e["prompt_ids"] for e in ex], [e["completion_ids"] for e in ex],
                                  pad_id=tok.pad_id, prompt_length=P)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t0 = time.process_time()
    for _ in range(reps):
        loss = sft_loss(model, b)
        opt.zero_grad()
        loss.backward()
        opt.step()
    train_s = (time.process_time() - t0) / reps
    prompts = [e["prompt_ids"] for e in ex]
    res = {"params": model.num_parameters(), "n_embd": n_embd, "n_layer": n_layer, "batch": batch,
           "train_tokens_per_cpu_s": real_tokens(b) / train_s,
           "train_padded_tokens_per_cpu_s": b.input_ids.numel() / train_s}
    for cache in (True, False):
        t0 = time.process_time()
        out = generate(model, prompts, max_new_tokens=C, pad_id=tok.pad_id, temperature=1.0,
                       prompt_length=P, use_cache=cache, generator=torch.Generator().manual_seed(0))
        dt = time.process_time() - t0
        res[f"generate_{'cached' if cache else 'uncached'}_tokens_per_cpu_s"] = int(out.completion_mask.sum()) / dt
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    results = [bench(32, 1), bench(64, 2), bench(128, 4)]
    for r in results:
        print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()}))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()

"""Tiny language models: a causal transformer with KV cache and a char tokenizer.

Papers extend this core (training loops, generation, SFT, GRPO, preference losses); import the
submodules directly (``icml26.core.lm.model``) so that importing ``icml26.core.lm`` stays cheap.
"""

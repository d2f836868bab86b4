"""Tier B: a tiny causal LM policy on a task with a known reward and enumerable responses.

Prompt: ``prompt_len`` symbols over an alphabet of ``n_symbols``; response: ``response_len``
symbols. The true reward rewards each response symbol for being close (on the circle of symbols)
to a prompt-dependent target ``t_i = (x_i + i) mod n_symbols``, plus a small fixed per-(position,
symbol) bonus that breaks exact ties into near-ties:

    r*(x, y) = sum_i cos(2 pi (y_i - t_i) / n_symbols) + b[i, y_i],   b ~ N(0, bonus_sd^2).

The vocabulary is exactly the symbols, so the LM's distribution over the ``n_symbols **
response_len`` responses is normalised and expected reward and KL(pi || pi_ref) are computed
*exactly* by enumeration (no sampling noise). The reference is the LM after SFT on targets
corrupted uniformly at random (so reference samples span the reward range; the brief's design).
Our construction (the paper's LLM benchmarks cannot run here).
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.lm.sft import SFTBatch, SFTConfig, sft_loss, train_sft

from .trainer import PairData

RESPONSE_BLOCK = 64  # prompts per tree expansion in :meth:`SymbolTask.response_logprobs`


class SymbolTask:
    """The task: prompts, the true reward and the set of all responses."""

    def __init__(self, n_symbols: int = 8, prompt_len: int = 4, response_len: int = 3,
                 bonus_sd: float = 0.15, seed: int = 0) -> None:
        if n_symbols < 2 or prompt_len < response_len or response_len < 1:
            raise ValueError("need n_symbols >= 2 and prompt_len >= response_len >= 1")
        self.n_symbols, self.prompt_len, self.response_len = n_symbols, prompt_len, response_len
        self.bonus = np.random.default_rng([seed, 7]).normal(0.0, bonus_sd, (response_len, n_symbols))
        self.responses = np.array(list(itertools.product(range(n_symbols), repeat=response_len)))

    def prompts(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, self.n_symbols, size=(n, self.prompt_len))

    def split_prompts(self, n_train: int, n_eval: int, rng: np.random.Generator,
                      eval_fraction: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
        """Training and evaluation prompts whose reward-determining prefixes are disjoint.

        The reward depends on the first ``response_len`` prompt symbols only; a random
        ``eval_fraction`` of those prefixes is reserved for evaluation, so the trained policy is
        judged on prompts it never saw a preference pair for.
        """
        if not 0.0 < eval_fraction < 1.0:
            raise ValueError(f"eval_fraction must lie in (0, 1), got {eval_fraction}")
        prefixes = rng.permutation(self.responses)  # every possible reward-determining prefix
        n_eval_prefixes = max(1, int(round(eval_fraction * len(prefixes))))
        pools = prefixes[n_eval_prefixes:], prefixes[:n_eval_prefixes]
        out = []
        for pool, n in zip(pools, (n_train, n_eval), strict=True):
            head = pool[rng.integers(0, len(pool), size=n)]
            tail = rng.integers(0, self.n_symbols, size=(n, self.prompt_len - self.response_len))
            out.append(np.concatenate([head, tail], axis=1))
        return out[0], out[1]

    def targets(self, prompts: np.ndarray) -> np.ndarray:
        i = np.arange(self.response_len)
        return (prompts[:, : self.response_len] + i) % self.n_symbols

    def reward(self, prompts: np.ndarray, responses: np.ndarray) -> np.ndarray:
        """r*(x, y) for prompts (B, prompt_len) and responses (B, response_len)."""
        t = self.targets(prompts)
        i = np.arange(self.response_len)
        close = np.cos(2 * np.pi * (responses - t) / self.n_symbols).sum(1)
        return close + self.bonus[i, responses].sum(1)

    def all_rewards(self, prompts: np.ndarray) -> np.ndarray:
        """r* of every response for every prompt, shape (B, n_responses)."""
        B, R = len(prompts), len(self.responses)
        return self.reward(np.repeat(prompts, R, 0), np.tile(self.responses, (B, 1))).reshape(B, R)

    def sequences(self, prompts: np.ndarray, responses: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.as_tensor(np.concatenate([prompts, responses], axis=1), dtype=torch.long)
        mask = torch.zeros_like(ids)
        mask[:, self.prompt_len:] = 1
        return ids, mask

    def make_model(self, n_embd: int = 64, n_layer: int = 2, n_head: int = 4) -> TinyCausalLM:
        return TinyCausalLM(LMConfig(vocab_size=self.n_symbols,
                                     block_size=self.prompt_len + self.response_len,
                                     n_layer=n_layer, n_head=n_head, n_embd=n_embd))

    @torch.no_grad()
    def response_logprobs(self, model: torch.nn.Module, prompts: np.ndarray) -> torch.Tensor:
        """log pi(y | x) of every response, shape (B, n_responses), by tree expansion.

        The prompt is encoded once; each level of the response tree reuses the KV cache of its
        parent, so the cost is B * (prompt_len + S + S^2 + ...) tokens rather than
        B * S^L * (prompt_len + L). Columns follow ``self.responses`` (first symbol slowest).
        Prompts are expanded in blocks of :data:`RESPONSE_BLOCK` (speed only: rows never mix, so
        every prompt's numbers are those of one full-batch call, bit for bit; the leaves' caches
        of a block stay small).
        """
        model.eval()
        if len(prompts) <= RESPONSE_BLOCK:
            return self._tree_logprobs(model, prompts)
        return torch.cat([self._tree_logprobs(model, prompts[i:i + RESPONSE_BLOCK])
                          for i in range(0, len(prompts), RESPONSE_BLOCK)])

    def _tree_logprobs(self, model: torch.nn.Module, prompts: np.ndarray) -> torch.Tensor:
        S = self.n_symbols
        ids = torch.as_tensor(prompts, dtype=torch.long)
        logits, past = model(ids)
        total = torch.log_softmax(logits[:, -1].float(), dim=-1)  # (B, S): log p(y1)
        for _ in range(1, self.response_len):
            n_leaves = total.shape[1]
            # each row's cache repeated S times in a row (= repeat_interleave(S, 0), one copy)
            past = [tuple(z.unsqueeze(1).expand(-1, S, *z.shape[1:]).reshape(-1, *z.shape[1:])
                          for z in kv) for kv in past]
            # the newest token of each leaf: leaves enumerate (..., y_last) with y_last fastest
            last = torch.arange(S).repeat(len(ids) * (n_leaves // S))
            logits, past = model(last.view(-1, 1), past)
            step = torch.log_softmax(logits[:, -1].float(), dim=-1).view(len(ids), n_leaves, S)
            total = (total.unsqueeze(-1) + step).view(len(ids), n_leaves * S)
        return total

    def evaluate(self, model, ref_logp: torch.Tensor, prompts: np.ndarray,
                 rewards: np.ndarray) -> dict[str, float]:
        logp = self.response_logprobs(model, prompts)
        p = logp.exp()
        return {"reward": float((p * torch.as_tensor(rewards)).sum(1).mean()),
                "kl": float((p * (logp - ref_logp)).sum(1).mean())}

    def sft_reference(self, n_examples: int, corrupt: float, steps: int, seed: int,
                      lr: float = 3e-3, batch_size: int = 256) -> TinyCausalLM:
        """The reference policy: SFT (the shared :func:`icml26.core.lm.sft.train_sft`) on
        targets whose symbols are resampled uniformly at random with probability ``corrupt``."""
        rng = np.random.default_rng([seed, 11])
        prompts = self.prompts(n_examples, rng)
        y = self.targets(prompts)
        noise = rng.random(y.shape) < corrupt
        y = np.where(noise, rng.integers(0, self.n_symbols, y.shape), y)
        ids = np.concatenate([prompts, y], axis=1)
        dataset = [{"prompt_ids": p.tolist(), "completion_ids": c.tolist(), "ids": row}
                   for p, c, row in zip(prompts, y, ids, strict=True)]
        torch.manual_seed(seed)
        model = self.make_model()
        # prompts and responses have fixed lengths: padding never occurs, pad_id is unused
        train_sft(model, dataset, SFTConfig(learning_rate=lr, per_device_train_batch_size=batch_size,
                                            max_steps=steps, lr_scheduler_type="constant", seed=seed),
                  pad_id=0, prompt_length=self.prompt_len, loss_fn=self._fixed_length_loss)
        return model.eval()

    def _fixed_length_loss(self, model: torch.nn.Module, rows: list[dict], prompt_length: int) -> torch.Tensor:
        """:func:`~icml26.core.lm.sft.sft_loss` on the batch :func:`~icml26.core.lm.sft.build_sft_batch`
        lays out for fixed-length rows (no padding: every token attended, the loss on the
        response), stacked from the rows' token arrays instead of padded row by row (the same
        tensors, so the same numbers)."""
        ids = torch.as_tensor(np.stack([r["ids"] for r in rows]), dtype=torch.long)
        completion = torch.zeros(ids.shape, dtype=torch.bool)
        completion[:, prompt_length:] = True
        batch = SFTBatch(ids, torch.ones(ids.shape, dtype=torch.bool), completion,
                         torch.ones(len(rows), dtype=torch.float32))
        return sft_loss(model, batch)

    def sample_pairs(self, ref_logp: torch.Tensor, prompts: np.ndarray,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Two distinct responses per prompt, sampled from the reference: indices into responses."""
        probs = ref_logp.exp().double().numpy()
        probs /= probs.sum(1, keepdims=True)
        first = np.empty(len(prompts), dtype=int)
        second = np.empty(len(prompts), dtype=int)
        for k in range(len(prompts)):
            first[k], second[k] = rng.choice(len(self.responses), size=2, replace=False, p=probs[k])
        return first, second

    def pair_data(self, prompts: np.ndarray, first: np.ndarray, second: np.ndarray,
                  labels: np.ndarray) -> PairData:
        a, mask = self.sequences(prompts, self.responses[first])
        b, _ = self.sequences(prompts, self.responses[second])
        return PairData(a, b, mask, np.asarray(labels))

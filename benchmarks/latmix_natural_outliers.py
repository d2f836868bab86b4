"""Does a training recipe give latmix's tiny char LM outliers of its own? (issue 46)

Trains the LM of ``icml26.papers.latmix`` on the packaged tales corpus with one recipe and
measures the ``natural_outliers`` gate's statistic with the gate's own functions
(``_site_inputs`` + ``outlier_ratio`` on 8 calibration windows built as ``_splits`` builds them),
plus He et al. (2024)'s feature kurtosis (``fkurt``: kurtosis of the per-channel RMS, 1 =
isotropic) and the plain kurtosis of the site inputs (``kurt``; 3 for a Gaussian), median over
sites, the validation loss and the training seconds. ``--sink N`` prepends N learned sink tokens
to every window (the attention-sink / "massive activation" mechanism of Sun et al. 2024 and
Bondarenko et al. 2023). The recipes tried and their results are in
``benchmarks/latmix_natural_outliers.md``. One JSON line per run on stdout (and ``--out``).

Run: python benchmarks/latmix_natural_outliers.py --name I --d 64 --steps 1000 --lr 8e-2 --warmup 200
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from scipy import stats
from torch import nn

from icml26.core.lm.data import char_corpus, corpus_text
from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.core.lm.train import TrainConfig, train_lm
from icml26.papers.latmix.experiment import Config, _site_inputs, outlier_ratio


class SinkLM(TinyCausalLM):
    """``n_sink`` learned embeddings prepended to every fresh sequence; their logits dropped."""

    def __init__(self, config: LMConfig, n_sink: int = 1) -> None:
        big = LMConfig(**{**config.__dict__, "block_size": config.block_size + n_sink})
        super().__init__(big)
        self.n_sink = n_sink
        self.sink = nn.Parameter(torch.randn(n_sink, big.n_embd) * 0.02)

    def forward(self, idx=None, past=None, *, inputs_embeds=None, attn_mask=None, position_offset=None):
        if past is None and attn_mask is None and position_offset is None:
            x = self.tok_emb(idx) if idx is not None else inputs_embeds
            x = torch.cat([self.sink.expand(x.shape[0], -1, -1), x], dim=1)
            logits, present = super().forward(inputs_embeds=x)
            return logits[:, self.n_sink:], present
        return super().forward(idx, past, inputs_embeds=inputs_embeds, attn_mask=attn_mask,
                               position_offset=position_offset)


def feature_kurtosis(x: torch.Tensor) -> float:
    s2 = x.double().pow(2).mean(0)
    return float((s2 ** 2).mean() / s2.mean() ** 2)




def main(a: argparse.Namespace) -> dict:
    torch.set_num_threads(1)
    qc = Config.quick()
    data = char_corpus(corpus_text(a.chars, source="tales"), val_fraction=0.2)
    torch.manual_seed(a.seed)
    cfg = LMConfig(vocab_size=data.vocab_size, block_size=a.block, n_layer=a.layers, n_head=a.heads,
                   n_embd=a.d, norm=a.norm, bias=bool(a.bias))
    model = SinkLM(cfg, a.sink) if a.sink else TinyCausalLM(cfg)
    if a.tie:  # tied input/output embeddings
        model.head.weight = model.tok_emb.weight
    if a.nope:  # no position embeddings (frozen at zero)
        nn.init.zeros_(model.pos_emb.weight)
        model.pos_emb.weight.requires_grad_(False)
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=a.lr, betas=(0.9, a.b2), eps=a.eps,
                            weight_decay=a.wd)
    g = torch.Generator().manual_seed(50_000 + a.seed)  # as latmix's _splits
    starts = torch.randint(0, len(data.train) - a.block - 1, (qc.calib_windows,), generator=g)
    calib = torch.stack([data.train[s:s + a.block] for s in starts.tolist()])
    t0 = time.perf_counter()
    res = train_lm(model, opt, data, TrainConfig(steps=a.steps, batch_size=a.batch, block_size=a.block,
                                                 warmup_steps=a.warmup, eval_windows=16, seed=a.seed))
    secs = time.perf_counter() - t0
    model.eval()
    ins = _site_inputs(model, calib[:8], qc.bound_tokens)
    mid = len(ins) // 2
    return {"name": a.name, "seed": a.seed, "ratio": outlier_ratio(ins),
            "fkurt": sorted(feature_kurtosis(v) for v in ins.values())[mid],
            "kurt": sorted(float(stats.kurtosis(v.double().flatten().numpy(), fisher=False))
                           for v in ins.values())[mid],
            "val_nats": res.final_val_loss, "train_s": secs, "args": vars(a)}


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--name", default="base")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--norm", default="rmsnorm")
    p.add_argument("--bias", type=int, default=1)
    p.add_argument("--sink", type=int, default=0)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--b2", type=float, default=0.95)
    p.add_argument("--wd", type=float, default=0.0)
    p.add_argument("--tie", type=int, default=0)
    p.add_argument("--nope", type=int, default=0)
    p.add_argument("--chars", type=int, default=300_000)
    p.add_argument("--out")
    args = p.parse_args()
    line = json.dumps(main(args))
    print(line)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(line + "\n")

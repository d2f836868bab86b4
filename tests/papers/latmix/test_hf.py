"""LATMiX on transformers causal LMs built from tiny configs (random weights, no download)."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from icml26.core.lm.hf import char_tokenizer, tiny_causal_lm  # noqa: E402
from icml26.papers.latmix import LatmixConfig, MXLinear  # noqa: E402
from icml26.papers.latmix.hf import find_sites, load_quantized, quantize_, save_quantized  # noqa: E402


@pytest.fixture(scope="module")
def tok():
    return char_tokenizer()


def _calib(tok, n=8, t=32, seed=0):
    return torch.randint(8, len(tok), (n, t), generator=torch.Generator().manual_seed(seed))


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits


def _rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("arch", ["qwen2", "llama", "mistral"])
def test_sites_are_the_linears_around_each_norm(tok, arch):
    model = tiny_causal_lm(tok, arch)
    sites = find_sites(model)
    kinds = [k for _, k, _ in sites.values()]
    assert len(sites) == 2 * 7
    assert kinds[:7] == ["qkv", "qkv", "qkv", "o", "up", "up", "down"]
    assert list(sites)[0].endswith("layers.0.self_attn.q_proj")
    assert list(sites)[-1].endswith("layers.1.mlp.down_proj")


@pytest.mark.parametrize("arch", ["qwen2", "llama", "mistral"])
def test_learned_transforms_fold_exactly_with_quantizers_off(tok, arch):
    """Transforms trained with MX quantizers in the loop (so they move away from their Hadamard
    start), then folded with the quantizers off: the model computes the same function."""
    model = tiny_causal_lm(tok, arch, seed=1)
    calib = _calib(tok)
    ref = _logits(model, calib[:2])
    cfg = LatmixConfig(weight_fmt=None, act_fmt=None, train_act_fmt="mxfp4", train_weight_fmt="mxfp4",
                       steps=3, batch_size=4, lr=1e-2)
    report = quantize_(model, cfg, calib=calib)
    assert report.steps_run == 3 and len(report.losses) == 3
    assert max(abs(v) for v in report.logabsdet.values()) > 1e-3  # the transforms did move
    assert sum(isinstance(m, MXLinear) for m in model.modules()) == 14
    assert _rel(_logits(model, calib[:2]), ref) <= 1e-5


@pytest.mark.parametrize("transform", ["rotation", "hadamard", "block_hadamard", "smoothquant"])
def test_other_transform_kinds_fold_exactly(tok, transform):
    model = tiny_causal_lm(tok, "qwen2", seed=2)
    calib = _calib(tok, n=4)
    ref = _logits(model, calib[:2])
    cfg = LatmixConfig(weight_fmt=None, act_fmt=None, train_act_fmt="mxfp4", train_weight_fmt="mxfp4",
                       transform=transform, steps=2, batch_size=2, lr=1e-2)
    quantize_(model, cfg, calib=calib)
    assert _rel(_logits(model, calib[:2]), ref) <= 1e-5


def test_quantized_logits_finite_and_checkpoint_round_trip(tok, tmp_path):
    model = tiny_causal_lm(tok, "llama", seed=3, tie_word_embeddings=True)
    calib = _calib(tok)
    ref = _logits(model, calib[:2])
    report = quantize_(model, LatmixConfig(weight_fmt="mxfp4", act_fmt="mxfp4", steps=3, batch_size=4), calib=calib)
    assert report.online_flops_per_token > 0
    q = _logits(model, calib[:2])
    assert torch.isfinite(q).all()
    assert not torch.equal(q, ref)  # W4A4 changes the function
    save_quantized(model, tmp_path)
    assert (tmp_path / "latmix.json").is_file() and (tmp_path / "model.safetensors").is_file()
    loaded = load_quantized(tmp_path)
    assert isinstance(loaded.model.layers[0].self_attn.q_proj, MXLinear)
    assert loaded.latmix_config == model.latmix_config
    assert torch.equal(_logits(loaded, calib[:2]), q)


def test_clear_errors(tok):
    from icml26.core.lm.model import LMConfig, TinyCausalLM

    with pytest.raises(TypeError, match="Llama/Qwen2/Mistral"):
        quantize_(TinyCausalLM(LMConfig(vocab_size=16, block_size=8, n_layer=1, n_head=2, n_embd=32)),
                  LatmixConfig(steps=0))
    with pytest.raises(TypeError, match="float32"):
        quantize_(tiny_causal_lm(tok, "qwen2").to(torch.bfloat16), LatmixConfig(steps=0))
    with pytest.raises(ValueError, match="calib"):
        quantize_(tiny_causal_lm(tok, "qwen2"), LatmixConfig(steps=2))
    model = tiny_causal_lm(tok, "qwen2")
    quantize_(model, LatmixConfig(transform="hadamard", steps=0))
    with pytest.raises(TypeError, match="already quantized"):
        quantize_(model, LatmixConfig(transform="hadamard", steps=0))

"""Correctness tests of the adaptive_reasoning API: task generator, mode format, rewards, trainer."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.core.lm.grpo import compute_advantages
from icml26.core.lm.model import LMConfig, TinyCausalLM
from icml26.papers.adaptive_reasoning import (
    CELLS,
    AdaptiveReasonerConfig,
    CostumeArithmetic,
    ModeFormat,
    accuracy_reward,
    adaptthink_reward,
    evaluate_chain,
    evaluate_modes,
    make_tokenizer,
    oracle_mode_reward,
    reference_think_accuracy,
    render,
    thinkless_reward,
    train_adaptive_reasoner,
)

FMT = ModeFormat()


@given(st.lists(st.integers(0, 9), min_size=2, max_size=6), st.data())
@settings(max_examples=50, deadline=None)
def test_chain_matches_python(operands, data):
    ops = tuple(data.draw(st.sampled_from("+-*")) for _ in operands[1:])
    answer, steps = evaluate_chain(tuple(operands), ops)
    acc = operands[0]
    for o, b in zip(ops, operands[1:], strict=True):
        acc = eval(f"({acc}){o}({b})") % 10  # noqa: S307 - digits and +-* only
    assert answer == acc
    assert len(steps) == len(ops) and steps[-1].endswith(f"={answer}")


def test_format_parsing():
    assert FMT.mode("<think>3+5=8</think>8") == "think"
    assert FMT.answer("<think>3+5=8</think>8") == "8"
    assert FMT.answer("<nothink>8") == "8"
    assert FMT.mode("8") == "invalid" and FMT.answer("8") is None
    assert FMT.answer("<think>3+5=8") is None  # no end of thinking
    assert FMT.answer("<nothink><think>8") is None
    assert FMT.is_correct("<nothink>8", 8) and not FMT.is_correct("<nothink>7", "8")


def test_dataset_rows_are_consistent():
    task = CostumeArithmetic(seed=0)
    tok = make_tokenizer()
    rows = task.sft_dataset(400, augment_verbose=True, seed=0)
    for r in rows:
        ans = FMT.answer(r["completion"])
        assert ans == r["answer"]
        expr = "".join(ch for ch in r["prompt"].rstrip("?") if ch in "0123456789+-*")
        value, _ = evaluate_chain(tuple(int(c) for c in expr[::2]), tuple(expr[1::2]))
        assert str(value) == r["answer"]
        n_ops = len(expr) // 2
        assert (n_ops == 1) == (r["complexity"] == "simple")
        tok.encode(r["prompt"] + r["completion"])  # every character is in the vocabulary
    assert "please" in render("ab3+4?") or render("ab3+4?").endswith("3+4?")


def test_verbose_lengths_are_matched():
    task = CostumeArithmetic(seed=0)
    grid = task.test_grid(400, seed=0)
    lens = {c: [len(r["prompt"]) for r in grid if f"{r['complexity']}-{r['phrasing']}" == c] for c in CELLS}
    sv, cv = lens["simple-verbose"], lens["complex-verbose"]
    assert min(sv) >= task.verbose_length[0] and max(sv) <= task.verbose_length[1]
    assert abs(sum(sv) / len(sv) - sum(cv) / len(cv)) < 1.0  # same length distribution
    assert max(lens["simple-concise"]) < min(lens["complex-concise"])


def test_augmentation_pairs_and_baseline_mix():
    task = CostumeArithmetic(seed=0)
    aug = task.sft_dataset(2000, augment_verbose=True, seed=0)
    naive = task.sft_dataset(2000, augment_verbose=False, seed=0)
    simple_aug = [r for r in aug if r["complexity"] == "simple"]
    sv = [r for r in simple_aug if r["phrasing"] == "verbose"]
    assert abs(len(sv) - len(simple_aug) / 2) <= 1
    # each verbose simple problem shares its target with a concise twin
    concise_targets = {r["completion"] for r in simple_aug if r["phrasing"] == "concise"}
    assert all(r["completion"] in concise_targets for r in sv)
    assert not [r for r in naive if r["complexity"] == "simple" and r["phrasing"] == "verbose"]
    cx = [r for r in aug if r["complexity"] == "complex"]
    direct = [r for r in cx if r["completion"].startswith("<nothink>")]
    assert all(r["completion"].startswith(("<think>", "<nothink>")) for r in cx)
    assert 0.10 <= len(direct) / len(cx) <= 0.20  # complex_direct_frac = 0.15: a real never-think baseline
    none = task.sft_dataset(2000, complex_direct_frac=0.0, seed=0)
    assert all(r["completion"].startswith("<think>") for r in none if r["complexity"] == "complex")


def test_naive_data_with_natural_verbose_simple_problems():
    """Issue 50: naive data may hold verbose simple problems (at a natural, lower rate), with the
    targets of simple problems: mostly direct, so the naive model *could* learn to ignore costumes."""
    task = CostumeArithmetic(seed=0)
    natural = task.sft_dataset(4000, augment_verbose=False, simple_verbose_frac=0.1, seed=0)
    simple = [r for r in natural if r["complexity"] == "simple"]
    sv = [r for r in simple if r["phrasing"] == "verbose"]
    assert 0.07 <= len(sv) / len(simple) <= 0.13
    direct = [r for r in sv if r["completion"].startswith("<nothink>")]
    assert 0.75 <= len(direct) / len(sv) <= 0.95  # simple_think_frac = 0.15 applies to them too
    cx = [r for r in natural if r["complexity"] == "complex"]
    assert 0.45 <= sum(r["phrasing"] == "verbose" for r in cx) / len(cx) <= 0.55
    # the default (0) draws nothing extra: the same data as before the option existed
    assert task.sft_dataset(300, augment_verbose=False, seed=1) == \
        task.sft_dataset(300, augment_verbose=False, simple_verbose_frac=0.0, seed=1)
    with pytest.raises(ValueError, match="non-augmented"):
        task.sft_dataset(100, augment_verbose=True, simple_verbose_frac=0.1)
    with pytest.raises(ValueError, match="simple_verbose_frac"):
        task.sft_dataset(100, augment_verbose=False, simple_verbose_frac=1.5)


def test_split_is_disjoint_and_deterministic():
    task = CostumeArithmetic(seed=3)
    train = {tuple(k) for k in task._complex_pool["train"]}
    test = {tuple(k) for k in task._complex_pool["test"]}
    assert train and test and not train & test
    train_prompts = {r["prompt"] for r in task.sft_dataset(3000, seed=0) if r["complexity"] == "complex"}
    test_prompts = [r["prompt"] for r in task.test_grid(200, seed=0) if r["complexity"] == "complex"]
    assert not train_prompts & set(test_prompts)
    assert task.test_grid(20, seed=1) == CostumeArithmetic(seed=3).test_grid(20, seed=1)
    assert task.sft_dataset(50, seed=2) == CostumeArithmetic(seed=3).sft_dataset(50, seed=2)


def test_rewards_by_hand():
    prompts = ["1+2?"] * 4
    comps = ["<nothink>3", "<think>1+2=3</think>3", "<nothink>4", "oops"]
    ans = ["3"] * 4
    assert accuracy_reward()(prompts, comps, answer=ans) == [1, 1, 0, 0]
    assert adaptthink_reward(0.05)(prompts, comps, answer=ans) == pytest.approx([1.05, 1.0, 0.05, 0.0])
    ref = adaptthink_reward(0.05, ref_accuracy={"1+2?": 0.75})(prompts, comps, answer=ans)
    assert ref == pytest.approx([0.30, 0.25, -0.70, -0.75])
    assert thinkless_reward()(prompts, comps, answer=ans) == [1.0, 0.5, -1.0, -1.0]
    cx = ["simple"] * 4
    assert oracle_mode_reward(0.5)(prompts, comps, answer=ans, complexity=cx) == [1.5, 1.0, 0.5, 0.0]


def test_reference_accuracy_cancels_in_group_advantages():
    comps = ["<nothink>3", "<think>1+2=3</think>3", "<nothink>4", "<think>1+2=4</think>4"]
    ans = ["3"] * 4
    plain = adaptthink_reward(0.05)(["x"] * 4, comps, answer=ans)
    with_ref = adaptthink_reward(0.05, ref_accuracy=lambda p: 0.6)(["x"] * 4, comps, answer=ans)
    torch.testing.assert_close(compute_advantages(torch.tensor(plain), 4),
                               compute_advantages(torch.tensor(with_ref), 4))


def test_reward_bad_input():
    with pytest.raises(ValueError, match="lengths must agree"):
        accuracy_reward()(["a", "b"], ["<nothink>1"], answer=["1", "2"])
    with pytest.raises(ValueError, match="answer"):
        adaptthink_reward()(["a"], ["<nothink>1"])
    with pytest.raises(ValueError, match="complexity"):
        oracle_mode_reward()(["a"], ["<nothink>1"], answer=["1"])
    with pytest.raises(KeyError, match="no reference accuracy"):
        adaptthink_reward(ref_accuracy={})(["a"], ["<nothink>1"], answer=["1"])


def test_task_and_config_bad_input():
    with pytest.raises(ValueError, match="complex_ops"):
        CostumeArithmetic(complex_ops=(1, 2))
    with pytest.raises(ValueError, match="verbose_length"):
        CostumeArithmetic(verbose_length=(5, 10))
    with pytest.raises(ValueError, match="split"):
        CostumeArithmetic().problem("simple", "concise", "dev", None)
    with pytest.raises(ValueError, match="even num_generations"):
        AdaptiveReasonerConfig(num_generations=5)
    with pytest.raises(ValueError, match="force"):
        evaluate_modes(None, make_tokenizer(), [{}], force="maybe")


def test_end_to_end_tiny_run_learns_the_mode_and_is_deterministic():
    task = CostumeArithmetic(seed=0)
    tok = make_tokenizer()
    P, C = task.max_prompt_length + 1, task.max_completion_length

    def once():
        torch.manual_seed(0)
        model = TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=P + C, n_layer=1,
                                      n_head=2, n_embd=32))
        cfg = AdaptiveReasonerConfig(sft_steps=80, sft_batch_size=32, grpo_steps=2, grpo_batch_size=4,
                                     num_generations=4, prompt_length=P, max_completion_length=C)
        hist = {}
        train_adaptive_reasoner(model, tok, task.sft_dataset(1000, seed=0), task.rl_prompts(16),
                                adaptthink_reward(), cfg, history=hist)
        return evaluate_modes(model, tok, task.test_grid(10), prompt_length=P, max_new_tokens=C), hist

    r1, h1 = once()
    r2, h2 = once()
    assert r1 == r2 and h1["sft_loss"] == h2["sft_loss"]
    assert r1["complex-concise"]["think_rate"] > r1["simple-concise"]["think_rate"]
    assert len(h1["grpo"]) == 2


def _words(prompt: str) -> set[str]:
    out = set()
    for part in prompt.rstrip("?").replace("+", " ").replace("-", " ").replace("*", " ").split():
        letters = "".join(ch for ch in part if ch.isalpha())
        assert len(letters) % 2 == 0
        out |= {letters[k:k + 2] for k in range(0, len(letters), 2)}
    return out


def _structure(prompt: str) -> str:
    body = prompt.rstrip("?")
    first = next(i for i, ch in enumerate(body) if ch.isdigit())
    last = max(i for i, ch in enumerate(body) if ch.isdigit())
    before, after = first > 0, last < len(body) - 1
    return {(True, False): "prefix", (False, True): "suffix", (True, True): "wrap"}[(before, after)]


def test_costumes_are_held_out():
    task = CostumeArithmetic(seed=0)
    held, seen_words = set(task.filler_words["test"]), set(task.filler_words["train"])
    assert not held & seen_words and len(held) == 480 and len(seen_words) == 1120
    train = [r for r in task.sft_dataset(3000, seed=0) if r["phrasing"] == "verbose"]
    train += [r for r in task.rl_prompts(300, seed=0) if r["phrasing"] == "verbose"]
    test = [r for r in task.test_grid(200, seed=0) if r["phrasing"] == "verbose"]
    train_words = set().union(*(_words(r["prompt"]) for r in train))
    test_words = set().union(*(_words(r["prompt"]) for r in test))
    assert train_words <= seen_words and test_words <= held
    # every piece (token) of a held-out word is seen in training: only the combination is new
    assert {ch for w in test_words for ch in w} <= {ch for w in train_words for ch in w}
    assert {_structure(r["prompt"]) for r in train} == {"prefix", "suffix"}
    assert {_structure(r["prompt"]) for r in test} == {"wrap"}
    # the switch restores training costumes at test time; answers are unaffected
    other = CostumeArithmetic(seed=0, heldout_costumes=False).test_grid(200, seed=0)
    assert set().union(*(_words(r["prompt"]) for r in other if r["phrasing"] == "verbose")) <= seen_words
    assert [r["answer"] for r in other] == [r["answer"] for r in task.test_grid(200, seed=0)]


def _tiny_model(tok, P, C, seed=0):
    torch.manual_seed(seed)
    return TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=P + C, n_layer=1, n_head=2, n_embd=16))


def test_balanced_forcing_halves_every_group():
    """balance_first_token: the first token of the first G/2 completions of every group is <think>,
    of the others <nothink>; switched off, an untrained model's first tokens are not balanced."""
    task, tok = CostumeArithmetic(seed=0), make_tokenizer()
    P, C = task.max_prompt_length + 1, task.max_completion_length
    G, B = 4, 3
    seen = []

    def record(prompts, completions, answer=None, **_):
        seen.append((list(prompts), list(completions)))
        return [float(len(c) % 3) for c in completions]

    for balance in (True, False):
        seen.clear()
        cfg = AdaptiveReasonerConfig(grpo_steps=1, grpo_batch_size=B, num_generations=G, prompt_length=P,
                                     max_completion_length=C, balance_first_token=balance, estimator="trl")
        train_adaptive_reasoner(_tiny_model(tok, P, C), tok, None, task.rl_prompts(12), record, cfg)
        prompts, comps = seen[0]
        modes = [FMT.mode(c) for c in comps]
        balanced = all(modes[g * G:(g + 1) * G] == ["think"] * (G // 2) + ["no_think"] * (G // 2)
                       for g in range(B))
        assert balanced == balance
        assert all(len(set(prompts[g * G:(g + 1) * G])) == 1 for g in range(B))


def test_adaptthink_estimator_is_the_default_for_its_reward(monkeypatch):
    import icml26.core.lm.grpo as grpo_mod

    task, tok = CostumeArithmetic(seed=0), make_tokenizer()
    P, C = task.max_prompt_length + 1, task.max_completion_length
    seen = []
    real = grpo_mod.grpo_loss

    def spy(logps, old_logps, advantages, mask, **kw):
        seen.append((old_logps.clone(), advantages.clone(), kw))
        return real(logps, old_logps, advantages, mask, **kw)

    monkeypatch.setattr(grpo_mod, "grpo_loss", spy)
    rows = task.rl_prompts(8)
    ref = {r["prompt"]: 0.25 for r in rows}
    cfg = AdaptiveReasonerConfig(grpo_steps=1, grpo_batch_size=2, num_generations=4, prompt_length=P,
                                 max_completion_length=C)
    train_adaptive_reasoner(_tiny_model(tok, P, C), tok, None, rows, adaptthink_reward(0.05, ref), cfg)
    old, adv, kw = seen[-1]
    assert kw["importance_sampling_level"] == "sequence" and kw["loss_type"] == "grpo"
    torch.testing.assert_close(old[:, 0], torch.full((8,), math.log(0.5)))
    # naive advantages keep the reference term: forced-think rows of an untrained model are wrong,
    # so A = 0 + 0 - 0.25; forced-no-think rows get the bonus on top
    assert adv.min().item() >= -1.25 - 1e-6 and adv.max().item() <= 1.05 + 1e-6
    assert (adv.view(2, 4).sum(1).abs() > 1e-3).all()  # not centred
    seen.clear()
    train_adaptive_reasoner(_tiny_model(tok, P, C), tok, None, rows, thinkless_reward(), cfg)
    assert seen[-1][2]["importance_sampling_level"] == "token"
    with pytest.raises(ValueError, match="balance_first_token"):
        AdaptiveReasonerConfig(estimator="adaptthink", balance_first_token=False)


def test_reference_accuracy_is_deterministic_per_prompt():
    task, tok = CostumeArithmetic(seed=0), make_tokenizer()
    P, C = task.max_prompt_length + 1, task.max_completion_length
    model = _tiny_model(tok, P, C)
    rows = task.rl_prompts(6)
    a = reference_think_accuracy(model, tok, rows, k=4, prompt_length=P, max_new_tokens=C, batch_size=5)
    b = reference_think_accuracy(model, tok, rows, k=4, prompt_length=P, max_new_tokens=C, batch_size=5)
    assert a == b and set(a) == {r["prompt"] for r in rows}
    assert all(v in (0.0, 0.25, 0.5, 0.75, 1.0) for v in a.values())
    with pytest.raises(ValueError, match="k must"):
        reference_think_accuracy(model, tok, rows, k=0)


def test_encoding_fast_path_matches_the_tokenizer():
    from icml26.papers.adaptive_reasoning import encode_prompt, sft_examples

    tok, task = make_tokenizer(), CostumeArithmetic(seed=0)
    rows = task.sft_dataset(300, augment_verbose=True, seed=0)
    ex = sft_examples(tok, rows)
    for r, e in zip(rows, ex, strict=True):
        assert e["prompt_ids"] == [tok.bos_id, *tok.encode(r["prompt"])]
        assert e["completion_ids"] == [*tok.encode(r["completion"]), tok.eos_id]
    with pytest.raises(ValueError, match="not in the alphabet"):
        encode_prompt(tok, "1+2!")


@pytest.mark.parametrize("completion_only_loss", [True, False])
def test_sft_loss_by_length_is_the_full_batch_loss(completion_only_loss):
    """Cutting the padding a length bucket shares changes neither the loss nor its gradient."""
    from icml26.core.lm.sft import build_sft_batch, sft_loss
    from icml26.papers.adaptive_reasoning.trainer import sft_examples, sft_loss_by_length

    tok, task = make_tokenizer(), CostumeArithmetic(seed=1)
    P, C = task.max_prompt_length + 1, task.max_completion_length
    rows = sft_examples(tok, task.sft_dataset(64, augment_verbose=True, seed=0))
    rows[3] = {**rows[3], "weight": 2.5}
    torch.manual_seed(0)
    model = TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=P + C, n_layer=2, n_embd=32))
    batch = build_sft_batch([r["prompt_ids"] for r in rows], [r["completion_ids"] for r in rows],
                            pad_id=tok.pad_id, prompt_length=P, weights=[r.get("weight", 1.0) for r in rows],
                            completion_only_loss=completion_only_loss)
    full = sft_loss(model, batch)
    g_full = torch.autograd.grad(full, list(model.parameters()))
    cut = sft_loss_by_length(model, rows, pad_id=tok.pad_id, prompt_length=P,
                             completion_only_loss=completion_only_loss)
    g_cut = torch.autograd.grad(cut, list(model.parameters()))
    torch.testing.assert_close(cut, full, rtol=1e-5, atol=1e-6)
    for a, b in zip(g_cut, g_full, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_trimmed_sft_follows_core_train_sft():
    """train_sft_by_length takes the same steps as icml26.core.lm.sft.train_sft (float rounding apart),
    and train_adaptive_reasoner uses it by default."""
    import copy

    from icml26.core.lm.sft import SFTConfig, train_sft
    from icml26.papers.adaptive_reasoning.trainer import sft_examples, train_sft_by_length

    tok, task = make_tokenizer(), CostumeArithmetic(seed=0)
    P, C = task.max_prompt_length + 1, task.max_completion_length
    ex = sft_examples(tok, task.sft_dataset(200, augment_verbose=False, seed=0))
    torch.manual_seed(0)
    model = TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=P + C, n_layer=1, n_embd=32))
    cfg = SFTConfig(learning_rate=3e-3, per_device_train_batch_size=16, max_steps=12, warmup_steps=4, seed=3)
    a, b = copy.deepcopy(model), copy.deepcopy(model)
    la = train_sft(a, ex, cfg, pad_id=tok.pad_id, prompt_length=P)
    lb = train_sft_by_length(b, ex, cfg, pad_id=tok.pad_id, prompt_length=P)
    assert la == pytest.approx(lb, rel=1e-4, abs=1e-5)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=1e-3, atol=1e-4)
    rows = task.sft_dataset(200, augment_verbose=False, seed=0)
    for trim in (True, False):
        m = copy.deepcopy(model)
        h: dict = {}
        train_adaptive_reasoner(m, tok, rows, None, None,
                                AdaptiveReasonerConfig(sft_steps=12, sft_batch_size=16, prompt_length=P, seed=3,
                                                       sft_trim_padding=trim), history=h)
        assert h["sft_loss"][0] == pytest.approx(la[0], rel=1e-5)


def test_greedy_evaluation_does_not_depend_on_batching():
    task, tok = CostumeArithmetic(seed=0), make_tokenizer()
    P, C = task.max_prompt_length + 1, task.max_completion_length
    model = _tiny_model(tok, P, C)
    rows = task.test_grid(6, seed=1)
    big = evaluate_modes(model, tok, rows, prompt_length=P, max_new_tokens=C)
    small = evaluate_modes(model, tok, rows[::-1], prompt_length=P, max_new_tokens=C, batch_size=5)
    for cell in (*CELLS, "overall"):
        assert big[cell] == pytest.approx(small[cell], rel=1e-5, abs=1e-6), cell


def test_p_think_cache_gives_the_same_reports_forced_and_sampled():
    """Issue 54: P(<think> | prompt) computed once per batch for a model's evaluations."""
    task = CostumeArithmetic(seed=0)
    tok = make_tokenizer()
    P, C = task.max_prompt_length + 1, task.max_completion_length
    model = _tiny_model(tok, P, C)
    rows = task.test_grid(6, seed=1)
    cache: dict = {}
    for force, temp in ((None, 0.0), ("think", 0.0), ("no_think", 0.0), (None, 1.0)):
        def ev(c, force=force, temp=temp):
            return evaluate_modes(model, tok, rows, prompt_length=P, max_new_tokens=C, force=force,
                                  temperature=temp, generator=torch.Generator().manual_seed(3), p_think_cache=c)
        assert ev(cache) == ev(None), force
    assert len(cache) == 2  # one entry per batch (simple, complex), filled by the first call

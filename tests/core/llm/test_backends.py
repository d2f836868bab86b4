"""Messages, parameters, usage, cache, scripted and tiny-LM backends, structured output."""

from __future__ import annotations

import json
import re
import threading

import pytest
import torch

from icml26.core.llm import (
    ChatModel,
    ChatTemplate,
    Completion,
    ResponseCache,
    SamplingParams,
    ScriptedChat,
    StructuredOutputError,
    TinyLMChat,
    UnsupportedFeatureError,
    UsageTracker,
    cache_key,
    complete_structured,
    parse_json,
    parse_tagged,
    track_usage,
    validate_messages,
)
from icml26.core.lm.generate import generate
from icml26.core.lm.model import LMConfig, TinyCausalLM

HI = [{"role": "user", "content": "hi"}]


# -- messages and parameters -------------------------------------------------------------------
@pytest.mark.parametrize("bad, exc, match", [
    ("hi", TypeError, "list of"),
    ({"role": "user", "content": "hi"}, TypeError, "list of"),
    ([], ValueError, "empty"),
    (["hi"], TypeError, r"messages\[0\] must be a dict"),
    ([{"role": "user"}], ValueError, r"misses \['content'\]"),
    ([{"role": "robot", "content": "x"}], ValueError, "must be one of"),
    ([{"role": "user", "content": 3}], TypeError, "must be a string"),
    ([{"role": "user", "content": "x", "temperature": 1}], ValueError, "unknown keys"),
])
def test_bad_messages(bad, exc, match):
    with pytest.raises(exc, match=match):
        validate_messages(bad)
    with pytest.raises(exc, match=match):
        ScriptedChat(lambda m: "x").complete(bad)


@pytest.mark.parametrize("kw, match", [
    ({"max_tokens": 0}, "max_tokens"), ({"max_tokens": 2.5}, "max_tokens"),
    ({"temperature": -0.1}, "temperature"), ({"temperature": float("nan")}, "temperature"),
    ({"stop": [1]}, "stop"), ({"stop": [""]}, "non-empty"), ({"seed": "1"}, "seed"),
    ({"response_format": "xml"}, "response_format"),
])
def test_bad_params(kw, match):
    with pytest.raises((TypeError, ValueError), match=match):
        SamplingParams(**kw)


def test_params_normalise():
    p = SamplingParams(stop="END", temperature=1)
    assert p.stop == ("END",) and isinstance(p.temperature, float)


# -- cache key ----------------------------------------------------------------------------------
def test_cache_key_is_stable_and_sensitive():
    p = SamplingParams(seed=1)
    k = cache_key("m", HI, p)
    assert k == cache_key("m", [{"content": "hi", "role": "user"}], SamplingParams(seed=1))
    # pinned: a changed key format would silently invalidate every user's cache
    assert k == "cbcf4c21013170ae2e5aa0349e0782cc0554aa285b1cdffc62d7bd200d99c915"
    others = {cache_key("m2", HI, p), cache_key("m", [{"role": "user", "content": "hi!"}], p),
              cache_key("m", HI, SamplingParams(seed=2)), cache_key("m", HI, SamplingParams(seed=1, temperature=0.5)),
              cache_key("m", HI, SamplingParams(seed=1, max_tokens=5)),
              cache_key("m", HI, SamplingParams(seed=1, stop="x"))}
    assert k not in others and len(others) == 6


def test_cache_on_any_backend(tmp_path):
    calls = []
    chat = ScriptedChat(lambda m: calls.append(1) or "reply", cache_dir=tmp_path)
    assert not chat.complete(HI).cached
    out = ScriptedChat(lambda m: calls.append(1) or "other", cache_dir=tmp_path).complete(HI)
    assert out.cached and out.text == "reply" and len(calls) == 1
    entry = json.loads(next(tmp_path.rglob("*.json")).read_text())
    assert entry["messages"] == HI and entry["completion"]["text"] == "reply"
    assert len(ResponseCache(tmp_path)) == 1


# -- usage ----------------------------------------------------------------------------------
def test_usage_nested_trackers_and_threads():
    chat = ScriptedChat(lambda m: "abcdefgh", name="s", max_concurrency=4)  # 8 chars: 2 tokens
    with track_usage() as outer:
        chat.complete(HI)
        with track_usage() as inner:
            chat.complete_many([HI] * 5)
    assert inner.totals().calls == 5 and outer.totals().calls == 6
    assert outer.to_dict()["scripted:s"]["completion_tokens"] == 12
    assert outer.to_dict()["scripted:s"]["prompt_tokens"] == 6  # "hi": 1 token each
    chat.complete(HI)  # outside any tracker: not recorded, no error
    assert outer.totals().calls == 6


def test_usage_tracker_is_thread_safe():
    t = UsageTracker()
    threads = [threading.Thread(target=lambda: [t.record("a:b", calls=1) for _ in range(1000)])
               for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert t.totals().calls == 4000
    with pytest.raises(KeyError, match="unknown usage field"):
        t.record("a:b", dollars=1)


def test_errors_are_counted():
    def boom(m):
        raise RuntimeError("scripted failure")

    with track_usage() as usage, pytest.raises(RuntimeError, match="scripted failure"):
        ScriptedChat(boom, name="b").complete(HI)
    assert usage.totals().errors == 1 and usage.totals().calls == 0


# -- scripted ---------------------------------------------------------------------------------
def test_scripted_rules_and_protocol():
    chat = ScriptedChat(rules=[("weather", "sunny"), (re.compile(r"\d+\s*\+\s*\d+"), "a sum"),
                               (lambda m: m[0]["role"] == "system", lambda m: m[0]["content"])],
                        default="?")
    assert isinstance(chat, ChatModel)
    assert chat.complete([{"role": "user", "content": "the weather?"}]).text == "sunny"
    assert chat.complete([{"role": "user", "content": "2 + 3"}]).text == "a sum"
    assert chat.complete([{"role": "system", "content": "sys"}, {"role": "user", "content": "x"}]).text == "sys"
    assert chat.complete(HI).text == "?"
    assert chat.complete([{"role": "user", "content": "the weather END"}], stop="nn").text == "su"
    assert len(chat.history) == 5
    with pytest.raises(LookupError, match="no rule matches"):
        ScriptedChat(rules=[("x", "y")]).complete(HI)
    with pytest.raises(ValueError, match="exactly one of"):
        ScriptedChat()
    with pytest.raises(UnsupportedFeatureError, match="log-probabilities"):
        chat.complete(HI, logprobs=True)
    with pytest.raises(TypeError, match="not str"):
        ScriptedChat(lambda m: 3).complete(HI)


def test_scripted_with_params_sees_the_seed():
    chat = ScriptedChat(lambda m, p: f"seed={p.seed}", with_params=True)
    assert [c.text for c in chat.complete_many([HI] * 3, seed=[4, 5, 6])] == ["seed=4", "seed=5", "seed=6"]


# -- chat template and tiny LM -----------------------------------------------------------------
CONVO = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4"}, {"role": "user", "content": "and 3+3?"}]


def test_template_round_trip():
    t = ChatTemplate()
    s = t.render(CONVO)
    assert s == "<|system|>You are terse.<|end|><|user|>2+2?<|end|><|assistant|>4<|end|><|user|>and 3+3?<|end|>"
    assert t.parse(s) == CONVO
    assert t.parse(t.render(CONVO, add_generation_prompt=True) + "6<|end|>") == CONVO + [
        {"role": "assistant", "content": "6"}]
    assert t.parse(t.render([{"role": "user", "content": ""}])) == [{"role": "user", "content": ""}]
    custom = ChatTemplate(user="U:", assistant="A:", system="S:", tool="T:", end="|")
    assert custom.parse(custom.render(CONVO)) == CONVO
    with pytest.raises(ValueError, match="contains the template tag"):
        t.render([{"role": "user", "content": "fake <|end|> injection"}])
    with pytest.raises(ValueError, match="expected a role tag"):
        t.parse("hello")
    with pytest.raises(ValueError, match="distinct"):
        ChatTemplate(user="<|x|>", assistant="<|x|>")


def _tiny_chat(**kw):
    template = ChatTemplate()
    tok = template.tokenizer("abcdefghijklmnopqrstuvwxyzY ?+0123456789.")
    torch.manual_seed(0)
    model = TinyCausalLM(LMConfig(vocab_size=tok.vocab_size, block_size=96, n_layer=1, n_head=2, n_embd=16))
    return TinyLMChat(model, tok, template, **kw), model, tok


def test_tinylm_chat_equals_a_direct_generate_call():
    chat, model, tok = _tiny_chat(name="tiny")
    msgs = CONVO[:2]
    ids = [tok.bos_id] + tok.encode("<|system|>You are terse.<|end|><|user|>2+2?<|end|><|assistant|>")
    assert chat.encode_prompt(msgs) == ids
    with track_usage() as usage:
        out = chat.complete(msgs, max_tokens=12, temperature=1.0, seed=7, logprobs=True)
    ref = generate(model, [ids], max_new_tokens=12, pad_id=tok.pad_id,
                   stop_ids=[tok.token_id("<|end|>"), tok.eos_id], temperature=1.0,
                   generator=torch.Generator().manual_seed(7))
    toks = ref.completions()[0]
    stopped = bool(ref.finished[0])
    body = toks[:-1] if stopped else toks
    assert out.text == tok.decode(body)
    assert out.finish_reason == ("stop" if stopped else "length")
    assert [t.logprob for t in out.logprobs] == pytest.approx(ref.logprobs[0, :len(body)].tolist(), abs=1e-6)
    assert out.usage.prompt_tokens == len(ids) and out.usage.completion_tokens == len(toks)
    assert usage.to_dict()["tinylm:tiny"]["prompt_tokens"] == len(ids)
    # same seed, same text; the untrained model's 12 sampled tokens differ across seeds
    assert chat.complete(msgs, max_tokens=12, temperature=1.0, seed=7).text == out.text
    assert len({chat.complete(msgs, max_tokens=12, temperature=1.0, seed=s).text for s in range(4)}) > 1


def test_tinylm_learns_to_answer_through_the_template():
    """A model trained on rendered conversations answers in chat form and stops at <|end|>."""
    chat, model, tok = _tiny_chat()
    pairs = [("2+2?", "4"), ("3+3?", "6"), ("1+1?", "2")]
    seqs = [[tok.bos_id] + tok.encode(ChatTemplate().render(
        [{"role": "user", "content": q}, {"role": "assistant", "content": a}])) for q, a in pairs]
    width = max(map(len, seqs))
    x = torch.tensor([s + [tok.pad_id] * (width - len(s)) for s in seqs])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-2)
    for _ in range(150):
        logits, _ = model(x[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1),
                                                 ignore_index=tok.pad_id)
        opt.zero_grad()
        loss.backward()
        opt.step()
    for q, a in pairs:
        out = chat.complete([{"role": "user", "content": q}], max_tokens=5)
        assert (out.text, out.finish_reason) == (a, "stop")
    out = chat.complete([{"role": "user", "content": "2+2?"}], max_tokens=5, stop="4")
    assert (out.text, out.finish_reason) == ("", "stop")


def test_tinylm_bad_inputs():
    chat, model, tok = _tiny_chat()
    with pytest.raises(ValueError, match="alphabet"):
        chat.complete([{"role": "user", "content": "ÄÖÜ"}])
    with pytest.raises(ValueError, match="no room"):
        chat.complete([{"role": "user", "content": "a" * 200}])
    from icml26.core.lm.tokenizer import CharTokenizer

    with pytest.raises(ValueError, match="lacks the template tags"):
        TinyLMChat(model, CharTokenizer("abc"))


# -- structured output ------------------------------------------------------------------------
def test_parse_json():
    assert parse_json('{"a": [1, 2]}') == {"a": [1, 2]}
    assert parse_json('Here:\n```json\n{"a": "}"}\n```\nDone') == {"a": "}"}
    assert parse_json('The answer is {"p": 0.25, "q": {"r": null}} as computed.') == {"p": 0.25, "q": {"r": None}}
    assert parse_json("list: [1, 2, 3] end") == [1, 2, 3]
    assert parse_json("noise {broken then {\"ok\": true}") == {"ok": True}
    with pytest.raises(StructuredOutputError, match="no JSON object"):
        parse_json("no structure here")
    with pytest.raises(TypeError):
        parse_json(None)


def test_parse_tagged():
    assert parse_tagged("<belief>0.7</belief>", "belief") == "0.7"
    assert parse_tagged("<a>1</a> then <a>\n2\n</a>", "a") == "2"
    with pytest.raises(StructuredOutputError, match="no <answer>"):
        parse_tagged("<answer>unterminated", "answer")
    with pytest.raises(ValueError, match="tag must be"):
        parse_tagged("x", "a b")


def test_complete_structured_repairs_then_succeeds():
    replies = iter(["I'd say high", "<label>hihg</label>", "<label>high</label>"])
    chat = ScriptedChat(lambda m: next(replies))

    def label(text):
        value = parse_tagged(text, "label")
        if value not in {"low", "high"}:
            raise ValueError(f"label must be low or high, got {value!r}")
        return value

    r = complete_structured(chat, HI, label, max_repairs=2, temperature=0.0)
    assert r.value == "high" and r.repairs == 2
    last = chat.history[-1]  # the repair turns show the model its reply and the error
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[3]["content"] == "<label>hihg</label>" and "label must be low or high" in last[4]["content"]


def test_complete_structured_is_bounded():
    chat = ScriptedChat(lambda m: "never json")
    with pytest.raises(StructuredOutputError, match="after 2 attempts") as info:
        complete_structured(chat, HI, parse_json, max_repairs=1)
    assert info.value.attempts == ["never json", "never json"] and len(chat.history) == 2
    with pytest.raises(ValueError, match="max_repairs"):
        complete_structured(chat, HI, parse_json, max_repairs=-1)


def test_completion_round_trips_through_dict():
    from icml26.core.llm import TokenLogprob, Usage

    c = Completion("t", "stop", Usage(3, 4), raw={"x": 1}, logprobs=(TokenLogprob("t", -0.1),), model="m")
    assert Completion.from_dict(json.loads(json.dumps(c.to_dict()))) == c

"""Hugging Face interop shared by the LLM papers' ``hf`` modules (the ``icml26[hf]`` extra).

Three pieces, none of which downloads anything:

* :func:`char_tokenizer` -- a character-level ``PreTrainedTokenizerFast`` built in-process, with a
  small chat template (``<|role|>content<|end|>``); tags such as ``<think>`` can be added as
  single *non-special* tokens, so they survive ``decode(skip_special_tokens=True)`` as they do
  in real reasoning models (TRL decodes completions that way).
* :func:`tiny_causal_lm` -- a Llama / Qwen2 / Mistral causal LM with random weights built from
  a small config (what TRL's own tests do with hub-hosted tiny models; here nothing is fetched).
* :func:`generate_texts` and :class:`HFChat` -- batched sampling from any ``transformers``
  causal LM, and the same model behind :class:`icml26.core.llm.ChatModel` (so the papers' rollout
  code written against ``ChatModel`` runs on a Hugging Face model unchanged).

Importing this module imports ``transformers``; importing :mod:`icml26.core.lm` does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from icml26.core.llm import BaseChatModel, Completion, Usage, record_usage, validate_messages
from icml26.core.llm.errors import UnsupportedFeatureError
from icml26.core.llm.messages import SamplingParams

HF_INSTALL_HINT = 'pip install "icml26[hf]"'
"""What to run when ``transformers`` / ``trl`` / ``peft`` are missing."""

try:
    import transformers
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"the Hugging Face interop needs transformers: {HF_INSTALL_HINT}") from exc

PRINTABLE = "".join(chr(i) for i in range(32, 127))
"""Printable ASCII: the default alphabet of :func:`char_tokenizer`."""

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
"""``<|user|>hi<|end|><|assistant|>``: one tag per role, ``<|end|>`` (the EOS token) closes a turn."""

ROLE_TAGS = ("<|system|>", "<|user|>", "<|assistant|>")


def char_tokenizer(alphabet: str = PRINTABLE, added_tokens: Sequence[str] = (),
                   chat_template: str | None = CHAT_TEMPLATE) -> transformers.PreTrainedTokenizerFast:
    """A character-level fast tokenizer with a chat template, built locally.

    Parameters
    ----------
    alphabet : str
        One token per character (duplicates ignored).
    added_tokens : sequence of str
        Multi-character strings encoded as one *non-special* token each (``"<think>"``, tags of a
        task's grammar): kept by ``decode(skip_special_tokens=True)``.
    chat_template : str or None
        Jinja chat template (default :data:`CHAT_TEMPLATE`).

    Returns
    -------
    PreTrainedTokenizerFast
        Special tokens ``<pad>``, ``<bos>``, ``<unk>``, the role tags and ``<|end|>`` (= EOS, so
        generation stops at the end of the assistant's turn). No BOS is prepended on encoding.
    """
    chars = list(dict.fromkeys(alphabet))
    if not chars:
        raise ValueError("alphabet must not be empty")
    specials = ["<pad>", "<bos>", "<unk>", "<|end|>", *ROLE_TAGS]
    vocab = {t: i for i, t in enumerate(specials + [c for c in chars if c not in specials])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", bos_token="<bos>", eos_token="<|end|>",
        unk_token="<unk>", extra_special_tokens=list(ROLE_TAGS))
    extra = [t for t in dict.fromkeys(added_tokens) if t not in tok.get_vocab()]
    if extra:
        tok.add_tokens(extra)
    if chat_template is not None:
        tok.chat_template = chat_template
    return tok


def tiny_causal_lm(tokenizer: Any, architecture: str = "qwen2", *, hidden_size: int = 64,
                   intermediate_size: int = 128, num_hidden_layers: int = 2, num_attention_heads: int = 4,
                   num_key_value_heads: int = 2, max_position_embeddings: int = 512, seed: int = 0,
                   **config_kwargs: Any) -> transformers.PreTrainedModel:
    """A randomly initialised ``transformers`` causal LM from a small config (no download).

    Parameters
    ----------
    tokenizer : the tokenizer whose vocabulary and pad/BOS/EOS ids the model uses
    architecture : ``"qwen2"``, ``"llama"`` or ``"mistral"`` (any ``AutoConfig`` model type works)
    hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
    max_position_embeddings : the config's sizes (defaults: a 2-layer, 64-wide model, ~0.1 M
        parameters besides the embeddings)
    seed : int
        ``torch.manual_seed`` before the weights are drawn.
    **config_kwargs : passed to the config (e.g. ``tie_word_embeddings=True``)
    """
    kw = dict(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=intermediate_size,
              num_hidden_layers=num_hidden_layers, num_attention_heads=num_attention_heads,
              num_key_value_heads=num_key_value_heads, max_position_embeddings=max_position_embeddings,
              pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
              eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False)
    kw.update(config_kwargs)
    config = transformers.AutoConfig.for_model(architecture, **kw)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def _encode(tokenizer: Any, prompt: str | Sequence[dict]) -> list[int]:
    if isinstance(prompt, str):
        return list(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    out = tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=True,
                                        return_dict=True)
    return list(out["input_ids"])


def generate_texts(model: Any, tokenizer: Any, prompts: Sequence[str | Sequence[dict]], *,
                   max_new_tokens: int, temperature: float = 1.0, seed: int | None = None,
                   batch_size: int = 64) -> tuple[list[str], list[int]]:
    """Sample one completion per prompt from a ``transformers`` causal LM.

    Parameters
    ----------
    prompts : list of str (encoded as is) or of message lists (rendered with the chat template
        and its generation prompt)
    max_new_tokens : int
    temperature : float
        0 is greedy; otherwise plain sampling at this temperature (no top-k / top-p).
    seed : int, optional
        ``torch.manual_seed(seed)`` before sampling (``generate`` draws from the global RNG).
    batch_size : int
        Prompts per ``generate`` call (left-padded).

    Returns
    -------
    texts : list of str
        Completions cut at the first EOS and decoded with ``skip_special_tokens=True`` (as TRL
        decodes completions).
    n_tokens : list of int
        Generated tokens per completion (EOS included when generated).
    """
    rows = _sample(model, tokenizer, prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                   seed=seed, batch_size=batch_size)
    return [r[0] for r in rows], [r[1] for r in rows]


@torch.no_grad()
def _sample(model: Any, tokenizer: Any, prompts: Sequence[str | Sequence[dict]], *, max_new_tokens: int,
            temperature: float, seed: int | None, batch_size: int) -> list[tuple[str, int, bool]]:
    """(text, generated tokens, ended with EOS) per prompt (see :func:`generate_texts`)."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if seed is not None:
        torch.manual_seed(seed)
    was = model.training
    model.eval()
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    eos = tokenizer.eos_token_id
    device = next(model.parameters()).device
    rows: list[tuple[str, int, bool]] = []
    for start in range(0, len(prompts), batch_size):
        ids = [_encode(tokenizer, p) for p in prompts[start:start + batch_size]]
        width = max(len(i) for i in ids)
        input_ids = torch.tensor([[pad] * (width - len(i)) + i for i in ids], device=device)
        attention = torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in ids], device=device)
        sampling = dict(do_sample=True, temperature=float(temperature), top_k=0, top_p=1.0) \
            if temperature > 0 else dict(do_sample=False)
        out = model.generate(input_ids=input_ids, attention_mask=attention, max_new_tokens=max_new_tokens,
                             pad_token_id=pad, eos_token_id=eos, **sampling)
        for row in out[:, width:].tolist():
            ended = eos in row
            n = row.index(eos) + 1 if ended else len(row)
            body = row[:n - 1] if ended else row
            # a finished row is padded after its EOS; an unfinished one has no pad in its body
            rows.append((tokenizer.decode([t for t in body if t != pad], skip_special_tokens=True), n, ended))
    model.train(was)
    return rows


class HFChat(BaseChatModel):
    """A ``transformers`` causal LM and its tokenizer behind :class:`icml26.core.llm.ChatModel`.

    Conversations are rendered with the tokenizer's chat template; :meth:`complete_many` answers
    a whole batch in one left-padded ``generate`` call (one seed for the batch). ``stop``,
    ``response_format`` and ``logprobs`` are not supported.

    Parameters
    ----------
    model, tokenizer : the model (not copied: it keeps training elsewhere) and its tokenizer
    name : str, optional -- defaults to the config's ``_name_or_path`` or its model type
    batch_size : int -- conversations per ``generate`` call
    """

    backend = "hf"

    def __init__(self, model: Any, tokenizer: Any, *, name: str | None = None, batch_size: int = 64) -> None:
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("the tokenizer has no chat template (set tokenizer.chat_template)")
        name = name or getattr(model.config, "_name_or_path", "") or model.config.model_type
        super().__init__(name=name)
        self.model, self.tokenizer, self.batch_size = model, tokenizer, int(batch_size)

    @staticmethod
    def _check(params: SamplingParams) -> None:
        if params.stop or params.response_format is not None or params.logprobs:
            raise UnsupportedFeatureError("HFChat supports max_tokens, temperature and seed only")

    def _generate(self, messages: list[dict], params: SamplingParams) -> Completion:
        return self._batch([messages], params)[0]

    def _batch(self, conversations: list[list[dict]], params: SamplingParams) -> list[Completion]:
        self._check(params)
        rows = _sample(self.model, self.tokenizer, conversations, max_new_tokens=params.max_tokens,
                       temperature=params.temperature, seed=params.seed, batch_size=self.batch_size)
        out = []
        for conv, (text, n, ended) in zip(conversations, rows, strict=True):
            out.append(Completion(text=text, finish_reason="stop" if ended else "length",
                                  usage=Usage(len(_encode(self.tokenizer, conv)), n), model=self.name))
        return out

    def complete_many(self, conversations: Sequence[Sequence[dict]], *,
                      seed: int | Sequence[int | None] | None = None, **params: Any) -> list[Completion]:
        """Answer every conversation in batched ``generate`` calls; a list of per-conversation
        seeds falls back to one call per conversation."""
        if seed is not None and not isinstance(seed, int):
            return super().complete_many(conversations, seed=seed, **params)
        checked = [validate_messages(c) for c in conversations]
        if not checked:
            return []
        sp = SamplingParams(seed=seed, **params)
        done = self._batch(checked, sp)
        record_usage(self.usage_name, calls=len(done),
                     prompt_tokens=sum(c.usage.prompt_tokens for c in done),
                     completion_tokens=sum(c.usage.completion_tokens for c in done))
        return done


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or (conversational data) the content of the last
    message of a message list."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise TypeError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")


def prompt_text(prompt: Any) -> str:
    """The text of a TRL prompt: a string, or the content of the last user message."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if users:
            return str(users[-1].get("content", ""))
    raise TypeError(f"a prompt must be a string or a list of messages, got {type(prompt).__name__}")


def as_trl_reward(func: Any, name: str | None = None) -> Any:
    """A reward ``func(prompts, completions, **columns)`` over strings as a TRL reward function.

    TRL calls ``reward(prompts=..., completions=..., completion_ids=..., **columns)`` with strings
    (standard data) or message lists (conversational data); the wrapper turns both into strings
    (:func:`prompt_text`, :func:`completion_text`) and passes every other keyword through. The
    name TRL logs (``rewards/<name>/mean``) is ``name`` or ``func``'s ``__name__``.
    """
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}")

    def reward(prompts: Sequence[Any] | None = None, completions: Sequence[Any] | None = None,
               **kwargs: Any) -> list[float]:
        if completions is None:
            raise ValueError("a TRL reward needs completions")
        texts = [completion_text(c) for c in completions]
        ptexts = None if prompts is None else [prompt_text(p) for p in prompts]
        return [float(r) for r in func(prompts=ptexts, completions=texts, **kwargs)]

    reward.__name__ = name or getattr(func, "__name__", type(func).__name__)
    reward.__qualname__ = reward.__name__
    reward.wrapped = func
    return reward


__all__ = ["CHAT_TEMPLATE", "HF_INSTALL_HINT", "PRINTABLE", "ROLE_TAGS", "HFChat", "as_trl_reward",
           "char_tokenizer", "completion_text", "generate_texts", "prompt_text", "tiny_causal_lm"]

"""A chat template for the tiny causal LMs of :mod:`icml26.core.lm`, and a chat model over them.

:class:`ChatTemplate` renders a conversation as one string -- ``<|user|>hi<|end|><|assistant|>``
-- and parses it back (``parse(render(m)) == m``). Its tags are *special tokens* of the
:class:`~icml26.core.lm.tokenizer.CharTokenizer` (one id each), so a model trained on rendered
conversations learns to end its turn with the ``<|end|>`` id, where generation stops.

:class:`TinyLMChat` puts a :class:`~icml26.core.lm.model.TinyCausalLM` behind the
:class:`~icml26.core.llm.base.ChatModel` interface, so a paper's offline arm and an LLM arm run
through the same code. torch is imported only when a completion is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .base import BaseChatModel, Completion, TokenLogprob, Usage
from .messages import ROLES, Message, SamplingParams, truncate_at_stop, validate_messages


@dataclass(frozen=True)
class ChatTemplate:
    """Role tags and an end-of-turn tag; ``render`` and ``parse`` are inverse.

    Rendered form: for each message ``<role tag><content><end tag>``; with
    ``add_generation_prompt`` the assistant tag is appended, so the model writes the reply.

    Examples
    --------
    >>> t = ChatTemplate()
    >>> s = t.render([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    >>> s
    '<|user|>hi<|end|><|assistant|>'
    >>> t.parse(s + "hello<|end|>")
    [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': 'hello'}]
    """

    system: str = "<|system|>"
    user: str = "<|user|>"
    assistant: str = "<|assistant|>"
    tool: str = "<|tool|>"
    end: str = "<|end|>"

    def __post_init__(self) -> None:
        tags = self.special_tokens
        if any(not isinstance(t, str) or not t for t in tags):
            raise ValueError("template tags must be non-empty strings")
        if len(set(tags)) != len(tags):
            raise ValueError(f"template tags must be distinct, got {tags}")

    @property
    def special_tokens(self) -> tuple[str, ...]:
        """The tags, to add to a tokenizer's specials: ``CharTokenizer(alphabet, specials=...)``."""
        return (self.system, self.user, self.assistant, self.tool, self.end)

    def tag(self, role: str) -> str:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        return getattr(self, role)

    def render(self, messages: Sequence[Message], *, add_generation_prompt: bool = False) -> str:
        """The conversation as one string.

        Raises
        ------
        ValueError
            A message's content contains a tag (the rendering would not parse back).
        """
        msgs = validate_messages(messages)
        parts = []
        for i, m in enumerate(msgs):
            for t in self.special_tokens:
                if t in m["content"]:
                    raise ValueError(f"messages[{i}] contains the template tag {t!r}; the "
                                     "rendered conversation would be ambiguous")
            parts.append(f"{self.tag(m['role'])}{m['content']}{self.end}")
        if add_generation_prompt:
            parts.append(self.assistant)
        return "".join(parts)

    def parse(self, text: str) -> list[Message]:
        """Inverse of :meth:`render` (a trailing unterminated turn is kept as it is).

        Raises
        ------
        ValueError
            ``text`` does not start with a role tag, or a turn has no role tag.
        """
        role_of = {self.tag(r): r for r in ROLES}
        out: list[Message] = []
        i = 0
        while i < len(text):
            role = next((r for tag, r in role_of.items() if text.startswith(tag, i)), None)
            if role is None:
                raise ValueError(f"expected a role tag at position {i} of {text[i:i + 40]!r}")
            i += len(self.tag(role))
            j = text.find(self.end, i)
            if j < 0:
                out.append({"role": role, "content": text[i:]})
                break
            out.append({"role": role, "content": text[i:j]})
            i = j + len(self.end)
        return out

    def tokenizer(self, alphabet: Iterable[str], specials: Sequence[str] = ("<pad>", "<bos>", "<eos>")):
        """A :class:`~icml26.core.lm.tokenizer.CharTokenizer` knowing the tags as specials."""
        from ..lm.tokenizer import CharTokenizer

        return CharTokenizer(alphabet, specials=tuple(specials) + self.special_tokens)


class TinyLMChat(BaseChatModel):
    """A :class:`~icml26.core.lm.model.TinyCausalLM` as a chat model.

    Parameters
    ----------
    model : TinyCausalLM (or any module with the same ``forward`` and ``config.block_size``)
    tokenizer : CharTokenizer
        Must know the template's tags as special tokens (see :meth:`ChatTemplate.tokenizer`).
    template : ChatTemplate
    name : str
        Name in usage accounting (``"tinylm:<name>"``).
    prompt_length : int or None
        Left-pad prompts to this length (the convention of :mod:`icml26.core.lm.generate`:
        use the value the model was trained with). None: no padding.
    add_bos : bool
        Start the prompt with ``<bos>``.

    Notes
    -----
    Generation stops at the ``end`` tag or ``<eos>`` (``finish_reason="stop"``) or after
    ``max_tokens`` tokens, or the context's end (``"length"``). ``seed`` seeds a
    ``torch.Generator`` (None: torch's global RNG). Returned log-probabilities are those of
    the model distribution (temperature 1), as :func:`~icml26.core.lm.generate.generate` returns.
    Tokens are the tokenizer's (characters and tags). The disk cache (``cache_dir``) keys on
    ``name``, not on the weights: give each trained model its own name before caching it.
    """

    backend = "tinylm"
    supports_logprobs = True

    def __init__(self, model: Any, tokenizer: Any, template: ChatTemplate | None = None, *,
                 name: str = "tinylm", prompt_length: int | None = None, add_bos: bool = True,
                 cache_dir: str | None = None) -> None:
        super().__init__(name=name, cache_dir=cache_dir, max_concurrency=1)
        self.model, self.tokenizer = model, tokenizer
        self.template = template or ChatTemplate()
        missing = [t for t in self.template.special_tokens if t not in tokenizer.stoi]
        if missing:
            raise ValueError(f"the tokenizer lacks the template tags {missing} as special tokens; "
                             "build it with ChatTemplate.tokenizer(alphabet)")
        self.prompt_length, self.add_bos = prompt_length, add_bos

    def encode_prompt(self, messages: Sequence[Message]) -> list[int]:
        """Token ids of the rendered conversation plus the assistant tag."""
        text = self.template.render(messages, add_generation_prompt=True)
        try:
            ids = self.tokenizer.encode(text)
        except ValueError as exc:
            raise ValueError(f"the conversation does not fit the tiny LM's alphabet: {exc}") from None
        return ([self.tokenizer.bos_id] if self.add_bos else []) + ids

    def _generate(self, messages: list[Message], params: SamplingParams) -> Completion:
        import torch

        from ..lm.generate import generate

        ids = self.encode_prompt(messages)
        width = max(len(ids), self.prompt_length or 0)
        room = int(self.model.config.block_size) - width
        if room < 1:
            raise ValueError(f"the prompt of {len(ids)} tokens leaves no room in the model's "
                             f"context of {self.model.config.block_size} tokens")
        steps = min(params.max_tokens, room)
        gen = None
        if params.seed is not None:
            device = next(self.model.parameters()).device
            gen = torch.Generator(device=device).manual_seed(params.seed)
        stops = [self.tokenizer.token_id(self.template.end), self.tokenizer.eos_id]
        out = generate(self.model, [ids], max_new_tokens=steps, pad_id=self.tokenizer.pad_id,
                       stop_ids=stops, temperature=params.temperature, generator=gen,
                       prompt_length=self.prompt_length)
        toks = out.completions()[0]
        lps = out.logprobs[0, : len(toks)].tolist()
        finished = bool(out.finished[0])
        if finished:  # the stop token is not part of the reply
            toks, lps = toks[:-1], lps[:-1]
        pieces = [self.tokenizer.itos[t] for t in toks]
        text = "".join(pieces)
        text, stopped = truncate_at_stop(text, params.stop)
        if stopped:  # keep the tokens whose text survives the cut
            n, acc = 0, 0
            while n < len(pieces) and acc + len(pieces[n]) <= len(text):
                acc += len(pieces[n])
                n += 1
            pieces, lps = pieces[:n], lps[:n]
        reason = "stop" if finished or stopped else "length"
        logprobs = (tuple(TokenLogprob(p, float(lp)) for p, lp in zip(pieces, lps, strict=True))
                    if params.logprobs else None)
        return Completion(text=text, finish_reason=reason, model=self.name, logprobs=logprobs,
                          usage=Usage(prompt_tokens=len(ids), completion_tokens=len(out.completions()[0])))

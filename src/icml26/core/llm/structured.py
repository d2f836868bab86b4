"""Structured answers from free text: JSON, a tagged answer, and a bounded repair loop.

Papers ask a model for a structure (a level's code, a severity label, a posterior belief).
:func:`parse_json` and :func:`parse_tagged` extract it from the reply or raise
:class:`~icml26.core.llm.errors.StructuredOutputError` with the reason; :func:`complete_structured`
asks again, showing the model its reply and the error, at most ``max_repairs`` times.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .base import ChatModel, Completion
from .errors import StructuredOutputError
from .messages import Message, validate_messages

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def _excerpt(text: str, n: int = 200) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


def parse_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, else a fenced block, else the first
    ``{...}``/``[...]`` that decodes.

    Raises
    ------
    StructuredOutputError
        No JSON object or array in ``text``.

    Examples
    --------
    >>> parse_json('Sure! Here it is: {"belief": 0.25, "label": "high"} Hope this helps.')
    {'belief': 0.25, 'label': 'high'}
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_json expects a string, got {type(text).__name__}")
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block.strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(text, i)
            except ValueError:
                continue
            return value
    raise StructuredOutputError(f"no JSON object or array found in the reply {_excerpt(text)}")


def parse_tagged(text: str, tag: str) -> str:
    """The content of the *last* ``<tag>...</tag>`` in ``text``, stripped.

    The last one, because models that think aloud often mention the tag before answering.

    Raises
    ------
    StructuredOutputError
        No complete ``<tag>...</tag>`` pair.

    Examples
    --------
    >>> parse_tagged("I think <answer>3</answer>... no: <answer> 4 </answer>", "answer")
    '4'
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_tagged expects a string, got {type(text).__name__}")
    if not isinstance(tag, str) or not re.fullmatch(r"[A-Za-z_][\w\-.]*", tag):
        raise ValueError(f"tag must be a name such as 'answer', got {tag!r}")
    found = re.findall(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", text, flags=re.DOTALL)
    if not found:
        raise StructuredOutputError(f"no <{tag}>...</{tag}> in the reply {_excerpt(text)}")
    return found[-1].strip()


@dataclass(frozen=True)
class StructuredResult:
    """What :func:`complete_structured` returns: the parsed value and every completion tried."""

    value: Any
    completions: tuple[Completion, ...]

    @property
    def repairs(self) -> int:
        return len(self.completions) - 1


REPAIR_PROMPT = ("Your previous reply could not be used: {error}\n"
                 "Reply again, in the required format only.")


def complete_structured(model: ChatModel, messages: Sequence[Message],
                        parser: Callable[[str], Any], *, max_repairs: int = 2,
                        repair_prompt: str = REPAIR_PROMPT, **params: Any) -> StructuredResult:
    """Ask ``model`` and parse the reply; on a parse error, ask again at most ``max_repairs`` times.

    A repair turn appends the failed reply (as the assistant) and ``repair_prompt`` with the
    error (as the user) to the conversation. ``parser`` raises ``ValueError`` (e.g.
    :class:`StructuredOutputError`) on a reply it cannot use; it may also validate.

    Parameters
    ----------
    model : ChatModel
    messages : the conversation
    parser : callable str -> value
    max_repairs : int >= 0
    repair_prompt : str with an ``{error}`` field
    **params : passed to ``model.complete`` (max_tokens, temperature, seed, ...)

    Raises
    ------
    StructuredOutputError
        Every attempt failed; ``.attempts`` holds the replies.

    Examples
    --------
    >>> from icml26.core.llm import ScriptedChat
    >>> replies = iter(["maybe 0.3?", '{"p": 0.3}'])
    >>> chat = ScriptedChat(lambda m: next(replies))
    >>> r = complete_structured(chat, [{"role": "user", "content": "p?"}], parse_json)
    >>> r.value, r.repairs
    ({'p': 0.3}, 1)
    """
    if isinstance(max_repairs, bool) or not isinstance(max_repairs, int) or max_repairs < 0:
        raise ValueError(f"max_repairs must be an integer >= 0, got {max_repairs!r}")
    if "{error}" not in repair_prompt:
        raise ValueError("repair_prompt must contain an {error} field")
    convo = validate_messages(messages)
    done: list[Completion] = []
    errors: list[str] = []
    for _ in range(max_repairs + 1):
        comp = model.complete(convo, **params)
        done.append(comp)
        try:
            return StructuredResult(parser(comp.text), tuple(done))
        except ValueError as exc:
            errors.append(str(exc))
            convo = convo + [{"role": "assistant", "content": comp.text},
                             {"role": "user", "content": repair_prompt.format(error=exc)}]
    raise StructuredOutputError(
        f"{getattr(model, 'name', model)!s}: no usable reply after {len(done)} attempts "
        f"({max_repairs} repairs); last error: {errors[-1]}; last reply: {_excerpt(done[-1].text)}",
        attempts=[c.text for c in done])

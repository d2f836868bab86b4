"""Which chat model a paper uses: its offline default unless the user names a server.

A paper calls :func:`resolve_chat_model` with its offline default (a scripted or tiny-LM model);
the user opts in to a real model with the CLI (``icml26 run SLUG --llm URL [--llm-model NAME]
[--llm-cache DIR]``) or the environment variables below, which the CLI sets so that they also
reach worker processes (``--jobs N``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping
from typing import Any

from .base import ChatModel

ENV_BASE_URL = "ICML26_LLM_BASE_URL"
ENV_MODEL = "ICML26_LLM_MODEL"
ENV_CACHE = "ICML26_LLM_CACHE"


def apply_llm_settings(base_url: str | None = None, model: str | None = None,
                       cache_dir: str | None = None,
                       environ: MutableMapping[str, str] | None = None) -> None:
    """Set the environment variables read by :func:`resolve_chat_model` (None leaves one as it is)."""
    environ = os.environ if environ is None else environ
    for key, value in ((ENV_BASE_URL, base_url), (ENV_MODEL, model), (ENV_CACHE, cache_dir)):
        if value is not None:
            environ[key] = str(value)


def llm_settings(environ: MutableMapping[str, str] | None = None) -> dict[str, str | None]:
    """The opted-in server, model and cache folder (None when unset)."""
    environ = os.environ if environ is None else environ
    return {"base_url": environ.get(ENV_BASE_URL) or None, "model": environ.get(ENV_MODEL) or None,
            "cache_dir": environ.get(ENV_CACHE) or None}


def resolve_chat_model(default: ChatModel | Callable[[], ChatModel], *,
                       base_url: str | None = None, model: str | None = None,
                       cache_dir: str | None = None, **client_options: Any) -> ChatModel:
    """The chat model a paper should use.

    Parameters
    ----------
    default : ChatModel or a zero-argument factory of one
        The offline model, returned when no server is named (a factory is called only then).
    base_url, model, cache_dir : str or None
        Override ``$ICML26_LLM_BASE_URL``, ``$ICML26_LLM_MODEL`` and ``$ICML26_LLM_CACHE``.
    **client_options
        Passed to :class:`~icml26.core.llm.openai_compatible.OpenAICompatible` (timeout, ...).

    Returns
    -------
    ChatModel
        ``default`` when neither ``base_url`` nor ``$ICML26_LLM_BASE_URL`` is set (no network
        is touched); otherwise an ``OpenAICompatible`` client (which connects on first use).
    """
    env = llm_settings()
    url = base_url or env["base_url"]
    if not url:
        return default() if callable(default) and not isinstance(default, ChatModel) else default
    from .openai_compatible import OpenAICompatible

    return OpenAICompatible(url, model or env["model"], cache_dir=cache_dir or env["cache_dir"],
                            **client_options)

"""One pluggable chat-model layer for the papers that put a foundation model in the loop.

Backends share one interface, :class:`ChatModel` (``complete``, ``complete_many``):

- :class:`ScriptedChat` -- rules or a function; deterministic offline arms and tests;
- :class:`TinyLMChat` -- a tiny causal LM of :mod:`icml26.core.lm` behind a :class:`ChatTemplate`;
- :class:`OpenAICompatible` -- any ``/v1/chat/completions`` server (llama.cpp, vLLM, Ollama,
  hosted APIs); **opt-in only** (:func:`resolve_chat_model` returns the offline default unless
  the user names a server with ``--llm URL`` or ``$ICML26_LLM_BASE_URL``).

Shared machinery: validated messages and parameters, a disk cache (``cache_dir=``), usage
accounting (:func:`track_usage`; the harness writes it to a result's ``llm_usage``), and
structured-output helpers (:func:`parse_json`, :func:`parse_tagged`, :func:`complete_structured`).
Importing this package imports neither torch nor httpx.
"""

from .base import BaseChatModel, ChatModel, Completion, TokenLogprob, Usage, approx_tokens
from .cache import ResponseCache, cache_key
from .errors import (
    LLMConnectionError,
    LLMError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    StructuredOutputError,
    UnsupportedFeatureError,
)
from .messages import ROLES, SamplingParams, assistant, system, user, validate_messages
from .openai_compatible import OpenAICompatible
from .resolve import (
    ENV_BASE_URL,
    ENV_CACHE,
    ENV_MODEL,
    apply_llm_settings,
    llm_settings,
    resolve_chat_model,
)
from .scripted import ScriptedChat
from .structured import StructuredResult, complete_structured, parse_json, parse_tagged
from .tinylm import ChatTemplate, TinyLMChat
from .usage import UsageStats, UsageTracker, record_usage, track_usage

__all__ = [
    "ENV_BASE_URL", "ENV_CACHE", "ENV_MODEL", "ROLES", "BaseChatModel", "ChatModel", "ChatTemplate",
    "Completion", "LLMConnectionError", "LLMError", "LLMHTTPError", "LLMResponseError",
    "LLMTimeoutError", "OpenAICompatible", "ResponseCache", "SamplingParams", "ScriptedChat",
    "StructuredOutputError", "StructuredResult", "TinyLMChat", "TokenLogprob",
    "UnsupportedFeatureError", "Usage", "UsageStats", "UsageTracker", "apply_llm_settings",
    "approx_tokens", "assistant", "cache_key", "complete_structured", "llm_settings",
    "parse_json", "parse_tagged", "record_usage", "resolve_chat_model", "system", "track_usage",
    "user", "validate_messages",
]

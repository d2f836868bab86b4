"""The exceptions of :mod:`icml26.core.llm` (one base class, so a paper can catch them all)."""

from __future__ import annotations


class LLMError(RuntimeError):
    """Base class of every error raised by a chat model of :mod:`icml26.core.llm`."""


class LLMConnectionError(LLMError):
    """The server could not be reached (refused, unknown host, reset) after the allowed retries."""


class LLMTimeoutError(LLMError):
    """The server did not answer within ``timeout`` seconds, after the allowed retries."""


class LLMHTTPError(LLMError):
    """The server answered with an HTTP error status (after retries for 429/5xx).

    Attributes
    ----------
    status : int -- the HTTP status code
    body : str -- the start of the response body (the server's own error message)
    """

    def __init__(self, message: str, status: int, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class LLMResponseError(LLMError):
    """The server answered 200 but the body is not a chat-completions response."""


class UnsupportedFeatureError(LLMError):
    """The backend cannot do what was asked (e.g. log-probabilities from a scripted model)."""


class StructuredOutputError(ValueError):
    """Free text could not be parsed into the requested structure (JSON, a tagged answer, ...).

    Attributes
    ----------
    attempts : list of str -- the texts tried, oldest first (set by :func:`complete_structured`)
    """

    def __init__(self, message: str, attempts: list[str] | None = None) -> None:
        super().__init__(message)
        self.attempts = list(attempts or [])

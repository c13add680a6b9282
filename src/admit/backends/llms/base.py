"""The LLM Protocol: one chat completion, optionally constrained to a JSON schema."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from admit.types import Message

__all__ = ["LLM", "CompleteOptions", "LLMReply", "StructuredMode"]

StructuredMode = Literal["json_schema", "json_object_schema", "json_object", "prompt"]
"""How the output was constrained: the OpenAI ``json_schema`` response format, llama.cpp's
``json_object`` + ``schema`` grammar, plain JSON mode, or the prompt alone."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMReply:
    """One completion."""

    text: str
    """The assistant message text."""
    prompt_tokens: int = 0
    """Prompt tokens, as the server reported them."""
    completion_tokens: int = 0
    """Completion tokens, as the server reported them."""
    latency_s: float = 0.0
    """Wall time of the call, retries included."""
    model: str = ""
    """The model that answered."""
    finish_reason: str | None = None
    """``stop``, ``length`` (truncated), ..."""
    structured: StructuredMode = "prompt"
    """How the output was constrained."""
    attempts: int = 1
    """Calls made, retries included."""


class CompleteOptions(TypedDict, total=False):
    """The keyword options of :meth:`LLM.complete`, for backends that pass them on (``**opts``)."""

    json_schema: Mapping[str, Any] | None
    max_tokens: int
    temperature: float
    timeout: float | None


@runtime_checkable
class LLM(Protocol):
    """A chat model. Implementations wrap vendor errors into :class:`~admit.errors.BackendError` /
    :class:`~admit.errors.BackendTimeout`."""

    name: str
    """Backend name (``openai``, ``llama``, ``fake``)."""
    model: str
    """Model name, used for pricing and cache keys."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        timeout: float | None = None,
    ) -> LLMReply:
        """Return the completion of ``messages``; with ``json_schema``, constrain the output to it if possible."""
        ...

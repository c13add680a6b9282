"""What an LLM backend declares about itself: :class:`LLMSpec`, one per scheme, beside the backend.

An LLM is named by a spec string ``SCHEME:TARGET`` (``openai:gpt-4o-mini@http://host:port/v1``,
``llama:/models/m.gguf``) or ``SCHEME`` alone (``fake``); :mod:`admit.backends.llms.catalogue` finds the scheme's
spec (the built-ins and third-party ones alike), and the spec makes the LLM from the target.

Example:
    >>> from admit.backends.llms.fake import FakeLLM
    >>> spec = LLMSpec(name="echo", build=lambda target, **kw: FakeLLM(**kw), usage="echo")
    >>> spec.make("", {}).name
    'fake'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from admit.backends._spec import BackendSpec
from admit.errors import ConfigError

if TYPE_CHECKING:
    from admit.backends.llms.base import LLM

__all__ = ["LLMSpec"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMSpec(BackendSpec):
    """One LLM backend's facts, declared beside it (its module's ``SPEC``); its name is the scheme (``openai``
    in ``openai:MODEL``).

    Its ``build`` makes the LLM: ``build(target, **kwargs)``; ``target`` is the text after ``SCHEME:`` (empty
    when none), ``kwargs`` the backend's constructor options (``api_key_env=``, ``timeout=`` ...).
    """

    kind: ClassVar[str] = "LLM backend"

    usage: str = ""
    """How a spec string of this scheme is written (``openai:MODEL[@http://host:port/v1]``), for messages."""
    needs_target: bool = False
    """Whether ``SCHEME`` alone is refused (``openai`` needs a model)."""

    def make(self, target: str, kwargs: Mapping[str, Any]) -> LLM:
        """The LLM for ``target`` (the spec string after ``SCHEME:``)."""
        if self.needs_target and not target:
            raise ConfigError(f"LLM spec {self.name!r} names no target; write {self.usage or self.name + ':...'}.")
        made: LLM = self.build(target, **kwargs)
        return made

"""The LLM catalogue: every LLM backend by scheme, the built-ins and third-party ones through one door.

Built-in backends are listed in :data:`BUILTIN_LLMS` as ``module:ATTRIBUTE`` references to their
:class:`~admit.backends.llms.spec.LLMSpec`; a third-party package adds one with an entry point in the
``admit.llms`` group (``vertex = "my_package.vertex:SPEC"``, then ``--llm vertex:gemini-2.0``). Listing the
schemes imports nothing; a lookup imports the backend's module once.
"""

from __future__ import annotations

from admit._plugins import SpecCatalogue
from admit.backends.llms.spec import LLMSpec

__all__ = ["BUILTIN_LLMS", "ENTRY_POINT_GROUP", "find_llm", "llm_names", "llm_usage", "reload_llms"]

ENTRY_POINT_GROUP = "admit.llms"
"""The entry-point group third-party LLM backends register in."""

BUILTIN_LLMS: dict[str, str] = {
    "openai": "admit.backends.llms.openai_compat:SPEC",
    "llama": "admit.backends.llms.llama_local:SPEC",
    "fake": "admit.backends.llms.fake:SPEC",
}
"""The shipped LLM backends, in the order messages list them."""

_CATALOGUE: SpecCatalogue[LLMSpec] = SpecCatalogue("LLM backend", ENTRY_POINT_GROUP, BUILTIN_LLMS, LLMSpec)


def llm_names() -> tuple[str, ...]:
    """Every scheme: the built-ins first, then the plug-ins (imports nothing)."""
    return _CATALOGUE.names()


def find_llm(scheme: str) -> LLMSpec | None:
    """The spec of ``scheme``, or ``None`` when no backend has it."""
    return _CATALOGUE.find(scheme)


def llm_usage() -> str:
    """How each backend's spec string is written, for messages (``openai:MODEL, llama:/path/model.gguf, fake``)."""
    return ", ".join(s.usage or s.name for s in _CATALOGUE.specs())


def reload_llms() -> None:
    """Forget what was loaded; the next lookup reads the entry points again."""
    _CATALOGUE.reset()

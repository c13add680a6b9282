"""The LLM catalogue: every LLM backend by scheme, the built-ins and third-party ones through one door.

Built-in backends are listed in :data:`BUILTIN_LLMS` as ``module:ATTRIBUTE`` references to their
:class:`~admit.backends.llms.spec.LLMSpec`; a third-party package adds one with an entry point in the
``admit.llms`` group (``vertex = "my_package.vertex:SPEC"``, then ``--llm vertex:gemini-2.0``). :data:`LLMS`
finds them: listing the schemes imports nothing, a lookup imports the backend's module once.
"""

from __future__ import annotations

from admit._plugins import SpecCatalogue
from admit.backends.llms.spec import LLMSpec

__all__ = ["BUILTIN_LLMS", "LLMS", "llm_usage"]

BUILTIN_LLMS: dict[str, str] = {
    "openai": "admit.backends.llms.openai_compat:SPEC",
    "llama": "admit.backends.llms.llama_local:SPEC",
    "fake": "admit.backends.llms.fake:SPEC",
}
"""The shipped LLM backends, in the order messages list them."""

LLMS: SpecCatalogue[LLMSpec] = SpecCatalogue("LLM backend", "admit.llms", BUILTIN_LLMS, LLMSpec)
"""The LLM backends (entry-point group ``admit.llms``)."""


def llm_usage() -> str:
    """How each backend's spec string is written, for messages (``openai:MODEL, llama:/path/model.gguf, fake``)."""
    return ", ".join(s.usage or s.name for s in LLMS.specs())

"""What every backend spec declares (:class:`BackendSpec`): its name, the function that makes it, a help line.

The specs of each kind (:class:`~admit.backends.rerankers.spec.RerankerSpec`,
:class:`~admit.backends.embedders.spec.EmbedderSpec`, :class:`~admit.backends.llms.spec.LLMSpec`) add their own
facts; their catalogues find them by name (:class:`admit._plugins.SpecCatalogue`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from admit.errors import ConfigError

__all__ = ["BackendSpec"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendSpec:
    """A backend's name, builder and help line, checked when the spec is made."""

    kind: ClassVar[str] = "backend"

    name: str
    """Its name (``--reranker NAME``, ``embedder="NAME"``, the scheme of ``--llm NAME:...``)."""
    build: Callable[..., Any]
    """Makes the backend (each kind says with what)."""
    summary: str = ""
    """One line for help texts."""

    def __post_init__(self) -> None:
        """Check the name and the builder."""
        if not isinstance(self.name, str) or not self.name or any(c.isspace() or c == ":" for c in self.name):
            raise ConfigError(f"a {self.kind} name must be a non-empty word without ':', got {self.name!r}.")
        if not callable(self.build):
            raise ConfigError(f"{self.kind} {self.name!r}: build must be callable, got {type(self.build).__name__}.")

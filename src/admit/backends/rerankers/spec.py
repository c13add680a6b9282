"""What a reranker declares about itself: :class:`RerankerSpec`, one per name, beside the reranker.

:mod:`admit.backends.rerankers.catalogue` collects the specs (the built-ins and third-party ones alike). Every
face that needs a fact about a reranker (its help line, whether it reads an embedder, what the evaluation cache
key must change with, what to use when it cannot run here) reads the spec, never a table of names.

Example:
    >>> from admit.backends.rerankers.lexical import BM25Reranker
    >>> spec = RerankerSpec(name="my_bm25", build=BM25Reranker, summary="BM25, mine")
    >>> spec.make().name
    'bm25'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from admit._plugins import defining_module
from admit.backends._spec import BackendSpec

if TYPE_CHECKING:
    from admit.backends.embedders.base import Embedder
    from admit.backends.rerankers.base import Reranker

__all__ = ["RerankerSpec"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RerankerSpec(BackendSpec):
    """One reranker's facts, declared beside it (its module's ``SPEC``, or a named one such as ``BM25``).

    Its ``build`` makes the reranker: ``build()``, or ``build(embedder=...)`` when :attr:`needs_embedder`.
    """

    kind: ClassVar[str] = "reranker"

    needs_embedder: bool = False
    """Whether it scores with an embedder (``dense``, ``hybrid``): it is handed the one the caller shares, and
    the embedder's name is part of its evaluation identity."""
    source_modules: tuple[str, ...] = ()
    """Modules whose source decides its scores (the evaluation cache key changes when one does). Empty: the
    module that defines ``build``."""
    model_files: Callable[[], Sequence[Path]] | None = None
    """The model files that decide its scores (their bytes are part of the evaluation cache key)."""
    version: str = ""
    """A version to bump when its scores change for a reason its source does not show (new weights elsewhere)."""
    missing: Callable[[], str | None] | None = None
    """What this install lacks to run it (``None`` from the function: nothing), checked before it is built."""
    fallback: str | None = None
    """The reranker the evaluation harness and ``admit prune`` use instead when this one cannot run here."""

    def __post_init__(self) -> None:
        """Check the name and the builder; default the source modules."""
        super(RerankerSpec, self).__post_init__()
        if not self.source_modules:
            object.__setattr__(self, "source_modules", (defining_module("reranker", self.name, self.build),))

    def make(self, embedder: Embedder | str = "minilm") -> Reranker:
        """The reranker (``embedder`` is handed over only when it :attr:`needs_embedder`)."""
        made: Reranker = self.build(embedder=embedder) if self.needs_embedder else self.build()
        return made

    def unavailable(self) -> str | None:
        """Why it cannot run here, or ``None`` when it can."""
        return self.missing() if self.missing is not None else None

    def identity(self, embedder: str, digest: Callable[[Sequence[str], Sequence[Path]], str]) -> str:
        """What decides its scores, for an evaluation cache key: its name, the embedder (when it reads one), its
        version, and ``digest`` of its source modules and model files."""
        files = tuple(self.model_files()) if self.model_files is not None else ()
        parts = [self.name, *([embedder] if self.needs_embedder else []), *([self.version] if self.version else [])]
        return ":".join([*parts, digest(self.source_modules, files)])

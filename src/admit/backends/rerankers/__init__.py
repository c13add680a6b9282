"""Rerankers, by name from the catalogue (:mod:`admit.backends.rerankers.catalogue`): ``retriever`` (the
candidates' own scores, else BM25), ``bm25``, ``dense`` (MiniLM), ``hybrid``, ``cross`` (the split cross-encoder
over MiniLM that reads question and chunk together), and any a third-party package registers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admit.backends.rerankers.base import Reranker
from admit.backends.rerankers.catalogue import DEFAULT_RERANKER, RERANKERS, SCORING_RERANKER
from admit.backends.rerankers.spec import RerankerSpec

if TYPE_CHECKING:
    from admit.backends.embedders import Embedder

__all__ = ["DEFAULT_RERANKER", "RERANKERS", "SCORING_RERANKER", "Reranker", "RerankerSpec", "resolve_reranker"]


def resolve_reranker(spec: str | Reranker | None, *, embedder: Embedder | str = "minilm") -> Reranker:
    """A reranker for a catalogue name (``None``: :data:`DEFAULT_RERANKER`), or the instance itself.

    ``embedder`` is the embedder a reranker that :attr:`~RerankerSpec.needs_embedder` uses (an instance, or a
    name shared across rerankers); the others ignore it.

    Raises:
        ConfigError: No reranker has that name (the message lists the known ones).
    """
    if not isinstance(spec, str | None):
        return spec
    return RERANKERS.get(spec or DEFAULT_RERANKER).make(embedder)

"""Rerankers: ``retriever`` (the candidates' own scores, else BM25), ``bm25``, ``dense`` (MiniLM), ``fake``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admit.backends.rerankers.base import Reranker
from admit.errors import ConfigError

if TYPE_CHECKING:
    from admit.backends.embedders import Embedder

__all__ = ["Reranker", "resolve_reranker"]


def resolve_reranker(spec: str | Reranker | None, *, embedder: Embedder | str = "minilm") -> Reranker:
    """Return a reranker for ``retriever`` (default), ``bm25``, ``dense``/``minilm``/``hybrid`` or an instance.

    ``embedder`` is the embedder a dense or hybrid reranker uses (an instance, or a name shared across
    rerankers); the other rerankers ignore it.
    """
    if spec is None or spec == "retriever":
        from admit.backends.rerankers.lexical import RetrieverScoreReranker

        return RetrieverScoreReranker()
    if not isinstance(spec, str):
        return spec
    if spec == "bm25":
        from admit.backends.rerankers.lexical import BM25Reranker

        return BM25Reranker()
    if spec in {"dense", "minilm", "hybrid"}:
        from admit.backends.rerankers.dense import DenseReranker

        return DenseReranker(embedder, hybrid=spec == "hybrid")
    raise ConfigError(f"Unknown reranker {spec!r}; known: retriever, bm25, dense, hybrid.")

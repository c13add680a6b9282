"""Rerankers: ``retriever`` (the candidates' own scores, else BM25), ``bm25``, ``dense`` (MiniLM), ``fake``."""

from __future__ import annotations

from admit.backends.rerankers.base import Reranker
from admit.errors import ConfigError

__all__ = ["Reranker", "resolve_reranker"]


def resolve_reranker(spec: str | Reranker | None) -> Reranker:
    """Return a reranker for ``retriever`` (default), ``bm25``, ``dense``/``minilm`` or an instance."""
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

        return DenseReranker(hybrid=spec == "hybrid")
    raise ConfigError(f"Unknown reranker {spec!r}; known: retriever, bm25, dense, hybrid.")

"""Rerankers: ``retriever`` (the candidates' own scores, else BM25), ``bm25``, ``dense`` (MiniLM), ``hybrid``,
``cross`` (the split cross-encoder over MiniLM that reads question and chunk together), ``fake``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admit.backends.rerankers.base import Reranker
from admit.errors import ConfigError

if TYPE_CHECKING:
    from admit.backends.embedders import Embedder

__all__ = ["KNOWN_RERANKERS", "Reranker", "resolve_reranker"]

KNOWN_RERANKERS = ("retriever", "bm25", "dense", "minilm", "hybrid", "cross")
"""The reranker names :func:`resolve_reranker` accepts (``minilm`` is ``dense``)."""


def resolve_reranker(spec: str | Reranker | None, *, embedder: Embedder | str = "minilm") -> Reranker:
    """Return a reranker for ``retriever`` (default), ``bm25``, ``dense``/``minilm``/``hybrid``, ``cross`` or an
    instance.

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
    if spec == "cross":
        from admit.backends.rerankers.cross import CrossReranker

        return CrossReranker()
    raise ConfigError(f"Unknown reranker {spec!r}; known: retriever, bm25, dense, hybrid, cross.")

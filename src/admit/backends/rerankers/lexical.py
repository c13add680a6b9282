"""BM25 over the candidate list itself: a dependency-free reranker, and the fallback when scores are missing."""

from __future__ import annotations

import math
from collections.abc import Sequence

from admit import _linear
from admit._text import STOPWORDS, bm25_matrix, normalize
from admit.backends.rerankers.spec import RerankerSpec
from admit.types import Chunk

__all__ = ["BM25", "RETRIEVER", "BM25Reranker", "RetrieverScoreReranker", "bm25_scores"]


def _terms(text: str) -> list[str]:
    return [w for w in normalize(text).split() if w not in STOPWORDS]


def bm25_scores(query: str, docs: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 of ``query`` against ``docs``, with IDF taken over ``docs`` (the candidate list)."""
    if not docs:
        return []
    q = list(dict.fromkeys(_terms(query)))  # each query term counts once
    terms = []
    for d in docs:
        _linear.checkpoint()  # per document: long work may wait (the service's scheduler) or stop (the deadline)
        terms.append(_terms(d))
    return [float(v) for v in bm25_matrix([q], terms, k1=k1, b=b)[0]]


class BM25Reranker:
    """Lexical BM25 over title and text of the candidate list. Fast, deterministic, no model."""

    name = "bm25"

    def score(self, question: str, chunks: Sequence[Chunk]) -> list[float]:
        """Return BM25 scores."""
        return bm25_scores(question, [f"{c.title}\n{c.text}" for c in chunks])


class RetrieverScoreReranker:
    """Keeps the retriever's scores when every candidate has one; otherwise falls back to BM25."""

    name = "retriever"

    def __init__(self) -> None:
        """Create the reranker."""
        self._bm25 = BM25Reranker()

    def score(self, question: str, chunks: Sequence[Chunk]) -> list[float]:
        """Return the candidates' own scores, or BM25 if any is missing or not finite."""
        scores = [c.score for c in chunks]
        if chunks and all(s is not None and math.isfinite(s) for s in scores):
            return [float(s) for s in scores if s is not None]
        return self._bm25.score(question, chunks)


BM25 = RerankerSpec(name="bm25", build=BM25Reranker, summary="BM25 over the candidate list, no model")
"""The ``bm25`` reranker's spec."""
RETRIEVER = RerankerSpec(
    name="retriever", build=RetrieverScoreReranker, summary="the candidates' own scores, else BM25"
)
"""The ``retriever`` reranker's spec."""

"""An in-memory knowledge base for unit tests of the service: ACL filter first, then BM25 ranking."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from admit.backends.rerankers.lexical import bm25_scores
from admit.types import Chunk, Principal

__all__ = ["FakeKnowledgeBase"]


class FakeKnowledgeBase:
    """``FakeKnowledgeBase(chunks).retrieve(question, principal, k=5)``: readable chunks only, best BM25 first."""

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        """Hold ``chunks``."""
        self.chunks: Sequence[Chunk] = tuple(chunks)
        self.calls: list[tuple[str, Principal, int]] = []

    def retrieve(
        self, question: str, principal: Principal, *, k: int, filters: Mapping[str, Any] | None = None
    ) -> list[Chunk]:
        """Filter by the principal's access, rank by BM25 over the readable chunks, return the top ``k``."""
        self.calls.append((question, principal, k))
        readable = [c for c in self.chunks if principal.can_read(c.access)]
        scores = bm25_scores(question, [f"{c.title}\n{c.text}" for c in readable])
        order = sorted(range(len(readable)), key=lambda i: (-scores[i], i))[:k]
        return [replace(readable[i], score=scores[i]) for i in order]

"""The reranker Protocol: score candidates against the actual question."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from admit.types import Chunk

__all__ = ["Reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Scores each chunk's relevance to the question (higher is better)."""

    name: str
    """Backend name, recorded in the trace."""

    def score(self, question: str, chunks: Sequence[Chunk]) -> list[float]:
        """Return one finite score per chunk, in the same order."""
        ...

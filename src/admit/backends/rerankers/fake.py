"""A scripted reranker for tests: scores come from a function or a mapping of chunk id to score."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from admit.types import Chunk

__all__ = ["FakeReranker"]


class FakeReranker:
    """Returns ``fn(question, chunk)`` or ``scores[chunk.id]`` (default 0.0)."""

    name = "fake"

    def __init__(
        self, fn: Callable[[str, Chunk], float] | None = None, scores: Mapping[str, float] | None = None
    ) -> None:
        """Create the reranker from a function or a mapping."""
        self._fn = fn
        self._scores = dict(scores or {})

    def score(self, question: str, chunks: Sequence[Chunk]) -> list[float]:
        """Return the scripted scores."""
        if self._fn is not None:
            return [float(self._fn(question, c)) for c in chunks]
        return [float(self._scores.get(c.id, 0.0)) for c in chunks]

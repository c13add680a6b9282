"""``reverse``: a reranker that scores the last candidate best (the plug-in test's visible ordering)."""

from __future__ import annotations

from collections.abc import Sequence

from admit.backends.rerankers import RerankerSpec
from admit.types import Chunk

__all__ = ["SPEC", "ReverseReranker"]


class ReverseReranker:
    """Scores candidate ``i`` of ``n`` as ``i``: the input order, reversed."""

    name = "reverse"

    def score(self, question: str, chunks: Sequence[Chunk]) -> list[float]:
        """One score per chunk, growing with its position."""
        return [float(i) for i in range(len(chunks))]


SPEC = RerankerSpec(name="reverse", build=ReverseReranker, summary="the input order, reversed", version="7")

"""Rerank: score the authorized candidates against the actual question and keep the policy's top count."""

from __future__ import annotations

import math
from collections.abc import Sequence

from admit.backends.rerankers import Reranker
from admit.errors import BackendError
from admit.types import Chunk, Decision, Scored

__all__ = ["rerank"]


def rerank(
    question: str, chunks: Sequence[Chunk], reranker: Reranker, *, keep: int
) -> tuple[list[Scored], list[Decision]]:
    """Score ``chunks``, sort best first (ties keep input order), keep ``keep``; the rest get ``rerank_cut``."""
    if not chunks:
        return [], []
    try:
        raw = reranker.score(question, chunks)
    except Exception as exc:
        raise BackendError(f"Reranker {getattr(reranker, 'name', reranker)!r} failed: {exc}") from exc
    if len(raw) != len(chunks):
        raise BackendError(f"Reranker returned {len(raw)} scores for {len(chunks)} chunks.")
    scores = [float(s) if s is not None and math.isfinite(float(s)) else -math.inf for s in raw]
    order = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
    ranked = [Scored(chunk=chunks[i], score=scores[i], rank=r) for r, i in enumerate(order)]
    kept, cut = ranked[: max(keep, 0)], ranked[max(keep, 0) :]
    decisions = [
        Decision(
            chunk_id=s.chunk.id,
            state="dropped",
            stage="rerank",
            reason="rerank_cut",
            score=s.score,
            detail=f"rank {s.rank + 1} > rerank_count {keep}",
        )
        for s in cut
    ]
    return kept, decisions

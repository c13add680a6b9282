"""Rerank: score the authorized candidates against the actual question and keep the policy's top count."""

from __future__ import annotations

import math
from collections.abc import Sequence

from admit.backends.rerankers import Reranker
from admit.errors import BackendError
from admit.types import Chunk, Decision, Scored

__all__ = ["rank_order", "ranked_by", "rerank"]


def rank_order(scores: Sequence[float | None]) -> list[int]:
    """Indexes best first; ties keep input order; a missing or non-finite score ranks last."""
    clean = [_clean(s) for s in scores]
    return sorted(range(len(clean)), key=lambda i: (-clean[i], i))


def ranked_by(chunks: Sequence[Chunk], scores: Sequence[float | None]) -> list[Scored]:
    """``chunks`` best first by ``scores`` (one per chunk, computed before), as :func:`rerank` orders them."""
    if len(scores) != len(chunks):
        raise BackendError(f"{len(scores)} scores for {len(chunks)} chunks.")
    return [Scored(chunk=chunks[i], score=_clean(scores[i]), rank=r) for r, i in enumerate(rank_order(scores))]


def _clean(s: float | None) -> float:
    if not isinstance(s, int | float) or isinstance(s, bool):
        return -math.inf
    return float(s) if math.isfinite(s) else -math.inf


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
    ranked = ranked_by(chunks, [None if s is None else float(s) for s in raw])
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

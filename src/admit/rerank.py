"""Rerank: score the authorized candidates against the actual question and keep the policy's top count."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from admit.backends.rerankers import Reranker
from admit.errors import BackendError
from admit.question import Question, as_text, read_question, releases_in
from admit.types import Chunk, Decision, Scored

__all__ = ["RETRIEVER_TOP", "in_retriever_top", "rank_order", "ranked_by", "rerank"]

RETRIEVER_TOP = 5
"""The measured setting of :attr:`admit.pipeline.Pipeline.retriever_top` (off, 0, by default: docs/results.md,
round 11). A candidate among the first this many of either of the retriever's own lists (lexical or vector: a knowledge
base's hits carry their ranks in ``metadata["retrieval"]``) goes on past the rerank cut, at most this many more
(:func:`rerank`'s ``retriever_top``): where the two lists disagree, the fused order ranks a chunk one list put first
at 20-30 and the cut of 12 dropped it before the pruner saw it. The pipeline passes it only before a pruner that
grades the cut list (``setwise``: its lists stay within the 10-20 it was fitted on), when it is set."""


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


def in_retriever_top(chunk: Chunk, top: int) -> bool:
    """Whether a candidate is among the first ``top`` of either of the retriever's lists (its
    ``metadata["retrieval"]`` ``bm25_rank`` or ``vector_rank``, 0-based; a candidate without them is not)."""
    info = chunk.metadata.get("retrieval") if top > 0 else None
    if not isinstance(info, dict):
        return False
    ranks = (info.get("bm25_rank"), info.get("vector_rank"))
    return any(isinstance(r, int) and not isinstance(r, bool) and 0 <= r < top for r in ranks)


def rerank(
    question: str | Question, chunks: Sequence[Chunk], reranker: Reranker, *, keep: int, retriever_top: int = 0
) -> tuple[list[Scored], list[Decision]]:
    """Score ``chunks``, sort best first (ties keep input order), keep ``keep``; the rest get ``rerank_cut``.

    ``question``: the request's record (:func:`admit.question.read_question`) or the text; the reranker is handed
    the text. ``retriever_top`` (default 0: none): past the first ``keep``, at most that many more go on, in rank
    order, each among the first ``retriever_top`` of either retriever list (:func:`in_retriever_top`,
    :data:`RETRIEVER_TOP`)."""
    if not chunks:
        return [], []
    try:
        raw = reranker.score(as_text(question), chunks)
    except Exception as exc:
        raise BackendError(f"Reranker {getattr(reranker, 'name', reranker)!r} failed: {exc}") from exc
    if len(raw) != len(chunks):
        raise BackendError(f"Reranker returned {len(raw)} scores for {len(chunks)} chunks.")
    ranked = _asked_version_first(question, ranked_by(chunks, [None if s is None else float(s) for s in raw]))
    kept, cut = ranked[: max(keep, 0)], ranked[max(keep, 0) :]
    if retriever_top > 0 and cut:
        extra = [s for s in cut if in_retriever_top(s.chunk, retriever_top)][:retriever_top]
        if extra:
            ids = {id(s) for s in extra}
            kept = [*kept, *extra]
            cut = [s for s in cut if id(s) not in ids]
    decisions = [
        Decision.drop(s, stage="rerank", reason="rerank_cut", detail=f"rank {s.rank + 1} > rerank_count {keep}")
        for s in cut
    ]
    return kept, decisions


def _asked_version_first(question: str | Question, ranked: list[Scored]) -> list[Scored]:
    """Chunks whose title (or version) names a release the question asks about move ahead, in rank order.

    "What changed in 3.2.0?" is about the section titled 3.2.0; a neighbouring version's notes share its words
    and digits and would otherwise outrank it. The releases and their matching are :mod:`admit.question`'s one rule:
    ``3.2`` asked names ``3.2.0`` and ``3.2.1`` too, ``v4`` and ``4.x`` every ``4.*``, and ``1.2.4rc1`` only itself.
    """
    q = read_question(question)
    if not q.releases:
        return ranked

    def names(c: Chunk) -> bool:
        own = [*releases_in(c.title), *releases_in("v" + c.version.lstrip("vV") if c.version else "")]
        return q.asked_in(own) is not None

    hit = [s for s in ranked if names(s.chunk)]
    if not hit or len(hit) == len(ranked):
        return ranked
    rest = [s for s in ranked if not names(s.chunk)]
    return [replace(s, rank=r) for r, s in enumerate([*hit, *rest])]

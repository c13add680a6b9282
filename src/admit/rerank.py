"""Rerank: score the authorized candidates against the actual question and keep the policy's top count."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from admit.backends.rerankers import Reranker
from admit.errors import BackendError
from admit.question import Question, as_text, read_question, releases_in
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
    question: str | Question, chunks: Sequence[Chunk], reranker: Reranker, *, keep: int
) -> tuple[list[Scored], list[Decision]]:
    """Score ``chunks``, sort best first (ties keep input order), keep ``keep``; the rest get ``rerank_cut``.

    ``question``: the request's record (:func:`admit.question.read_question`) or the text; the reranker is handed
    the text."""
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

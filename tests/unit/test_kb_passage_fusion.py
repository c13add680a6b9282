"""Issue 46 (answers that never reach the pruner): the knowledge base orders its candidates again by each one's best
passage (:mod:`admit.kb.passage_fusion`), so a long section whose one sentence answers is not ranked by the vector
of its whole text alone, and a chunk only the lexical list found gets a dense rank too."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.backends.embedders import FakeEmbedder
from admit.kb import KnowledgeBase, parse_principal
from admit.kb.passage_fusion import best_similarity, passage_fused
from admit.kb.store import ChunkRecord, Hit
from admit.passages import PASSAGE_VECTORS_KEY, encode_vectors
from admit.types import Access, Chunk

Q = "How do I rotate the signing keys of the vault?"
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar".split()  # noqa: SIM905


def _filler(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def _chunks() -> list[Chunk]:
    """One long section whose single answering sentence is its own passage among six of other text, and twelve short
    pages that share the question's words but do not answer."""
    rng = random.Random(7)
    acc = Access(tenant="t")
    around = " ".join(_filler(rng, 170) for _ in range(3))
    long = f"{around} To rotate the signing keys of the vault run vaultctl rotate --all. {around}"
    out = [Chunk(id="ops#keys", source_id="ops", title="Operations", text=long, access=acc)]
    for i in range(12):
        text = f"The vault stores keys. {_filler(rng, 30)} Signing is described elsewhere."
        out.append(Chunk(id=f"p{i}#s", source_id=f"p{i}", title=f"Vault page {i}", text=text, access=acc))
    return out


@pytest.fixture
def kb() -> KnowledgeBase:
    k = KnowledgeBase(":memory:", embedder=FakeEmbedder(dim=64))
    k.add_chunks(_chunks())
    k.passage_fusion = True  # off by default (docs/results.md, round 11)
    return k


def _rank(kb: KnowledgeBase, cid: str) -> int:
    ids = [h.record.id for h in kb.hits(Q, parse_principal("tenant:t"), k=10)]
    return ids.index(cid)


def test_a_long_section_answering_in_one_passage_is_among_the_first_candidates(kb: KnowledgeBase) -> None:
    assert _rank(kb, "ops#keys") < 3


def test_off_by_default() -> None:
    assert KnowledgeBase.passage_fusion is False


def test_the_store_order_alone_ranks_it_low(kb: KnowledgeBase) -> None:
    # the control: the whole chunk's vector is the farthest of the thirteen, so the fused list put it behind pages
    # that only share the question's words
    kb.passage_fusion = False
    assert _rank(kb, "ops#keys") >= 3


def test_the_same_candidates_in_a_new_order(kb: KnowledgeBase) -> None:
    p = parse_principal("tenant:t")
    kb.passage_fusion = False
    before = kb.hits(Q, p, k=8)
    kb.passage_fusion = True
    after = kb.hits(Q, p, k=8)
    assert {h.record.id for h in after} == {h.record.id for h in before}
    assert [h.fused for h in after] == sorted((h.fused for h in after), reverse=True)
    assert {h.record.id: (h.bm25_rank, h.vector_rank) for h in after} == {
        h.record.id: (h.bm25_rank, h.vector_rank) for h in before
    }  # the store's ranks stay in the trace


def _hit(cid: str, vec: list[float], *, bm25_rank: int | None, passages: list[list[float]] | None = None,
         model: str = "m") -> Hit:  # fmt: skip
    meta = {PASSAGE_VECTORS_KEY: encode_vectors(model, np.asarray(passages, np.float32))} if passages else {}
    rec = ChunkRecord(
        id=cid, source_id=cid, text="x", embedding=np.asarray(vec, np.float32), text_hash="", metadata=meta
    )
    return Hit(record=rec, fused=0.0, bm25_rank=bm25_rank)


def test_best_similarity_reads_the_passages_of_its_own_model_only() -> None:
    q = np.asarray([1.0, 0.0], np.float32)
    h = _hit("a", [0.0, 1.0], bm25_rank=None, passages=[[0.0, 1.0], [0.8, 0.6]])
    assert best_similarity(h, q, "m") == pytest.approx(0.8)
    assert best_similarity(h, q, "other") == pytest.approx(0.0)  # another model's vectors are not compared
    bad = _hit("b", [0.0, 1.0], bm25_rank=None, passages=[[1.0, 0.0, 0.0]])  # another dimension
    assert best_similarity(bad, q, "m") == pytest.approx(0.0)


def test_a_lexical_only_candidate_gets_a_dense_rank() -> None:
    q = np.asarray([1.0, 0.0], np.float32)
    hits = [
        _hit("both", [0.6, 0.8], bm25_rank=1),
        _hit("vec", [0.7, 0.71], bm25_rank=None),
        _hit("lex", [1.0, 0.0], bm25_rank=0),  # first in BM25 and the closest: no dense rank in the store's list
    ]
    assert [h.record.id for h in passage_fused(hits, q, "m")] == ["lex", "both", "vec"]
    assert passage_fused(hits[:1], q, "m") == hits[:1]

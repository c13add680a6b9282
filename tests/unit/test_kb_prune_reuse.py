"""Pruning a knowledge-base search reuses the vectors stored at ingest instead of encoding chunks again."""

from __future__ import annotations

import pytest

from admit.backends.embedders.fake import FakeEmbedder
from admit.kb import KnowledgeBase
from admit.passages import passages
from admit.types import Principal
from tests.conftest import REPO


class CountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=384)
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


def test_search_with_pruning_encodes_only_the_question_and_multi_passage_chunks():
    emb = CountingEmbedder()
    kb = KnowledgeBase(":memory:", embedder=emb)
    kb.ingest([REPO / "examples" / "docs"], registry=REPO / "examples" / "sources.toml")
    emb.texts.clear()
    question = "What does error E4012 mean and how do I fix it?"
    res = kb.search(question, Principal(tenant="acme"), prune=True, k=12)
    assert res.trace["pruner"]["strategy"] == "setwise"
    assert res.trace["pruner"]["fallback"] is None, res.trace["pruner"]
    reranked = set(res.trace["reranked_ids"])
    long_chunks = [c for c in kb.retrieve(question, Principal(tenant="acme"), k=12) if c.id in reranked]
    multi = sum(len(passages(c.title, c.text)) for c in long_chunks if len(passages(c.title, c.text)) > 1)
    # the question (retrieval), the question again for setwise (cached), and only multi-passage chunks' passages
    assert len([t for t in emb.texts if t != question]) == multi
    kb.close()


def test_the_service_prunes_with_the_kbs_seeded_cache_even_when_it_is_empty():
    pytest.importorskip("fastapi", reason="the service needs the `service` extra")
    from admit.service.config import ServiceSettings
    from admit.service.http import build_state

    kb = KnowledgeBase(":memory:", embedder=CountingEmbedder())
    assert len(kb.cached_embedder) == 0  # empty, hence falsy: it must still be the one the pruner gets
    state = build_state(ServiceSettings(), kb=kb)
    assert state.pipeline._pruner_options["embedder"] is kb.cached_embedder
    kb.close()

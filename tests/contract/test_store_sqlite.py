"""The store contract on the embedded SQLite store (sqlean + sqlite-vec + FTS5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.kb.sqlite_store import SqliteStore
from admit.testing.store_contract import StoreContract


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqliteStore]:
        s = SqliteStore(tmp_path / "kb.sqlite", dim=self.dim)
        yield s
        s.close()


class TestSqliteMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[SqliteStore]:
        s = SqliteStore(":memory:", dim=self.dim)
        yield s
        s.close()


def test_a_file_with_one_shared_full_text_table_is_split_per_tenant_when_opened(tmp_path: Path) -> None:
    """Files written before issue 47 hold every tenant's rows in one ``chunks_fts`` (BM25 over all tenants)."""
    from admit.kb.sqlite_store import fts_table
    from admit.testing.store_contract import make_record, unit_vec
    from admit.types import Principal

    path = tmp_path / "kb.sqlite"
    store = SqliteStore(path, dim=8)
    recs = [make_record(f"a{i}#0", dim=8, tenant="acme", text=f"Quuxifer note {i}") for i in range(3)]
    recs += [make_record(f"g{i}#0", dim=8, tenant="globex", text="Quuxifer Quuxifer") for i in range(20)]
    store.upsert(recs)
    q = unit_vec("q", 8)
    want = [h.as_dict() for h in store.search("Quuxifer", q, principal=Principal(tenant="acme"), k=5)]
    conn = store._conn()
    # the old layout: one shared table, no per-tenant ones
    conn.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5(title, body, content='', contentless_delete=1, "
        "tokenize=\"porter unicode61 tokenchars '_'\")"
    )
    for tenant in ("acme", "globex"):
        conn.execute(f"INSERT INTO chunks_fts (rowid, title, body) SELECT rowid, title, body FROM {fts_table(tenant)}")
        conn.execute(f"DROP TABLE {fts_table(tenant)}")
    store.close()

    again = SqliteStore(path, dim=8)
    names = {r[0] for r in again._conn().execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "chunks_fts" not in names and {fts_table("acme"), fts_table("globex")} <= names
    got = [h.as_dict() for h in again.search("Quuxifer", q, principal=Principal(tenant="acme"), k=5)]
    assert got == want
    assert again.delete_source("g0", "globex") == 1
    again.close()

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

"""The store contract on the shipped in-process store (``memory://``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from admit.kb.memory_store import MemoryStore, stored_embedder
from admit.kb.stores import open_store
from admit.testing.store_contract import StoreContract


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        s = open_store("memory://", dim=self.dim)
        assert isinstance(s, MemoryStore)
        yield s
        s.close()


def test_a_named_store_is_shared_and_reports_its_embedder() -> None:
    a = open_store("memory://contract-shared", dim=8)
    b = open_store("memory://contract-shared", dim=8)
    a.set_meta("embedder_spec", "fake:8")
    assert b.get_meta("embedder_spec") == "fake:8"
    assert stored_embedder("memory://contract-shared") == "fake:8"
    assert stored_embedder("memory://") is None
    assert open_store("memory://", dim=8).get_meta("embedder_spec") is None  # private: a fresh store

"""The store contract on Qdrant.

No Qdrant server binary can be installed on this machine (no PyPI or Debian package ships one), so the suite runs
against the official client's embedded local mode (``QdrantClient(":memory:")`` and ``QdrantClient(path=...)``),
which implements the same filter and query API. Set ``ADMIT_QDRANT_URL`` to run it against a real server too.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("qdrant_client")

from admit.kb.qdrant_store import QdrantStore
from admit.testing.store_contract import StoreContract


class TestQdrantLocalMemory(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[QdrantStore]:
        s = QdrantStore(path=":memory:", dim=self.dim, collection=f"c{uuid.uuid4().hex[:8]}")
        yield s
        s.close()


class TestQdrantLocalDisk(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[QdrantStore]:
        s = QdrantStore(path=str(tmp_path / "qdrant"), dim=self.dim, collection="chunks")
        yield s
        s.close()


@pytest.mark.integration
@pytest.mark.skipif(not os.environ.get("ADMIT_QDRANT_URL"), reason="ADMIT_QDRANT_URL not set (no Qdrant server)")
class TestQdrantServer(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[QdrantStore]:
        name = f"admit_test_{uuid.uuid4().hex[:8]}"
        s = QdrantStore(url=os.environ["ADMIT_QDRANT_URL"], dim=self.dim, collection=name)
        yield s
        s.client.delete_collection(name)
        s.client.delete_collection(f"{name}_meta")
        s.close()

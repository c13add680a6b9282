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


def test_the_collection_reports_the_embedder_that_built_it(tmp_path: Path) -> None:
    from admit.kb import KnowledgeBase
    from admit.kb.stores import stored_embedder
    from admit.types import Access, Chunk

    url = f"qdrant+local://{tmp_path / 'q'}?collection=c1"
    assert stored_embedder(url) is None and not (tmp_path / "q").exists()  # asking creates nothing
    with KnowledgeBase(url, embedder="fake:16") as kb:
        kb.add_chunks([Chunk(id="a", source_id="a", text="The port is 8080.", access=Access(tenant="t"))])
    assert stored_embedder(url) == "fake:16"
    with KnowledgeBase(url) as again:  # no embedder named: the collection's, not a silent minilm
        assert again.embedder_spec == "fake:16" and again.count() == 1

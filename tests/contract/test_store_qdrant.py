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


class TestQdrantCountedIdf(StoreContract):
    """The server's way to the scope's IDF (one indexed ``count`` per term), run through local mode."""

    @pytest.fixture
    def store(self) -> Iterator[QdrantStore]:
        s = QdrantStore(path=":memory:", dim=self.dim, collection=f"c{uuid.uuid4().hex[:8]}")
        s.local = False
        yield s
        s.close()


def test_a_collection_with_qdrants_idf_modifier_is_converted_when_opened(tmp_path: Path) -> None:
    """Collections made before issue 47 weight terms by Qdrant's IDF over every tenant's points."""
    from qdrant_client import models as m

    from admit.testing.store_contract import make_record, unit_vec
    from admit.types import Principal

    where = str(tmp_path / "q")
    store = QdrantStore(path=where, dim=8, collection="chunks")
    store.upsert([make_record(f"a{i}#0", dim=8, tenant="acme", text=f"Quuxifer note {i}") for i in range(3)])
    q = unit_vec("q", 8)
    want = [h.as_dict() for h in store.search("Quuxifer", q, principal=Principal(tenant="acme"), k=5)]
    store.upsert([make_record(f"g{i}#0", dim=8, tenant="globex", text="Quuxifer Quuxifer") for i in range(20)])
    # the old collection: the IDF modifier, no lex payload
    store.client.update_collection(
        "chunks", sparse_vectors_config={"lexical": m.SparseVectorParams(modifier=m.Modifier.IDF)}
    )
    store.client.delete_payload("chunks", keys=["lex"], points=m.FilterSelector(filter=m.Filter()))
    store.close()

    again = QdrantStore(path=where, dim=8, collection="chunks")
    params = again.client.get_collection("chunks").config.params.sparse_vectors
    assert params is not None and params["lexical"].modifier in (None, m.Modifier.NONE)
    assert [h.as_dict() for h in again.search("Quuxifer", q, principal=Principal(tenant="acme"), k=5)] == want
    again.close()

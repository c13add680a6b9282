"""The Haystack component in a ``Pipeline`` after an in-memory BM25 retriever."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from admit.adapters.haystack import AdmitPruner

pytestmark = pytest.mark.integration

DOCS = [
    Document(id="h1", content="Bananas are yellow and sweet.", meta={"file": "fruit.md", "page": 2}),
    Document(
        id="h2", content="The registry listens on port 5000 by default.", meta={"file": "config.md", "title": "Ports"}
    ),
    Document(
        id="h3",
        content="Change the registry port with listen_port in config.yaml.",
        meta={"file": "config.md", "tags": ["port", "config"]},
    ),
    Document(id="h4", content="Penguins cannot fly but the registry can.", meta={"file": "birds.md"}),
]


def _pipeline() -> Pipeline:
    store = InMemoryDocumentStore()
    store.write_documents(DOCS)
    p = Pipeline()
    p.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=4))
    p.add_component("admit", AdmitPruner(strategy="top_n", params={"n": 2}, keep_top_k=0))
    p.connect("retriever.documents", "admit.documents")
    return p


def test_component_in_pipeline_keeps_metadata() -> None:
    q = "Which port does the registry listen on?"
    out = _pipeline().run({"retriever": {"query": q}, "admit": {"query": q}})
    docs = out["admit"]["documents"]
    assert len(docs) == 2
    assert {d.id for d in docs} <= {"h2", "h3", "h4"}
    assert "h1" not in {d.id for d in docs}
    for d in docs:
        src = next(x for x in DOCS if x.id == d.id)
        assert d.content == src.content
        assert {k: v for k, v in d.meta.items() if k != "admit"} == src.meta
        assert d.meta["admit"]["strategy"] == "top_n"
        assert d.score is not None  # the retriever's score rides along


def test_component_serializes() -> None:
    p = _pipeline()
    again = Pipeline.loads(p.dumps(), allowed_modules=["admit.adapters.haystack"])
    comp = again.get_component("admit")
    assert isinstance(comp, AdmitPruner)
    assert comp.params == {"n": 2}

"""The Haystack component in a ``Pipeline`` after a real in-memory retriever (BM25 or embeddings)."""

from __future__ import annotations

import asyncio
import copy
import os
import pickle

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from admit.adapters._core import AdmitFilter
from admit.adapters.haystack import AdmitPruner
from admit.errors import ConfigError
from tests.integration._adapter_helpers import Gate, KeepIds, Unsaveable, counting_embedder

pytestmark = pytest.mark.integration

ALLOWED = ["admit.adapters.haystack"]

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
Q = "Which port does the registry listen on?"


def _pipeline(pruner: AdmitPruner | None = None) -> Pipeline:
    store = InMemoryDocumentStore()
    store.write_documents(DOCS)
    p = Pipeline()
    p.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=4))
    p.add_component("admit", pruner or AdmitPruner(strategy="top_n", params={"n": 2}, keep_top_k=0))
    p.connect("retriever.documents", "admit.documents")
    return p


def _run(p: Pipeline, **admit: object) -> list[Document]:
    docs: list[Document] = p.run({"retriever": {"query": Q}, "admit": {"query": Q, **admit}})["admit"]["documents"]
    return docs


def test_component_in_pipeline_keeps_metadata() -> None:
    docs = _run(_pipeline())
    assert len(docs) == 2
    assert {d.id for d in docs} <= {"h2", "h3", "h4"}
    for d in docs:
        src = next(x for x in DOCS if x.id == d.id)
        assert d.content == src.content
        assert {k: v for k, v in d.meta.items() if k != "admit"} == src.meta
        assert d.meta["admit"]["strategy"] == "top_n"
        assert d.meta["admit"]["kept"] is True
        assert d.score is not None  # the retriever's score rides along


def test_dropped_documents_come_out_with_their_reasons() -> None:
    store = InMemoryDocumentStore()
    store.write_documents(DOCS)
    p = Pipeline()
    p.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=4))
    p.add_component("admit", AdmitPruner(strategy="top_n", params={"n": 2}, keep_top_k=0))
    p.connect("retriever.documents", "admit.documents")
    res = p.run({"retriever": {"query": Q}, "admit": {"query": Q}}, include_outputs_from={"retriever"})
    out = res["admit"]
    assert len(out["documents"]) + len(out["dropped"]) == len(res["retriever"]["documents"])
    assert out["dropped"]
    for d in out["dropped"]:
        assert d.meta["admit"]["kept"] is False
        assert "threshold" in d.meta["admit"]["reason"]


def test_top_k_like_haystack_rankers() -> None:
    p = _pipeline(AdmitPruner(strategy="top_n", params={"n": 3}, keep_top_k=0, top_k=2))
    assert len(_run(p)) == 2
    assert len(_run(p, top_k=1)) == 1  # per run, as Haystack rankers take it
    with pytest.raises(Exception, match="top_k") as info:  # Haystack wraps what a component raises
        _run(p, top_k=0)
    assert isinstance(info.value, ConfigError) or isinstance(info.value.__cause__, ConfigError)


def test_component_serializes_every_setting_and_loads_with_allowed_modules() -> None:
    p = _pipeline(AdmitPruner(strategy="top_n", params={"n": 2}, keep_top_k=0, top_k=3, max_tokens=500))
    again = Pipeline.loads(p.dumps(), allowed_modules=ALLOWED)
    comp = again.get_component("admit")
    assert isinstance(comp, AdmitPruner)
    assert (comp.params, comp.top_k, comp.max_tokens) == ({"n": 2}, 3, 500)
    assert [d.id for d in _run(again)] == [d.id for d in _run(p)]


def test_settings_changed_after_construction_apply_and_are_what_is_saved() -> None:
    comp = AdmitPruner(strategy="top_n", params={"n": 3}, keep_top_k=0)
    p = _pipeline(comp)
    assert len(_run(p)) == 3
    comp.params = {"n": 1}
    assert len(_run(p)) == 1
    again = Pipeline.loads(p.dumps(), allowed_modules=ALLOWED)
    assert len(_run(again)) == 1  # save-and-reload does not change behaviour
    with pytest.raises(ConfigError, match="threshold"):
        comp.threshold = 9
    assert comp.threshold == 3


def test_invalid_settings_are_rejected_at_construction_and_at_load() -> None:
    with pytest.raises(ConfigError, match="threshold"):
        AdmitPruner(threshold=9)
    with pytest.raises(ConfigError, match="Unknown pruning strategy"):
        AdmitPruner(strategy="setwize")
    with pytest.raises(ConfigError, match="max_tokens"):
        AdmitPruner(max_tokens=-1)
    text = _pipeline().dumps().replace("threshold: 3", "threshold: 9")
    with pytest.raises(Exception, match="threshold") as info:
        Pipeline.loads(text, allowed_modules=ALLOWED)
    assert isinstance(info.value, ConfigError) or isinstance(info.value.__cause__, ConfigError)


def test_custom_filter_survives_dumps_and_loads() -> None:
    custom = AdmitFilter(pruner=KeepIds(["h4"]), keep_top_k=0)
    p = _pipeline(AdmitPruner(admit_filter=custom))
    assert [d.id for d in _run(p)] == ["h4"]
    text = p.dumps()
    assert "KeepIds" in text
    again = Pipeline.loads(text, allowed_modules=[*ALLOWED, "tests.integration._adapter_helpers"])
    comp = again.get_component("admit")
    assert isinstance(comp, AdmitPruner)
    assert isinstance(comp.admit_filter.pruner, KeepIds)
    assert [d.id for d in _run(again)] == ["h4"]  # not the default pruner


def test_a_pruner_that_cannot_be_saved_fails_loudly() -> None:
    p = _pipeline(AdmitPruner(admit_filter=AdmitFilter(pruner=Unsaveable())))
    with pytest.raises(ConfigError, match="cannot be saved"):
        p.dumps()


def test_warm_up_loads_the_model_and_the_stored_vectors_are_reused() -> None:
    cached, counter = counting_embedder()
    texts = [d.content or "" for d in DOCS]
    vecs = cached.embed(texts)  # what a store written with the same MiniLM holds
    counter.texts.clear()
    cached._cache.clear()
    store = InMemoryDocumentStore()
    store.write_documents(
        [Document(id=d.id, content=d.content, embedding=v.tolist()) for d, v in zip(DOCS, vecs, strict=True)]
    )
    comp = AdmitPruner(admit_filter=AdmitFilter(pruner_options={"embedder": cached}))
    p = Pipeline()
    p.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=4, return_embedding=True))
    p.add_component("admit", comp)
    p.connect("retriever.documents", "admit.documents")
    p.warm_up()
    assert counter.texts  # warm_up ran the model
    assert getattr(counter.inner, "loaded", True)
    counter.texts.clear()
    qv = cached.embed([Q])[0].tolist()
    out = p.run({"retriever": {"query_embedding": qv}, "admit": {"query": Q}})["admit"]
    assert len(out["documents"]) + len(out["dropped"]) == 4
    assert any(d.id in {"h2", "h3"} for d in out["documents"])
    # the question was encoded for retrieval; admit encoded one document to check the stored vectors, not four
    assert len([t for t in counter.texts if t != Q]) == 1
    comp.embeddings = "ignore"
    counter.texts.clear()
    cached._cache.clear()
    p.run({"retriever": {"query_embedding": qv}, "admit": {"query": Q}})
    assert len([t for t in counter.texts if t not in {Q, "warm up", "x"}]) == 4


def test_stored_vectors_of_another_model_are_not_trusted() -> None:
    cached, counter = counting_embedder()
    rng = [[float((i * 7 + j) % 5) - 2.0 for j in range(384)] for i in range(4)]
    docs = [Document(id=d.id, content=d.content, embedding=v) for d, v in zip(DOCS, rng, strict=True)]
    comp = AdmitPruner(admit_filter=AdmitFilter(pruner_options={"embedder": cached}))
    comp.run(query=Q, documents=docs)
    assert len([t for t in counter.texts if t != Q]) == 4  # every document encoded by admit itself


def test_duplicates_under_another_id_and_oversized_documents_are_dropped_with_reasons() -> None:
    docs = [
        *DOCS[:3],
        Document(id="copy", content=DOCS[1].content, meta={"file": "mirror.md"}),
        Document(id="huge", content="registry " * 30_000),
    ]
    pruner = AdmitPruner(strategy="top_n", params={"n": 5}, keep_top_k=0, max_tokens=30, max_doc_chars=20_000)
    out = pruner.run(query=Q, documents=docs)
    reasons = {d.id: d.meta["admit"]["reason"] for d in out["dropped"]}
    assert reasons["copy"] == "duplicate_of h2 (exact duplicate)"
    assert reasons["huge"].startswith("270000 characters > max_doc_chars")
    assert sum(1 for d in out["dropped"] if d.meta["admit"]["stage"] == "budget") >= 1
    assert {d.id for d in out["documents"]} <= {"h1", "h2", "h3"}


def test_copy_and_pickle_after_a_call_with_the_real_model() -> None:
    comp = AdmitPruner(keep_top_k=1)
    first = comp.run(query=Q, documents=DOCS)["documents"]
    for again in (copy.deepcopy(comp), pickle.loads(pickle.dumps(comp))):
        assert [d.id for d in again.run(query=Q, documents=DOCS)["documents"]] == [d.id for d in first]


def test_async_run_does_not_block_the_event_loop() -> None:
    gate = Gate()
    p = _pipeline(AdmitPruner(admit_filter=AdmitFilter(pruner=gate, on_error="raise")))

    async def main() -> dict[str, object]:
        task = asyncio.ensure_future(p.run_async({"retriever": {"query": Q}, "admit": {"query": Q}}))
        while gate.thread is None and not task.done():
            await asyncio.sleep(0.01)  # the loop runs while the component works
        gate.opened.set()
        return await task

    out = asyncio.run(main())
    assert out["admit"]["documents"]  # type: ignore[index]
    assert gate.thread != "MainThread"

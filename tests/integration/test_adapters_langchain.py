"""The LangChain compressor inside ``ContextualCompressionRetriever``, with real retrievers."""

from __future__ import annotations

import asyncio
import copy
import pickle

import numpy as np
import pytest

pytest.importorskip("langchain_core")
ccr = pytest.importorskip("langchain_classic.retrievers")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

from admit.adapters._core import AdmitFilter  # noqa: E402
from admit.adapters.langchain import AdmitCompressor  # noqa: E402
from admit.errors import BackendError, ConfigError  # noqa: E402
from admit.prune.fake import FakeGrader  # noqa: E402
from tests.integration._adapter_helpers import Gate  # noqa: E402

pytestmark = pytest.mark.integration

DOCS = [
    Document(id="d1", page_content="Bananas are yellow.", metadata={"source": "fruit.md", "page": 3, "acl": ["x"]}),
    Document(
        id="d2",
        page_content="The registry listens on port 5000 by default.",
        metadata={"source": "config.md", "title": "Ports", "nested": {"a": [1, 2]}},
    ),
    Document(
        id="d3",
        page_content="Change the registry port with listen_port in config.yaml.",
        metadata={"source": "config.md", "section": "listen_port"},
    ),
    Document(page_content="Penguins cannot fly.", metadata={"source": "birds.md"}),
]
Q = "Which port does the registry listen on?"


class ListRetriever(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.docs)


def _retriever(comp: AdmitCompressor, docs: list[Document] | None = None) -> object:
    return ccr.ContextualCompressionRetriever(base_compressor=comp, base_retriever=ListRetriever(docs=docs or DOCS))


def test_compressor_in_contextual_compression_retriever_keeps_metadata() -> None:
    comp = AdmitCompressor(strategy="top_n", params={"n": 2}, keep_top_k=0, reranker="bm25")
    out = _retriever(comp).invoke(Q)  # type: ignore[attr-defined]
    assert [d.id for d in out] == ["d2", "d3"]
    for d in out:
        src = next(x for x in DOCS if x.id == d.id)
        assert d.page_content == src.page_content
        assert {k: v for k, v in d.metadata.items() if k != "admit"} == src.metadata
        assert d.metadata["admit"]["strategy"] == "top_n"
        assert d.metadata["admit"]["grade"] == 5
    assert "admit" not in DOCS[1].metadata  # the caller's documents are not mutated


def test_without_scores_the_retrievers_order_is_the_rank_signal() -> None:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=32))
    store.add_documents(DOCS)
    base = store.as_retriever(search_kwargs={"k": 4})
    order = [d.page_content for d in base.invoke(Q)]
    comp = AdmitCompressor(strategy="top_n", params={"n": 1}, keep_top_k=1)
    out = ccr.ContextualCompressionRetriever(base_compressor=comp, base_retriever=base).invoke(Q)
    assert [d.page_content for d in out] == order[:1]  # the retriever's top, whatever BM25 thinks
    assert out[0].metadata["admit"]["rank"] == 0
    assert out[0].metadata["admit"]["score"] is None  # no score is invented


def test_keep_top_k_protects_the_retrievers_top_not_bm25s() -> None:
    docs = [DOCS[3], DOCS[0], DOCS[1], DOCS[2]]  # the retriever ranks the penguins first
    comp = AdmitCompressor(strategy="top_n", params={"n": 1}, keep_top_k=1)
    assert [d.page_content for d in _retriever(comp, docs).invoke(Q)] == [DOCS[3].page_content]  # type: ignore[attr-defined]
    bm25 = AdmitCompressor(strategy="top_n", params={"n": 1}, keep_top_k=1, reranker="bm25")
    assert [d.id for d in _retriever(bm25, docs).invoke(Q)] == ["d2"]  # type: ignore[attr-defined]


def test_retriever_scores_in_metadata_are_used_numpy_float32_included() -> None:
    docs = [Document(id=f"s{i}", page_content=f"text {i}", metadata={"score": np.float32(i)}) for i in range(4)]
    out = AdmitCompressor(strategy="top_n", params={"n": 1}, keep_top_k=0).compress_documents(docs, "anything")
    assert [d.id for d in out] == ["s3"]
    assert out[0].metadata["admit"]["score"] == 3.0


def test_settings_changed_after_construction_apply_or_are_refused() -> None:
    comp = AdmitCompressor(strategy="top_n", params={"n": 3}, keep_top_k=0)
    assert len(comp.compress_documents(DOCS, Q)) == 3
    comp.params = {"n": 1}
    assert len(comp.compress_documents(DOCS, Q)) == 1
    copied = comp.model_copy(update={"params": {"n": 2}})
    assert len(copied.compress_documents(DOCS, Q)) == 2
    assert len(comp.compress_documents(DOCS, Q)) == 1
    with pytest.raises(ConfigError, match="threshold"):
        comp.threshold = 9
    assert comp.threshold == 3
    with pytest.raises(ConfigError, match="threshold"):  # refused at the copy, not stored unread
        comp.model_copy(update={"threshold": 0})


def test_invalid_settings_are_rejected_at_construction() -> None:
    with pytest.raises(ConfigError, match="Unknown pruning strategy"):
        AdmitCompressor(strategy="setwize")
    with pytest.raises(ConfigError, match="n"):
        AdmitCompressor(strategy="top_n", params={"n": -2})
    with pytest.raises(ConfigError, match="reranker"):
        AdmitCompressor(reranker="colbert")


def test_a_filter_gives_the_defaults_and_settings_given_win() -> None:
    f = AdmitFilter(strategy="top_n", params={"n": 2}, keep_top_k=0)
    assert AdmitCompressor(filter=f).params == {"n": 2}
    assert len(AdmitCompressor(filter=f, params={"n": 1}).compress_documents(DOCS, Q)) == 1


def test_duplicates_size_cap_and_budget_are_dropped_with_reasons() -> None:
    docs = [
        *DOCS,
        Document(id="copy", page_content=DOCS[1].page_content),
        Document(id="huge", page_content="port " * 10_000),
    ]
    comp = AdmitCompressor(strategy="top_n", params={"n": 6}, keep_top_k=0, max_doc_chars=5_000, max_tokens=25)
    kept, dropped = comp.decide(docs, Q)
    why = {d.id: d.metadata["admit"] for d in dropped}
    assert why["copy"]["reason"] == "duplicate_of d2 (exact duplicate)"
    assert why["huge"]["stage"] == "size"
    assert any(v["stage"] == "budget" for v in why.values())
    assert len(kept) + len(dropped) == len(docs)


def test_pruner_failure_falls_back_inside_the_pipeline() -> None:
    failing = AdmitFilter(pruner=FakeGrader(fail=BackendError("down")), on_error="keep_top_k", keep_top_k=1)
    out = _retriever(AdmitCompressor(filter=failing)).invoke("registry port")  # type: ignore[attr-defined]
    assert len(out) == 1
    assert out[0].metadata["admit"]["reason"] == "on_error: keep_top_k"


def test_copy_and_pickle_after_a_call_with_the_real_model() -> None:
    comp = AdmitCompressor()
    comp.warm_up()
    first = [d.page_content for d in comp.compress_documents(DOCS, Q)]
    for again in (copy.deepcopy(comp), pickle.loads(pickle.dumps(comp))):
        assert [d.page_content for d in again.compress_documents(DOCS, Q)] == first


def test_async_invoke_does_not_block_the_event_loop() -> None:
    gate = Gate()
    r = _retriever(AdmitCompressor(filter=AdmitFilter(pruner=gate, on_error="raise")))

    async def main() -> list[Document]:
        task = asyncio.ensure_future(r.ainvoke(Q))  # type: ignore[attr-defined]
        while gate.thread is None and not task.done():
            await asyncio.sleep(0.01)  # the loop runs while the compressor works
        gate.opened.set()
        return await task  # type: ignore[no-any-return]

    assert len(asyncio.run(main())) == 4
    assert gate.thread != "MainThread"

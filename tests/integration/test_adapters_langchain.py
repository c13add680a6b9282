"""The LangChain compressor inside ``ContextualCompressionRetriever``, with a real retriever subclass."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")
ccr = pytest.importorskip("langchain_classic.retrievers")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402

from admit.adapters._core import AdmitFilter  # noqa: E402
from admit.adapters.langchain import AdmitCompressor  # noqa: E402
from admit.errors import BackendError  # noqa: E402
from admit.prune.fake import FakeGrader  # noqa: E402

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


class ListRetriever(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.docs)


def test_compressor_in_contextual_compression_retriever_keeps_metadata() -> None:
    retriever = ccr.ContextualCompressionRetriever(
        base_compressor=AdmitCompressor(strategy="top_n", params={"n": 2}, keep_top_k=0),
        base_retriever=ListRetriever(docs=DOCS),
    )
    out = retriever.invoke("Which port does the registry listen on?")
    assert [d.id for d in out] == ["d2", "d3"]
    for d in out:
        src = next(x for x in DOCS if x.id == d.id)
        assert d.page_content == src.page_content
        assert {k: v for k, v in d.metadata.items() if k != "admit"} == src.metadata
        assert d.metadata["admit"]["strategy"] == "top_n"
        assert d.metadata["admit"]["grade"] == 5
    assert "admit" not in DOCS[1].metadata  # the caller's documents are not mutated


def test_retriever_scores_in_metadata_are_used_instead_of_bm25() -> None:
    docs = [Document(id=f"s{i}", page_content=f"text {i}", metadata={"score": float(i)}) for i in range(4)]
    comp = AdmitCompressor(strategy="top_n", params={"n": 1}, keep_top_k=0)
    out = comp.compress_documents(docs, "anything")
    assert [d.id for d in out] == ["s3"]


def test_pruner_failure_falls_back_inside_the_pipeline() -> None:
    failing = AdmitFilter(pruner=FakeGrader(fail=BackendError("down")), on_error="keep_top_k", keep_top_k=1)
    retriever = ccr.ContextualCompressionRetriever(
        base_compressor=AdmitCompressor(filter=failing), base_retriever=ListRetriever(docs=DOCS)
    )
    out = retriever.invoke("registry port")
    assert len(out) == 1
    assert out[0].metadata["admit"]["reason"] == "on_error: keep_top_k"

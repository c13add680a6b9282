"""The LlamaIndex postprocessor inside a ``RetrieverQueryEngine`` (retrieve and query, with MockLLM)."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from admit.adapters.llamaindex import AdmitNodePostprocessor

pytestmark = pytest.mark.integration

NODES = [
    TextNode(id_="n1", text="Bananas are yellow.", metadata={"file": "fruit.md", "page": 1}),
    TextNode(
        id_="n2", text="The registry listens on port 5000 by default.", metadata={"file": "config.md", "title": "Ports"}
    ),
    TextNode(id_="n3", text="Change the registry port with listen_port.", metadata={"file": "config.md", "k": [1]}),
    TextNode(id_="n4", text="Penguins cannot fly.", metadata={"file": "birds.md"}),
]


class ListRetriever(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=n, score=None) for n in NODES]


def _engine() -> RetrieverQueryEngine:
    post = AdmitNodePostprocessor(strategy="top_n", params={"n": 2}, keep_top_k=0)
    return RetrieverQueryEngine.from_args(ListRetriever(), llm=MockLLM(), node_postprocessors=[post])


def test_postprocessor_in_the_retriever_query_engine_keeps_metadata() -> None:
    nodes = _engine().retrieve(QueryBundle("Which port does the registry listen on?"))
    assert [n.node.node_id for n in nodes] == ["n2", "n3"]
    for n in nodes:
        src = next(x for x in NODES if x.node_id == n.node.node_id)
        assert n.node.get_content() == src.get_content()
        assert {k: v for k, v in n.node.metadata.items() if k != "admit"} == src.metadata
        assert n.node.metadata["admit"]["grade"] == 5
        assert "admit" in n.node.excluded_llm_metadata_keys
    assert "admit" not in NODES[1].metadata


def test_query_through_the_engine_uses_only_kept_nodes() -> None:
    resp = _engine().query("Which port does the registry listen on?")
    assert [n.node.node_id for n in resp.source_nodes] == ["n2", "n3"]


def test_postprocess_nodes_with_query_str() -> None:
    post = AdmitNodePostprocessor(strategy="top_n", params={"n": 1}, keep_top_k=0)
    scored = [NodeWithScore(node=n, score=float(i)) for i, n in enumerate(NODES)]
    out = post.postprocess_nodes(scored, query_str="anything")
    assert [n.node.node_id for n in out] == ["n4"]  # the retriever's scores win over BM25
    assert out[0].score == 3.0

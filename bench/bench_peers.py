"""Benchmark: admit beside the context filters users would pick instead, on the same questions and embeddings.

The peers are the frameworks' own classes, installed from their packages (``admit[langchain,llamaindex,haystack]``
plus ``langchain-classic``): LangChain's ``EmbeddingsFilter``, ``EmbeddingsRedundantFilter``, ``LLMChainFilter``
and ``LLMListwiseRerank``; LlamaIndex's ``SimilarityPostprocessor``, ``SentenceEmbeddingOptimizer`` and
``LLMRerank``; Haystack's ``LostInTheMiddleRanker`` and ``TopPSampler``. Every embedding-based one gets the same
all-MiniLM-L6-v2 vectors as admit, through its own framework's embedding interface, and the candidates' scores
are admit's dense MiniLM scores (what a MiniLM retriever would hand over). Each class's documented knobs are
swept; admit's ``setwise`` and ``top_n`` run in the same process on the same scores.

Reported per configuration and dataset (admit's own metric code, ``admit.eval.metrics``): retained recall (share
of questions keeping every required chunk), chunk and token compression, p50/p95 latency per question with the
MiniLM encoding time taken out (vectors are cached on disk, so a re-run encodes nothing), and per library class
the retained recall at 68% chunk compression interpolated along its Pareto front (``admit.eval.report``).

The LLM-based ones (LangChain's ``LLMChainFilter`` and ``LLMListwiseRerank``, LlamaIndex's ``LLMRerank``, admit's
``graded`` and ``select``) talk to one OpenAI-compatible endpoint: the project's test server
(``admit.testing.fault_server``), which answers at once in each library's expected format. Its answers are not
judgements, so only the cost side is reported: calls and prompt tokens per question (the request messages
counted with o200k_base) and the library's own overhead per question (wall time minus the server's time).

    python bench/bench_peers.py [--data ../shared/data] [--limit N] [--llm-limit M] [--json OUT.json]
                                [--embedder minilm|fake] [--cache DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from admit.backends.embedders import CachedEmbedder
from admit.backends.embedders.base import text_key
from admit.backends.rerankers.dense import DenseReranker
from admit.backends.tokenizers import resolve_tokenizer
from admit.eval.cache import default_cache_dir
from admit.eval.dataset import EvalRecord, expand_paths, load_datasets
from admit.eval.engine import TimedEmbedder, rank_order, settings_for
from admit.eval.metrics import QuestionResult, breakdowns, percentile
from admit.eval.report import pareto_front, recall_at
from admit.prune import resolve_pruner, run_pruner
from admit.prune.setwise_model import passages, question_text
from admit.types import Scored

TARGET_COMPRESSION = 0.68

# ---------------------------------------------------------------------------------------------- embeddings


class DiskCachedEmbedder(CachedEmbedder):
    """A :class:`CachedEmbedder` whose vectors persist in ``DIR/<model>.npz`` between runs."""

    def __init__(self, inner: TimedEmbedder, cache_dir: Path | None) -> None:
        super().__init__(inner, max_items=10_000_000)
        self.timed = inner
        stem = re.sub(r"[^\w.-]+", "_", inner.name)
        self.path = cache_dir / f"{stem}.npz" if cache_dir else None
        self._loaded = 0
        if self.path is not None and self.path.is_file():
            with np.load(self.path, allow_pickle=False) as z:
                keys, vecs = z["keys"], z["vectors"]
            self.seed(zip((str(k) for k in keys), vecs, strict=True), keys_are_hashes=True)
            self._loaded = len(keys)

    def save(self) -> None:
        if self.path is None or len(self) == self._loaded:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        items = self.export()
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(list(items)), vectors=np.stack(list(items.values())).astype(np.float32))
        os.replace(tmp, self.path)
        self._loaded = len(items)

    @property
    def encode_seconds(self) -> float:
        return self.timed.seconds


def make_embedder(name: str, cache_dir: Path | None) -> DiskCachedEmbedder:
    if name == "fake":
        from admit.backends.embedders.fake import FakeEmbedder

        inner: Any = FakeEmbedder()
    else:
        from admit.backends.embedders.minilm import MiniLMEmbedder

        inner = MiniLMEmbedder()
    return DiskCachedEmbedder(TimedEmbedder(inner), cache_dir)


def doc_text(title: str, text: str) -> str:
    """What every framework's document holds (and embeds): title and text, as the metrics count tokens."""
    return f"{title}\n{text}" if title else text


# -------------------------------------------------------------------------- the framework embedding wrappers


def langchain_embeddings(emb: DiskCachedEmbedder) -> Any:
    from langchain_core.embeddings import Embeddings

    class AdmitMiniLM(Embeddings):
        """LangChain's ``Embeddings`` interface over admit's (cached) MiniLM embedder."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in emb.embed(list(texts))]

        def embed_query(self, text: str) -> list[float]:
            return list(map(float, emb.embed([text])[0]))

    return AdmitMiniLM()


def llamaindex_embedding(emb: DiskCachedEmbedder) -> Any:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr

    class AdmitMiniLM(BaseEmbedding):  # type: ignore[misc]
        """LlamaIndex's ``BaseEmbedding`` interface over admit's (cached) MiniLM embedder."""

        _emb: Any = PrivateAttr()

        def __init__(self, inner: Any, **kw: Any) -> None:
            super().__init__(model_name=inner.name, embed_batch_size=256, **kw)
            self._emb = inner

        def _get_query_embedding(self, query: str) -> list[float]:
            return list(map(float, self._emb.embed([query])[0]))

        def _get_text_embedding(self, text: str) -> list[float]:
            return list(map(float, self._emb.embed([text])[0]))

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in self._emb.embed(list(texts))]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return AdmitMiniLM(emb)


# ------------------------------------------------------------------------------- the shared fake endpoint


def answer_in_each_format(body: Mapping[str, Any]) -> str | dict[str, Any] | None:
    """The test server's reply in the format the asking library parses (``None``: admit's grade map).

    No judgement is made: every document is kept or ranked in the order shown. Only costs are measured.
    """
    text = "\n".join(str(m.get("content") or "") for m in body.get("messages", []) if isinstance(m, Mapping))
    tools = body.get("tools") or []
    if tools:  # LangChain LLMListwiseRerank: structured output through a tool call
        fn = tools[0].get("function", {})
        ids = [int(i) for i in re.findall(r"Document ID:\s*(\d+)", text)]
        args = {"ranked_document_ids": ids}
        call = {
            "id": "call_0",
            "type": "function",
            "function": {"name": fn.get("name", ""), "arguments": json.dumps(args)},
        }
        return {"content": None, "tool_calls": [call]}
    if "return YES if the context is relevant" in text or "Return YES if the context" in text:
        return "YES"  # LangChain LLMChainFilter
    rf = body.get("response_format") or {}
    schema = ((rf.get("json_schema") or {}).get("schema") or rf.get("schema") or {}) if isinstance(rf, Mapping) else {}
    keep = (schema.get("properties") or {}).get("keep") if isinstance(schema, Mapping) else None
    if isinstance(keep, Mapping):  # admit select: keep every id offered
        return json.dumps({"keep": list((keep.get("items") or {}).get("enum") or [])})
    docs = re.findall(r"^Document (\d+):", text, re.MULTILINE)
    if docs:  # LlamaIndex LLMRerank (choice select)
        return "\n".join(f"Doc: {d}, Relevance: {max(1, 10 - k)}" for k, d in enumerate(docs))
    return None


class Endpoint:
    """A keep-alive HTTP client of the OpenAI chat API (one connection per thread), for the peers' LLM wrappers."""

    def __init__(self, base_url: str, model: str = "fake") -> None:
        u = urlparse(base_url)
        self.host, self.port, self.path = u.hostname or "127.0.0.1", u.port or 80, u.path.rstrip("/")
        self.model = model
        self._local = threading.local()

    def chat(self, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        body = json.dumps({"model": self.model, "messages": messages, **extra})
        conn.request("POST", f"{self.path}/chat/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = json.loads(resp.read())
        if resp.status != 200:
            raise RuntimeError(f"endpoint answered {resp.status}: {data}")
        msg: dict[str, Any] = data["choices"][0]["message"]
        return msg


def langchain_chat_model(endpoint: Endpoint) -> Any:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    roles = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}

    class EndpointChat(BaseChatModel):
        """A LangChain chat model over an OpenAI-compatible endpoint (tool calls for structured output)."""

        @property
        def _llm_type(self) -> str:
            return "openai-compatible-test-endpoint"

        def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
            kw: dict[str, Any] = {"tools": [convert_to_openai_tool(t) for t in tools]}
            if tool_choice:
                kw["tool_choice"] = "required" if tool_choice in {"any", True} else tool_choice
            return self.bind(**kw, **kwargs)

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
            extra = {k: v for k, v in kw.items() if k in {"tools", "tool_choice"}}
            msgs = [{"role": roles.get(m.type, "user"), "content": m.content} for m in messages]
            out = endpoint.chat(msgs, **extra)
            calls = [
                {"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]), "id": c.get("id")}
                for c in out.get("tool_calls") or []
            ]
            msg = AIMessage(content=out.get("content") or "", tool_calls=calls)
            return ChatResult(generations=[ChatGeneration(message=msg)])

    return EndpointChat()


def llamaindex_llm(endpoint: Endpoint) -> Any:
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    class EndpointLLM(CustomLLM):  # type: ignore[misc]
        """A LlamaIndex LLM over an OpenAI-compatible endpoint."""

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(context_window=32_768, num_output=512, model_name=endpoint.model)

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
            out = endpoint.chat([{"role": "user", "content": prompt}])
            return CompletionResponse(text=out.get("content") or "")

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
            yield self.complete(prompt, formatted=formatted)

    return EndpointLLM()


# ------------------------------------------------------------------------------------------------ methods


@dataclass
class Prepared:
    """One record with its dense scores and the objects each framework takes."""

    record: EvalRecord
    scores: list[float]
    ranked: list[Scored]
    tokens: dict[str, int]
    lc_docs: list[Any] = field(default_factory=list)
    li_nodes: list[Any] = field(default_factory=list)
    hs_docs: list[Any] = field(default_factory=list)


@dataclass
class Method:
    library: str
    cls: str
    config: str
    params: dict[str, Any]
    run: Callable[[Prepared], Any]
    """Returns the kept ids, or (kept ids, {id: the text left of it}) for a filter that shortens chunks."""
    llm: bool = False


def lc_runner(comp: Any) -> Callable[[Prepared], list[str]]:
    """A LangChain document compressor on a record's documents."""
    return lambda p: [d.metadata["id"] for d in comp.compress_documents(p.lc_docs, p.record.question)]


def tf_runner(transformer: Any) -> Callable[[Prepared], list[str]]:
    """A LangChain document transformer on a record's documents."""
    return lambda p: [d.metadata["id"] for d in transformer.transform_documents(p.lc_docs)]


def li_runner(post: Any) -> Callable[[Prepared], list[str]]:
    """A LlamaIndex node postprocessor on a record's nodes."""
    from llama_index.core.schema import QueryBundle

    return lambda p: [
        x.node.id_ for x in post.postprocess_nodes(p.li_nodes, query_bundle=QueryBundle(p.record.question))
    ]


def hs_runner(component: Any) -> Callable[[Prepared], list[str]]:
    """A Haystack component on a record's documents."""
    return lambda p: [d.id for d in component.run(documents=p.hs_docs)["documents"]]


def admit_runner(pruner: Any, params: Mapping[str, Any]) -> Callable[[Prepared], list[str]]:
    """An admit pruner on a record's reranked candidates."""
    settings = settings_for(params)
    return lambda p: list(run_pruner(pruner, p.record.question, p.ranked, settings).kept_ids)


def admit_methods(emb: DiskCachedEmbedder) -> list[Method]:
    setwise = resolve_pruner("setwise", embedder=emb)
    top_n = resolve_pruner("top_n")
    out = [
        Method("admit", "setwise", f"threshold={t} keep_top_k=1", p, admit_runner(setwise, p))
        for t in (2, 3, 4, 5)
        for p in [{"keep_top_k": 1, "threshold": t}]
    ]
    out += [
        Method("admit", "top_n", f"n={n}", p, admit_runner(top_n, p))
        for n in (1, 2, 3, 4, 5, 6, 8)
        for p in [{"n": n, "threshold": 5}]
    ]
    return out


def langchain_methods(emb: DiskCachedEmbedder) -> list[Method]:
    try:
        from langchain_classic.retrievers.document_compressors import EmbeddingsFilter
    except ImportError as exc:
        print(f"skipped LangChain embedding filters: {exc}", file=sys.stderr)
        return []
    lc_emb = langchain_embeddings(emb)
    out: list[Method] = []
    for t in (0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6):
        comp = EmbeddingsFilter(embeddings=lc_emb, similarity_threshold=t, k=None)
        params = {"similarity_threshold": t}
        out.append(Method("langchain", "EmbeddingsFilter", f"similarity_threshold={t}", params, lc_runner(comp)))
    for k in (1, 2, 3, 4, 5, 6, 8):
        comp = EmbeddingsFilter(embeddings=lc_emb, k=k, similarity_threshold=None)
        out.append(Method("langchain", "EmbeddingsFilter", f"k={k}", {"k": k}, lc_runner(comp)))
    try:
        from langchain_community.document_transformers import EmbeddingsRedundantFilter
    except ImportError as exc:
        print(f"skipped LangChain EmbeddingsRedundantFilter: {exc}", file=sys.stderr)
        return out
    for t in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
        red = EmbeddingsRedundantFilter(embeddings=lc_emb, similarity_threshold=t)
        params = {"similarity_threshold": t}
        out.append(
            Method("langchain", "EmbeddingsRedundantFilter", f"similarity_threshold={t}", params, tf_runner(red))
        )
    return out


def llamaindex_methods(emb: DiskCachedEmbedder) -> list[Method]:
    try:
        from llama_index.core.postprocessor import SentenceEmbeddingOptimizer, SimilarityPostprocessor
        from llama_index.core.schema import QueryBundle
    except ImportError as exc:
        print(f"skipped LlamaIndex: {exc}", file=sys.stderr)
        return []
    out: list[Method] = []
    for c in (0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6):
        post = SimilarityPostprocessor(similarity_cutoff=c)
        params = {"similarity_cutoff": c}
        out.append(Method("llamaindex", "SimilarityPostprocessor", f"similarity_cutoff={c}", params, li_runner(post)))
    li_emb = llamaindex_embedding(emb)
    for kw in (
        {"percentile_cutoff": 0.5},
        {"percentile_cutoff": 0.25},
        {"threshold_cutoff": 0.3},
        {"threshold_cutoff": 0.5},
    ):
        opt = SentenceEmbeddingOptimizer(embed_model=li_emb, **kw)

        def run_opt(p: Prepared, opt: Any = opt) -> tuple[list[str], dict[str, str]]:
            nodes = [n.model_copy(deep=True) for n in p.li_nodes]  # it rewrites the nodes' text
            kept = opt.postprocess_nodes(nodes, query_bundle=QueryBundle(p.record.question))
            # it shortens nodes rather than dropping them: a node counts as kept (for recall) when any of its
            # text is left, and its tokens are those of what is left
            left = {n.node.id_: n.node.get_content() for n in kept if n.node.get_content().strip()}
            return list(left), left

        cfg = " ".join(f"{k}={v}" for k, v in kw.items())
        out.append(Method("llamaindex", "SentenceEmbeddingOptimizer", cfg, dict(kw), run_opt))
    return out


def haystack_methods() -> list[Method]:
    try:
        from haystack.components.rankers import LostInTheMiddleRanker
        from haystack.components.samplers import TopPSampler
    except ImportError as exc:
        print(f"skipped Haystack: {exc}", file=sys.stderr)
        return []
    out: list[Method] = []
    for k in (1, 2, 3, 4, 5, 6, 8):
        r = LostInTheMiddleRanker(top_k=k)
        out.append(Method("haystack", "LostInTheMiddleRanker", f"top_k={k}", {"top_k": k}, hs_runner(r)))
    for w in (100, 200, 400, 800):
        r = LostInTheMiddleRanker(word_count_threshold=w)
        cfg, params = f"word_count_threshold={w}", {"word_count_threshold": w}
        out.append(Method("haystack", "LostInTheMiddleRanker", cfg, params, hs_runner(r)))
    for tp in (0.1, 0.2, 0.3, 0.5, 0.7, 0.9):
        out.append(Method("haystack", "TopPSampler", f"top_p={tp}", {"top_p": tp}, hs_runner(TopPSampler(top_p=tp))))
    return out


def llm_methods(endpoint: Endpoint, base_url: str) -> list[Method]:
    out: list[Method] = []
    try:
        from langchain_classic.retrievers.document_compressors import LLMChainFilter, LLMListwiseRerank

        chat = langchain_chat_model(endpoint)
        out.append(Method("langchain", "LLMChainFilter", "default", {}, lc_runner(LLMChainFilter.from_llm(chat)), True))
        for n in (3, 5):
            rr = LLMListwiseRerank.from_llm(chat, top_n=n)
            out.append(Method("langchain", "LLMListwiseRerank", f"top_n={n}", {"top_n": n}, lc_runner(rr), True))
    except ImportError as exc:
        print(f"skipped LangChain LLM filters: {exc}", file=sys.stderr)
    try:
        from llama_index.core.postprocessor import LLMRerank

        llm = llamaindex_llm(endpoint)
        for n, b in ((3, 10), (5, 10), (3, 5)):
            post = LLMRerank(llm=llm, top_n=n, choice_batch_size=b)
            cfg, params = f"top_n={n} choice_batch_size={b}", {"top_n": n, "choice_batch_size": b}
            out.append(Method("llamaindex", "LLMRerank", cfg, params, li_runner(post), True))
    except ImportError as exc:
        print(f"skipped LlamaIndex LLMRerank: {exc}", file=sys.stderr)
    try:
        for strat in ("graded", "select"):
            pruner = resolve_pruner(strat, llm_base_url=base_url, llm_model="fake")
            out.append(Method("admit", strat, "default", {}, admit_runner(pruner, {}), True))
    except ImportError as exc:
        print(f"skipped admit LLM strategies: {exc}", file=sys.stderr)
    return out


# ------------------------------------------------------------------------------------------------ running


def prepare(records: Sequence[EvalRecord], emb: DiskCachedEmbedder, tokenizer: Any) -> list[Prepared]:
    """Dense scores (admit's MiniLM reranker) and each framework's documents, per record."""
    # encode everything once, in large batches (what a re-run finds on disk)
    texts: list[str] = []
    for r in records:
        texts += [r.question, question_text(r.question)]
        for c in r.candidates:
            texts.append(doc_text(c.title, c.text))
            texts += [p or "-" for p in passages(c.title, c.text)]
    missing = list(dict.fromkeys(t for t in texts if text_key(t) not in emb._cache))
    for i in range(0, len(missing), 512):
        emb.embed(missing[i : i + 512])
        emb.save()
    reranker = DenseReranker(emb)
    have_lc = have_li = have_hs = True
    try:
        from langchain_core.documents import Document as LCDoc
    except ImportError:
        have_lc = False
    try:
        from llama_index.core.schema import NodeWithScore, TextNode
    except ImportError:
        have_li = False
    try:
        from haystack import Document as HSDoc
    except ImportError:
        have_hs = False
    out: list[Prepared] = []
    for r in records:
        scores = [float(s) for s in reranker.score(r.question, r.candidates)] if r.candidates else []
        order = rank_order(scores)
        ranked = [Scored(chunk=r.candidates[i], score=scores[i], rank=k) for k, i in enumerate(order)]
        toks = {c.id: tokenizer.count(doc_text(c.title, c.text)) for c in r.candidates}
        p = Prepared(record=r, scores=scores, ranked=ranked, tokens=toks)
        # every framework gets the candidates best first, as a retriever returns them
        best_first = [r.candidates[i] for i in order]
        if have_lc:
            p.lc_docs = [LCDoc(page_content=doc_text(c.title, c.text), metadata={"id": c.id}) for c in best_first]
        if have_li:
            p.li_nodes = [
                NodeWithScore(node=TextNode(id_=c.id, text=doc_text(c.title, c.text)), score=scores[i])
                for c, i in zip(best_first, order, strict=True)
            ]
        if have_hs:
            p.hs_docs = [
                HSDoc(id=c.id, content=doc_text(c.title, c.text), score=scores[i])
                for c, i in zip(best_first, order, strict=True)
            ]
        out.append(p)
    return out


def evaluate(
    method: Method,
    prepared: Sequence[Prepared],
    emb: DiskCachedEmbedder,
    server: Any = None,
    tokenizer: Any = None,
) -> dict[str, Any]:
    if prepared:  # warm-up, untimed: model loads, clients, first-call imports (the timed runs record failures)
        with contextlib.suppress(Exception):
            method.run(prepared[0])
    results: list[QuestionResult] = []
    llm_rows: list[dict[str, float]] = []
    errors = 0
    shrunk: dict[str, int] = {}
    for p in prepared:
        r = p.record
        enc0 = emb.encode_seconds
        n0 = server.count if server is not None else 0
        s0 = server.served_s if server is not None else 0.0
        t0 = time.perf_counter()
        left: dict[str, str] | None = None
        try:
            kept = method.run(p)
            if isinstance(kept, tuple):
                kept, left = kept
        except Exception as exc:  # a peer failing on a record is recorded, not fatal
            errors += 1
            if errors <= 3:
                print(f"{method.library}.{method.cls} {method.config} failed on {r.id}: {exc!r}", file=sys.stderr)
            kept = []
        wall = time.perf_counter() - t0
        encode = emb.encode_seconds - enc0
        if left is not None:
            shrunk[r.id] = sum(tokenizer.count(t) for t in left.values())
        results.append(
            QuestionResult(
                record_id=r.id,
                candidate_ids=tuple(c.id for c in r.candidates),
                kept_ids=tuple(kept),
                required=r.required,
                candidate_tokens=p.tokens,
                source=r.source,
                hop_type=r.hop_type,
                question_type=r.question_type,
                latency_s=max(wall - encode, 0.0),
            )
        )
        if server is not None:
            reqs = server.requests[n0:]
            prompt = sum(
                tokenizer.count(str(m.get("content") or ""))
                for q in reqs
                for m in q.body.get("messages", [])
                if isinstance(m, Mapping)
            )
            served = server.served_s - s0
            llm_rows.append(
                {"calls": len(reqs), "prompt_tokens": prompt, "wall_ms": wall * 1000, "server_ms": served * 1000}
            )
    summary = breakdowns(results, groups=("source",))
    if shrunk:  # token compression of what is left of the shortened chunks
        summary["overall"]["token_compression"] = _shrunk_compression(results, shrunk)
        for g, m in summary["by_source"].items():
            m["token_compression"] = _shrunk_compression([x for x in results if x.source == g], shrunk)
    row: dict[str, Any] = {
        "library": method.library,
        "class": method.cls,
        "config": method.config,
        "params": method.params,
        "errors": errors,
        "metrics": summary,
    }
    if method.llm and llm_rows:
        over = [x["wall_ms"] - x["server_ms"] for x in llm_rows]
        row["llm"] = {
            "questions": len(llm_rows),
            "calls_per_question": statistics.mean(x["calls"] for x in llm_rows),
            "prompt_tokens_per_question": statistics.mean(x["prompt_tokens"] for x in llm_rows),
            "wall_ms_p50": percentile([x["wall_ms"] for x in llm_rows], 50),
            "server_ms_p50": percentile([x["server_ms"] for x in llm_rows], 50),
            "overhead_ms_p50": percentile(over, 50),
            "overhead_ms_p95": percentile(over, 95),
        }
    return row


def _shrunk_compression(results: Sequence[QuestionResult], left_tokens: Mapping[str, int]) -> float:
    total = sum(x.total_tokens for x in results)
    kept = sum(left_tokens.get(x.record_id, 0) for x in results)
    return 1 - kept / total if total else 0.0


def r_at(rows: Sequence[Mapping[str, Any]], group: str | None, axis: str = "chunk") -> float | None:
    """Retained recall at 68% compression (chunk or token axis) along a class's configurations' Pareto front."""
    pts = []
    for row in rows:
        if row["errors"]:  # a configuration that raised on some questions is no operating point
            continue
        m = row["metrics"]["overall"] if group is None else row["metrics"]["by_source"].get(group)
        if m is not None:
            pts.append((float(m[f"{axis}_compression"]), float(m["retained_recall"]), row["config"]))
    return recall_at(pareto_front(pts), TARGET_COMPRESSION) if pts else None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--limit", type=int, default=None, help="questions per dataset file")
    ap.add_argument("--llm-limit", type=int, default=10, help="questions per dataset file for the LLM-based ones")
    ap.add_argument("--embedder", choices=("minilm", "fake"), default="minilm")
    ap.add_argument("--cache", default=str(default_cache_dir() / "peers"), help="embedding cache folder ('' for none)")
    ap.add_argument("--json", default=None, help="write every figure here")
    ap.add_argument("--skip-llm", action="store_true")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")

    records = load_datasets(expand_paths([args.data]), limit=args.limit)
    tokenizer = resolve_tokenizer("gpt-4o")
    emb = make_embedder(args.embedder, Path(args.cache) if args.cache else None)
    t0 = time.perf_counter()
    prepared = prepare(records, emb, tokenizer)
    emb.save()
    prep_s = time.perf_counter() - t0
    print(
        f"{len(records)} questions, {sum(len(r.candidates) for r in records)} candidates; "
        f"prepared in {prep_s:.1f} s ({emb.encode_seconds:.1f} s encoding)",
        file=sys.stderr,
    )

    methods = [*admit_methods(emb), *langchain_methods(emb), *llamaindex_methods(emb), *haystack_methods()]
    rows = []
    for m in methods:
        rows.append(evaluate(m, prepared, emb, tokenizer=tokenizer))
        o = rows[-1]["metrics"]["overall"]
        print(
            f"  {m.library}.{m.cls} {m.config}: comp {o['chunk_compression']:.3f} recall {o['retained_recall']:.3f}",
            file=sys.stderr,
        )
    emb.save()

    llm_rows: list[dict[str, Any]] = []
    if not args.skip_llm:
        from admit.testing.fault_server import FaultServer

        per_file: dict[str, int] = {}
        subset = []
        for p in prepared:
            if per_file.get(p.record.source, 0) < args.llm_limit:
                per_file[p.record.source] = per_file.get(p.record.source, 0) + 1
                subset.append(p)
        with FaultServer(answer=answer_in_each_format) as srv:
            endpoint = Endpoint(srv.base_url)
            for m in llm_methods(endpoint, srv.base_url):
                llm_rows.append(evaluate(m, subset, emb, server=srv, tokenizer=tokenizer))
                print(f"  {m.library}.{m.cls} {m.config}: {llm_rows[-1].get('llm')}", file=sys.stderr)

    groups = sorted({r.source for r in records})
    families: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        families.setdefault((row["library"], row["class"]), []).append(row)
    r68 = {
        f"{lib}.{cls}": {
            "all": r_at(fr, None),
            **{g: r_at(fr, g) for g in groups},
            "all_tokens": r_at(fr, None, "token"),
        }
        for (lib, cls), fr in families.items()
    }

    out = {
        "data": args.data,
        "limit": args.limit,
        "llm_limit": args.llm_limit,
        "questions": len(records),
        "embedder": emb.name,
        "datasets": groups,
        "target_compression": TARGET_COMPRESSION,
        "configs": rows,
        "recall_at_68": r68,
        "llm": llm_rows,
    }
    print(render_markdown(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str), "utf-8")
    return 0


def _f(x: float | None, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def render_markdown(out: Mapping[str, Any]) -> str:
    groups = out["datasets"]
    lines = [
        f"{out['questions']} questions; embeddings: {out['embedder']} (cached, encoding time not in latencies).",
        "",
        f"Retained recall at {out['target_compression']:.0%} chunk compression (and, in the last but two column, "
        "token compression), interpolated along the Pareto front of each class's swept configurations that ran "
        "on every question (`-`: none compresses that much).",
        "",
        "| library | class | all | "
        + " | ".join(groups)
        + " | all, token axis | configs | p50 / p95 ms per question |",
        "|---|---|---|" + "---|" * len(groups) + "---|---|---|",
    ]
    fams: dict[str, list[Mapping[str, Any]]] = {}
    for row in out["configs"]:
        fams.setdefault(f"{row['library']}.{row['class']}", []).append(row)
    for key, rows in fams.items():
        r = out["recall_at_68"][key]
        p50 = statistics.median(x["metrics"]["overall"]["latency_ms_p50"] for x in rows)
        p95 = statistics.median(x["metrics"]["overall"]["latency_ms_p95"] for x in rows)
        lib, cls = key.split(".", 1)
        lines.append(
            f"| {lib} | `{cls}` | {_f(r['all'])} | "
            + " | ".join(_f(r[g]) for g in groups)
            + f" | {_f(r['all_tokens'])} | {len(rows)} | {p50:.2f} / {p95:.2f} |"
        )
    lines += ["", "Every configuration (all datasets): chunk compression / token compression / retained recall.", ""]
    lines += [
        "| library | class | configuration | chunk comp | token comp | recall | p50 / p95 ms | failed questions |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in out["configs"]:
        o = row["metrics"]["overall"]
        lines.append(
            f"| {row['library']} | `{row['class']}` | `{row['config']}` | {o['chunk_compression']:.3f} | "
            f"{o['token_compression']:.3f} | {o['retained_recall']:.3f} | "
            f"{o['latency_ms_p50']:.2f} / {o['latency_ms_p95']:.2f} | {row['errors']} |"
        )
    if out["llm"]:
        lines += [
            "",
            "LLM-based, against the instant test server (answers are not judgements: cost side only).",
            "",
            "| library | class | configuration | questions | calls / question | prompt tokens / question | "
            "overhead p50 / p95 ms |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in out["llm"]:
            x = row.get("llm") or {}
            if not x:
                continue
            lines.append(
                f"| {row['library']} | `{row['class']}` | `{row['config']}` | {x['questions']} | "
                f"{x['calls_per_question']:.2f} | {x['prompt_tokens_per_question']:.0f} | "
                f"{x['overhead_ms_p50']:.2f} / {x['overhead_ms_p95']:.2f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())

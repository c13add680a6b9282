"""Benchmark: the Haystack adapter's first run with and without ``warm_up()``, and stored vectors reused or not.

Each measurement runs in a fresh process (so the model is really cold), on the README demo's documents
(``examples/docs``, cut into sections by admit's own parser, one Haystack ``Document`` per section, embedded with
admit's MiniLM the way a store written with the same model holds them):

* ``cold``: ``Pipeline.run`` as the first call (the baseline: what issue 19 measured at 5.6-6.5 s).
* ``warm``: ``Pipeline.warm_up()`` first (timed apart), then the first ``run``.
* ``reuse`` / ``ignore``: a warm pipeline on ``k`` retrieved documents whose ``Document.embedding`` is set;
  ``embeddings="auto"`` (one document checked against admit's model, the rest reused) against ``"ignore"``
  (every document encoded again). Texts encoded are counted, not only timed.

    python bench/bench_adapters.py [--k 10] [--repeat 3]
    python bench/bench_adapters.py --loop [--repeat 3]   # event-loop lag of a cold run_async, plain vs quiet
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "What does error E4012 mean and how do I fix it?",
    "Which port does the server listen on?",
    "What changed in 2.1.0?",
    "How do I take a backup?",
]


def _child(mode: str, k: int) -> dict[str, float]:
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from admit.adapters._core import AdmitFilter
    from admit.adapters.haystack import AdmitPruner
    from admit.backends.embedders import resolve_embedder
    from admit.backends.embedders.base import CachedEmbedder
    from admit.kb.ingest import parse_document

    sections: list[str] = []
    for f in sorted((REPO / "examples" / "docs").glob("*.md")):
        doc = parse_document(f.read_text(), "markdown", fallback_title=f.stem)
        sections.extend(" ".join(s.paragraphs) for s in doc.sections if s.paragraphs)

    class Counting:
        def __init__(self) -> None:
            self.inner = resolve_embedder("minilm")
            self.name, self.dim, self.n = self.inner.name, self.inner.dim, 0

        def embed(self, texts):  # type: ignore[no-untyped-def]
            self.n += len(texts)
            return self.inner.embed(texts)

    counter = Counting()
    cached = CachedEmbedder(counter)
    store = InMemoryDocumentStore()
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    if mode in {"reuse", "ignore"}:
        # what the store holds: vectors written at indexing time (by a separate embedder, not admit's cache)
        writer = resolve_embedder("minilm")
        vecs = writer.embed(sections)
        store.write_documents(
            [
                Document(id=f"s{i}", content=t, embedding=v.tolist())
                for i, (t, v) in enumerate(zip(sections, vecs, strict=True))
            ]
        )
    else:
        store.write_documents([Document(id=f"s{i}", content=t) for i, t in enumerate(sections)])
    embeddings = "ignore" if mode == "ignore" else "auto"
    comp = AdmitPruner(admit_filter=AdmitFilter(pruner_options={"embedder": cached}, embeddings=embeddings))
    p = Pipeline()
    if mode in {"reuse", "ignore"}:
        p.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=k, return_embedding=True))
    else:
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

        p.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=k))
    p.add_component("admit", comp)
    p.connect("retriever.documents", "admit.documents")
    out["setup_s"] = time.perf_counter() - t0
    if mode != "cold":
        t0 = time.perf_counter()
        p.warm_up()
        out["warm_up_s"] = time.perf_counter() - t0
    runs: list[float] = []
    encoded: list[int] = []
    for q in QUESTIONS:
        inputs: dict[str, dict[str, object]] = {"admit": {"query": q}}
        if mode in {"reuse", "ignore"}:
            inputs["retriever"] = {"query_embedding": resolve_embedder("minilm").embed([q])[0].tolist()}
        else:
            inputs["retriever"] = {"query": q}
        before = counter.n
        t0 = time.perf_counter()
        p.run(inputs)
        runs.append(time.perf_counter() - t0)
        encoded.append(counter.n - before)
    out["first_run_s"] = runs[0]
    out["later_runs_median_s"] = statistics.median(runs[1:])
    out["texts_encoded_per_run"] = statistics.mean(encoded[1:]) if mode != "cold" else statistics.mean(encoded)
    return out


def _loop_child(mode: str) -> dict[str, float]:
    """A cold async call (Haystack and torch imported) beside an event loop, with a loop-lag probe: ``plain``
    runs it as main did (``asyncio.to_thread(run)``), ``quiet`` through ``run_async`` (the model loaded with
    full GC passes held off). Counts full (generation-2) collections during the call and the RSS it adds."""
    import asyncio
    import gc
    import resource

    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    import torch  # noqa: F401  (Haystack's own imports bring it in; imported here whatever the version does)
    from haystack import Document

    from admit.adapters._core import AdmitFilter
    from admit.adapters.haystack import AdmitPruner
    from admit.kb.ingest import parse_document

    sections: list[str] = []
    for f in sorted((REPO / "examples" / "docs").glob("*.md")):
        doc = parse_document(f.read_text(), "markdown", fallback_title=f.stem)
        sections.extend(" ".join(s.paragraphs) for s in doc.sections if s.paragraphs)
    docs = [Document(id=f"s{i}", content=t) for i, t in enumerate(sections[:10])]
    comp = AdmitPruner(admit_filter=AdmitFilter())
    full = [0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full[0] += 1

    async def go() -> dict[str, float]:
        lag = [0.0]
        done = asyncio.Event()

        async def probe() -> None:
            while not done.is_set():
                t = time.perf_counter()
                await asyncio.sleep(0.001)
                lag[0] = max(lag[0], time.perf_counter() - t - 0.001)

        task = asyncio.create_task(probe())
        await asyncio.sleep(0.05)
        lag[0] = 0.0
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        gc.callbacks.append(on_gc)
        t0 = time.perf_counter()
        if mode == "idle":  # the probe alone, as long as a cold call: the lag the machine's load gives anyway
            await asyncio.sleep(3.0)
        elif mode == "plain":
            await asyncio.to_thread(comp.run, QUESTIONS[0], docs)
        else:
            await comp.run_async(QUESTIONS[0], docs)
        wall = time.perf_counter() - t0
        gc.callbacks.remove(on_gc)
        done.set()
        await task
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {
            "max_lag_ms": lag[0] * 1000,
            "full_gcs": full[0],
            "first_call_s": wall,
            "peak_rss_added_mib": (rss1 - rss0) / 1024,
        }

    return asyncio.run(go())


def main() -> None:
    """Run each mode in a fresh process and print one table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--loop", action="store_true", help="the event-loop lag of a cold async call, plain vs quiet")
    args = ap.parse_args()
    if args.child:
        out = _loop_child(args.child[5:]) if args.child.startswith("loop-") else _child(args.child, args.k)
        print(json.dumps(out))
        return
    if args.loop:
        lag: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.repeat):
            for mode in ("idle", "plain", "quiet"):  # alternated, so load drifts hit both
                res = subprocess.run(
                    [sys.executable, __file__, "--child", f"loop-{mode}"],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={**os.environ, "HF_HUB_OFFLINE": "1"},
                )
                lag.setdefault(mode, []).append(json.loads(res.stdout.strip().splitlines()[-1]))
        print(f"Haystack AdmitPruner cold async call beside an event loop (torch imported), median of {args.repeat}")
        print(f"{'mode':8} {'max loop lag ms':>16} {'full GCs':>9} {'first call s':>13} {'peak RSS added MiB':>19}")
        for mode, rs in lag.items():
            row = [
                statistics.median(r[k] for r in rs)
                for k in ("max_lag_ms", "full_gcs", "first_call_s", "peak_rss_added_mib")
            ]
            print(f"{mode:8} {row[0]:>16.1f} {row[1]:>9.0f} {row[2]:>13.2f} {row[3]:>19.0f}")
        print(
            "baseline: `plain` (asyncio.to_thread(run), as on main b95dbc1); `quiet`: run_async (model loaded quietly)"
        )
        return
    rows: dict[str, list[dict[str, float]]] = {}
    for mode in ("cold", "warm", "reuse", "ignore"):
        for _ in range(args.repeat):
            res = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--k", str(args.k)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
            )
            rows.setdefault(mode, []).append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(
        f"Haystack AdmitPruner (setwise), k={args.k}, {len(QUESTIONS)} questions, median of {args.repeat} process(es)"
    )
    print(f"{'mode':8} {'warm_up s':>10} {'first run s':>12} {'later run s':>12} {'texts encoded/run':>18}")
    for mode, rs in rows.items():

        def med(key: str, rs: list[dict[str, float]] = rs) -> str:
            vals = [r[key] for r in rs if key in r]
            return f"{statistics.median(vals):.3f}" if vals else "-"

        print(
            f"{mode:8} {med('warm_up_s'):>10} {med('first_run_s'):>12} {med('later_runs_median_s'):>12} "
            f"{med('texts_encoded_per_run'):>18}"
        )
    print("baseline: `cold` (no warm_up, the behaviour before issue 19) and `ignore` (every document re-encoded)")


if __name__ == "__main__":
    main()

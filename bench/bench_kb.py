"""Benchmark the embedded knowledge base.

1. Store write throughput (chunks/s) for 20k chunks, and filtered top-30 hybrid query latency (p50/p95) beside an
   unfiltered query over the same 20k rows as the baseline (same SQL without the tenant/ACL restriction).
2. End-to-end ingest throughput of the sample corpus with the real MiniLM embedder.
3. End-to-end ``KnowledgeBase.search`` latency split by stage (from the trace's ``latency_ms``).
4. Ingest throughput (chunks/s) of the RHDH guides (``../shared/data/rhdh_docs_raw``) with the real MiniLM
   (numpy, the default), and with ``--baseline`` the torch MiniLM (sentence-transformers) on the same files in the
   same run (``--rhdh-files N`` takes the first N guides; the torch run on all 28 takes minutes).

Passages come from ../shared/data/corpus/corpus.jsonl when present (split into sentence pairs to reach 20k),
else generated text. Vectors for the 20k store come from ``--embedder`` (default ``fake:384``, a hashed
bag-of-words of MiniLM's dimension, so the run takes seconds; ``minilm`` embeds all 20k for real).

    python bench/bench_kb.py [--chunks 20000] [--queries 200] [--embedder fake:384|minilm]
    python bench/bench_kb.py --rhdh-only [--rhdh-files 28] [--baseline]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from admit.backends.embedders import resolve_embedder, text_key
from admit.kb import KnowledgeBase, parse_principal
from admit.kb.sqlite_store import SqliteStore
from admit.kb.store import ChunkRecord, fts_terms
from admit.types import Access, Principal

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "corpus" / "corpus.jsonl"
WORDS = [
    "registry",
    "quota",
    "token",
    "blob",
    "layer",
    "image",
    "push",
    "pull",
    "tag",
    "digest",
    "cache",
    "disk",
    "port",
    "server",
    "client",
    "session",
]


def passages(n: int) -> tuple[list[str], str]:
    out: list[str] = []
    if CORPUS.is_file():
        for line in CORPUS.open(encoding="utf-8"):
            text = json.loads(line).get("text", "")
            sents = re.split(r"(?<=[.!?])\s+", text)
            out.extend(" ".join(sents[i : i + 2]) for i in range(0, len(sents), 2) if sents[i].strip())
            if len(out) >= n:
                return out[:n], f"{CORPUS.name} (sentence pairs)"
        if out:  # cycle the real passages, each copy a distinct chunk
            base = list(out)
            while len(out) < n:
                out.append(f"{base[len(out) % len(base)]} (copy {len(out) // len(base)})")
            return out[:n], f"{CORPUS.name} (sentence pairs, cycled)"
    rng = np.random.default_rng(0)
    while len(out) < n:
        out.append(" ".join(rng.choice(WORDS, size=40)))
    return out[:n], "generated"


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


def bench_store(n: int, queries: int, embedder_spec: str) -> None:
    texts, origin = passages(n)
    emb = resolve_embedder(embedder_spec)
    t0 = time.perf_counter()
    vecs = np.concatenate([emb.embed(texts[i : i + 256]) for i in range(0, len(texts), 256)])
    t_embed = time.perf_counter() - t0
    tenants = ["t0", "t1", "t2", "t3"]
    recs = [
        ChunkRecord(
            id=f"doc{i // 8}#s{i % 8}",
            source_id=f"doc{i // 8}",
            text=t,
            embedding=vecs[i],
            text_hash=text_key(t),
            title=f"Document {i // 8}",
            access=Access(tenant=tenants[(i // 8) % 4], groups=() if i % 3 else ("g1",)),
            language="en",
            ordinal=i % 8,
        )
        for i, t in enumerate(texts)
    ]
    with tempfile.TemporaryDirectory() as d:
        store = SqliteStore(Path(d) / "bench.sqlite", dim=emb.dim)
        t0 = time.perf_counter()
        for i in range(0, n, 1000):
            store.upsert(recs[i : i + 1000])
        t_write = time.perf_counter() - t0
        rng = np.random.default_rng(1)
        qidx = rng.choice(n, size=queries, replace=False)
        qtexts = [" ".join(texts[int(i)].split()[:8]) for i in qidx]
        qvecs = emb.embed(qtexts)
        who = Principal(tenant="t1", groups=("g1",))
        for j in range(5):  # warm the page cache
            store.search(qtexts[j], qvecs[j], principal=who, k=30)
        lat_f, lat_u = [], []
        conn = store._conn()
        for qt, qv in zip(qtexts, qvecs, strict=True):
            t0 = time.perf_counter()
            hits = store.search(qt, qv, principal=who, k=30)
            lat_f.append((time.perf_counter() - t0) * 1000)
            assert all(h.record.tenant == "t1" for h in hits)
            match = " OR ".join(f'"{t}"' for t in fts_terms(qt))
            t0 = time.perf_counter()  # baseline: the same two ranked queries with no authorization filter
            lex = (
                conn.execute(
                    "SELECT rowid, bm25(chunks_fts, 0.5, 1.0) s FROM chunks_fts WHERE chunks_fts MATCH ? "
                    "ORDER BY s LIMIT 60",
                    (match,),
                ).fetchall()
                if match
                else []
            )
            vec = conn.execute(
                "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = 60", (qv.tobytes(),)
            ).fetchall()
            store._fetch(conn, list({r[0] for r in lex + vec})[:30])
            lat_u.append((time.perf_counter() - t0) * 1000)
        store.close()
    print(f"corpus: {n} chunks from {origin}; vectors: {emb.name} ({emb.dim}-d), embedded in {t_embed:.1f}s")
    print(f"store write: {n / t_write:,.0f} chunks/s ({t_write:.2f}s for {n}, 1000 per transaction)")
    print(
        f"filtered top-30 hybrid (tenant t1 = 1/4 of rows, ACL groups): p50 {pct(lat_f, 50):.2f} ms, "
        f"p95 {pct(lat_f, 95):.2f} ms over {queries} queries"
    )
    print(
        f"baseline unfiltered top-30 (same FTS5 + vec0 KNN, no tenant/ACL): p50 {pct(lat_u, 50):.2f} ms, "
        f"p95 {pct(lat_u, 95):.2f} ms"
    )


def bench_e2e(queries: int) -> None:
    docs = ROOT / "examples" / "docs"
    questions = [
        "What does error E4012 mean?",
        "Which port does the server listen on?",
        "How do I take a consistent backup?",
        "What is HL_MAX_CONN?",
        "Why does disk usage keep growing after deleting tags?",
        "What changed in 2.1.0?",
        "How much memory does Harbor Lite need?",
        "How do I upgrade from 1.x?",
    ]
    with tempfile.TemporaryDirectory() as d:
        kb = KnowledgeBase(Path(d) / "demo.kb", embedder="minilm")
        t0 = time.perf_counter()
        kb.embedder.embed(["warm up"])  # model load, reported apart
        t_load = time.perf_counter() - t0
        rep = kb.ingest([docs], registry=ROOT / "examples" / "sources.toml")
        print(
            f"ingest with MiniLM (model load {t_load:.1f}s apart): {rep.chunks_written} chunks from {rep.files} files "
            f"in {rep.seconds:.2f}s = {rep.chunks_per_second:.1f} chunks/s"
        )
        who = parse_principal("tenant:acme")
        stages: dict[str, list[float]] = {}
        kb.search(questions[0], who)
        for i in range(queries):
            q = questions[i % len(questions)]
            res = kb.search(q if i < len(questions) else f"{q} (asked again, {i})", who, prune=False)
            for k, v in res.trace["latency_ms"].items():
                stages.setdefault(k, []).append(float(v))
        kb.close()
    print(f"end-to-end KnowledgeBase.search (prune off, {queries} queries), ms per stage p50 / p95:")
    for k, v in stages.items():
        print(f"  {k:22s} {statistics.median(v):8.2f} {pct(v, 95):8.2f}")


RHDH = ROOT.parent / "shared" / "data" / "rhdh_docs_raw"


def bench_ingest_rhdh(files: int | None, baseline: bool) -> None:
    import os

    if not RHDH.is_dir():
        print(f"no RHDH guides at {RHDH}: ingest throughput skipped")
        return
    paths = sorted(RHDH.glob("*.md"))[:files] if files else sorted(RHDH.glob("*.md"))
    size = sum(p.stat().st_size for p in paths)
    print(f"ingest of {len(paths)} RHDH guides ({size / 1e3:,.0f} kB); load average {os.getloadavg()[0]:.1f}")
    for spec in ("minilm", *(("minilm-torch",) if baseline else ())):
        with tempfile.TemporaryDirectory() as d:
            kb = KnowledgeBase(Path(d) / "rhdh.kb", embedder=spec)
            t0 = time.perf_counter()
            kb.embedder.embed(["warm up"])  # model load, reported apart
            t_load = time.perf_counter() - t0
            rep = kb.ingest(paths, tenant="rhdh")
            kb.close()
        label = "numpy MiniLM (default)" if spec == "minilm" else "torch MiniLM (sentence-transformers, baseline)"
        print(
            f"  {label}: {rep.chunks_written} chunks ({rep.chunks_embedded} embedded) in {rep.seconds:.1f} s = "
            f"{rep.chunks_per_second:.2f} chunks/s (model load {t_load:.1f} s apart)"
        )
    print(f"  load average at the end {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedder", default="fake:384")
    ap.add_argument("--skip-e2e", action="store_true")
    ap.add_argument("--rhdh-only", action="store_true", help="only the RHDH ingest throughput")
    ap.add_argument("--rhdh-files", type=int, default=None, help="the first N RHDH guides (default: all)")
    ap.add_argument("--baseline", action="store_true", help="also ingest the RHDH guides with the torch MiniLM")
    a = ap.parse_args()
    if not a.rhdh_only:
        bench_store(a.chunks, a.queries, a.embedder)
        if not a.skip_e2e:
            bench_e2e(min(a.queries, 40))
    bench_ingest_rhdh(a.rhdh_files, a.baseline)


if __name__ == "__main__":
    main()

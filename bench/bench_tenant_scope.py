"""Does another tenant's data move a caller's lexical scores or latency? (issue 47, item 1)

Two measurements on a store (``--store sqlite|qdrant|memory``; Qdrant in the client's local mode):

1. The BM25 oracle: acme holds one chunk naming "Quuxifer" among its notes; globex adds k chunks naming it
   (k = 0, 1, 5, 20, 100). Printed: acme's lexical score of that chunk and its rank, for each k. With statistics
   over every tenant's rows the score falls as k grows; per tenant it stays put.
2. Latency: acme's "What changed in 9.4.2?" (and two more questions) against two stores that differ only in
   globex's ``--globex`` chunks headed "9.4.2"; p50 of each over ``--queries`` rounds, interleaved, and their ratio
   (both measured in the same run, so a loaded machine shows in both).

Run it against another checkout's code with ``PYTHONPATH=that/src`` to compare (the store API is the same).

    python bench/bench_tenant_scope.py [--store sqlite] [--acme 2000] [--globex 20000] [--queries 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from admit.backends.embedders import text_key
from admit.kb.store import ChunkRecord, Store
from admit.types import Access, Principal

DIM = 64
ACME = Principal(tenant="acme")
QUESTIONS = ["What changed in 9.4.2?", "How do I restart the Quuxifer?", "login page widget settings"]


def _vec(seed: str) -> np.ndarray:
    v = np.random.default_rng(int(text_key(seed)[:8], 16)).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _rec(cid: str, tenant: str, title: str, text: str) -> ChunkRecord:
    return ChunkRecord(
        id=cid,
        source_id=cid.split("#")[0],
        text=text,
        embedding=_vec(cid),
        text_hash=text_key(text),
        title=title,
        heading_path=(title,),
        access=Access(tenant=tenant),
        language="en",
        origin=f"/docs/{cid}.md",
    )


def _acme(n: int) -> list[ChunkRecord]:
    out = [_rec("quux#0", "acme", "Quuxifer", "Restart the Quuxifer after every upgrade of the widget.")]
    out.append(_rec("rel#942", "acme", "9.4.2", "What changed: the widget cache and the login page."))
    words = ["widget", "login", "cache", "page", "team", "colour", "upgrade", "nightly", "release", "settings"]
    for i in range(n - 2):
        ws = [words[(i * 7 + j) % len(words)] for j in range(6)]
        out.append(_rec(f"note{i}#0", "acme", f"Note {i}", f"Note {i}: " + " ".join(ws) + "."))
    return out


def _globex(n: int, start: int = 0) -> list[ChunkRecord]:
    return [
        _rec(f"g{i}#0", "globex", "9.4.2", f"9.4.2 notes {i}: the Quuxifer Quuxifer changed in release 9.4.2.")
        for i in range(start, start + n)
    ]


def _open(kind: str, where: Path, name: str) -> Store:
    if kind == "sqlite":
        from admit.kb.sqlite_store import SqliteStore

        return SqliteStore(where / f"{name}.sqlite", dim=DIM)
    if kind == "qdrant":
        from admit.kb.qdrant_store import QdrantStore

        return QdrantStore(path=":memory:", dim=DIM, collection=name)
    from admit.kb.memory_store import MemoryStore

    return MemoryStore(dim=DIM)


def _write(store: Store, records: list[ChunkRecord]) -> None:
    for i in range(0, len(records), 1000):
        store.upsert(records[i : i + 1000])


def oracle(kind: str, where: Path) -> None:
    store = _open(kind, where, "oracle")
    _write(store, _acme(50))
    have = 0
    print(f"[{kind}] acme's lexical score of its Quuxifer chunk as globex adds k chunks naming it")
    for k in (0, 1, 5, 20, 100):
        _write(store, _globex(k - have, start=have))
        have = k
        hits = store.search("Quuxifer", _vec("q"), principal=ACME, k=10)
        mine = [(h.bm25, h.bm25_rank) for h in hits if h.record.id == "quux#0"]
        score, rank = mine[0] if mine else (None, None)
        print(f"  k={k:>3}: bm25 {score if score is None else round(score, 6)}, lexical rank {rank}")
    store.close()


def latency(kind: str, where: Path, acme: int, globex: int, queries: int) -> None:
    quiet, busy = _open(kind, where, "quiet"), _open(kind, where, "busy")
    mine = _acme(acme)
    _write(quiet, mine)
    _write(busy, _globex(globex // 2))
    _write(busy, mine)
    _write(busy, _globex(globex - globex // 2, start=globex // 2))
    qv = {q: _vec(q) for q in QUESTIONS}
    times: dict[str, dict[str, list[float]]] = {"quiet": {q: [] for q in QUESTIONS}, "busy": {q: [] for q in QUESTIONS}}
    same = True
    for _ in range(queries):
        for q in QUESTIONS:
            got: dict[str, Any] = {}
            for name, store in (("quiet", quiet), ("busy", busy)):
                t0 = time.perf_counter()
                hits = store.search(q, qv[q], principal=ACME, k=30)
                times[name][q].append((time.perf_counter() - t0) * 1000)
                got[name] = [h.as_dict() for h in hits]
            same = same and got["quiet"] == got["busy"]
    print(f"[{kind}] acme {acme:,} chunks; globex 0 vs {globex:,} chunks headed 9.4.2; {queries} rounds, interleaved")
    for q in QUESTIONS:
        a, b = statistics.median(times["quiet"][q]), statistics.median(times["busy"][q])
        print(f"  {q!r}: p50 {a:.2f} ms alone, {b:.2f} ms beside globex: {b / a:.2f}x")
    print(f"  acme's answers identical in both stores: {same}")
    quiet.close()
    busy.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", choices=["sqlite", "qdrant", "memory"], default="sqlite")
    ap.add_argument("--acme", type=int, default=2000)
    ap.add_argument("--globex", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--skip-oracle", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if not a.skip_oracle:
            oracle(a.store, Path(d))
        latency(a.store, Path(d), a.acme, a.globex, a.queries)


if __name__ == "__main__":
    main()

"""Load and durability, short versions for CI (the long run is ``bench/bench_load.py``).

* 10 clients for 10 s against ``/v1/search`` of a real ``admit serve`` subprocess: zero errors (latency and
  memory figures are printed, not asserted).
* Ingest while searching: readers never miss a document that exists, writers' new documents all arrive.
* A crash (SIGKILL) in the middle of an ingest leaves the previous version readable: the store passes SQLite's
  integrity check and every source is wholly old or wholly new.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.backends.embedders import FakeEmbedder
from admit.kb import KnowledgeBase
from admit.types import Principal

REPO = Path(__file__).resolve().parents[2]
ACME = Principal(tenant="acme")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_load", REPO / "bench" / "bench_load.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_load"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.integration
def test_short_load_against_search_has_no_errors(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    bl = _bench()
    n = bl.build_kb(tmp_path / "kb.sqlite", REPO / "examples" / "docs", embedder="fake")
    assert n > 5
    cfg = bl.write_config(tmp_path)
    with bl.start_server(tmp_path / "kb.sqlite", cfg) as (url, pid):
        with bl.rss_sampler(pid) as samples:
            res = bl.run_load(
                url, "/v1/search", clients=10, duration_s=10, body=bl.search_body, headers={"X-API-Key": bl.KEY}
            )
        figures = {**res.as_dict(), "rss_mb": [round(m, 1) for _, m in samples]}
    print(json.dumps(figures))
    assert res.errors == 0, res.as_dict()
    assert res.ok > 10
    assert res.statuses == {200: res.ok}


def _doc(i: int, version: int) -> str:
    return f"# Doc {i}\n\nVersion {version} of document {i}. Unique term zzdoc{i}term.\n\n## More\n\nPart two {i}.\n"


def test_ingest_while_searching_loses_nothing(tmp_path: Path) -> None:
    stable = tmp_path / "stable"
    stable.mkdir()
    for i in range(30):
        (stable / f"doc{i}.md").write_text(_doc(i, 1), "utf-8")
    path = tmp_path / "kb.sqlite"
    kb = KnowledgeBase(path, embedder=FakeEmbedder(dim=32))
    kb.ingest([stable], tenant="acme")
    stop = threading.Event()
    misses: list[str] = []
    errors: list[str] = []
    searches = [0]
    lock = threading.Lock()

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            i = rng.randrange(30)
            try:
                got = kb.retrieve(f"zzdoc{i}term", ACME, k=5)
            except Exception as exc:
                errors.append(repr(exc))
                return
            with lock:
                searches[0] += 1
            if not any(c.source_id == f"doc{i}" for c in got):
                misses.append(f"doc{i}")

    readers = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    for t in readers:
        t.start()
    try:
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        for batch in range(6):
            for i in range(100 + batch * 5, 105 + batch * 5):
                (fresh / f"doc{i}.md").write_text(_doc(i, 1), "utf-8")
            kb.ingest([fresh], tenant="acme")
            # rewrite some stable documents: readers must still find them (old or new version)
            for i in range(batch * 5, batch * 5 + 5):
                (stable / f"doc{i}.md").write_text(_doc(i, 2), "utf-8")
            kb.ingest([stable], tenant="acme")
        time.sleep(0.2)
    finally:
        stop.set()
        for t in readers:
            t.join(30)
    assert not errors, errors[:3]
    assert searches[0] > 20
    assert kb.count() == 60 * 2  # 30 stable + 30 fresh documents, two chunks each
    for i in [*range(30), *range(100, 130)]:
        assert any(c.source_id == f"doc{i}" for c in kb.retrieve(f"zzdoc{i}term", ACME, k=5)), i
    assert all("Version 2" in c.text for c in kb.retrieve("Version 2 zzdoc3term", ACME, k=3) if c.source_id == "doc3")
    kb.close()
    assert not misses, f"{len(misses)} of {searches[0]} searches missed a document being re-ingested: {misses[:5]}"


_CRASH_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from admit.backends.embedders import FakeEmbedder
    from admit.kb import KnowledgeBase

    class Slow(FakeEmbedder):
        def embed(self, texts):
            time.sleep(0.03)
            return super().embed(texts)

    kb = KnowledgeBase(sys.argv[1], embedder=Slow(dim=32))
    print("ingesting", flush=True)
    kb.ingest([sys.argv[2]], tenant="acme")
    print("done", flush=True)
    """
)


def _versions(path: Path) -> dict[str, set[str]]:
    """source_id -> the set of 'Version N' markers among its chunks, read with plain sqlite3 (read-only)."""
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        table = "chunks" if "chunks" in tables else sorted(t for t in tables if "chunk" in t)[0]
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        out: dict[str, set[str]] = {}
        for sid, text in conn.execute(f"SELECT source_id, text FROM {table}"):
            marks = {w for w in ("Version 1", "Version 2") if w in text}
            out.setdefault(sid, set()).update(marks)
        assert "source_id" in cols
        return out
    finally:
        conn.close()


def test_crash_mid_ingest_leaves_the_previous_version_readable(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    n_docs = 150
    for i in range(n_docs):
        (docs / f"doc{i}.md").write_text(_doc(i, 1), "utf-8")
    path = tmp_path / "kb.sqlite"
    with KnowledgeBase(path, embedder=FakeEmbedder(dim=32)) as kb:
        kb.ingest([docs], tenant="acme")
        count = kb.count()
    for i in range(n_docs):
        (docs / f"doc{i}.md").write_text(_doc(i, 2), "utf-8")
    script = tmp_path / "ingest.py"
    script.write_text(_CRASH_SCRIPT, "utf-8")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path), str(docs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        updated = 0
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                updated = sum(1 for v in _versions(path).values() if v == {"Version 2"})
            except sqlite3.OperationalError:  # locked for a moment by the writer
                updated = 0
            if updated >= 5:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the ingest finished before it could be killed; make it slower"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    versions = _versions(path)
    assert len(versions) == n_docs
    mixed = {s: v for s, v in versions.items() if len(v) != 1}
    assert not mixed, f"sources with a mix of versions after the crash: {list(mixed)[:5]}"
    new = sum(1 for v in versions.values() if v == {"Version 2"})
    assert 5 <= new < n_docs
    with KnowledgeBase(path, embedder=FakeEmbedder(dim=32)) as kb:
        assert kb.count() == count
        for i in (0, n_docs // 2, n_docs - 1):
            assert any(c.source_id == f"doc{i}" for c in kb.retrieve(f"zzdoc{i}term", ACME, k=5))
        kb.ingest([docs], tenant="acme")  # the interrupted ingest can simply be run again
        assert kb.count() == count
    assert all(v == {"Version 2"} for v in _versions(path).values())

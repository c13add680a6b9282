"""Serving VI (issue 40, items 4 and 9): the inspector reads through the store's current access labels and
sends its security headers, a lone surrogate is a 422, the process pool survives dead workers and shows on
``/metrics``, every connection counts against ``max_connections``, and a non-regular file never deletes a
document on re-ingest.

Each test failed on the code before the fix. No test reads the clock or asserts a speed: waits are bounded
polls for a state (an answer, a closed socket, a dead process), never sleeps standing for a result.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import hashlib
import logging
import os
import re
import select
import signal
import socket
import time
import types
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("cloudpickle")

from fastapi.testclient import TestClient

from admit.errors import BackendError
from admit.kb import KnowledgeBase
from admit.service.config import settings_from_dict
from admit.service.http import create_app
from admit.service.procs import ProcessPool
from admit.testing.kb import memory_kb
from admit.types import Access, Chunk

SECRET = "purge-snapshots-zeta"
RUNBOOK = Chunk(
    id="quota#fix",
    source_id="quota",
    title="Quota runbook",
    text=f"To clear error E4012 run {SECRET} on the tenant volume, then retry the upload.",
    access=Access(tenant="acme", groups=("support",)),
)
KEYS = {
    "sup1": {"key_env": "K_SUP1", "tenant": "acme", "groups": ["support"]},
    "sup2": {"key_env": "K_SUP2", "tenant": "acme", "groups": ["support"]},
    "sre": {"key_env": "K_SRE", "tenant": "acme", "groups": ["sre", "support"]},
}
ENV = {"K_SUP1": "sup1-key", "K_SUP2": "sup2-key", "K_SRE": "sre-key"}


def _ready(c: TestClient) -> None:
    for _ in range(600):  # bounded: 60 s at most
        if c.get("/readyz").status_code == 200:
            return
        time.sleep(0.1)
    raise AssertionError("the app never became ready")


def _app(kb: KnowledgeBase | None = None, **limits: Any) -> Any:
    settings = settings_from_dict(
        {"service": {"reranker": "bm25", "limits": {"worker_processes": 0, **limits}, "keys": KEYS}}
    )
    return create_app(settings, kb=kb, environ=ENV)


# ---------------------------------------------------------------------------------------------- item 4


def _relabel_store(kind: str, tmp_path: Path) -> tuple[KnowledgeBase, Any]:
    """A knowledge base holding the runbook for group ``support``, and how to re-label it to ``sre`` and
    re-ingest it: ``memory``: chunks replaced whole (``add_chunks``); ``sqlite``: a folder ingested into the
    embedded store, then ingested again with other groups."""
    if kind == "memory":
        kb = memory_kb([RUNBOOK])
        return kb, lambda: kb.add_chunks([dataclasses.replace(RUNBOOK, access=Access(tenant="acme", groups=("sre",)))])
    pytest.importorskip("sqlite_vec")
    from admit.kb import IngestOptions

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "quota.md").write_text(f"# Quota runbook\n\n{RUNBOOK.text}\n", "utf-8")
    kb = KnowledgeBase(str(tmp_path / "kb.sqlite"), embedder="minilm")
    kb.ingest([docs], IngestOptions(tenant="acme", groups=("support",)))

    def relabel() -> None:
        rep = kb.ingest([docs], IngestOptions(tenant="acme", groups=("sre",)))
        assert rep.sources_updated == 1, rep

    return kb, relabel


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_inspector_hides_a_passage_relabelled_away_from_the_viewer(kind: str, tmp_path: Path) -> None:
    kb, relabel = _relabel_store(kind, tmp_path)
    with TestClient(_app(kb)) as c:
        _ready(c)
        ask = {"question": "How do I clear error E4012?"}
        r = c.post("/v1/search", json=ask, headers={"X-API-Key": "sup1-key"})
        assert r.status_code == 200, r.text
        cited = r.json()["citations"]
        assert cited and all(cid.startswith("quota#") for cid in cited)
        for key in ("sup1-key", "sup2-key"):
            assert SECRET in c.get("/inspect", headers={"X-API-Key": key}).text

        relabel()  # the document is re-labelled to group sre and re-ingested
        again = c.post("/v1/search", json=ask, headers={"X-API-Key": "sup1-key"})
        assert again.status_code == 200 and not again.json()["citations"]
        for key in ("sup1-key", "sup2-key"):  # the one that searched, and one that never did
            page = c.get("/inspect", headers={"X-API-Key": key}).text
            assert SECRET not in page, key
            assert "Quota runbook" not in page, key  # nor its title
            assert "no longer readable by you" in page, key
            assert ask["question"] in page  # the request itself is still the key's to see
        # a key that may read it now still sees the text the support key's request admitted
        assert SECRET in c.get("/inspect", headers={"X-API-Key": "sre-key"}).text

        # deleted from the store: shown to nobody
        for src in kb.sources("acme"):
            kb.store.delete_source(src.source_id, "acme")
        assert SECRET not in c.get("/inspect", headers={"X-API-Key": "sre-key"}).text


def test_the_inspector_and_every_answer_send_csp_and_nosniff() -> None:
    with TestClient(_app(memory_kb([RUNBOOK]))) as c:
        _ready(c)
        c.post("/v1/search", json={"question": "How do I clear error E4012?"}, headers={"X-API-Key": "sup1-key"})
        page = c.get("/inspect", headers={"X-API-Key": "sup1-key"})
        assert page.status_code == 200
        assert page.headers["x-content-type-options"] == "nosniff"
        csp = page.headers["content-security-policy"]
        directives = dict(d.strip().split(" ", 1) for d in csp.split(";") if d.strip())
        assert directives["default-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
        assert "unsafe-inline" not in directives["script-src"]
        # the one inline script the page has is the one the policy allows, by its hash
        scripts = re.findall(r"<script>(.*?)</script>", page.text, flags=re.S)
        assert len(scripts) == 1
        digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
        assert directives["script-src"] == f"'sha256-{digest}'"
        assert page.headers["cache-control"] == "no-store"
        for r in (
            c.get("/healthz"),
            c.get("/metrics"),
            c.get("/inspect"),  # the gate's 401
            c.post("/v1/search", json={"question": ""}, headers={"X-API-Key": "sup1-key"}),  # a 422
            c.get("/no-such-route"),
        ):
            assert r.headers["x-content-type-options"] == "nosniff", r.url
            assert "default-src 'none'" in r.headers["content-security-policy"], r.url


# ---------------------------------------------------------------------------------------------- item 9a


def test_a_lone_surrogate_is_a_422_naming_its_field_and_logs_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key = {"X-API-Key": "sup1-key", "Content-Type": "application/json"}
    with TestClient(_app(memory_kb([RUNBOOK])), raise_server_exceptions=False) as c:
        _ready(c)
        for path, raw, field in (
            ("/v1/search", rb'{"question": "What does E4012 mean?", "prune": "\ud800"}', "prune"),
            ("/v1/search", rb'{"question": "What does \udfff E4012 mean?"}', "question"),
            ("/v1/prune", rb'{"question": "q?", "candidates": [{"id": "a", "text": "x\udc00"}]}', "candidates[0].text"),
            (
                "/v1/pack",
                rb'{"question": "q?", "model": "gpt-4o", '
                rb'"candidates": [{"id": "a", "text": "x", "metadata": {"\ud800": 1}}]}',
                "candidates[0].metadata",
            ),
        ):
            r = c.post(path, content=raw, headers=key)
            assert r.status_code == 422, (path, r.text)
            body = r.json()
            assert body["field"] == field and "surrogate" in body["detail"], body
        # a surrogate pair is one character (U+1F600): a question like any other
        ok = c.post("/v1/search", content=rb'{"question": "E4012 \ud83d\ude00?"}', headers=key)
        assert ok.status_code == 200, ok.text
    assert not [r for r in caplog.records if r.exc_info], "no traceback in the log"
    assert "Traceback" not in caplog.text


# ---------------------------------------------------------------------------------------------- items 9b, 9c


def _wait_dead(pid: int) -> None:
    """Wait (bounded) until process ``pid`` has ended: a zombie, or gone."""
    for _ in range(3000):  # 30 s at most
        try:
            raw = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            return
        if raw[raw.rfind(b")") + 2 :].split()[0] in (b"Z", b"X"):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not end")


def _kill_idle_workers(pool: ProcessPool) -> list[int]:
    pids = pool.pids()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for pid in pids:
        _wait_dead(pid)
    return pids


def _die_once(flag: str) -> str:
    """A job whose first run takes its worker down with it (a crash, the OOM killer); the second one answers."""
    if not os.path.exists(flag):
        Path(flag).write_text("ran once", "utf-8")
        os._exit(9)
    return "answered by a fresh worker"


def _always_die() -> str:
    os._exit(9)


def _pool() -> ProcessPool:
    return ProcessPool(types.SimpleNamespace(metrics=None, inspect=None), 1, reserve=1, per_tenant=1)


def test_dead_idle_workers_are_replaced_before_they_get_a_job() -> None:
    async def main() -> tuple[list[int], list[int], list[int], Any]:
        pool = _pool()
        try:
            assert await pool.run("t", functools.partial(abs, -1)) == 1
            dead = _kill_idle_workers(pool)  # every idle worker killed from outside
            answers = [await pool.run("t", functools.partial(abs, -2)) for _ in range(3)]
            return answers, dead, pool.pids(), pool.snapshot()
        finally:
            pool.close()

    answers, dead, pids, snap = asyncio.run(main())
    assert answers == [2, 2, 2]
    assert len(pids) == 2 and not set(pids) & set(dead)
    assert snap.stats.dead == 2 and snap.stats.lost == 0 and snap.workers == 2


def test_a_job_whose_worker_dies_is_retried_once_on_a_fresh_worker(tmp_path: Path) -> None:
    async def main() -> tuple[Any, ...]:
        pool = _pool()
        try:
            once = await pool.run("t", functools.partial(_die_once, str(tmp_path / "flag")))
            with pytest.raises(BackendError, match="worker process ended"):
                await pool.run("t", _always_die)  # retried once, then failed: never a loop
            after = await pool.run("t", functools.partial(abs, -5))
            # a worker that dies between the liveness check and the hand-off: the broken pipe is a retry too
            victim = pool._free[-1]
            os.kill(victim.proc.pid, signal.SIGKILL)
            _wait_dead(victim.proc.pid)
            victim.proc.is_alive = lambda: True  # as if it died a moment after the check
            raced = await pool.run("t", functools.partial(abs, -7))
            return once, after, raced, pool.snapshot(), len(pool.pids())
        finally:
            pool.close()

    once, after, raced, snap, n = asyncio.run(main())
    assert once == "answered by a fresh worker" and after == 5 and raced == 7
    assert snap.stats.retried == 3 and snap.stats.lost == 1  # _die_once, _always_die (once), the raced hand-off
    assert snap.stats.dead == 4 and n == 2 and snap.workers == 2


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_metrics_export_the_process_pool() -> None:
    pytest.importorskip("prometheus_client")
    with TestClient(_app(memory_kb([RUNBOOK]), worker_processes=1)) as c:
        _ready(c)
        state = c.app.state.admit  # type: ignore[attr-defined]
        key = {"X-API-Key": "sup1-key"}
        assert c.post("/v1/search", json={"question": "How do I clear error E4012?"}, headers=key).status_code == 200
        assert c.post("/v1/search", json={"question": " "}, headers=key).status_code == 422  # raised in the worker
        m = _samples(c.get("/metrics").text)
        assert m[("admit_pool_workers", ())] == state.procs.size == 2
        assert m[("admit_pool_workers_busy", ())] == 0
        assert m[("admit_pool_queued_jobs", (("class", "light"),))] == 0
        assert m[("admit_pool_queued_jobs", (("class", "heavy"),))] == 0
        assert m[("admit_pool_jobs_total", (("outcome", "ok"),))] == 1
        assert m[("admit_pool_jobs_total", (("outcome", "error"),))] == 1
        assert m[("admit_pool_jobs_total", (("outcome", "timed_out"),))] == 0
        assert m[("admit_pool_workers_replaced_total", (("cause", "died"),))] == 0

        _kill_idle_workers(state.procs)
        assert c.post("/v1/search", json={"question": "How do I clear error E4012?"}, headers=key).status_code == 200
        m = _samples(c.get("/metrics").text)
        assert m[("admit_pool_workers_replaced_total", (("cause", "died"),))] == 2
        assert m[("admit_pool_jobs_total", (("outcome", "ok"),))] == 2
        assert m[("admit_pool_workers", ())] == 2


# ---------------------------------------------------------------------------------------------- item 9d


def _closed_by_server(socks: list[socket.socket], want: int) -> int:
    """How many of ``socks`` the server closed, read until ``want`` are, or nothing new comes for 30 s."""
    poller = select.poll()
    by_fd = {s.fileno(): s for s in socks}
    for fd in by_fd:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    closed, quiet = 0, 0
    while closed < want and quiet < 60:  # each round waits at most 0.5 s for news
        events = poller.poll(500)
        quiet = 0 if events else quiet + 1
        for fd, _ev in events:
            try:
                data = by_fd[fd].recv(65536)
            except OSError:
                data = b""
            if not data:
                closed += 1
                poller.unregister(fd)
    return closed


def test_slow_bodies_without_a_key_count_against_max_connections() -> None:
    import httpx

    from admit.service.loopback import LoopbackServer
    from admit.service.server import ServerLimits

    cap, n = 40, 120
    limits = ServerLimits(header_timeout_s=300, body_timeout_s=300, max_connections=cap, keep_alive_s=300)
    head = b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
    socks: list[socket.socket] = []
    with LoopbackServer(_app(), limits=limits) as srv:
        try:
            for _ in range(n):  # no key: each is answered 401 at once while its body is still to come
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
                s.sendall(head + b'{"question": "')
                socks.append(s)
            # the server holds at most ``cap`` of them: the others were closed to make room
            assert _closed_by_server(socks, n - cap) == n - cap
            with httpx.Client(base_url=srv.url, timeout=60) as c:  # a real request still gets in
                assert c.get("/v1/search", headers={"X-API-Key": "sup1-key"}).status_code == 405
        finally:
            for s in socks:
                s.close()


# ---------------------------------------------------------------------------------------------- item 9e


@pytest.mark.parametrize("odd", ["fifo", "directory"])
def test_a_fifo_or_directory_in_a_documents_place_keeps_its_last_good_version(tmp_path: Path, odd: str) -> None:
    from admit.types import Principal

    docs = tmp_path / "docs"
    docs.mkdir()
    guide = docs / "guide.md"
    guide.write_text("# Guide\n\nThe quota error E4012 is fixed by cleaning old snapshots.\n", "utf-8")
    (docs / "other.md").write_text("# Other\n\nNothing here.\n", "utf-8")
    kb = KnowledgeBase("memory://", embedder="fake:16")
    kb.ingest([docs], tenant="t")
    reader = Principal(tenant="t")
    before = {c.id for c in kb.retrieve("E4012 quota snapshots", reader, k=10) if c.id.startswith("guide")}
    assert before

    guide.unlink()
    if odd == "fifo":
        os.mkfifo(guide)  # opening it would block the run; it is never opened
    else:
        guide.mkdir()
    rep = kb.ingest([docs], tenant="t")
    assert rep.sources_removed == 0 and rep.chunks_removed == 0, rep
    assert str(guide) in rep.kept_last_good, rep
    causes = dict(rep.refusals)
    kind = "a FIFO" if odd == "fifo" else "a directory"
    assert kind in causes[str(guide)], causes
    assert {"path": str(guide), "cause": causes[str(guide)]} in rep.as_dict()["refusals"]
    after = {c.id for c in kb.retrieve("E4012 quota snapshots", reader, k=10)}
    assert before <= after

    # gone for real: removed
    guide.unlink() if odd == "fifo" else guide.rmdir()
    rep = kb.ingest([docs], tenant="t")
    assert rep.sources_removed == 1 and not rep.kept_last_good and not rep.refusals


def test_a_fifo_met_in_a_folder_is_refused_with_its_reason(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nText.\n", "utf-8")
    os.mkfifo(docs / "pipe.md")
    rep = KnowledgeBase("memory://", embedder="fake:16").ingest([docs], tenant="t")
    assert rep.sources_added == 1
    assert dict(rep.refusals) == {str(docs / "pipe.md"): "a FIFO, not a document"}


def test_the_mcp_http_transport_sends_nosniff_and_csp_too() -> None:
    from admit.service.mcp import build_mcp_server, mcp_http_app
    from admit.service.state import build_state

    settings = settings_from_dict({"service": {"keys": KEYS}})
    state = build_state(settings, environ=ENV)
    server = build_mcp_server(settings, kb=None, state=state, transport="streamable-http")
    with TestClient(mcp_http_app(server)) as c:
        r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})  # no key: the gate's 401
        assert r.status_code == 401
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "default-src 'none'" in r.headers["content-security-policy"]

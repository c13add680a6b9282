"""Issue 47 (Serving VII), the quiet tenant's tail under a flood: where its time goes (``Server-Timing``), and the
server's own share of it: no thread hop per request, refusals that build nothing, ``/proc`` read on the pool's
ticks only, and a quiet tenant's job in a worker at the server's priority.

No test reads the clock: what is asserted is what the server answered (its headers), what it called (counted),
and the niceness of the processes that ran each job.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
import types
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("cloudpickle")

import httpx

from admit.service import gate as gate_module
from admit.service.admission import Admission
from admit.service.config import settings_from_dict
from admit.service.gate import Gate
from admit.service.http import create_app
from admit.service.loopback import LoopbackServer

KEYS = {"quiet": {"key_env": "K_QUIET", "tenant": "acme"}}
ENV = {"K_QUIET": "quiet-key"}


def _server(**service: Any) -> Iterator[str]:
    settings = settings_from_dict({"service": {"limits": {"worker_processes": 0}, "keys": KEYS, **service}})
    with LoopbackServer(create_app(settings, environ=ENV)) as srv:
        yield srv.url


def _stages(value: str) -> dict[str, float]:
    out = {}
    for part in value.split(","):
        name, _, dur = part.strip().partition(";dur=")
        out[name] = float(dur)
    return out


def test_server_timing_says_where_a_requests_time_went_and_is_off_by_default() -> None:
    """With ``server_timing`` on, a ``/v1`` answer and ``/healthz`` carry ``Server-Timing``: the loop's backlog
    (``read``), the gate, the route and the ``total``, each a duration; with it off (the default), none."""
    for url in _server(server_timing=True):
        with httpx.Client(base_url=url, headers={"X-API-Key": "quiet-key"}, timeout=60) as c:
            r = c.post("/v1/prune", json={"question": "q?", "candidates": "not a list"})
            health = c.get("/healthz")
    assert r.status_code == 422  # any answer of a /v1 route: the marks are taken where it passed
    stages = _stages(r.headers["server-timing"])
    assert {"read", "gate", "route", "total"} <= set(stages)
    assert all(v >= 0 for v in stages.values())
    assert {"read", "total"} <= set(_stages(health.headers["server-timing"]))
    for url in _server():
        with httpx.Client(base_url=url, headers={"X-API-Key": "quiet-key"}, timeout=60) as c:
            r = c.post("/v1/prune", json={"question": "q?", "candidates": "not a list"})
            health = c.get("/healthz")
    assert "server-timing" not in r.headers and "server-timing" not in health.headers


def test_a_v1_request_takes_no_thread_hop_to_find_its_principal(monkeypatch: pytest.MonkeyPatch) -> None:
    """FastAPI runs a plain-function dependency in its thread pool: a hop to a thread and back to the event loop
    on every ``/v1`` request. The principal's dependency is a coroutine: no request reaches the thread pool."""
    import fastapi.dependencies.utils as deps

    hops: list[object] = []
    real = deps.run_in_threadpool

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(fn)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(deps, "run_in_threadpool", counted)
    for url in _server():
        with httpx.Client(base_url=url, headers={"X-API-Key": "quiet-key"}, timeout=60) as c:
            statuses = [c.post("/v1/prune", json={"question": "q?", "candidates": "x"}).status_code for _ in range(3)]
    assert statuses == [422, 422, 422]
    assert hops == []


def _gate(admission: Admission, app: Any = None) -> Gate:
    settings = settings_from_dict({"service": {"keys": KEYS}})
    from admit.service.state import build_state

    state = build_state(settings, environ=ENV)

    async def ok(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    return Gate(
        app or ok,
        keyring=lambda: state.keyring,
        max_body_bytes=1000,
        admission=admission,
        refusal_delay_s=0,
    )


def _call(gate: Gate, body: bytes = b"{}") -> int:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/prune",
        "headers": [(b"x-api-key", b"quiet-key"), (b"content-length", str(len(body)).encode())],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(gate(scope, receive, send))
    return int(sent[0]["status"])


def test_the_gate_builds_its_refusal_once_and_nothing_for_a_request_it_admits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each refusal of a flood used to build its 429 (a pydantic model, a JSON response) on the event loop, and
    every request built a 413 it would almost never send. Now a request the gate admits builds no answer of the
    gate's, and the 429 of one reason is built once and sent as often as it is needed."""
    built: list[int] = []
    real = gate_module.error_response

    def counted(status: int, *args: Any, **kwargs: Any) -> Any:
        built.append(status)
        return real(status, *args, **kwargs)

    monkeypatch.setattr(gate_module, "error_response", counted)
    limits = settings_from_dict({"service": {"limits": {"max_in_flight_per_key": 1}}}).limits
    admission = Admission(limits)
    gate = _gate(admission)
    assert _call(gate) == 200
    assert built == []  # admitted: nothing of the gate's built
    held = admission.enter("key:quiet", "acme", 10)  # the key's one slot taken
    assert [_call(gate) for _ in range(5)] == [429] * 5
    assert built == [429]  # built once, sent five times
    assert _call(gate, b"x" * 2000) == 413 and _call(gate, b"y" * 2000) == 413  # over max_body_bytes
    admission.release(held)  # type: ignore[arg-type]
    assert _call(gate) == 200
    assert built == [429, 413]


def _nice_now() -> int:
    return os.nice(0)


def _spin() -> None:
    while True:
        pass


def test_a_quiet_tenants_job_runs_at_the_servers_priority_and_a_flood_runs_niced() -> None:
    """The pool's prompt workers (its reserve) run at the server's own priority and take a quiet tenant's job;
    a backlogged tenant's job runs ``WORKER_NICENESS`` nicer. Under a flood from a client at the server's
    priority, a quiet search in a niced worker got a third of a core (issue 47)."""
    from admit.service.procs import ProcessPool
    from admit.service.worker import WORKER_NICENESS

    ours = os.nice(0)

    async def main() -> tuple[int, list[int]]:
        pool = ProcessPool(types.SimpleNamespace(metrics=None, inspect=None), 2, reserve=1, per_tenant=2)
        try:
            at = time.monotonic() + 60
            first = asyncio.ensure_future(pool.run("flood", functools.partial(abs, -1), deadline_at=at))
            backlog = asyncio.ensure_future(pool.run("flood", _spin, deadline_at=at))  # the flood's second job
            assert await first == 1
            quiet = await pool.run("acme", _nice_now, deadline_at=at)
            flooded = [os.getpriority(os.PRIO_PROCESS, b["pid"]) for b in pool.busy()]
            backlog.cancel()
            await asyncio.gather(backlog, return_exceptions=True)
            return quiet, flooded
        finally:
            pool.close()

    quiet, flooded = asyncio.run(main())
    assert quiet == ours
    assert flooded == [min(19, ours + WORKER_NICENESS)]


def test_the_pool_reads_proc_on_its_ticks_not_on_every_scheduling_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every dispatch and every answer runs a scheduling pass; each pass read ``/proc/PID/stat`` and
    ``/proc/PID/statm`` of every busy worker on the event loop. Now a pass between two ticks uses the last
    reading, and the memory bound is checked on the tick (here: no tick is due, then one is run by hand)."""
    from admit.service import procs as procs_module
    from admit.service.procs import ProcessPool

    reads: list[str] = []
    real_cpu, real_mem = procs_module.proc_cpu, procs_module.proc_memory_mb

    def cpu(pid: int) -> float:
        reads.append("stat")
        return real_cpu(pid)

    def memory(pid: int, above: float = 0.0) -> float:
        reads.append("statm bound" if above > 1500 else "statm recycle")
        return real_mem(pid, above)

    monkeypatch.setattr(procs_module, "proc_cpu", cpu)
    monkeypatch.setattr(procs_module, "proc_memory_mb", memory)

    async def main() -> tuple[list[str], list[str]]:
        pool = ProcessPool(types.SimpleNamespace(metrics=None, inspect=None), 2, reserve=1, tick_s=3600)
        try:
            at = time.monotonic() + 60
            spinner = asyncio.ensure_future(pool.run("long", _spin, deadline_at=at))
            await asyncio.sleep(0)
            for _ in range(10):  # ten jobs beside a busy worker: ten dispatches, ten answers
                assert await pool.run("t", functools.partial(abs, -2), deadline_at=at) == 2
            between = list(reads)
            assert "statm bound" not in between  # no memory read on a pass between two ticks
            reads.clear()
            pool._on_tick()
            on_tick = list(reads)
            spinner.cancel()
            await asyncio.gather(spinner, return_exceptions=True)
            return between, on_tick
        finally:
            pool.close()

    between, on_tick = asyncio.run(main())
    assert "statm bound" not in between
    # the only reads between ticks: each job's CPU at its start, and its worker's size once it answered
    assert between.count("stat") == 11 and between.count("statm recycle") == 10
    assert on_tick.count("statm bound") == 1 and on_tick.count("stat") == 1


def test_the_pools_marks_follow_a_job_from_the_queue_to_its_answer() -> None:
    """The pool marks the request's stages (``Server-Timing``): queued, started (sent to a worker), the worker's
    own start and end, and the answer read, in that order."""
    from admit.service.procs import ProcessPool
    from admit.service.timing import STAGES

    async def main() -> dict[str, float]:
        pool = ProcessPool(types.SimpleNamespace(metrics=None, inspect=None), 1, reserve=1)
        stages: dict[str, float] = {}
        STAGES.set(stages)
        try:
            assert await pool.run("acme", functools.partial(abs, -3), deadline_at=None) == 3
        finally:
            pool.close()
        return stages

    stages = asyncio.run(main())
    order = ["queued", "started", "worker_start", "worker_end", "answered"]
    assert [stages[k] for k in order] == sorted(stages[k] for k in order)
    assert stages["cpu"] >= 0


def test_a_server_with_worker_processes_freezes_its_loaded_heap_once_ready() -> None:
    """A full garbage collection walked the whole loaded heap (the models, the tokenizers) with the event loop
    stopped: 0.1-0.7 s, several times a minute under a flood. Once its models are loaded, a server whose work
    runs in worker processes moves them out of the collector's reach (before the workers are forked)."""
    import gc

    from admit.service.state import build_state

    settings = settings_from_dict({"service": {"limits": {"worker_processes": 1}}})
    state = build_state(settings, environ=ENV)
    state.use_processes(True)
    assert state.procs is not None
    before = gc.get_freeze_count()
    try:
        assert state.warm_up().status == "ready"
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()
        state.procs.close()


def test_a_liveness_probe_is_answered_where_it_is_read_without_entering_the_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``GET /healthz`` in one read is answered by the HTTP server where it reads the bytes: no task, no ASGI
    call (the ASGI layer's answerer is never entered), so it waits for no turn of a busy event loop. The
    connection stays usable: probes, a ``HEAD``, then a ``/v1`` call on the same keep-alive connection, and a
    probe asking to close is closed after its answer."""
    import socket

    entered: list[str] = []
    real = gate_module.Liveness.__call__

    async def counted(self: Any, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("path") == "/healthz":
            entered.append(scope["method"])
        await real(self, scope, receive, send)

    monkeypatch.setattr(gate_module.Liveness, "__call__", counted)
    for url in _server():
        entered.clear()  # the server's own readiness poll
        with httpx.Client(base_url=url, timeout=60) as c:
            probes = [c.get("/healthz") for _ in range(3)]
            head = c.head("/healthz")
            v1 = c.post("/v1/prune", json={"question": "q?", "candidates": "x"}, headers={"X-API-Key": "quiet-key"})
            again = c.get("/healthz")
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=60) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            raw = b""
            while part := s.recv(65536):
                raw += part
    assert [p.status_code for p in probes] == [200, 200, 200] and again.status_code == 200
    assert probes[0].json()["status"] == "ok"
    assert probes[0].headers["x-content-type-options"] == "nosniff"
    assert head.status_code == 200 and head.content == b""
    assert v1.status_code == 422  # the same connection, read by uvicorn as before
    assert raw.startswith(b"HTTP/1.1 200") and raw.endswith(b'"kb":false}')  # answered, then closed
    assert entered == []

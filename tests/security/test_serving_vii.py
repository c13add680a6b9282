"""Issue 47 (Serving VII), items 2 to 5: refusal before reading, nothing serialized on the event loop, MCP in the
process pool, and long work's guaranteed share.

Every server here runs on a free loopback port and is waited for on ``/readyz``; no test reads the clock for a
speed assertion: what is asserted is what the server answered (a 429 before a body was sent), where the work ran
(the pool's own accounting), what the event loop was handed (the worker's effects), and the scheduler's
decisions on a fake clock.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("cloudpickle")

from admit.service.config import settings_from_dict
from admit.service.http import create_app
from admit.service.loopback import LoopbackServer
from admit.service.server import ServerLimits
from tests.security._rawhttp import answer, head

KEYS = {
    "evil1": {"key_env": "K_EVIL1", "tenant": "evil"},
    "evil2": {"key_env": "K_EVIL2", "tenant": "evil"},
    "quiet": {"key_env": "K_QUIET", "tenant": "acme"},
}
ENV = {"K_EVIL1": "evil-key-1", "K_EVIL2": "evil-key-2", "K_QUIET": "quiet-key"}
SLOW = ServerLimits(header_timeout_s=300, body_timeout_s=300, max_connections=500, keep_alive_s=300)


def _app(**limits: Any) -> Any:
    settings = settings_from_dict({"service": {"limits": {"worker_processes": 0, **limits}, "keys": KEYS}})
    return create_app(settings, environ=ENV)


def _open(port: int, key: str, length: int) -> socket.socket:
    """A request whose headers are sent and whose body never comes: it stays in flight at the gate."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(head(key, length) + b'{"question": ')
    return s


def _status_without_body(port: int, key: str, length: int, body: bytes = b"") -> tuple[int, dict[str, str]]:
    """Send the headers of a request (and ``body``, if any: otherwise none of it) and read its answer (a server
    that waits for the body times out)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(head(key, length) + body)
        status, headers, _ = answer(s)
    return status, headers


def _wait_in_flight(state: Any, n: int) -> None:
    """Wait (bounded, by polling the gate's own count) until ``n`` requests are in flight."""
    import time

    for _ in range(600):
        if state.admission.in_flight() >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{state.admission.in_flight()} requests in flight, expected {n}")


# ---------------------------------------------------------------------------------------------- item 2


def test_a_key_over_its_bound_gets_429_with_retry_after_before_its_body_is_sent(held: list[socket.socket]) -> None:
    app = _app(max_in_flight_per_key=2)
    with LoopbackServer(app, limits=SLOW, ready_path="/readyz") as srv:
        held += [_open(srv.port, "evil-key-1", 5000) for _ in range(2)]
        _wait_in_flight(app.state.admit, 2)
        status, headers = _status_without_body(srv.port, "evil-key-1", 5000)
        assert status == 429
        assert int(headers["retry-after"]) >= 1
        # another key of the same tenant is under its own bound (the tenant's is 64)
        other, _ = _status_without_body(srv.port, "evil-key-2", 2, b"{}")
        assert other != 429


def test_a_tenant_over_its_body_bytes_is_refused_before_reading_and_its_first_request_never_is(
    held: list[socket.socket],
) -> None:
    app = _app(max_in_flight_bytes_per_tenant=6000)
    with LoopbackServer(app, limits=SLOW, ready_path="/readyz") as srv:
        held.append(_open(srv.port, "evil-key-1", 5000))
        _wait_in_flight(app.state.admit, 1)
        status, _ = _status_without_body(srv.port, "evil-key-2", 5000)  # 10,000 bytes of this tenant: over
        assert status == 429
        pad = b"{}" + b" " * 1_499_998
        first, _ = _status_without_body(srv.port, "quiet-key", len(pad), pad)  # a tenant's first: always let in
        assert first != 429


def test_a_quiet_tenant_is_never_refused_when_others_fill_the_shared_queue(held: list[socket.socket]) -> None:
    app = _app(max_in_flight=3, reserved_per_tenant=2)
    state = app.state.admit
    with LoopbackServer(app, limits=SLOW, ready_path="/readyz") as srv:
        held += [_open(srv.port, f"evil-key-{1 + i % 2}", 100) for i in range(5)]  # 2 own + 3 shared
        _wait_in_flight(state, 5)
        status, _ = _status_without_body(srv.port, "evil-key-1", 100)
        assert status == 429  # the shared part is full
        assert state.admission.refused["server"] == 1
        import httpx

        body = {"question": "What is alpha?", "candidates": [{"id": "a", "text": "alpha is a letter"}]}
        with httpx.Client(base_url=srv.url, timeout=120, headers={"X-API-Key": "quiet-key"}) as c:
            codes = [c.post("/v1/prune", json=body).status_code for _ in range(8)]
        assert codes == [200] * 8


# ---------------------------------------------------------------------------------------------- item 5


@pytest.mark.parametrize("cores", [1, 2, 16])
@pytest.mark.parametrize("n_long", [1, 4])
def test_long_jobs_keep_a_share_beside_short_ones_and_are_paused_for_a_bounded_time(cores: int, n_long: int) -> None:
    """The pool's lane rule on a simulated clock: short jobs fill every core all the time (more of them than
    cores), yet each long job runs a share of the ticks and is never paused longer than the stated bound."""
    from admit.service.sched import LaneJob, lanes_for, long_lanes, max_pause_s

    tick, slice_s, short = 0.05, 0.25, cores + 3
    lanes = lanes_for(cores, short)
    assert lanes >= 1
    running = dict.fromkeys(range(n_long), True)
    since = dict.fromkeys(range(n_long), 0.0)
    ran = dict.fromkeys(range(n_long), 0)
    paused_at: dict[int, float] = {}
    longest = 0.0
    ticks = 400
    for k in range(1, ticks + 1):
        now = k * tick
        jobs = [LaneJob(i, running[i], since[i]) for i in range(n_long)]
        chosen = long_lanes(jobs, lanes, now, slice_s)
        assert len(chosen) == min(lanes, n_long)
        for i in range(n_long):
            want = i in chosen
            if want != running[i]:
                running[i], since[i] = want, now
            if want:
                ran[i] += 1
                if i in paused_at:
                    longest = max(longest, now - paused_at.pop(i))
            else:
                paused_at.setdefault(i, now)
    bound = max_pause_s(n_long, lanes, slice_s, tick)
    assert longest <= bound + 1e-9
    for i in range(n_long):  # every long job gets its turn: at least a fair part of one lane
        assert ran[i] >= ticks * min(lanes, n_long) // n_long - 10


# ---------------------------------------------------------------------------------------------- item 3


def test_the_trace_line_is_finished_in_the_worker_and_only_the_line_comes_back(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``trace_requests`` on, a pack carrying 5,000 tool rows (one holding a secret): what the worker hands
    back to the event loop is the finished, redacted JSON line, never the request to serialize and redact there."""
    import httpx

    from admit.service import procs

    handed: list[tuple[Any, ...]] = []
    real = procs.replay_effects

    def spy(state: Any, effects: list[tuple[Any, ...]]) -> None:
        handed.extend(effects)
        real(state, effects)

    monkeypatch.setattr(procs, "replay_effects", spy)
    trace = tmp_path / "trace.jsonl"
    settings = settings_from_dict(
        {
            "service": {
                "trace_file": str(trace),
                "trace_requests": True,
                # the work is a few seconds alone; a busy machine must not turn it into a 504 (what is asserted is
                # what the worker hands back, not how fast)
                "limits": {"worker_processes": 1, "request_timeout_s": 600},
                "keys": KEYS,
            }
        }
    )
    app = create_app(settings, environ=ENV)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    rows = [{"n": i, "note": secret if i == 7 else f"row {i}"} for i in range(5000)]
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "note": {"type": "string"}}}
    body = {
        "question": "What is alpha?",
        "candidates": [{"id": "a", "source_id": "s", "text": "alpha is a letter", "access": {"tenant": "acme"}}],
        "tool_outputs": [{"id": "t", "tool": "lookup", "rows": rows, "schema": schema, "max_rows": 5000}],
    }
    with LoopbackServer(app, ready_path="/readyz") as srv:
        r = httpx.post(f"{srv.url}/v1/pack", json=body, headers={"X-API-Key": "quiet-key"}, timeout=600)
        assert r.status_code == 200, r.text
    outs = [e for e in handed if e[0] == "out"]
    assert outs, "the worker handed back no trace write"
    assert all(e[1] == "line" and all(isinstance(a, str) for a in e[2]) for e in outs), [e[1] for e in outs]
    text = trace.read_text("utf-8")
    assert secret not in text
    logged = json.loads(text.splitlines()[-1])
    assert len(logged["request"]["tool_outputs"][0]["rows"]) == 5000


# ---------------------------------------------------------------------------------------------- item 4


class SpinPruner:
    """A pruner that never returns and never reaches a checkpoint (only killing its process stops it)."""

    name = "spin"

    def prune(self, question: str, candidates: Any, settings: Any) -> Any:
        x = 0
        while True:
            x += 1


def test_mcp_tools_run_in_the_process_pool_and_work_past_its_deadline_is_killed() -> None:
    """``admit mcp``'s tools run in the worker processes ``admit serve`` uses: a prune that never returns is
    stopped at ``request_timeout_s`` by killing its process (a thread could not be stopped), and a bad argument
    is checked in a worker too (the pool counts the job)."""
    import asyncio

    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from admit.service.mcp import build_mcp_server
    from admit.service.state import build_state

    settings = settings_from_dict({"service": {"limits": {"request_timeout_s": 1.0}}})
    state = build_state(settings, pruner=SpinPruner())  # type: ignore[arg-type]
    server = build_mcp_server(settings, kb=None, state=state, processes=True)
    assert state.procs is not None, "the MCP server's work must run in worker processes"
    state.warm_up()

    async def calls() -> tuple[str, str]:
        try:
            with pytest.raises(ToolError) as timed_out:
                await server.call_tool("prune_context", {"question": "q?", "chunks": ["alpha", "beta"]})
            with pytest.raises(ToolError) as bad:
                await server.call_tool("prune_context", {"question": "q?", "chunks": [{"id": "a"}]})
            return str(timed_out.value), str(bad.value)
        finally:
            state.procs.close()

    slow, bad = asyncio.run(calls())
    assert "request_timeout_s" in slow
    assert "chunks[0].text" in bad
    stats = state.procs.stats
    # the spinning work was stopped with its process (at its deadline, by the pool's tick or with its caller)
    assert stats.killed == 1 and stats.timed_out + stats.abandoned == 1
    assert stats.errors == 1  # the bad argument was found in a worker, not on the event loop
    assert state.procs.busy() == []


def test_the_pools_reserve_goes_to_a_quiet_tenant_before_a_backlogged_one() -> None:
    """The fair queue names the quiet tenant (one request waiting, none running) for the processes kept in
    reserve, even when a flooding tenant's backlog is ahead of it in the queue."""
    from dataclasses import dataclass

    from admit.service.fairq import FairQueue

    @dataclass(eq=False)
    class Job:
        tenant: str
        key: str
        size: int = 100
        estimate: float = 0.0

    q: FairQueue[Job] = FairQueue(
        per_tenant=1, long_cpu_s=0.25, max_queued_per_tenant=64, max_queued_per_key=64, max_queued=1024
    )
    for _ in range(5):
        q.add(Job("flood", "key:f"))
    quiet = Job("acme", "key:q")
    q.add(quiet)
    first = q.head("light")
    assert first is not None and first[1].name == "flood"  # first in the queue
    fresh = q.fresh()
    assert fresh is not None and fresh[1].name == "acme"
    assert q.pop("light", *fresh) is quiet
    nxt = q.head("light")
    assert nxt is not None and nxt[1].name == "flood" and q.queued == 5


def _spin() -> None:
    while True:
        pass


def test_a_quiet_tenant_held_back_while_others_were_short_starts_once_they_run_long() -> None:
    """Both processes are taken by jobs that never end; a quiet tenant's job arrives while they are still short
    (so no extra process is forked for it then). It is looked at again as they turn long, and runs while they
    still spin, instead of waiting for one of them to end at its deadline."""
    import asyncio
    import functools
    import time
    import types

    from admit.service.procs import ProcessPool

    async def main() -> list[bool]:
        pool = ProcessPool(types.SimpleNamespace(metrics=None, inspect=None), 1, reserve=1, per_tenant=1)
        try:
            at = time.monotonic() + 30
            spinners = [asyncio.ensure_future(pool.run(t, _spin, deadline_at=at)) for t in ("a", "b")]
            await asyncio.sleep(0)
            assert await pool.run("quiet", functools.partial(abs, -1), deadline_at=at) == 1
            still = [not s.done() for s in spinners]
            for s in spinners:
                s.cancel()
            await asyncio.gather(*spinners, return_exceptions=True)
            return still
        finally:
            pool.close()

    assert asyncio.run(main()) == [True, True]

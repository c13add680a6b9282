"""Issue 47 (Serving VII): the server, not only its queue, favours the tenants within their share.

* A job of a tenant over its share of the CPU (the pool's own recent accounting, :class:`~admit.service.sched.
  ShareBook`) runs in a worker process nicer than the others; a quiet tenant's, a tenant alone's, a long prune's
  with nothing else of its tenant waiting, never; no process's niceness is ever lowered.
* Connections are counted by key and tenant at the HTTP server: a request on a connection beyond its key's cap
  is answered 429 with ``Retry-After`` before its body is read, and another tenant's never.

No test reads the clock: the share's decisions run on a simulated clock, the pool's are read from the niceness
each job saw in its worker, and the connection cap from what the server answered before a body was sent.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import time
import types
from typing import TYPE_CHECKING, Any

import pytest

from admit.service.fairq import FairQueue
from tests.security._rawhttp import BODY, answer, head, loopback_server
from tests.security._simjob import SimJob

if TYPE_CHECKING:
    from admit.service.sched import Core


def _core(cores: int = 2, window_s: float = 2.0) -> Core[SimJob]:
    from admit.service.sched import Core, ShareBook

    q: FairQueue[SimJob] = FairQueue(
        per_tenant=1, long_cpu_s=0.25, max_queued_per_tenant=64, max_queued_per_key=64, max_queued=999
    )
    return Core(q, cores=cores, regular=cores, reserve=1, share=ShareBook(window_s=window_s))


def _start(core: Core[SimJob], now: float) -> list[SimJob]:
    out = []
    while (nxt := core.next_job(free=8 - len(core.running), can_grow=False, now=now)) is not None:
        core.started(nxt[0], now)
        out.append(nxt[0])
    return out


def test_a_flood_tenant_is_over_its_share_and_a_quiet_one_never_is() -> None:
    """Eight flood tenants keep 40 searches each waiting; the quiet tenant sends one at a time and, served at once,
    uses more CPU than any of them. The flood's jobs start over their share (what each asks for is over an
    equal split of the recent CPU), the quiet tenant's never (no backlog)."""
    core = _core()
    now = 0.0
    for i in range(8):
        for _ in range(40):
            core.queue.add(SimJob(f"flood{i}"))
    over: dict[str, list[bool]] = {"flood": [], "quiet": []}
    for _ in range(400):  # simulated: each job ends 10 ms of CPU later
        if not any(j.tenant == "acme" for j in core.running):
            core.queue.add(SimJob("acme"))
        for job in _start(core, now):
            over["quiet" if job.tenant == "acme" else "flood"].append(job.over)
        now += 0.01
        for job in list(core.running):
            core.ended(job, 0.01, now)
            if job.tenant != "acme":
                core.queue.add(SimJob(job.tenant))  # the flood keeps its backlog
    assert core.share is not None
    assert core.share.used("acme", now) > max(core.share.used(f"flood{i}", now) for i in range(8))
    assert over["quiet"] and not any(over["quiet"])
    assert sum(over["flood"]) >= 0.95 * len(over["flood"])  # all but the first, before anyone had used the CPU


def test_a_tenant_alone_is_over_no_ones_share_and_a_small_backlog_is_within_it() -> None:
    """A tenant alone with a backlog is over no one's share; beside a flood, a tenant's short burst (little used,
    little waiting) is within its share, and its jobs run as the others'."""
    core = _core()
    book = core.share
    assert book is not None
    for _ in range(5):
        core.queue.add(SimJob("alone"))
    jobs = _start(core, 0.0)
    assert jobs and not any(j.over for j in jobs)
    book.charge("alone", 3.0, 0.0)
    assert not book.over("alone", 1.0, 0.1)  # still alone
    book.charge("flood", 3.0, 0.1)
    assert book.over("flood", 0.5, 0.2)  # asks 3.5 s against an equal split of 3 s
    assert not book.over("burst", 0.02, 0.2)  # new: asks 0.02 s against 2 s
    # a tenant's recent CPU decays: what it used long ago no longer counts against it
    assert book.used("flood", 0.1 + 10 * book.window_s) < 0.01 * book.used("flood", 0.1)


def test_a_long_prune_with_nothing_else_waiting_is_never_over_its_share() -> None:
    """A heavy tenant's prune, one at a time (issue 47 item 5: its share is guaranteed), starts within its share
    however much CPU its tenant used; a second prune of it waiting behind the first is over."""
    core = _core()
    book = core.share
    assert book is not None
    book.charge("prune", 30.0, 0.0)
    book.charge("light", 0.3, 0.0)
    core.queue.mark_long("prune", 3.0)
    core.queue.add(SimJob("prune", size=50_000))
    (first,) = [j for j in _start(core, 0.1) if j.tenant == "prune"]
    assert first.heavy and not first.over
    core.queue.add(SimJob("prune", size=50_000))
    core.ended(first, 3.0, 3.0)
    core.queue.add(SimJob("prune", size=50_000))  # two waiting now: a backlog
    second = [j for j in _start(core, 3.0) if j.tenant == "prune"]
    assert second and second[0].over


# ---------------------------------------------------------------------------------------------- the pool


def _nice_now() -> int:
    return os.nice(0)


def test_the_pool_runs_an_over_share_tenants_job_niced_in_a_worker_of_its_own() -> None:
    """Real worker processes: the flood tenant has used far more CPU than the quiet one; its second job (a
    backlog) runs ``over_share_niceness`` nicer than the server, in a background worker; the quiet tenant's at
    the server's priority; a backlogged tenant within its share at the regular workers' ``WORKER_NICENESS``.
    With ``over_share_niceness=0`` the flood's backlog runs as on 16ce540 (``WORKER_NICENESS``)."""
    pytest.importorskip("cloudpickle")
    from admit.service.procs import ProcessPool
    from admit.service.worker import OVER_SHARE_NICENESS, WORKER_NICENESS

    ours = os.nice(0)

    async def main(niceness: int) -> tuple[dict[str, int], int, int]:
        kwargs = {"over_share_niceness": niceness} if niceness >= 0 else {}
        pool = ProcessPool(types.SimpleNamespace(metrics=None, inspect=None), 2, reserve=1, per_tenant=2, **kwargs)
        try:
            at = time.monotonic() + 60
            now = time.monotonic()
            if pool.core.share is not None:
                pool.core.share.charge("flood", 2.0, now)
                pool.core.share.charge("acme", 0.3, now)
                pool.core.share.charge("small", 0.01, now)
            seen: dict[str, int] = {}
            first = asyncio.ensure_future(pool.run("flood", _nice_now, deadline_at=at))
            second = asyncio.ensure_future(pool.run("flood", _nice_now, deadline_at=at))  # behind the first
            seen["flood first"], seen["flood backlog"] = await asyncio.gather(first, second)
            seen["quiet"] = await pool.run("acme", _nice_now, deadline_at=at)
            a = asyncio.ensure_future(pool.run("small", _nice_now, deadline_at=at))
            b = asyncio.ensure_future(pool.run("small", _nice_now, deadline_at=at))
            seen["small first"], seen["small backlog"] = await asyncio.gather(a, b)
            background = sum(1 for w in pool._workers if w.background)
            return seen, pool.stats.over_share, background
        finally:
            pool.close()

    seen, over, background = asyncio.run(main(-1))  # the default
    assert seen["flood backlog"] == min(19, ours + OVER_SHARE_NICENESS) > ours + WORKER_NICENESS
    assert over == 1 and background == 1
    assert seen["quiet"] == ours
    assert seen["small backlog"] == min(19, ours + WORKER_NICENESS)
    seen, over, background = asyncio.run(main(0))
    assert seen["flood backlog"] == min(19, ours + WORKER_NICENESS) and over == 0 and background == 0


def test_the_over_share_niceness_setting_reaches_the_pool_off_by_default() -> None:
    """Off unless set: on the idle 2-core machine it showed no gain for the quiet tenant and cost 700 MB."""
    pytest.importorskip("fastapi")
    from admit.service.config import settings_from_dict
    from admit.service.state import build_state

    for limits, expected in (({}, 0), ({"over_share_niceness": 7}, 7), ({"over_share_niceness": 0}, 0)):
        settings = settings_from_dict({"service": {"limits": {"worker_processes": 2, **limits}}})
        state = build_state(settings)
        pool = state.use_processes(True)
        assert pool is not None and pool.over_share_niceness == expected
        assert (pool.core.share is None) == (expected == 0)


# ---------------------------------------------------------------------------------------------- connections

KEYS = {
    "evil1": {"key_env": "K_EVIL1", "tenant": "evil"},
    "evil2": {"key_env": "K_EVIL2", "tenant": "evil"},
    "quiet": {"key_env": "K_QUIET", "tenant": "acme"},
}
ENV = {"K_EVIL1": "evil-key-1", "K_EVIL2": "evil-key-2", "K_QUIET": "quiet-key"}


def _server(**limits: Any) -> Any:
    return loopback_server(KEYS, ENV, **limits)


def _kept_alive(port: int, key: str) -> socket.socket:
    """A connection that has carried one answered request of ``key`` and stays open (keep-alive)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=120)
    s.sendall(head(key, len(BODY)) + BODY)
    status, _, _ = answer(s)
    assert status == 200
    return s


def test_a_connection_over_its_keys_cap_gets_429_before_its_body_is_read_and_is_closed(
    held: list[socket.socket],
) -> None:
    """Two connections of a key are open (idle, kept alive); its third connection's request (headers only, its
    body never sent) is answered 429 with ``Retry-After`` and ``Connection: close``, and the connection closed.
    Another key of the same tenant (its cap is the tenant's 128) and another tenant are served beside it, and a
    request on one of the key's own two connections still is."""
    with _server(max_connections_per_key=2) as srv:
        held += [_kept_alive(srv.port, "evil-key-1") for _ in range(2)]
        with socket.create_connection(("127.0.0.1", srv.port), timeout=120) as s:
            s.sendall(head("evil-key-1", 5000))  # no body: a server that read it would wait for it
            status, headers, _ = answer(s)
            assert status == 429 and int(headers["retry-after"]) >= 1
            assert headers.get("connection") == "close"
            assert s.recv(1) == b""  # closed by the server
        for key in ("evil-key-2", "quiet-key"):
            with socket.create_connection(("127.0.0.1", srv.port), timeout=120) as s:
                s.sendall(head(key, len(BODY)) + BODY)
                assert answer(s)[0] == 200
        held[0].sendall(head("evil-key-1", len(BODY)) + BODY)
        assert answer(held[0])[0] == 200


def test_a_tenants_connections_over_its_cap_never_refuse_another_tenant(held: list[socket.socket]) -> None:
    """One tenant holds its cap of connections across its two keys; its next connection is refused (429 before
    the body), the quiet tenant's never; a connection closed frees its place."""
    with _server(max_connections_per_tenant=3) as srv:
        held += [_kept_alive(srv.port, f"evil-key-{1 + i % 2}") for i in range(3)]
        with socket.create_connection(("127.0.0.1", srv.port), timeout=120) as s:
            s.sendall(head("evil-key-2", 5000))
            assert answer(s)[0] == 429
        held += [_kept_alive(srv.port, "quiet-key") for _ in range(3)]  # its own cap, whatever the other's
        held.pop(0).close()
        for _ in range(200):  # bounded: until the server has seen the close
            with socket.create_connection(("127.0.0.1", srv.port), timeout=120) as s:
                s.sendall(head("evil-key-1", len(BODY)) + BODY)
                if answer(s)[0] == 200:
                    break
            time.sleep(0.05)
        else:
            raise AssertionError("a closed connection's place was never freed")


def test_the_owners_count_each_connection_once_as_its_latest_requests_key() -> None:
    from admit.service.server import Owners

    owners = Owners()
    a, b, c = object(), object(), object()
    assert owners.claim(a, "k1", "t", 2, 9) is None
    assert owners.claim(a, "k1", "t", 2, 9) is None  # the same connection's next request: counted once
    assert owners.claim(b, "k1", "t", 2, 9) is None
    assert owners.claim(c, "k1", "t", 2, 9) == "key"
    assert owners.claim(c, "k2", "t", 2, 3) is None
    assert owners.claim(a, "k2", "t", 2, 3) is None  # a moved to k2: k1 has one now
    assert dict(owners.by_key) == {"k1": 1, "k2": 2} and owners.by_tenant["t"] == 3
    assert owners.claim(object(), "k3", "t", 2, 3) == "tenant"
    for conn in (a, b, c):
        owners.release(conn)
    assert not owners.by_key and not owners.by_tenant


def _spin() -> None:
    while True:
        pass


def test_a_worker_killed_at_its_deadline_is_never_waited_for_on_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job past its deadline has its process killed and replaced; the pool waited for the killed process to
    exit (``join``, up to 1 s) on the event loop, and a niced process on a loaded machine takes a while to be
    scheduled to exit (``/healthz`` stalled with it). The kill is now reaped on a later pass: no ``join`` while
    the pool is open."""
    pytest.importorskip("cloudpickle")
    import multiprocessing.process

    from admit.service.procs import ProcessPool

    joined: list[object] = []
    real = multiprocessing.process.BaseProcess.join

    def join(self: Any, timeout: float | None = None) -> None:
        joined.append(self)
        real(self, timeout)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "join", join)

    async def main() -> tuple[int, int, list[object]]:
        pool = ProcessPool(types.SimpleNamespace(metrics=None, inspect=None), 1, reserve=1, tick_s=0.01)
        try:
            with pytest.raises(TimeoutError):
                await pool.run("acme", _spin, deadline_at=time.monotonic() + 0.3)
            during = list(joined)
            killed = pool.stats.killed
            assert await pool.run("acme", functools.partial(abs, -4), deadline_at=None) == 4  # replaced
            for _ in range(500):  # bounded: until a tick has reaped it
                if not getattr(pool, "_dying", ()):
                    break
                await asyncio.sleep(0.01)
            return killed, len(getattr(pool, "_dying", ())), during
        finally:
            pool.close()

    killed, dying, during = asyncio.run(main())
    assert killed == 1 and during == [] and dying == 0


def test_a_server_with_worker_processes_makes_full_collections_ten_times_rarer_once_ready() -> None:
    """Under a flood the server's full collections walked its requests in flight, 78-88 ms of CPU each with the
    event loop stopped (``bench_fairness.py --gc``); once its heap is frozen, a full collection comes after 100
    collections of the middle generation, not Python's 10. A server whose work runs in threads keeps Python's."""
    pytest.importorskip("fastapi")
    import gc

    from admit.service.config import settings_from_dict
    from admit.service.state import build_state

    before = gc.get_threshold()
    try:
        state = build_state(settings_from_dict({"service": {"limits": {"worker_processes": 0}}}))
        state.use_processes(True)
        assert state.warm_up().status == "ready"
        assert gc.get_threshold() == before
        state = build_state(settings_from_dict({"service": {"limits": {"worker_processes": 1}}}))
        state.use_processes(True)
        assert state.procs is not None
        try:
            assert state.warm_up().status == "ready"
            assert gc.get_threshold() == (before[0], before[1], 100)
        finally:
            state.procs.close()
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)

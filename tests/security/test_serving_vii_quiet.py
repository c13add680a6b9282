"""Issue 47 (Serving VII): the pool's reserve is kept for the quiet tenant under a flood.

A flood tenant whose queue drained down to its last job looked quiet (one job waiting, none running): it took the
reserve kept for quiet tenants and, as a quiet job, had every other short job paused; the quiet tenant's next
search then waited for a worker. A tenant is quiet only while nothing else of its has waited or run since it was
last idle. No test reads the clock: the decisions run on the scheduler core with a simulated one.
"""

from __future__ import annotations

import pytest

from admit.service.fairq import FairQueue
from admit.service.sched import Core
from tests.security._simjob import SimJob


def _queue() -> FairQueue[SimJob]:
    return FairQueue(per_tenant=1, long_cpu_s=0.25, max_queued_per_tenant=64, max_queued_per_key=64, max_queued=999)


def _drained(q: FairQueue[SimJob], tenant: str) -> None:
    """``tenant`` sends two jobs at once; the first runs and ends: one job of it is left waiting, none running."""
    q.add(SimJob(tenant, key=tenant))
    q.add(SimJob(tenant, key=tenant))
    head = q.head("light")
    assert head is not None and head[1].name == tenant
    first = q.pop("light", *head)
    q.done(first, 0.01)


def test_a_flood_drained_to_its_last_job_is_not_fresh() -> None:
    q = _queue()
    _drained(q, "flood")
    t = q.tenants["flood"]
    assert len(t.waiting) == 1 and t.in_flight == 0  # what made it look quiet before
    assert q.fresh() is None
    q.add(SimJob("acme", key="acme"))  # the quiet tenant: one request at a time
    fresh = q.fresh()
    assert fresh is not None and fresh[1].name == "acme"


def test_a_tenant_is_quiet_again_once_idle() -> None:
    q = _queue()
    _drained(q, "flood")
    head = q.head("light")
    assert head is not None
    q.done(q.pop("light", *head), 0.01)  # its last job ran: idle
    q.add(SimJob("flood", key="flood"))
    fresh = q.fresh()
    assert fresh is not None and fresh[1].name == "flood"


def test_the_reserve_goes_to_the_quiet_tenant_not_to_a_drained_flood() -> None:
    """Two regular workers held by the flood, the reserve free: the drained flood tenant's job does not start
    there (nor as a quiet job that pauses the others); the quiet tenant's does, as a quiet job."""
    q = _queue()
    core: Core[SimJob] = Core(q, cores=2, regular=2, reserve=1)
    _drained(q, "flood0")
    for i in (1, 2):  # two backlogged flood tenants hold the regular workers
        for _ in range(5):
            q.add(SimJob(f"flood{i}", key=f"flood{i}"))
    started = []
    while (nxt := core.next_job(free=3 - len(core.running), can_grow=False, now=1.0)) is not None:
        core.started(nxt[0], 1.0)
        started.append(nxt[0])
    assert len(started) == 2
    assert not any(j.quiet for j in started)
    assert core.next_job(free=1, can_grow=False, now=1.0) is None  # the reserve stays free: no quiet tenant waits
    q.add(SimJob("acme", key="acme"))
    nxt = core.next_job(free=1, can_grow=False, now=1.0)
    assert nxt is not None and nxt[0].tenant == "acme" and nxt[0].quiet
    core.started(nxt[0], 1.0)
    plan = core.plan(dict.fromkeys(core.running, 0.0), 1.0)
    assert {j.tenant for j in plan.pause} == {j.tenant for j in started}  # the flood's short jobs wait for it


# ------------------------------------------------------------------ a flood's refusals: once per Retry-After


def test_a_tenant_holding_many_requests_is_told_to_wait_longer() -> None:
    """A flood tenant holding dozens of requests in flight was told ``Retry-After: 1`` and refused again a
    second later, each refusal a request's parse on the event loop: ~550 refusals a second under 17 x 70
    connections. The wait grows with the shares the tenant holds (one more second per ``reserved_per_tenant``
    requests, at most five); a tenant inside its own share is told one."""
    from admit.service.admission import Admission, Refusal
    from admit.service.config import settings_from_dict

    limits = settings_from_dict({"service": {"limits": {"max_in_flight": 12, "reserved_per_tenant": 4}}}).limits
    adm = Admission(limits)
    for _ in range(16):  # 4 of its own share + 12 shared: the shared part is full
        assert not isinstance(adm.enter("key:flood", "flood", 100), Refusal)
    refused = adm.enter("key:flood", "flood", 100)
    assert isinstance(refused, Refusal) and refused.retry_after_s == 5
    adm2 = Admission(limits)
    for _ in range(12):  # only shared requests of others
        assert not isinstance(adm2.enter(f"key:t{_}", f"t{_}", 100), Refusal)
    for _ in range(2):
        assert not isinstance(adm2.enter("key:t0", "t0", 100), Refusal)
    small = adm2.enter("key:x", "t0", 100)  # t0 holds 3 (< 4, its own share): let in
    assert not isinstance(small, Refusal)


def test_a_refusal_waits_its_retry_after_and_says_what_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate held a refused request 1 s whatever its ``Retry-After``; it now holds it for its ``Retry-After``
    (up to ``refusal_delay_s``, 5 s by default: no slot, no body) and its answer says what is left (1 s): a
    flood that ignores ``Retry-After`` is refused once per its wait per connection, not once a second."""
    import asyncio

    import anyio

    from admit.service import gate as gate_module
    from admit.service.admission import Refusal
    from admit.service.gate import Gate

    slept: list[float] = []

    async def no_sleep(s: float) -> None:
        slept.append(s)

    monkeypatch.setattr(anyio, "sleep", no_sleep)
    gate = Gate(lambda *a: None, keyring=lambda: None, max_body_bytes=1000)  # type: ignore[arg-type,return-value]
    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    asyncio.run(gate._refuse(send, Refusal("server", "the server's shared queue is full", 5)))
    assert slept == [5]
    headers = dict(sent[0]["headers"])  # type: ignore[call-overload]
    assert sent[0]["status"] == 429 and headers[b"retry-after"] == b"1"
    slept.clear()
    sent.clear()
    asyncio.run(gate._refuse(send, Refusal("key", "too many", 1, close=False)))
    assert slept == [1] and dict(sent[0]["headers"])[b"retry-after"] == b"1"  # type: ignore[call-overload]
    assert gate_module.Gate.__dataclass_fields__["refusal_delay_s"].default == 5.0


# ------------------------------------------------------------------ where the quiet job's time went


def test_server_timing_splits_the_workers_time_into_core_wait_and_blocked() -> None:
    """``Server-Timing`` names the job thread's wait for a core (``runq``) and the rest it was off a core
    (``blocked``), and the workers busy when the job was queued (``busy``): what tells a starved job from a
    queued or a blocked one."""
    from admit.service.timing import server_timing

    stages = {"worker_start": 1.0, "worker_end": 1.05, "on_core": 0.01, "runq": 0.03, "cpu": 0.01, "busy": 3}
    parts = dict(p.split(";dur=") for p in server_timing(stages).decode().split(", "))
    assert float(parts["work"]) == pytest.approx(50.0)
    assert float(parts["runq"]) == pytest.approx(30.0)
    assert float(parts["blocked"]) == pytest.approx(10.0)
    assert parts["busy"] == "3"


def test_a_worker_reports_its_job_threads_time_on_and_waiting_for_a_core() -> None:
    """The worker's answer carries, beside its wall-clock marks, the job thread's seconds on a core and
    runnable waiting for one (``/proc/thread-self/schedstat``); the pool puts them in the request's marks."""
    import pickle
    import socket
    import threading

    from admit.service.worker import HEADER, _serve

    def job() -> int:
        return sum(range(200_000))

    from admit.service.worker import dumps_job

    a, b = socket.socketpair()
    t = threading.Thread(target=_serve, args=(b, []), daemon=True)
    t.start()
    payload = dumps_job((job, None), None)
    a.sendall(HEADER.pack(len(payload)) + payload)
    raw = b""
    while len(raw) < HEADER.size or len(raw) < HEADER.size + HEADER.unpack_from(raw)[0]:
        raw += a.recv(1 << 20)
    a.close()
    t.join(timeout=30)
    ok, value, _effects, _cpu, walls = pickle.loads(raw[HEADER.size :])
    assert ok and value == sum(range(200_000))
    assert len(walls) == 4
    on_core, runq = walls[2], walls[3]
    assert on_core > 0 and runq >= 0
    assert on_core + runq <= walls[1] - walls[0] + 0.01


# ------------------------------------------------------------------ the job to its worker in the same turn


def test_a_job_is_written_to_its_worker_in_the_turn_of_the_loop_that_starts_it() -> None:
    """The pool handed a job to its worker by a task, which runs on the loop's next turn: under a flood, behind
    every callback the flood's requests had ready (the quiet job's ``hand`` stage, 13-55 ms median at load 15-20).
    The job's frame is now written where it is dispatched; only what the pipe does not take waits for a task."""
    import asyncio
    import os
    import socket
    import types

    from admit.service.procs import ProcessPool, _Job, _Worker
    from admit.service.worker import HEADER

    pool = ProcessPool(types.SimpleNamespace(metrics=None, inspect=None), 1, reserve=1, per_tenant=1)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    mine, theirs = socket.socketpair()
    try:
        mine.setblocking(False)
        theirs.setblocking(False)
        pool._loop = loop
        pool._started = True  # no fork: the one worker is the stand-in below
        proc = types.SimpleNamespace(pid=os.getpid(), is_alive=lambda: True, kill=lambda: None, exitcode=None)
        w = _Worker(proc, mine, prompt=True)
        pool._workers.append(w)
        pool._free.append(w)
        job: _Job = _Job("acme", "key:acme", None, loop.create_future(), 0, size=7)
        pool._payloads[job] = b"payload"
        pool.queue.add(job)
        pool._dispatch()  # no turn of the loop runs after this
        try:
            got = theirs.recv(1024)
        except BlockingIOError:
            got = b""
        assert job.worker is w
        assert got == HEADER.pack(7) + b"payload"
    finally:
        loop.remove_reader(mine.fileno())
        if pool._ticker is not None:
            pool._ticker.cancel()
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        asyncio.set_event_loop(None)
        loop.close()
        mine.close()
        theirs.close()

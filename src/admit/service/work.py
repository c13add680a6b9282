"""The thread pool request work runs in for an app built in-process, fair across tenants by the scheduler core the
process pool shares (see :class:`WorkPool`; ``admit serve`` uses :class:`~admit.service.procs.ProcessPool`)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
from anyio.lowlevel import RunVar

from admit import _deadline
from admit.service.fairq import FairQueue
from admit.service.sched import Core

__all__ = ["SWITCH_INTERVAL_S", "Job", "WorkPool", "responsive_interpreter"]

T = TypeVar("T")

SWITCH_INTERVAL_S = 0.0005
"""How often a worker thread that runs Python code hands the interpreter lock on when another thread waits for
it (CPython's default is 5 ms). A served request passes the lock between the event loop and its worker
several times, so with the default each hand-over behind a busy worker can cost up to 5 ms; the server sets
0.5 ms, which keeps ``/healthz`` and other tenants' requests near their quiet latency while one tenant's
expensive requests run (``bench/bench_availability.py``)."""


def responsive_interpreter() -> None:
    """Set the interpreter's thread switch interval to :data:`SWITCH_INTERVAL_S` (``admit serve``, ``admit mcp``
    over HTTP: a server process; the library never changes it)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


@dataclass(slots=True, eq=False)
class Job:
    """One request in the pool: its tenant, when it started, and what the scheduler core reads of it."""

    tenant: str
    start: float = field(default_factory=time.monotonic)
    young: bool = True
    key: str = ""
    size: int = 0
    estimate: float = 0.0
    deadline_at: float | None = None
    long: bool = False
    heavy: bool = False
    quiet: bool = False
    over: bool = False
    stopped: bool = False
    since: float = 0.0
    cpu: float = 0.0
    event: anyio.Event | None = None


class WorkPool:
    """The worker threads request work runs in, shared fairly between tenants by the scheduler core both pools
    use (:class:`admit.service.sched.Core`).

    **Admission** (which waiting request gets a worker next): start-time fair queuing by tenant, a tenant charged
    its threads' CPU time. One tenant holds at most ``per_tenant`` workers; all tenants together at most
    ``size - reserve``; the last ``reserve`` workers go only to a quiet tenant (one request waiting, none in
    flight), so a set of tenants (one customer's eight accounts) that keeps expensive requests in flight never
    takes the last workers; while every worker is held, a quiet tenant may still start (up to ``hard_cap``
    threads) as long as fewer than ``reserve`` requests are short. While long requests run, short ones start only
    up to :func:`admit.service.sched.short_cap`: long work keeps its share.

    **CPU** (which running request gets the interpreter): while a quiet tenant's request runs, the backlogged
    tenants' short requests wait at their checkpoints as the core says; a request that has run longer than
    ``long_s`` is long; at its checkpoints (every regex call and the long loops call
    :func:`admit._deadline.checkpoint`) it waits while the core pauses it: of the long requests,
    :func:`admit.service.sched.lanes_for` run at once, never fewer than one, taking turns of ``slice_s`` (the
    one paused longest next), so however many long requests are in flight a short one competes with few of them
    for the interpreter, and none stays paused longer than :func:`admit.service.sched.max_pause_s`.
    """

    def __init__(
        self,
        size: int = 0,
        per_tenant: int = 0,
        *,
        reserve: int = 0,
        long_s: float = 0.25,
        max_queued_per_tenant: int = 64,
        max_queued: int = 1024,
        cores: int = 0,
    ) -> None:
        """``0`` sizes to the machine (see :class:`~admit.service.config.Limits`)."""
        n = cores or os.cpu_count() or 2
        self.size = size or min(64, max(4, 4 * n))
        """Worker threads at once (plus up to ``reserve`` while every one is held by long requests)."""
        self.reserve = min(self.size - 1, reserve or max(1, self.size // 4)) if self.size > 1 else 0
        """Workers only a tenant with nothing in flight (and no recent long request) may take."""
        self.per_tenant = min(self.size - self.reserve or 1, per_tenant or max(1, n // 2))
        """Of those, the most one tenant holds."""
        self.hard_cap = max(64, 2 * self.size)
        """Most threads at once, fresh tenants' included."""
        self.long_s = long_s
        """A request running longer than this is a long one (it yields the interpreter to short ones)."""
        self.core: Core[Job] = Core.with_queue(
            cores=n,
            regular=max(1, self.size - self.reserve),
            reserve=self.reserve,
            per_tenant=self.per_tenant,
            long_cpu_s=long_s,
            max_queued_per_tenant=max_queued_per_tenant,
            max_queued_per_key=max_queued_per_tenant,
            max_queued=max_queued,
        )
        self.queue: FairQueue[Job] = self.core.queue
        """Which request starts, which long one runs (:mod:`admit.service.sched`, shared with the process pool)."""
        self._cpu = threading.Condition()
        """Guards the core: the loop starts and ends jobs, the worker threads ask it at their checkpoints."""
        self._holder: Job | None = None
        self._holder_since = 0.0
        self._quiet = 0
        """Quiet tenants' requests running: while any does, the others' short ones ask the core at checkpoints."""
        self.quantum_s = 0.02
        """How often a running long request asks the core again (lock-free in between)."""

    # ------------------------------------------------------------------ admission (on the event loop)

    def _mark_heavy(self, tenant: str) -> None:
        """``tenant``'s requests ran long lately: it is served as a heavy tenant."""
        with self._cpu:
            self.queue.mark_long(tenant, self.long_s)

    def _dispatch(self) -> None:
        with self._cpu:
            now = time.monotonic()
            self.core.plan({j: now - j.start for j in self.core.running}, now)  # young requests age into long
            while True:
                free = self.size - len(self.core.running)
                nxt = self.core.next_job(free=free, can_grow=len(self.core.running) < self.hard_cap)
                if nxt is None:
                    return
                job = nxt[0]
                job.start = time.monotonic()
                self.core.started(job, job.start)
                self._quiet += job.quiet
                assert job.event is not None
                job.event.set()

    def _release(self, job: Job) -> None:
        with self._cpu:
            if time.monotonic() - job.start > self.long_s:
                self.queue.mark_long(job.tenant, max(job.cpu, self.long_s))
            if job in self.core.running:
                self._quiet -= job.quiet
            self.core.ended(job, job.cpu)
            self._cpu.notify_all()
        self._dispatch()

    @asynccontextmanager
    async def slot(self, tenant: str) -> AsyncIterator[Job]:
        """Hold a worker for ``tenant`` (waiting in the fair queue for it) while the block runs."""
        job = Job(tenant, key=f"tenant:{tenant}", event=anyio.Event())
        with self._cpu:
            self.queue.check(tenant, job.key)  # past a bound: Overloaded (429)
            self.queue.add(job)
        self._dispatch()
        assert job.event is not None
        try:
            while not job.event.is_set():
                # young requests age: a tenant held back by them is reconsidered as they do
                with anyio.move_on_after(self.long_s / 2):
                    await job.event.wait()
                if not job.event.is_set():
                    self._dispatch()
        except BaseException:
            with self._cpu:
                waiting = self.queue.remove(job)
            if not waiting:
                self._release(job)
            raise
        try:
            yield job
        finally:
            self._release(job)

    async def run(self, tenant: str, fn: Callable[[], T], *, deadline_at: float | None = None) -> T:
        """Run ``fn`` in a worker thread in ``tenant``'s fair share, cancelled (abandoned) with its caller."""
        async with self.slot(tenant) as job:
            job.deadline_at = deadline_at
            return await anyio.to_thread.run_sync(
                self._in_thread, job, fn, deadline_at, abandon_on_cancel=True, limiter=self._threads()
            )

    def _threads(self) -> anyio.CapacityLimiter:
        key: RunVar[anyio.CapacityLimiter] = _THREADS
        try:
            return key.get()
        except LookupError:
            lim = anyio.CapacityLimiter(self.hard_cap)  # admission bounds the count; this lifts anyio's default 40
            key.set(lim)
            return lim

    # ------------------------------------------------------------------ CPU share (in the worker threads)

    def _in_thread(self, job: Job, fn: Callable[[], T], deadline_at: float | None) -> T:
        cpu0 = time.thread_time()
        try:
            with _deadline.deadline(deadline_at), _deadline.scheduled(lambda: self._checkpoint(job, deadline_at)):
                return fn()
        finally:
            job.cpu = time.thread_time() - cpu0
            with self._cpu:
                if self._holder is job:
                    self._holder = None
                self._cpu.notify_all()

    def _checkpoint(self, job: Job, deadline_at: float | None) -> None:
        now = time.monotonic()
        if job.young:
            if now - job.start <= self.long_s and (job.quiet or not self._quiet):
                return  # short, and no quiet tenant's request runs ahead of it: no lock
            if now - job.start > self.long_s:
                job.young = False
        if self._holder is job and now - self._holder_since < self.quantum_s:
            return  # the common case: the running long request keeps its turn, no lock
        with self._cpu:
            while True:
                now = time.monotonic()
                if deadline_at is not None and now > deadline_at:
                    return  # the checkpoint raises DeadlineExceeded
                if job not in self.core.running:
                    return  # released (its caller gone): it ends at its deadline's next checkpoint
                plan = self.core.plan({j: now - j.start for j in self.core.running}, now)
                if job not in plan.pause:
                    if job.stopped:
                        self.core.paused(job, False, now)
                    self._holder, self._holder_since = job, now
                    return
                if not job.stopped:
                    self.core.paused(job, True, now)
                    if self._holder is job:
                        self._holder = None
                    self._cpu.notify_all()
                self._cpu.wait(0.01)


_THREADS: RunVar[anyio.CapacityLimiter] = RunVar("admit-work-threads")

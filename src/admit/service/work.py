"""The worker pool request work runs in, fair across tenants (see :class:`WorkPool`)."""

from __future__ import annotations

import itertools
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
from admit.errors import Overloaded

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
    """One admitted request: its tenant, when it started, and whether it still counts as short."""

    tenant: str
    start: float = field(default_factory=time.monotonic)
    young: bool = True


@dataclass(slots=True, eq=False)
class _Waiter:
    tenant: str
    seq: int
    event: anyio.Event = field(default_factory=anyio.Event)
    job: Job | None = None


@dataclass(slots=True)
class _Admission:
    """The per-event-loop admission state (counts, the queue)."""

    in_flight: dict[str, int] = field(default_factory=dict)
    jobs: set[Job] = field(default_factory=set)
    waiting: list[_Waiter] = field(default_factory=list)


class WorkPool:
    """The worker threads request work runs in, shared fairly between tenants.

    **Admission** (which waiting request gets a worker next): waiting requests are served tenant by tenant: a
    tenant with nothing in flight goes ahead of tenants already holding workers, a tenant whose requests have
    lately run long (over ``long_s``) after those, and within a class the tenant that has waited longest. One
    tenant holds at most ``per_tenant`` workers; all tenants together at most ``size - reserve``. The last
    ``reserve`` workers go only to a tenant with nothing in flight that has not lately run long, so a set of
    tenants (one customer's eight accounts) that keeps expensive requests in flight never takes the last
    workers; while every worker is held, such a tenant may still start (up to ``hard_cap`` threads) as long as
    fewer than ``reserve`` requests are short (the long ones yield the interpreter, see below).

    **CPU** (which running request gets the interpreter): a request that has run longer than ``long_s`` waits
    at its next checkpoint (every regex call and the long loops call :func:`admit._deadline.checkpoint`) while
    a request that has not (a short search beside a long pack) is running, so short requests keep close to their
    quiet latency however many long ones are in flight (least-attained-service scheduling). Long requests share
    what is left, inside their deadline, one at a time, the oldest first (the earliest deadline): however many
    long requests are in flight, a short one competes with one of them for the interpreter, not with all, and
    the long ones finish in turn instead of all running past their deadline together.
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
    ) -> None:
        """``0`` sizes to the machine (see :class:`~admit.service.config.Limits`)."""
        cores = os.cpu_count() or 2
        self.size = size or min(64, max(4, 4 * cores))
        """Worker threads at once (plus up to ``reserve`` while every one is held by long requests)."""
        self.reserve = min(self.size - 1, reserve or max(1, self.size // 4)) if self.size > 1 else 0
        """Workers only a tenant with nothing in flight (and no recent long request) may take."""
        self.per_tenant = min(self.size - self.reserve or 1, per_tenant or max(1, cores // 2))
        """Of those, the most one tenant holds."""
        self.hard_cap = max(64, 2 * self.size)
        """Most threads at once, fresh tenants' included."""
        self.long_s = long_s
        """A request running longer than this is a long one (it yields the interpreter to short ones)."""
        self.heavy_for_s = 60.0
        """How long a tenant whose request ran long is served after the others."""
        self._heavy_until: dict[str, float] = {}
        self._state: RunVar[_Admission] = RunVar(f"admit-work-{id(self)}")
        self._seq = itertools.count()
        self._cpu = threading.Condition()
        self._young: dict[Job, None] = {}
        self._holder: Job | None = None
        self._holder_since = self._holder_seen = 0.0
        self._queued: dict[Job, None] = {}
        self.quantum_s = 0.02
        """How often the running long request looks for an older one waiting (lock-free in between)."""
        self.idle_s = 0.1
        """A turn whose holder has not reached a checkpoint for this long (I/O) is given to the next."""
        self.max_queued_per_tenant = max_queued_per_tenant
        """Most requests of one tenant waiting; past it :class:`~admit.errors.Overloaded` (429)."""
        self.max_queued = max_queued
        self.reserved_queue = 4
        """Requests of one tenant (waiting and running) let in however full the queue is: its own share."""
        """Most requests waiting in all (so a re-rank of the waiters stays bounded); past it 429."""

    # ------------------------------------------------------------------ admission (on the event loop)

    def _admission(self) -> _Admission:
        try:
            return self._state.get()
        except LookupError:
            st = _Admission()
            self._state.set(st)
            return st

    def heavy(self, tenant: str, now: float | None = None) -> bool:
        """Whether ``tenant`` had a request run long lately (it is served after the others)."""
        until = self._heavy_until.get(tenant)
        return until is not None and (now if now is not None else time.monotonic()) < until

    def _admissible(self, st: _Admission, tenant: str, now: float) -> bool:
        held = st.in_flight.get(tenant, 0)
        if held >= self.per_tenant:
            return False
        total = len(st.jobs)
        if total < self.size - self.reserve:
            return True
        if held or self.heavy(tenant, now):
            return False
        if total < self.size:
            return True
        # every worker is held: a fresh tenant may still start while few requests are short (the held ones
        # are long and yield the interpreter to it), up to ``hard_cap`` threads
        young = sum(1 for j in st.jobs if j.young and now - j.start <= self.long_s)
        return young < self.reserve and total < self.hard_cap

    def _rank(self, st: _Admission, w: _Waiter, now: float) -> tuple[int, int, int, int]:
        held = st.in_flight.get(w.tenant, 0)
        return (held > 0, self.heavy(w.tenant, now), held, w.seq)

    def _dispatch(self, st: _Admission) -> None:
        now = time.monotonic()
        while st.waiting:
            for w in sorted(st.waiting, key=lambda w: self._rank(st, w, now)):
                if self._admissible(st, w.tenant, now):
                    st.waiting.remove(w)
                    w.job = self._take(st, w.tenant)
                    w.event.set()
                    break
            else:
                return

    def _take(self, st: _Admission, tenant: str) -> Job:
        job = Job(tenant)
        st.jobs.add(job)
        st.in_flight[tenant] = st.in_flight.get(tenant, 0) + 1
        with self._cpu:
            self._young[job] = None
        return job

    def _release(self, st: _Admission, job: Job) -> None:
        st.jobs.discard(job)
        left = st.in_flight.get(job.tenant, 1) - 1
        if left:
            st.in_flight[job.tenant] = left
        else:
            st.in_flight.pop(job.tenant, None)
        if time.monotonic() - job.start > self.long_s:
            self._mark_heavy(job.tenant)
        with self._cpu:
            self._young.pop(job, None)
            self._cpu.notify_all()
        self._dispatch(st)

    def _mark_heavy(self, tenant: str) -> None:
        now = time.monotonic()
        self._heavy_until[tenant] = now + self.heavy_for_s
        if len(self._heavy_until) > 10_000:  # bounded: a burst of tenants cannot grow it without limit
            for key in [k for k, v in list(self._heavy_until.items()) if v < now]:  # a snapshot: workers write too
                self._heavy_until.pop(key, None)

    @asynccontextmanager
    async def slot(self, tenant: str) -> AsyncIterator[Job]:
        """Hold a worker for ``tenant`` (waiting in the fair queue for it) while the block runs."""
        st = self._admission()
        crowded = len(st.waiting) >= min(self.max_queued, self.max_queued_per_tenant)
        mine = sum(1 for x in st.waiting if x.tenant == tenant) if crowded else 0
        full = len(st.waiting) >= self.max_queued and mine + st.in_flight.get(tenant, 0) >= self.reserved_queue
        if full or mine >= self.max_queued_per_tenant:  # (a tenant inside its own share is never refused for others)
            raise Overloaded("too many requests waiting for a worker; retry after 1 s", retry_after_s=1.0)
        w = _Waiter(tenant, next(self._seq))
        st.waiting.append(w)
        self._dispatch(st)
        try:
            while not w.event.is_set():
                # young requests age: a tenant held back by them is reconsidered as they do
                with anyio.move_on_after(self.long_s / 2):
                    await w.event.wait()
                if not w.event.is_set():
                    self._dispatch(st)
        except BaseException:
            if w.job is None:
                st.waiting.remove(w)
            else:
                self._release(st, w.job)
            raise
        assert w.job is not None
        try:
            yield w.job
        finally:
            self._release(st, w.job)

    async def run(self, tenant: str, fn: Callable[[], T], *, deadline_at: float | None = None) -> T:
        """Run ``fn`` in a worker thread in ``tenant``'s fair share, cancelled (abandoned) with its caller."""
        async with self.slot(tenant) as job:
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
        try:
            with _deadline.deadline(deadline_at), _deadline.scheduled(lambda: self._checkpoint(job, deadline_at)):
                return fn()
        finally:
            with self._cpu:
                self._young.pop(job, None)
                if self._holder is job:
                    self._holder = None
                self._cpu.notify_all()

    def _checkpoint(self, job: Job, deadline_at: float | None) -> None:
        now = time.monotonic()
        if job.young:
            if now - job.start <= self.long_s:
                return
            job.young = False
            self._heavy_until[job.tenant] = now + self.heavy_for_s
            with self._cpu:
                self._young.pop(job, None)
                self._cpu.notify_all()
        if not self._young and self._holder is job and now - self._holder_since < self.quantum_s:
            self._holder_seen = now  # the common case: the running long request keeps its turn, no lock
            return
        with self._cpu:
            while True:
                now = time.monotonic()
                for j in [j for j in self._young if now - j.start > self.long_s]:
                    del self._young[j]  # a short job that stopped calling checkpoints ages all the same
                if deadline_at is not None and now > deadline_at:
                    if self._holder is job:
                        self._holder = None
                        self._cpu.notify_all()
                    return  # the checkpoint raises DeadlineExceeded
                if self._young:
                    if self._holder is job:
                        self._holder = None
                        self._cpu.notify_all()
                elif self._holder is job:
                    first = min(self._queued, key=lambda j: j.start, default=job)
                    if first.start >= job.start:
                        self._holder_seen, self._holder_since = now, now
                        return
                    self._holder = None  # an older long request (an earlier deadline) is waiting: its turn
                    self._cpu.notify_all()
                elif self._holder is None or now - self._holder_seen > self.idle_s:
                    # free, or its holder is off the CPU (waiting on I/O) for a while: the oldest waiter takes it
                    first = min(self._queued, key=lambda j: j.start, default=job)
                    if first.start >= job.start:
                        self._holder, self._holder_since, self._holder_seen = job, now, now
                        return
                self._queued[job] = None
                try:
                    self._cpu.wait(0.01)
                finally:
                    self._queued.pop(job, None)


_THREADS: RunVar[anyio.CapacityLimiter] = RunVar("admit-work-threads")

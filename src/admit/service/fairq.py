"""The fair queue of both worker pools (through their scheduler core, :class:`~admit.service.sched.Core`): start-time
fair queuing by tenant, and the bounds on what waits.

Each tenant has a FIFO of waiting jobs and a virtual finish time; a tenant with waiting jobs sits in a heap by its
start tag ``max(V, finish)``, ``V`` the tag of the last job dispatched. A dispatch (:meth:`FairQueue.pop`) takes
the smallest tag (``O(log n)``), advances the tenant's finish by the job's expected cost, and the job's real CPU
time corrects it when it ends (:meth:`FairQueue.done`): a tenant is charged what its jobs really cost. Stale heap
entries are skipped lazily (a generation number), never re-sorted. Tenants are in one of two heaps: *light*
(recent jobs under ``long_cpu_s`` of CPU each, and a next body under ``light_bytes``) and *heavy*.

Bounded waiting (:meth:`FairQueue.check`): ``max_queued_per_tenant`` jobs of one tenant, ``max_queued_per_key`` of
one key, ``max_queued`` in all (a tenant with fewer than ``reserved`` jobs waiting or running is let in however
full the queue is: its own share); past a bound :class:`~admit.errors.Overloaded` (429, ``Retry-After``).
"""

from __future__ import annotations

import collections
import heapq
import itertools
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from admit.errors import Overloaded

__all__ = ["FairQueue", "QueuedJob", "TenantQueue"]


class QueuedJob(Protocol):
    """What the queue reads and writes of a job."""

    tenant: str
    key: str
    size: int
    estimate: float


J = TypeVar("J", bound=QueuedJob)


@dataclass(slots=True, eq=False)
class TenantQueue(Generic[J]):
    """A tenant in the fair queue: its virtual ``finish`` time, its waiting jobs, ``cost`` (the moving average of
    its CPU seconds per job) and ``charged`` (the CPU seconds its jobs have used in all)."""

    name: str
    finish: float = 0.0
    waiting: collections.deque[J] = field(default_factory=collections.deque)
    in_flight: int = 0
    cost: float = 0.0
    jobs: int = 0
    charged: float = 0.0
    gen: int = 0
    queued_in: str | None = None
    backlogged: bool = False
    """A job of it was added while another of its waited or ran, and it has not been idle (nothing waiting, nothing
    running) since: a flood drained down to its last job is not a quiet tenant (:meth:`FairQueue.fresh`)."""


@dataclass(eq=False, repr=False, kw_only=True)
class FairQueue(Generic[J]):
    """Waiting jobs by tenant, dispatched by start-time fair queuing (module docstring)."""

    per_tenant: int
    """Most jobs of one tenant running at once (a tenant at it is not in a heap)."""
    long_cpu_s: float
    max_queued_per_tenant: int
    max_queued_per_key: int
    max_queued: int
    reserved: int = 4
    """Jobs of one tenant (waiting and running) let in however full the queue is: its own share."""
    light_bytes: int = 256_000
    """A job this big (pickled, the body in it) is never a light tenant's: it does not take the reserve."""
    cpu_per_byte: float = 2e-6
    """The first estimate of a job's CPU seconds per byte of it (2 s per MB), before its tenant's jobs tell."""
    tenants: dict[str, TenantQueue[J]] = field(init=False, default_factory=dict)
    heaps: dict[str, list[tuple[float, int, int, TenantQueue[J]]]] = field(
        init=False, default_factory=lambda: {"light": [], "heavy": []}
    )
    queued: int = field(init=False, default=0)
    """Jobs waiting in all."""
    by_key: collections.Counter[str] = field(init=False, default_factory=collections.Counter)
    vtime: float = field(init=False, default=0.0)
    _seq: itertools.count[int] = field(init=False, default_factory=itertools.count)

    def tenant(self, name: str) -> TenantQueue[J]:
        """The tenant's entry (made on first sight; idle tenants are forgotten past 10,000)."""
        t = self.tenants.get(name)
        if t is None:
            t = self.tenants[name] = TenantQueue(name)
            if len(self.tenants) > 10_000:  # bounded: idle tenants are forgotten
                for k in [k for k, v in self.tenants.items() if not v.waiting and not v.in_flight][:5_000]:
                    del self.tenants[k]
                self.tenants[name] = t
        return t

    def light(self, t: TenantQueue[J]) -> bool:
        """Light: the tenant's jobs have cost under ``long_cpu_s`` each (none yet: taken as light) and its next
        job's body is under ``light_bytes`` (a tenant's first 1 MB pack is not taken for a search)."""
        if t.waiting and t.waiting[0].size >= self.light_bytes:
            return False
        return t.jobs == 0 or t.cost < self.long_cpu_s

    def check(self, tenant: str, key: str) -> None:
        """Raise :class:`Overloaded` when a job of ``tenant`` and ``key`` may not wait now."""
        t = self.tenant(tenant)
        retry = max(1, round(min(30.0, max(t.cost, 0.05) * (len(t.waiting) + 1))))
        if len(t.waiting) >= self.max_queued_per_tenant:
            raise Overloaded(
                f"too many requests of this tenant waiting ({len(t.waiting)}); retry after {retry} s",
                retry_after_s=retry,
            )
        if self.by_key[key] >= self.max_queued_per_key:
            raise Overloaded(f"too many requests of this key waiting; retry after {retry} s", retry_after_s=retry)
        if self.queued >= self.max_queued and len(t.waiting) + t.in_flight >= self.reserved:
            raise Overloaded(f"the server's queue is full; retry after {retry} s", retry_after_s=retry)

    def add(self, job: J, *, front: bool = False) -> None:
        """Queue ``job`` at the end of its tenant's FIFO (``front``: first, a job that already waited its turn)."""
        t = self.tenant(job.tenant)
        if t.waiting or t.in_flight:
            t.backlogged = True
        if front:
            t.waiting.appendleft(job)
        else:
            t.waiting.append(job)
        self.queued += 1
        self.by_key[job.key] += 1
        if front or t.queued_in is None:
            self.push(t)

    def remove(self, job: J) -> bool:
        """Drop a waiting ``job`` (its caller is gone); ``False`` when it was not waiting."""
        t = self.tenants.get(job.tenant)
        if t is None or job not in t.waiting:
            return False
        t.waiting.remove(job)
        self._taken(job)
        self._idle(t)
        return True

    @staticmethod
    def _idle(t: TenantQueue[J]) -> None:
        """``t`` is quiet again once nothing of it waits or runs."""
        if not t.waiting and not t.in_flight:
            t.backlogged = False

    def _taken(self, job: J) -> None:
        self.queued -= 1
        self.by_key[job.key] -= 1
        if self.by_key[job.key] <= 0:
            del self.by_key[job.key]

    def push(self, t: TenantQueue[J]) -> None:
        """Put ``t`` in its heap at its start tag, if it has a job waiting and may start one."""
        if not t.waiting or t.in_flight >= self.per_tenant:
            t.queued_in = None
            return
        t.gen += 1
        which = "light" if self.light(t) else "heavy"
        t.queued_in = which
        heapq.heappush(self.heaps[which], (max(self.vtime, t.finish), next(self._seq), t.gen, t))

    def head(self, which: str) -> tuple[float, TenantQueue[J]] | None:
        """The smallest start tag of heap ``which`` and its tenant (``None``: no tenant there may start a job)."""
        heap = self.heaps[which]
        while heap:
            tag, _, gen, t = heap[0]
            if gen == t.gen and t.queued_in == which and t.waiting and t.in_flight < self.per_tenant:
                if (which == "light") == self.light(t):
                    return tag, t
                heapq.heappop(heap)  # it turned heavy (a job of its ran long): into the other heap
                self.push(t)
                continue
            heapq.heappop(heap)  # stale: the tenant moved, emptied its queue or reached its cap
        return None

    @staticmethod
    def quiet(t: TenantQueue[J]) -> bool:
        """No backlog: one job waiting, none running, and none other since it was last idle (a flood tenant whose
        queue drained down to one job is not quiet: it would take the reserve kept for quiet tenants)."""
        return len(t.waiting) == 1 and not t.in_flight and not t.backlogged

    def fresh(self) -> tuple[float, TenantQueue[J]] | None:
        """The light tenant with the smallest start tag among the quiet ones (:meth:`quiet`): whom the pool's
        reserve is kept for."""
        best: tuple[float, int, TenantQueue[J]] | None = None
        for tag, seq, gen, t in self.heaps["light"]:
            if gen != t.gen or t.queued_in != "light" or not self.quiet(t) or not self.light(t):
                continue
            if best is None or (tag, seq) < best[:2]:
                best = (tag, seq, t)
        return (best[0], best[2]) if best is not None else None

    def pop(self, which: str, tag: float, t: TenantQueue[J]) -> J:
        """Dispatch the first job of ``t`` (in heap ``which`` at ``tag``; its entry there is dropped, now or
        lazily): its expected cost is charged ahead to the tenant's finish time."""
        heap = self.heaps[which]
        if heap and heap[0][3] is t:
            heapq.heappop(heap)
        t.gen += 1  # any entry of it left in a heap is stale from here
        self.vtime = max(self.vtime, tag)
        job = t.waiting.popleft()
        self._taken(job)
        job.estimate = max(t.cost if t.jobs else 0.01, job.size * self.cpu_per_byte)
        t.finish = max(self.vtime, t.finish) + job.estimate
        t.in_flight += 1
        t.queued_in = None
        self.push(t)
        return job

    def done(self, job: J, cpu: float) -> None:
        """``job`` ended after ``cpu`` seconds of CPU: its tenant is charged what it really cost."""
        t = self.tenant(job.tenant)
        t.in_flight -= 1
        t.charged += cpu
        t.finish += cpu - job.estimate
        t.cost = cpu if t.jobs == 0 else 0.7 * t.cost + 0.3 * cpu
        t.jobs += 1
        self._idle(t)
        self.push(t)

    def undo(self, job: J) -> None:
        """``job`` is to run again from the start (its worker died): not charged, back first in its queue."""
        t = self.tenant(job.tenant)
        t.in_flight -= 1
        t.finish -= job.estimate
        self.add(job, front=True)

    def mark_long(self, tenant: str, used: float) -> None:
        """A running job of ``tenant`` has used ``used`` CPU seconds, over ``long_cpu_s``: heavy from now on."""
        t = self.tenant(tenant)
        t.cost = max(t.cost, used)
        t.jobs = max(t.jobs, 1)

    def waiting_by_class(self) -> dict[str, int]:
        """Jobs waiting, by class (``light``, ``heavy``)."""
        queued = {"light": 0, "heavy": 0}
        for t in self.tenants.values():
            if t.waiting:
                queued["light" if self.light(t) else "heavy"] += len(t.waiting)
        return queued

"""The scheduler core both worker pools share: which waiting job starts, and which running long job gets the CPU.

Decisions only: no processes, no threads, no clock of its own (every call is given ``now``, every running job's
CPU is read by the pool), so a test drives it on a simulated clock. :class:`~admit.service.procs.ProcessPool`
acts on its decisions with forks and ``SIGSTOP``/``SIGCONT``; :class:`~admit.service.work.WorkPool` with its
threads' checkpoints.

**Which job starts** (:meth:`Core.next_job`): start-time fair queuing by tenant (:class:`~admit.service.fairq.
FairQueue`), a tenant charged the CPU its jobs really cost. The first ``regular`` workers go to any tenant; the
rest (the reserve) only to a quiet tenant (one job waiting, none running, no other since it was last idle:
:meth:`~admit.service.fairq.FairQueue.quiet`). A heavy tenant's job (its jobs cost
over ``long_cpu_s``) may start whenever no long job holds the long lane, whoever fills the other workers: by its
fair-queue tag, and first once ``lane_after`` short jobs (a turn of every worker) have started ahead of it there.

**Long work's guaranteed share.** A job that has used over ``long_cpu_s`` of CPU (or any job of a heavy tenant)
is long. While long jobs run, short jobs start only while fewer than :func:`short_cap` of them run: the long
ones keep at least ``min(long jobs, cores - 1)`` cores, and at least a half of one core on a single core, whatever
the number of short jobs waiting (issue 47: a prune that took 3 s alone took 35-58 s beside three light
tenants, which kept every core). Short jobs already running are never paused: they end within ``long_cpu_s``.

**A quiet tenant first.** A job of a tenant that had nothing else waiting or running when it started (*quiet*)
runs first while it is short: the backlogged tenants' short jobs beyond ``cores - 1 - quiet jobs`` are paused
until it ends (at most ``long_cpu_s`` of its CPU: past that it is long and loses the priority), so a quiet
tenant's search gets a core beside any flood of searches, and the loop keeps one (issue 47: the quiet tenant's
p99 was 24x under 17 tenants x 70 connections).

**Over its share, niced** (:class:`ShareBook`, given to the core by the process pool): each tenant's recent CPU
(seconds its jobs used, decayed with a time constant of ``window_s``) is the pool's own accounting. A job is
*over its share* when its tenant has a backlog (another job of its waiting or running: a quiet tenant never is)
and what it asks for, its recent CPU plus the estimated CPU of its jobs waiting, is over an equal split of the
recent CPU of every tenant that used the pool in the window (two at least: a tenant alone is over no one's share).
The pool runs such a job in a worker process nicer than the others (:class:`~admit.service.procs.ProcessPool`),
so a flood's jobs yield the cores to the server's loop and to tenants within their share, beside any number of
them. Decided when the job starts (:meth:`Core.next_job`, ``job.over``).

**Which long job runs** (:meth:`Core.plan`): of the long jobs, :func:`lanes_for` run at once (never fewer than
``min_lanes``), taking turns: a job keeps its lane for ``slice_s`` once resumed, then yields it to the job paused
longest (:func:`long_lanes`). So no job stays paused longer than :func:`max_pause_s`. Jobs past their deadline
are named for the pool to stop.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from admit.service.fairq import FairQueue, TenantQueue

__all__ = [
    "Core",
    "LaneJob",
    "Plan",
    "SchedJob",
    "ShareBook",
    "lanes_for",
    "long_lanes",
    "max_pause_s",
    "short_cap",
]


@dataclass(frozen=True, slots=True)
class LaneJob:
    """A long job as the lane rule sees it: ``running`` or paused ``since`` that time (a monotonic clock)."""

    ident: int
    running: bool
    since: float
    deadline: float = float("inf")


def lanes_for(cores: int, short: int, min_lanes: int = 1) -> int:
    """How many long jobs run at once: the cores the ``short`` jobs leave (one kept for the server's loop while any
    short job runs), never fewer than ``min_lanes``."""
    free = cores - short - 1 if short else cores
    return max(min_lanes, free)


def short_cap(cores: int, long_running: int) -> int:
    """Most short jobs running at once beside ``long_running`` long ones: the cores those leave, at least one (a
    very large number when no long job runs)."""
    if not long_running:
        return 1 << 30
    return max(1, cores - long_running)


def long_lanes(jobs: Sequence[LaneJob], lanes: int, now: float, slice_s: float) -> set[int]:
    """The long jobs that run now: those inside the slice they were resumed for, then the ones paused longest,
    then the running ones whose slice is over (earliest deadline first), ``lanes`` of them."""

    def rank(j: LaneJob) -> tuple[int, float, float]:
        if j.running:
            return (0 if now - j.since < slice_s else 2, 0.0, j.deadline)
        return (1, j.since, j.deadline)  # paused: the earliest ``since`` (paused longest) first

    return {j.ident for j in sorted(jobs, key=rank)[: max(0, lanes)]}


def max_pause_s(long_jobs: int, lanes: int, slice_s: float, tick_s: float) -> float:
    """The longest a long job stays paused under :func:`long_lanes` with ``long_jobs`` long jobs in ``lanes``."""
    if long_jobs <= lanes:
        return 0.0
    turns = -(-long_jobs // max(1, lanes))  # ceil
    return turns * (slice_s + tick_s)


class SchedJob(Protocol):
    """What the core reads and writes of a job (the pools' job records carry these)."""

    tenant: str
    key: str
    size: int
    estimate: float
    deadline_at: float | None
    long: bool
    heavy: bool
    quiet: bool
    over: bool
    stopped: bool
    since: float


J = TypeVar("J", bound=SchedJob)


@dataclass(slots=True)
class ShareBook:
    """Each tenant's recent CPU, the pool's own accounting: the CPU seconds its jobs used, decayed exponentially
    with time constant ``window_s`` (so about what it used in the last ``window_s``), and who is over its share
    (:meth:`over`). Decisions only: every call is given ``now`` (a monotonic clock)."""

    window_s: float = 2.0
    floor_s: float = 1e-4
    """A tenant whose recent CPU decayed under this is forgotten (no longer active)."""
    recent: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Tenant: (recent CPU seconds, when it was last decayed)."""
    total: float = 0.0
    at: float = 0.0
    swept: float = 0.0

    def _decay(self, value: float, since: float, now: float) -> float:
        return value * math.exp(-max(0.0, now - since) / self.window_s) if value else 0.0

    def charge(self, tenant: str, cpu: float, now: float) -> None:
        """``tenant``'s jobs used ``cpu`` more seconds of CPU, seen at ``now``."""
        if cpu <= 0:
            return
        value, since = self.recent.get(tenant, (0.0, now))
        self.recent[tenant] = (self._decay(value, since, now) + cpu, now)
        self.total = self._decay(self.total, self.at, now) + cpu
        self.at = max(self.at, now)

    def used(self, tenant: str, now: float) -> float:
        """``tenant``'s recent CPU seconds at ``now``."""
        value, since = self.recent.get(tenant, (0.0, now))
        return self._decay(value, since, now)

    def _sweep(self, now: float) -> None:
        """Forget the tenants whose recent CPU decayed away; sum the others again (no drift)."""
        self.swept = now
        keep = {}
        for name, (value, since) in self.recent.items():
            v = self._decay(value, since, now)
            if v >= self.floor_s:
                keep[name] = (v, now)
        self.recent = keep
        self.total = sum(v for v, _ in keep.values())
        self.at = now

    def share(self, tenant: str, now: float) -> tuple[float, int]:
        """``tenant``'s equal split of the recent CPU of the tenants active in the window (those that used the
        pool, and ``tenant``), and how many they are."""
        if now - self.swept >= self.window_s / 4 or len(self.recent) > 4096:
            self._sweep(now)
        n = len(self.recent) + (tenant not in self.recent)
        return self._decay(self.total, self.at, now) / n, n

    def over(self, tenant: str, queued_cpu: float, now: float) -> bool:
        """Whether ``tenant``, with ``queued_cpu`` seconds of its jobs' estimated CPU waiting (this one's
        included), asks for more than its share: its recent CPU plus that, over an equal split of the recent CPU
        of the tenants active in the window. Never alone (no other tenant active: no one else's share)."""
        share, active = self.share(tenant, now)
        return active >= 2 and self.used(tenant, now) + queued_cpu > share


@dataclass(slots=True)
class Plan(Generic[J]):
    """What the pool does now: ``pause`` these running jobs (every other running one runs), stop ``expired``."""

    pause: set[J] = field(default_factory=set)
    expired: list[J] = field(default_factory=list)


class Core(Generic[J]):
    """The fair queue, the running jobs and the rules above (module docstring)."""

    def __init__(
        self,
        queue: FairQueue[J],
        *,
        cores: int,
        regular: int,
        reserve: int,
        long_cpu_s: float = 0.25,
        slice_s: float = 0.25,
        min_lanes: int = 1,
        share: ShareBook | None = None,
    ) -> None:
        self.queue = queue
        self.share = share
        """The tenants' recent CPU (``None``: no job is ever over its share)."""
        self._charged: dict[J, float] = {}
        """CPU seconds of each running job already charged to its tenant's recent CPU."""
        self.now = 0.0
        """The latest time the pool gave the core."""
        self.cores = max(1, cores)
        self.regular = regular
        """Workers any tenant may take; past them only a quiet tenant (the reserve) or a heavy one (the lane)."""
        self.reserve = reserve
        self.long_cpu_s = long_cpu_s
        self.slice_s = slice_s
        self.min_lanes = min_lanes
        self.running: dict[J, None] = {}
        """The jobs holding a worker, in the order they started."""
        self.lane_after = regular + reserve
        """Short jobs that may start ahead of a heavy one while the long lane is free (one turn of every worker)."""
        self.passed = 0

    @classmethod
    def with_queue(
        cls,
        *,
        cores: int,
        regular: int,
        reserve: int,
        per_tenant: int,
        long_cpu_s: float,
        max_queued_per_tenant: int,
        max_queued_per_key: int,
        max_queued: int,
        share: ShareBook | None = None,
    ) -> Core[J]:
        """A core over a new fair queue (:class:`~admit.service.fairq.FairQueue`, start-time fair queuing by
        tenant): what both pools build."""
        queue: FairQueue[J] = FairQueue(
            per_tenant=per_tenant,
            long_cpu_s=long_cpu_s,
            max_queued_per_tenant=max_queued_per_tenant,
            max_queued_per_key=max_queued_per_key,
            max_queued=max_queued,
        )
        return cls(queue, cores=cores, regular=regular, reserve=reserve, long_cpu_s=long_cpu_s, share=share)

    def longs(self) -> int:
        """Running jobs that are long (or a heavy tenant's)."""
        return sum(1 for j in self.running if j.long or j.heavy)

    def next_job(self, *, free: int, can_grow: bool, now: float | None = None) -> tuple[J, bool] | None:
        """The waiting job to start now and whether it needs an extra worker (none is ``free``, ``can_grow``: one
        may be added for a quiet tenant); ``None``: nothing may start now. ``job.over``: its tenant is over its
        share at ``now`` (:class:`ShareBook`)."""
        if now is not None:
            self.now = max(self.now, now)
        busy = len(self.running)
        longs = self.longs()
        shorts = busy - longs
        extra = free <= 0
        if extra and (not can_grow or shorts >= self.reserve or self.queue.fresh() is None):
            return None
        light = self.queue.head("light") if busy < self.regular and not extra else self.queue.fresh()
        if light is not None and shorts >= short_cap(self.cores, longs):
            light = None  # the long jobs' share: no more short ones beside them for now
        heavy = self.queue.head("heavy") if not extra else None
        lane = longs < self.min_lanes
        if heavy is not None and not (busy < self.regular or lane):
            heavy = None
        if heavy is not None and (light is None or heavy[0] < light[0] or (lane and self.passed >= self.lane_after)):
            self.passed = 0
            return self._pop("heavy", *heavy), extra
        if light is None:
            return None
        if heavy is not None and lane:
            self.passed += 1  # a heavy job waits for the free lane: it goes first once ``lane_after`` have passed it
        return self._pop("light", *light), extra

    def _pop(self, which: str, tag: float, t: TenantQueue[J]) -> J:
        backlog = not self.queue.quiet(t)
        quiet = which == "light" and not backlog
        job = self.queue.pop(which, tag, t)
        job.heavy = which == "heavy"
        job.quiet = quiet
        job.over = False
        if backlog and self.share is not None:  # what it asks for: its recent CPU and its jobs waiting, this one's too
            job.over = self.share.over(t.name, job.estimate * (1 + len(t.waiting)), self.now)
        return job

    def started(self, job: J, now: float) -> None:
        """``job`` holds a worker from ``now``."""
        job.since = now
        job.stopped = False
        self.running[job] = None

    def ended(self, job: J, cpu: float, now: float | None = None) -> None:
        """``job`` left its worker after ``cpu`` seconds of CPU (at ``now``): its tenant is charged them."""
        if now is not None:
            self.now = max(self.now, now)
        charged = self._charged.pop(job, 0.0)
        if self.running.pop(job, 0) is None:
            self.queue.done(job, cpu)
            if self.share is not None:
                self.share.charge(job.tenant, cpu - charged, self.now)

    def requeue(self, job: J) -> None:
        """``job`` is to run again from the start (its worker died): not charged, first in its tenant's queue."""
        self._charged.pop(job, None)
        if self.running.pop(job, 0) is None:
            self.queue.undo(job)

    def plan(self, used: Mapping[J, float], now: float) -> Plan[J]:
        """Which running jobs to pause and which are past their deadline, from the CPU each has ``used``."""
        out: Plan[J] = Plan()
        short: list[J] = []
        long: list[J] = []
        self.now = max(self.now, now)
        if self.share is not None:  # the CPU running jobs used since the last look: their tenants' recent CPU
            for job, cpu in used.items():
                before = self._charged.get(job, 0.0)
                if cpu > before and job in self.running:
                    self._charged[job] = cpu
                    self.share.charge(job.tenant, cpu - before, now)
        for job in self.running:
            if job.deadline_at is not None and now >= job.deadline_at:
                out.expired.append(job)
                continue
            cpu = used.get(job, 0.0)
            if cpu < self.long_cpu_s and not job.heavy:  # a heavy tenant's job takes a long lane from its start
                short.append(job)
                continue
            long.append(job)
            if not job.long and cpu >= self.long_cpu_s:
                job.long = True
                self.queue.mark_long(job.tenant, cpu)  # heavy from now on, not only once the job ends
        lanes = lanes_for(self.cores, len(short), self.min_lanes)
        seen = [LaneJob(i, not j.stopped, j.since, j.deadline_at or float("inf")) for i, j in enumerate(long)]
        run = long_lanes(seen, lanes, now, self.slice_s)
        out.pause = {j for i, j in enumerate(long) if i not in run}
        quiet = sum(1 for j in short if j.quiet)
        if quiet:  # a quiet tenant's short job runs first: backlogged tenants' short jobs wait, the earliest run
            backlog = [j for j in short if not j.quiet]
            out.pause.update(backlog[max(0, self.cores - 1 - quiet) :])
        return out

    def paused(self, job: J, stop: bool, now: float) -> None:
        """The pool paused (or resumed) ``job`` at ``now``: its turn is timed from then."""
        job.stopped = stop
        job.since = now

    def waiting(self) -> Iterable[J]:
        """Every waiting job."""
        for t in self.queue.tenants.values():
            yield from t.waiting

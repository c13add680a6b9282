"""The scheduler core both worker pools share: which waiting job starts, and which running long job gets the CPU.

Decisions only: no processes, no threads, no clock of its own (every call is given ``now``, every running job's
CPU is read by the pool), so a test drives it on a simulated clock. :class:`~admit.service.procs.ProcessPool`
acts on its decisions with forks and ``SIGSTOP``/``SIGCONT``; :class:`~admit.service.work.WorkPool` with its
threads' checkpoints.

**Which job starts** (:meth:`Core.next_job`): start-time fair queuing by tenant (:class:`~admit.service.fairq.
FairQueue`), a tenant charged the CPU its jobs really cost. The first ``regular`` workers go to any tenant; the
rest (the reserve) only to a quiet tenant (one job waiting, none running). A heavy tenant's job (its jobs cost
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

**Which long job runs** (:meth:`Core.plan`): of the long jobs, :func:`lanes_for` run at once (never fewer than
``min_lanes``), taking turns: a job keeps its lane for ``slice_s`` once resumed, then yields it to the job paused
longest (:func:`long_lanes`). So no job stays paused longer than :func:`max_pause_s`. Jobs past their deadline
are named for the pool to stop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from admit.service.fairq import FairQueue, TenantQueue

__all__ = ["Core", "LaneJob", "Plan", "SchedJob", "lanes_for", "long_lanes", "max_pause_s", "short_cap"]


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
    stopped: bool
    since: float


J = TypeVar("J", bound=SchedJob)


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
    ) -> None:
        self.queue = queue
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
        return cls(queue, cores=cores, regular=regular, reserve=reserve, long_cpu_s=long_cpu_s)

    def longs(self) -> int:
        """Running jobs that are long (or a heavy tenant's)."""
        return sum(1 for j in self.running if j.long or j.heavy)

    def next_job(self, *, free: int, can_grow: bool) -> tuple[J, bool] | None:
        """The waiting job to start now and whether it needs an extra worker (none is ``free``, ``can_grow``: one
        may be added for a quiet tenant); ``None``: nothing may start now."""
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
        quiet = which == "light" and t.in_flight == 0 and len(t.waiting) == 1
        job = self.queue.pop(which, tag, t)
        job.heavy = which == "heavy"
        job.quiet = quiet
        return job

    def started(self, job: J, now: float) -> None:
        """``job`` holds a worker from ``now``."""
        job.since = now
        job.stopped = False
        self.running[job] = None

    def ended(self, job: J, cpu: float) -> None:
        """``job`` left its worker after ``cpu`` seconds of CPU: its tenant is charged them."""
        if self.running.pop(job, 0) is None:
            self.queue.done(job, cpu)

    def requeue(self, job: J) -> None:
        """``job`` is to run again from the start (its worker died): not charged, first in its tenant's queue."""
        if self.running.pop(job, 0) is None:
            self.queue.undo(job)

    def plan(self, used: Mapping[J, float], now: float) -> Plan[J]:
        """Which running jobs to pause and which are past their deadline, from the CPU each has ``used``."""
        out: Plan[J] = Plan()
        short: list[J] = []
        long: list[J] = []
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

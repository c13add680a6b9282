"""Request work in worker processes, scheduled per tenant by a fair queue (see :class:`ProcessPool`).

Threads under one interpreter lock cannot give a tenant a share of the CPU: a pack of 24 long candidates holds
the lock however the threads take turns, and a deadline cannot stop a thread (issue 32: a setwise prune ran
270 s past its 504). Here every CPU-bound job (parsing and validating a body, embedding, pruning, packing,
serializing the answer) runs in one of a few worker **processes**, forked from the server once its models are
loaded (each process holds them from the fork, shared copy-on-write: loaded once, never per request).

**Admission: start-time fair queuing by tenant** (:class:`~admit.service.fairq.FairQueue`): a tenant is charged
the CPU its jobs really cost, so one sending 2-second packs is served a 40th as often as one sending 50 ms
searches. One tenant holds at most ``per_tenant`` processes; the last ``reserve`` processes go only to *light*
tenants (whose recent jobs cost less than ``long_cpu_s`` of CPU each).

**CPU: the scheduler core** (:class:`admit.service.sched.Core`, the same rules as the thread pool's). Every
``tick_s`` the pool reads each busy process's CPU time and memory (``/proc``: on the tick only, a scheduling
pass between two ticks uses the last reading) and the core says which long jobs run (the
others are paused with ``SIGSTOP`` until their turn, ``SIGCONT``, never longer than
:func:`admit.service.sched.max_pause_s`); while long jobs run, short ones start only up to
:func:`admit.service.sched.short_cap`, so long work keeps its share of the cores however many short jobs wait,
and a heavy tenant's job starts whenever no long job holds the long lane, first once a turn of every worker
has passed it.

**Deadlines.** A job still running at its deadline has its process killed (``SIGKILL``) and replaced by a fresh
fork; the CPU it used is charged to its tenant. No job outlives its deadline by more than one tick. Past the
fair queue's bounds a job is refused at once with :class:`~admit.errors.Overloaded` (429, ``Retry-After``).

**Priorities.** The regular processes run ``WORKER_NICENESS`` nicer than the server (its event loop keeps a
core); the reserve's (*prompt*) ones run at the server's priority and take a quiet tenant's job first. A job of a
tenant over its share of the CPU (the core's :class:`~admit.service.sched.ShareBook`: a backlog, and more asked
for than an equal split of what the active tenants used recently) runs in a *background* process,
``over_share_niceness`` nicer than the server (the core counts it among the jobs running as any other; the
pool's own workers stay free, so a quiet tenant's job finds the reserve): a flood's work yields the cores to the
loop and to the tenants within their share, and no process's niceness is ever lowered (which would take a
privilege). Background processes are forked when first needed and kept; ``over_share_niceness = 0`` turns them
off.

**Workers.** What runs in a worker process (the fork, the pickled jobs and their frames, the capture of what a
job changes in the service: metrics, the inspector's records, the trace file, replayed by the server when the
answer comes back, so ``/metrics`` and ``/inspect`` stay whole) is :mod:`admit.service.worker`; this module is
the server's side: the fair queue, the CPU ticks and the deadlines, on the event loop, never blocking on a
worker. The worker processes' lifecycle (fork, hand out, retire, reap; the background ones included) is
:class:`~admit.service.procset.ProcessSet`, this pool's base; its records (a worker, a job, the counters) are
:mod:`admit.service.procrecords`.

The pool serves ``admit serve`` (``[service.limits] worker_processes`` unset: one process per core); every
request of the service reaches it through :func:`admit.service.limits.run_bounded`, called by
:class:`admit.service.core.Service`; ``admit mcp`` (both transports) runs its tools here too. An app built
in-process uses the thread pool of :mod:`admit.service.work` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import logging
import os
import pickle
import signal
import time
from collections.abc import Callable
from typing import Any, TypeVar

from admit.errors import BackendError, LimitExceeded, Overloaded
from admit.service.fairq import FairQueue, TenantQueue
from admit.service.procrecords import PoolSnapshot, PoolStats
from admit.service.procrecords import ProcJob as _Job
from admit.service.procrecords import ProcWorker as _Worker
from admit.service.procset import ProcessSet
from admit.service.sched import Core, ShareBook
from admit.service.timing import marks
from admit.service.worker import (
    HEADER,
    OVER_SHARE_NICENESS,
    cores,
    dumps_job,
    proc_cpu,
    proc_memory_mb,
    replay_effects,
    worker_state,
)

__all__ = ["PoolSnapshot", "PoolStats", "ProcessPool", "worker_state"]


logger = logging.getLogger(__name__)

T = TypeVar("T")


class ProcessPool(ProcessSet):
    """Worker processes for request work, shared fairly between tenants (module docstring)."""

    def __init__(
        self,
        state: Any,
        processes: int = 0,
        *,
        per_tenant: int = 0,
        reserve: int = 0,
        long_cpu_s: float = 0.25,
        tick_s: float = 0.05,
        max_queued_per_tenant: int = 64,
        max_queued_per_key: int = 64,
        max_queued: int = 1024,
        max_memory_mb: float = 2048,
        over_share_niceness: int = OVER_SHARE_NICENESS,
        share_window_s: float = 2.0,
    ) -> None:
        """``0`` sizes to the cores: ``processes`` = cores, ``reserve`` = half of them (at least 1),
        ``per_tenant`` = half the cores (at least 1). ``max_memory_mb``: a worker's private memory bound.
        ``over_share_niceness``: how much nicer than the server a job of a tenant over its share of the CPU runs
        (``0``: off, every job runs in the pool's own workers); ``share_window_s``: the time constant of the
        tenants' recent CPU (:class:`~admit.service.sched.ShareBook`)."""
        n = cores()
        self.state = state
        self.cores = n
        self.regular = processes or max(1, n)
        self.reserve = reserve or max(1, n // 2)
        self.per_tenant = per_tenant or max(1, n // 2)
        self.hard_cap = self.regular + self.reserve + max(2, n)
        """Most processes at once, the extra ones for light tenants included."""
        self.long_cpu_s = long_cpu_s
        self.core: Core[_Job] = Core.with_queue(
            cores=n,
            regular=self.regular,
            reserve=self.reserve,
            per_tenant=self.per_tenant,
            long_cpu_s=long_cpu_s,
            max_queued_per_tenant=max_queued_per_tenant,
            max_queued_per_key=max_queued_per_key,
            max_queued=max_queued,
            share=ShareBook(window_s=share_window_s) if over_share_niceness > 0 else None,
        )
        """Which job starts, which long job runs (:mod:`admit.service.sched`, shared with the thread pool)."""
        self.queue: FairQueue[_Job] = self.core.queue
        """The waiting jobs, by tenant (start-time fair queuing)."""
        self.tick_s = tick_s
        self.max_memory_mb = max_memory_mb
        self.over_share_niceness = over_share_niceness
        self.stats = PoolStats()
        super().__init__()
        self._seq = itertools.count()
        self._ticker: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = False
        self._closed = False
        self._payloads: dict[_Job, bytes] = {}
        self._scheduling = False
        self._again = False
        self._measure = False
        """The next scheduling pass is a tick's: it reads the busy processes' CPU and memory (``/proc``)."""

    # ---------------------------------------------------------------- processes (forked and reaped: ProcessSet)

    def close(self) -> None:
        """End every worker."""
        self._closed = True
        if self._ticker is not None:
            self._ticker.cancel()
        for w in list(self._workers):
            self._retire(w)
        for proc in self._dying:
            with contextlib.suppress(Exception):
                proc.join(timeout=1)
        self._dying.clear()

    def busy(self) -> list[dict[str, Any]]:
        """The jobs running now: tenant, pid, CPU seconds so far, seconds to their deadline (negative: past)."""
        now = time.monotonic()
        out = []
        for w in self._workers:
            j = w.job
            if j is not None:
                out.append(
                    {
                        "tenant": j.tenant,
                        "pid": w.proc.pid,
                        "cpu_s": proc_cpu(w.proc.pid) - j.cpu0,
                        "to_deadline_s": None if j.deadline_at is None else j.deadline_at - now,
                        "paused": j.stopped,
                    }
                )
        return out

    def charged(self, tenant: str) -> float:
        """CPU seconds ``tenant``'s jobs have used (killed ones included)."""
        t = self.queue.tenants.get(tenant)
        return t.charged if t is not None else 0.0

    def queued(self) -> int:
        """Jobs waiting for a process."""
        return self.queue.queued

    def snapshot(self) -> PoolSnapshot:
        """The pool now (``/metrics``): workers alive, busy and paused, jobs waiting by class, the counters."""
        queued = self.queue.waiting_by_class()
        return PoolSnapshot(
            workers=sum(1 for w in self._workers if w.proc.is_alive()),
            busy=sum(1 for w in self._workers if w.job is not None),
            paused=sum(1 for w in self._workers if w.job is not None and w.job.stopped),
            queued=queued,
            stats=dataclasses.replace(self.stats),
        )

    # ---------------------------------------------------------------- dispatch

    def _tenant(self, name: str) -> TenantQueue[_Job]:
        return self.queue.tenant(name)

    def _dispatch(self) -> None:
        while True:
            self._replace_dead_free()
            nxt = self.core.next_job(free=len(self._free), can_grow=self._base() < self.hard_cap, now=time.monotonic())
            if nxt is None:
                return
            job, extra = nxt
            if extra:  # every process is held: a quiet tenant starts in an extra one (up to ``hard_cap``)
                self._spawn()
                self.stats.extra += 1
            self._start_job(job)

    def _start_job(self, job: _Job) -> None:
        if job.over and self.over_share_niceness > 0:
            # over its share: niced, in a background worker; the core still counts it among the jobs running, and
            # the pool's own workers stay free (a quiet tenant's job finds its reserve, no extra process forked)
            w = self._take_background()
            self.stats.over_share += 1
        else:
            w = self._take_free(job)
        w.job = job
        job.worker = w
        job.cpu0 = proc_cpu(w.proc.pid)
        job.started = time.monotonic()
        if job.stages is not None:
            job.stages["started"] = job.started
        self.core.started(job, job.started)
        self.stats.dispatched += 1
        assert self._loop is not None
        payload = self._payloads.pop(job)
        job.payload = payload
        w.inbox.clear()
        self._loop.add_reader(w.conn.fileno(), self._on_answer, w)
        frame = HEADER.pack(len(payload)) + payload
        try:  # in this turn of the loop (a task would wait for the next, behind a flood's callbacks)
            n = w.conn.send(frame)
        except OSError:  # the pipe full, or broken: the rest (or the error, for ``_sent``) goes by a task
            n = 0
        w.sending = None
        if n < len(frame):
            send = asyncio.ensure_future(self._loop.sock_sendall(w.conn, frame[n:]))
            send.add_done_callback(functools.partial(self._sent, job, w))
            w.sending = send
        self._schedule_cpu()

    def _sent(self, job: _Job, w: _Worker, fut: asyncio.Future[None]) -> None:
        exc = None if fut.cancelled() else fut.exception()
        if exc is not None and job.worker is w:  # a broken pipe: the worker died before it took the job
            self._lost(job, f"could not hand the job to a worker: {type(exc).__name__}")

    def _lost(self, job: _Job, why: str) -> None:
        """The job's worker died (a broken pipe at the hand-off, or its end of the pipe closed before it answered):
        replace the worker and hand the job to a fresh one, once, while its deadline allows; else fail it."""
        w = job.worker
        if w is None:
            return
        logger.warning("worker process %s ended (exit code %s) with a job: %s", w.proc.pid, w.proc.exitcode, why)
        expired = job.deadline_at is not None and time.monotonic() >= job.deadline_at
        if job.retried or expired or self._closed or job.future.done():
            cpu = proc_cpu(w.proc.pid) - job.cpu0
            self.stats.lost += 1
            self._finish(job, cpu=cpu, replace=True, died=True)
            if not job.future.done():
                job.future.set_exception(BackendError(f"the worker process ended ({why})"))
            return
        job.worker = None
        w.job = None
        self._retire(w)
        self.stats.dead += 1
        if not w.background:  # a background worker is forked again when one is needed
            self._spawn()
            self.stats.respawned += 1
        job.retried = True
        self.stats.retried += 1
        self._payloads[job] = job.payload
        job.payload = b""
        self.core.requeue(job)  # not charged, first in its tenant's queue: it already waited its turn
        self._dispatch()
        self._schedule_cpu()

    def _on_answer(self, w: _Worker) -> None:
        job = w.job
        loop = self._loop
        assert loop is not None
        try:
            part = w.conn.recv(1 << 20)
            if not part:
                raise EOFError("the worker closed its pipe")
            w.inbox += part
            if len(w.inbox) < HEADER.size:
                return
            (n,) = HEADER.unpack_from(w.inbox)
            if len(w.inbox) < HEADER.size + n:
                return  # more to come: read as it arrives, never waiting here
            raw = bytes(w.inbox[HEADER.size : HEADER.size + n])
            w.inbox.clear()
            loop.remove_reader(w.conn.fileno())
            ok, value, effects, cpu, walls = pickle.loads(raw)
        except (BlockingIOError, InterruptedError):
            return
        except Exception as exc:
            with contextlib.suppress(Exception):
                loop.remove_reader(w.conn.fileno())  # the worker died (killed from outside, out of memory)
            if job is not None:
                self._lost(job, type(exc).__name__)
            return
        if job is None:
            return
        if job.stages is not None:
            job.stages.update(worker_start=walls[0], worker_end=walls[1], cpu=float(cpu), answered=time.monotonic())
            job.stages.update(zip(("on_core", "runq"), walls[2:4], strict=False))
        replay_effects(self.state, effects)
        if ok:
            self.stats.ok += 1
        else:
            self.stats.errors += 1
        self._finish(job, cpu=float(cpu), replace=False)
        if not job.future.done():
            if ok:
                job.future.set_result(value)
            else:
                job.future.set_exception(value)

    def _finish(self, job: _Job, *, cpu: float, replace: bool, died: bool = False) -> None:
        """A job ended (answered, or its process killed or ``died``): charge its tenant, free (or replace) its
        process."""
        w = job.worker
        if w is None:
            return
        job.worker = None
        job.payload = b""
        w.job = None
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(w.conn.fileno())
        cpu = max(0.0, cpu)
        job.cpu = cpu
        self.core.ended(job, cpu, time.monotonic())
        self.stats.completed += 1
        if replace:
            if died:
                self.stats.dead += 1
            else:
                self.stats.killed += 1
            self._retire(w)
            if not self._closed and not w.background:  # a background worker is forked again when one is needed
                self._spawn()
                self.stats.respawned += 1
        else:
            if job.stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(w.proc.pid, signal.SIGCONT)
                job.stopped = False
            self._keep(w)
        self._dispatch()
        self._schedule_cpu()

    def _keep(self, w: _Worker) -> None:
        """A worker whose job answered: free again, or ended (an extra process, or one a job left big)."""
        half = self.max_memory_mb / 2
        extra = not w.background and self._base() > self.size
        if extra or proc_memory_mb(w.proc.pid, half) > half:
            self._retire(w)  # an extra process, or one a job left big: ended once its job is done
            if not w.background and self._base() < self.size and not self._closed:
                self._spawn()
                self.stats.recycled += 1
        else:
            (self._bg_free if w.background else self._free).append(w)

    # ---------------------------------------------------------------- CPU share and deadlines (a tick)

    def _schedule_cpu(self) -> None:
        """Kill jobs past their deadline; let short jobs run, and of the long ones as many as cores are left.

        Not re-entered: a kill frees a process, which dispatches, which asks for this again (then it runs once
        more, after the current pass)."""
        if self._scheduling:
            self._again = True
            return
        self._scheduling = True
        try:
            for _ in range(100):  # bounded: each further pass follows a kill or a dispatch
                self._again = False
                self._schedule_once()
                if not self._again:
                    break
        finally:
            self._scheduling = False

    def _schedule_once(self) -> None:
        now = time.monotonic()
        held = {w.job: w for w in self._workers if w.job is not None}
        measure, self._measure = self._measure, False
        if measure:  # a tick: each busy process's CPU time, once (a pass between two ticks uses the last reading)
            for job, w in held.items():
                job.used = proc_cpu(w.proc.pid) - job.cpu0
        plan = self.core.plan({j: j.used for j in held}, now)
        for job, w in held.items():
            if job not in plan.expired and job.stopped != (job in plan.pause):
                try:
                    os.kill(w.proc.pid, signal.SIGSTOP if not job.stopped else signal.SIGCONT)
                except ProcessLookupError:
                    continue
                self.core.paused(job, not job.stopped, now)
                self.stats.paused += job.stopped
        for job in plan.expired:
            w = held[job]
            if w.job is job:
                self.stats.timed_out += 1
                self._kill(w, proc_cpu(w.proc.pid) - job.cpu0)
        for job, w in held.items() if measure else ():  # the memory bound (on a tick): past it, the job is stopped
            if w.job is job and proc_memory_mb(w.proc.pid, self.max_memory_mb) > self.max_memory_mb:
                self.stats.over_memory += 1
                why = f"the request needed over max_worker_memory_mb={self.max_memory_mb:g}; send less at once"
                self._kill(w, proc_cpu(w.proc.pid) - job.cpu0, LimitExceeded(why))
        self._arm_tick(bool(held))

    def _kill(self, w: _Worker, used: float, why: BaseException | None = None) -> None:
        job = w.job
        if job is None:
            return
        self._finish(job, cpu=used, replace=True)
        if not job.future.done():
            job.future.set_exception(why or TimeoutError())

    def _arm_tick(self, needed: bool) -> None:
        if self._ticker is not None or not needed or self._loop is None or self._closed:
            return

        self._ticker = self._loop.call_later(self.tick_s, self._on_tick)

    def _on_tick(self) -> None:
        """Every ``tick_s`` while jobs run: the busy processes' CPU and memory are read (``/proc``, here only, not
        on every scheduling pass), and the jobs waiting looked at again (a job long now frees the reserve, a lane
        is due)."""
        self._ticker = None
        self._measure = True
        self._reap()
        self._dispatch()
        self._schedule_cpu()
        self._measure = False

    # ---------------------------------------------------------------- the entry point

    async def run(
        self, tenant: str, fn: Callable[[], T], *, deadline_at: float | None = None, key: str | None = None
    ) -> T:
        """Run ``fn`` in a worker process in ``tenant``'s fair share; past ``deadline_at`` (or when the caller is
        cancelled) its process is killed and replaced. ``fn`` is pickled (the service state by reference).

        Raises:
            Overloaded: A queue (the tenant's, the key's, everyone's) is full.
            TimeoutError: The deadline passed.
        """
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        self.start()
        k = key or f"tenant:{tenant}"
        try:
            self.queue.check(tenant, k)
        except Overloaded:
            self.stats.refused += 1
            raise
        payload = dumps_job((fn, deadline_at), self.state)
        job = _Job(tenant, k, deadline_at, loop.create_future(), next(self._seq), size=len(payload))
        job.stages = marks()
        if job.stages is not None:
            job.stages["queued"] = time.monotonic()
            job.stages["busy"] = sum(1 for w in self._workers if w.job is not None)
        self._payloads[job] = payload
        self.queue.add(job)
        self._dispatch()
        try:
            return await job.future  # type: ignore[no-any-return]
        except BaseException:
            self._abandon(job)
            raise

    def _abandon(self, job: _Job) -> None:
        """The caller is gone (its deadline, a cancellation): drop the job from its queue, or kill its process."""
        self._payloads.pop(job, None)
        if job.worker is not None:
            w = job.worker
            self.stats.abandoned += 1
            self._kill(w, proc_cpu(w.proc.pid) - job.cpu0)
            return
        self.queue.remove(job)

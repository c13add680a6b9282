"""The process pool's records (:class:`~admit.service.procs.ProcessPool`): a worker process as the server holds it
(:class:`ProcWorker`), a job on its way through the pool (:class:`ProcJob`, what the scheduler core reads of it
included: :class:`~admit.service.sched.SchedJob`), the pool's counters (:class:`PoolStats`) and its state for
``/metrics`` (:class:`PoolSnapshot`). Data only: the pool acts on them.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PoolSnapshot", "PoolStats", "ProcJob", "ProcWorker"]


@dataclass(slots=True, eq=False)
class ProcWorker:
    """A worker process as the pool holds it: its process, its end of the pipe, the job it runs."""

    proc: Any
    conn: socket.socket
    job: ProcJob | None = None
    sending: asyncio.Future[None] | None = None
    inbox: bytearray = field(default_factory=bytearray)
    """The answer read so far (the loop never blocks on a worker: a paused one may be mid-answer)."""
    prompt: bool = False
    """It runs at the server's priority (the reserve, for quiet tenants), not ``WORKER_NICENESS`` nicer."""
    background: bool = False
    """It runs ``over_share_niceness`` nicer than the server: only jobs of tenants over their share."""


@dataclass(slots=True, eq=False)
class ProcJob:
    """A job in the pool: its tenant, deadline and caller's future, its worker, and what the scheduler core reads."""

    tenant: str
    key: str
    deadline_at: float | None
    future: asyncio.Future[Any]
    seq: int
    estimate: float = 0.0
    worker: ProcWorker | None = None
    cpu0: float = 0.0
    cpu: float = 0.0
    started: float = 0.0
    size: int = 0  # bytes of the pickled job (its body): the first estimate of its cost
    payload: bytes = b""
    """The pickled job while a worker holds it (handed to a fresh worker if that one is found dead)."""
    retried: bool = False  # handed to a fresh worker once already (a second lost worker fails it)
    long: bool = False
    """It has used more than ``long_cpu_s`` of CPU (it may be paused while short jobs run)."""
    heavy: bool = False  # dispatched as a heavy tenant's
    quiet: bool = False  # its tenant had nothing else waiting or running: it runs first while short
    over: bool = False  # its tenant was over its share of the CPU when it started: it runs in a background worker
    stopped: bool = False
    since: float = 0.0
    """When it was last paused or resumed (or started): a long job's turn is timed from it."""
    used: float = 0.0
    """CPU seconds it had used at the last tick (read from ``/proc`` on the ticks only)."""
    stages: dict[str, float] | None = None
    """The request's ``Server-Timing`` marks (:mod:`admit.service.timing`; ``None``: off)."""


@dataclass(slots=True)
class PoolStats:
    """The pool's own accounting (read by ``/metrics``, the benchmarks and the tests): jobs ``dispatched`` and
    ``completed``; ``killed`` (their process killed at their deadline, or with their caller, and replaced:
    ``respawned``); ``refused`` (a queue was full: 429); ``extra`` processes forked beyond the pool's size for a
    light tenant while every process held a long job; ``paused``: the ``SIGSTOP``s sent to long jobs while
    shorter ones needed the cores.

    How jobs ended: ``ok`` (a result), ``errors`` (the job raised: a 4xx or 5xx), ``timed_out`` (killed at their
    deadline), ``abandoned`` (killed with their caller), ``lost`` (their worker died twice, or once past their
    deadline). ``dead``: worker processes found dead (idle in the free list, or at the hand-off of a job) and
    replaced (counted in ``respawned`` too); ``retried``: jobs handed to a fresh worker after theirs died.
    ``over_memory``: jobs stopped with their process past ``max_memory_mb``; ``recycled``: workers replaced
    after a job left them over half of it. ``over_share``: jobs run in a background worker (their tenant over its
    share of the CPU)."""

    dispatched: int = 0
    completed: int = 0
    killed: int = 0
    refused: int = 0
    respawned: int = 0
    extra: int = 0
    paused: int = 0
    ok: int = 0
    errors: int = 0
    timed_out: int = 0
    abandoned: int = 0
    lost: int = 0
    dead: int = 0
    retried: int = 0
    over_memory: int = 0
    recycled: int = 0
    over_share: int = 0


@dataclass(frozen=True, slots=True)
class PoolSnapshot:
    """The pool now, for ``/metrics`` (:meth:`~admit.service.procs.ProcessPool.snapshot`): worker processes
    ``workers`` (alive), ``busy`` (holding a job), ``paused`` (of those, stopped for shorter jobs); jobs waiting, by
    class (``light``: a tenant whose jobs cost under ``long_cpu_s`` each, ``heavy``: the others); and the counters."""

    workers: int
    busy: int
    paused: int
    queued: dict[str, int]
    stats: PoolStats

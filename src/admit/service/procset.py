"""The worker processes of the process pool (:class:`~admit.service.procs.ProcessPool`) and their lifecycle.

A worker is forked (:meth:`ProcessSet._spawn`) as one of three kinds: a *prompt* one at the server's priority
(the reserve, for quiet tenants, and any extra process forked beyond the pool's size), a *regular* one
``WORKER_NICENESS`` nicer, or a *background* one ``over_share_niceness`` nicer, for the jobs of a tenant over its
share of the CPU (forked when first needed, then kept in its own free list). A free worker is handed out for a job
(:meth:`ProcessSet._take_free`, :meth:`ProcessSet._take_background`); one found dead while idle is replaced before
it gets a job (:meth:`ProcessSet._replace_dead_free`); an ended one is retired (killed, its pipe closed) and reaped
later (:meth:`ProcessSet._reap`), so the event loop never waits for a process to exit.

:class:`ProcessSet` is the base of :class:`~admit.service.procs.ProcessPool`, which sets the settings it reads
(``state``, ``regular``, ``reserve``, ``over_share_niceness``, ``stats``) and decides when a worker is forked,
handed out or retired (the fair queue, the scheduler core, the deadlines); what runs in the worker is
:mod:`admit.service.worker`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import socket
from typing import Any

from admit.service.procrecords import PoolStats
from admit.service.procrecords import ProcJob as _Job
from admit.service.procrecords import ProcWorker as _Worker
from admit.service.worker import WORKER_NICENESS, worker_main

__all__ = ["ProcessSet"]

logger = logging.getLogger(__name__)


class ProcessSet:
    """The pool's worker processes: forked, handed out, retired and reaped (module docstring)."""

    state: Any
    """The service state each worker is forked with (set by the pool)."""
    regular: int
    reserve: int
    over_share_niceness: int
    stats: PoolStats
    _loop: asyncio.AbstractEventLoop | None
    _started: bool
    _closed: bool

    def __init__(self) -> None:
        """The lists of worker processes, empty (:meth:`start` forks them)."""
        self._workers: list[_Worker] = []
        self._free: list[_Worker] = []
        self._dying: list[Any] = []
        """Processes killed and not yet reaped (a killed process may need a while to exit on a loaded machine:
        the event loop never waits for it)."""
        self._bg_free: list[_Worker] = []
        """Background workers (``over_share_niceness``) without a job: forked when first needed, then kept."""
        self._ctx = multiprocessing.get_context("fork")

    @property
    def size(self) -> int:
        """Worker processes in all (``regular + reserve``), the background ones aside."""
        return self.regular + self.reserve

    def _base(self) -> int:
        """The pool's own worker processes (regular, reserve and extra ones): all but the background ones."""
        return sum(1 for w in self._workers if not w.background)

    def start(self) -> None:
        """Fork the workers (once the models are loaded: each worker holds them from the fork)."""
        if self._started:
            return
        self._started = True
        for _ in range(self.size):
            self._spawn()

    def _spawn(self, background: bool = False) -> None:
        """Fork a worker: a ``background`` one (``over_share_niceness`` nicer than the server, into the background
        free list), a prompt one (at the server's priority) while fewer than ``reserve`` are, or beyond the pool's
        size (an extra process is for a quiet tenant), else one ``WORKER_NICENESS`` nicer."""
        prompt = not background and (self._base() >= self.size or sum(w.prompt for w in self._workers) < self.reserve)
        parent, child = socket.socketpair()
        nice = self.over_share_niceness if background else 0 if prompt else WORKER_NICENESS
        proc = self._ctx.Process(target=worker_main, args=(self.state, child, nice), name="admit-worker", daemon=True)
        proc.start()
        child.close()
        parent.setblocking(False)
        w = _Worker(proc, parent, prompt=prompt, background=background)
        self._workers.append(w)
        (self._bg_free if background else self._free).append(w)

    def _take_background(self) -> _Worker:
        """A free background worker (one is forked when none is): for a job of a tenant over its share."""
        while self._bg_free:
            w = self._bg_free.pop()
            if w.proc.is_alive():
                return w
            self._retire(w)  # died while idle: not replaced until one is needed
            self.stats.dead += 1
        self._spawn(background=True)
        return self._bg_free.pop()

    def _take_free(self, job: _Job) -> _Worker:
        """A free worker for ``job``: a prompt one for a quiet tenant's job, or one that starts in the reserve
        (``regular`` processes busy: only a quiet tenant's job starts there), a niced one otherwise (the other
        kind when none of that kind is free)."""
        prompt = job.quiet or self._base() - len(self._free) >= self.regular
        for i in range(len(self._free) - 1, -1, -1):
            if self._free[i].prompt == prompt:
                return self._free.pop(i)
        return self._free.pop()

    def _retire(self, w: _Worker) -> None:
        with contextlib.suppress(Exception):
            w.proc.kill()
        if w.sending is not None and not w.sending.done():
            w.sending.cancel()
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(w.conn.fileno())
            with contextlib.suppress(Exception):
                self._loop.remove_writer(w.conn.fileno())
        with contextlib.suppress(Exception):
            w.conn.close()
        if self._closed:
            with contextlib.suppress(Exception):
                w.proc.join(timeout=1)
        else:  # never waited for on the event loop: a killed process is reaped on a later pass (``_reap``)
            self._dying.append(w.proc)
        if w in self._workers:
            self._workers.remove(w)
        if w in self._free:
            self._free.remove(w)
        if w in self._bg_free:
            self._bg_free.remove(w)

    def _reap(self) -> None:
        """Reap the killed processes that have exited (``is_alive`` waits for none)."""
        self._dying = [p for p in self._dying if _alive(p)]

    def pids(self) -> list[int]:
        """The worker processes' ids."""
        return [int(w.proc.pid) for w in self._workers]

    def _replace_dead_free(self) -> None:
        """Replace each free worker whose process has died (killed from outside, out of memory) before a job is
        handed to it: a dead worker never fails a request."""
        for w in [w for w in self._bg_free if not w.proc.is_alive()]:
            self._retire(w)  # a background worker is forked again when one is needed
            self.stats.dead += 1
        for w in [w for w in self._free if not w.proc.is_alive()]:
            logger.warning("worker process %s died while idle (exit code %s); replaced", w.proc.pid, w.proc.exitcode)
            self._retire(w)
            self.stats.dead += 1
            if not self._closed:
                self._spawn()
                self.stats.respawned += 1


def _alive(proc: Any) -> bool:
    try:
        return bool(proc.is_alive())
    except Exception:  # closed or never started: nothing to reap
        return False

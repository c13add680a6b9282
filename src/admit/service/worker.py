"""The worker process side of :class:`~admit.service.procs.ProcessPool`: what runs in a forked worker.

A worker is forked from the server once its models are loaded (:func:`worker_main`): it closes every socket it
inherited but its own pipe, installs the capture of its state's effects, and runs one job at a time from the
pipe, each under its deadline (:func:`admit._deadline.deadline`). A job is a function pickled with cloudpickle
(:func:`dumps_job`), the service state by reference (it resolves to the state the worker was forked with,
:func:`worker_state`); frames are a length (:data:`HEADER`) and the pickle. The answer goes back with the job's
CPU time and what it changed in the service (metrics, the inspector's records, trace-file writes), recorded by
:func:`install_capture` and applied on the server by :func:`replay_effects`, so ``/metrics`` and ``/inspect``
stay whole.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import pickle
import signal
import socket
import stat
import struct
import threading
import time
from typing import Any

from admit import _deadline
from admit.errors import AdmitError, BackendError

__all__ = [
    "HEADER",
    "OVER_SHARE_NICENESS",
    "cores",
    "dumps_job",
    "install_capture",
    "proc_cpu",
    "proc_memory_mb",
    "replay_effects",
    "worker_main",
    "worker_state",
]

logger = logging.getLogger(__name__)

_STATE_ID = "admit-service-state"
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

_WORKER_STATE: Any = None
"""In a worker process: the service state it was forked with (what a job's pickled ``state`` resolves to)."""


def worker_state() -> Any:
    """The service state of this worker process (``None`` in the server itself)."""
    return _WORKER_STATE


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used; 0.0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return 0.0
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK
    except (IndexError, ValueError):
        return 0.0


_PAGE_MB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) / 2**20


def proc_memory_mb(pid: int, above: float = 0.0) -> float:
    """The memory (MB) of process ``pid`` that counts against a bound of ``above``: its resident size when that is
    under the bound (cheap, ``/proc/PID/statm``), else its private memory, resident and not shared with the server
    it was forked from (``Private_Clean + Private_Dirty`` of ``/proc/PID/smaps_rollup``). 0.0 when it is gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            rss = int(fh.read().split()[1]) * _PAGE_MB
        if rss <= above:
            return rss
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            lines = fh.read().splitlines()
    except (OSError, IndexError, ValueError):
        return 0.0
    private = sum(int(ln.split()[1]) for ln in lines if ln.startswith((b"Private_Clean:", b"Private_Dirty:"))) / 1024
    return min(rss, private) if private else rss


# ---------------------------------------------------------------------------------------------- pickling


def dumps_job(obj: Any, state: Any) -> bytes:
    import cloudpickle

    class _Pickler(cloudpickle.Pickler):  # type: ignore[misc]
        def persistent_id(self, o: Any) -> str | None:
            return _STATE_ID if o is state else None

    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        if pid == _STATE_ID:
            return _WORKER_STATE
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")


# ---------------------------------------------------------------------------------------------- the worker


class _MetricRecorder:
    """Stands for :class:`~admit.service.metrics.ServiceMetrics` in a worker: every ``inc``/``observe`` is
    recorded and replayed on the server's metrics."""

    def __init__(self, effects: list[tuple[Any, ...]]) -> None:
        self._effects = effects

    def __getattr__(self, name: str) -> Any:
        effects = self._effects

        class _Child:
            def __init__(self, labels: dict[str, str]) -> None:
                self.labels_ = labels

            def inc(self, amount: float = 1.0) -> None:
                effects.append(("metric", name, self.labels_, "inc", float(amount)))

            def observe(self, amount: float) -> None:
                effects.append(("metric", name, self.labels_, "observe", float(amount)))

        class _Metric:
            def labels(self, **kw: str) -> _Child:
                return _Child(kw)

        return _Metric()


def install_capture(state: Any, effects: list[tuple[Any, ...]]) -> None:
    """In a worker: the state's metrics and inspector record into ``effects`` instead of keeping anything."""
    state.metrics = _MetricRecorder(effects)
    log = getattr(state, "inspect", None)
    if log is not None:

        def keep(tenant: str | None, entry: dict[str, Any]) -> None:
            effects.append(("keep", tenant, entry))

        def out(method: str, *args: Any) -> None:
            effects.append(("out", method, args))

        log.capture(keep, out)


def _close_inherited_sockets(keep: int) -> None:
    """Close every socket this fork inherited (client connections, the listening socket, the other workers'
    pipes) but its own pipe: a worker must never hold a client's connection open."""
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:  # pragma: no cover - not Linux
        return
    for fd in fds:
        if fd == keep or fd <= 2:
            continue
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            continue


WORKER_NICENESS = 3
"""How much nicer than the server a worker process runs: the server's event loop (``/healthz``, the gate's
refusals, moving bodies to workers) wins a core over its own busy workers, whose jobs still share the rest.
The pool's *prompt* workers (its reserve, for quiet tenants) run at the server's own priority instead: a quiet
tenant's search is not slowed by whatever else runs at the server's priority (issue 47)."""


OVER_SHARE_NICENESS = 7
"""How much nicer than the server a worker process runs a job of a tenant over its share of the CPU
(:class:`admit.service.sched.ShareBook`; ``[service.limits] over_share_niceness``): its own set of processes,
so no process ever needs its niceness lowered (which takes a privilege)."""


def worker_main(state: Any, conn: socket.socket, niceness: int = WORKER_NICENESS) -> None:
    """A worker process: run jobs from ``conn`` one at a time until it closes (or the server kills it);
    ``niceness``: how much nicer than the server it runs."""
    global _WORKER_STATE
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
    if niceness:
        with contextlib.suppress(OSError):
            os.nice(niceness)
    conn.setblocking(True)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle; it ends its workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _close_inherited_sockets(conn.fileno())
    _WORKER_STATE = state
    effects: list[tuple[Any, ...]] = []
    install_capture(state, effects)
    # a fresh thread: thread-local resources of the forking thread (a store connection) are not reused
    t = threading.Thread(target=_serve, args=(conn, effects), name="admit-proc-work", daemon=True)
    t.start()
    t.join()
    os._exit(0)


HEADER = struct.Struct("!Q")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        part = sock.recv(min(n - len(buf), 1 << 20))
        if not part:
            raise EOFError("the server closed the pipe")
        buf += part
    return bytes(buf)


def _recv_frame(sock: socket.socket) -> bytes:
    (n,) = HEADER.unpack(_recv_exact(sock, HEADER.size))
    return _recv_exact(sock, n)


def _schedstat(fd: int) -> tuple[float, float]:
    """This thread's seconds on a core and seconds runnable but waiting for one (``/proc/thread-self/schedstat``,
    read through an open descriptor: about a microsecond); zeros where the kernel keeps no such file."""
    if fd < 0:
        return 0.0, 0.0
    try:
        on_cpu, waiting = os.pread(fd, 128, 0).split()[:2]
        return int(on_cpu) / 1e9, int(waiting) / 1e9
    except (OSError, ValueError):
        return 0.0, 0.0


def _serve(conn: socket.socket, effects: list[tuple[Any, ...]]) -> None:
    try:  # the job thread's scheduling figures: where a job's wall time went (Server-Timing ``runq``, ``blocked``)
        sched_fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        sched_fd = -1
    while True:
        try:
            raw = _recv_frame(conn)
        except (EOFError, OSError):
            return
        effects.clear()
        cpu0 = time.process_time()
        wall0 = time.monotonic()
        run0, wait0 = _schedstat(sched_fd)
        ok = True
        value: Any
        try:
            fn, deadline_at = _Unpickler(io.BytesIO(raw)).load()
            with _deadline.deadline(deadline_at):
                value = fn()
        except BaseException as exc:  # every failure goes back to the server
            ok, value = False, exc
        cpu = time.process_time() - cpu0
        run1, wait1 = _schedstat(sched_fd)
        # the server's Server-Timing (the same system-wide clock): the job's start and end, and of its wall time
        # the job thread's seconds on a core and runnable waiting for one (the rest it slept: a lock, I/O)
        walls = (wall0, time.monotonic(), run1 - run0, wait1 - wait0)
        try:
            out = pickle.dumps((ok, value, list(effects), cpu, walls), protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(out)  # an exception whose class cannot be rebuilt must not fail the server's read
        except Exception as exc:
            err: BaseException = value if not ok and isinstance(value, AdmitError) else exc
            msg = f"{type(err).__name__}: {err}"
            out = pickle.dumps((False, BackendError(msg[:500]), list(effects), cpu, walls))
        try:
            conn.sendall(HEADER.pack(len(out)) + out)
        except (OSError, ValueError):
            return


def replay_effects(state: Any, effects: list[tuple[Any, ...]]) -> None:
    """On the server: apply what a job recorded in its worker (:func:`install_capture`) to ``state``'s metrics,
    inspector and trace file."""
    for eff in effects:
        try:
            if eff[0] == "metric":
                _, name, labels, op, amount = eff
                getattr(getattr(state.metrics, name).labels(**labels), op)(amount)
            elif eff[0] == "keep" and state.inspect is not None:
                state.inspect.keep_entry(eff[1], eff[2])
            elif eff[0] == "out" and state.inspect is not None:
                state.inspect.write_out(eff[1], *eff[2])
        except Exception:  # bookkeeping never fails a request
            logger.debug("could not replay a worker's effect", exc_info=True)

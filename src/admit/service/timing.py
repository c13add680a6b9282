"""Where a request's time went on the server: the ``Server-Timing`` header (``[service] server_timing = true``).

Off by default. When on, every ``/v1`` answer carries one header whose entries are the stages of the request on
the server, in milliseconds (``name;dur=ms``), each from one mark to the next on the system's monotonic clock
(the worker processes read the same clock):

=========  ==================================================================================================
``read``   from the request's first bytes reaching the server to the app starting on it: the event loop's backlog
``gate``   auth, admission (the in-flight bounds) and reading the body
``route``  routing, the caller, the job pickled and handed to the pool
``queue``  waiting in the tenant's fair queue for a worker process
``hand``   from the job sent to the worker to the worker starting on it (the pipe, the worker being woken)
``work``   the worker's wall time on the job (``cpu``: its CPU time within it; ``runq``: the job thread's time
           runnable but waiting for a core; ``blocked``: the rest of ``work`` that the job thread was not on a core
           nor waiting for one: asleep on a lock, I/O, another thread)
``back``   from the worker's end to the server having read the whole answer (the pipe, the loop's backlog)
``resume`` from the answer read to the answer's headers going out (the route's turn of the loop, the response)
``total``  from the first bytes to the answer's headers going out
=========  ==================================================================================================

A client subtracts ``total`` from its own time to see what was outside the server (its own scheduling, the
kernel's queues before the server read the bytes). The marks are taken where the request passes; nothing waits
for them. A stage whose marks are missing (a refusal, a route that runs no job) is left out.
"""

from __future__ import annotations

import contextvars
import time

__all__ = ["STAGES", "mark", "marks", "server_timing"]

STAGES: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("admit_stages", default=None)
"""The marks of the request being handled (set by the gate when ``server_timing`` is on, else ``None``)."""

_ORDER = (
    ("read", "received", "app"),
    ("gate", "app", "admitted"),
    ("route", "admitted", "queued"),
    ("queue", "queued", "started"),
    ("hand", "started", "worker_start"),
    ("work", "worker_start", "worker_end"),
    ("back", "worker_end", "answered"),
    ("resume", "answered", "response"),
    ("total", "received", "response"),
)


def marks() -> dict[str, float] | None:
    """The current request's marks (``None`` when timing is off)."""
    return STAGES.get()


def mark(name: str, at: float | None = None) -> None:
    """Mark ``name`` on the current request (now, or ``at``); nothing when timing is off."""
    stages = STAGES.get()
    if stages is not None:
        stages[name] = time.monotonic() if at is None else at


def server_timing(stages: dict[str, float]) -> bytes:
    """The ``Server-Timing`` header's value for ``stages`` (every stage whose two marks are there)."""
    parts = []
    for name, start, end in _ORDER:
        a, b = stages.get(start), stages.get(end)
        if a is not None and b is not None:
            parts.append(f"{name};dur={max(0.0, b - a) * 1000:.2f}")
    if "cpu" in stages:
        parts.append(f"cpu;dur={stages['cpu'] * 1000:.2f}")
    if "busy" in stages:  # a count, not a time: the pool's workers holding a job when this one was queued
        parts.append(f"busy;dur={stages['busy']:.0f}")
    if "runq" in stages and "on_core" in stages and "worker_start" in stages and "worker_end" in stages:
        blocked = stages["worker_end"] - stages["worker_start"] - stages["on_core"] - stages["runq"]
        parts.append(f"runq;dur={max(0.0, stages['runq']) * 1000:.2f}")
        parts.append(f"blocked;dur={max(0.0, blocked) * 1000:.2f}")
    return ", ".join(parts).encode("latin-1")

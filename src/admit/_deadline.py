"""The checkpoints long request work passes, and the deadline and scheduler they answer to.

A served request's work runs in a worker (a thread of :class:`~admit.service.work.WorkPool`, or a process of
:class:`~admit.service.procs.ProcessPool`) under :func:`deadline`; the thread pool's fair scheduler also
installs a hook with :func:`scheduled`. Both act at :func:`checkpoint`: every regular-expression call passes
one (:mod:`admit._linear` counts its work there), and the long loops (packing, splitting, reranking, secret
scans) call it themselves. Past the deadline a checkpoint raises :class:`DeadlineExceeded`, so a request whose
caller has already been answered 504 stops instead of holding its worker; under the scheduler a request that
has run long waits at its checkpoints while a shorter one needs the interpreter.

Outside the service nothing is installed and a checkpoint costs two dictionary reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from admit.errors import BackendTimeout

__all__ = ["DeadlineExceeded", "checkpoint", "deadline", "scheduled"]


class DeadlineExceeded(BackendTimeout):
    """Raised inside work whose :func:`deadline` has passed: the next checkpoint stops it."""


_LOCAL = threading.local()


def checkpoint() -> None:
    """A point where long work may stop or wait: past this thread's :func:`deadline` it raises
    :class:`DeadlineExceeded`; under a scheduler (:func:`scheduled`, the service's worker pool) a request that
    has run long waits here while a shorter one needs the interpreter. Every regex call passes here; loops
    that do other work call it themselves."""
    local = _LOCAL.__dict__
    hook = local.get("hook")
    if hook is not None:
        hook()
    end = local.get("at")
    if end is not None and time.monotonic() > end:
        raise DeadlineExceeded("the request's time budget ran out while its text was being processed")


def scheduled(hook: Callable[[], None] | None) -> AbstractContextManager[None]:
    """Call ``hook`` at every :func:`checkpoint` of this thread (the service's fair scheduler)."""
    return _installed("hook", hook)


def deadline(at: float | None) -> AbstractContextManager[None]:
    """Stop this thread's work at its next :func:`checkpoint` once ``time.monotonic()`` passes ``at``.

    The service runs each request's work under its deadline, so a request that has timed out does not go on
    using a worker (its caller has already been answered).
    """
    return _installed("at", at)


@contextmanager
def _installed(name: str, value: object) -> Iterator[None]:
    """``value`` as this thread's ``name`` (``hook`` or ``at``) while the block runs, the previous one after."""
    prev = _LOCAL.__dict__.get(name)
    setattr(_LOCAL, name, value)
    try:
        yield
    finally:
        setattr(_LOCAL, name, prev)

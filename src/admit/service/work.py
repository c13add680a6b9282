"""The worker pool request work runs in, with a share per tenant (see :class:`WorkPool`)."""

from __future__ import annotations

import os
import sys

import anyio
from anyio.lowlevel import RunVar

__all__ = ["SWITCH_INTERVAL_S", "WorkPool", "responsive_interpreter"]

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


class WorkPool:
    """The worker threads request work runs in: at most ``size`` at once, at most ``per_tenant`` of them for one
    tenant (the event loop itself runs no request work, so ``/healthz`` and the routing stay responsive)."""

    def __init__(self, size: int = 0, per_tenant: int = 0) -> None:
        """``0`` sizes to the machine (see :class:`~admit.service.config.Limits`)."""
        cores = os.cpu_count() or 2
        self.size = size or min(64, max(4, 4 * cores))
        """Worker threads at once."""
        self.per_tenant = min(self.size, per_tenant or max(1, cores // 2))
        """Of those, the most one tenant holds."""
        self._limiters: RunVar[dict[str, anyio.CapacityLimiter]] = RunVar(f"admit-work-{id(self)}")

    def limiters(self, tenant: str) -> tuple[anyio.CapacityLimiter, anyio.CapacityLimiter]:
        """The pool's and ``tenant``'s limiters (created per event loop, on first use)."""
        try:
            table = self._limiters.get()
        except LookupError:
            table = {"": anyio.CapacityLimiter(self.size)}
            self._limiters.set(table)
        if tenant not in table:
            if len(table) > 10_000:  # bounded: a burst of tenants cannot grow it without limit
                for key in [k for k, v in table.items() if k and v.borrowed_tokens == 0]:
                    del table[key]
            table[tenant] = anyio.CapacityLimiter(self.per_tenant)
        return table[""], table[tenant]

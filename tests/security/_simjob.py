"""The job record the scheduler core reads (:class:`admit.service.work.Job`'s fields), for the tests that drive the
core and the fair queue on a simulated clock."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(eq=False)
class SimJob:
    tenant: str
    key: str = ""
    size: int = 100
    estimate: float = 0.0
    deadline_at: float | None = None
    long: bool = False
    heavy: bool = False
    quiet: bool = False
    over: bool = False
    stopped: bool = False
    since: float = 0.0

"""The job record the scheduler core reads, for the tests that drive the core and the fair queue on a simulated
clock: :class:`admit.service.work.Job` itself, with a request of 100 tokens by default."""

from __future__ import annotations

from dataclasses import dataclass

from admit.service.work import Job


@dataclass(slots=True, eq=False)
class SimJob(Job):
    """:class:`~admit.service.work.Job` as the pool makes it, sized 100 unless a test says otherwise."""

    size: int = 100

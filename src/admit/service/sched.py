"""The CPU share of long jobs in the worker processes (:class:`~admit.service.procs.ProcessPool`), as a pure rule.

Short jobs (under ``long_cpu_s`` of CPU) always run. Long jobs get the cores the short ones leave, but never
fewer than ``min_lanes`` (one by default), whatever the core count: long work keeps a guaranteed share however
many short jobs arrive (issue 47: a prune that took 3 s alone took 35-58 s beside three light tenants, paused as
long as any short job ran). When there are more long jobs than lanes they take turns: a job keeps its lane for
``slice_s`` once resumed, then yields it to the job paused longest. So no job stays paused longer than
``ceil(long jobs / lanes) * (slice_s + tick_s)``, and there are never more long jobs than worker processes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LaneJob", "lanes_for", "long_lanes", "max_pause_s"]


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

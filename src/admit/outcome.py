"""What a pruner returns (:class:`PruneOutcome`, one :class:`GradedChunk` per candidate): the record the pruners
write and the answerability stage reads, below both, so neither imports the other (``admit.prune.base``
re-exports them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from admit.trace import PrunerRecord
from admit.types import Usage

__all__ = ["GradedChunk", "PruneOutcome"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GradedChunk:
    """One candidate's pruning outcome."""

    chunk_id: str
    """The candidate id."""
    grade: int
    """Rubric grade 1..5."""
    kept: bool
    """Whether the chunk stays."""
    reason: str
    """Why: ``grade 4 >= threshold 3``, ``keep_top_k``, ``on_error: keep_top_k``, the grader's note, ..."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneOutcome:
    """The result of pruning one candidate list."""

    strategy: str
    """The strategy that ran."""
    graded: tuple[GradedChunk, ...]
    """One entry per candidate, in input order."""
    usage: Usage = field(default_factory=Usage)
    """LLM tokens, calls, cost and latency (zero for CPU strategies)."""
    fallback: str | None = None
    """The ``on_error`` action applied, if the pruner failed."""
    error: str | None = None
    """The failure, if any."""
    notes: tuple[str, ...] = ()
    """Anything else worth tracing (unknown ids ignored, second pass, cache hit ...)."""
    signals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Per chunk id, the pruner's absolute (similarity, probability) when it has them (``setwise``): what
    :mod:`admit.answerability` reads beside the admitted text."""
    expected_needed: float | None = None
    """The pruner's expected number of needed chunks, when it has one."""
    cross: Mapping[str, float] = field(default_factory=dict)
    """Per chunk id, the cross-encoder's score when the pruner read it (``setwise`` with ``cross`` on)."""

    @property
    def kept_ids(self) -> list[str]:
        """Ids of the kept chunks, in input order."""
        return [g.chunk_id for g in self.graded if g.kept]

    def as_dict(self) -> PrunerRecord:
        """Return a JSON-ready dict (the trace's ``pruner``)."""
        return {
            "strategy": self.strategy,
            "usage": self.usage.as_dict(),
            "fallback": self.fallback,
            "error": self.error,
            "notes": list(self.notes),
        }

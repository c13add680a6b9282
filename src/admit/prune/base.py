"""The Pruner Protocol, the shared five-level rubric, and the threshold / keep_top_k / on_error rules.

Every strategy grades every candidate on the same rubric, so ``threshold`` means the same thing for every
strategy and every query: a chunk stays when its grade is at or above the threshold, and the top
``keep_top_k`` reranked chunks stay regardless.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from admit.errors import AdmitError, ConfigError
from admit.outcome import GradedChunk, PruneOutcome
from admit.prune.settings import PruneSettings
from admit.types import Scored, Usage

if TYPE_CHECKING:  # admit.question reads text with numpy: not imported by `admit --help`
    from admit.question import Question

__all__ = [
    "RUBRIC",
    "Grade",
    "GradedChunk",
    "PruneOutcome",
    "Pruner",
    "apply_threshold",
    "run_pruner",
]

logger = logging.getLogger(__name__)


class Grade(IntEnum):
    """The five-level rubric shared by every pruner."""

    UNRELATED = 1
    TANGENTIAL = 2
    USEFUL = 3
    NEEDED_WITH_OTHER = 4
    ESSENTIAL = 5


RUBRIC: dict[int, str] = {
    5: "essential: directly states (part of) the answer",
    4: "needed together with another chunk: a bridge; on its own it may not mention the question's topic, "
    "but combined with another chunk it answers part of the question",
    3: "useful context: helps explain or qualify the answer, not strictly needed",
    2: "tangential: same topic, does not help answer this question",
    1: "unrelated: off topic",
}
"""The rubric text, as shown to LLM graders and in traces."""


@runtime_checkable
class Pruner(Protocol):
    """Grades every candidate on the rubric and decides which stay."""

    name: str
    """The strategy name."""

    def prune(self, question: str, candidates: Sequence[Scored], settings: PruneSettings) -> PruneOutcome:
        """Grade ``candidates`` (best rerank first) and decide. May raise; :func:`run_pruner` applies on_error."""
        ...


def apply_threshold(
    strategy: str,
    candidates: Sequence[Scored],
    grades: Sequence[int],
    settings: PruneSettings,
    *,
    reasons: Sequence[str] | None = None,
    usage: Usage | None = None,
    notes: Sequence[str] = (),
    unrelated: Sequence[bool] | None = None,
) -> PruneOutcome:
    """Keep grade >= threshold, plus the top ``keep_top_k`` by rerank rank; clamp grades into 1..5.

    ``unrelated``: chunks the pruner found unrelated on an absolute check (not just the weakest of the list);
    ``keep_top_k`` does not keep those, so a short list of one unrelated chunk admits nothing.
    """
    if len(grades) != len(candidates):
        raise ConfigError(f"{strategy}: {len(grades)} grades for {len(candidates)} candidates.")
    out: list[GradedChunk] = []
    for idx, (cand, g) in enumerate(zip(candidates, grades, strict=True)):
        grade = min(5, max(1, int(g)))
        note = reasons[idx] if reasons is not None else ""
        if grade >= settings.threshold:
            kept, why = True, f"grade {grade} >= threshold {settings.threshold}"
        elif cand.rank < settings.keep_top_k and not (unrelated is not None and unrelated[idx]):
            kept, why = True, f"keep_top_k (rank {cand.rank + 1} <= {settings.keep_top_k}); grade {grade}"
        else:
            kept, why = False, f"grade {grade} < threshold {settings.threshold}"
        out.append(
            GradedChunk(chunk_id=cand.chunk.id, grade=grade, kept=kept, reason=f"{why}; {note}" if note else why)
        )
    return PruneOutcome(strategy=strategy, graded=tuple(out), usage=usage or Usage(), notes=tuple(notes))


def fallback_outcome(
    strategy: str, candidates: Sequence[Scored], settings: PruneSettings, error: str, usage: Usage | None = None
) -> PruneOutcome:
    """The outcome when the pruner failed: ``settings.on_error`` decides (``raise`` is handled by the caller)."""
    action = settings.on_error
    out = []
    for c in candidates:
        if action == "keep_all":
            kept = True
        elif action == "drop":
            kept = False
        else:  # keep_top_k (at least the best one, so an answer is still possible)
            kept = c.rank < max(settings.keep_top_k, 1)
        out.append(GradedChunk(chunk_id=c.chunk.id, grade=3 if kept else 1, kept=kept, reason=f"on_error: {action}"))
    return PruneOutcome(strategy=strategy, graded=tuple(out), usage=usage or Usage(), fallback=action, error=error)


def run_pruner(
    pruner: Pruner, question: str | Question, candidates: Sequence[Scored], settings: PruneSettings
) -> PruneOutcome:
    """Run ``pruner``; on any failure apply ``settings.on_error`` and record it, or re-raise for ``raise``.

    A pruner gets the question's text (:meth:`Pruner.prune`), or its record (:class:`admit.question.Question`) when
    it says it reads one (a class attribute ``reads_question_record = True``: the setwise pruner)."""
    if not candidates:
        return PruneOutcome(strategy=pruner.name, graded=())
    t0 = time.perf_counter()
    handed: Any = (
        question
        if getattr(pruner, "reads_question_record", False) is True
        else (question if isinstance(question, str) else question.text)
    )
    try:
        outcome = pruner.prune(handed, candidates, settings)
    except Exception as exc:
        if settings.on_error == "raise":
            if isinstance(exc, AdmitError):
                raise
            raise AdmitError(f"pruner {pruner.name!r} failed: {exc}") from exc
        logger.warning("pruner %s failed (%s); applying on_error=%s", pruner.name, exc, settings.on_error)
        spent = getattr(exc, "usage", None)  # an LLM grader's failed call still cost tokens
        usage = spent if isinstance(spent, Usage) else Usage()
        return fallback_outcome(
            pruner.name,
            candidates,
            settings,
            f"{type(exc).__name__}: {exc}",
            replace(usage, latency_s=time.perf_counter() - t0),
        )
    ids = [c.chunk.id for c in candidates]
    got = [g.chunk_id for g in outcome.graded]
    if got != ids:
        # a pruner must return one entry per candidate, in order; anything else is a pruner bug
        if settings.on_error == "raise":
            raise AdmitError(f"pruner {pruner.name!r} returned decisions for {got}, expected {ids}.")
        return fallback_outcome(pruner.name, candidates, settings, "pruner returned the wrong ids", outcome.usage)
    return outcome

"""One decision above the stages: the one "rerank, prune, decide" path (:func:`prune_candidates`, over ranked
candidates :func:`prune_ranked`) and its verdict (:class:`PruneVerdict`), the shape every face returns. The run
carries the answerability stage's record (:attr:`PruneRun.answer`, :func:`assess_run`).

It stands above the stages it joins: :mod:`admit.prune` grades the candidates and :mod:`admit.answerability`
judges what is kept, side by side below it, neither importing the other (contracts in ``pyproject.toml``).
It was ``admit.prune.verdicts``.

Every face that prunes without packing calls it (the adapters, ``POST /v1/prune`` and the MCP ``prune_context``
tool, ``admit prune``, the evaluation harness), and :meth:`admit.pipeline.Pipeline.pack` decides through
:func:`prune_ranked` too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from admit.answerability import Answerability, assess_kept
from admit.answerability.adaptation import Adaptation
from admit.backends.embedders.base import Embedder
from admit.backends.rerankers import Reranker
from admit.errors import ConfigError, RequestError
from admit.prune.base import PruneOutcome, Pruner, run_pruner
from admit.prune.catalogue import find_strategy
from admit.prune.settings import PruneSettings
from admit.question import Question, read_question
from admit.rerank import ranked_by, rerank
from admit.types import Chunk, Decision, Scored

__all__ = [
    "PruneRun",
    "PruneVerdict",
    "assess_run",
    "check_unique_ids",
    "prune_candidates",
    "prune_ranked",
    "shows_text_to_llm",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneVerdict:
    """What pruning decided for one candidate."""

    chunk: Chunk
    """The candidate."""
    kept: bool
    """Whether it stays."""
    grade: int
    """Its grade on the five-level rubric."""
    reason: str
    """Why (the pruner's words, or why nothing was pruned)."""
    score: float | None
    """Its rerank score (``None`` when not finite)."""
    rank: int
    """Its position after reranking, 0-based."""

    def as_dict(self) -> dict[str, Any]:
        """The verdict shape every face returns: ``id``, ``kept``, ``grade``, ``reason``, ``score``, ``rank``."""
        return {
            "id": self.chunk.id,
            "kept": self.kept,
            "grade": self.grade,
            "reason": self.reason,
            "score": self.score,
            "rank": self.rank,
        }

    def decision(self) -> Decision:
        """The pipeline's decision for a candidate pruning dropped."""
        return Decision(
            chunk_id=self.chunk.id,
            state="dropped",
            stage="prune",
            reason="pruned",
            score=self.score,
            grade=self.grade,
            detail=self.reason,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneRun:
    """The result of :func:`prune_candidates`: one verdict per candidate, in input order."""

    strategy: str
    """The strategy that ran (``none`` when nothing was pruned)."""
    verdicts: tuple[PruneVerdict, ...]
    """One verdict per candidate, in input order."""
    ranked: tuple[Scored, ...]
    """The candidates, best first."""
    outcome: PruneOutcome | None
    """The pruner's outcome (usage, fallback, error, notes); ``None`` when nothing was pruned."""
    answer: Answerability | None = None
    """Whether the kept chunks answer the question (the answerability stage, :func:`assess_run`);
    ``None`` until assessed."""

    @property
    def kept_ids(self) -> list[str]:
        """Ids of the kept candidates, in input order."""
        return [v.chunk.id for v in self.verdicts if v.kept]

    def as_dict(self, question: str | None = None) -> dict[str, Any]:
        """The one prune answer of every face (``POST /v1/prune``, MCP ``prune_context``, ``admit prune``'s lines):
        ``strategy``, ``kept_ids``, ``dropped_ids``, ``decisions`` (:meth:`PruneVerdict.as_dict`, input order),
        ``fallback``, ``error``, ``usage``, ``notes``; with ``answerable``, ``answerability`` and ``answer_state``
        when the run was assessed (:attr:`answer`: serialised, never computed here; ``question`` is not read, it
        stays for the callers that pass it)."""
        o = self.outcome
        return {
            **(self.answer.answer_fields() if self.answer is not None else {}),
            "strategy": self.strategy,
            "kept_ids": self.kept_ids,
            "dropped_ids": [v.chunk.id for v in self.verdicts if not v.kept],
            "decisions": [v.as_dict() for v in self.verdicts],
            "fallback": o.fallback if o else None,
            "error": o.error if o else None,
            "usage": dict(o.usage.as_dict()) if o else {},
            "notes": list(o.notes) if o else [],
        }


def check_unique_ids(ids: Sequence[str]) -> None:
    """Raise :class:`~admit.errors.RequestError` (naming ``candidates[i].id``) when a candidate id repeats."""
    seen: set[str] = set()
    for i, cid in enumerate(ids):
        if cid in seen:
            raise RequestError(f"Duplicate candidate id {cid!r}.", field=f"candidates[{i}].id")
        seen.add(cid)


def prune_candidates(
    question: str | Question,
    candidates: Sequence[Chunk],
    *,
    settings: PruneSettings,
    reranker: Reranker | None,
    pruner: Pruner | None,
    scores: Sequence[float] | None = None,
    skip_reason: str = "strategy none",
    assess: bool = True,
    embedder: Embedder | None = None,
) -> PruneRun:
    """Rerank ``candidates`` (or order them by ``scores``), prune them with ``settings``, decide per candidate and
    assess whether the kept ones answer the question (:attr:`PruneRun.answer`).

    Args:
        question: The question: its text, or the request's record (:func:`admit.question.read_question`), read
            once here and handed to rerank, the pruner and the answerability stage.
        candidates: The candidates; their ids must be unique.
        settings: The pruner settings (``strategy`` ``none`` keeps everything).
        reranker: Orders the candidates when ``scores`` is not given (may be ``None`` when it is).
        pruner: The pruner; ``None`` keeps everything.
        scores: Reranker scores computed before, in candidate order (skips reranking).
        skip_reason: The reason recorded on every candidate when nothing is pruned.
        assess: Whether to assess the kept chunks (``False``: the caller assesses what it passes on, e.g. an
            adapter that cuts the kept documents further).
        embedder: The encoder the verdict reads close words of the question's key terms with.
    """
    check_unique_ids([c.id for c in candidates])
    question = read_question(question)
    if scores is None:
        if reranker is None:
            raise ConfigError("prune_candidates needs a reranker or the candidates' scores.")
        ranked, _ = rerank(question, candidates, reranker, keep=len(candidates))
    else:
        ranked = ranked_by(candidates, scores)
    run = prune_ranked(question, ranked, settings=settings, pruner=pruner, skip_reason=skip_reason)
    by_id = {v.chunk.id: v for v in run.verdicts}
    run = replace(run, verdicts=tuple(by_id[c.id] for c in candidates))
    return assess_run(question, run, embedder=embedder) if assess else run


def prune_ranked(
    question: str | Question,
    ranked: Sequence[Scored],
    *,
    settings: PruneSettings,
    pruner: Pruner | None,
    skip_reason: str = "strategy none",
) -> PruneRun:
    """Prune candidates already ranked (best first) and decide per candidate; verdicts in ranked order.

    The one verdict mapping: :func:`prune_candidates` and :meth:`Pipeline.pack` both decide through it.
    """
    if pruner is None or settings.strategy == "none" or not ranked:
        verdicts = tuple(
            PruneVerdict(chunk=s.chunk, kept=True, grade=3, reason=skip_reason, score=_finite(s.score), rank=s.rank)
            for s in ranked
        )
        return PruneRun(strategy="none", verdicts=verdicts, ranked=tuple(ranked), outcome=None)
    outcome = run_pruner(pruner, question, ranked, settings)
    graded = {g.chunk_id: g for g in outcome.graded}
    verdicts = tuple(
        PruneVerdict(
            chunk=s.chunk,
            kept=graded[s.chunk.id].kept,
            grade=graded[s.chunk.id].grade,
            reason=graded[s.chunk.id].reason,
            score=_finite(s.score),
            rank=s.rank,
        )
        for s in ranked
    )
    return PruneRun(strategy=outcome.strategy, verdicts=verdicts, ranked=tuple(ranked), outcome=outcome)


def shows_text_to_llm(pruner: Pruner) -> bool:
    """Whether ``pruner`` shows candidate text to a model (true for a pruner the catalogue does not know)."""
    spec = find_strategy(getattr(pruner, "name", ""))
    return spec is None or spec.shows_text_to_llm


def _finite(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def assess_run(
    question: str | Question,
    run: PruneRun,
    kept: Sequence[Chunk] | None = None,
    *,
    embedder: Embedder | None = None,
    adaptation: Adaptation | None = None,
) -> PruneRun:
    """``run`` with its :attr:`PruneRun.answer`: whether ``kept`` (default: the chunks it kept; the pipeline
    passes what the source cap leaves) answer the question. The one place the record is made:
    :func:`prune_candidates` and :meth:`admit.pipeline.Pipeline.pack` call it, every face reads the record.
    ``embedder``: the encoder that sees a close word of the question's key terms; ``adaptation``: the knowledge
    base's own thresholds (:func:`admit.answerability.assess`). (It was ``admit.answerability.assess_run``.)"""
    chunks = [v.chunk for v in run.verdicts if v.kept] if kept is None else kept
    pool = [v.chunk for v in run.verdicts]
    answer = assess_kept(question, chunks, run.outcome, pool=pool, embedder=embedder, adaptation=adaptation)
    return replace(run, answer=answer)

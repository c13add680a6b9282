"""What every framework adapter shares: turn framework documents into chunks, prune, report per document."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from admit.backends.rerankers import Reranker, resolve_reranker
from admit.pipeline import prune_candidates
from admit.prune import Pruner, PrunerResources, resolve_pruner
from admit.prune.settings import PruneSettings
from admit.types import Chunk

__all__ = ["AdmitFilter", "Doc", "Kept"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Doc:
    """A framework document, reduced to what admit needs."""

    id: str | None
    text: str
    title: str = ""
    score: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Kept:
    """A kept document: its input position and admit's decision (added to the document's metadata)."""

    index: int
    grade: int
    reason: str
    score: float | None
    rank: int

    def as_metadata(self, strategy: str) -> dict[str, Any]:
        """The ``admit`` metadata entry added to a kept document."""
        return {
            "strategy": strategy,
            "grade": self.grade,
            "reason": self.reason,
            "score": self.score,
            "rank": self.rank,
        }


@dataclass(kw_only=True)
class AdmitFilter:
    """Prune a list of documents for a question with one of admit's strategies.

    Args:
        strategy: Pruning strategy (``setwise`` by default; ``top_n``, ``score_threshold``, LLM strategies ...).
        threshold: Keep grades at or above this (1..5).
        keep_top_k: The top-k reranked documents always stay.
        on_error: What a pruner failure does (``keep_top_k``, ``keep_all``, ``drop``, ``raise``).
        params: Strategy parameters (``n`` for ``top_n`` ...).
        reranker: Reranker name or instance (``retriever``: the documents' scores, else BM25).
        pruner: A pruner instance (overrides ``strategy``).
        pruner_options: Keyword arguments for the pruner built by name (``embedder=``, ``llm=`` ...).
    """

    strategy: str = "setwise"
    threshold: int = 3
    keep_top_k: int = 1
    on_error: str = "keep_top_k"
    params: Mapping[str, Any] = field(default_factory=dict)
    reranker: Reranker | str | None = None
    pruner: Pruner | None = None
    pruner_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._reranker = resolve_reranker(self.reranker)
        self._pruner: Pruner | None = self.pruner

    def _get_pruner(self) -> Pruner:
        if self._pruner is None:
            self._pruner = resolve_pruner(
                self.strategy, PrunerResources.from_options(self.pruner_options, strategy=self.strategy)
            )
        return self._pruner

    def settings(self) -> PruneSettings:
        """The prune settings built from the fields."""
        return PruneSettings(
            strategy=self.strategy,
            threshold=self.threshold,
            keep_top_k=self.keep_top_k,
            on_error=self.on_error,  # type: ignore[arg-type]
            params=dict(self.params),
        )

    def run(self, question: str, docs: Sequence[Doc]) -> tuple[list[Kept], str]:
        """Return the kept documents (in input order) and the strategy that ran."""
        if not docs:
            return [], self.strategy
        ids: list[str] = []
        seen: set[str] = set()
        for i, d in enumerate(docs):
            cid = d.id or f"doc-{i}"
            if cid in seen:
                cid = f"{cid}~{i}"
            seen.add(cid)
            ids.append(cid)
        chunks = [
            Chunk(id=cid, source_id=cid, text=d.text or " ", title=d.title, score=_finite(d.score))
            for cid, d in zip(ids, docs, strict=True)
        ]
        run = prune_candidates(
            question, chunks, settings=self.settings(), reranker=self._reranker, pruner=self._get_pruner()
        )
        kept = [
            Kept(index=i, grade=v.grade, reason=v.reason, score=v.score, rank=v.rank)
            for i, v in enumerate(run.verdicts)
            if v.kept
        ]
        return kept, run.strategy

    def with_(self, **changes: Any) -> AdmitFilter:
        """A copy with fields changed."""
        return replace(self, **changes)


def filter_from_fields(obj: Any) -> AdmitFilter:
    """An :class:`AdmitFilter` from an adapter's ``strategy``/``threshold``/``keep_top_k``/``on_error``/``params``."""
    return AdmitFilter(
        strategy=obj.strategy,
        threshold=obj.threshold,
        keep_top_k=obj.keep_top_k,
        on_error=obj.on_error,
        params=obj.params,
    )


def _finite(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None

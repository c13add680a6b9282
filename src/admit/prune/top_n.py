"""``top_n``: keep the N best reranked chunks. The baseline every pruner must beat."""

from __future__ import annotations

from collections.abc import Sequence

from admit.prune.base import PruneOutcome, apply_threshold
from admit.route import PruneSettings
from admit.types import Scored

__all__ = ["TopNPruner"]


class TopNPruner:
    """Grades the top ``n`` (``params.n``, default 3) as 5 and the rest as 1; threshold keeps the grade-5 ones."""

    name = "top_n"

    def __init__(self, n: int | None = None) -> None:
        """Create the pruner; ``n`` overrides ``settings.params['n']``."""
        self.n = n

    def prune(self, question: str, candidates: Sequence[Scored], settings: PruneSettings) -> PruneOutcome:
        """Grade by rank."""
        n = int(self.n if self.n is not None else settings.params.get("n", 3))
        grades = [5 if c.rank < n else 1 for c in candidates]
        return apply_threshold(
            self.name, candidates, grades, settings, reasons=[f"rank {c.rank + 1}" for c in candidates]
        )

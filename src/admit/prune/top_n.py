"""``top_n``: keep the N best reranked chunks. The baseline every pruner must beat."""

from __future__ import annotations

from collections.abc import Sequence

from admit.prune.base import PruneOutcome, apply_threshold
from admit.prune.checks import int_at_least
from admit.prune.settings import PruneSettings
from admit.prune.spec import StrategySpec
from admit.types import Scored

__all__ = ["SPEC", "TopNPruner"]


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


SPEC = StrategySpec(
    name="top_n",
    build=lambda res: TopNPruner(**res.options_for("top_n")),
    params={"n": int_at_least(0)},
    regrade_from_grades=True,
    source_modules=("admit.prune.top_n",),
    baseline=True,
    default_params={"n": 3},
    default_grid={"n": [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20]},
    color="#1f77b4",
    summary="baseline: keep the n best reranked",
)
"""``top_n`` in the strategy catalogue."""

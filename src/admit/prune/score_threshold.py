"""``score_threshold``: keep chunks whose rerank score clears a cut. A baseline: scores are not calibrated."""

from __future__ import annotations

from collections.abc import Sequence

from admit.prune.base import PruneOutcome, apply_threshold
from admit.prune.checks import boolean, number
from admit.prune.settings import PruneSettings
from admit.prune.spec import StrategySpec
from admit.types import Scored

__all__ = ["SPEC", "ScoreThresholdPruner"]


class ScoreThresholdPruner:
    """Grades 5 when the score is >= ``params.min_score``, else 1.

    With ``params.relative = true`` the cut is a share of the best score in the list (0..1), which at least
    makes it comparable across queries.
    """

    name = "score_threshold"

    def prune(self, question: str, candidates: Sequence[Scored], settings: PruneSettings) -> PruneOutcome:
        """Grade by score."""
        cut = float(settings.params.get("min_score", 0.5))
        if settings.params.get("relative", False) and candidates:
            best = max(c.score for c in candidates)
            lo = min(c.score for c in candidates)
            span = (best - lo) or 1.0
            vals = [(c.score - lo) / span for c in candidates]
        else:
            vals = [c.score for c in candidates]
        grades = [5 if v >= cut else 1 for v in vals]
        return apply_threshold(
            self.name, candidates, grades, settings, reasons=[f"score {v:.3f} vs cut {cut}" for v in vals]
        )


SPEC = StrategySpec(
    name="score_threshold",
    build=lambda res: ScoreThresholdPruner(),
    params={"min_score": number, "relative": boolean},
    regrade_from_grades=True,
    source_modules=("admit.prune.score_threshold",),
    baseline=True,
    default_params={"relative": True, "min_score": 0.5},
    default_grid={"relative": [True], "min_score": [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]},
    color="#2ca02c",
    summary="baseline: keep scores above a cut",
)
"""``score_threshold`` in the strategy catalogue."""

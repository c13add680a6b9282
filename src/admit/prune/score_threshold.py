"""``score_threshold``: keep chunks whose rerank score clears a cut. A baseline: scores are not calibrated."""

from __future__ import annotations

from collections.abc import Sequence

from admit.prune.base import PruneOutcome, apply_threshold
from admit.route import PruneSettings
from admit.types import Scored

__all__ = ["ScoreThresholdPruner"]


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

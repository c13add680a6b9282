"""A setwise scorer returning fixed scores, for the tests of the pruner's logic around them (cuts, floors)."""

from __future__ import annotations

from collections.abc import Sequence

from admit.prune.setwise_model.scorer import SetwiseScores


class Scripted:
    """A scorer returning fixed scores (the pruner's logic around them is what is tested); reads no cross-encoder."""

    cross = None

    def __init__(self, probs: Sequence[float], grades: Sequence[int], ruled: Sequence[bool] = ()) -> None:
        n = len(grades)
        self.out = SetwiseScores(
            probs=tuple(probs),
            grades=tuple(grades),
            reasons=("r",) * n,
            expected_needed=float(sum(probs)),
            unrelated=tuple(g == 1 for g in grades),
            ruled=tuple(ruled) or (False,) * n,
        )

    def score(self, question: str, items: object) -> SetwiseScores:
        return self.out

"""A scripted grader shipped for tests: grades come from a function or a mapping."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from admit.prune.base import PruneOutcome, apply_threshold
from admit.prune.settings import PruneSettings
from admit.types import Chunk, Scored

__all__ = ["FakeGrader"]


class FakeGrader:
    """``FakeGrader(fn=lambda question, chunk: 5 if "audit" in chunk.text else 1)``.

    ``fail`` makes it raise (to test ``on_error``).
    """

    name = "fake"

    def __init__(
        self,
        fn: Callable[[str, Chunk], int] | None = None,
        grades: Mapping[str, int] | None = None,
        *,
        default: int = 1,
        fail: Exception | None = None,
    ) -> None:
        """Create the grader."""
        self._fn = fn
        self._grades = dict(grades or {})
        self._default = default
        self._fail = fail
        self.calls = 0

    def prune(self, question: str, candidates: Sequence[Scored], settings: PruneSettings) -> PruneOutcome:
        """Grade with the script."""
        self.calls += 1
        if self._fail is not None:
            raise self._fail
        if self._fn is not None:
            grades = [self._fn(question, c.chunk) for c in candidates]
        else:
            grades = [self._grades.get(c.chunk.id, self._default) for c in candidates]
        return apply_threshold(self.name, candidates, grades, settings)

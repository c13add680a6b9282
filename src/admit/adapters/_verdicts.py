"""What an adapter hands the core and gets back: :class:`Doc` in, a :class:`Verdict` per document out, collected in
a :class:`FilterRun`; :class:`Decision` is an adapter's ``decide()`` result (``(kept, dropped)`` that also says
whether the kept documents answer the question)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from admit.types import AnswerState, answerable_of

__all__ = ["Decision", "Doc", "FilterRun", "Verdict"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Doc:
    """A framework document, reduced to what admit needs."""

    id: str | None
    """The framework's id (``None``: a position-based id is made)."""
    text: str
    """The text graded."""
    title: str = ""
    """The title (counts in ranking and grading)."""
    score: float | None = None
    """The retriever's score, if any."""
    embedding: Sequence[float] | None = None
    """The vector the framework's store holds for the document, if it gives one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What admit decided for one document (added to the document's metadata as ``admit``)."""

    index: int
    """The document's input position."""
    kept: bool
    """Whether it stays."""
    stage: str
    """Where it was decided: ``prune``, ``size``, ``duplicate``, ``top_k`` or ``budget``."""
    grade: int | None
    """Its grade on the five-level rubric (``None`` when it never reached the pruner)."""
    reason: str
    """Why."""
    score: float | None
    """Its rank score (the retriever's score, or the reranker's)."""
    rank: int | None
    """Its position in the ranked list, 0-based (``None`` when it never reached the pruner)."""
    excerpt: str | None = None
    """The text passed on instead of the whole document: an anchored excerpt of the best document when it
    alone is over ``max_tokens`` (the sentences that match the question, elisions marked)."""

    def as_metadata(
        self,
        strategy: str,
        *,
        answerability: float | None = None,
        answer_state: AnswerState | None = None,
    ) -> dict[str, Any]:
        """The ``admit`` metadata entry added to the document (:meth:`FilterRun.metadata` fills in the call's
        ``answer_state``, ``answerable`` read from it, and ``answerability``)."""
        return {
            "kept": self.kept,
            "stage": self.stage,
            "strategy": strategy,
            "grade": self.grade,
            "reason": self.reason,
            "score": self.score,
            "rank": self.rank,
            "excerpt": self.excerpt is not None,
            "answerable": answerable_of(answer_state),
            "answerability": answerability,
            "answer_state": answer_state,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class FilterRun:
    """One call of :meth:`AdmitFilter.run`: a verdict per document, in input order."""

    strategy: str
    """The strategy that ran (``none`` when nothing was pruned)."""
    verdicts: tuple[Verdict, ...]
    """One verdict per document, in input order."""
    answerability: float | None = None
    """The calibrated probability behind :attr:`answer_state`."""
    answer_state: AnswerState | None = None
    """``answered``, ``unsure`` or ``not_answered`` (``None``: not assessed)."""

    @property
    def answerable(self) -> bool | None:
        """Whether the kept documents answer the question, read from :attr:`answer_state`
        (:func:`admit.types.answerable_of`): ``True`` (``answered``), ``None`` (``unsure``) or ``False``."""
        return answerable_of(self.answer_state)

    def metadata(self, verdict: Verdict) -> dict[str, Any]:
        """The ``admit`` metadata entry of one document: its verdict, the strategy, and whether the kept documents
        answer the question (``answerable``, ``answerability``, ``answer_state``: the same on every document)."""
        return verdict.as_metadata(
            self.strategy,
            answerability=self.answerability,
            answer_state=self.answer_state,
        )

    @property
    def kept(self) -> list[Verdict]:
        """The kept documents' verdicts, in input order."""
        return [v for v in self.verdicts if v.kept]

    @property
    def dropped(self) -> list[Verdict]:
        """The dropped documents' verdicts, in input order."""
        return [v for v in self.verdicts if not v.kept]


D = TypeVar("D")

_STATE_OF: dict[bool | None, AnswerState] = {True: "answered", None: "unsure", False: "not_answered"}


class Decision(tuple[list[D], list[D]], Generic[D]):
    """``(kept, dropped)`` of an adapter's ``decide()``, each in input order, that also says whether the kept
    documents answer the question (``answerable``, ``answerability``, ``answer_state``): it unpacks as the pair it
    always was.

    Example:
        >>> d = Decision(["a"], ["b"], answerable=None, answerability=0.3, answer_state="unsure")
        >>> kept, dropped = d
        >>> (kept, dropped, d.answerable, d.answerability, d.answer_state)
        (['a'], ['b'], None, 0.3, 'unsure')
    """

    answerable: bool | None
    """Whether the kept documents answer the question (:mod:`admit.answerability`): ``True`` (``answered``),
    ``None`` (``unsure``: the check cannot tell) or ``False`` (``not_answered``)."""
    answerability: float | None
    """The calibrated probability behind ``answerable``."""
    answer_state: AnswerState
    """``answered``, ``unsure`` or ``not_answered``."""

    def __new__(
        cls,
        kept: list[D],
        dropped: list[D],
        *,
        answerable: bool | None = True,
        answerability: float | None = None,
        answer_state: AnswerState | None = None,
    ) -> Decision[D]:
        """The pair, with the call's answerability; ``answerable`` is read from ``answer_state``
        (:func:`admit.types.answerable_of`), and ``answer_state`` from ``answerable`` when left out."""
        made = super().__new__(cls, (kept, dropped))
        made.answer_state = answer_state or _STATE_OF[answerable]
        made.answerable = answerable_of(made.answer_state)
        made.answerability = answerability
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its attributes."""
        return (_decision, (self[0], self[1], self.answerable, self.answerability, self.answer_state))

    @property
    def kept(self) -> list[D]:
        """The kept documents, in input order."""
        return self[0]

    @property
    def dropped(self) -> list[D]:
        """The dropped documents, in input order, each with its reason."""
        return self[1]


def _decision(
    kept: list[D],
    dropped: list[D],
    answerable: bool | None,
    answerability: float | None,
    answer_state: AnswerState | None = None,
) -> Decision[D]:
    return Decision(kept, dropped, answerable=answerable, answerability=answerability, answer_state=answer_state)

"""The answerability record: the verdict on one evidence set, computed once and read by every face."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from admit.errors import ConfigError
from admit.types import ANSWER_STATES, AnswerState, answerable_of

if TYPE_CHECKING:
    from admit.trace import AnswerRecord

__all__ = ["ANSWERABLE", "Answerability", "answerable_for"]

#: ``answerable`` for each verdict (:func:`admit.types.answerable_of`, read here for lookup tables).
ANSWERABLE: Mapping[AnswerState, bool | None] = MappingProxyType({s: answerable_of(s) for s in ANSWER_STATES})


def answerable_for(state: AnswerState) -> bool | None:
    """``answerable`` for the verdict ``state``: :func:`admit.types.answerable_of` (the one mapping), which also
    refuses a state that is none of :data:`~admit.types.ANSWER_STATES`.

    Example:
        >>> [answerable_for(s) for s in ("answered", "unsure", "not_answered")]
        [True, None, False]
    """
    if state is None:
        raise ConfigError("An assessed verdict has a state: answered, unsure or not_answered.")
    return answerable_of(state)


@dataclass(frozen=True, slots=True, kw_only=True)
class Answerability:
    """The verdict on one evidence set.

    Computed once per request (:func:`admit.decide.assess_run`, on the
    :class:`~admit.decide.PruneRun`) and read everywhere else: the pack result, ``/v1/prune`` and the MCP
    tools (:meth:`answer_fields`), the trace (:meth:`as_dict`), the ``no_answer`` note (:meth:`note`).
    """

    state: AnswerState
    """``answered``, ``unsure`` or ``not_answered`` (:data:`admit.types.AnswerState`); "unsure" changes nothing
    admitted, "not_answered" triggers the policy's ``on_no_answer``. :attr:`answerable` is read from it."""
    probability: float
    """P(the admitted evidence answers the question)."""
    model: str
    """The model that decided (the setwise pruner's name, ``lexical``, ``cross``; ``script``; ``empty`` when nothing
    was admitted)."""
    reason: str
    """Why, in words (for the trace, the ``no_answer`` fallback and the human output)."""
    missing: tuple[str, ...] = ()
    """The question's names, identifiers and key words that no admitted passage holds (what the note says)."""
    adaptation: str = ""
    """The knowledge base's own adaptation the thresholds came from (``admit adapt``: its date and chunk count),
    or ``""`` for the shipped thresholds."""

    def __post_init__(self) -> None:
        """Refuse a state that is not an :data:`~admit.types.AnswerState`."""
        answerable_for(self.state)

    @property
    def answerable(self) -> bool | None:
        """``True`` only when the verdict is ``answered``, ``False`` when it is ``not_answered``, ``None`` when it is
        ``unsure`` (:func:`admit.types.answerable_of`). Test :attr:`state`, not the truth of this, where the
        meaning is "not answered": ``not None`` is true."""
        return answerable_of(self.state)

    @property
    def not_answered(self) -> bool:
        """Whether the verdict is ``not_answered``: the one that triggers the policy's ``on_no_answer``."""
        return self.state == "not_answered"

    def after_pack(self, admitted_any: bool) -> Answerability:
        """The verdict once packed: evidence that answered (or may have: ``unsure``) but of which nothing fits the
        budget answers nothing."""
        if admitted_any or self.not_answered:
            return self
        return Answerability(
            probability=0.0,
            state="not_answered",
            model=self.model,
            reason="no evidence fits the budget",
            adaptation=self.adaptation,
        )

    def answer_fields(self) -> dict[str, Any]:
        """The keys every face returns beside the evidence: ``answerable`` (``True``, ``False`` or ``None`` for
        ``unsure``), ``answerability`` (the probability) and ``answer_state``."""
        return {"answerable": self.answerable, "answerability": self.probability, "answer_state": self.state}

    def as_dict(self) -> AnswerRecord:
        """The trace record's ``answer``: the state, ``answerable`` read from it, the probability, the model, the
        reason, ``missing`` (a list) and ``adaptation`` (only when the knowledge base's own thresholds were used or
        one was found stale)."""
        rec: AnswerRecord = {
            "state": self.state,
            "answerable": self.answerable,
            "probability": self.probability,
            "model": self.model,
            "reason": self.reason,
            "missing": list(self.missing),
        }
        if self.adaptation:
            rec["adaptation"] = self.adaptation
        return rec

    def note(self, action: str) -> str:
        """The note put in the evidence block when the verdict is "not answered" (``action``: the policy's
        ``on_no_answer``): what the passages lack, not an order not to answer (a generator told "do not guess"
        beside the right evidence is worse off than told nothing)."""
        lacks = (
            f"no passage below mentions {', '.join(repr(m) for m in self.missing)}"
            if self.missing
            else "the passages below cover the question's words only in part"
        )
        if action == "ask_to_narrow":
            return (
                f"admit's check: {lacks}. If they do not answer the question, ask the user to rephrase or narrow it "
                "(a product, a version, a feature name)."
            )
        return (
            f"admit's check: {lacks}. Answer from what they do say; if they do not cover what is asked, say which "
            "part the documentation does not cover."
        )

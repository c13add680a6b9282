"""The answerability record: the verdict on one evidence set, computed once and read by every face."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from admit.answerability.model import STATES

if TYPE_CHECKING:
    from admit.trace import AnswerabilityRecord

__all__ = ["ANSWERABLE", "Answerability", "answerable_for"]

#: ``answerable`` for each verdict: ``True`` only for ``answered``, ``False`` for ``not_answered``, ``None`` for
#: ``unsure`` (the check cannot tell: neither yes nor no).
ANSWERABLE: Mapping[str, bool | None] = MappingProxyType({"answered": True, "unsure": None, "not_answered": False})


def answerable_for(state: str) -> bool | None:
    """``answerable`` for the verdict ``state`` (:data:`ANSWERABLE`).

    Example:
        >>> [answerable_for(s) for s in ("answered", "unsure", "not_answered")]
        [True, None, False]

    Raises:
        ValueError: ``state`` is not one of :data:`~admit.answerability.model.STATES`.
    """
    if state not in STATES:
        raise ValueError(f"state must be one of {STATES}, got {state!r}")
    return ANSWERABLE[state]


@dataclass(frozen=True, slots=True, kw_only=True)
class Answerability:
    """The verdict on one evidence set.

    Computed once per request (:func:`admit.answerability.assess_run`, on the
    :class:`~admit.prune.verdicts.PruneRun`) and read everywhere else: the pack result, ``/v1/prune`` and the MCP
    tools (:meth:`answer_fields`), the trace (:meth:`as_dict`), the ``no_answer`` note (:meth:`note`).
    """

    answerable: bool | None
    """``True`` only when the verdict is ``answered``, ``False`` when it is ``not_answered`` (which triggers the
    policy's ``on_no_answer``), ``None`` when it is ``unsure`` (:func:`answerable_for`). Test :attr:`state`, not
    the truth of this field, where the meaning is "not answered": ``not None`` is true."""
    probability: float
    """P(the admitted evidence answers the question)."""
    model: str
    """The model that decided (the setwise pruner's name, ``lexical``, ``cross``; ``script``; ``empty`` when nothing
    was admitted)."""
    reason: str
    """Why, in words (for the trace, the ``no_answer`` fallback and the human output)."""
    state: str = ""
    """``answered``, ``unsure`` or ``not_answered`` (:data:`~admit.answerability.model.STATES`); "unsure" changes
    nothing admitted. Left out, it is read from :attr:`answerable` (``None``: ``unsure``)."""
    missing: tuple[str, ...] = ()
    """The question's names, identifiers and key words that no admitted passage holds (what the note says)."""
    adaptation: str = ""
    """The knowledge base's own adaptation the thresholds came from (``admit adapt``: its date and chunk count),
    or ``""`` for the shipped thresholds."""

    def __post_init__(self) -> None:
        if not self.state:
            state = next((s for s, a in ANSWERABLE.items() if a is self.answerable), "")
            if not state:
                raise ValueError(f"answerable must be True, False or None, got {self.answerable!r}")
            object.__setattr__(self, "state", state)
        said = answerable_for(self.state)
        if self.answerable is not said:
            raise ValueError(f"answerable must be {said} for the state {self.state!r}, got {self.answerable!r}")

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
            answerable=False,
            model=self.model,
            reason="no evidence fits the budget",
            adaptation=self.adaptation,
        )

    def answer_fields(self) -> dict[str, Any]:
        """The keys every face returns beside the evidence: ``answerable`` (``True``, ``False`` or ``None`` for
        ``unsure``), ``answerability`` (the probability) and ``answer_state``."""
        return {"answerable": self.answerable, "answerability": self.probability, "answer_state": self.state}

    def as_dict(self) -> AnswerabilityRecord:
        """The trace record's ``answerability``: every field, in order (``missing`` as a list; ``adaptation`` only
        when the knowledge base's own thresholds were used or one was found stale)."""
        rec = {f.name: getattr(self, f.name) for f in fields(self)}
        if not self.adaptation:  # the shipped thresholds: the record as it always was
            del rec["adaptation"]
        return cast("AnswerabilityRecord", {**rec, "missing": list(self.missing)})

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

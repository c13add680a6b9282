"""Core value types. All frozen; change one with :func:`dataclasses.replace`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from admit._clean import citation_id
from admit.errors import ConfigError, RequestError

AnswerState = Literal["answered", "unsure", "not_answered"]
"""The verdict on an evidence set (:mod:`admit.answerability`): ``answered``, ``unsure`` (the check cannot tell:
it changes nothing admitted) or ``not_answered`` (the one that triggers the policy's ``on_no_answer``). A field
typed ``AnswerState | None`` is ``None`` only when nothing was assessed."""

ANSWER_STATES: tuple[AnswerState, ...] = ("not_answered", "unsure", "answered")
"""Every :data:`AnswerState`, from "no" to "yes"."""


def answerable_of(state: AnswerState | None) -> bool | None:
    """``answerable`` for a verdict: ``True`` only for ``answered``, ``False`` for ``not_answered``, ``None`` for
    ``unsure`` and for ``None`` (not assessed). The one place the state becomes the flag every face shows.

    Example:
        >>> [answerable_of(s) for s in ("answered", "unsure", "not_answered", None)]
        [True, None, False, None]

    Raises:
        ConfigError: ``state`` is not an :data:`AnswerState` (nor ``None``).
    """
    if state is None or state == "unsure":
        return None
    if state == "answered":
        return True
    if state == "not_answered":
        return False
    raise ConfigError(f"An answer state is one of {', '.join(ANSWER_STATES)} (or null), got {state!r}.")


DEFAULT_STRATEGY = "setwise"
"""The strategy a bare "prune" means on every face (``--prune``, ``prune=True``, the service's
``prune_strategy``, the adapters' ``strategy``): spelled here once, in the base layer, so the knowledge base
names it without importing :mod:`admit.prune` (which re-exports it from :mod:`admit.prune.catalogue`)."""

MAX_QUESTION_CHARS = 20_000
"""The longest question admit takes, in characters, on every surface (library, CLI, HTTP, MCP, adapters)."""


def check_question_length(question: str) -> None:
    """Refuse a question over :data:`MAX_QUESTION_CHARS` (a :class:`~admit.errors.RequestError` naming it)."""
    if len(question) > MAX_QUESTION_CHARS:
        raise RequestError(question_too_long(len(question)), field="question")


def question_too_long(n: int) -> str:
    """The one message for a question of ``n`` characters over :data:`MAX_QUESTION_CHARS`, on every surface."""
    return (
        f"question: {n:,} characters is over the {MAX_QUESTION_CHARS:,}-character limit of a question; ask a "
        "shorter one (put long context in the candidates or the instructions)"
    )


__all__ = [
    "ANSWER_STATES",
    "DEFAULT_STRATEGY",
    "MAX_QUESTION_CHARS",
    "Access",
    "AdmittedPassage",
    "AnswerState",
    "Budget",
    "BudgetRecord",
    "Chunk",
    "Decision",
    "DecisionRecord",
    "DecisionState",
    "Fallback",
    "FallbackRecord",
    "Message",
    "PackResult",
    "Principal",
    "Scored",
    "Usage",
    "UsageRecord",
    "check_question_length",
    "question_too_long",
]

DecisionState = Literal["admitted", "dropped"]
"""The final state of a candidate."""

DropReason = Literal[
    "acl", "invalid", "duplicate", "superseded", "source_cap", "pruned", "budget", "rerank_cut", "novelty", "no_answer"
]
"""Why a candidate was dropped."""


# -- the JSON forms of the values below (the parts of a trace record, :class:`admit.trace.TraceRecord`)


class BudgetRecord(TypedDict):
    """:meth:`Budget.as_dict`."""

    input_limit: int
    instruction_tokens: int
    conversation_tokens: int
    answer_reserve: int
    safety_margin: int
    evidence_ceiling: int | None
    tool_tokens: int
    evidence_budget: int
    tokenizer: str


class DecisionRecord(TypedDict):
    """:meth:`Decision.as_dict`: one candidate's fate."""

    id: str
    state: Literal["admitted", "dropped"]
    stage: str
    reason: str
    score: NotRequired[float]
    grade: NotRequired[int]
    detail: NotRequired[str]
    related_id: NotRequired[str]


class FallbackRecord(TypedDict):
    """:meth:`Fallback.as_dict`."""

    kind: str
    detail: str
    chunk_ids: list[str]
    facets: list[str]


class UsageRecord(TypedDict):
    """:meth:`Usage.as_dict`: an LLM pruner's cost."""

    prompt_tokens: int
    completion_tokens: int
    calls: int
    cost_usd: float
    latency_s: float
    cached: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Access:
    """Who may read a chunk."""

    tenant: str
    """The tenant that owns the chunk. Chunks never cross tenants."""
    groups: tuple[str, ...] = ()
    """Groups allowed to read it; empty means every principal of the tenant."""
    label: str = ""
    """A human-readable access label shown in the evidence envelope (e.g. ``internal``)."""

    def display(self) -> str:
        """Return the label shown in envelopes."""
        if self.label:
            return self.label
        return f"{self.tenant}:{','.join(self.groups)}" if self.groups else f"{self.tenant}:all"


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """The identity a request is made for."""

    tenant: str
    """The principal's tenant."""
    groups: tuple[str, ...] = ()
    """The groups the principal belongs to."""

    def can_read(self, access: Access | None) -> bool:
        """Return whether this principal may read a chunk with ``access``. No label means no (fail closed)."""
        if access is None or not access.tenant or not self.tenant:
            return False
        if access.tenant != self.tenant:
            return False
        return not access.groups or bool(set(access.groups) & set(self.groups))


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk:
    """A retrieved passage, as a retriever hands it to admit."""

    id: str
    """Stable chunk id, used for citation (e.g. ``docs-18#4``)."""
    source_id: str
    """Identity of the document the chunk comes from."""
    text: str
    """The passage text."""
    title: str = ""
    """Document or section title."""
    version: str | None = None
    """Document version, if known."""
    updated_at: datetime | None = None
    """Modification or fetch time, if known."""
    access: Access | None = None
    """Who may read it. ``None`` means unreadable (fail closed)."""
    authority: float | None = None
    """Authority 0..1 from the caller's source registry (never an LLM's opinion)."""
    score: float | None = None
    """The retriever's or reranker's score, if any."""
    language: str | None = None
    """ISO language code, if known."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free metadata carried through to the admitted passage (adapters round-trip it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Scored:
    """A chunk with its rerank score and rank (0 = best)."""

    chunk: Chunk
    """The chunk."""
    score: float
    """Relevance score from the reranker, higher is better."""
    rank: int
    """Position after reranking, 0-based."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One chat message of the conversation."""

    role: str
    """``system``, ``user``, ``assistant`` or ``tool``."""
    content: str
    """Message text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """The token ledger of one request, counted with the target model's tokenizer."""

    input_limit: int
    """The model's input limit (or the class's evidence ceiling applied to it)."""
    instruction_tokens: int
    """Tokens of the system instructions, chat formatting included."""
    conversation_tokens: int
    """Tokens of the conversation and the current question, chat formatting included."""
    answer_reserve: int
    """Tokens reserved for the answer, from the query class's answer contract."""
    safety_margin: int
    """Tokens held back for tokenizer and formatting drift."""
    evidence_ceiling: int | None = None
    """A class ceiling on evidence tokens, below what the model could take."""
    tokenizer: str = ""
    """Name of the tokenizer that counted."""
    tool_tokens: int = 0
    """Tokens of the tool-results block (its own message; see :mod:`admit.tools`)."""

    @property
    def evidence_budget(self) -> int:
        """``input_limit - instructions - conversation - tool results - answer_reserve - safety_margin``, capped
        by the ceiling."""
        room = (
            self.input_limit
            - self.instruction_tokens
            - self.conversation_tokens
            - self.tool_tokens
            - self.answer_reserve
            - self.safety_margin
        )
        if self.evidence_ceiling is not None:
            room = min(room, self.evidence_ceiling)
        return max(room, 0)

    def as_dict(self) -> BudgetRecord:
        """Return a JSON-ready dict."""
        return {
            "input_limit": self.input_limit,
            "instruction_tokens": self.instruction_tokens,
            "conversation_tokens": self.conversation_tokens,
            "answer_reserve": self.answer_reserve,
            "safety_margin": self.safety_margin,
            "evidence_ceiling": self.evidence_ceiling,
            "tool_tokens": self.tool_tokens,
            "evidence_budget": self.evidence_budget,
            "tokenizer": self.tokenizer,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What happened to one candidate. Every candidate gets exactly one final decision."""

    chunk_id: str
    """The candidate's id."""
    state: DecisionState
    """``admitted`` or ``dropped``."""
    stage: str
    """The stage that decided: ``authorize``, ``validate``, ``dedupe``, ``prune``, ``pack``."""
    reason: str
    """Why: ``admitted`` or a drop reason (acl, duplicate, superseded, source_cap, pruned, budget, ...)."""
    score: float | None = None
    """The rerank score, if the candidate got that far."""
    grade: int | None = None
    """The pruner's rubric grade 1..5, if graded."""
    detail: str = ""
    """Free text: ``duplicate_of``, ``superseded_by``, the pruner's reason, an excerpt note."""
    related_id: str | None = None
    """The chunk this one lost to (``duplicate_of`` / ``superseded_by``)."""

    @classmethod
    def drop(
        cls,
        item: Scored,
        *,
        stage: str,
        reason: str,
        detail: str = "",
        grade: int | None = None,
        related_id: str | None = None,
    ) -> Decision:
        """A ranked candidate's drop: its id and rerank score, the stage, the reason and the detail."""
        return cls(
            chunk_id=item.chunk.id,
            state="dropped",
            stage=stage,
            reason=reason,
            score=item.score,
            grade=grade,
            detail=detail,
            related_id=related_id,
        )

    def as_dict(self) -> DecisionRecord:
        """Return a JSON-ready dict."""
        d: DecisionRecord = {"id": self.chunk_id, "state": self.state, "stage": self.stage, "reason": self.reason}
        if self.score is not None and math.isfinite(self.score):
            d["score"] = round(self.score, 6)
        if self.grade is not None:
            d["grade"] = self.grade
        if self.detail:
            d["detail"] = self.detail
        if self.related_id is not None:
            d["related_id"] = self.related_id
        return d


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmittedPassage:
    """A passage admitted to the prompt, as rendered."""

    chunk: Chunk
    """The original chunk."""
    text: str
    """The text that was rendered: the chunk's text, or an anchored excerpt of it."""
    tokens: int
    """Tokens of the rendered envelope."""
    excerpt: bool = False
    """Whether ``text`` is an anchored excerpt (elisions marked) rather than the whole chunk."""
    score: float = 0.0
    """Rerank score."""
    grade: int | None = None
    """Pruner grade, if any."""
    why: str = ""
    """Why it was admitted, for humans."""

    def as_dict(self, *, include_text: bool = True) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        c = self.chunk
        d: dict[str, Any] = {
            "id": c.id,
            "source_id": c.source_id,
            "title": c.title,
            "version": c.version,
            "updated_at": c.updated_at.isoformat() if c.updated_at else None,
            "access": c.access.display() if c.access else None,
            "authority": c.authority,
            "score": round(self.score, 6) if math.isfinite(self.score) else None,
            "grade": self.grade,
            "tokens": self.tokens,
            "excerpt": self.excerpt,
            "why": self.why,
            "cite_id": citation_id(c.id),
        }
        if include_text:
            d["text"] = self.text
        if c.metadata:
            d["metadata"] = dict(c.metadata)
        return d


@dataclass(frozen=True, slots=True, kw_only=True)
class Fallback:
    """An explicit fallback the packer applied instead of silently dropping evidence."""

    kind: Literal["anchored_excerpt", "scope_note", "ask_to_narrow", "second_retrieval", "no_answer"]
    """Which fallback (``no_answer``: the admitted evidence does not answer the question; ``detail`` says why)."""
    detail: str
    """What it did, for humans and the trace."""
    chunk_ids: tuple[str, ...] = ()
    """Chunks it concerns."""
    facets: tuple[str, ...] = ()
    """Question facets it concerns (for ``second_retrieval``: the uncovered ones)."""

    def as_dict(self) -> FallbackRecord:
        """Return a JSON-ready dict."""
        return {
            "kind": self.kind,
            "detail": self.detail,
            "chunk_ids": list(self.chunk_ids),
            "facets": list(self.facets),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Tokens, calls and cost of a backend (the LLM pruner)."""

    prompt_tokens: int = 0
    """Prompt tokens sent."""
    completion_tokens: int = 0
    """Completion tokens received."""
    calls: int = 0
    """Number of calls."""
    cost_usd: float = 0.0
    """Cost from the configured price table."""
    latency_s: float = 0.0
    """Wall time spent in calls."""
    cached: bool = False
    """Whether the answer came from the cache."""

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages."""
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + other.calls,
            cost_usd=self.cost_usd + other.cost_usd,
            latency_s=self.latency_s + other.latency_s,
            cached=self.cached and other.cached,
        )

    def as_dict(self) -> UsageRecord:
        """Return a JSON-ready dict."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
            "cost_usd": round(self.cost_usd, 8),
            "latency_s": round(self.latency_s, 4),
            "cached": self.cached,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class PackResult:
    """What admit returns for one request."""

    admitted: tuple[AdmittedPassage, ...]
    """The admitted passages, in prompt order."""
    prompt: str
    """The rendered evidence block (untrusted-evidence envelopes)."""
    budget: Budget
    """The token ledger."""
    decisions: tuple[Decision, ...]
    """One decision per candidate."""
    fallbacks: tuple[Fallback, ...]
    """Fallbacks applied."""
    trace: Mapping[str, Any]
    """The JSON trace record (see :mod:`admit.trace`)."""
    tools: str = ""
    """The rendered tool-results block (untrusted tool data, its own envelope kind): send it as its own message,
    apart from the instructions and the evidence block; ``""`` without tool outputs."""
    answerability: float | None = None
    """The calibrated probability behind :attr:`answer_state` (``None`` when it was not assessed)."""
    answer_state: AnswerState | None = None
    """``answered``, ``unsure`` or ``not_answered`` (:data:`AnswerState`); only ``not_answered`` triggers the
    policy's ``on_no_answer`` ("unsure" changes nothing admitted); ``None``: not assessed. The pipeline always
    assesses."""

    @property
    def answerable(self) -> bool | None:
        """Whether the admitted evidence answers the question, read from :attr:`answer_state`
        (:func:`answerable_of`): ``True`` for ``answered``, ``None`` for ``unsure`` (and when not assessed),
        ``False`` for ``not_answered`` (with a ``no_answer`` fallback saying why). Test :attr:`answer_state` for
        "not answered": ``not None`` is true."""
        return answerable_of(self.answer_state)

    @property
    def admitted_ids(self) -> list[str]:
        """Ids of the admitted chunks, in prompt order."""
        return [p.chunk.id for p in self.admitted]

    def as_dict(self) -> dict[str, Any]:
        """Return the JSON form printed by ``admit pack`` (and ``admit search --json``, ``POST /v1/pack``).

        The same names on every face: ``admitted``, ``citations`` (the admitted ids, in prompt order),
        ``answerable``, ``answerability`` and ``answer_state``, ``decisions`` (one per candidate), ``budget``,
        ``fallbacks``, ``trace``.
        """
        return {
            "admitted": [p.as_dict() for p in self.admitted],
            "citations": self.admitted_ids,
            "answerable": self.answerable,
            "answerability": self.answerability,
            "answer_state": self.answer_state,
            "prompt": self.prompt,
            "budget": self.budget.as_dict(),
            "decisions": [d.as_dict() for d in self.decisions],
            "fallbacks": [f.as_dict() for f in self.fallbacks],
            "tools": self.tools,
            "trace": dict(self.trace),
        }

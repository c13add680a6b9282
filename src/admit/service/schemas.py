"""Request and response bodies of the HTTP API (pydantic, at the edge).

The pack body is :class:`admit.schema.PackRequestModel` without ``principal``: the principal always comes
from the API key, never from the body (a body that names one is refused with 422).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, create_model, field_validator
from pydantic_core import PydanticCustomError

from admit.pipeline import PackRequest, PruneRun
from admit.schema import PackRequestModel, PrincipalModel, PruneCandidate, ToolOutputModel
from admit.service.core import PruneQuery, SearchQuery
from admit.types import MAX_QUESTION_CHARS, AnswerState, Principal

__all__ = [
    "ErrorBody",
    "PackBody",
    "PruneBody",
    "PruneCandidate",
    "PruneDecisionOut",
    "PruneResponse",
    "SearchBody",
    "SearchResponse",
    "pack_request_from_body",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# The pack body: every field of PackRequestModel except ``principal``, with the same constraints.
PackBody: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "PackBody",
    __config__=ConfigDict(extra="forbid"),
    __doc__="The /v1/pack request: the `admit pack` request without `principal` (it comes from the API key).",
    **{name: (info.annotation, info) for name, info in PackRequestModel.model_fields.items() if name != "principal"},
)


def pack_request_from_body(body: BaseModel, principal: Principal) -> PackRequest:
    """Build the library request from a validated :data:`PackBody` and the key's principal."""
    fields = {name: getattr(body, name) for name in type(body).model_fields}
    model = PackRequestModel.model_construct(
        principal=PrincipalModel.model_construct(tenant=principal.tenant, groups=list(principal.groups)), **fields
    )
    return model.to_request()


class SearchBody(_Strict):
    """The /v1/search request (``query`` is still read as a deprecated spelling of ``question``)."""

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        validation_alias=AliasChoices("question", "query"),
        description="The question (`query`: deprecated spelling, still accepted).",
    )
    top_k: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="Chunks retrieved from the knowledge base (absent: the routed policy's `candidate_count`, 30 in "
        "the shipped policy, as on every face).",
    )
    prune: bool | None = Field(
        default=None,
        description="true: prune (the policy's strategy, else the service's prune_strategy); false: never; "
        "absent: the policy's `[defaults.prune] strategy` (the shipped policy prunes nothing).",
    )
    policy: str | None = Field(
        default=None, max_length=100, description="Force a query class of the policy (default: routed)."
    )
    model: str = Field(default="gpt-4o", min_length=1, max_length=200, description="Target model (tokenizer).")
    input_limit: int = Field(default=16_000, gt=0, le=10_000_000, description="The target model's input limit.")
    tool_outputs: list[ToolOutputModel] = Field(
        default_factory=list,
        max_length=100,
        description="Tool results packed beside the evidence, in their own untrusted block (`tools`), counted in "
        "the budget (the `admit pack` request's `tool_outputs`).",
    )

    @field_validator("prune", mode="before")
    @classmethod
    def _prune_is_a_switch(cls, v: Any) -> Any:
        """``prune`` is a switch here; a strategy name gets the way to choose one, not "a valid boolean"."""
        if isinstance(v, str) and v.lower() not in {"true", "false"}:
            raise PydanticCustomError(
                "prune_switch",
                "prune is true or false on /v1/search (got {value!r}); the strategy is the policy's "
                "[defaults.prune] strategy, else the service's prune_strategy; /v1/prune takes a `strategy`",
                {"value": v},
            )
        return v

    def query(self) -> SearchQuery:
        """The library form of this body."""
        return SearchQuery(
            question=self.question,
            top_k=self.top_k,
            prune=self.prune,
            query_class=self.policy,
            model=self.model,
            input_limit=self.input_limit,
            tool_outputs=[t.to_output(f"tool_outputs[{i}]") for i, t in enumerate(self.tool_outputs)],
        )


class PassageOut(BaseModel):
    """An admitted passage, with its id for citation."""

    model_config = ConfigDict(extra="allow")

    id: str
    source_id: str
    title: str = ""
    text: str = ""
    tokens: int = 0
    score: float | None = None
    grade: int | None = None
    excerpt: bool = False


class SearchResponse(BaseModel):
    """Admitted passages in evidence envelopes, their ids for citation, and the trace summary."""

    question: str
    query: str = Field(description="Deprecated: the same as `question`.")
    admitted: list[PassageOut]
    citations: list[str]
    answerable: bool | None = Field(
        default=None,
        description="Whether the admitted evidence answers the question: true (`answered`), null (`unsure`: the "
        "check cannot tell) or false (`not_answered`: see the no_answer fallback).",
    )
    answerability: float | None = Field(default=None, description="The calibrated probability behind `answerable`.")
    answer_state: AnswerState | None = Field(
        default=None,
        description="`answered`, `unsure` or `not_answered` (`answerable` true, null, false; null: not assessed); "
        "only `not_answered` triggers the policy's on_no_answer.",
    )
    prompt: str
    budget: dict[str, Any] = Field(description="The evidence budget: input limit, reserves, what is left for evidence.")
    tools: str = Field(default="", description="The tool-results block (its own message); empty without tools.")
    decisions: list[dict[str, Any]] = Field(description="One decision per retrieved candidate, as /v1/pack gives.")
    fallbacks: list[dict[str, Any]]
    trace: dict[str, Any]


class PruneBody(_Strict):
    """The /v1/prune request."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    candidates: list[PruneCandidate] = Field(max_length=100_000)
    strategy: str | None = Field(default=None, max_length=100, description="Default: the service's prune_strategy.")
    threshold: int | None = Field(default=None, ge=1, le=5, description="Keep grades at or above this (1..5).")
    keep_top_k: int | None = Field(default=None, ge=0, le=10_000, description="The top-k reranked always stay.")
    params: dict[str, Any] = Field(default_factory=dict, description="Strategy parameters (e.g. n for top_n).")

    def query(self) -> PruneQuery:
        """The library form of this body: the chunks, and ``threshold``/``keep_top_k``/``params`` as overrides."""
        overrides: dict[str, Any] = dict(self.params)
        if self.threshold is not None:
            overrides["threshold"] = self.threshold
        if self.keep_top_k is not None:
            overrides["keep_top_k"] = self.keep_top_k
        return PruneQuery(
            question=self.question,
            candidates=[c.to_chunk() for c in self.candidates],
            strategy=self.strategy,
            overrides=overrides,
        )


class PruneDecisionOut(BaseModel):
    """One candidate's pruning decision."""

    id: str
    kept: bool
    grade: int
    reason: str
    score: float | None
    rank: int


class PruneResponse(BaseModel):
    """The /v1/prune answer: one decision per candidate, in input order."""

    strategy: str
    kept_ids: list[str]
    dropped_ids: list[str] = Field(default_factory=list, description="The ids not kept, in input order.")
    decisions: list[PruneDecisionOut]
    fallback: str | None
    error: str | None
    usage: dict[str, Any]
    notes: list[str] = Field(default_factory=list, description="The pruner's notes.")
    trace: dict[str, Any]
    answerable: bool | None = Field(
        default=None,
        description="Whether the kept chunks answer the question: true (`answered`), null (`unsure`) or false "
        "(`not_answered`).",
    )
    answerability: float | None = Field(default=None, description="The calibrated probability behind `answerable`.")
    answer_state: AnswerState | None = Field(
        default=None,
        description="`answered`, `unsure` or `not_answered` (`answerable` true, null, false; null: not assessed).",
    )

    @classmethod
    def from_run(cls, run: PruneRun, trace: Mapping[str, Any], question: str = "") -> PruneResponse:
        """The answer of a prune run (:meth:`~admit.decide.PruneRun.as_dict`, the one prune answer);
        ``answerable`` from the kept chunks when the ``question`` is given."""
        return cls.model_validate({**run.as_dict(question or None), "trace": dict(trace)})


class ErrorBody(BaseModel):
    """Every error answer."""

    error: str
    """The service's error kind: ``invalid_request``, ``forbidden``, ``payload_too_large``, ``timeout`` ..."""
    kind: str = "AdmitError"
    """The library's error class (``RequestError``, ``ConfigError``, ``AuthorizationError`` ...): the same
    error the library raises and the CLI reports."""
    detail: str
    """One line: the same text the CLI prints after ``error:`` and an MCP tool error carries."""
    field: str | None = None

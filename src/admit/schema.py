"""The JSON request schema of ``admit pack`` (and ``POST /v1/pack``), as pydantic models at the edge.

``admit schema`` prints the JSON Schema. :func:`parse_pack_request` turns JSON into a
:class:`~admit.pipeline.PackRequest`, or raises :class:`~admit.errors.RequestError` naming the field.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from admit.errors import RequestError
from admit.pipeline import PackRequest
from admit.types import Access, Chunk, Message, Principal

__all__ = [
    "AccessModel",
    "CandidateModel",
    "PackRequestModel",
    "PrincipalModel",
    "PruneCandidate",
    "parse_pack_request",
]

MAX_TEXT_CHARS = 2_000_000


def finite_score(v: float | None) -> float | None:
    """Validate a score: a finite number or nothing (NaN and infinities are refused)."""
    if v is not None and not math.isfinite(v):
        raise ValueError("score must be a finite number")
    return v


FiniteScore = Annotated[float | None, AfterValidator(finite_score)]
"""A score field that refuses NaN and infinities."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class PrincipalModel(_Strict):
    """Who asks."""

    tenant: str = Field(min_length=1, max_length=200)
    groups: list[str] = Field(default_factory=list, max_length=1000)


class AccessModel(_Strict):
    """Who may read a candidate."""

    tenant: str = Field(min_length=1, max_length=200)
    groups: list[str] = Field(default_factory=list, max_length=1000)
    label: str = Field(default="", max_length=200)


class PruneCandidate(_Strict):
    """A bring-your-own chunk to prune: the one candidate model of ``POST /v1/prune``, the MCP ``prune_context``
    tool and ``admit prune`` (a pack candidate, :class:`CandidateModel`, adds what admission needs: access,
    version, dates, authority)."""

    id: str = Field(min_length=1, max_length=500)
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    title: str = Field(default="", max_length=2000)
    source_id: str | None = Field(default=None, max_length=500, description="Default: the id.")
    score: FiniteScore = Field(default=None, description="Retriever score; missing scores are reranked (BM25).")
    metadata: dict[str, Any] = Field(default_factory=dict)

    def to_chunk(self) -> Chunk:
        """The library chunk."""
        return Chunk(
            id=self.id,
            source_id=self.source_id or self.id,
            text=self.text,
            title=self.title,
            score=self.score,
            metadata=dict(self.metadata),
        )


class CandidateModel(PruneCandidate):
    """One candidate chunk of a pack request: the bring-your-own candidate (:class:`PruneCandidate`) with what
    admission needs besides (who may read it, its version and date, the source's authority, its language)."""

    model_config = ConfigDict(extra="allow")

    source_id: str = Field(min_length=1, max_length=500)
    text: str = Field(max_length=MAX_TEXT_CHARS)
    version: str | None = Field(default=None, max_length=200)
    updated_at: datetime | None = None
    access: AccessModel | None = None
    authority: float | None = Field(default=None, ge=0.0, le=1.0)
    language: str | None = Field(default=None, max_length=20)

    def to_chunk(self) -> Chunk:
        """The library chunk (fields a caller added beyond the schema go into its metadata)."""
        a = self.access
        return replace(
            super().to_chunk(),
            version=self.version,
            updated_at=self.updated_at,
            access=Access(tenant=a.tenant, groups=tuple(a.groups), label=a.label) if a else None,
            authority=self.authority,
            language=self.language,
            metadata={**self.metadata, **(self.model_extra or {})},
        )


class MessageModel(_Strict):
    """One conversation message."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = Field(max_length=MAX_TEXT_CHARS)


class PackRequestModel(_Strict):
    """The ``admit pack`` request."""

    question: str = Field(min_length=1, max_length=20_000)
    principal: PrincipalModel
    model: str = Field(default="gpt-4o", min_length=1, max_length=1000)
    input_limit: int = Field(default=16_000, gt=0, le=10_000_000)
    instructions: str = Field(default="", max_length=MAX_TEXT_CHARS)
    conversation: list[MessageModel] = Field(default_factory=list, max_length=10_000)
    query_class: str | None = Field(default=None, max_length=100)
    prune: str | None = Field(default=None, max_length=100)
    prune_params: dict[str, Any] = Field(default_factory=dict)
    request_id: str | None = Field(default=None, max_length=200)
    candidates: list[CandidateModel] = Field(max_length=10_000)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("question must not be blank")
        return v

    def to_request(self) -> PackRequest:
        """Convert to the library's :class:`PackRequest`."""
        seen: set[str] = set()
        for i, c in enumerate(self.candidates):
            if c.id in seen:
                raise RequestError(f"candidates[{i}].id: duplicate candidate id {c.id!r}", field=f"candidates[{i}].id")
            seen.add(c.id)
        chunks = [c.to_chunk() for c in self.candidates]
        return PackRequest(
            question=self.question,
            principal=Principal(tenant=self.principal.tenant, groups=tuple(self.principal.groups)),
            candidates=chunks,
            model=self.model,
            input_limit=self.input_limit,
            instructions=self.instructions,
            conversation=[Message(role=m.role, content=m.content) for m in self.conversation],
            query_class=self.query_class,
            prune=self.prune,
            prune_params=self.prune_params,
            request_id=self.request_id,
        )


def _loc(err: Any) -> str:
    out = ""
    for part in err.get("loc", ()):
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<request>"


def parse_pack_request(data: Any) -> PackRequest:
    """Validate JSON data and return a :class:`PackRequest`; a bad field raises :class:`RequestError`."""
    if not isinstance(data, dict):
        raise RequestError(f"The request must be a JSON object, got {type(data).__name__}.", field="<request>")
    try:
        model = PackRequestModel.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _loc(first)
        more = f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""
        raise RequestError(f"{where}: {first.get('msg', 'invalid')}{more}", field=where) from exc
    return model.to_request()

"""The JSON request schema of ``admit pack`` (and ``POST /v1/pack``), as pydantic models at the edge.

``admit schema`` prints the JSON Schema. :func:`parse_pack_request` turns JSON into a
:class:`~admit.pipeline.PackRequest`, or raises :class:`~admit.errors.RequestError` naming the field.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from admit.errors import RequestError
from admit.pipeline import PackRequest
from admit.tools import ToolOutput
from admit.types import MAX_QUESTION_CHARS, Access, Chunk, Message, Principal, question_too_long

__all__ = [
    "AccessModel",
    "CandidateModel",
    "PackRequestModel",
    "PrincipalModel",
    "PruneCandidate",
    "ToolOutputModel",
    "describe_validation_errors",
    "field_path",
    "model_at",
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

    source_id: str = Field(min_length=1, max_length=500)
    text: str = Field(max_length=MAX_TEXT_CHARS)
    version: str | None = Field(default=None, max_length=200)
    updated_at: datetime | None = None
    access: AccessModel | None = None
    authority: float | None = Field(default=None, ge=0.0, le=1.0)
    language: str | None = Field(default=None, max_length=20)

    def to_chunk(self) -> Chunk:
        """The library chunk (a caller's own fields go in ``metadata``; an unknown field is refused)."""
        a = self.access
        return replace(
            super().to_chunk(),
            version=self.version,
            updated_at=self.updated_at,
            access=Access(tenant=a.tenant, groups=tuple(a.groups), label=a.label) if a else None,
            authority=self.authority,
            language=self.language,
            metadata=dict(self.metadata),
        )


class MessageModel(_Strict):
    """One conversation message."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = Field(max_length=MAX_TEXT_CHARS)


class ToolOutputModel(_Strict):
    """One tool's result, apart from the evidence (see :mod:`admit.tools`)."""

    id: str = Field(min_length=1, max_length=500, description="Its id in the prompt, unique in the request.")
    tool: str = Field(min_length=1, max_length=200, description="The tool's name.")
    rows: list[Any] = Field(max_length=100_000, description="The result's rows (objects fitting `schema`).")
    row_schema: dict[str, Any] = Field(
        alias="schema",
        description='The tool\'s declared response schema: {"type": "object", "properties": {...}, "required": [...]}.',
    )
    max_rows: int = Field(default=50, ge=1, le=10_000, description="Most rows shown; the rest by continuation.")
    max_bytes: int = Field(default=16_000, ge=1, le=2_000_000, description="Most serialized bytes of rows shown.")
    page_token: str | None = Field(default=None, max_length=200, description="Show the rows after this token.")

    def to_output(self, where: str = "tool_outputs") -> ToolOutput:
        """The library's :class:`~admit.tools.ToolOutput` (a bad schema names its field)."""
        try:
            return ToolOutput(
                id=self.id,
                tool=self.tool,
                rows=self.rows,
                schema=self.row_schema,
                max_rows=self.max_rows,
                max_bytes=self.max_bytes,
                page_token=self.page_token,
            )
        except RequestError as exc:
            field = f"{where}.{exc.field}" if exc.field else where
            raise RequestError(f"{field}: {exc}", field=field) from None


class PackRequestModel(_Strict):
    """The ``admit pack`` request."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    principal: PrincipalModel
    model: str = Field(default="gpt-4o", min_length=1, max_length=1000)
    input_limit: int = Field(default=16_000, gt=0, le=10_000_000)
    instructions: str = Field(default="", max_length=MAX_TEXT_CHARS)
    conversation: list[MessageModel] = Field(default_factory=list, max_length=10_000)
    query_class: str | None = Field(default=None, max_length=100)
    prune: str | None = Field(default=None, max_length=100)
    prune_params: dict[str, Any] = Field(default_factory=dict)
    request_id: str | None = Field(
        default=None, max_length=200, description="Your id for this request; default: a fresh time-ordered UUIDv7."
    )
    candidates: list[CandidateModel] = Field(max_length=10_000)
    tool_outputs: list[ToolOutputModel] = Field(
        default_factory=list,
        max_length=100,
        description="Tool results, apart from the evidence: schema-checked, redacted, capped, counted in the budget "
        "and rendered in their own untrusted block (`tools` in the result).",
    )

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
            tool_outputs=[t.to_output(f"tool_outputs[{i}]") for i, t in enumerate(self.tool_outputs)],
        )


def field_path(loc: Any, *, skip: tuple[str, ...] = ()) -> str | None:
    """The one spelling of a field's path on every face: ``candidates[1].id`` (``None`` for the whole body)."""
    out = ""
    for part in loc:
        if isinstance(part, str) and part in skip and not out:
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or None


def describe_validation_errors(
    errors: Any, model: type[BaseModel] | None = None, *, skip: tuple[str, ...] = (), noun: str = "request"
) -> tuple[str, str | None]:
    """One message and the field it names, for pydantic errors: the real mistake first.

    An unknown field is named before the missing one it probably replaces (``querry`` before ``question``),
    with the fields ``model`` takes; a body that is not JSON names no field. ``admit pack``, ``/v1/*`` and MCP
    all word their errors with it.
    """
    errors = sorted(errors, key=lambda e: e.get("type") != "extra_forbidden")  # stable: keeps pydantic's order
    if not errors:
        return "invalid request", None
    first = errors[0]
    if first.get("type") == "json_invalid":
        why = (first.get("ctx") or {}).get("error") or first.get("msg", "invalid JSON")
        return f"the body is not valid JSON: {why}", None
    loc = tuple(first.get("loc", ()))
    field = field_path(loc, skip=skip)
    named = [p for p in loc if not (isinstance(p, str) and p in skip)]
    if first.get("type") == "extra_forbidden":
        if named == ["principal"] and model is not None and "principal" not in model.model_fields:
            return "principal: not allowed in the body; the principal comes from the API key", "principal"
        msg = f"{field}: unknown field"
        owner = model_at(model, named[:-1]) if model is not None else None
        if owner is not None:
            names = _field_names(owner)
            close = difflib.get_close_matches(str(named[-1]), names, n=1)
            where = noun if len(named) == 1 else field_path(named[:-1])
            msg += (f" (did you mean {close[0]!r}?)" if close else "") + f"; the {where} takes {', '.join(names)}"
            msg += " (your own fields go in metadata)" if "metadata" in owner.model_fields else ""
    elif first.get("type") == "string_too_long" and field == "question" and isinstance(first.get("input"), str):
        msg = question_too_long(len(first["input"]))  # the one question limit, worded as on every surface
    else:
        msg = f"{field or '<' + noun + '>'}: {first.get('msg', 'invalid')}"
    if len(errors) > 1:
        nxt = errors[1]
        nloc = field_path(nxt.get("loc", ()), skip=skip) or f"<{noun}>"
        more = f" and {len(errors) - 2} more" if len(errors) > 2 else ""
        why = "unknown field" if nxt.get("type") == "extra_forbidden" else nxt.get("msg", "invalid")
        msg += f" (also {nloc}: {why}{more})"
    return msg, field


def model_at(model: type[BaseModel], path: Sequence[Any]) -> type[BaseModel] | None:
    """The model of the object at ``path`` inside ``model`` (``candidates``, ``0`` -> the candidate model), or
    ``None`` when the path leaves the models (a dict, a list of plain values)."""
    current: Any = model
    for part in path:
        if get_origin(current) is dict:  # a table of named entries: the value type
            current = get_args(current)[1]
        elif isinstance(part, int):
            args = [a for a in get_args(current) if a is not type(None)]
            current = args[0] if args else None
        elif isinstance(current, type) and issubclass(current, BaseModel) and part in current.model_fields:
            current = current.model_fields[part].annotation
            args = [a for a in get_args(current) if a is not type(None)]
            if get_origin(current) is not list and len(args) == 1:
                current = args[0]  # X | None
        else:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _field_names(model: type[BaseModel]) -> list[str]:
    out = []
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        choices = getattr(alias, "choices", None)
        out.append(str(choices[0]) if choices else name)
    return out


def parse_pack_request(data: Any) -> PackRequest:
    """Validate JSON data and return a :class:`PackRequest`; a bad field raises :class:`RequestError`."""
    if not isinstance(data, dict):
        raise RequestError(f"The request must be a JSON object, got {type(data).__name__}.", field="<request>")
    try:
        model = PackRequestModel.model_validate(data)
    except ValidationError as exc:
        msg, where = describe_validation_errors(exc.errors(), PackRequestModel)
        raise RequestError(msg, field=where or "<request>") from exc
    return model.to_request()

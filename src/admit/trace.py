"""Trace: one typed record per request (:class:`TraceRecord`), sinks, and optional OpenTelemetry spans.

The record (see :func:`build_record`) holds the query class and its cue, the budget, candidate, reranked
and accepted ids, evidence tokens, dropped counts by reason, a decision for every candidate, fallbacks,
per-stage latency and pruner cost. The question and the prompt are recorded only by a pipeline built with
``trace_content=True`` (the faces: ``ADMIT_TRACE_CONTENT=true``, ``--trace-content``, ``[service] trace_content``).
Every key a record may carry is named in :class:`TraceRecord` (the extension keys of the knowledge base
and the service included); ``schemas/trace.schema.json`` is generated from it (:func:`trace_json_schema`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NotRequired, Protocol, Required, runtime_checkable

from typing_extensions import TypedDict

from admit._clean import escape_line_breaks
from admit.types import (
    AnswerState,
    Budget,
    BudgetRecord,
    Decision,
    DecisionRecord,
    Fallback,
    FallbackRecord,
    UsageRecord,
)

__all__ = [
    "AnswerRecord",
    "BudgetRecord",
    "DecisionRecord",
    "FallbackRecord",
    "JsonlSink",
    "NullTracer",
    "OTelTracer",
    "PrunerRecord",
    "RetrievalRecord",
    "RouteRecord",
    "ShadowRecord",
    "ToolRecord",
    "TraceRecord",
    "TraceSink",
    "Tracer",
    "UsageRecord",
    "build_prune_record",
    "build_record",
    "latency_record",
    "new_request_id",
    "trace_json_schema",
]


_ID_LOCK = threading.Lock()
_last_id_ms = [0, 0]  # the last id's millisecond and sequence number: ids of one millisecond stay ordered


def new_request_id() -> str:
    """A fresh, time-ordered request id: a UUIDv7 (RFC 9562) string.

    48 bits of Unix milliseconds, then a 12-bit sequence (ids made in one millisecond by this process sort in
    the order they were made), then 62 random bits. Unique per request, unlike the request's hash (the
    trace's ``request_hash``), which identical requests share.
    """
    with _ID_LOCK:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_id_ms[0]:
            ms, seq = _last_id_ms[0], _last_id_ms[1] + 1
            if seq > 0xFFF:
                ms, seq = ms + 1, 0
        else:
            seq = int.from_bytes(os.urandom(2), "big") & 0x3FF  # room left for the ids after it in this ms
        _last_id_ms[:] = [ms, seq]
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62 | rand
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class RouteRecord(TypedDict):
    """The router's decision and the policy set the request got."""

    query_class: str
    cue: str
    pattern: str
    overridden: bool
    policy_version: str
    rollout: Literal["current", "baseline"]
    kill_switch: NotRequired[bool]


class AnswerRecord(TypedDict):
    """The verdict: whether the admitted evidence answers the question (:mod:`admit.answerability`), the trace's
    ``answer``. The faces show the same verdict as ``answer_state``, ``answerable`` and ``answerability`` (the
    probability alone)."""

    state: AnswerState
    """``answered``, ``unsure`` or ``not_answered``."""
    answerable: bool | None
    """Read from ``state`` (:func:`admit.types.answerable_of`): ``True`` for ``answered``, ``None`` for ``unsure``,
    ``False`` for ``not_answered``."""
    probability: float
    """The calibrated probability behind the state (the faces' ``answerability``)."""
    model: str
    reason: str
    missing: list[str]
    """The question's terms no admitted passage holds."""
    adaptation: NotRequired[str]
    """The knowledge base's own adaptation whose thresholds decided (``admit adapt``), ``""`` for the shipped ones."""


class PrunerRecord(TypedDict):
    """:meth:`admit.prune.base.PruneOutcome.as_dict`."""

    strategy: str
    usage: UsageRecord
    fallback: str | None
    error: str | None
    notes: list[str]


class ToolRecord(TypedDict):
    """:meth:`admit.tools.ToolReport.as_dict`: what happened to one tool output (counts, never row content)."""

    id: str
    tool: str
    rows_total: int
    rows_rejected: int
    rows_kept: int
    fields_dropped: int
    bytes_total: int
    bytes_kept: int
    bytes_cut: int
    truncated_by: str | None
    continuation: str | None
    redactions: dict[str, int]
    rejected: list[str]
    tokens: int
    flags: NotRequired[list[str]]
    """Injection flag kinds found in the rows shown (kinds, never text)."""


class RetrievalRecord(TypedDict):
    """What the knowledge base retrieved (``KnowledgeBase.search``)."""

    store: str
    k: int
    returned: int
    lexical: int
    vector: int
    both: int
    filters: dict[str, Any]
    latency_ms: dict[str, float]
    absent: NotRequired[list[str]]
    """The store features the question needed and the store lacks (``release_records``: the question names a
    release, and the store has no release-candidate query, so no section of that release was added)."""


class TraceRecord(TypedDict, total=False):
    """One request's trace record: every key a record may carry.

    ``latency_ms`` has one shape everywhere: milliseconds by stage name, ``total`` for the whole call (the
    knowledge base's ``embed_query`` and ``retrieve`` included in both). A record of ``POST /v1/prune`` and the MCP
    ``prune_context`` tool (:func:`build_prune_record`) carries the required keys and ``kill_switch``.
    """

    request_id: Required[str]
    """Unique per request: the caller's id, else a fresh UUIDv7 (:func:`new_request_id`)."""
    request_hash: str
    """A hash of the question and the candidates: the same for identical requests (it decides the rollout)."""
    ts: Required[float]
    """Unix seconds when the record was made."""
    query_class: Required[str]
    route: Required[RouteRecord]
    policy_version: Required[str]
    latency_ms: Required[dict[str, float]]
    pruner: Required[PrunerRecord | None]
    candidate_count: Required[int]
    accepted_chunk_ids: Required[list[str]]
    # the pack record (Pipeline.pack)
    evidence_budget: int
    answer_reserve: int
    budget: BudgetRecord
    reranked_count: int
    candidate_ids: list[str]
    reranked_ids: list[str]
    evidence_tokens: int
    dropped: dict[str, int]
    decisions: list[DecisionRecord]
    fallbacks: list[FallbackRecord]
    question_tokens: int
    flags: dict[str, list[str]]
    answer: AnswerRecord
    # with tool outputs (PackRequest.tool_outputs)
    tools: list[ToolRecord]
    # with Pipeline(trace_content=True) only
    question: str
    prompt: str
    # the knowledge base's search
    retrieval: RetrievalRecord
    # the prune record (POST /v1/prune, the MCP prune_context tool)
    kill_switch: bool
    # the service with trace_requests on: the request as `admit replay` reads it
    request: dict[str, Any]


class ShadowRecord(TypedDict):
    """What a shadow run writes beside the request's own record."""

    shadow: Literal[True]
    request_id: str
    policy_version: str
    current_policy_version: str
    current_accepted_chunk_ids: list[str]
    shadow_accepted_chunk_ids: list[str]
    same_admitted: bool
    trace: TraceRecord


def trace_json_schema() -> dict[str, Any]:
    """The JSON Schema of a trace sink's lines (a :class:`TraceRecord` or a :class:`ShadowRecord`): every object
    with named keys takes no others, so a key written anywhere without being named in the type fails it."""
    from pydantic import TypeAdapter

    schema: dict[str, Any] = TypeAdapter(TraceRecord | ShadowRecord).json_schema()

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                node.setdefault("additionalProperties", False)
            for v in node.values():
                close(v)
        elif isinstance(node, list):
            for v in node:
                close(v)

    close(schema)
    schema["title"] = "admit trace record"
    return schema


@runtime_checkable
class Tracer(Protocol):
    """Opens a span per stage."""

    def span(self, name: str, attributes: Mapping[str, Any] | None = None) -> contextlib.AbstractContextManager[Any]:
        """Return a context manager that times one stage."""
        ...


class NullTracer:
    """Does nothing (the default)."""

    def span(self, name: str, attributes: Mapping[str, Any] | None = None) -> contextlib.AbstractContextManager[Any]:
        """Return a no-op context manager."""
        return contextlib.nullcontext()


class OTelTracer:
    """OpenTelemetry spans through ``opentelemetry-api`` (extra ``admit[otel]``)."""

    def __init__(self, name: str = "admit") -> None:
        """Get a tracer from the global provider."""
        try:
            from opentelemetry import trace as ot
        except ImportError as exc:
            from admit.errors import MissingExtraError

            raise MissingExtraError("opentelemetry-api", "otel") from exc
        self._tracer = ot.get_tracer(name)

    @contextlib.contextmanager
    def span(self, name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Any]:
        """Open an OpenTelemetry span."""
        with self._tracer.start_as_current_span(f"admit.{name}", attributes=dict(attributes or {})) as sp:
            yield sp


@runtime_checkable
class TraceSink(Protocol):
    """Receives one record per request."""

    def write(self, record: Mapping[str, Any]) -> None:
        """Store one record (a :class:`TraceRecord` or a :class:`ShadowRecord`)."""
        ...


class JsonlSink:
    """Appends one JSON line per record to a file (thread-safe)."""

    def __init__(self, path: str | Path) -> None:
        """Open (append) ``path``; parent folders are created."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def write(self, record: Mapping[str, Any]) -> None:
        """Append ``record`` as one line."""
        self.write_line(self.line(record))

    @staticmethod
    def line(record: Mapping[str, Any]) -> str:
        """``record`` as the line :meth:`write` appends (without its newline): a worker process finishes it, the
        server only appends it (:meth:`write_line`)."""
        return escape_line_breaks(json.dumps(record, ensure_ascii=False, sort_keys=False, default=str))

    def write_line(self, line: str) -> None:
        """Append one finished line (:meth:`line`)."""
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")


class MemorySink:
    """Keeps records in a list (tests, replay)."""

    def __init__(self) -> None:
        """Create an empty sink."""
        self.records: list[Mapping[str, Any]] = []

    def write(self, record: Mapping[str, Any]) -> None:
        """Keep ``record``."""
        self.records.append(record)


class StageTimer:
    """Collects per-stage wall time in milliseconds."""

    def __init__(self, tracer: Tracer) -> None:
        """Create the timer over ``tracer``."""
        self.tracer = tracer
        self.ms: dict[str, float] = {}
        self._t0 = time.perf_counter()

    @contextlib.contextmanager
    def stage(self, name: str, **attrs: Any) -> Iterator[None]:
        """Time a stage and open a span for it."""
        t = time.perf_counter()
        with self.tracer.span(name, attrs):
            yield
        self.ms[name] = round(self.ms.get(name, 0.0) + (time.perf_counter() - t) * 1000, 3)

    def total_ms(self) -> float:
        """Milliseconds since the timer started."""
        return round((time.perf_counter() - self._t0) * 1000, 3)


def build_prune_record(
    *,
    request_id: str,
    request_hash: str | None = None,
    route: RouteRecord,
    policy_version: str,
    kill_switch: bool,
    candidate_count: int,
    accepted_ids: Sequence[str],
    pruner: PrunerRecord | None,
    latency_ms: Mapping[str, float],
    total_ms: float,
) -> TraceRecord:
    """The record of a prune without a pack (``POST /v1/prune``, the MCP ``prune_context`` tool)."""
    latency = latency_record(latency_ms, total_ms)
    rec = _required_keys(
        request_id, request_hash, route, policy_version, candidate_count, accepted_ids, pruner, latency
    )
    rec["kill_switch"] = kill_switch
    return rec


def _required_keys(
    request_id: str,
    request_hash: str | None,
    route: RouteRecord,
    policy_version: str,
    candidate_count: int,
    accepted_ids: Sequence[str],
    pruner: PrunerRecord | None,
    latency_ms: dict[str, float],
    /,
) -> TraceRecord:
    """The keys every record carries (:class:`TraceRecord`'s required ones, in its order), and ``request_hash``
    when known: both builders start from them."""
    rec: TraceRecord = {
        "request_id": request_id,
        "ts": time.time(),
        "query_class": route["query_class"],
        "route": route,
        "policy_version": policy_version,
        "candidate_count": candidate_count,
        "accepted_chunk_ids": list(accepted_ids),
        "pruner": pruner,
        "latency_ms": latency_ms,
    }
    if request_hash is not None:
        rec["request_hash"] = request_hash
    return rec


def latency_record(stages: Mapping[str, float], total_ms: float) -> dict[str, float]:
    """The one ``latency_ms`` shape of every record: milliseconds by stage, and ``total`` for the whole call."""
    return {**{k: round(float(v), 3) for k, v in stages.items() if k != "total"}, "total": round(float(total_ms), 3)}


def build_record(
    *,
    request_id: str,
    request_hash: str | None = None,
    route: RouteRecord,
    policy_version: str,
    budget: Budget,
    candidate_ids: Sequence[str],
    reranked_ids: Sequence[str],
    decisions: Sequence[Decision],
    evidence_tokens: int,
    fallbacks: Sequence[Fallback],
    latency_ms: Mapping[str, float],
    total_ms: float,
    pruner: PrunerRecord | None,
    accepted_ids: Sequence[str] | None = None,
    question_tokens: int | None = None,
    flags: Mapping[str, list[str]] | None = None,
    answer: AnswerRecord | None = None,
    tools: Sequence[ToolRecord] | None = None,
    retrieval: RetrievalRecord | None = None,
    content: tuple[str, str] | None = None,
) -> TraceRecord:
    """Assemble the trace record of one request from its typed parts.

    ``latency_ms`` holds every stage's milliseconds (those run before the pack, such as the knowledge base's
    ``embed_query`` and ``retrieve``, included) and ``total_ms`` the whole call's. The optional parts are
    written only when given: ``tools`` (the request's tool outputs), ``retrieval`` (the knowledge base's
    search), ``content`` (``(question, prompt)``, with ``Pipeline(trace_content=True)`` only).
    """
    dropped = Counter(d.reason for d in decisions if d.state == "dropped")
    accepted = (
        list(accepted_ids) if accepted_ids is not None else [d.chunk_id for d in decisions if d.state == "admitted"]
    )
    latency = latency_record(latency_ms, total_ms)
    rec = _required_keys(request_id, request_hash, route, policy_version, len(candidate_ids), accepted, pruner, latency)
    rec.update(
        {
            "evidence_budget": budget.evidence_budget,
            "answer_reserve": budget.answer_reserve,
            "budget": budget.as_dict(),
            "reranked_count": len(reranked_ids),
            "candidate_ids": list(candidate_ids),
            "reranked_ids": list(reranked_ids),
            "evidence_tokens": evidence_tokens,
            "dropped": dict(sorted(dropped.items())),
            "decisions": [d.as_dict() for d in decisions],
            "fallbacks": [f.as_dict() for f in fallbacks],
        }
    )
    if question_tokens is not None:
        rec["question_tokens"] = question_tokens
    if flags is not None:
        rec["flags"] = {k: list(v) for k, v in flags.items()}
    if answer is not None:
        rec["answer"] = answer
    if tools is not None:
        rec["tools"] = list(tools)
    if retrieval is not None:
        rec["retrieval"] = retrieval
    if content is not None:
        rec["question"], rec["prompt"] = content
    return rec

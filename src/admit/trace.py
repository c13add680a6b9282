"""Trace: one JSON record per request, a JSONL sink, and optional OpenTelemetry spans.

The record (see :func:`build_record`) holds the query class and its cue, the budget, candidate, reranked
and accepted ids, evidence tokens, dropped counts by reason, a decision for every candidate, fallbacks,
per-stage latency and pruner cost. Chunk text is recorded only when ``ADMIT_TRACE_CONTENT=true``.
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
from typing import Any, Protocol, runtime_checkable

from admit.types import Budget, Decision, Fallback

__all__ = ["JsonlSink", "NullTracer", "OTelTracer", "TraceSink", "Tracer", "build_record", "trace_content_enabled"]


def trace_content_enabled() -> bool:
    """Whether ``ADMIT_TRACE_CONTENT=true`` lets traces carry chunk text and prompts.

    Read once, at the edge: :class:`~admit.pipeline.Pipeline` calls it when built without ``trace_content``.
    """
    return os.environ.get("ADMIT_TRACE_CONTENT", "").strip().lower() in {"1", "true", "yes", "on"}


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
        """Store one record."""
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
        line = json.dumps(record, ensure_ascii=False, sort_keys=False, default=str)
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


def build_record(
    *,
    request_id: str,
    route: Mapping[str, Any],
    policy_version: str,
    budget: Budget,
    candidate_ids: Sequence[str],
    reranked_ids: Sequence[str],
    decisions: Sequence[Decision],
    evidence_tokens: int,
    fallbacks: Sequence[Fallback],
    latency_ms: Mapping[str, float],
    total_ms: float,
    pruner: Mapping[str, Any] | None,
    accepted_ids: Sequence[str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the trace record of one request."""
    dropped = Counter(d.reason for d in decisions if d.state == "dropped")
    accepted = (
        list(accepted_ids) if accepted_ids is not None else [d.chunk_id for d in decisions if d.state == "admitted"]
    )
    rec: dict[str, Any] = {
        "request_id": request_id,
        "ts": time.time(),
        "query_class": route.get("query_class"),
        "route": dict(route),
        "policy_version": policy_version,
        "evidence_budget": budget.evidence_budget,
        "answer_reserve": budget.answer_reserve,
        "budget": budget.as_dict(),
        "candidate_count": len(candidate_ids),
        "reranked_count": len(reranked_ids),
        "candidate_ids": list(candidate_ids),
        "reranked_ids": list(reranked_ids),
        "accepted_chunk_ids": accepted,
        "evidence_tokens": evidence_tokens,
        "dropped": dict(sorted(dropped.items())),
        "decisions": [d.as_dict() for d in decisions],
        "fallbacks": [f.as_dict() for f in fallbacks],
        "latency_ms": {**latency_ms, "total": total_ms},
        "pruner": dict(pruner) if pruner else None,
    }
    if extra:
        rec.update(extra)
    return rec

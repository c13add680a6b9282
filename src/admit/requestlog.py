"""The request log: a trace sink that writes each request beside its trace record, in the ``admit pack`` JSON.

:class:`RequestLog` is the one request logger: ``admit serve`` (``trace_requests = true``) and the
``--trace-file`` option of ``admit search`` and ``admit pack`` write their trace files through it, and
``admit replay`` (:mod:`admit.eval.replay`) reads them back. :func:`request_to_json` is the request's logged
form, also what the service's request inspector keeps (:mod:`admit.inspector`). Logged tool outputs have their
rows redacted. It sits beside the pipeline, below the service and the evaluation harness, so a server writes
its log without importing the harness.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from admit.errors import ConfigError
from admit.pipeline import PackRequest
from admit.tools import Redactor
from admit.trace import TraceRecord, TraceSink

__all__ = ["RequestLog", "request_to_json"]


def request_to_json(req: PackRequest, *, redactor: Redactor | None = None) -> dict[str, Any]:
    """The ``admit pack`` JSON of a request (:func:`admit.schema.parse_pack_request` reads it back).

    Tool outputs are written with their rows redacted (``redactor``, default :meth:`Redactor.default`): a log
    never holds what the prompt would not.

    Raises:
        ConfigError: when the request's model is a tokenizer instance rather than a name (it cannot be logged).
    """
    if not isinstance(req.model, str):
        raise ConfigError("Replay logging needs `model` as a name or tokenizer path, not a tokenizer instance.")
    cands = []
    for c in req.candidates:
        d: dict[str, Any] = {"id": c.id, "source_id": c.source_id, "text": c.text, "title": c.title}
        if c.version is not None:
            d["version"] = c.version
        if c.updated_at is not None:
            d["updated_at"] = c.updated_at.isoformat()
        if c.access is not None:
            d["access"] = {"tenant": c.access.tenant, "groups": list(c.access.groups), "label": c.access.label}
        for k in ("authority", "score", "language"):
            v = getattr(c, k)
            if v is not None:
                d[k] = v
        if c.metadata:
            d["metadata"] = dict(c.metadata)
        cands.append(d)
    out: dict[str, Any] = {
        "question": req.question,
        "principal": {"tenant": req.principal.tenant, "groups": list(req.principal.groups)} if req.principal else None,
        "candidates": cands,
        "model": req.model,
        "input_limit": req.input_limit,
        "instructions": req.instructions,
        "conversation": [{"role": m.role, "content": m.content} for m in req.conversation],
        "query_class": req.query_class,
        "prune": req.prune,
        "prune_params": dict(req.prune_params),
        "request_id": req.request_id,
    }
    if req.tool_outputs:
        red = redactor or Redactor.default()
        out["tool_outputs"] = [
            {
                "id": t.id,
                "tool": t.tool,
                "rows": [red.redact(r)[0] for r in t.rows],
                "schema": dict(t.schema),
                "max_rows": t.max_rows,
                "max_bytes": t.max_bytes,
                "page_token": t.page_token,
            }
            for t in req.tool_outputs
        ]
    return out


class RequestLog:
    """A trace sink (a :class:`~admit.pipeline.RequestSink`) that writes each pack record to ``out``, with the
    request when ``log_requests`` is on.

    With requests in the trace file, ``admit replay`` re-runs the log (the request holds the question, the
    principal and the candidates with their text: opt in; tool outputs are written with their rows redacted by
    ``redactor``). ``admit serve`` (``trace_requests = true``) and the ``--trace-file`` option of ``admit search``
    and ``admit pack`` write their trace files through it: ``Pipeline(sink=RequestLog(...))``.
    """

    def __init__(self, out: TraceSink, *, log_requests: bool, redactor: Redactor | None = None) -> None:
        """Write to ``out``; ``redactor`` (default :meth:`Redactor.default`) redacts logged tool outputs."""
        self.out = out
        self.log_requests = log_requests
        self.redactor = redactor

    def write(self, record: Mapping[str, Any]) -> None:
        """Write a record that comes without its request (a shadow record)."""
        self.out.write(record)

    def write_request(self, record: TraceRecord, request: PackRequest) -> None:
        """Write the record, with the request when logged (its request id is the trace's, for the rollout)."""
        self.out.write(self._with_request(record, request))

    def _with_request(self, record: TraceRecord, request: PackRequest) -> Mapping[str, Any]:
        if not self.log_requests:
            return record
        logged = request_to_json(request, redactor=self.redactor)
        logged["request_id"] = record.get("request_id") or request.request_id
        return {**record, "request": logged}

    def line_for(self, method: str, *args: Any) -> str | None:
        """The finished line a ``write`` or ``write_request`` call would append (the request logged and its tool
        rows redacted), when ``out`` writes lines (:class:`~admit.trace.JsonlSink`); else ``None``. A service's
        worker process finishes the line here, so the server only appends it (:meth:`write_line`)."""
        line = getattr(self.out, "line", None)
        if line is None:
            return None
        record = self._with_request(*args) if method == "write_request" else args[0]
        return str(line(record))

    def write_line(self, line: str) -> None:
        """Append a line :meth:`line_for` finished."""
        self.out.write_line(line)  # type: ignore[attr-defined]

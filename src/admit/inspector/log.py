"""The request inspector's trace sink: each tenant's latest requests kept in memory for ``/inspect``.

:class:`InspectLog` sits in front of the service's trace file (it hands every record on) and keeps, per
tenant, the last requests with their trace records, so ``GET /inspect`` can render them
(:func:`admit.inspector.page.render_page`) for a viewer who may see them.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from admit.errors import ConfigError
from admit.pipeline import PackRequest, RequestSink
from admit.requestlog import request_to_json
from admit.trace import TraceRecord, TraceSink
from admit.types import Access, Principal

__all__ = ["REVOKED", "CurrentAccess", "InspectLog"]

logger = logging.getLogger(__name__)


CurrentAccess = Callable[[Principal, Sequence[tuple[str, str]]], Collection[str]]
"""``current(viewer, [(chunk id, stored source id), ...])``: the chunk ids ``viewer`` may read in the store now."""

REVOKED = "no longer readable by you"
"""What the inspector shows in place of a passage the viewer may no longer read."""


class InspectLog:
    """A trace sink for the service: keeps each tenant's last ``keep`` requests in memory for ``/inspect`` (one
    tenant's traffic never pushes out another's), and hands every record on to ``out`` (the trace file's sink).

    The kept entries hold the request with the admitted candidates' text (the page shows their envelopes; the
    others keep their ids and titles, so memory is bounded by the evidence budget), in memory only, behind the
    same API keys as ``/v1``. :meth:`visible` returns what one principal may see: its tenant's records whose
    requester had no group the viewer lacks and whose admitted chunks the viewer may read (two keys of one
    tenant with different groups never see each other's restricted text or questions); :meth:`records` returns
    a tenant's records unfiltered (operators, tests).

    In a worker process (:mod:`admit.service.procs`) the log is put in capture mode: what it would keep and
    write is handed to the server, which replays it (:meth:`keep_entry`, :meth:`write_out`).
    """

    def __init__(self, out: TraceSink | RequestSink | None, *, keep: int) -> None:
        """Keep at most ``keep`` requests (``0``: none); write through to ``out``."""
        self.out = out
        self.keep = keep
        self._kept: dict[str | None, collections.deque[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._capture_keep: Callable[[str | None, dict[str, Any]], None] | None = None
        self._capture_out: Callable[..., None] | None = None

    def capture(self, keep: Callable[[str | None, dict[str, Any]], None], out: Callable[..., None]) -> None:
        """Hand kept entries to ``keep(tenant, entry)`` and sink writes to ``out(method, *args)`` instead."""
        self._capture_keep, self._capture_out = keep, out

    def write(self, record: Mapping[str, Any]) -> None:
        """A record without its request (a shadow record): handed on, not kept."""
        if self.out is None:
            return
        if self._capture_out is not None:
            self._hand_on("write", dict(record))
            return
        self.out.write(record)  # type: ignore[union-attr]

    def write_request(self, record: TraceRecord, request: PackRequest) -> None:
        """Keep the record with its request, then hand it on."""
        if self.keep > 0:
            try:
                logged = request_to_json(request)
            except ConfigError:  # a tokenizer instance as the model: the candidates are still shown
                logged = {"question": request.question, "candidates": []}
            # only the admitted candidates keep their text (the envelopes): what is kept is bounded by the evidence
            # budget, not by the request's size
            admitted = set(record.get("accepted_chunk_ids", []))
            logged["candidates"] = [
                c if c.get("id") in admitted else {k: v for k, v in c.items() if k != "text"}
                for c in logged.get("candidates", [])
            ]
            logged.pop("conversation", None)
            logged.pop("tool_outputs", None)
            tenant = request.principal.tenant if request.principal is not None else None
            groups = list(request.principal.groups) if request.principal is not None else []
            entry = {**record, "request": logged, "_requester_groups": groups}
            if self._capture_keep is not None:
                self._capture_keep(tenant, entry)
            else:
                self.keep_entry(tenant, entry)
        if self.out is None:
            return
        if self._capture_out is not None:
            self._hand_on("write_request", record, request)
            return
        self.write_out("write_request", record, request)

    def _hand_on(self, method: str, *args: Any) -> None:
        """In capture mode (a worker process): the finished trace line when ``out`` writes lines (the request
        logged and redacted here, so the server only appends it), else the call itself."""
        assert self._capture_out is not None
        line_for = getattr(self.out, "line_for", None)
        line = line_for(method, *args) if line_for is not None else None
        if line is not None:
            self._capture_out("line", line)
        else:
            self._capture_out(method, *args)

    def keep_entry(self, tenant: str | None, entry: dict[str, Any]) -> None:
        """Keep one prepared entry for ``tenant`` (what :meth:`write_request` keeps)."""
        if self.keep <= 0:
            return
        with self._lock:
            kept = self._kept.setdefault(tenant, collections.deque(maxlen=self.keep))
            kept.append(entry)

    def write_out(self, method: str, *args: Any) -> None:
        """Hand a record on to ``out`` (``write`` or ``write_request``), or a line a worker finished (``line``)."""
        out = self.out
        if out is None:
            return
        if method == "line":
            out.write_line(*args)  # type: ignore[union-attr]
        elif method == "write_request" and hasattr(out, "write_request"):
            out.write_request(*args)
        elif method == "write_request":
            out.write(args[0])  # type: ignore[union-attr]
        else:
            out.write(*args)  # type: ignore[union-attr]

    def records(self, tenant: str | None) -> list[dict[str, Any]]:
        """The kept records of ``tenant``'s requests, newest first (unfiltered by group: see :meth:`visible`)."""
        with self._lock:
            return [_public(r) for r in reversed(self._kept.get(tenant, ()))]

    def visible(self, viewer: Principal, *, current: CurrentAccess | None = None) -> list[dict[str, Any]]:
        """The kept records ``viewer`` may see, newest first: its tenant's, made by a principal with no group
        ``viewer`` lacks, whose every admitted chunk ``viewer`` may read.

        The labels kept with a record are those of when it was made; a passage retrieved from the knowledge base
        (``metadata["kb_source_id"]``) is shown only if ``current`` (the store's access labels as they are now:
        :meth:`admit.kb.KnowledgeBase.readable_now`) says ``viewer`` may still read it. Otherwise its text, its
        title and the logged prompt are left out and the candidate is marked ``revoked``: the page shows "no
        longer readable by you" in its place. Without ``current`` (no knowledge base) no retrieved passage is
        shown; one that fails is logged and shows none (fail closed).
        """
        with self._lock:
            entries = list(reversed(self._kept.get(viewer.tenant, ())))
        mine = set(viewer.groups)
        shown = []
        for r in entries:
            if not set(r.get("_requester_groups", ())) <= mine:
                continue
            if not all(_readable(viewer, c) for c in _admitted(r)):
                continue
            shown.append(r)
        refs = {ref for r in shown for ref in _store_refs(r)}
        readable: Collection[str] = ()
        if refs and current is not None:
            try:
                readable = current(viewer, sorted(refs))
            except Exception:  # a store that cannot answer shows no retrieved text
                logger.warning("inspector: the store's access labels could not be read", exc_info=True)
                readable = ()
        return [_without_revoked(_public(r), set(readable)) for r in shown]


def _store_ref(cand: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(chunk id, stored source id)`` of a candidate retrieved from the knowledge base, else ``None``."""
    meta = cand.get("metadata")
    sid = meta.get("kb_source_id") if isinstance(meta, Mapping) else None
    cid = cand.get("id")
    return (str(cid), str(sid)) if isinstance(sid, str) and isinstance(cid, str) else None


def _store_refs(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    req = entry.get("request")
    cands = req.get("candidates", []) if isinstance(req, Mapping) else []
    return [ref for c in cands if isinstance(c, Mapping) and (ref := _store_ref(c)) is not None]


def _without_revoked(entry: dict[str, Any], readable: set[str]) -> dict[str, Any]:
    """``entry`` with each retrieved candidate ``readable`` lacks reduced to a placeholder marked ``revoked``.

    A stored chunk's id names its file and heading (``<source>#<section>``), so the id goes too: wherever the
    record holds it (candidate lists, decisions, citations, flags), it becomes ``revoked-1``, ``revoked-2``...
    """
    req = entry.get("request")
    if not isinstance(req, Mapping):
        return entry
    gone: dict[str, str] = {}
    for c in req.get("candidates", []):
        ref = _store_ref(c) if isinstance(c, Mapping) else None
        if ref is not None and ref[0] not in readable and ref[0] not in gone:
            gone[ref[0]] = f"revoked-{len(gone) + 1}"
    if not gone:
        return entry
    out: dict[str, Any] = _renamed({k: v for k, v in entry.items() if k != "prompt"}, gone)
    # the prompt holds the passages' text: rendered again from the candidates, revoked ones left out
    out["request"]["candidates"] = [
        {"id": c["id"], "title": f"({REVOKED})", "revoked": True} if c.get("id") in gone.values() else c
        for c in out["request"].get("candidates", [])
    ]
    return out


def _renamed(value: Any, gone: Mapping[str, str]) -> Any:
    """``value`` with every id of ``gone`` replaced, as a whole string, a key, or inside a string (an id with
    its ``#``, the form a stored chunk's id has, so a short word is never taken for one)."""
    if isinstance(value, str):
        if value in gone:
            return gone[value]
        for cid, to in gone.items():
            if "#" in cid and cid in value:
                value = value.replace(cid, to)
        return value
    if isinstance(value, Mapping):
        return {_renamed(k, gone) if isinstance(k, str) else k: _renamed(v, gone) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_renamed(v, gone) for v in value]
    return value


def _public(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "_requester_groups"}


def _admitted(entry: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    ids = set(entry.get("accepted_chunk_ids", []))
    req = entry.get("request")
    cands = req.get("candidates", []) if isinstance(req, Mapping) else []
    return [c for c in cands if isinstance(c, Mapping) and c.get("id") in ids]


def _readable(viewer: Principal, cand: Mapping[str, Any]) -> bool:
    acc = cand.get("access")
    if not isinstance(acc, Mapping):
        return False  # fail closed: no label, not shown
    groups = acc.get("groups") or ()
    access = Access(tenant=str(acc.get("tenant") or ""), groups=tuple(str(g) for g in groups))
    return viewer.can_read(access)

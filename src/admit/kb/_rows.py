"""Row (de)serialisation shared by the SQL backends and Qdrant payloads."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from admit.kb.store import ChunkRecord, SourceInfo
from admit.types import Access

__all__ = [
    "COLUMNS",
    "dt_from_ts",
    "record_columns",
    "record_from_payload",
    "record_from_row",
    "record_payload",
    "source_info",
    "ts_from_dt",
]

COLUMNS = (
    "id, source_id, tenant, document, text, text_hash, title, heading_path, version, updated_at, groups, label, "
    "has_access, authority, language, origin, ordinal, metadata"
)
"""The record columns of the SQL stores' chunk table, in their order (the embedding is stored apart)."""
_NAMES = tuple(c.strip() for c in COLUMNS.split(","))


def ts_from_dt(dt: datetime | None) -> float | None:
    """POSIX seconds of a datetime (naive is taken as UTC)."""
    if dt is None:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()


def dt_from_ts(ts: float | None) -> datetime | None:
    """A UTC datetime from POSIX seconds."""
    return None if ts is None else datetime.fromtimestamp(float(ts), UTC)


def record_payload(r: ChunkRecord) -> dict[str, Any]:
    """A JSON-ready dict of everything but the embedding."""
    return {
        "id": r.id,
        "source_id": r.source_id,
        "text": r.text,
        "text_hash": r.text_hash,
        "title": r.title,
        "heading_path": list(r.heading_path),
        "document": r.document,
        "version": r.version,
        "updated_at": ts_from_dt(r.updated_at),
        "tenant": r.access.tenant if r.access else None,
        "groups": list(r.access.groups) if r.access else [],
        "label": r.access.label if r.access else "",
        "has_access": r.access is not None,
        "authority": r.authority,
        "language": r.language,
        "origin": r.origin,
        "ordinal": r.ordinal,
        "metadata": json.dumps(dict(r.metadata), ensure_ascii=False, sort_keys=True, default=str),
    }


def record_from_payload(p: Mapping[str, Any], embedding: Any) -> ChunkRecord:
    """Rebuild a record from :func:`record_payload`'s dict and a vector."""
    access = None
    if p.get("has_access", p.get("tenant") is not None) and p.get("tenant") is not None:
        access = Access(tenant=p["tenant"], groups=tuple(p.get("groups") or ()), label=p.get("label") or "")
    meta = p.get("metadata") or "{}"
    return ChunkRecord(
        id=p["id"],
        source_id=p["source_id"],
        text=p["text"],
        embedding=np.asarray(embedding, dtype=np.float32),
        text_hash=p["text_hash"],
        title=p.get("title") or "",
        heading_path=tuple(p.get("heading_path") or ()),
        document=p.get("document") or "",
        version=p.get("version"),
        updated_at=dt_from_ts(p.get("updated_at")),
        access=access,
        authority=p.get("authority"),
        language=p.get("language"),
        origin=p.get("origin") or "",
        ordinal=int(p.get("ordinal") or 0),
        metadata=json.loads(meta) if isinstance(meta, str) else dict(meta),
    )


def record_columns(r: ChunkRecord, *, json_groups: bool) -> list[Any]:
    """The values of :data:`COLUMNS` for ``r``: the tenant ``""`` without an access label, the document its
    source when unnamed, the heading path as JSON text, the groups too when ``json_groups`` (else a list)."""
    p = record_payload(r)
    p.update(
        tenant=p["tenant"] or "",
        document=r.document or r.source_id,
        heading_path=json.dumps(p["heading_path"], ensure_ascii=False),
    )
    if json_groups:
        p["groups"] = json.dumps(p["groups"], ensure_ascii=False)
    return [p[c] for c in _NAMES]


def record_from_row(row: Sequence[Any], embedding: Any) -> ChunkRecord:
    """Rebuild a record from the values of :data:`COLUMNS` (lists as JSON text or decoded) and its vector."""
    p = dict(zip(_NAMES, row, strict=True))
    for key in ("heading_path", "groups"):
        if isinstance(p[key], str):
            p[key] = json.loads(p[key])
    p["tenant"] = p["tenant"] or None  # "" in the table: no access label
    return record_from_payload(p, embedding)


def source_info(row: Sequence[Any]) -> SourceInfo:
    """A :class:`SourceInfo` from an aggregate row: source id, tenant, origin, content hash, ingest key, count."""
    sid, tenant, origin, content_hash, ingest_key, chunks = row
    return SourceInfo(
        source_id=sid,
        tenant=tenant or "",
        origin=origin or "",
        content_hash=content_hash or "",
        ingest_key=ingest_key or "",
        chunks=int(chunks),
    )

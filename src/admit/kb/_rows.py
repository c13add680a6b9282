"""Row (de)serialisation shared by the SQL backends and Qdrant payloads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

from admit.kb.store import ChunkRecord
from admit.types import Access

__all__ = ["dt_from_ts", "record_from_payload", "record_payload", "ts_from_dt"]


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

"""Small builders for tests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from admit.types import Access, Chunk, Principal

ACME = Access(tenant="acme", label="internal")
ALICE = Principal(tenant="acme", groups=("support",))


def chunk(cid: str, text: str, *, source: str | None = None, **kw: Any) -> Chunk:
    """A readable acme chunk."""
    kw.setdefault("access", ACME)
    return Chunk(id=cid, source_id=source or cid.split("#")[0], text=text, **kw)


def at(year: int, month: int = 1) -> datetime:
    """A naive-free UTC datetime."""
    from datetime import UTC

    return datetime(year, month, 1, tzinfo=UTC)

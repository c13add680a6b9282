"""Tool outputs get their own cap before they reach the packer: rows, bytes, a pagination token, redaction."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from admit.errors import RequestError

__all__ = ["ToolPage", "cap_tool_output"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPage:
    """One page of a tool's result."""

    rows: tuple[Any, ...]
    """The rows on this page (after redaction)."""
    total_rows: int
    """Rows in the whole result."""
    next_token: str | None
    """Pass back as ``page_token`` for the next page; ``None`` at the end."""
    truncated_by: str | None
    """``rows`` or ``bytes`` when the page was cut by a cap."""

    def as_text(self) -> str:
        """A compact JSON rendering with the continuation note."""
        body = {"rows": list(self.rows), "total_rows": self.total_rows, "next_page_token": self.next_token}
        return json.dumps(body, ensure_ascii=False, default=str)


def _decode_token(token: str | None) -> int:
    if not token:
        return 0
    try:
        offset = int(json.loads(base64.urlsafe_b64decode(token.encode()).decode())["o"])
    except Exception as exc:
        raise RequestError(f"Invalid page_token {token!r}.", field="page_token") from exc
    if offset < 0:
        raise RequestError(f"Invalid page_token {token!r}.", field="page_token")
    return offset


def cap_tool_output(
    rows: Sequence[Any],
    *,
    max_rows: int = 50,
    max_bytes: int = 16_000,
    page_token: str | None = None,
    redact: Callable[[Any], Any] | None = None,
) -> ToolPage:
    """Cap a tool's rows by count and serialized bytes; the rest is reachable by ``next_token``.

    Rows are redacted (``redact``) before they are measured, so a redacted field never reaches the packer.
    A page always has at least one row if any remain (a single row over ``max_bytes`` is reported, not cut).
    """
    if max_rows < 1 or max_bytes < 1:
        raise RequestError(f"max_rows and max_bytes must be >= 1, got {max_rows}, {max_bytes}.", field="max_rows")
    start = _decode_token(page_token)
    out: list[Any] = []
    size = 0
    truncated: str | None = None
    i = start
    while i < len(rows):
        row = redact(rows[i]) if redact else rows[i]
        n = len(json.dumps(row, ensure_ascii=False, default=str).encode())
        if len(out) >= max_rows:
            truncated = "rows"
            break
        if out and size + n > max_bytes:
            truncated = "bytes"
            break
        out.append(row)
        size += n
        i += 1
    nxt = base64.urlsafe_b64encode(json.dumps({"o": i}).encode()).decode() if i < len(rows) else None
    return ToolPage(rows=tuple(out), total_rows=len(rows), next_token=nxt, truncated_by=truncated)

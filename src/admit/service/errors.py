"""The one error table of the service: what an error becomes on every transport (HTTP status, kind, message).

``POST /v1/*`` answers ``{"error": kind, "kind": class, "detail": message, "field": ...}`` with the status;
an MCP tool raises a tool error with the same ``message`` (no traceback). The message is the library's own
one-line message for caller mistakes (the same text the CLI prints after ``error:``); for runtime failures it
is a line safe to show (no server paths or URLs), the full error going to the log.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from admit import errors as e
from admit.errors import AdmitError

__all__ = ["ERROR_TABLE", "ErrorAnswer", "answer_for", "one_line"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorAnswer:
    """An error as a transport shows it."""

    status: int
    """The HTTP status."""
    error: str
    """The service's error kind (``invalid_request``, ``forbidden`` ...): the body's ``error``."""
    kind: str
    """The library's error class (``RequestError``, ``ConfigError`` ...): the body's ``kind``."""
    message: str
    """One line to show: the HTTP body's ``detail``, the MCP tool error's text."""
    field: str | None = None
    """The request field at fault, when one is."""


ERROR_TABLE: tuple[tuple[type[AdmitError], int, str, str], ...] = (
    (e.LimitExceeded, 413, "payload_too_large", "message"),
    (e.MissingExtraError, 503, "unavailable", "message"),
    (e.ConfigError, 422, "invalid_request", "message"),
    (e.BudgetError, 422, "invalid_request", "message"),
    (e.AuthorizationError, 403, "forbidden", "message"),
    (e.BackendTimeout, 504, "timeout", "message"),
    (e.Overloaded, 429, "overloaded", "message"),
    (e.BackendError, 503, "backend_unavailable", "first_line"),
    (e.AdmitError, 503, "backend_unavailable", "hidden"),
)
"""``(error class, status, kind, what is shown)``, the first matching row wins: ``message`` the error's own
one-line message, ``first_line`` its first line (bounded: a backend's text may be long), ``hidden`` a fixed
line (the text is in the log)."""

_HIDDEN = "a pipeline stage failed; see the server log"


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (its lines joined), at most ``limit`` characters."""
    joined = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return joined[:limit]


def answer_for(exc: AdmitError) -> ErrorAnswer:
    """The row of :data:`ERROR_TABLE` for ``exc``, applied."""
    field = getattr(exc, "field", None)
    for cls, status, error, shown in ERROR_TABLE:
        if isinstance(exc, cls):
            if shown == "message":
                message = one_line(str(exc), 2_000)
            elif shown == "first_line":
                logger.warning("backend error: %s", exc)
                message = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
            else:
                logger.warning("admit error: %s", exc)
                message = _HIDDEN
            return ErrorAnswer(status=status, error=error, kind=type(exc).__name__, message=message, field=field)
    raise AssertionError("AdmitError is the table's last row")  # pragma: no cover

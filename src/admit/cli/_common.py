"""What every ``admit`` command shares: error handling, input reading and output.

Library errors become clean messages once, in :func:`handle_errors`: a malformed request or bad setting
exits with code 2, a runtime failure with code 1; no traceback reaches the user.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from admit.errors import AdmitError, ConfigError, MissingExtraError

__all__ = ["handle_errors", "open_kb", "read_json"]

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(fn: F) -> F:
    """Turn admit errors into click errors: ConfigError (incl. RequestError) exit 2, others exit 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConfigError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except AdmitError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def read_json(path: str) -> Any:
    """Read one JSON document from ``path`` (``-``: stdin); a bad file is a ConfigError."""
    raw = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()  # noqa: SIM115
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {exc.start}).") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.") from exc
    except RecursionError as exc:
        raise ConfigError(f"{path}: JSON nested too deeply.") from exc
    except ValueError as exc:  # e.g. an integer literal longer than Python converts
        raise ConfigError(f"{path}: not valid JSON: {exc}") from exc


def open_kb(kb: str, embedder: str | None = None) -> Any:
    """Open the knowledge base at ``kb`` (a file or a store URL); a bad one is a ConfigError."""
    try:
        from admit.kb import KnowledgeBase
    except ImportError as exc:
        raise MissingExtraError("admit knowledge base dependencies", "kb") from exc
    try:
        return KnowledgeBase(kb, embedder=embedder)
    except (ImportError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc

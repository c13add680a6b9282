"""One JSON reader for every file admit reads (``admit pack``'s request, ``admit prune``'s lines, datasets, trace
files): text that is not a JSON value is a one-line :class:`~admit.errors.RequestError` naming where it was."""

from __future__ import annotations

import json
from typing import Any

from admit.errors import RequestError

__all__ = ["json_line"]


def json_line(raw: str | bytes, where: str) -> Any:
    """``raw`` parsed as JSON; ``where`` (``"data.jsonl line 3"``) starts the message of any failure.

    Raises:
        RequestError: Not valid JSON, not UTF-8, nested too deeply, or a number Python refuses to read.
    """
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        raise RequestError(f"{where}: not valid JSON: {exc.msg} ({at}).") from exc
    except UnicodeDecodeError as exc:
        raise RequestError(f"{where}: not valid UTF-8.") from exc
    except RecursionError as exc:
        raise RequestError(f"{where}: nested too deeply to read.") from exc
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise RequestError(f"{where}: {str(exc)[:120]}.") from exc

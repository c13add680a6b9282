"""Request bodies parsed and responses serialized in a worker, never on the event loop.

:func:`parse_body` decodes a body (bounded depth and object sizes, each cap named in the 422) and validates it
against a route's model; :func:`dumps` writes JSON with U+2028, U+2029 and U+0085 escaped, so a value can
never break out of a JSON line (JSONL traces, MCP stdio, log lines) and a browser or a line-oriented reader
sees one line per record. Both run inside :func:`admit.service.limits.run_bounded`: a 2 MB body with 110,000
metadata keys costs its own tenant's worker, not the loop every other request waits on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from admit._clean import escape_line_breaks
from admit.errors import InvalidValue, RequestError

__all__ = ["JsonCaps", "check_shape", "check_unicode", "dumps", "dumps_line", "parse_body"]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True, kw_only=True)
class JsonCaps:
    """Bounds on the shape of a request body (over one: 422 naming the field and the cap)."""

    max_depth: int = 32
    """Deepest nesting of objects and arrays."""
    max_object_keys: int = 1_000
    """Most keys in one object (a candidate's ``metadata``, a tool row)."""
    max_array_items: int = 100_000
    """Most items in one array (candidates, tool rows, conversation)."""
    max_values: int = 500_000
    """Most values in the whole body."""


class BodyShapeError(RequestError):
    """A body over one of the :class:`JsonCaps` (a 422 naming the field)."""


def _path(parts: list[str | int]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out or "body"


def check_shape(value: Any, caps: JsonCaps) -> None:
    """Raise :class:`BodyShapeError` when ``value`` (decoded JSON) is over a cap; linear in its size."""
    count = 0
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        v, where = stack.pop()
        count += 1
        if count > caps.max_values:
            raise BodyShapeError(f"body: more than max_values={caps.max_values} JSON values", field="body")
        if not isinstance(v, dict | list):
            continue
        if len(where) >= caps.max_depth:
            raise BodyShapeError(f"{_path(where)}: nested deeper than max_depth={caps.max_depth}", field=_path(where))
        children: list[tuple[Any, list[str | int]]]
        if isinstance(v, dict):
            noun, name, cap = "keys", "max_object_keys", caps.max_object_keys
            children = [(item, [*where, str(k)[:60]]) for k, item in v.items()] if len(v) <= cap else []
        else:
            noun, name, cap = "items", "max_array_items", caps.max_array_items
            children = [(item, [*where, i]) for i, item in enumerate(v)] if len(v) <= cap else []
        if len(v) > cap:
            raise BodyShapeError(f"{_path(where)}: {len(v)} {noun} is over {name}={cap}", field=_path(where))
        stack.extend(children)


def _has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate: it cannot be encoded as UTF-8 (one C pass, no pattern)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_unicode(value: Any) -> None:
    """Raise :class:`RequestError` naming the field when a string (or a key) of ``value`` holds a lone surrogate
    (``"\\ud800"`` unpaired): it is no Unicode text, cannot be written as UTF-8, and would fail deep inside
    validation or serialization instead of as a 422."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        v, where = stack.pop()
        if isinstance(v, str):
            if _has_surrogate(v):
                field = _path(where)
                raise RequestError(
                    f"{field}: holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape); send valid Unicode",
                    field=field,
                )
        elif isinstance(v, dict):
            for k, item in v.items():
                key = str(k)
                if _has_surrogate(key):
                    field = _path(where)
                    raise RequestError(
                        f"{field}: a key holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape); "
                        "send valid Unicode",
                        field=field,
                    )
                stack.append((item, [*where, key[:60]]))
        elif isinstance(v, list):
            stack.extend((item, [*where, i]) for i, item in enumerate(v))


def _no_constant(name: str) -> Any:
    raise InvalidValue(f"{name} is not JSON")


def parse_body(raw: bytes, model: type[M], caps: JsonCaps, *, context: Mapping[str, Any] | None = None) -> M:
    """Decode ``raw`` as JSON, check its shape, validate it as ``model``.

    Raises:
        RequestError: not JSON (invalid UTF-8, NaN, nested past the interpreter's limit), a string with a lone
            surrogate (:func:`check_unicode`), or over a cap.
        pydantic.ValidationError: the model's own checks (the HTTP face turns it into its usual 422).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(f"body: not valid UTF-8 (byte {exc.start})", field="body") from None
    if not text.strip():
        raise RequestError("body: empty; send a JSON object", field="body")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise BodyShapeError(f"body: nested deeper than max_depth={caps.max_depth}", field="body") from None
    except json.JSONDecodeError:
        # no decoder offset: a character position means nothing to a caller who sent a file or a shell string
        raise RequestError("body: not valid JSON", field=None) from None
    except ValueError as exc:  # NaN / Infinity (_no_constant)
        msg = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise RequestError(f"body: not valid JSON ({msg})", field=None) from None
    check_shape(value, caps)
    if "\\u" in text:  # only a \u escape (\uD800-\uDFFF) can put one in: a body without one pays nothing
        check_unicode(value)
    return model.model_validate(value, context=dict(context) if context else None)


def dumps(value: Any) -> str:
    """JSON text (UTF-8 kept readable) with U+2028, U+2029 and U+0085 escaped; non-finite floats as ``null``."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), default=str)
    return escape_line_breaks(text)


def dumps_line(value: Any) -> str:
    """One JSON line (:func:`dumps` plus a newline): the line can only end where this newline is."""
    return dumps(value) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value

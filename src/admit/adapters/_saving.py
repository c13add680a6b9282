"""Saving the components of a filter as plain data: ``{"type": "module.Class", "init_parameters": {...}}``, the way
Haystack saves components (the instance must have ``to_dict`` and a ``from_dict`` classmethod)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from admit.errors import ConfigError

__all__ = ["instance_from_dict", "instance_to_dict"]


def instance_to_dict(obj: Any, what: str) -> Any:
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if not callable(to_dict) or not callable(getattr(type(obj), "from_dict", None)):
        raise ConfigError(
            f"The {what} {type(obj).__qualname__} cannot be saved: give it to_dict() and a from_dict() classmethod, "
            "or name a built-in strategy instead."
        )
    return {"type": f"{type(obj).__module__}.{type(obj).__qualname__}", "init_parameters": to_dict()}


def instance_from_dict(data: Any) -> Any:
    if not isinstance(data, Mapping):
        return data
    path = data.get("type")
    if not isinstance(path, str) or "." not in path:
        raise ConfigError(f"A saved admit component needs a `type` (module.Class), got {path!r}.")
    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"Cannot load the saved admit component {path!r}: {exc}") from exc
    from_dict = getattr(cls, "from_dict", None)
    if not callable(from_dict):
        raise ConfigError(f"The saved admit component {path!r} has no from_dict() classmethod.")
    return from_dict(dict(data.get("init_parameters") or {}))

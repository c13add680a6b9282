"""Value checks for prune settings and strategy parameters: each takes a value and returns it (normalised) or
raises :class:`~admit.errors.InvalidValue` (a ``ValueError`` too) with what it expected ("an integer >= 0"), which
:class:`~admit.prune.settings.PruneSettings` turns into a :class:`~admit.errors.RequestError` naming the field.

A strategy declares its parameters with these in its :class:`~admit.prune.spec.StrategySpec`::

    params = {"n": int_at_least(0), "relative": boolean}
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from admit.errors import InvalidValue

__all__ = ["Check", "boolean", "int_at_least", "int_between", "number", "one_of", "optional"]

Check = Callable[[Any], Any]
"""A value check: returns the (normalised) value or raises ``InvalidValue("what it expected")`` (a ``ValueError``:
a check of a plug-in's own that raises the builtin is read the same)."""


def int_at_least(lo: int) -> Check:
    """An integer ``>= lo`` (a float that is a whole number is accepted)."""

    def check(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise InvalidValue(f"an integer >= {lo}")
        return v

    return check


def int_between(lo: int, hi: int) -> Check:
    """An integer in ``lo..hi``."""
    at_least = int_at_least(lo)

    def check(v: Any) -> Any:
        v = at_least(v)
        if v > hi:
            raise InvalidValue(f"an integer between {lo} and {hi}")
        return v

    return check


def optional(check: Check) -> Check:
    """``None`` or what ``check`` accepts."""

    def opt(v: Any) -> Any:
        return None if v is None else check(v)

    return opt


def number(v: Any) -> Any:
    """A finite number."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise InvalidValue("a finite number")
    return v


_BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def boolean(v: Any) -> Any:
    """``true``/``false`` (also the words ``yes``/``no``/``on``/``off``/``1``/``0``)."""
    if isinstance(v, str) and v.strip().lower() in _BOOL_WORDS:
        return _BOOL_WORDS[v.strip().lower()]
    if not isinstance(v, bool):
        raise InvalidValue("true or false")
    return v


def one_of(*choices: str) -> Check:
    """One of ``choices``."""

    def check(v: Any) -> Any:
        if v not in choices:
            raise InvalidValue(f"one of {list(choices)}")
        return v

    return check

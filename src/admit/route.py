"""Route: a deterministic, logged, overridable query classifier that picks a policy's class.

The router tries classes in descending priority; the first cue (a case-insensitive regular expression) that
matches wins and is recorded as the reason. The classes and their cues come from the policy file
(:mod:`admit.policy`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from admit import _linear
from admit.errors import ConfigError
from admit.prune.settings import PruneSettings

__all__ = ["PruneSettings", "Route", "Router"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """The router's decision."""

    query_class: str
    """The chosen class."""
    cue: str
    """The matched cue text, ``override`` or ``default``."""
    pattern: str = ""
    """The pattern that matched."""
    overridden: bool = False
    """Whether the caller chose the class."""

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "query_class": self.query_class,
            "cue": self.cue,
            "pattern": self.pattern,
            "overridden": self.overridden,
        }


class Router:
    """Compiled cues of a policy file's classes, tried in descending priority (then by name)."""

    def __init__(self, classes: Iterable[tuple[str, int, Iterable[str]]], *, default_class: str) -> None:
        """Compile ``(class name, priority, cues)``; a bad cue is a :class:`~admit.errors.ConfigError`."""
        self.default_class = default_class
        compiled: list[tuple[str, _linear.LinearPattern, str]] = []
        ordered = sorted(classes, key=lambda c: (-c[1], c[0]))
        self.names = frozenset(name for name, _, _ in ordered)
        for name, _, cues in ordered:
            for cue in cues:
                try:  # RE2: a cue is matched against outside text (the question) in linear time
                    compiled.append((name, _linear.LinearPattern(cue, re.IGNORECASE, name=f"route.{name}"), cue))
                except ValueError as exc:
                    raise ConfigError(f"Bad cue {cue!r} in class {name!r}: {exc}") from exc
        self._compiled = tuple(compiled)

    def classify(self, question: str, *, override: str | None = None) -> Route:
        """Pick the class for ``question``; ``override`` (a class name) wins and is logged as such."""
        if override:
            if override not in self.names:
                raise ConfigError(f"Unknown query_class {override!r}; known: {', '.join(sorted(self.names))}.")
            route = Route(query_class=override, cue="override", overridden=True)
        else:
            route = Route(query_class=self.default_class, cue="default")
            for name, rx, pattern in self._compiled:
                m = rx.search(question)
                if m:
                    route = Route(query_class=name, cue=m.group(0).strip(), pattern=pattern)
                    break
        logger.debug("route: class=%s cue=%r overridden=%s", route.query_class, route.cue, route.overridden)
        return route

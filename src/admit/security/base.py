"""What a scan reports (:class:`Flag`, its kinds) and what a rule is (:class:`Rule`: data, not code)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from admit import _linear
from admit._linear import LinearPattern

__all__ = ["FLAG_KINDS", "RULE_FLAGS", "Flag", "FlagKind", "Rule", "rule"]

FlagKind = Literal[
    "boundary_forgery",
    "role_marker",
    "hijack",
    "ai_addressed",
    "tool_call",
    "exfiltration",
    "html_comment",
    "hidden_text",
    "invisible_unicode",
    "confusable",
    "grader_manipulation",
]

FLAG_KINDS: tuple[str, ...] = get_args(FlagKind)
"""Every kind :func:`~admit.security.scan` can report, in report order."""

RULE_FLAGS = re.IGNORECASE | re.MULTILINE
"""The flags of most rules (the rule tables' ``_I``): any case, ``^`` and ``$`` at every line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Flag:
    """One suspicious span."""

    kind: FlagKind
    """What it looks like (see :mod:`admit.security`)."""
    start: int
    """Start offset in the *normalised* text (see :func:`~admit.security.normalize`)."""
    end: int
    """End offset in the normalised text."""
    rule: str
    """The rule that fired (stable name, for tests and tuning)."""

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (no document text)."""
        return {"kind": self.kind, "start": self.start, "end": self.end, "rule": self.rule}


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One pattern rule: what it flags, its linear-time pattern, and the literals that let a scan skip it."""

    kind: FlagKind
    """The flag kind it reports."""
    name: str
    """Stable name (``Flag.rule``)."""
    pattern: LinearPattern
    """The pattern, matched on the normalised text (RE2: linear time)."""
    triggers: tuple[str, ...]
    """Literals of which every match contains one (lower case when the pattern ignores case); a scan runs the
    pattern only when the text holds one. A short alphabetic trigger (3 letters or fewer) must be a whole word."""
    unless_after: LinearPattern | None = None
    """A match followed by this (anchored at the match end) does not count: a negative look-ahead, which RE2
    lacks, done as a second linear match."""

    folds_case: bool = False
    """Whether the pattern ignores case (its triggers are then matched on the lower-cased text)."""


def rule(
    kind: FlagKind,
    name: str,
    pattern: str,
    flags: int = 0,
    *,
    triggers: tuple[str, ...],
    unless_after: str | None = None,
) -> Rule:
    """Declare a rule (the pattern is compiled for RE2 and registered with :mod:`admit._linear`)."""
    return Rule(
        kind=kind,
        name=name,
        pattern=_linear.compile(pattern, flags, name=f"security.{name}"),
        triggers=triggers,
        folds_case=bool(flags & re.IGNORECASE),
        unless_after=_linear.compile(unless_after, flags, name=f"security.{name}.unless") if unless_after else None,
    )

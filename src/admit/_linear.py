"""Linear-time regular expressions for text that an outsider controls.

Every pattern admit applies to document text, questions, titles, file names or LLM replies is compiled here,
with `RE2 <https://github.com/google/re2>`_ (the ``google-re2`` package): an automaton engine whose search time
is linear in the text for any pattern, so no input can make a match backtrack. RE2 has no look-arounds and no
back-references; a pattern that needs one is rewritten (a look-ahead becomes part of the match, a
back-reference a check on the groups in Python).

Syntax is Python's, translated where RE2 differs: ``\\w``, ``\\W`` and ``\\s`` are Unicode-aware as in
:mod:`re` (RE2's own are ASCII). ``\\b`` stays RE2's ASCII word boundary: rules written with it anchor on Latin
letters; a boundary next to a non-ASCII letter is spelled out in the pattern.

Tokenisers on hot paths (``\\w+`` and the like) keep :mod:`re` for speed, through :func:`simple`, which
accepts only a repeated single character class (or an alternation of those): each character is read at most
twice whatever the text, so they are linear by form; the check runs at import.

Work is counted, not timed: :data:`meter` adds up the characters each engine call may read (from the search
position to the match end, or to the end of the text when nothing matches). The tests assert that this count,
plus the Python lines a function executes, grows linearly with adversarial input (``tests/security/``). Each
engine call is also a :func:`admit._deadline.checkpoint` (re-exported here as :func:`checkpoint` for the text
loops that call it): past a request's deadline the next match stops it.

Example:
    >>> p = compile(r"\\bport\\s+(\\d+)", name="doc")
    >>> p.search("listen on port 8080").group(1)
    '8080'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import re2

from admit._deadline import checkpoint
from admit.errors import InvalidValue

__all__ = [
    "REGISTRY",
    "SIMPLE",
    "LinearPattern",
    "LiteralSet",
    "Match",
    "WorkMeter",
    "checkpoint",
    "compile",
    "meter",
    "simple",
    "table",
]


class Match(Protocol):
    """The part of a match object admit uses (RE2's and :mod:`re`'s both have it)."""

    @property
    def string(self) -> str:
        """The text searched."""

    def group(self, *groups: int | str) -> Any:
        """A group's text (``None`` when it did not take part)."""

    def groups(self, default: Any = None) -> tuple[Any, ...]:
        """Every group's text."""

    def start(self, group: int | str = 0) -> int:
        """Start offset of a group."""

    def end(self, group: int | str = 0) -> int:
        """End offset of a group."""

    def span(self, group: int | str = 0) -> tuple[int, int]:
        """``(start, end)`` of a group."""


@dataclass(slots=True)
class WorkMeter:
    """Characters handed to the regular-expression engine (the unit of work the linearity tests count)."""

    chars: int = 0
    """Total so far."""
    calls: int = 0
    """Engine calls so far."""

    def add(self, chars: int) -> None:
        """Count one engine call that may read ``chars`` characters (and stop past this thread's deadline: a
        :func:`~admit._deadline.checkpoint`)."""
        self.chars += max(chars, 1)
        self.calls += 1
        checkpoint()


meter = WorkMeter()
"""The process-wide work meter (approximate under threads; the tests read it single-threaded)."""

_W = r"\p{L}\p{N}_"  # as str.isalnum() plus "_": what \w is in re
_S = r"\t\n\x{0B}\f\r \x{1C}-\x{1F}\x{85}\p{Z}"
_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


def _translate(pattern: str) -> str:
    """Python escapes -> RE2 syntax (Unicode ``\\w``, ``\\W``, ``\\s``, ``\\S``; ``\\Z`` -> ``\\z``)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt == "w":
                out.append(_W if in_class else f"[{_W}]")
            elif nxt == "s":
                out.append(_S if in_class else f"[{_S}]")
            elif nxt in "WS" and not in_class:
                out.append(f"[^{_W if nxt == 'W' else _S}]")
            elif nxt in "WS":
                raise InvalidValue(f"\\{nxt} inside a character class has no RE2 spelling: {pattern!r}")
            elif nxt == "Z":
                out.append(r"\z")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                out.append("[^")
                i += 2
                if pattern[i : i + 1] == "]":  # a leading ] is a literal
                    out.append("\\]")
                    i += 1
                continue
            if pattern[i + 1 : i + 2] == "]":
                out.append("[\\]")
                i += 2
                continue
        out.append(ch)
        i += 1
    return "".join(out)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(text: str) -> str:
    """``text`` with lone surrogates (which JSON can carry) replaced by U+FFFD: RE2 reads UTF-8, and the
    replacement keeps every offset."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # fails on a surrogate, and only on one: a C pass, where a search is a regex pass
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


class LinearPattern:
    """A compiled linear-time pattern with the :mod:`re` methods admit uses."""

    __slots__ = ("_re", "flags", "name", "pattern")

    def __init__(self, pattern: str, flags: int = 0, *, name: str = "") -> None:
        self.pattern = pattern
        """The pattern as written (Python syntax)."""
        self.flags = flags
        """``re`` flags (``IGNORECASE``, ``MULTILINE``, ``DOTALL``)."""
        self.name = name or pattern[:40]
        """Where it is used (for the registry and test reports)."""
        inline = "".join(c for f, c in _FLAGS if flags & f)
        unknown = flags & ~(re.IGNORECASE | re.MULTILINE | re.DOTALL | re.UNICODE)
        if unknown:
            raise InvalidValue(f"unsupported re flags {unknown!r} for {self.name!r}")
        src = _translate(pattern)
        opts = re2.Options()
        opts.max_mem = 64 << 20  # the largest rules (the multilingual hijacks) need more than the default 8 MiB
        try:
            self._re = re2.compile(f"(?{inline}){src}" if inline else src, opts)
        except re2.error as exc:  # look-arounds, back-references: not linear, so not accepted
            raise InvalidValue(f"{self.name!r}: RE2 cannot compile {pattern!r}: {exc}") from exc

    def search(self, text: str, pos: int = 0) -> Match | None:
        """The first match at or after ``pos``."""
        m: Match | None = self._re.search(_utf8(text), pos)
        meter.add((m.end() if m is not None else len(text)) - pos)
        return m

    def match(self, text: str, pos: int = 0) -> Match | None:
        """A match starting at ``pos``."""
        m: Match | None = self._re.match(_utf8(text), pos)
        meter.add((m.end() if m is not None else len(text)) - pos)
        return m

    def fullmatch(self, text: str) -> Match | None:
        """A match of the whole text."""
        meter.add(len(text))
        m: Match | None = self._re.fullmatch(_utf8(text))
        return m

    def finditer(self, text: str, pos: int = 0, *, limit: int | None = None) -> Iterator[Match]:
        """Non-overlapping matches in order; at most ``limit`` of them when given."""
        last = pos
        for n, m in enumerate(self._re.finditer(_utf8(text), pos)):
            if limit is not None and n >= limit:
                return
            meter.add(m.end() - last + 1)
            last = m.end()
            yield m
        meter.add(len(text) - last)

    def findall(self, text: str) -> list[Any]:
        """Every match's text (or groups), as :func:`re.findall`."""
        out: list[Any] = []
        groups = self._re.groups
        for m in self.finditer(text):
            out.append(m.group(0) if groups == 0 else m.group(1) if groups == 1 else m.groups(""))
        return out

    def sub(self, repl: str | Callable[[Match], str], text: str, count: int = 0) -> str:
        """Replace matches (a callable gets each match; a string is taken literally, no group references)."""
        parts: list[str] = []
        last = 0
        for n, m in enumerate(self.finditer(text)):
            if count and n >= count:
                break
            parts.append(text[last : m.start()])
            parts.append(repl(m) if callable(repl) else repl)
            last = m.end()
        parts.append(text[last:])
        return "".join(parts)

    def split(self, text: str) -> list[str]:
        """Split at matches (group texts are not kept, unlike :func:`re.split` with groups)."""
        parts: list[str] = []
        last = 0
        for m in self.finditer(text):
            if m.end() == m.start():
                continue
            parts.append(text[last : m.start()])
            last = m.end()
        parts.append(text[last:])
        return parts

    def __repr__(self) -> str:
        return f"LinearPattern({self.name!r})"


class LiteralSet:
    """Fixed strings looked for in one pass: which of them occur anywhere in a text (an RE2 set of escaped
    literals: one automaton walk, linear in the text, however many literals).

    Example:
        >>> s = LiteralSet(["ignore", "a.b"])
        >>> sorted(s.present("we ignore axb"))
        [0]
    """

    __slots__ = ("_set", "size")

    def __init__(self, literals: list[str]) -> None:
        opts = re2.Options()
        opts.max_mem = 64 << 20
        self._set = re2.Set.SearchSet(opts)
        for lit in literals:
            self._set.Add(re2.escape(lit))
        self._set.Compile()
        self.size = len(literals)
        """How many literals (their indices run from 0)."""

    def present(self, text: str) -> set[int]:
        """The indices of the literals that occur in ``text`` (as ``literal in text`` would say)."""
        meter.add(len(text))  # one engine call, counted, and a deadline checkpoint
        if self.size == 0 or not text:
            return set()
        return set(self._set.Match(_utf8(text)) or ())


REGISTRY: list[LinearPattern] = []
"""Every pattern compiled through :func:`compile` (what the linearity tests feed adversarial runs)."""


def compile(pattern: str, flags: int = 0, *, name: str = "") -> LinearPattern:
    """Compile ``pattern`` (Python syntax) for RE2 and register it.

    Raises:
        ValueError: RE2 cannot compile it (look-arounds, back-references, bad syntax).
    """
    p = LinearPattern(pattern, flags, name=name)
    REGISTRY.append(p)
    return p


def table(prefix: str, patterns: Mapping[str, str | tuple[str, int]], flags: int = 0) -> dict[str, LinearPattern]:
    """Compile a module's patterns, written as one table: each entry ``key: pattern`` (or ``key: (pattern, its own
    flags)``) through :func:`compile` with ``flags``, named ``prefix.key``; in the table's order.

    Example:
        >>> t = table("doc", {"port": r"\\bport\\s+(\\d+)", "host": (r"\\bhost\\b", 0)}, re.IGNORECASE)
        >>> t["port"].search("Listen on PORT 8080").group(1), t["port"].name, t["host"].flags
        ('8080', 'doc.port', 0)

    Raises:
        InvalidValue: RE2 cannot compile one of them (its name is said).
    """
    out: dict[str, LinearPattern] = {}
    for key, entry in patterns.items():
        pattern, own = entry if isinstance(entry, tuple) else (entry, flags)
        out[key] = compile(pattern, own, name=f"{prefix}.{key}")
    return out


SIMPLE: list[re.Pattern[str]] = []
"""The :mod:`re` patterns accepted by :func:`simple` (linear by form)."""


def _simple_item(item: tuple[Any, Any]) -> bool:
    op, arg = item
    name = str(op)
    if name in {"IN", "LITERAL", "NOT_LITERAL", "ANY", "CATEGORY"}:
        return True
    if name in {"MAX_REPEAT", "MIN_REPEAT"}:
        _lo, _hi, sub = arg
        return len(sub) == 1 and str(sub[0][0]) in {"IN", "LITERAL", "NOT_LITERAL", "ANY", "CATEGORY"}
    return False


def simple(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A :mod:`re` pattern that is one repeated character class, or an alternation of such (``\\w+|[^\\w\\s]``).

    Raises:
        ValueError: The pattern has any other shape (use :func:`compile`).
    """
    parsed = list(re._parser.parse(pattern, flags))  # type: ignore[attr-defined]
    branches: list[list[tuple[Any, Any]]] = [parsed]
    if len(parsed) == 1 and str(parsed[0][0]) == "BRANCH":
        branches = [list(b) for b in parsed[0][1][1]]
    if not all(len(b) == 1 and _simple_item(b[0]) for b in branches):
        raise InvalidValue(
            f"{pattern!r} is not a single repeated character class: compile it with admit._linear.compile"
        )
    p = re.compile(pattern, flags)
    SIMPLE.append(p)
    return p

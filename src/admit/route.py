"""Route: a deterministic, logged, overridable query classifier that picks a policy's class by the question's shape.

The router reads the question's shape before its words (:func:`question_shape`):

1. **Quoted text is masked.** Code blocks, inline code, and text in double, single or curly quotes become the
   placeholder ``"…"`` (:data:`QUOTE`): a quoted error message (``"error: either --foo or --bar must be
   given"``) or a quoted option name (```--compare-dest```) says nothing about what is asked, but a cue can still
   see that something was quoted (``says "…"``). A question that is one quote from end to end is read without
   its quote marks.
2. **Subordinate clauses are cut.** A clause or phrase opened by a subordinator (``after every backup``,
   ``when the payment fails``, ``for each user``, ``so that every query is logged``) runs to the next comma,
   semicolon or sentence end and is removed; what is left is the *main clause*. At a sentence's start a
   subordinator or a fronted phrase (``In Rails,``, ``For Stripe Connect,``) is cut only when a comma closes it,
   so ``When was 2.0 released?`` stays a question. ``before``, ``after``, ``since`` and ``until`` followed by a
   version (``before MySQL 5.7``, ``since v2``) or ``since when`` are not clauses: they are kept.
3. **Heads.** The main clause is split into sentences (at ``. ? ! ; :`` before a space); each one, with lead-ins
   such as ``Hi,``, ``please``, ``can you tell me`` or ``quick question:`` stripped, is a *head*.

A class of the policy file (:mod:`admit.policy`) has three lists of case-insensitive regular expressions, all run
with RE2 (linear time, :mod:`admit._linear`):

- ``head_cues`` match at the start of a head (``which \\w+s does``, ``list``, ``compare``);
- ``cues`` are searched anywhere in the main clause (``\\bvs\\b``, ``\\bfails?\\b``);
- ``exclude`` patterns, searched in the main clause, take the class out of the running (a how-to,
  ``how do I list all files``, is not a list question).

The classes are tried in descending priority (then by name); the first cue that matches wins and is recorded
with its pattern and where it matched (:class:`Route`). A question that matches nothing gets the default class.
The text preparation is set by ``[routing]`` in the policy file (:class:`RoutingSettings`): a policy file
without it gets the defaults, and an old file's ``cues`` keep working (they are searched in the main clause).

Example:
    >>> shape = question_shape('How do I verify the archive after every backup?')
    >>> shape.main
    'How do I verify the archive?'
    >>> question_shape('Why do I get "error: either --foo or --bar"?').masked
    'Why do I get "…"?'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from admit import _linear
from admit.errors import ConfigError
from admit.prune.settings import PruneSettings
from admit.question import Question, as_text

__all__ = [
    "QUOTE",
    "PruneSettings",
    "QuestionShape",
    "Route",
    "RouteCues",
    "Router",
    "RoutingSettings",
    "question_shape",
]

logger = logging.getLogger(__name__)

QUOTE = '"…"'
"""What a quoted span becomes in the masked question (a cue can name it: ``says "…"``)."""

SUBORDINATORS: tuple[str, ...] = (
    "after",
    "before",
    "when",
    "whenever",
    "while",
    "if",
    "unless",
    "until",
    "once",
    "because",
    "although",
    "whereas",
    "since",
    "so that",
    "such that",
    "in case",
    "as soon as",
    "whether",
    "during",
    r"(for|on|in|at|across) (each|every|all)",
)
"""The default clause openers (regular expressions): the words from one of these to the next comma, semicolon
or sentence end are cut from the main clause."""

FRONTED: tuple[str, ...] = (
    "in",
    "for",
    "on",
    "with",
    "using",
    "from",
    "under",
    "regarding",
    "about",
    "as",
    "per",
    "within",
    "inside",
    "at",
    "to",
    "by",
)
"""The default fronted-phrase openers: at a sentence's start, a phrase opened by one of these and closed by a
comma (``In Rails, ...``) is cut."""

LEAD_INS: tuple[str, ...] = (
    "hi",
    "hello",
    "hey",
    "thanks",
    "thank you",
    "ok",
    "okay",
    "so",
    "quick question",
    "question",
    "please",
    "pls",
    "kindly",
    "just",
    "also",
    "and",
    "but",
    r"(tell|show) me",
    r"i('d| would) like to know",
    r"i (want|need) to know",
    r"i('m| am)? wondering",
    r"i was wondering",
    r"i wonder",
    r"do you know",
    r"does anyone know",
    r"any idea",
)
"""The default lead-ins stripped from the start of each head (greetings, ``please``, ``tell me``)."""

REQUEST_VERBS: tuple[str, ...] = (
    "explain",
    "describe",
    "list",
    "enumerate",
    "name",
    "compare",
    "contrast",
    "summari[sz]e",
    "outline",
    "clarify",
    "tell",
    "show",
    "give",
    "walk",
    "help",
    "recommend",
    "suggest",
)
"""The default verbs of a polite request: ``can you`` / ``could you (please)`` before one of these is stripped, so
``Can you list the types?`` reads as ``list the types`` while ``Can you consolidate two loans?`` stays a yes/no
question."""

# Spans masked as QUOTE: fenced code, inline code, "double", “curly”, ‘curly’ and 'single' quotes (a single
# quote opens and closes only next to a non-word character, so "don't" and "users' files" are not quotes). Spans
# are bounded (a quote of at most 500 characters, a code block of at most 1,000): an opening mark that never
# closes then costs a bounded look-ahead, not a scan to the end of the text for every later match.
_QUOTED = _linear.compile(
    r"```.{0,1000}?```|`[^`\n]{1,500}`|\"[^\"\n]{1,500}\"|“[^”\n]{1,500}”|‘[^’\n]{1,500}’|\B'[^'\n]{1,500}?'\B",
    re.DOTALL,
    name="route.quoted",
)
_SENTENCE_END = _linear.compile(r"[.?!;:]+(?:\s+|$)", name="route.sentence_end")
_SPACES = _linear.compile(r"\s+", name="route.spaces")
# what follows before/after/since/until when it names a version (kept: "before MySQL 5.7", "since when")
_VERSIONISH = _linear.compile(r"\s*(?:when\b|(?:[\w.-]+\s+){0,2}v?\d)", re.IGNORECASE, name="route.versionish")
_KEEP_BEFORE_VERSION = frozenset({"before", "after", "since", "until"})
_TERMINATORS = ".?!;:"
MAX_HEADS = 8
"""``head_cues`` are tried at the start of the first this many sentences of the main clause (a question is rarely
longer; a pasted log of thousands of lines does not multiply the work by its line count)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutingSettings:
    """How the router prepares a question before its cues run (``[routing]`` in the policy file)."""

    mask_quoted: bool = True
    """Mask code, inline code and quoted text (as ``"…"``) before matching."""
    main_clause: bool = True
    """Cut subordinate clauses (``after every backup``) and fronted phrases (``In Rails,``) before matching."""
    subordinators: tuple[str, ...] = SUBORDINATORS
    """Clause openers (regular expressions, whole words): each opens a clause cut up to the next comma,
    semicolon or sentence end."""
    fronted: tuple[str, ...] = FRONTED
    """Openers of a fronted phrase, cut at a sentence's start when a comma closes it."""
    lead_ins: tuple[str, ...] = LEAD_INS
    """Lead-ins stripped from the start of each head (regular expressions, whole words)."""
    request_verbs: tuple[str, ...] = REQUEST_VERBS
    """Verbs of a polite request: ``can/could/would/will you (please)`` before one of them is stripped."""


@dataclass(frozen=True, slots=True)
class QuestionShape:
    """A question as the router reads it."""

    masked: str
    """The question with quoted text masked (:data:`QUOTE`)."""
    main: str
    """The main clause: the masked question without its subordinate clauses and lead-ins, one space between
    words."""
    heads: tuple[str, ...]
    """The main clause's first sentences (at most :data:`MAX_HEADS`), each with its lead-ins stripped
    (``head_cues`` match at their start)."""


def _alternation(items: Sequence[str], what: str) -> str:
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"[routing] {what} must be non-empty strings, got {item!r}.")
    return "|".join(f"(?:{item})" for item in items)


class _Shaper:
    """The compiled text preparation of one :class:`RoutingSettings`."""

    def __init__(self, settings: RoutingSettings) -> None:
        self.settings = settings
        tail = r"(?:[^,;:?!.\n]|[.:][^\s])*"  # to the next comma, semicolon, colon or sentence end
        try:
            self._sub = _linear.LinearPattern(
                rf"\b({_alternation(settings.subordinators, 'subordinators')})\b{tail}",
                re.IGNORECASE,
                name="route.subordinate",
            )
            self._front = _linear.LinearPattern(
                rf"\b(?:{_alternation(settings.fronted, 'fronted')})\b(?:[^,;:?!.\n]|\.\S)*,",
                re.IGNORECASE,
                name="route.fronted",
            )
            self._lead = _linear.LinearPattern(
                rf"(?:(?:{_alternation(settings.lead_ins, 'lead_ins')})\b[\s,:!.]*)+",
                re.IGNORECASE,
                name="route.lead_in",
            )
            verbs = _alternation(settings.request_verbs, "request_verbs")
            self._polite = _linear.LinearPattern(
                rf"(?:can|could|would|will) you,? (?:please )?({verbs})\b",
                re.IGNORECASE,
                name="route.polite",
            )
        except ValueError as exc:
            raise ConfigError(f"[routing]: {exc}") from exc

    def mask(self, question: str) -> str:
        """Replace quoted spans by :data:`QUOTE`; a question that is one quote from end to end loses its quote
        marks only."""
        first = len(question) - len(question.lstrip())
        last = len(question.rstrip(" \t\n?.!"))  # only spaces and end punctuation after this

        def repl(m: _linear.Match) -> str:
            whole = m.start() == first and m.end() >= last
            return str(m.group(0)).strip("`\"'“”‘’") if whole else QUOTE

        return _QUOTED.sub(repl, question)

    def _at_sentence_start(self, text: str, pos: int) -> bool:
        before = text[max(0, pos - 8) : pos].rstrip()
        return not before or before[-1] in _TERMINATORS

    def cut(self, text: str) -> str:
        """Remove subordinate clauses and fronted phrases."""
        spans: list[tuple[int, int]] = []
        for m in self._front.finditer(text):
            if self._at_sentence_start(text, m.start()):
                spans.append((m.start(), m.end()))
        for m in self._sub.finditer(text):
            start, end = m.start(), m.end()
            word = str(m.group(1)).lower()
            if word in _KEEP_BEFORE_VERSION and _VERSIONISH.match(text, m.end(1)):
                continue
            if self._at_sentence_start(text, start):
                if text[end : end + 1] not in (",", ";"):
                    continue  # "When was 2.0 released?" is the question itself
                end += 1
            spans.append((start, end))
        if not spans:
            return text
        spans.sort()
        out: list[str] = []
        last = 0
        for start, end in spans:
            if start >= last:
                out.append(text[last:start])
                last = end
            elif end > last:
                last = end
        out.append(text[last:])
        return "".join(out)

    def _strip_lead(self, body: str) -> str:
        """``body`` without its lead-ins and the ``can you`` of a polite request (a bounded number of rounds)."""
        for _ in range(3):
            start = body
            lead = self._lead.match(body)
            if lead is not None and lead.end() > 0:
                body = body[lead.end() :].strip(" ,")
            polite = self._polite.match(body)
            if polite is not None:
                body = body[polite.start(1) :]
            if body == start:
                break
        return body

    def shape(self, question: str) -> QuestionShape:
        """Mask, cut, split and strip ``question``."""
        masked = self.mask(question) if self.settings.mask_quoted else question
        main = self.cut(masked) if self.settings.main_clause else masked
        heads: list[str] = []
        last = 0
        sentences: list[tuple[str, str]] = []
        for m in _SENTENCE_END.finditer(main):
            sentences.append((main[last : m.start()], main[m.start() : m.end()].strip()))
            last = m.end()
        sentences.append((main[last:], ""))
        parts: list[str] = []
        for body, end in sentences:
            body = _SPACES.sub(" ", body).strip(" ,")
            if self.settings.main_clause and len(heads) < MAX_HEADS:
                body = self._strip_lead(body)
            if body:
                if len(heads) < MAX_HEADS:
                    heads.append(body)
                parts.append(body + end)
        return QuestionShape(masked=masked, main=" ".join(parts), heads=tuple(heads))


_DEFAULT_SHAPER: _Shaper | None = None


def question_shape(question: str, settings: RoutingSettings | None = None) -> QuestionShape:
    """The question as the router reads it: masked, cut to its main clause, split into heads."""
    global _DEFAULT_SHAPER
    if settings is None or settings == RoutingSettings():
        if _DEFAULT_SHAPER is None:
            _DEFAULT_SHAPER = _Shaper(RoutingSettings())
        return _DEFAULT_SHAPER.shape(question)
    return _Shaper(settings).shape(question)


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteCues:
    """The routing part of one class of a policy file."""

    name: str
    """The class name."""
    priority: int = 0
    """Higher is tried first."""
    cues: tuple[str, ...] = ()
    """Searched anywhere in the main clause."""
    head_cues: tuple[str, ...] = ()
    """Matched at the start of a head."""
    exclude: tuple[str, ...] = ()
    """Searched in the main clause; a match takes the class out of the running."""


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
    where: Literal["head", "main", ""] = ""
    """Where the cue matched: at a head's start (a ``head_cues`` pattern) or in the main clause (``cues``)."""

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "query_class": self.query_class,
            "cue": self.cue,
            "pattern": self.pattern,
            "overridden": self.overridden,
            "where": self.where,
        }


_Compiled = tuple[str, _linear.LinearPattern, str]


class Router:
    """Compiled cues of a policy file's classes, tried in descending priority (then by name)."""

    def __init__(
        self,
        classes: Iterable[RouteCues | tuple[str, int, Iterable[str]]],
        *,
        default_class: str,
        settings: RoutingSettings | None = None,
    ) -> None:
        """Compile each class's cues (a :class:`RouteCues`, or ``(name, priority, cues)``); a bad pattern is a
        :class:`~admit.errors.ConfigError` naming it."""
        self.default_class = default_class
        self.settings = settings or RoutingSettings()
        self._shaper = _Shaper(self.settings)
        specs = [
            c if isinstance(c, RouteCues) else RouteCues(name=c[0], priority=c[1], cues=tuple(c[2])) for c in classes
        ]
        specs.sort(key=lambda c: (-c.priority, c.name))
        self.names = frozenset(c.name for c in specs)
        self._classes: tuple[tuple[str, tuple[_Compiled, ...], tuple[_Compiled, ...], tuple[_Compiled, ...]], ...]
        self._classes = tuple(
            (
                c.name,
                self._compile(c.name, c.head_cues, "head cue"),
                self._compile(c.name, c.cues, "cue"),
                self._compile(c.name, c.exclude, "exclude pattern"),
            )
            for c in specs
        )

    @staticmethod
    def _compile(name: str, patterns: Iterable[str], what: str) -> tuple[_Compiled, ...]:
        out: list[_Compiled] = []
        for pattern in patterns:
            if not isinstance(pattern, str):
                raise ConfigError(f"Bad {what} {pattern!r} in class {name!r}: not a string.")
            try:  # RE2: a cue is matched against outside text (the question) in linear time
                out.append((name, _linear.LinearPattern(pattern, re.IGNORECASE, name=f"route.{name}"), pattern))
            except ValueError as exc:
                raise ConfigError(f"Bad {what} {pattern!r} in class {name!r}: {exc}") from exc
        return tuple(out)

    def shape(self, question: str) -> QuestionShape:
        """The question as this router reads it."""
        return self._shaper.shape(question)

    def classify(self, question: str | Question, *, override: str | None = None) -> Route:
        """Pick the class for ``question`` (its text or the request's record: the router reads the text's shape
        under this policy's routing settings); ``override`` (a class name) wins and is logged as such."""
        if override:
            if override not in self.names:
                raise ConfigError(f"Unknown query_class {override!r}; known: {', '.join(sorted(self.names))}.")
            route = Route(query_class=override, cue="override", overridden=True)
        else:
            route = self._route(self._shaper.shape(as_text(question)))
        logger.debug(
            "route: class=%s cue=%r pattern=%r where=%s overridden=%s",
            route.query_class,
            route.cue,
            route.pattern,
            route.where,
            route.overridden,
        )
        return route

    def _route(self, shape: QuestionShape) -> Route:
        for name, heads, cues, exclude in self._classes:
            if any(rx.search(shape.main) for _, rx, _ in exclude):
                continue
            for _, rx, pattern in heads:
                for head in shape.heads:
                    m = rx.match(head)
                    if m is not None and m.end() > 0:
                        return Route(query_class=name, cue=str(m.group(0)).strip(), pattern=pattern, where="head")
            for _, rx, pattern in cues:
                m = rx.search(shape.main)
                if m is not None:
                    return Route(query_class=name, cue=str(m.group(0)).strip(), pattern=pattern, where="main")
        return Route(query_class=self.default_class, cue="default")

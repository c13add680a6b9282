"""The question, read once per request: one typed record (:class:`Question`) that the stages take instead of the
string.

What a stage needs to know about a question (its words, content terms, the names and identifiers it writes, the
script it is written in, the releases it names) is read here, once, and handed on. A stage that needs a new
reading adds it to the record, so one rule serves every stage (STYLE §11).

**The release a question names** has one rule (:func:`release_of`), which rerank (the section titled with the
asked release ranks first), the knowledge base (the release-candidate query, :meth:`admit.kb.store.Store.
release_records`), the setwise pruner (a section naming an asked release is graded up) and answerability all
read:

- a release is a run of word characters, dots, ``*`` and ``-`` (at most 32 characters) that is a dotted number
  (``4.1``, ``3.2.0``, ``v1.4.2``), a major written with a ``v`` (``v4``), or a line (``4.x``, ``4.*``);
- a pre-release or post-release suffix is part of the last number (``1.2.4rc1`` -> ``("1", "2", "4rc1")``,
  ``1.2.4-beta`` -> ``("1", "2", "4b")``): it names its own release, never ``1.2.4``;
- an asked release names every release it is a prefix of (``3.2`` names ``3.2.0`` and ``3.2.1``; ``v4`` and
  ``4.x`` name every ``4.*``), and a release written shorter with zeros left out (``4.1`` for ``4.1.0``)
  (:func:`release_matches`).

The scan is linear in the question: each run is read once and matched against a bounded pattern, and a passage's
releases are checked against the asked ones by set look-ups (:func:`names_asked`), whatever the number asked.

Example:
    >>> q = read_question("What changed in v1.2.4rc1 and 3.2?")
    >>> q.releases
    (('1', '2', '4rc1'), ('3', '2'))
    >>> q.names_release(("3", "2", "0")), q.names_release(("1", "2", "4"))
    (True, False)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from admit import _linear
from admit import _text as tx
from admit._lru import LRU
from admit.errors import RequestError
from admit.types import MAX_QUESTION_CHARS

__all__ = [
    "ASKS_HOWTO",
    "Question",
    "Release",
    "as_text",
    "names_asked",
    "read_question",
    "release_matches",
    "release_of",
    "release_runs",
    "release_text",
    "releases_in",
]

Release = tuple[str, ...]
"""A release as its parts: ``"4.1.0"`` -> ``("4", "1", "0")``, ``"v4"`` and ``"4.x"`` -> ``("4",)``,
``"1.2.4rc1"`` -> ``("1", "2", "4rc1")``."""

# a release: "4.1.0", "v4", "4.x"; a pre-release or post-release suffix ("1.2.4a1", "1.2.4-rc.1", "1.2.4.post1")
# is part of the last number, so "1.2.4a1" is its own release, never "1.2.4"
_VERSION_TOKEN = _linear.compile(
    r"^[vV]?(\d+(?:\.(?:\d+|[xX*]))+)(?:[-.]?(a|b|c|rc|alpha|beta|pre|preview|dev|post)\.?(\d*))?$|^[vV](\d+)$",
    re.IGNORECASE,
    name="question.release_token",
)
_SUFFIX = {"alpha": "a", "beta": "b", "c": "rc", "preview": "pre"}
_RUN = _linear.compile(r"[\w.*-]+", name="question.release_run")
_RUN_MAX = 32
_DIGIT = _linear.simple(r"\d")

#: A question that asks how to do something: "How do I ...", "how can we ...", "How to ..." (at its start); what
#: the answerability reader calls ``steps`` and the rules' "a how-to question with no step among the evidence".
ASKS_HOWTO = _linear.compile(
    r"^\s*how\s+(do|can|should|would|could)\s+(i|we|you|one)\b|^\s*how\s+to\b",
    re.IGNORECASE,
    name="question.asks_howto",
)


def release_runs(text: str) -> list[str]:
    """The runs of ``text`` (NFC) a release may be written in: word characters, dots, ``*`` and ``-``
    (``v4.1.0``, ``4.x``, ``1.2.4-rc.1``); :func:`release_of` reads each."""
    return [m.group(0) for m in _RUN.finditer(tx.nfc(text))]


def release_of(token: str) -> Release | None:
    """The release one run of text names (:data:`Release`), or ``None``: ``"4.1.0"`` -> ``("4", "1", "0")``,
    ``"v4"`` -> ``("4",)``, ``"4.x"`` -> ``("4",)``, ``"1.2.4rc1"`` -> ``("1", "2", "4rc1")`` (a pre-release is its
    own release: never ``1.2.4``), ``"4.x-rc1"`` -> ``None``."""
    t = token.strip(".-").lower()
    if len(t) > _RUN_MAX or _DIGIT.search(t) is None:
        return None
    m = _VERSION_TOKEN.match(t)
    if m is None:
        return None
    if m.group(4):
        return (str(int(m.group(4))),)
    out: list[str] = []
    for p in m.group(1).split("."):
        if p in ("x", "*"):
            break  # "4.x": every 4 release
        out.append(str(int(p)))
    if m.group(2):
        if len(out) != len(m.group(1).split(".")):
            return None  # "4.x-rc1" names no release
        out[-1] += _SUFFIX.get(m.group(2), m.group(2)) + (m.group(3) or "")
    return tuple(out) or None


def releases_in(text: str, *, bare_dotted: bool = True) -> tuple[Release, ...]:
    """The releases a text names, in order of first mention (:func:`release_of` on each run).

    ``bare_dotted``: whether ``4.1`` (no ``v``) counts; a question's does, a passage's only in a title or a
    heading, where a decimal number is rarely meant (``v4.1`` and three parts always count).
    """
    out: dict[Release, None] = {}
    for tok in release_runs(text):
        if len(tok) > _RUN_MAX:
            continue
        v = release_of(tok)
        if v is None:
            continue
        if not bare_dotted and not tok.lower().startswith("v") and len(v) < 3:
            continue
        out[v] = None
    return tuple(out)


def release_matches(have: Release, asked: Release) -> bool:
    """Whether a text naming ``have`` names the asked release: ``asked`` is a prefix of it (``3.2`` names
    ``3.2.0``), or ``have`` is ``asked`` written shorter with zeros left out (``4.1`` for ``4.1.0``)."""
    if have[: len(asked)] == asked:
        return True
    return len(have) < len(asked) and asked[: len(have)] == have and all(p == "0" for p in asked[len(have) :])


def names_asked(have: Release, asked: frozenset[Release], longest: int) -> Release | None:
    """The release of ``asked`` (whose longest release has ``longest`` parts) that a text naming ``have`` names
    (:func:`release_matches`; the longest such), else ``None``: set look-ups, so the work does not grow with the
    number asked."""
    for i in range(len(have), 0, -1):
        if have[:i] in asked:
            return have[:i]
    for j in range(1, longest - len(have) + 1):
        padded = have + ("0",) * j
        if padded in asked:
            return padded
    return None


def release_text(r: Release) -> str:
    """A release written dotted (``("1", "2", "4rc1")`` -> ``"1.2.4rc1"``, ``("4",)`` -> ``"4"``)."""
    return ".".join(r)


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """A question read once (:func:`read_question`): what every stage reads of it."""

    text: str
    """The question as asked."""
    words: tuple[str, ...]
    """Lower-cased word tokens (NFC, in order, repeats kept: :func:`admit._text.words`)."""
    content_terms: tuple[str, ...]
    """The words without stop words and one-letter words (digits kept), in order, unstemmed
    (:func:`admit._text.content_tokens`)."""
    names: frozenset[str]
    """The tokens written capitalised (names, in any case the question writes them: lower-cased here) or numbers,
    stop words aside (:func:`admit._text.capitalised_tokens`)."""
    identifiers: frozenset[str]
    """Exact identifiers: letter-digit codes (``E4012``), UPPER_SNAKE names, dotted releases of three or four
    parts (:func:`admit._text.identifiers`)."""
    script: str | None
    """The script MiniLM cannot read the question is mostly written in (``CJK``, ``THAI`` ...), else ``None``
    (:func:`admit._text.unreadable_script`)."""
    releases: tuple[Release, ...]
    """The releases the question names, in order of first mention (the module's one rule)."""
    _asked: frozenset[Release] = field(default=frozenset(), repr=False, compare=False)
    _longest: int = field(default=0, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Index the releases for :meth:`names_release`."""
        object.__setattr__(self, "_asked", frozenset(self.releases))
        object.__setattr__(self, "_longest", max((len(r) for r in self.releases), default=0))

    def __str__(self) -> str:
        """The question as asked."""
        return self.text

    @property
    def release_strings(self) -> tuple[str, ...]:
        """The releases written dotted (:func:`release_text`), in order."""
        return tuple(release_text(r) for r in self.releases)

    def names_release(self, have: Release) -> bool:
        """Whether a text naming ``have`` names a release this question asks about (:func:`release_matches`)."""
        return bool(self._asked) and names_asked(have, self._asked, self._longest) is not None

    def asked_in(self, releases: Iterable[Release]) -> Release | None:
        """The first of ``releases`` (a passage's) that names an asked release, else ``None``."""
        for r in releases:
            if self.names_release(r):
                return r
        return None

    def asked_for(self, releases: Iterable[Release]) -> Release | None:
        """The asked release the first of ``releases`` (a passage's) to name one names, else ``None``."""
        if not self._asked:
            return None
        for r in releases:
            hit = names_asked(r, self._asked, self._longest)
            if hit is not None:
                return hit
        return None


def _read(text: str) -> Question:
    return Question(
        text=text,
        words=tuple(tx.words(text)),
        content_terms=tuple(tx.content_tokens(text)),
        names=frozenset(tx.capitalised_tokens(text)),
        identifiers=frozenset(tx.identifiers(text)),
        script=tx.unreadable_script(text),
        releases=releases_in(text),
    )


_READ: LRU[str, Question] = LRU(128)
#: Every question a face accepts (:data:`admit.types.MAX_QUESTION_CHARS`) is remembered, so a stage handed the text
#: of a long one does not read it again (a 15 KB question of spaces was read 14 times over HTTP); the memo holds at
#: most 128 x 20 KB of questions and their readings. A longer one is read each time it is handed on as text.
_MEMO_CHARS = MAX_QUESTION_CHARS


def read_question(question: str | Question) -> Question:
    """The question's record: ``question`` itself when it is one, else the text read (remembered per text up to
    :data:`_MEMO_CHARS` characters, so a stage handed the string by an outside caller gets the record the request
    built)."""
    if isinstance(question, Question):
        return question
    if not isinstance(question, str):
        raise RequestError(f"`question` must be a string, got {type(question).__name__}.", field="question")
    hit = _READ.get(question)
    if hit is not None:
        return hit
    q = _read(question)
    if len(question) <= _MEMO_CHARS:
        _READ.put(question, q)
    return q


def as_text(question: str | Question) -> str:
    """The question's text (a string as it is)."""
    return question.text if isinstance(question, Question) else question

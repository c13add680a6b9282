"""Grading rules on top of the fitted setwise model: what the trees cannot see from within one list.

The trees grade *relative* to the list (its best chunk is "essential" whatever it says). These rules add what
a user's own product needs, each recorded in the chunk's reason:

- **Unrelated floor** (:func:`unrelated`): a chunk that shares no content word with the question and whose best
  passage is barely similar to it (cosine below :data:`UNRELATED_DENSE`) is graded 1 whatever its rank, so a
  list of one to three is graded, not waved through, and a deep list of recipes keeps the one relevant chunk.
- **Versions as people write them** (:func:`asked_versions`, :func:`version_hits`): "4.1", "v4", "4.x",
  "<product> 4.2" name the releases ``4.1.0``, ``4.x.y``; a chunk whose title or a heading names an asked release
  is graded at least 4, one whose title or headings name only other releases at most 2 (when some chunk names
  an asked one). A comparison of two releases keeps both sides. A release is read whole with its suffix
  (``1.2.4rc1`` is not ``1.2.4``); a subsection under a changelog entry's heading (:func:`release_heading`) is that
  release's, and the registry's version does not spare another release's entry; a "New in version 2.3" note
  (:func:`version_notes`) names its release.
- **List-all and tables** (:func:`asks_for_all`, :func:`structured`): for a question asking for all, every, a
  list, or which ... are there, a chunk that is a table or a list (three or more rows or items) naming the asked
  kind is graded as the answer (5).
- **Enumerations and comparisons**: the conditions are in :mod:`.lists`.
- **A part named by its heading** (:func:`named_headings`): "according to the balance sheet", "in the cash flow
  statement": the one chunk whose opening heading line the question names is graded at least 3 (kept at the
  default threshold).
- **A rare term the chunk lacks** (:func:`acronym_misses`): a question naming an acronym (``EBITDA``, ``SLA``)
  that some chunks of the list hold: a chunk that never holds it is not graded "essential" (5 becomes 4).
- **Scripts MiniLM cannot read** (:func:`admit._text.unreadable_script`): when the question is in
  one, the chunks are graded by character bigrams shared with the question; a chunk in one under an English
  question is passed through at grade 3 with the reason recorded. Never graded backwards.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from admit import _linear
from admit import _text as tx
from admit._text import char_bigrams, nfc, unreadable_script
from admit.question import Question, read_question, release_matches, release_of, release_runs, releases_in

__all__ = [
    "UNRELATED_DENSE",
    "UNRELATED_MAX_PROB",
    "acronym_misses",
    "asked_versions",
    "asks_for_all",
    "bigram_grades",
    "list_kind",
    "named_headings",
    "release_heading",
    "script_of",
    "stem",
    "structured",
    "unrelated",
    "version_hits",
    "version_notes",
    "versions_in",
]

#: Below this cosine (MiniLM, best passage) and with no content word of the question, a chunk is unrelated.
UNRELATED_DENSE = 0.12
#: ... unless the model gives it at least this probability of being needed (a bridge paragraph).
UNRELATED_MAX_PROB = 0.2

# a line that is only a release: "1.2.4", "Version 1.2.4 (2023-05-01)", "v0.28.1 - May 3, 2021", "Release 4.2.0"
_RELEASE_WORDS = frozenset(
    (
        "version", "release", "released", "changes", "changelog", "unreleased", "v", "jan", "feb", "mar", "apr",
        "may", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "january", "february", "march", "april",
        "june", "july", "august", "september", "october", "november", "december",
    )
)  # fmt: skip
_PATTERNS = _linear.table(
    "setwise",
    {
        # Sphinx's "New in version 2.3." / "Changed in version 2.3:" / "Deprecated since version 2.3" notes and
        # their reST directives; not a release note's "deprecated in 1.7" (measured on rhdh_docs: it names what
        # another release did)
        "version_note": (
            r"\b(?:(?:new|added|changed|removed)\s+in|deprecated\s+since)\s+version\s+([vV]?\d+(?:\.\d+)+[\w.-]*)"
            r"|\.\.\s+version(?:added|changed)::\s*([vV]?\d+(?:\.\d+)+[\w.-]*)"
        ),
        "list_all": (
            r"\b(list|enumerate|name)\s+(all|every|each|the)\b|\ball\s+(the\s+|of\s+the\s+)?(available\s+"
            r"|supported\s+)?\w+|\bwhich\s+\w+(\s+\w+)?\s+(are|exist|is)\s+there\b"
            r"|\bwhat\s+\w+(\s+\w+)?\s+are\s+there\b|\bhow\s+many\b|\bwhat\s+are\s+(all\s+)?the\b"
        ),
    },
    re.IGNORECASE,
)
_NOTE, _ALL_CUE = _PATTERNS["version_note"], _PATTERNS["list_all"]
_CUE_WORDS = frozenset(
    (
        "list", "enumerate", "name", "names", "all", "every", "each", "available", "supported", "which", "what",
        "how", "many", "there", "exist", "exists",
    )
)  # fmt: skip


def _version_of(token: str) -> tuple[str, ...] | None:
    """The release one run names: :func:`admit.question.release_of` (the one rule)."""
    return release_of(token)


def versions_in(text: str, *, bare_dotted: bool = True) -> set[tuple[str, ...]]:
    """Releases a text names (:func:`admit.question.releases_in`): ``4.1.0`` -> ``("4", "1", "0")``, ``v4`` ->
    ``("4",)``, ``4.x`` -> ``("4",)``.

    ``bare_dotted``: whether ``4.1`` (no ``v``) counts; a question's does, a passage's only in a title or a
    heading (:func:`version_hits`), where a decimal number is rarely meant.
    """
    return set(releases_in(text, bare_dotted=bare_dotted))


def asked_versions(question: str | Question) -> set[tuple[str, ...]]:
    """The releases a question names, as prefixes (``"4.1"`` asks for every ``4.1.*``): its record's."""
    return set(read_question(question).releases)


def release_heading(line: str) -> bool:
    """Whether a heading is only a release (a changelog entry's): ``"1.2.4"``, ``"Version 1.2.4 (2023-05-01)"``,
    ``"## v0.28.1 - May 3, 2021"``, ``"Release 4.2.0"``; not ``"Upgrading from 4.1"``."""
    runs = [r.strip(".-") for r in release_runs(nfc(line).lstrip("#"))]
    named = False
    for r in runs:
        if not r:
            continue
        if _version_of(r) is not None and ("." in r or r.lower().startswith("v")):
            named = True
        elif not (r.lower() in _RELEASE_WORDS or r.replace("-", "").replace("/", "").isdigit()):
            return False
    return named


def _heads(title: str, text: str) -> tuple[str, str, bool]:
    """(where a section names the release it is about: the title's last part, the innermost release heading of
    the title's path below the document's title, the headings and a short first line; the rest of the title: the
    document a section belongs to; whether the section sits under a release heading: a changelog entry).

    ``Changelog › Version 1.2.4 › Bug fixes``: the fixes are 1.2.4's."""
    lines = [ln.strip() for ln in nfc(text).splitlines() if ln.strip()]
    heads = [
        ln
        for ln in lines
        if ln.startswith("#")
        or (len(ln) < 80 and (ln.lower().startswith(("version", "release")) or release_heading(ln)))
    ]
    parts = [p.strip() for p in nfc(title).replace(" › ", "\n").split("\n") if p.strip()]
    first = lines[:1] if lines and len(lines[0]) < 80 else []
    own = parts[-1:]
    doc = parts[:-1]
    inner = [k for k in range(1, len(parts) - 1) if release_heading(parts[k])]
    if inner:
        own.append(parts[inner[-1]])
        doc = [p for k, p in enumerate(parts[:-1]) if k != inner[-1]]
    release = bool(inner) or any(release_heading(h) for h in [*own[:1], *first, *heads])
    return "\n".join([*own, *first, *heads]), "\n".join(doc), release


def version_notes(text: str) -> set[tuple[str, ...]]:
    """The releases a text's "New in version 2.3" / "Changed in version 2.3" notes (and ``.. versionadded::``)
    name."""
    out: set[tuple[str, ...]] = set()
    for m in _NOTE.finditer(nfc(text)):
        v = _version_of(m.group(1) or m.group(2) or "")
        if v is not None:
            out.add(v)
    return out


def _matches(have: tuple[str, ...], asked: tuple[str, ...]) -> bool:
    return release_matches(have, asked)


def version_hits(
    question: str | Question, titles: Sequence[str], texts: Sequence[str], versions: Sequence[str] = ()
) -> tuple[list[bool], list[bool], set[tuple[str, ...]]]:
    """(the section names an asked release, the section names only other releases, the asked releases).

    A section names a release in its own heading (the title's last part, the innermost release heading of its
    path, a ``#`` heading, a short first line) or in a "New in version 2.3" note; a release named only by the
    document's title (``Installing Ferrule 4.1 › Requirements``) neither lifts nor caps the section: the document is
    about that release, the section may be about anything in it. The registry's version (what the whole site is
    of) spares a section whose heading names another release, unless that heading is only a release (a changelog
    entry: ``0.28.1`` in the 1.2.4 documentation is 0.28.1's, not 1.2.4's). The asked releases are the question
    record's (:attr:`admit.question.Question.releases`), matched by set look-ups
    (:meth:`~admit.question.Question.names_release`): linear in the question however many it names.
    """
    q = read_question(question)
    asked = set(q.releases)
    n = len(texts)
    if not asked:
        return [False] * n, [False] * n, asked
    hit, other = [False] * n, [False] * n
    for j, (title, text) in enumerate(zip(titles, texts, strict=True)):
        own, doc, release = _heads(title, text)
        named = versions_in(own)
        if q.asked_in(named | version_notes(text)) is not None:
            hit[j] = True
            continue
        if not named:
            continue
        by_title = q.asked_in(versions_in(doc)) is not None
        reg = versions[j].strip() if j < len(versions) and versions[j] else ""
        by_registry = bool(reg) and q.asked_in(versions_in("v" + reg.lstrip("vV"))) is not None
        other[j] = not by_title and not (by_registry and not release)
    return hit, other, asked


def asks_for_all(question: str) -> bool:
    """Whether the question asks for every item of a kind ("list all", "name every", "which ... are there"); "every"
    inside a clause ("verify the archive after every backup") does not ask for a list."""
    return _ALL_CUE.search(question) is not None


def stem(w: str) -> str:
    """The toolkit's stem without ``ies`` (:func:`admit._text.stem`): what these rules were measured with."""
    return tx.stem(w, ies=False)


# letters only: a code with digits (E4012, FR-202) is an identifier, which the identifier rule reads
_ACRONYM = _linear.compile(r"\b[A-Z][A-Z&]{1,7}s?\b", name="setwise.acronym")


def opening_heading(text: str) -> str | None:
    """A chunk's opening heading: its first non-empty line when that is short (at most 12 words, markdown ``#``
    marks stripped) and not a sentence, followed by more text."""
    lines = [ln.strip() for ln in nfc(text).splitlines() if ln.strip()]
    if len(lines) < 2:
        return None
    head = lines[0].lstrip("#").strip()
    if not head or len(head.split()) > 12 or head.endswith((".", ",", ";")):
        return None
    return head


def named_headings(question: str, texts: Sequence[str]) -> list[str | None]:
    """Per chunk, its opening heading when the question names it (two or more of its content words, and at least
    two thirds of them, in the question in the heading's order) and no other chunk's heading is named, else
    ``None``. Measured on the documentation training files: of the chunks it names, 60% are required on Doc2Dial,
    79% on RestBench (against 10% of all chunks), 10% on MedQuAD (templated headings; 58 chunks in 10,120)."""
    q = [stem(w) for w in read_question(question).content_terms]
    out: list[str | None] = []
    heads = [opening_heading(t) for t in texts]
    for h in heads:
        words = [stem(w) for w in tx.content_tokens(h)] if h else []
        named = [w for w in words if w in q]
        ok = len(named) >= 2 and 3 * len(named) >= 2 * len(words) and _in_order(named, q)
        out.append(h if ok else None)
    if sum(h is not None for h in out) != 1:  # one part named; several: the heading names a kind, not a part
        return [None] * len(texts)
    return out


def _in_order(words: Sequence[str], within: Sequence[str]) -> bool:
    it = iter(within)
    return all(any(w == x for x in it) for w in words)


def acronym_misses(question: str, texts: Sequence[str]) -> tuple[list[bool], str]:
    """(per chunk: lacks every acronym the question names that other chunks of the list hold, the acronyms)."""
    first = question.split()[:1]
    asked = {m.rstrip("s") for m in _ACRONYM.findall(nfc(question)) if m not in first and len(m.rstrip("s")) >= 2}
    asked -= {"I", "A", "OK"}
    if not asked:
        return [False] * len(texts), ""
    held = [asked & {w.rstrip("s") for w in _ACRONYM.findall(nfc(t))} for t in texts]
    present = set().union(*held) if held else set()
    if not present or all(held):
        return [False] * len(texts), ""
    return [not h for h in held], ", ".join(sorted(present))


def list_kind(question: str) -> set[str]:
    """The asked kind of a list-all question: its content words beyond the cue words, singular."""
    return {stem(w) for w in tx.content_tokens(question) if w not in _CUE_WORDS}


def structured(text: str) -> bool:
    """Whether a chunk is a table (three or more ``|`` rows) or a list (three or more items)."""
    rows = items = 0
    for raw in text.splitlines():
        ln = raw.strip()
        if ln.startswith("|") and ln.count("|") >= 2:
            rows += 1
        elif ln[:2] in ("- ", "* ", "+ ") or (ln[:1].isdigit() and ln[1:3] in (". ", ") ")):
            items += 1
        elif "\t" in raw and raw.count("\t") >= 1 and len(ln.split("\t")) >= 2:
            rows += 1
    return rows >= 3 or items >= 3


def unrelated(question: str, title: str, text: str, dense: float) -> bool:
    """The absolute floor: no content word of the question and a best-passage cosine below the floor."""
    if dense >= UNRELATED_DENSE:
        return False
    q = set(read_question(question).content_terms)
    if not q:
        return False
    return not (q & (set(tx.content_tokens(f"{title}\n{text}")) | set()))


def bigram_grades(question: str, texts: Sequence[str]) -> tuple[list[int], list[float]]:
    """Grades by the share of the question's character bigrams a chunk holds (for scripts MiniLM cannot read).

    The best chunk with any share is graded 5; the others by their share against it: at least 60% -> 4, 35% -> 3,
    15% -> 2, else 1; a chunk sharing nothing is 1.
    """
    qb = char_bigrams(question)
    # the bigrams of the unreadable script carry the question; a product name in Latin letters matches every page
    own = {b for b in qb if any(unreadable_script(ch) for ch in b)}
    qb = own or qb
    shares = [len(qb & char_bigrams(t)) / max(1, len(qb)) for t in texts]
    best = max(shares, default=0.0)
    out: list[int] = []
    for s in shares:
        if s <= 0 or best <= 0:
            out.append(1)
            continue
        r = s / best
        out.append(5 if r >= 0.999 else 4 if r >= 0.6 else 3 if r >= 0.35 else 2 if r >= 0.15 else 1)
    return out, shares


def script_of(text: str) -> str | None:
    """The unreadable script a text is in (see :func:`admit._text.unreadable_script`)."""
    if not text or max(text) < "\u0900" or _LETTER_FROM_DEVANAGARI.search(text) is None:
        return None  # no letter as far up as the first unreadable script: no letter-by-letter count needed
    return unreadable_script(text)


# a letter (or other non-digit alphanumeric) at or above U+0900, where the first script MiniLM cannot read
# begins (Devanagari; admit._text's ranges): one character class, linear
_LETTER_FROM_DEVANAGARI = _linear.simple(r"[^\W\d_\x00-\u08ff]+")

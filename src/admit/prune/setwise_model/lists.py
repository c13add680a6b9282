"""Enumerations and comparisons: what a "which <kind>" or "X vs Y" question needs from a chunk.

- **Enumerations** (:func:`enumerates_kind`): "Which compression algorithms does it support?" asks for a kind of
  thing (:func:`asked_kind`: the question's plural head noun, "algorithms", with its modifiers, "compression"); a
  chunk that enumerates things (:func:`enumeration`: list items, table rows, a definition list as text, a comma
  list of short names) led in or titled by that kind, or whose items hold a term the question names beside the
  kind, holds the answer's list.
- **Comparisons** (:func:`compared_terms`, :func:`holds_both`): "lz4 vs zstd", "difference between lz4 and zstd":
  a chunk naming both sides.
"""

from __future__ import annotations

import re

from admit import _linear
from admit import _text as tx
from admit._text import nfc
from admit.prune.setwise_model.rules import stem
from admit.question import Question, read_question

__all__ = ["asked_kind", "compared_terms", "enumerates_kind", "enumeration", "holds_both"]

# the head of "which/what <kind>" (after these words): "What are the supported compression algorithms?"
_KIND_SKIP = frozenset(
    (
        "are", "is", "the", "all", "of", "kinds", "kind", "types", "type", "sorts", "available", "supported", "valid",
        "possible", "different", "other", "main", "allowed", "accepted", "does", "do", "can",
    )
)  # fmt: skip
# words in s that are verbs or not a kind of thing after "which"/"what"
_NOT_KIND = frozenset(
    (
        "does", "has", "was", "is", "this", "its", "supports", "uses", "means", "needs", "requires", "works", "runs",
        "happens", "causes", "makes", "takes", "gives", "goes", "sets", "gets", "says", "versus", "status", "always",
        "us", "yes", "as", "his", "hers", "ours", "yours", "theirs", "less", "unless", "across", "whereas", "thus",
    )
)  # fmt: skip
# what follows a kind's head noun: "which algorithms does ...", "what options are ...", "the options for ..."
_AFTER_KIND = frozenset(
    (
        "does", "do", "did", "can", "could", "should", "would", "will", "may", "must", "are", "is", "were", "was",
        "have", "has", "for", "of", "in", "on", "to", "from", "with", "exist", "there", "supported", "available",
        "allowed", "accepted", "valid",
    )
)  # fmt: skip
# question words that name no subject: "which algorithms does it support", "what options are available"
_GENERIC = frozenset(
    (
        "support", "use", "used", "using", "have", "need", "needed", "required", "require", "available", "can",
        "get", "set", "make", "give", "provide", "offer", "list", "exist", "there", "specific", "different",
    )
)  # fmt: skip
# what a comma list holds between its items without being one: "use, for example, mermaid"
_FILLERS = frozenset(("for example", "e.g", "i.e", "etc", "for instance", "such as", "including"))
_PATTERNS = _linear.table(
    "setwise",
    {
        "list_item": (r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(.+)$", 0),
        "compare": (
            r"([\w.+#-]+)\s+(?:vs\.?|versus|compared\s+(?:to|with))\s+([\w.+#-]+)|\b(?:difference|differences|compare"
            r"|comparison)\s+(?:between\s+|of\s+)?([\w.+#-]+)\s+(?:and|with|to|vs\.?)\s+([\w.+#-]+)"
        ),
    },
    re.IGNORECASE,
)
_ITEM, _COMPARE = _PATTERNS["list_item"], _PATTERNS["compare"]


def asked_kind(question: str | Question) -> tuple[str, set[str]]:
    """The kind of thing a "which/what <kind>" question asks for, and its words, singular (:func:`stem`): "Which
    compression algorithms does it support?" -> ``("algorithms", {"compression", "algorithm"})``; ``("", set())``
    when the question names no plural kind ("What does it support?", "Which version is current?") or the plural
    is not the phrase's head ("which county shares a border", "what Teen Titans spinoff series": the head is
    followed by an auxiliary, a preposition or the question's end)."""
    toks = list(read_question(question).words)
    for i, w in enumerate(toks):
        if w not in ("which", "what"):
            continue
        rest = toks[i + 1 :]
        while rest and rest[0] in _KIND_SKIP:
            rest = rest[1:]
        for k, h in enumerate(rest[:3]):
            if h in tx.STOPWORDS:
                break
            after = rest[k + 1] if k + 1 < len(rest) else ""
            if (
                len(h) > 3
                and h.endswith("s")
                and not h.endswith(("ss", "us", "is"))
                and h not in _NOT_KIND
                and (not after or after in _AFTER_KIND)
            ):
                return h, {stem(x) for x in rest[: k + 1] if x not in tx.STOPWORDS}
    return "", set()


def _marked_items(lines: list[str]) -> tuple[list[str], int, str]:
    """List items and table rows (their first cell): the items, the line of the first, a table's header row."""
    items: list[str] = []
    first = -1
    header = ""
    for k, ln in enumerate(lines):
        m = _ITEM.match(ln)
        if m is not None:
            items.append(m.group(1))
        elif ln.startswith("|") and ln.count("|") >= 2:
            cells = [c.strip() for c in ln.strip("|").split("|")]
            if set("".join(cells)) <= set("-: "):
                continue
            if not header and not items:
                header = ln
                first = k
                continue
            items.append(cells[0])
        else:
            continue
        if first < 0:
            first = k
    return items, first, header


def _term_lines(lines: list[str]) -> tuple[list[str], int]:
    """Short term lines each followed by a longer description (a definition list as text), three or more."""
    terms = [
        k
        for k in range(len(lines) - 1)
        if 0 < len(lines[k].split()) <= 3
        and not lines[k].endswith((".", ":", "?", "!"))
        and len(lines[k + 1].split()) >= len(lines[k].split()) + 2
    ]
    if len(terms) >= 3:
        return [lines[k] for k in terms], terms[0]
    return [], -1


def _comma_list(lines: list[str]) -> tuple[list[str], int, str] | None:
    """The first comma list of three or more short names ("lz4, zstd, zlib and lzma"): its items, its line and
    what leads them in its sentence."""
    for k, ln in enumerate(lines):
        for sentence in ln.split(". "):
            body = sentence.rsplit(":", 1)[-1]
            pieces = [p.strip(" `'\"*().") for p in body.replace(" and ", ", ").replace(" or ", ", ").split(",")]
            pieces = [p for p in pieces if p and p.lower() not in _FILLERS]
            if len(pieces) >= 3 and len(pieces[0].split()) > 2:  # "Borg supports lz4, zstd, ...": "lz4"
                pieces[0] = pieces[0].split()[-1]
            if len(pieces) >= 3 and all(len(p.split()) <= 2 and len(p) <= 30 for p in pieces):
                return pieces, k, sentence[: sentence.find(pieces[0])]
    return None


def enumeration(text: str) -> tuple[list[str], str]:
    """(the items a chunk enumerates, the text that leads them in): three or more list items, table rows (their
    first cell), short term lines each followed by a longer description (a definition list as text), or a
    comma list of three or more short names ("lz4, zstd, zlib and lzma"); ``([], "")`` when it enumerates
    nothing. The lead is what precedes the first item (its last 300 characters) plus a table's header row."""
    lines = [ln.strip() for ln in nfc(text).splitlines() if ln.strip()]
    items, first, header = _marked_items(lines)
    if len(items) < 3:
        items, first = _term_lines(lines)
    if len(items) < 3:
        found = _comma_list(lines)
        if found is not None:
            items, first, header = found
    if len(items) < 3:
        return [], ""
    lead = "\n".join(lines[:first])[-300:]
    return items, f"{lead}\n{header}".strip()


def enumerates_kind(question: str, title: str, text: str) -> str | None:
    """The asked kind when a chunk enumerates things of the kind a "which/what <kind>" question asks for: the chunk
    enumerates (:func:`enumeration`), its title or the lines leading into the enumeration name the kind (its head
    noun or a modifier: "compression"), the chunk names the head noun ("algorithm") somewhere, and it holds at least
    half of the question's other content words (its subject; generic verbs such as "support" aside). Else ``None``.

    Measured on ``../shared/data`` (``scripts/rule_precision.py``): a list-all question ("how many", "all") is left to
    the list-all rule, and items holding a word of the question prove nothing (a town's "County, State, United
    States" under a question about counties)."""
    head, kind = asked_kind(question)
    if not kind:
        return None
    items, lead = enumeration(text)
    if not items:
        return None
    near = {stem(w) for w in tx.content_tokens(f"{title}\n{lead}")}
    body = {stem(w) for w in tx.content_tokens(f"{title}\n{text}")}
    if not (kind & near and stem(head) in body):
        return None
    # the list must be about the question's subject: the treatments of *this* disease, the parameters of *this*
    # call (measured on MedQuAD and API Zoo: a list of the right kind about another subject is the common miss)
    subject = {stem(w) for w in tx.content_tokens(question)} - kind - _GENERIC
    if subject and 2 * len(subject & body) < len(subject):
        return None
    return head


def compared_terms(question: str) -> tuple[str, str] | None:
    """The two sides of a comparison the question asks for ("lz4 vs zstd", "difference between lz4 and zstd",
    "zstd compared to lzma"), lower-cased; ``None`` when it asks for none."""
    m = _COMPARE.search(nfc(question))
    if m is None:
        return None
    a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    a, b = a.strip(".?!,").lower(), b.strip(".?!,").lower()
    if not a or not b or a == b or a in tx.STOPWORDS or b in tx.STOPWORDS:
        return None
    return a, b


def holds_both(terms: tuple[str, str], title: str, text: str) -> bool:
    """Whether a chunk names both compared terms (whole words, any case)."""
    have = set(tx.words(f"{title}\n{text}"))
    for t in terms:
        parts = tx.words(t)
        if not parts or not all(p in have for p in parts):
            return False
    return True

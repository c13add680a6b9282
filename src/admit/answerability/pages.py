"""The knowledge base's page names: a question that names a page of it, answered from other pages, is a near miss.

``admit adapt`` keeps the names of the knowledge base's pages (each chunk's title, lower-cased, a trailing
parenthesis dropped: "Counterparts (album)" names ``counterparts``) that read as a page's own subject, not the
knowledge base's: a name that the text of more than :data:`PAGE_NAME_MAX_SHARE` of its chunks (of other pages) holds
is the product's or the topic's
("MkDocs" on MkDocs' own docs), not one page's; nor is one common English word alone ("President").

A question names a page when it writes the name as a name (:func:`named_pages`: every word capitalised or a digit,
small joining words aside, and not the question's first word alone): "Which band released Counterparts?". When no
admitted chunk is from a page the question names, the evidence is about its neighbours, not about what is asked
(the verdict is capped at "unsure"), and when no retrieved candidate is from one either, the knowledge base's page
on it was not found: "not answered" (:func:`page_check`).

Measured on ``../shared/data`` with each file's passages as the knowledge base (``python
bench/bench_answer_lists.py --page-rule``, every list, every candidate admitted): with the gold chunks removed, the
rule says "not answered" to 59% of HotpotQA's lists and 44% of MuSiQue's; with them kept, to 0 of 199 and 1 of 200
(RHDH's questions name no page: it does not fire there).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from admit import _linear
from admit.answerability.terms import common_words

__all__ = [
    "PAGE_NAME_MAX_SHARE",
    "PAGE_NAME_MAX_WORDS",
    "PageCheck",
    "kb_page_names",
    "named_pages",
    "page_check",
    "page_name",
]

#: A page name held (as a phrase, in any case) by the text of more than this share of the knowledge base's chunks of
#: other pages names what the whole knowledge base is about, not one page ("mkdocs" is in 239 of MkDocs' 418
#: chunks): it is not kept.
PAGE_NAME_MAX_SHARE = 0.05
#: The longest page name kept, in words (longer titles are sentences, not names a question repeats).
PAGE_NAME_MAX_WORDS = 8
#: The fewest characters of a page name kept.
_MIN_CHARS = 3
#: Words a name may hold in lower case ("Lord of the Rings", "Ludwig van Beethoven").
_JOINING = frozenset(
    """of the a an and in on for to at by or from with as is vs into upon over under his her its their our your my
    de la le les du des van von der den del da di e y""".split()  # noqa: SIM905
)
_WORD = _linear.compile(r"\w+", name="answerability.page_word")
#: A word as the question writes it, with its hyphenated or possessive parts ("Bandar-e", "Hsiao-wen's"): the parts
#: are the name's words, written as the whole is.
_WRITTEN = _linear.compile("\\w+(?:['\u2019-]\\w+)*", name="answerability.page_written")
_TRAILING_PAREN = _linear.compile(r"\s*\([^()]{0,80}\)\s*$", name="answerability.page_paren")


def page_name(title: str) -> str:
    """A page's name as the knowledge base keeps it: lower-cased words of its title, a trailing parenthesis
    ("(album)", "(band)") dropped; ``""`` for no title."""
    if not title:
        return ""
    t = _TRAILING_PAREN.sub("", title[:300])
    return " ".join(w.lower() for w in _WORD.findall(t))


def kb_page_names(chunks: Iterable[tuple[str, str]], max_share: float = PAGE_NAME_MAX_SHARE) -> frozenset[str]:
    """The page names of a knowledge base's ``(title, text)`` chunks that name one page's subject (see the module):
    at least three characters with a letter, at most :data:`PAGE_NAME_MAX_WORDS` words, not one common English word
    alone ("President", :func:`~admit.answerability.terms.common_words`), whose text is held by at most
    ``max_share`` of the chunks of other pages."""
    rows = list(chunks)
    names = {page_name(t) for t, _ in rows}
    names = {
        n
        for n in names
        if len(n) >= _MIN_CHARS and any(ch.isalpha() for ch in n) and len(n.split()) <= PAGE_NAME_MAX_WORDS
    }
    common = common_words()  # a one-word page named by an everyday word ("President") is not what a name asks for
    names = {n for n in names if " " in n or n not in common}
    if not names:
        return frozenset()
    longest = max(len(n.split()) for n in names)
    held: dict[str, int] = dict.fromkeys(names, 0)
    for title, text in rows:
        words = [w.lower() for w in _WORD.findall(text)]
        seen: set[str] = {page_name(title)}  # a page's own chunks are not what makes its name the topic's
        for i in range(len(words)):
            for n in range(1, longest + 1):
                if i + n > len(words):
                    break
                span = " ".join(words[i : i + n])
                if span in held and span not in seen:
                    seen.add(span)
                    held[span] += 1
    limit = max(1.0, max_share * len(rows))
    return frozenset(n for n, k in held.items() if k <= limit)


def named_pages(question: str, names: Iterable[str] | frozenset[str]) -> tuple[str, ...]:
    """The page ``names`` the question writes as names (every word capitalised or a digit, joining words aside;
    the question's first word alone is no name), in order."""
    if not names:
        return ()
    pool = names if isinstance(names, frozenset) else frozenset(names)
    longest = max((len(n.split()) for n in pool), default=0)
    toks: list[str] = []
    for whole in _WRITTEN.findall(question[:2000]):
        parts = _WORD.findall(whole)
        # a part of a written word is written as the word is ("Hsiao-wen": both parts a name)
        toks += [parts[0], *(p[:1].upper() + p[1:] if whole[0].isupper() else p for p in parts[1:])]
    low = [t.lower() for t in toks]
    out: dict[str, None] = {}
    for i in range(len(toks)):
        for n in range(1, longest + 1):
            if i + n > len(toks):
                break
            span = " ".join(low[i : i + n])
            if span not in pool:
                continue
            words = toks[i : i + n]
            if not _as_name(words) or (i == 0 and n == 1):
                continue
            out[span] = None
    return tuple(out)


def _as_name(words: Sequence[str]) -> bool:
    def cap(w: str) -> bool:
        return w[0].isupper() or w[0].isdigit()

    return cap(words[0]) and cap(words[-1]) and all(cap(w) or w.lower() in _JOINING for w in words)


@dataclass(frozen=True, slots=True)
class PageCheck:
    """The pages a question names that no admitted chunk is from (``missing``), and of those, the ones no retrieved
    candidate is from either (``absent``: all of them, or none when a candidate is from one); both empty when an
    admitted chunk is from one of the named pages."""

    named: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


def page_check(
    question: str, names: frozenset[str], titles: Sequence[str], pool_titles: Sequence[str] | None = None
) -> PageCheck:
    """Read the pages ``question`` names (of the knowledge base's page ``names``) against the admitted chunks'
    ``titles`` and the retrieved candidates' ``pool_titles`` (see the module)."""
    named = named_pages(question, names)
    if not named:
        return PageCheck()
    have = {page_name(t) for t in titles}
    if have & set(named):
        return PageCheck(named=named)
    pool = {page_name(t) for t in pool_titles or ()}
    return PageCheck(named=named, missing=named, absent=() if pool & set(named) else named)

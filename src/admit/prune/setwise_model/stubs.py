"""Heading stubs: short chunks that restate the question rather than answer it.

A man page's NAME line ("git-clean - Remove untracked files from the working tree"), a SEE ALSO line of one link, a
page's one-line lead under its title: a handful of words, nearly all of them the question's own or the chunk
title's. The model reads such a chunk as a near copy of the question and gives it the list's best probability
(p 0.8-0.99), and the list's coverage then reads the question as answered by it: the section body beside it, which
holds the answer, is graded under the threshold (p 0.01-0.04), and a stub admitted from the same page takes one of
that page's per-source slots. Measured on six documentation sites (``bench/bench_docsites.py``): of 30 admitted
chunks of at most 10 words none was a question's only answer chunk.

:func:`heading_stubs` finds them; the scorer grades the list's coverage as if they were absent (their probability
does not make the body chunks redundant) and grades a stub at most :data:`STUB_GRADE`.
"""

from __future__ import annotations

from collections.abc import Sequence

from admit import _text as tx
from admit.prune.setwise_model.rules import stem
from admit.question import Question, read_question

__all__ = ["STUB_GRADE", "STUB_MAX_NEW", "STUB_MAX_WORDS", "heading_stubs", "is_stub"]

#: A chunk's text of at most this many words may be a stub.
STUB_MAX_WORDS = 12
#: A stub holds at most this many content words (stemmed, distinct) that neither the question nor its own title holds:
#: "git-clean - Remove untracked files from the working tree" asked "which untracked files would git clean remove"
#: adds "working" and "tree". A short chunk with more of its own words carries a fact ("X is a 1995 film directed
#: by Y": a year, a kind, a name) and is not a stub.
STUB_MAX_NEW = 3
#: The most a stub is graded: under the default threshold (3), at the lowest one kept (2).
STUB_GRADE = 2


def _stems(text: str) -> set[str]:
    return {stem(w) for w in tx.content_tokens(text)}


def is_stub(question: str | Question, title: str, text: str) -> bool:
    """Whether a chunk is a heading stub for ``question``: its text is at most :data:`STUB_MAX_WORDS` words (at least
    one) and holds at most :data:`STUB_MAX_NEW` content words that neither the question nor the chunk's title holds."""
    n = len(tx.words(text))
    if n == 0 or n > STUB_MAX_WORDS:
        return False
    own = _stems(text)
    return len(own - _stems(read_question(question).text) - _stems(title)) <= STUB_MAX_NEW


def heading_stubs(question: str | Question, titles: Sequence[str], texts: Sequence[str]) -> list[bool]:
    """Per chunk, whether it is a heading stub (:func:`is_stub`); all ``False`` when every chunk is one (a list of
    stubs has nothing better to grade)."""
    out = [is_stub(question, t, x) for t, x in zip(titles, texts, strict=True)]
    return out if not all(out) else [False] * len(out)

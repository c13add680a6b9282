"""A name the question writes out in full, for the lexical search: its initials.

Documentation defines a name once in full and then uses its acronym: ntpsec's pages say "Network Time Security (NTS)"
once or twice and "NTS" hundreds of times (its section headings: "NTS Client Configuration"). A question written from
the outside spells the name out ("How do I make my client use Network Time Security with a server that supports
it?"), so the lexical search held none of the words the answer's section is indexed under, and that section was 148th
in the BM25 list (119th fused). :func:`initials` gives the acronym of each run of three to six capitalised words in
the question (the words of a name, as people write one in running text); :func:`admit.kb.store.fts_terms`, the one
query builder every store reads, adds it beside the question's own terms, as it adds the other spellings of a word
(:mod:`admit.kb.spelling`). A term no chunk holds changes no BM25 score, so a question whose capitalised run is not a
name the docs abbreviate searches as before. Nothing is changed in what the stores index or in the query vector.
"""

from __future__ import annotations

from admit import _linear
from admit._text import STOPWORDS

__all__ = ["MAX_WORDS", "MIN_WORDS", "initials"]

#: The fewest capitalised words whose initials are searched: two-letter initials ("Access Control" -> ``ac``) name
#: too many things.
MIN_WORDS = 3
#: The most: a longer capitalised run is a title, not a name.
MAX_WORDS = 6

_TOKEN = _linear.simple(r"\S+")
#: Punctuation that closes or opens a run ("Network Time Security," ends the run after "Security").
_EDGE = ".,;:!?\"'()[]{}<>"


def _run_initials(run: list[str]) -> str | None:
    """The initials of a capitalised run, stop words at either end dropped ("What", "The"); ``None`` when what is left
    is not :data:`MIN_WORDS` to :data:`MAX_WORDS` words, none of them a stop word."""
    words = list(run)
    while words and words[0].lower() in STOPWORDS:
        words.pop(0)
    while words and words[-1].lower() in STOPWORDS:
        words.pop()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or any(w.lower() in STOPWORDS for w in words):
        return None
    return "".join(w[0] for w in words).lower()


def initials(text: str) -> list[str]:
    """The lower-case initials of each run of :data:`MIN_WORDS` to :data:`MAX_WORDS` capitalised words in ``text``
    (each word a letter, upper case, then letters: "Time", "REST"), in order, once each; ``[]`` when there is none.

    >>> initials("How do I make my client use Network Time Security with a server that supports it?")
    ['nts']
    >>> initials("Is Django REST Framework's browsable API on by default?")
    []
    >>> initials("What does the Python Package Index say, and the Debian Free Software Guidelines?")
    ['ppi', 'dfsg']
    >>> initials("How do I set Access Control?"), initials("What Is New?")
    ([], [])
    """
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        got = _run_initials(run)
        if got and got not in out:
            out.append(got)
        run.clear()

    for tok in _TOKEN.findall(text):
        if tok[0] in _EDGE:
            flush()
        word = tok.strip(_EDGE)
        if word[:1].isascii() and word[:1].isupper() and word.isalpha():
            run.append(word)
        else:
            flush()
        if tok[-1] in _EDGE:
            flush()
    flush()
    return out

"""A name the question writes out in full finds the docs that use its acronym (issue 46, answers lost before the
pruner): :mod:`admit.kb.acronyms`, added to the lexical query by :func:`admit.kb.store.fts_terms`.

ntpsec's held-out question "How do I make my client use Network Time Security with a server that supports it?" is
answered by the section "NTS Client Configuration", which never writes the name out: it was 148th in the BM25 list."""

from __future__ import annotations

import pytest

from admit.kb.acronyms import initials
from admit.kb.store import fts_terms

QUESTION = "How do I make my client use Network Time Security with a server that supports it?"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (QUESTION, ["nts"]),
        ("Does the Python Package Index mirror wheels?", ["ppi"]),
        ("Which licence do the Debian Free Software Guidelines allow?", ["dfsg"]),
        ("What Does Network Time Security Do?", ["nts"]),  # stop words at either end go
        ("How do I set Access Control?", []),  # two words: too many things are "ac"
        ("Where Is The Config?", []),  # a stop word inside the run: not a name
        ("How do I make my client use network time security?", []),  # not written as a name
        ("Network Time Security, Django REST Framework", ["nts", "drf"]),  # punctuation ends a run
    ],
)
def test_the_initials_of_a_name_written_out(text: str, expected: list[str]) -> None:
    assert initials(text) == expected


def test_the_lexical_query_adds_the_initials_after_the_question_s_own_terms() -> None:
    assert fts_terms(QUESTION) == ["make", "client", "network", "time", "security", "server", "supports", "nts"]
    assert fts_terms("How do I make my client use network time security?") == [
        "make",
        "client",
        "network",
        "time",
        "security",
    ]

"""British and American spellings join in the lexical query (issue 46, item 3): :mod:`admit.kb.spelling`."""

from __future__ import annotations

import pytest

from admit.kb.spelling import variants
from admit.kb.store import fts_terms


@pytest.mark.parametrize(
    ("word", "other"),
    [
        ("licence", "license"),
        ("license", "licence"),
        ("licences", "licenses"),
        ("colour", "color"),
        ("colored", "coloured"),
        ("behaviour", "behavior"),
        ("favourite", "favorite"),
        ("organise", "organize"),
        ("initialized", "initialised"),
        ("serialisation", "serialization"),
        ("analyse", "analyze"),
        ("catalogue", "catalog"),
        ("catalogs", "catalogues"),
        ("centre", "center"),
        ("meters", "metres"),
        ("defence", "defense"),
        ("cancelled", "canceled"),
        ("modeling", "modelling"),
        ("grey", "gray"),
        ("programme", "program"),
    ],
)
def test_the_other_spelling(word: str, other: str) -> None:
    assert other in variants(word)


@pytest.mark.parametrize(
    "word", ["four", "hour", "your", "wise", "rise", "promise", "exercise", "size", "prized", "check", "story", "c"]
)
def test_words_that_only_look_like_a_pattern_get_none(word: str) -> None:
    assert variants(word) == []


def test_the_query_terms_keep_their_order_and_add_the_variants_after() -> None:
    assert fts_terms("Which licence covers the colour themes?") == [
        "licence",
        "covers",
        "colour",
        "themes",
        "license",
        "color",
    ]
    # a variant never pushes out one of the question's own terms
    many = " ".join(f"word{i}" for i in range(40)) + " licence"
    assert fts_terms(many, limit=32) == [f"word{i}" for i in range(32)]

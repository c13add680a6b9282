"""Word-level helpers of the setwise scorer: entities, titles, identifier kinds, question cues.

Words, content words, identifiers and scripts are admit's one text toolkit's (:mod:`admit._text`), named here
too for the scorer's modules.
"""

from __future__ import annotations

import re
from functools import lru_cache

from admit import _linear
from admit._text import (
    NUMBER,
    YEAR,
    capitalised_tokens,
    char_bigrams,
    content_tokens,
    entity_phrases,
    has_year,
    identifiers,
    nfc,
    number_count,
    register_cache,
    unreadable_script,
    words,
)

__all__ = [
    "NUMBER",
    "YEAR",
    "capitalised_tokens",
    "char_bigrams",
    "contains_phrase",
    "content_tokens",
    "entity_phrases",
    "has_year",
    "identifier_kind",
    "identifiers",
    "number_count",
    "title_keys",
    "unreadable_script",
    "words",
]

_WORD = _linear.simple(r"\w+")
_PAREN = _linear.compile(r"\s*\([^)]*\)", name="setwise.paren")

COMPARISON = _linear.compile(
    r"\b(both|either|neither|same|different|older|younger|earlier|later|first|last|more|less|larger|smaller"
    r"|longer|shorter|higher|lower|bigger|further|closer|compare|comparison|versus|vs)\b",
    re.IGNORECASE,
    name="setwise.comparison",
)
OR_CHOICE = _linear.compile(r"\b\w+\s+or\s+\w+", re.IGNORECASE, name="setwise.or_choice")
NESTED = _linear.compile(
    r"\b(of|in|by|for|from|at)\s+(the|a|an|this|that)\b|'s\b|’s\b", re.IGNORECASE, name="setwise.nested"
)
RELATIVE = _linear.compile(r"\b(who|which|that|where|whose|whom|when)\b", re.IGNORECASE, name="setwise.relative")
#: Answer-type cues of a question, in the order of the ``q_wh_*`` question features.
WH_CUES: tuple[tuple[str, _linear.LinearPattern], ...] = tuple(
    (name, _linear.compile(p, re.I, name=f"setwise.wh_{name}"))
    for name, p in (
        ("when", r"^\s*(when|what year|which year|in what year|in which year)\b|\bwhat (year|date)\b"),
        ("who", r"^\s*(who|whom|whose)\b"),
        ("where", r"^\s*where\b|\bwhat (city|country|state|county)\b"),
        ("how_many", r"\bhow (many|much|long|old|far|tall)\b"),
        ("yes_no", r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b"),
    )
)


@lru_cache(maxsize=4096)
def title_keys(title: str) -> tuple[str, str]:
    """Normalised full title and its head (before a comma or parenthesis)."""
    t = nfc(title).lower()
    bare = _PAREN.sub("", t) if "(" in t else t  # a title without a parenthesis has none to remove
    full = " ".join(_WORD.findall(bare))
    head = " ".join(_WORD.findall(bare.split(",")[0])) if "," in bare else full
    return full, head


register_cache(title_keys.cache_clear)  # benchmarks forget it with admit.features.clear_caches


def contains_phrase(haystack: str, phrase: str) -> bool:
    """Whether a space-padded lower-cased text contains a phrase of 3+ characters as whole words."""
    if len(phrase) < 3:
        return False
    return f" {phrase} " in haystack


_SHAPE = str.maketrans({**dict.fromkeys("0123456789", "9"), **dict.fromkeys(map(chr, range(65, 91)), "A"),
                        **dict.fromkeys(map(chr, range(97, 123)), "A")})  # fmt: skip


def identifier_kind(ident: str) -> str:
    """The shape of an identifier: ``E4012`` and ``E4031`` share ``A9999``; ``HL_X`` and ``HL_Y`` share ``HL_``."""
    if "_" in ident and ident.upper() == ident:
        return "snake:" + ident.split("_")[0]
    return ident.translate(_SHAPE)

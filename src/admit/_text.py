"""Small text helpers shared by the stages: normalisation, content words, shingles, sentences."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

__all__ = ["content_words", "normalize", "norm_hash", "sentences", "shingles", "STOPWORDS"]

STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto over under about as is are was
    were be been being am do does did doing have has had having i me my we our you your he him his she her it its
    they them their this that these those what which who whom whose when where why how there here not no nor so
    than too very can could should would will shall may might must also just only any all each every both either
    neither some such own same other more most few many much one two up down out off again further once s t
    please tell give show explain describe find get use using used need needs want within without via per
    vs versus between among whether does doesn't isn't aren't wasn't weren't i'm i've""".split()
)

_WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Casefold, NFKC-normalise and collapse whitespace and punctuation, for hashing and overlap."""
    t = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_WORD.findall(t))


def norm_hash(text: str) -> str:
    """A stable hash of the normalised text (exact-duplicate key)."""
    return hashlib.sha1(normalize(text).encode("utf-8", "surrogatepass")).hexdigest()


def _stem(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


@lru_cache(maxsize=4096)
def content_words(text: str) -> frozenset[str]:
    """Lowercased, lightly stemmed words of ``text`` that are not stopwords."""
    return frozenset(_stem(w) for w in normalize(text).split() if w not in STOPWORDS and len(w) > 1)


def shingles(text: str, k: int = 3) -> frozenset[int]:
    """Hashed word ``k``-shingles of the normalised text (the words themselves for very short texts)."""
    words = normalize(text).split()
    if len(words) < k:
        return frozenset(hash(w) for w in words)
    return frozenset(hash(" ".join(words[i : i + k])) for i in range(len(words) - k + 1))


def sentences(text: str) -> list[str]:
    """Split ``text`` into sentences with nupunkt (paragraph breaks always split)."""
    import nupunkt

    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        out.extend(s.strip() for s in nupunkt.sent_tokenize(para) if s.strip())
    return out


def collapse_space(text: str) -> str:
    """Collapse runs of whitespace to one space."""
    return _SPACE.sub(" ", text).strip()

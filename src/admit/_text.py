"""admit's one text toolkit: normalisation, the stemmer, words and content words, identifiers, scripts, sentences,
shingles and BM25, shared by the stages (dedupe, pack, the answerability check, the setwise pruner) and by
:mod:`admit.passages`.

Two variants stay apart where a fitted model or stored vectors read one of them exactly, each behind one
function's explicit parameter: :func:`stem` (``ies``: "policies" -> "policy", the dedupe/pack variant; without it
the answerability models and the setwise rules' variant) and :func:`sentences` (``by``: nupunkt, or the
sentence marks that cut the passages whose vectors the knowledge base stores).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache, update_wrapper
from typing import Generic, Literal, TypeVar

import numpy as np

from admit import _linear
from admit._lru import LRU
from admit.errors import InvalidValue

__all__ = [
    "STOPWORDS",
    "bm25_matrix",
    "capitalised_tokens",
    "char_bigrams",
    "content_tokens",
    "content_words",
    "entity_phrases",
    "identifiers",
    "jaccard_estimates",
    "letter_scripts",
    "minhash",
    "nfc",
    "norm_hash",
    "normalize",
    "overlap",
    "register_cache",
    "seed_words",
    "sentences",
    "shingles",
    "stem",
    "unreadable_script",
    "versions",
    "words",
    "written_words",
]

#: A dotted version (``3.2.0``, ``v2.1``): one token to a reader, three numbers to a word tokenizer. RE2 has no
#: look-arounds: the match is the longest dotted run, and :func:`versions` checks the characters around it
#: (no word character or ``.`` before, no word character after).
_VERSION = _linear.compile(r"[vV]?(\d+(?:\.\d+)+)", name="text.version")
_WORD_CHAR = _linear.simple(r"\w")


def versions(text: str) -> list[str]:
    """The dotted versions a text names, in order, without a leading ``v`` (``"v3.2.0 and 2.1"`` -> both)."""
    text = text or ""
    found: list[str] = []
    for m in _VERSION.finditer(text):
        start, end = m.start(), m.end()
        before = text[start - 1] if start else ""
        after = text[end : end + 2]
        if before and (before == "." or _WORD_CHAR.match(before)):
            continue
        if after and (_WORD_CHAR.match(after[0]) or (after[0] == "." and after[1:2].isdigit())):
            continue
        found.append(m.group(1))
    return list(dict.fromkeys(found))


STOPWORDS = frozenset(
    """
    a an the and or but if then else of to in on at by for with from into onto over under about as is are
    was were be been being am do does did doing have has had having i me my we our you your he him his she
    her it its they them their this that these those what which who whom whose when where why how there here
    not no nor so than too very can could should would will shall may might must also just only any all each
    every both either neither some such own same other more most few many much one two up down out off again
    further once s t please tell give show explain describe find get use using used need needs want within
    without via per vs versus between among whether does doesn't isn't aren't wasn't weren't i'm i've
    """.split()  # noqa: SIM905
)

_WORD = _linear.simple(r"\w+")
_PARAGRAPH_BREAK = _linear.compile(r"\n\s*\n", name="text.paragraph_break")


@lru_cache(maxsize=8192)
def normalize(text: str) -> str:
    """Casefold, NFKC-normalise and collapse whitespace and punctuation, for hashing and overlap."""
    t = (text if text.isascii() else unicodedata.normalize("NFKC", text)).casefold()
    return " ".join(_WORD.findall(t))


T = TypeVar("T")


class Memo(Generic[T]):
    """A thread-safe LRU memo of a function of one text, which callers can also seed with known values."""

    def __init__(self, fn: Callable[[str], T], maxsize: int = 8192) -> None:
        """Memoise ``fn``, keeping the ``maxsize`` most recently used texts."""
        self._fn = fn
        self._data: LRU[str, T] = LRU(maxsize)
        update_wrapper(self, fn)  # __wrapped__, __name__ and __doc__ of fn, as functools.lru_cache gives

    def __call__(self, text: str) -> T:
        """``fn(text)``, computed once per text."""
        hit = self._data.get(text, _MISSING)
        if hit is not _MISSING:
            if type(hit) is _Later:
                made: T = hit.make()  # type: ignore[assignment]  # seeded for later: made on first use
                self._data.put(text, made)
                return made
            return hit  # type: ignore[return-value]
        value = self._fn(text)
        self._data.put(text, value)
        return value

    def seed(self, text: str, value: T) -> None:
        """Remember ``value`` as ``fn(text)``."""
        self._data.put(text, value)

    def peek(self, text: str) -> T | None:
        """``fn(text)`` when it is remembered and made, else ``None`` (nothing is computed)."""
        hit = self._data.get(text, None)
        return None if hit is None or type(hit) is _Later else hit

    def seed_later(self, text: str, make: Callable[[], T]) -> None:
        """Remember that ``make()`` is ``fn(text)``, called on the first use (stored data parsed only if read)."""
        self._data.put(text, _Later(make))  # type: ignore[arg-type]

    def cache_clear(self) -> None:
        """Forget everything."""
        self._data.clear()


_MISSING = object()


class _Later:
    """A seeded value not made yet (:meth:`Memo.seed_later`)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def _norm_hash(text: str) -> str:
    return hashlib.sha1(normalize(text).encode("utf-8", "surrogatepass")).hexdigest()


norm_hash: Memo[str] = Memo(_norm_hash)
"""A stable hash of the normalised text (exact-duplicate key); remembered, seedable."""


@lru_cache(maxsize=65536)
def stem(w: str, *, ies: bool = True) -> str:
    """A light plural stem: "files" and "file", "restores" and "restore" are one word ("class" keeps its ``ss``).

    ``ies``: "policies" -> "policy" too (:func:`content_words`: dedupe, pack). The answerability models and the
    setwise rules were fitted and measured with ``ies=False``, which keeps "policies" -> "policie".
    """
    if ies and len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def nfc(text: str) -> str:
    """NFC-normalised text (``""`` for ``None``)."""
    return unicodedata.normalize("NFC", text or "")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (NFC, in order, repeats kept)."""
    return list(_words(text))


@lru_cache(maxsize=4096)
def written_words(text: str) -> tuple[str, ...]:
    """The word tokens of ``text`` as written (NFC, case kept, in order), remembered per text: what the capitalised
    words and the setwise entity phrases read."""
    return tuple(_WORD.findall(nfc(text)))


def _words_of(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(nfc(text).lower()))


#: :func:`words`, remembered per text (a chunk's words are read by several features and rules of one list);
#: seedable (:mod:`admit.features`).
_words: Memo[tuple[str, ...]] = Memo(_words_of, 4096)


def seed_words(text: str, found: Callable[[], Sequence[str]]) -> None:
    """Remember ``found()`` as :func:`words` of ``text``, made on first use (stored with a chunk at ingest:
    :mod:`admit.features`)."""
    _words.seed_later(text, lambda: tuple(found()))


def content_tokens(text: str, *, fold: bool = False) -> list[str]:
    r"""The words of ``text`` without stopwords and one-letter words (digits kept), in order, unstemmed.

    ``fold``: read the :func:`normalize`\ d text (NFKC, case-folded: "Straße" -> "strasse") instead of the
    lower-cased NFC words (:func:`words`) the setwise model and the answerability check read.
    """
    toks = normalize(text).split() if fold else words(text)
    return [w for w in toks if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


@lru_cache(maxsize=4096)
def content_words(text: str) -> frozenset[str]:
    """The stemmed (:func:`stem`) set of the folded :func:`content_tokens` of ``text`` of two characters or more."""
    return frozenset(stem(w) for w in content_tokens(text, fold=True) if len(w) > 1)


def _capitalised(text: str) -> frozenset[str]:
    out: set[str] = set()
    for tok in written_words(text):
        if len(tok) < 2 or not (tok[0].isupper() or tok.isdigit()):
            continue  # most words: lower-case, never looked up
        low = tok.lower()
        if low not in STOPWORDS:
            out.add(low)
    return frozenset(out)


#: Lower-cased tokens written capitalised (or numbers) that are not stopwords (sentence starts too); remembered
#: per text (the setwise features and links both read them), seedable.
capitalised_tokens: Memo[frozenset[str]] = Memo(_capitalised, 4096)


def _entity_phrases(text: str) -> frozenset[str]:
    out: set[str] = set()
    run: list[str] = []
    for tok in [*written_words(text), ""]:
        if tok and tok[0].isupper() and tok.lower() not in STOPWORDS:
            run.append(tok.lower())
            continue
        if len(run) >= 2:
            out.add(" ".join(run))
        run = []
    return frozenset(out)


#: Lower-cased runs of two or more capitalised non-stopword words (e.g. "natalie wood"): the setwise entity
#: links'; remembered per text, seedable.
entity_phrases: Memo[frozenset[str]] = Memo(_entity_phrases, 4096)

YEAR = _linear.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b", name="setwise.year")
NUMBER = _linear.compile(r"\b\d[\d,.]*\b", name="setwise.number")
#: How many numbers (:data:`NUMBER`) a text holds, and whether it names a year (:data:`YEAR`): two setwise
#: features of a chunk (``num_density``, ``has_year``), remembered per text and seedable (stored at ingest:
#: :mod:`admit.features`), since the RE2 wrapper's per-match work makes them a sixth of a score's CPU.
number_count: Memo[int] = Memo(lambda text: len(NUMBER.findall(text)), 4096)
has_year: Memo[bool] = Memo(lambda text: YEAR.search(text) is not None, 4096)


#: Exact identifiers: letter-digit codes (``E4012``, ``FB-111A``, ``v1.2``) and UPPER_SNAKE names. Applied only
#: to one run of ``[\w.-]`` at a time, at most :data:`_IDENT_MAX` characters long (its look-arounds see the same
#: characters as on the whole text, since a run's neighbours are outside the class), so its work is bounded
#: per run and linear in the text.
_IDENT = re.compile(
    r"(?<![\w-])(?=[\w.-]*[A-Za-z])(?=[\w.-]*\d)[A-Za-z0-9][\w.-]*[A-Za-z0-9](?![\w-])"
    r"|(?<![\w-])[A-Z][A-Z0-9]*_[A-Z0-9_]+(?![\w-])"
)
_IDENT_RUN = _linear.compile(r"[\w.-]+", name="setwise.ident_run")
_IDENT_MAX = 64
_RELEASE = _linear.compile(r"^v?\d+(?:\.\d+){2,3}$", name="setwise.version")
_ORDINAL = _linear.compile(r"^\d+(?:st|nd|rd|th|s)$", re.I, name="setwise.ordinal")


def identifiers(text: str) -> set[str]:
    """Exact identifiers in a text: letter-digit codes of 4+ characters and UPPER_SNAKE names.

    Dotted releases with three or four parts (``3.2.0``, ``v1.4.2``) count too. Not ordinals (``20th``), decades
    (``1990s``) or short tokens such as ``v5``, ``S3`` or ``WW2``, which name things too loosely for an exact-match
    rule.
    """
    out: set[str] = set()
    for run in _IDENT_RUN.finditer(nfc(text)):
        r = run.group(0)
        if len(r) > _IDENT_MAX or not (("_" in r) or any(c.isdigit() for c in r)):
            continue
        bare = r.strip(".-")
        if _RELEASE.match(bare):  # a release such as 3.2.0 names one changelog entry exactly
            out.add(bare)
            continue
        _linear.meter.add(len(r) * len(r))  # the look-arounds' worst case on one bounded run
        out.update(m for m in _IDENT.findall(r) if not _ORDINAL.match(m) and (len(m) >= 4 or "_" in m))
    return out


# Unicode blocks of scripts that all-MiniLM-L6-v2 (English word pieces) cannot read: CJK, kana, hangul, Thai,
# Lao, Khmer, Myanmar, Tibetan, Ethiopic, and the Indic scripts. Counted per letter character.
_UNREADABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0900, 0x0DFF),  # Devanagari .. Sinhala
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1200, 0x139F),  # Ethiopic
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x318F),  # Bopomofo, Hangul compatibility jamo
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x2FA1F),  # CJK extensions B..
)
#: A text is in an unreadable script when at least this share of its letters are.
UNREADABLE_SHARE = 0.3


def _unreadable_char(ch: str) -> bool:
    o = ord(ch)
    return any(lo <= o <= hi for lo, hi in _UNREADABLE_RANGES)


def letter_scripts(
    text: str, *, limit: int, counted: Callable[[str], bool] | None = None
) -> tuple[int, dict[str, int]]:
    """(how many of the first ``limit`` letters of ``text`` were read, per script the letters ``counted`` selects
    (every letter when ``None``), named by the first word of their Unicode names: ``LATIN``, ``CJK``, ``THAI`` ...)."""
    letters = 0
    counts: dict[str, int] = {}
    for ch in text:
        if not ch.isalpha():
            continue
        letters += 1
        if counted is None or counted(ch):
            name = unicodedata.name(ch, "UNKNOWN").split(" ")[0]
            counts[name] = counts.get(name, 0) + 1
        if letters >= limit:
            break
    return letters, counts


def unreadable_script(text: str, *, limit: int = 4000) -> str | None:
    """The name of the script MiniLM cannot read that ``text`` is mostly written in, else ``None``.

    Looks at the first ``limit`` letters; the name is the Unicode name's first word of the commonest such
    letter (``CJK``, ``HIRAGANA``, ``THAI``, ``HANGUL`` ...).
    """
    letters, counts = letter_scripts(text, limit=limit, counted=_unreadable_char)
    if not letters or sum(counts.values()) / letters < UNREADABLE_SHARE:
        return None
    return max(counts, key=lambda k: counts[k])


def char_bigrams(text: str) -> set[str]:
    """Character bigrams of the letters and digits of ``text`` (case-folded; spaces and punctuation break runs)."""
    out: set[str] = set()
    prev = ""
    for ch in unicodedata.normalize("NFKC", text).casefold():
        if ch.isalnum():
            if prev:
                out.add(prev + ch)
            prev = ch
        else:
            prev = ""
    return out


_M61 = np.uint64((1 << 61) - 1)
_P1 = np.uint64(1_000_003)
_P2 = np.uint64(998_244_353)


@lru_cache(maxsize=8192)
def shingles(text: str, k: int = 3) -> np.ndarray:
    """Sorted unique hashes of the word ``k``-shingles (3 by default) of the normalised text.

    Words are hashed with CRC-32 (stable across processes) and combined arithmetically, so a shingle set
    costs a few microseconds of numpy per text. Very short texts use their words as shingles.
    """
    norm = normalize(text)
    if not norm:
        return np.zeros(0, dtype=np.uint64)
    words = norm.encode("utf-8", "surrogatepass").split(b" ")
    w = np.fromiter(map(zlib.crc32, words), dtype=np.uint64, count=len(words))
    if len(words) < k:
        return np.unique(w)
    with np.errstate(over="ignore"):
        h = w[: len(w) - 2] * _P1 + w[1 : len(w) - 1] * _P2 + w[2:]
    out = np.unique(h % _M61)
    out.flags.writeable = False
    return out


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Max of Jaccard and containment of the smaller shingle set in the larger (catches overlapping chunks)."""
    if not len(a) or not len(b):
        return 0.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    if not inter:
        return 0.0
    return max(inter / (len(a) + len(b) - inter), inter / min(len(a), len(b)))


_PRIME = (1 << 61) - 1
_PERM_RNG = np.random.default_rng(20240611)
_A = _PERM_RNG.integers(1, _PRIME, size=32, dtype=np.uint64)
_B = _PERM_RNG.integers(0, _PRIME, size=32, dtype=np.uint64)
_A_ODD = _A | np.uint64(1)


def minhash(sets: Sequence[np.ndarray]) -> np.ndarray:
    """32-permutation MinHash signatures, one row per set (an empty set gets a row of max values).

    Permutations are ``a*x + b`` in uint64 with wrap-around (``a`` odd after ``| 1``, so each is a bijection of
    the 64-bit values), which keeps the min-wise property well enough for similarity estimates and costs a
    third of a modular reduction; exact decisions re-check the sets.
    """
    out = np.full((len(sets), 32), np.iinfo(np.uint64).max, dtype=np.uint64)
    for i, s in enumerate(sets):
        if len(s):
            with np.errstate(over="ignore"):
                out[i] = (s[:, None] * _A_ODD[None, :] + _B[None, :]).min(axis=0)
    return out


def _signature(text: str) -> np.ndarray:
    sig: np.ndarray = minhash([shingles(text)])[0]
    sig.flags.writeable = False
    return sig


signature: Memo[np.ndarray] = Memo(_signature)
"""The MinHash signature of a text's shingles (remembered per text; ``signature.seed`` adds known ones)."""


def seed_signature(text: str, sig: np.ndarray) -> None:
    """Remember a text's signature (e.g. one stored with the chunk at ingest)."""
    arr = np.asarray(sig, dtype=np.uint64)
    if arr.shape != (32,):
        raise InvalidValue(f"a signature has 32 values, got shape {arr.shape}")
    arr.flags.writeable = False
    signature.seed(text, arr)


shingle_count: Memo[int] = Memo(lambda text: len(shingles(text)))
"""How many distinct shingles a text has (remembered; seedable, so stored chunks need no shingling to tell)."""


def signatures(texts: Sequence[str]) -> np.ndarray:
    """MinHash signatures of several texts, one row each."""
    if not texts:
        return np.zeros((0, 32), dtype=np.uint64)
    rows = []
    for t in texts:
        _linear.checkpoint()  # long work may wait here (the service's scheduler) or stop (the deadline)
        rows.append(signature(t))
    stacked: np.ndarray = np.stack(rows)
    return stacked


def _key_stems(text: str) -> tuple[str, ...]:
    return tuple(stem(w, ies=False) for w in content_tokens(text))


#: A text's content words (:func:`content_tokens`) in order, stemmed as the answerability models were fitted
#: (``ies=False``): its word pairs are the bigram feature's; remembered per text, seedable (:mod:`admit.features`).
key_stems: Memo[tuple[str, ...]] = Memo(_key_stems)


def _key_units(text: str) -> frozenset[str]:
    # the content words' stems, and each distinct capitalised token stemmed once: the same set as stemming
    # {*content_tokens(text), *capitalised_tokens(text)}
    return frozenset(key_stems(text)).union(stem(w, ies=False) for w in capitalised_tokens(text))


#: A text's content words and capitalised tokens, stemmed as the answerability models were fitted (``ies=False``):
#: what the "is it answered" stage reads of each passage, once per text.
key_units: Memo[frozenset[str]] = Memo(_key_units)


def pairs_held(text: str, pairs: Iterable[tuple[str, str]]) -> int:
    """How many of ``pairs`` are consecutive :data:`key_stems` of ``text`` (the answerability's bigram feature):
    ``len(set(itertools.pairwise(key_stems(text))) & set(pairs))``, a pair looked for only when the text holds both
    of its words."""
    units = key_units(text)
    stems: tuple[str, ...] = ()
    held = 0
    for a, b in set(pairs):
        if a not in units or b not in units:
            continue
        stems = stems or key_stems(text)
        at = -1
        while True:
            try:
                at = stems.index(a, at + 1)
            except ValueError:
                break
            if at + 1 < len(stems) and stems[at + 1] == b:
                held += 1
                break
    return held


def _word_stems(text: str) -> frozenset[str]:
    return frozenset(stem(w, ies=False) for w in set(_words(text)))  # each distinct word stemmed once


#: The stems (``ies=False``) of every word of a text, stop words included: the term check's vocabulary of a
#: passage, once per text (seedable).
word_stems: Memo[frozenset[str]] = Memo(_word_stems)


_REGISTERED: list[Callable[[], None]] = []


def register_cache(clear: Callable[[], None]) -> None:
    """Have :func:`clear_caches` call ``clear`` too (a higher layer's per-text memo: the setwise model's)."""
    _REGISTERED.append(clear)


def clear_caches() -> None:
    """Forget cached shingles, signatures and hashes (benchmarks measure cold runs with it)."""
    for fn in (normalize, shingles, norm_hash, content_words, signature, shingle_count, stem, key_units, key_stems):
        fn.cache_clear()
    word_stems.cache_clear()
    entity_phrases.cache_clear()
    number_count.cache_clear()
    has_year.cache_clear()
    capitalised_tokens.cache_clear()
    _words.cache_clear()
    written_words.cache_clear()
    for clear in _REGISTERED:
        clear()


def jaccard_estimates(sig: np.ndarray) -> np.ndarray:
    """Pairwise Jaccard estimates from MinHash signatures (share of equal minima)."""
    if len(sig) == 0:
        return np.zeros((0, 0))
    est: np.ndarray = (sig[:, None, :] == sig[None, :, :]).mean(axis=2)
    return est


# a sentence end and the space after it, or a paragraph break (the end mark stays with its sentence)
_SENT_BREAK = _linear.compile(r"([.!?。！？])\s+|\n\s*\n+", name="passages.sentence_break")


def sentences(text: str, *, by: Literal["nupunkt", "marks"] = "nupunkt") -> list[str]:
    """Split ``text`` into sentences, stripped, none empty; paragraph breaks always split.

    ``by``: ``nupunkt`` (the anchored excerpts of :mod:`admit.pack`), or ``marks``: after ``.``, ``!``, ``?``
    (and their CJK forms) followed by white space, no model: how :func:`admit.passages.passages` cuts, which the
    passage vectors stored at ingest depend on.
    """
    if by == "marks":
        return [p.strip() for p in _mark_pieces(text) if p.strip()]
    import nupunkt

    out: list[str] = []
    for para in _PARAGRAPH_BREAK.split(text):
        para = para.strip()
        if not para:
            continue
        for piece in _pieces(para):
            _linear.checkpoint()  # a long paragraph is split piece by piece: long work may wait or stop between
            out.extend(str(s).strip() for s in nupunkt.sent_tokenize(piece) if str(s).strip())
    return out


def _mark_pieces(text: str) -> list[str]:
    out, start = [], 0
    for m in _SENT_BREAK.finditer(text):
        out.append(text[start : m.end(1)] if m.group(1) is not None else text[start : m.start()])
        start = m.end()
    out.append(text[start:])
    return out


_PIECE_CHARS = 4_000


def _pieces(para: str) -> list[str]:
    """``para`` cut after a ``". "`` past every :data:`_PIECE_CHARS` characters (a sentence end either way), so
    the sentence splitter works on bounded pieces; shorter paragraphs whole."""
    if len(para) <= _PIECE_CHARS:
        return [para]
    out: list[str] = []
    start = 0
    while len(para) - start > _PIECE_CHARS:
        cut = para.find(". ", start + _PIECE_CHARS)
        if cut < 0:
            break
        out.append(para[start : cut + 1])
        start = cut + 2
    out.append(para[start:])
    return [p for p in out if p.strip()]


def bm25_matrix(
    queries: Sequence[Sequence[str]], docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75
) -> np.ndarray:
    """BM25 of each tokenised query against each tokenised document, the documents being the corpus.

    admit's one BM25: the lexical reranker and the setwise pruner both score a candidate list with it
    (IDF over the list itself, so no corpus statistics are needed).

    Args:
        queries: Tokenised queries.
        docs: Tokenised documents.
        k1: Term-frequency saturation.
        b: Length normalisation.

    Returns:
        Array of shape (len(queries), len(docs)).
    """
    n = len(docs)
    out = np.zeros((len(queries), n), dtype=np.float64)
    if n == 0:
        return out
    tfs = [Counter(d) for d in docs]
    lens = np.array([len(d) for d in docs], dtype=np.float64)
    avg = float(lens.mean()) or 1.0
    df: Counter[str] = Counter()
    for tf in tfs:
        df.update(tf.keys())
    norm = k1 * (1.0 - b + b * lens / avg)
    for qi, q in enumerate(queries):
        for term, qtf in Counter(q).items():
            d = df.get(term, 0)
            if d == 0:
                continue
            idf = math.log(1.0 + (n - d + 0.5) / (d + 0.5))
            tfv = np.array([t.get(term, 0) for t in tfs], dtype=np.float64)
            out[qi] += qtf * idf * tfv * (k1 + 1.0) / (tfv + norm)
    return out

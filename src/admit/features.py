"""What the pipeline computes once per chunk, computed at ingest and stored with the chunk.

A chunk's first sight in :meth:`~admit.pipeline.Pipeline.pack` costs token counts (its envelope lines, per
target encoding), the injection scan (its flag kinds), a MinHash signature and the words the answerability stage
reads of it (its stemmed content words, capitalised words and word stems: ``terms``) and the setwise pruner's
(its words, capitalised words and entity phrases: ``words``), each versioned apart, so features stored before
them are still used, those words then read on first sight. :func:`chunk_features` computes
them; the knowledge base stores them in the chunk's metadata under :data:`FEATURES_KEY` at ingest and
:func:`seed_features` hands them to the pipeline's caches when the chunk is retrieved, so a chunk that came
from the store is never cold. Stored features are keyed by the text they were computed from: a changed text
simply finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

import numpy as np

from admit import _scope
from admit import _text as tx
from admit._lru import LRU
from admit._text import norm_hash, seed_signature, shingle_count, signature
from admit.backends.tokenizers.base import seed_counts
from admit.render import body_lines, on_body_lines
from admit.security import RULES_VERSION, chunk_kinds

__all__ = [
    "ENCODINGS",
    "FEATURES_KEY",
    "FEATURES_VERSION",
    "LEARNED_KIND",
    "TERMS_VERSION",
    "WORDS_VERSION",
    "chunk_features",
    "chunk_flags",
    "clear_caches",
    "envelope_lines",
    "features_current",
    "learned_flags",
    "seed_features",
]

FEATURES_KEY = "admit_features"
"""The metadata key the knowledge base stores features under (removed from the chunks it hands out)."""
FEATURES_VERSION = f"2:{RULES_VERSION}"
"""The stored form's version and the injection rule set's (:data:`admit.security.RULES_VERSION`): features
stored under another version, such as flags computed by an older scanner, are ignored and recomputed."""
TERMS_VERSION = 1
WORDS_VERSION = 1
"""The version of the stored ``words`` (a chunk's words, capitalised words and entity phrases, which the setwise
pruner reads): stored under another, they are ignored and read from the text."""
"""The version of the stored ``terms`` (the answerability stage's words of a chunk): stored under another, they are
ignored and read from the text."""
ENCODINGS = ("o200k_base", "cl100k_base")
"""Encodings whose counts are stored (the ones whose line counts add up; see ``count_by_lines``)."""

_FLAGS_MAX = 8192
T = TypeVar("T")
_FLAGS: LRU[tuple[str, str, str], tuple[str, ...]] = LRU(_FLAGS_MAX)


def chunk_flags(title: str, text: str) -> tuple[str, ...]:
    """The injection flag kinds of a chunk (title and text), remembered: the same chunks recur."""
    key = (_scope.current(), title, text)  # per tenant: a hit's speed must not tell one tenant another's texts
    hit = _FLAGS.get(key)
    if hit is not None:
        return hit
    kinds = tuple(chunk_kinds(title, text))
    _FLAGS.put(key, kinds)
    return kinds


LEARNED_KIND = "learned_injection"
"""The flag kind of the learned detector (:mod:`admit.security.learned`), beside the rules' kinds."""

_LEARNED: LRU[tuple[str, str, str], bool] = LRU(_FLAGS_MAX)


def learned_flags(chunks: Iterable[Any], embedder: Any) -> list[str]:
    """The ids of ``chunks`` (anything with ``id``, ``title``, ``text``) the learned detector flags, remembered
    per tenant scope like :func:`chunk_flags`; ``[]`` when the model or the embedder cannot run (advisory)."""
    items = list(chunks)
    scope = _scope.current()
    todo: list[Any] = []
    out: list[str] = []
    for c in items:
        hit = _LEARNED.get((scope, c.title, c.text))
        if hit is None:
            todo.append(c)
        elif hit:
            out.append(c.id)
    if todo:
        try:
            from admit.passages import passages
            from admit.security.learned import LearnedDetector

            det = LearnedDetector.load()
            # each chunk read as the passages the pruner embedded (their vectors are cached, or stored at ingest and
            # seeded by the knowledge base), so the detector encodes nothing again; a chunk is flagged when any of
            # its passages is
            parts = [[p or "-" for p in passages(c.title, c.text)] for c in todo]
            flat = det.passage_flags([p for ps in parts for p in ps], embedder)
            marks, k = [], 0
            for ps in parts:
                marks.append(any(flat[k : k + len(ps)]))
                k += len(ps)
        except Exception:  # the detector is advisory: a missing model or a failed embed flags nothing
            return out
        _LEARNED.put_many(((scope, c.title, c.text), flagged) for c, flagged in zip(todo, marks, strict=True))
        out += [c.id for c, flagged in zip(todo, marks, strict=True) if flagged]
    return out


def envelope_lines(text: str) -> list[str]:
    """The pieces of a chunk's text that the exact block count looks up (its lines as rendered in an envelope)."""
    return list(body_lines(text))


def answer_text(title: str, text: str) -> str:
    """What the answerability stage reads of a chunk: its title, a line break, its text (the text alone untitled)."""
    return f"{title}\n{text}" if title else text


def terms_features(title: str, text: str) -> dict[str, Any]:
    """The words the answerability stage reads of a chunk, JSON-ready: its stemmed content words in order
    (:data:`admit._text.key_stems`), and the stems its capitalised words (:data:`~admit._text.key_units`) and all
    its words (:data:`~admit._text.word_stems`) add to them."""
    t = answer_text(title, text)
    stems = tx.key_stems(t)
    own = set(stems)
    return {
        "v": TERMS_VERSION,
        "stems": " ".join(stems),  # words hold no space: one string, a third smaller than a list in JSON
        "caps": " ".join(sorted(tx.key_units(t) - own)),
        "words": " ".join(sorted(tx.word_stems(t) - own)),
    }


def words_features(title: str, text: str) -> dict[str, Any]:
    """A chunk's words as the setwise pruner reads them, JSON-ready: the lower-cased words of its title and text
    (:func:`admit._text.words`), how many of them are the title's (when the two read apart give the same words),
    its capitalised words and its entity phrases; and how many numbers the title and text (joined by a line
    break) hold and whether they name a year (``numbers``, ``year``: two setwise features)."""
    t = answer_text(title, text)
    found = tx.words(t)
    out: dict[str, Any] = {
        "v": WORDS_VERSION,
        "words": " ".join(found),
        "caps": " ".join(sorted(tx.capitalised_tokens(t))),
        "phrases": sorted(tx.entity_phrases(t)),
    }
    head = tx.words(title) if title else []
    if head + tx.words(text) == found:
        out["title"] = len(head)
    full = f"{title}\n{text}"  # the setwise features read the title and text so joined, even untitled
    out["numbers"], out["year"] = tx.number_count(full), tx.has_year(full)
    return out


def chunk_features(title: str, text: str, encodings: Iterable[str] = ENCODINGS) -> dict[str, Any]:
    """The JSON-ready features of a chunk: flag kinds, MinHash signature, envelope line counts per encoding, and the
    answerability stage's words (``terms``).

    Example:
        >>> f = chunk_features("Ports", "The server listens on port 8080.")
        >>> f["flags"], len(f["sig"]), f["shingles"], f["tokens"]["o200k_base"], f["terms"]["stems"]
        ([], 512, 4, [9], 'port server listen port 8080')
    """
    from admit.backends.tokenizers import resolve_tokenizer

    lines = envelope_lines(text)
    tokens = {}
    for enc in encodings:
        tok = resolve_tokenizer(enc)
        tokens[enc] = [tok.count(line) for line in lines]
    return {
        "v": FEATURES_VERSION,
        "flags": list(chunk_flags(title, text)),
        "sig": signature(text).astype("<u8").tobytes().hex(),
        "shingles": shingle_count(text),
        "hash": norm_hash(text),
        "tokens": tokens,
        "terms": terms_features(title, text),
        "words": words_features(title, text),
    }


def features_current(features: Any) -> bool:
    """Whether stored features are this version's, the answerability stage's words included (an ingest keeps them
    for an unchanged chunk, else computes them again)."""
    if not isinstance(features, Mapping) or features.get("v") != FEATURES_VERSION:
        return False
    return _usable(features.get("terms"), TERMS_VERSION, _TERMS) and _usable(
        features.get("words"), WORDS_VERSION, _WORDS
    )


_TERMS = ("stems", "caps", "words")
_WORDS = ("words", "caps", "phrases")


def _usable(stored: Any, version: int, keys: Sequence[str]) -> bool:
    """Whether stored ``terms`` or ``words`` are of ``version`` and hold lists of strings under ``keys``."""
    return isinstance(stored, Mapping) and stored.get("v") == version and _word_lists(stored, keys) is not None


def seed_features(title: str, text: str, features: Any) -> bool:
    """Hand stored features to the pipeline's caches; ``False`` (and nothing seeded) if they do not fit.

    Features that do not match the text (another version, a different line count, a malformed signature)
    are ignored rather than trusted. Stored ``terms`` of another version (or none: stored before they were) are
    left out, the rest seeded.
    """
    if not isinstance(features, Mapping) or features.get("v") != FEATURES_VERSION:
        return False
    try:
        sig = np.frombuffer(bytes.fromhex(str(features["sig"])), dtype="<u8").astype(np.uint64)
        flags = [str(k) for k in features["flags"]]
        tokens = features.get("tokens") or {}
        if sig.shape != (32,) or not isinstance(tokens, Mapping):
            return False
        n_shingles = int(features["shingles"])
        digest = str(features["hash"])
        counts = {str(enc): [int(n) for n in ns] for enc, ns in tokens.items()}
    except (KeyError, TypeError, ValueError):
        return False
    seed_signature(text, sig)
    shingle_count.seed(text, n_shingles)
    norm_hash.seed(text, digest)
    _FLAGS.put((_scope.current(), title, text), tuple(flags))
    lines = body_lines.peek(text)
    if lines is not None:
        _seed_line_counts(lines, counts)
    else:  # seeded when the text's lines are first split (a text never rendered is never split)
        _COUNTS.put(text, counts)
    _seed_terms(answer_text(title, text), features.get("terms"))
    _seed_words(title, text, features.get("words"))
    return True


def _word_lists(stored: Mapping[str, Any], keys: Sequence[str]) -> list[list[str]] | None:
    """The word lists under ``keys`` (words joined by spaces; ``phrases``: a list of strings), else ``None``
    (stored data of another shape is not trusted)."""
    out: list[list[str]] = []
    for k in keys:
        v = stored.get(k)
        if k == "phrases" and isinstance(v, list) and all(isinstance(w, str) for w in v):
            out.append(v)
        elif k != "phrases" and isinstance(v, str):
            out.append(v.split(" ") if v else [])
        else:
            return None
    return out


_COUNTS: LRU[str, dict[str, list[int]]] = LRU(_FLAGS_MAX)
"""Stored token counts of texts whose lines are not split yet, per encoding."""


def _seed_line_counts(lines: tuple[str, ...], counts: Mapping[str, list[int]]) -> None:
    """Seed each encoding's stored counts of ``lines`` (counts of another line count are not trusted)."""
    for enc, ns in counts.items():
        if len(ns) == len(lines):
            seed_counts(enc, zip(lines, ns, strict=True))


def _lines_split(text: str, lines: tuple[str, ...]) -> None:
    counts = _COUNTS.pop(text)
    if counts is not None:
        _seed_line_counts(lines, counts)


on_body_lines(_lines_split)


def _split(joined: str) -> list[str]:
    return joined.split(" ") if joined else []


class _Once(Generic[T]):
    """``make()``, made on the first call and then remembered: what several seeds of one chunk share (a stored
    string split once). Far cheaper to create than ``functools.cache`` (a chunk's seeding makes two per retrieval);
    two threads calling at once may both make it, and both get an equal value."""

    __slots__ = ("_make", "_value")

    def __init__(self, make: Callable[[], T]) -> None:
        self._make: Callable[[], T] | None = make
        self._value: T | None = None

    def __call__(self) -> T:
        make = self._make
        if make is not None:
            self._value = make()
            self._make = None  # after the value is set: a caller that sees no maker reads the value
        return cast(T, self._value)


def _seed_words(title: str, text: str, stored: Any) -> None:
    """Seed a chunk's words, capitalised words and entity phrases from stored ``words`` of this version, each read
    from its stored string on first use (a pack reads none of them, a setwise score all)."""
    if not isinstance(stored, Mapping) or stored.get("v") != WORDS_VERSION:
        return
    found, caps, phrases = (stored.get(k) for k in _WORDS)
    if not (isinstance(found, str) and isinstance(caps, str) and isinstance(phrases, list)):
        return
    if not all(isinstance(p, str) for p in phrases):
        return
    t = answer_text(title, text)
    every = _Once(lambda: _split(found))  # split once for the three seeds that read it
    tx.seed_words(t, every)
    tx.capitalised_tokens.seed_later(t, lambda: frozenset(_split(caps)))
    tx.entity_phrases.seed_later(t, lambda: frozenset(phrases))
    numbers, year = stored.get("numbers"), stored.get("year")
    if type(numbers) is int and numbers >= 0 and type(year) is bool:  # features stored before hold neither: read then
        full = f"{title}\n{text}"
        tx.number_count.seed(full, numbers)
        tx.has_year.seed(full, year)
    n = stored.get("title")
    if title and isinstance(n, int) and 0 <= n <= (found.count(" ") + 1 if found else 0):
        # the title's and the text's words read apart: the first n words and the rest
        tx.seed_words(title, lambda: every()[:n])
        tx.seed_words(text, lambda: every()[n:])


def _seed_terms(text: str, terms: Any) -> None:
    """Seed the answerability stage's words of ``text`` from stored ``terms`` of this version (else nothing), each
    read from its stored string on first use."""
    if not isinstance(terms, Mapping) or terms.get("v") != TERMS_VERSION:
        return
    stems, caps, words = (terms.get(k) for k in _TERMS)
    if not (isinstance(stems, str) and isinstance(caps, str) and isinstance(words, str)):
        return
    own = _Once(lambda: frozenset(_split(stems)))
    tx.key_stems.seed_later(text, lambda: tuple(_split(stems)))
    tx.key_units.seed_later(text, lambda: own().union(_split(caps)))
    tx.word_stems.seed_later(text, lambda: own().union(_split(words)))


def clear_caches() -> None:
    """Forget remembered flags, signatures, shingles and token counts (benchmarks measure cold runs with it)."""
    from admit._text import clear_caches as clear_text
    from admit.backends.tokenizers.base import clear_count_cache

    clear_text()
    clear_count_cache()
    _FLAGS.clear()
    _LEARNED.clear()
    _COUNTS.clear()

"""Passages and question text: how chunks and questions are cut and written before embedding.

A neutral module shared by the stages that embed text (the dense reranker, the setwise pruner) and by
the knowledge base, which stores one vector per passage at ingest so that pruning a search never
encodes a stored chunk again. Everything that embeds must cut the same way, or stored vectors would
not be reused.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import numpy as np

from admit._text import bm25_matrix, content_tokens, content_words, nfc, sentences, stem

__all__ = [
    "LIVE_PASSAGES",
    "MAX_PASSAGES",
    "PASSAGE_VECTORS_KEY",
    "PASSAGE_WORDS",
    "best_passages",
    "decode_vectors",
    "encode_vectors",
    "list_passages",
    "nfc",
    "passages",
    "question_text",
]

#: Word budget of one passage (MiniLM reads 256 word pieces; nothing is truncated at this size).
PASSAGE_WORDS = 180
#: At most this many passages of a chunk are embedded (the first ones): bounds latency on huge chunks.
MAX_PASSAGES = 24
#: Passages the setwise pruner reads per chunk of a list, on average (:func:`list_passages`): every chunk's first, then
#: the best by BM25 up to three times the list's chunks. Every passage of a documentation chunk (a median of five of
#: 180 words) cost about four times the one 256-word-piece unit a dense top-N encodes per chunk; R@68 on RHDH's
#: documentation lists was 0.990 with this budget, 0.989 with every passage, 0.974 with two (docs/results.md).
#: Fewer cost recall whichever passages are read (``bench/bench_setwise_frontier.py``: 2.5 a chunk, 0.981; the 2.5
#: of highest true cosine, 0.986): the trees were fitted on every passage.
LIVE_PASSAGES = 3


def question_text(question: str) -> str:
    """The text embedded for a question (shared by every stage that embeds, so vectors are reused)."""
    return nfc(question).strip() or "?"


def passages(title: str, text: str, max_words: int = PASSAGE_WORDS, max_passages: int = MAX_PASSAGES) -> list[str]:
    """Splits a chunk into sentence-aligned passages for embedding.

    Sentences are packed greedily into windows of at most ``max_words`` words (a longer sentence is
    cut hard). Each passage is prefixed with the title. At most ``max_passages`` passages are kept
    (the first ones), which bounds latency on very long chunks.

    Args:
        title: The chunk title (may be empty).
        text: The chunk text (may be empty).
        max_words: The word budget of a passage.
        max_passages: The maximum number of passages.

    Returns:
        At least one passage string.
    """
    every = nfc(text).split()
    if every and len(every) <= max_words and max_passages >= 1:
        # one passage: the sentence cuts fall only at white space, so its words are the text's own, in order
        head = nfc(title).strip()
        return [f"{head}\n" + " ".join(every) if head else " ".join(every)]
    return _sentence_passages(title, text, max_words, max_passages)


def _sentence_passages(title: str, text: str, max_words: int, max_passages: int) -> list[str]:
    """:func:`passages` by its sentences (the cut of a text of more words than one passage holds)."""
    title = nfc(title).strip()
    text = nfc(text).strip()
    prefix = f"{title}\n" if title else ""
    if not text:
        return [title or ""]
    pieces: list[list[str]] = []
    for sent in sentences(text, by="marks"):
        toks = sent.split()
        pieces.extend(toks[i : i + max_words] for i in range(0, len(toks), max_words))
    out: list[str] = []
    cur: list[str] = []
    for toks in pieces:
        if cur and len(cur) + len(toks) > max_words:
            out.append(prefix + " ".join(cur))
            cur = []
            if len(out) >= max_passages:
                return out
        cur.extend(toks)
    if cur and len(out) < max_passages:
        out.append(prefix + " ".join(cur))
    return out or [prefix.strip()]


def best_passages(question: str, title: str, text: str, max_passages: int = MAX_PASSAGES) -> tuple[list[str], int]:
    """The passages of a chunk to embed for ``question``, and how many it has in all.

    A chunk of at most ``max_passages`` passages gives all of them (the same as :func:`passages`, so vectors
    stored at ingest are reused). A longer one (a whole document handed over by a framework) gives its first
    passage and the ``max_passages - 1`` others that share the most words with the question, in document order:
    it is graded by its best passages, never by its opening alone, and its cost stays bounded.
    """
    every = passages(title, text, max_passages=1 << 30)
    if len(every) <= max_passages:
        return every, len(every)
    q = content_words(question)
    overlap = [len(q & content_words(p)) for p in every]
    best = sorted(range(1, len(every)), key=lambda i: (-overlap[i], i))[: max_passages - 1]
    return [every[i] for i in sorted({0, *best})], len(every)


def _passage_terms(passage: str) -> list[str]:
    """The stemmed, folded content tokens of a passage (what the passage choice's BM25 counts)."""
    return [stem(w) for w in content_tokens(passage, fold=True) if len(w) > 1]


def list_passages(question: str, chunks: Sequence[tuple[str, str]], per_chunk: int | None = None) -> list[list[str]]:
    """The passages of each chunk of a list to embed for ``question``.

    ``per_chunk=None`` (the default): every passage of every chunk (each chunk cut by :func:`best_passages`), as the
    setwise model was fitted. A number: at most that many times the list's chunks in all. Every chunk gives its
    first passage (its heading and opening: every passage carries the title); the rest of the budget goes to the
    other passages that BM25 over all the list's passages ranks highest for the question (ties: the earlier chunk,
    then passage). A list whose passages fit the budget (short chunks: a Wikipedia paragraph is one passage) is read
    whole. Every string is :func:`passages`' own, so vectors stored at ingest are reused. In document order per
    chunk.
    """
    every = [best_passages(question, title, text)[0] for title, text in chunks]
    if per_chunk is None:
        return every
    budget = max(per_chunk, 1) * len(every)
    if sum(len(ps) for ps in every) <= budget:
        return every
    keep = [{0} for _ in every]
    room = budget - len(every)
    rest = [(i, k) for i, ps in enumerate(every) for k in range(1, len(ps))]
    if room > 0 and rest:
        scores = bm25_matrix([_passage_terms(question)], [_passage_terms(every[i][k]) for i, k in rest])[0]
        for r in sorted(range(len(rest)), key=lambda r: (-float(scores[r]), r))[:room]:
            keep[rest[r][0]].add(rest[r][1])
    return [[ps[k] for k in sorted(ks)] for ps, ks in zip(every, keep, strict=True)]


#: Metadata key under which the knowledge base stores the passage vectors of a multi-passage chunk.
PASSAGE_VECTORS_KEY = "admit_passage_vectors"


def encode_vectors(model: str, vecs: Any) -> dict[str, Any]:
    """The stored form of a chunk's passage vectors: the model's name and the float32 rows in base64."""
    arr = np.ascontiguousarray(np.asarray(vecs, dtype=np.float32))
    return {"model": model, "dim": int(arr.shape[1]), "b64": base64.b64encode(arr.tobytes()).decode("ascii")}


def decode_vectors(stored: Any, model: str, count: int | None) -> Any:
    """The passage vectors stored by :func:`encode_vectors`, or ``None`` when absent, malformed or of another model.

    ``count``: the passages the chunk has (``None``: as many whole rows as are stored, at least one)."""
    if not isinstance(stored, dict) or stored.get("model") != model:
        return None
    try:
        dim = int(stored["dim"])
        arr = np.frombuffer(base64.b64decode(stored["b64"]), dtype=np.float32)
    except (KeyError, TypeError, ValueError):
        return None
    if dim <= 0 or (arr.size != dim * count if count is not None else arr.size == 0 or arr.size % dim):
        return None
    return arr.reshape(-1, dim)

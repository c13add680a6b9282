"""A sentence-level reader of the admitted evidence: does one sentence state what the question asks?

A near miss (the same documents' neighbourhood without the answer) holds the question's entities in passages about
them, but no sentence states the asked relation; the answer's sentence names the relation's words together and
holds a value of the kind the question asks for. The reader splits the most probable admitted chunks into sentences
(at most :data:`READ_CHUNKS` chunks, :data:`READ_SENTENCES` sentences each, chosen by the question's words, so the
cost per request is a sentence split and one encoding of at most a dozen short texts) and reads:

- ``sent_dense``: the best sentence's MiniLM cosine to the question (the sentence under its chunk's title);
- ``sent_cov``: the share of the question's content words the best sentence holds (its title's words included);
- ``sent_pair_cov``: the share two sentences of two different chunks hold together (a bridge question's two hops);
- ``sent_type``: whether the best sentence holds a value of the type the question asks for (who: a name, when: a
  date or year, how many: a number, which version: a version string, how do I: a command or step; 1.0 for a
  question that asks no such type).

No shipped model has to read them: :func:`reader_features` is called only for a model that does
(:data:`READER`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from admit import _linear
from admit import _text as tx
from admit.passages import question_text
from admit.question import ASKS_HOWTO, Question, read_question

if TYPE_CHECKING:
    from admit.backends.embedders.base import Embedder

__all__ = [
    "READER",
    "READ_CHUNKS",
    "READ_SENTENCES",
    "answer_type",
    "reader_features",
    "reader_texts",
    "sentence_units",
]

#: The reader's features (:func:`reader_features`).
READER = ("sent_dense", "sent_cov", "sent_pair_cov", "sent_type")
#: The reader reads at most this many admitted chunks (the most probable first) ...
READ_CHUNKS = 3
#: ... and of each at most this many sentences (those holding the most of the question's words; ties: the first).
READ_SENTENCES = 4
#: A sentence longer than this (words) is cut: a table or a code block with no sentence marks is not one sentence.
SENTENCE_WORDS = 60

#: What a question asks for, by answer type, in the order :func:`answer_type` tries them (``steps`` is the
#: question's how-to reading, :data:`admit.question.ASKS_HOWTO`).
_ASKS = _linear.table(
    "reader",
    {
        "asks_version": r"\b(which|what)\s+(\w+\s+)?(version|release)\b",
        "asks_count": r"^\s*(?:\w+\s+){0,2}?how\s+(many|much|long|old|far|big|large|often|tall)\b",
        "asks_when": r"^\s*(?:\w+\s+){0,2}?when\b|\b(what|which)\s+(year|date|day|month|decade|century)\b",
        "asks_who": r"^\s*(?:\w+\s+){0,2}?(who|whom|whose)\b",
        "asks_where": r"^\s*(?:\w+\s+){0,2}?where\b",
    },
    re.IGNORECASE,
)
_ASKED = (
    ("version", _ASKS["asks_version"]),
    ("steps", ASKS_HOWTO),
    ("count", _ASKS["asks_count"]),
    ("date", _ASKS["asks_when"]),
    ("name", _ASKS["asks_who"]),
    ("place", _ASKS["asks_where"]),
)
#: The value a sentence holds for an answer type (a name or a place: :func:`_holds_type` reads capitalised words).
_HOLDS = _linear.table(
    "reader",
    {
        "date": (
            r"\b(1[0-9]{3}|20[0-9]{2})\b|\b(january|february|march|april|may|june|july|august|september|october"
            r"|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b|\b\d{1,2}(st|nd|rd|th)\b"
            r"|\bcentury\b"
        ),
        "number": (
            r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred"
            r"|thousand|million|billion|dozen|once|twice)\b"
        ),
        "version": (r"\b\d+\.\d+", 0),
        "step": (
            r"(^|\s)--?[a-z][\w-]*|`[^`]+`|\$ |\w+\s*=\s*\S|\b[a-z]+_[a-z_]+\b|[a-z]+\(\)|/[a-z]+|\b(run|use|add|set"
            r"|pass|call|type|enter|configure|install|create|edit|write|put|enable|disable|click|select|open|choose"
            r"|specify|define)\b"
        ),
        "capitalised": (r"\b[A-Z][\w'-]+", 0),
    },
    re.IGNORECASE,
)
_VALUE_OF = {"version": _HOLDS["version"], "steps": _HOLDS["step"], "count": _HOLDS["number"], "date": _HOLDS["date"]}
_CAPITAL = _HOLDS["capitalised"]


def answer_type(question: str | Question) -> str:
    """The type of value the question asks for: ``version``, ``steps``, ``count``, ``date``, ``name``, ``place`` or
    ``""`` (none stated)."""
    q = read_question(question).text
    for name, pat in _ASKED:
        if pat.search(q):
            return name
    return ""


def _holds_type(kind: str, sentence: str, q_words: set[str]) -> bool:
    """Whether ``sentence`` holds a value of ``kind`` (a name or place: a capitalised word the question lacks, past
    the sentence's first word)."""
    value = _VALUE_OF.get(kind)
    if value is not None:
        return bool(value.search(sentence))
    if kind in ("name", "place"):
        caps = [m.group(0) for m in _CAPITAL.finditer(sentence)][1:] if sentence[:1].isupper() else []
        caps = caps or [m.group(0) for m in _CAPITAL.finditer(sentence) if m.start() > 0]
        return any(c.lower() not in q_words for c in caps)
    return True


def _stem(w: str) -> str:
    return tx.stem(w, ies=False)


def sentence_units(text: str) -> set[str]:
    """The stemmed content words of a sentence (what the question's words are matched against)."""
    return set(tx.key_units(text))


def _split(text: str) -> tuple[str, list[str]]:
    """(title, sentences) of an admitted text written ``title\\ntext`` (a long sentence is cut into pieces)."""
    head, _, body = text.partition("\n")
    if not body:
        head, body = "", head
    out: list[str] = []
    for s in tx.sentences(body, by="marks"):
        toks = s.split()
        out.extend(" ".join(toks[i : i + SENTENCE_WORDS]) for i in range(0, len(toks), SENTENCE_WORDS))
    return head.strip(), out


def _chunk_sentences(qs: set[str], text: str) -> list[tuple[str, set[str], str]]:
    """The sentences the reader reads of one admitted text: (``title: sentence``, its units with the title's,
    the sentence), at most :data:`READ_SENTENCES`, those holding the most of the question's units ``qs``."""
    title, sents = _split(text)
    t_units = sentence_units(title) if title else set()
    scored = []
    for k, s in enumerate(sents):
        su = sentence_units(s)
        scored.append((-len(qs & su), k, s, su | t_units))
    return [(f"{title}: {s}" if title else s, su, s) for _, _, s, su in sorted(scored)[:READ_SENTENCES]]


def reader_texts(question: str | Question, text: str) -> list[str]:
    """The texts the reader would encode for ``text`` as an admitted chunk (a fit fills its vector cache with them
    in one batch)."""
    q = read_question(question)
    return [shown for shown, _, _ in _chunk_sentences({_stem(w) for w in q.content_terms}, text)]


def reader_features(
    question: str | Question,
    texts: Sequence[str],
    *,
    probs: Sequence[float] | None = None,
    embedder: Embedder | None = None,
) -> dict[str, float]:
    """The reader's features (:data:`READER`) of the admitted ``texts`` (title, newline, text); ``probs``: the
    pruner's probability per text (the most probable are read), ``embedder``: MiniLM (without it ``sent_dense`` is
    0.0). Evidence with no sentence gives zeros."""
    q = read_question(question)
    q_units = list(dict.fromkeys(_stem(w) for w in q.content_terms))
    order = sorted(range(len(texts)), key=lambda i: -(probs[i] if probs is not None and i < len(probs) else 0.0))
    qs = set(q_units)
    picked: list[tuple[int, str, set[str], str]] = []  # (chunk, "title: sentence", units with the title's, sentence)
    for i in order[:READ_CHUNKS]:
        picked.extend((i, shown, su, s) for shown, su, s in _chunk_sentences(qs, texts[i]))
    if not picked:
        return dict.fromkeys(READER, 0.0)
    n = max(1, len(q_units))
    covs = [len(qs & su) / n for _, _, su, _ in picked]
    pair = max(covs)
    for a in range(len(picked)):
        for b in range(a + 1, len(picked)):
            if picked[a][0] != picked[b][0]:
                pair = max(pair, len(qs & (picked[a][2] | picked[b][2])) / n)
    dense = [0.0] * len(picked)
    if embedder is not None:
        vecs = np.asarray(embedder.embed([question_text(q.text), *(s for _, s, _, _ in picked)]), dtype=np.float64)
        dense = [float(x) for x in vecs[1:] @ vecs[0]]
    best = max(range(len(picked)), key=lambda j: (dense[j], covs[j]))
    kind = answer_type(q)
    q_words = {w.lower() for w in tx.words(q.text)}
    typed = 1.0
    if kind:
        # the type read in the two most similar sentences (the answer's and its neighbour)
        top = sorted(range(len(picked)), key=lambda j: (-dense[j], -covs[j]))[:2]
        typed = float(any(_holds_type(kind, picked[j][3], q_words) for j in top))
    return {
        "sent_dense": dense[best] if embedder is not None else 0.0,
        "sent_cov": max(covs),
        "sent_pair_cov": pair,
        "sent_type": typed,
    }

"""Within-list and question-level features of the setwise scorer (one row per chunk).

Every per-chunk feature is relative to the list it sits in (z-scores, ranks, gaps to the best, shares of
the question's words), so that the same model reads a list of Wikipedia paragraphs and a list of long
documentation sections alike. Question-level features describe the question's form (nesting, comparison,
answer type, identifiers) and the list's shape (size, chunk length, score spread).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from admit._text import STOPWORDS, bm25_matrix
from admit.backends.embedders.base import Embedder, l2_normalise
from admit.errors import BackendOutputError
from admit.passages import list_passages, nfc, question_text
from admit.prune.setwise_model import text as tx
from admit.prune.setwise_model.links import build_links
from admit.question import Question, read_question

__all__ = [
    "BASE_FEATURES",
    "QUESTION_FEATURES",
    "Prepared",
    "SetwiseItem",
    "embed_items",
    "prepare",
    "rank_inv",
    "zscore",
]

FloatArray = npt.NDArray[np.float64]

#: Lexical features read at most this many words of a chunk.
MAX_WORDS_LEXICAL = 6000

BASE_FEATURES: tuple[str, ...] = (
    "dense",
    "dense_z",
    "dense_gap_top",
    "dense_rank_inv",
    "dense_top2_z",
    "bm25_z",
    "bm25_rel",
    "bm25_rank_inv",
    "hybrid_rank_inv",
    "q_token_cov",
    "q_entity_cov",
    "title_in_question",
    "title_token_cov",
    "log_words_z",
    "ident_hit",
    "ident_other",
    "q_bigram_cov",
    "q_idf_cov",
    "q_idf_cov_z",
    "has_year",
    "number_density_z",
    "year_for_when",
    "number_for_how_many",
)
QUESTION_FEATURES: tuple[str, ...] = (
    "q_log_n",
    "q_log_chunk_words",
    "q_log_len",
    "q_nested",
    "q_relative",
    "q_comparison",
    "q_or_choice",
    "q_entities",
    "q_dense_spread",
    "q_dense_top_gap",
    *(f"q_wh_{name}" for name, _ in tx.WH_CUES),
    "q_has_identifier",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SetwiseItem:
    """One retrieved chunk as the scorer sees it.

    Attributes:
        id: The chunk id (only echoed in reasons).
        title: The chunk title ("" when there is none).
        text: The chunk text.
        score: An optional upstream retriever score (accepted, not used by the fitted model).
        version: The release the chunk's document is of (the registry's ``version``), read by the release rule.
    """

    id: str
    title: str
    text: str
    score: float | None = None
    version: str = ""


@dataclass(slots=True)
class Prepared:
    """Everything the model needs about one (question, list) pair; computed once, reused by stages.

    Attributes:
        base: Per-item base features, shape (n, len(BASE_FEATURES)).
        qfeat: Question-level features, shape (len(QUESTION_FEATURES),).
        links: Link matrices, shape (len(LINK_NAMES), n, n), zero diagonal, values in [0, 1].
        qvec: The question vector.
        vecs: The chunk vectors (n, dim).
        dense: Raw dense scores (n,).
        bm25: Raw BM25 scores (n,).
        labels: Short display labels of the items (title or id) for reasons.
        q_hits: Which of the question's content words each chunk contains, shape (n, words).
        q_is_entity: Which of those words are written capitalised in the question.
        ident_hit: Whether each chunk names an identifier the question names.
        ident_other: Whether each chunk names only other identifiers of the asked kind.
    """

    base: FloatArray
    qfeat: FloatArray
    links: FloatArray
    qvec: FloatArray
    vecs: FloatArray
    dense: FloatArray
    bm25: FloatArray
    labels: list[str] = field(default_factory=list)
    q_hits: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    q_is_entity: FloatArray = field(default_factory=lambda: np.zeros(0))
    ident_hit: FloatArray = field(default_factory=lambda: np.zeros(0))
    ident_other: FloatArray = field(default_factory=lambda: np.zeros(0))

    @property
    def n(self) -> int:
        """Number of items."""
        return int(self.base.shape[0])

    def feature(self, name: str) -> FloatArray:
        """One base feature column by name."""
        return self.base[:, BASE_FEATURES.index(name)]

    def qfeature(self, name: str) -> float:
        """One question feature by name."""
        return float(self.qfeat[QUESTION_FEATURES.index(name)])


def zscore(x: FloatArray) -> FloatArray:
    """Within-list z-score (zeros when the list is constant)."""
    if x.size == 0:
        return x.astype(np.float64)
    sd = float(x.std())
    if sd < 1e-9:
        return np.zeros_like(x, dtype=np.float64)
    return (x - float(x.mean())) / sd


def rank_inv(x: FloatArray) -> FloatArray:
    """1 / (1 + rank), rank 0 for the best score; tied scores share the better rank."""
    ranks = (x[None, :] > x[:, None]).sum(axis=1).astype(np.float64)
    out: FloatArray = 1.0 / (1.0 + ranks)
    return out


def _embed(embedder: Embedder, texts: Sequence[str]) -> FloatArray:
    """The texts' L2-normalised vectors (float64).

    Raises:
        ValueError: If the embedder returns an array of the wrong shape.
    """
    mat = np.asarray(embedder.embed(list(texts)), dtype=np.float64)
    if mat.ndim != 2 or mat.shape[0] != len(texts):
        raise BackendOutputError("embedder returned an array of the wrong shape")
    out: FloatArray = l2_normalise(mat).astype(np.float64)
    return out


def embed_items(
    question: str, items: Sequence[SetwiseItem], embedder: Embedder, passage_budget: int | None = None
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Embeds the question and the items' passages in one call, each distinct text once.

    Args:
        question: The question.
        items: The chunks.
        embedder: The embedder (a knowledge base's cache holds the stored passage vectors).
        passage_budget: Passages read per chunk of the list (:func:`admit.passages.list_passages`); ``None``:
            every passage.

    Returns:
        (question vector, chunk vectors (n, d), dense max score (n,), dense top-2 mean (n,)).

    Raises:
        ValueError: If the embedder returns an array of the wrong shape.
    """
    chosen = list_passages(question, [(it.title, it.text) for it in items], per_chunk=passage_budget)
    texts = [question_text(question), *(p or "-" for ps in chosen for p in ps)]
    # each distinct text once per call, whatever the embedder (a documentation list repeats a section across
    # releases); the process's shared embedder also remembers it across calls
    distinct = {t: k for k, t in enumerate(dict.fromkeys(texts))}
    mat = _embed(embedder, list(distinct))[[distinct[t] for t in texts]]
    owners = [idx for idx, ps in enumerate(chosen) for _ in ps]
    qvec = mat[0]
    pvecs = mat[1:]
    sims = pvecs @ qvec
    n = len(items)
    vecs = np.zeros((n, mat.shape[1]), dtype=np.float64)
    dense = np.zeros(n, dtype=np.float64)
    top2 = np.zeros(n, dtype=np.float64)
    own = np.asarray(owners, dtype=np.int64)
    for idx in range(n):
        sel = own == idx
        s = np.sort(sims[sel])[::-1]
        dense[idx] = s[0]
        top2[idx] = s[:2].mean()
        v = pvecs[sel].mean(axis=0)
        nv = float(np.linalg.norm(v))
        vecs[idx] = v / nv if nv > 0 else v
    return qvec, vecs, dense, top2


def _phrase_features(
    q_tokens: Sequence[str], doc_tokens: Sequence[Sequence[str]], doc_sets: Sequence[set[str]]
) -> tuple[FloatArray, FloatArray]:
    """(share of the question's adjacent word pairs a chunk also has adjacent, in-list-IDF-weighted share of
    the question's words a chunk has) per chunk.

    Documentation lists are full of look-alikes that share the question's words one by one (the same manual,
    the same API family); the pair and the rare words tell the section that says what was asked.
    """
    n = len(doc_sets)
    q_pairs = set(itertools.pairwise(q_tokens))
    q_uniq = list(dict.fromkeys(q_tokens))
    bigram = np.zeros(n, dtype=np.float64)
    idf_cov = np.zeros(n, dtype=np.float64)
    if not n or not q_uniq:
        return bigram, idf_cov
    df = np.array([sum(t in s for s in doc_sets) for t in q_uniq], dtype=np.float64)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    total = float(idf.sum()) or 1.0
    for j, (toks, tset) in enumerate(zip(doc_tokens, doc_sets, strict=True)):
        if q_pairs:
            pairs = set(itertools.pairwise(toks)) & q_pairs
            bigram[j] = len(pairs) / len(q_pairs)
        idf_cov[j] = float(sum(w for t, w in zip(q_uniq, idf, strict=True) if t in tset)) / total
    return bigram, idf_cov


def _identifier_features(question: Question, texts: Sequence[str]) -> tuple[FloatArray, FloatArray]:
    """(names an asked identifier, names only other identifiers of an asked kind) per chunk."""
    n = len(texts)
    hit = np.zeros(n, dtype=np.float64)
    other = np.zeros(n, dtype=np.float64)
    asked = question.identifiers
    if not asked:
        return hit, other
    kinds = {tx.identifier_kind(i) for i in asked}
    for j, t in enumerate(texts):
        found = tx.identifiers(t)
        if asked & found:
            hit[j] = 1.0
        elif any(tx.identifier_kind(f) in kinds for f in found):
            other[j] = 1.0
    return hit, other


def _title_features(keys: Sequence[tuple[str, str]], q_low: str, q_set: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per item: whether the question says its title (1.0) or its title's head (0.7), and how much of the head's
    words the question holds."""
    title_in_q = np.array(
        [1.0 if tx.contains_phrase(q_low, f) else (0.7 if tx.contains_phrase(q_low, h) else 0.0) for f, h in keys],
        dtype=np.float64,
    )
    title_cov = np.zeros(len(keys), dtype=np.float64)
    for j, (_, head) in enumerate(keys):
        ht = [w for w in head.split() if w not in STOPWORDS]
        if ht:
            title_cov[j] = sum(w in q_set for w in ht) / len(ht)
    return title_in_q, title_cov


def _question_features(record: Question, n_words: np.ndarray, dense: np.ndarray, wh: np.ndarray) -> np.ndarray:
    """The list's and the question's own features (:data:`QUESTION_FEATURES` order)."""
    n = len(dense)
    question = record.text
    sd = np.sort(dense)[::-1]
    return np.array(
        [
            math.log(max(n, 1)),
            math.log1p(float(n_words.mean())) if n else 0.0,
            math.log1p(len(record.words)),
            float(len(tx.NESTED.findall(question))),
            float(len(tx.RELATIVE.findall(question))),
            float(len(tx.COMPARISON.findall(question)) > 0),
            float(len(tx.OR_CHOICE.findall(question)) > 0),
            float(len(set(record.names))),
            float(sd.std()) if n else 0.0,
            float(sd[0] - sd[1]) if n > 1 else 0.0,
            *wh,
            1.0 if record.identifiers else 0.0,
        ],
        dtype=np.float64,
    )


def prepare(
    question: str | Question, items: Sequence[SetwiseItem], embedder: Embedder, passage_budget: int | None = None
) -> Prepared:
    """Computes embeddings, base features, question features and link matrices.

    Args:
        question: The question (its record, :func:`admit.question.read_question`, or the text).
        items: The chunks.
        embedder: The embedder.
        passage_budget: Passages read per chunk (:func:`embed_items`); ``None``: every passage.

    Returns:
        The prepared features.
    """
    n = len(items)
    record = read_question(question)
    question = record.text
    qvec, vecs, dense, top2 = embed_items(question, items, embedder, passage_budget)

    q_tokens = list(record.content_terms)
    q_set = set(q_tokens)
    q_ents = set(record.names)
    q_low = " " + " ".join(record.words) + " "
    full_texts = [f"{it.title}\n{it.text}" for it in items]
    doc_tokens = [tx.content_tokens(t)[:MAX_WORDS_LEXICAL] for t in full_texts]
    doc_sets = [set(d) for d in doc_tokens]
    n_words = np.array([len(nfc(it.text).split()) + len(nfc(it.title).split()) for it in items], dtype=np.float64)

    bm25 = bm25_matrix([q_tokens], doc_tokens)[0] if n else np.zeros(0)
    bm_max = float(bm25.max()) if n and bm25.max() > 0 else 1.0
    hybrid = rank_inv(dense) + rank_inv(bm25) if n else np.zeros(0)

    q_cov = np.array([len(q_set & s) / max(1, len(q_set)) for s in doc_sets], dtype=np.float64)
    ent_sets = [tx.capitalised_tokens(t) | s for t, s in zip(full_texts, doc_sets, strict=True)]
    q_ent_cov = np.array([len(q_ents & e) / max(1, len(q_ents)) for e in ent_sets], dtype=np.float64)
    keys = [tx.title_keys(it.title) for it in items]
    title_in_q, title_cov = _title_features(keys, q_low, q_set)
    ident_hit, ident_other = _identifier_features(record, full_texts)
    bigram_cov, idf_cov = _phrase_features(q_tokens, doc_tokens, doc_sets)
    wh = np.array([1.0 if pat.search(question) else 0.0 for _, pat in tx.WH_CUES], dtype=np.float64)
    has_year = np.array([1.0 if tx.has_year(t) else 0.0 for t in full_texts], dtype=np.float64)
    num_density = np.array(
        [tx.number_count(t) / max(1.0, w) for t, w in zip(full_texts, n_words, strict=True)], dtype=np.float64
    )

    dmax = float(dense.max()) if n else 0.0
    base = (
        np.column_stack(
            [
                dense,
                zscore(dense),
                dense - dmax,
                rank_inv(dense),
                zscore(top2),
                zscore(bm25),
                bm25 / bm_max,
                rank_inv(bm25),
                rank_inv(hybrid),
                q_cov,
                q_ent_cov,
                title_in_q,
                title_cov,
                zscore(np.log1p(n_words)),
                ident_hit,
                ident_other,
                bigram_cov,
                idf_cov,
                zscore(idf_cov),
                has_year,
                zscore(num_density),
                has_year * wh[0],
                num_density * wh[3],
            ]
        )
        if n
        else np.zeros((0, len(BASE_FEATURES)))
    )

    qfeat = _question_features(record, n_words, dense, wh)

    links = build_links(question, items, full_texts, doc_tokens, doc_sets, ent_sets, keys, q_set, q_ents, qvec, vecs)
    labels = [(it.title.strip() or it.id)[:40] for it in items]
    q_uniq = list(dict.fromkeys(q_tokens))
    q_hits = np.array([[1.0 if t in s else 0.0 for t in q_uniq] for s in ent_sets], dtype=np.float64).reshape(
        n, len(q_uniq)
    )
    q_is_entity = np.array([1.0 if t in q_ents else 0.0 for t in q_uniq], dtype=np.float64)
    return Prepared(
        base=base,
        qfeat=qfeat,
        links=links,
        qvec=qvec,
        vecs=vecs,
        dense=dense,
        bm25=bm25,
        labels=labels,
        q_hits=q_hits,
        q_is_entity=q_is_entity,
        ident_hit=ident_hit,
        ident_other=ident_other,
    )

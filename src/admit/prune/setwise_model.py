"""Set-aware CPU scoring model behind admit's default ``setwise`` pruner.

Pure scoring logic: given a question and the retrieved chunks, estimate for every chunk the
probability that the answer needs it, *as a member of the set* (a bridge paragraph that only
matters together with another one included), decide how many chunks the question needs, and map
the result to admit's five-level rubric. Numpy only at inference; the fitted weights live in
``data/setwise.json`` (refit with ``scripts/fit_setwise.py``).

How it works:

1. **Embeddings.** The question and every chunk are embedded (all-MiniLM-L6-v2 by default).
   Chunks are split into sentence-aligned passages of at most ~180 words (MiniLM reads 256 word
   pieces; nothing is truncated), each prefixed with the title; a chunk's dense score is the max
   over its passages (plus the top-2 mean) and its vector the normalised mean of its passages.
2. **Within-list features.** Dense and BM25 scores (a small numpy BM25 with the list itself as the
   corpus) as z-scores, gaps to the top and ranks; the share of the question's words and
   capitalised entities a chunk contains; whether the chunk's title is named in the question;
   chunk length. Question-level features (number of chunks, mean chunk length, question length,
   nested ``of the``/possessive chains, relative clauses, comparison / "A or B" cues, number of
   named entities, dense score spread and top gap) shift the probabilities per question form.
3. **Links between chunks** (n x n, row ``i`` points at column ``j``): ``j``'s title named in
   ``i``'s text and the reverse, shared rare capitalised entities / multi-word names that are not
   in the question (the bridge entity), lexical tf-idf similarity, and the dense similarity of
   ``j`` to the question expanded with ``i``.
4. **Iterated soft beam.** Stage 0 is a logistic model over the within-list features. Stage 1
   adds, for chunk ``j``, the evidence propagated from the chunks stage 0 believes in
   (``max_i p_i * link[i, j]`` and the same weighted by ``i``'s rank), the dense similarity to the
   question expanded with the probability-weighted other chunks, the question words / entities
   ``j`` adds beyond the stronger chunks (the second entity of a comparison), redundancy with a
   stronger chunk, and stage 0's logit and rank. (A third stage did not help on held-out folds.)
5. **Routing.** Every feature also enters multiplied by a soft long-document gate on the mean
   chunk length (~0 for ~100-word passages, ~1 for ~900-word doc chunks, switching at ~300
   words), so single-hop documentation lists get their own slopes (multi-hop features are noise
   there) without a hard switch.
6. **How many: coverage.** A logistic *coverage* stage reads the sorted probabilities (mass of the
   top r, tail mass, the r-th and next probability, ...) plus the question features and estimates
   ``P(the top-r chunks hold everything the answer needs)`` for r = 1..n (made non-decreasing).
   Each chunk's ``coverage`` is that value for the chunks ranked above it (0 for the top chunk).
7. **Grades** use fixed cut points on ``coverage`` (the same for every question and corpus): a
   chunk gets grade g (2..5) when ``coverage < cuts[g - 2]``, with decreasing cuts (default model:
   0.945, 0.87, 0.60, 0.30). Read as: 5 "essential" (the set is clearly incomplete without it; the
   top chunk always), 4 "needed with another chunk", 3 "useful context" (keep at the default
   threshold 3 until the model is ~87% sure the kept set is complete), 2 "tangential" (a cautious
   reader would add it), 1 "unrelated". Threshold 4 is the aggressive point, 2 the conservative
   one. ``expected_needed`` is the sum of the chunk probabilities.

The module depends on nothing in admit except the embedders.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from admit.backends.embedders.base import Embedder, l2_normalise

FloatArray = npt.NDArray[np.float64]

MODEL_VERSION = 1
DEFAULT_MODEL_PATH = Path(__file__).with_name("data") / "setwise.json"
#: Cut points on "coverage before" (see :func:`grade_of`) for grades 2, 3, 4, 5 (decreasing).
DEFAULT_CUTS: tuple[float, float, float, float] = (0.95, 0.8, 0.6, 0.3)

PASSAGE_WORDS = 180
MAX_PASSAGES = 24
MAX_WORDS_LEXICAL = 6000

_WORD = re.compile(r"\w+", re.UNICODE)
_SENT_SPLIT = re.compile(r"(?<=[.!?。！？])\s+|\n\s*\n+")
_PAREN = re.compile(r"\s*\([^)]*\)")
_COMPARISON = re.compile(
    r"\b(both|same|either|neither|compare|compared|differ|difference|than|older|younger|earlier|later|"
    r"first|last|more|less|larger|smaller|bigger|longer|shorter|higher|lower|closer|farther|further)\b",
    re.IGNORECASE,
)
_OR_CHOICE = re.compile(r"\b\w+\s+or\s+\w+", re.IGNORECASE)
_NESTED = re.compile(r"\b(of|in|by|for|from|at)\s+(the|a|an|this|that)\b|'s\b|’s\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(who|which|that|where|whose|whom|when)\b", re.IGNORECASE)

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "else",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "what's",
        "who's",
        "is",
        "there",
    ]
)

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
)
LINK_NAMES: tuple[str, ...] = ("title_fwd", "title_bwd", "entity", "lexical", "dense_cond")
STAGE_EXTRA: tuple[str, ...] = (
    *(f"prop_{name}" for name in LINK_NAMES),
    *(f"rankprop_{name}" for name in LINK_NAMES),
    "dup_of_stronger",
    "novel_q_cov_top1",
    "novel_q_ent_top1",
    "novel_q_cov_strong",
    "novel_q_ent_strong",
    "cmp_title_in_question",
    "cmp_q_entity_cov",
    "cmp_novel_q_ent_top1",
    "soft_expand_z",
    "prev_logit",
    "prev_rank_inv",
    "prev_rel",
)


NONLINEAR: tuple[str, ...] = ("dense_z_sq", "dense_z_pos", "dense_top1")
#: Chunk length (mean words per chunk) around which the soft route gate switches from the
#: short-passage regime (Wikipedia paragraphs, multi-hop features useful) to long documents.
ROUTE_WORDS = 300.0
ROUTE_SLOPE = 2.5


def stage_feature_names(stage: int) -> tuple[str, ...]:
    """Returns the feature names a stage uses.

    Every feature appears twice: as is, and multiplied by the long-document route gate
    (``long_`` prefix), so the model has separate slopes for long-document lists.

    Args:
        stage: 0 for the first (within-list only) stage, >= 1 for propagation stages.

    Returns:
        The ordered feature names.
    """
    names = BASE_FEATURES + QUESTION_FEATURES + NONLINEAR
    if stage != 0:
        names = names + STAGE_EXTRA
    return names + tuple(f"long_{f}" for f in names)


def route_gate(qfeat: FloatArray) -> float:
    """Soft long-document gate in [0, 1] from the mean chunk length (question feature 1).

    Args:
        qfeat: Question-level features.

    Returns:
        ~0 for lists of short passages (~100 words), ~1 for long doc chunks (~900 words).
    """
    x = ROUTE_SLOPE * (float(qfeat[QUESTION_FEATURES.index("q_log_chunk_words")]) - math.log1p(ROUTE_WORDS))
    return float(1.0 / (1.0 + math.exp(-x)))


# --------------------------------------------------------------------------------------------- types


@dataclass(frozen=True, slots=True, kw_only=True)
class SetwiseItem:
    """One retrieved chunk as the scorer sees it.

    Attributes:
        id: The chunk id (only echoed in reasons).
        title: The chunk title ("" when there is none).
        text: The chunk text.
        score: An optional upstream retriever score (accepted, not used by the fitted model).
    """

    id: str
    title: str
    text: str
    score: float | None = None


@dataclass(frozen=True, slots=True)
class SetwiseScores:
    """The scorer's verdict on a list of chunks (in input order).

    Attributes:
        probs: Probability that each chunk is needed for the answer.
        grades: Rubric grade of each chunk, 1 (unrelated) to 5 (essential).
        reasons: A short human-readable reason for each grade.
        expected_needed: The model's expected number of needed chunks (sum of ``probs``).
        coverage: For each chunk, the model's probability that the chunks ranked above it
            (by ``probs``) already contain everything the answer needs; the grade is read off it.
    """

    probs: tuple[float, ...]
    grades: tuple[int, ...]
    reasons: tuple[str, ...]
    expected_needed: float
    coverage: tuple[float, ...] = ()


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

    @property
    def n(self) -> int:
        """Number of items."""
        return int(self.base.shape[0])


# ---------------------------------------------------------------------------------------- text utils


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text or "")


def words(text: str) -> list[str]:
    """Lower-cased word tokens.

    Args:
        text: Any text.

    Returns:
        The tokens.
    """
    return _WORD.findall(_nfc(text).lower())


def content_tokens(text: str) -> list[str]:
    """Lower-cased tokens without stopwords and one-letter words (digits kept).

    Args:
        text: Any text.

    Returns:
        The content tokens.
    """
    return [w for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


def capitalised_tokens(text: str) -> set[str]:
    """Lower-cased tokens that are written capitalised (or are numbers) and are not stopwords.

    Sentence-initial words are kept too (cheap and language-agnostic); stopwords remove most noise.

    Args:
        text: Any text.

    Returns:
        The set of entity-like tokens.
    """
    out: set[str] = set()
    for tok in _WORD.findall(_nfc(text)):
        low = tok.lower()
        if low in STOPWORDS or len(tok) < 2:
            continue
        if tok[0].isupper() or tok.isdigit():
            out.add(low)
    return out


def entity_phrases(text: str) -> set[str]:
    """Lower-cased runs of two or more capitalised non-stopword words (e.g. "natalie wood").

    Args:
        text: Any text.

    Returns:
        The set of phrases.
    """
    out: set[str] = set()
    run: list[str] = []
    for tok in [*_WORD.findall(_nfc(text)), ""]:
        if tok and tok[0].isupper() and tok.lower() not in STOPWORDS:
            run.append(tok.lower())
            continue
        if len(run) >= 2:
            out.add(" ".join(run))
        run = []
    return out


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
    title = _nfc(title).strip()
    text = _nfc(text).strip()
    prefix = f"{title}\n" if title else ""
    if not text:
        return [title or ""]
    pieces: list[list[str]] = []
    for sent in _SENT_SPLIT.split(text):
        toks = sent.split()
        while len(toks) > max_words:
            pieces.append(toks[:max_words])
            toks = toks[max_words:]
        if toks:
            pieces.append(toks)
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


def _title_keys(title: str) -> tuple[str, str]:
    """Normalised full title and its head (before a comma or parenthesis)."""
    t = _nfc(title).lower()
    full = " ".join(_WORD.findall(_PAREN.sub("", t)))
    head = " ".join(_WORD.findall(_PAREN.sub("", t).split(",")[0]))
    return full, head


def _contains_phrase(haystack: str, phrase: str) -> bool:
    if len(phrase) < 3:
        return False
    return f" {phrase} " in haystack


# -------------------------------------------------------------------------------------------- bm25


def bm25_matrix(
    queries: Sequence[Sequence[str]], docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75
) -> FloatArray:
    """BM25 scores of each query against each document, with the documents as the corpus.

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


# ----------------------------------------------------------------------------------- within-list ops


def zscore(x: FloatArray) -> FloatArray:
    """Within-list z-score (zeros when the list is constant).

    Args:
        x: Scores.

    Returns:
        The standardised scores.
    """
    if x.size == 0:
        return x.astype(np.float64)
    sd = float(x.std())
    if sd < 1e-9:
        return np.zeros_like(x, dtype=np.float64)
    return (x - float(x.mean())) / sd


def rank_inv(x: FloatArray) -> FloatArray:
    """1 / (1 + rank), rank 0 for the best score; tied scores share the better rank.

    Args:
        x: Scores (higher is better).

    Returns:
        The inverse ranks.
    """
    ranks = (x[None, :] > x[:, None]).sum(axis=1).astype(np.float64)
    out: FloatArray = 1.0 / (1.0 + ranks)
    return out


def _minmax_offdiag(m: FloatArray) -> FloatArray:
    n = m.shape[0]
    if n < 2:
        return np.zeros_like(m)
    mask = ~np.eye(n, dtype=bool)
    vals = m[mask]
    lo, hi = float(vals.min()), float(vals.max())
    out = np.zeros_like(m)
    if hi - lo > 1e-9:
        out[mask] = (vals - lo) / (hi - lo)
    return out


def _sigmoid(x: FloatArray) -> FloatArray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30.0, 30.0)))


# -------------------------------------------------------------------------------------- preparation


def question_text(question: str) -> str:
    """The text embedded for a question (shared with the dense reranker so vectors are reused)."""
    return _nfc(question).strip() or "?"


def embed_items(
    question: str, items: Sequence[SetwiseItem], embedder: Embedder
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Embeds the question and the items' passages in one call.

    Args:
        question: The question.
        items: The chunks.
        embedder: The embedder.

    Returns:
        (question vector, chunk vectors (n, d), dense max score (n,), dense top-2 mean (n,)).
    """
    units: list[str] = [question_text(question)]
    owners: list[int] = []
    for idx, it in enumerate(items):
        ps = passages(it.title, it.text)
        units.extend(p or "-" for p in ps)
        owners.extend([idx] * len(ps))
    mat = np.asarray(embedder.embed(units), dtype=np.float64)
    if mat.ndim != 2 or mat.shape[0] != len(units):
        raise ValueError("embedder returned an array of the wrong shape")
    mat = l2_normalise(mat).astype(np.float64)
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


def prepare(question: str, items: Sequence[SetwiseItem], embedder: Embedder) -> Prepared:
    """Computes embeddings, base features, question features and link matrices.

    Args:
        question: The question.
        items: The chunks.
        embedder: The embedder.

    Returns:
        The prepared features.
    """
    n = len(items)
    qvec, vecs, dense, top2 = embed_items(question, items, embedder)

    q_tokens = content_tokens(question)
    q_set = set(q_tokens)
    q_ents = capitalised_tokens(question)
    q_low = " " + " ".join(words(question)) + " "
    full_texts = [f"{it.title}\n{it.text}" for it in items]
    doc_tokens = [content_tokens(t)[:MAX_WORDS_LEXICAL] for t in full_texts]
    doc_sets = [set(d) for d in doc_tokens]
    n_words = np.array([len(_nfc(it.text).split()) + len(_nfc(it.title).split()) for it in items], dtype=np.float64)

    bm25 = bm25_matrix([q_tokens], doc_tokens)[0] if n else np.zeros(0)
    bm_max = float(bm25.max()) if n and bm25.max() > 0 else 1.0
    hybrid = rank_inv(dense) + rank_inv(bm25) if n else np.zeros(0)

    q_cov = np.array([len(q_set & s) / max(1, len(q_set)) for s in doc_sets], dtype=np.float64)
    ent_sets = [capitalised_tokens(t) | s for t, s in zip(full_texts, doc_sets, strict=True)]
    q_ent_cov = np.array([len(q_ents & e) / max(1, len(q_ents)) for e in ent_sets], dtype=np.float64)
    keys = [_title_keys(it.title) for it in items]
    title_in_q = np.array(
        [1.0 if _contains_phrase(q_low, f) else (0.7 if _contains_phrase(q_low, h) else 0.0) for f, h in keys],
        dtype=np.float64,
    )
    title_cov = np.zeros(n, dtype=np.float64)
    for j, (_, head) in enumerate(keys):
        ht = [w for w in head.split() if w not in STOPWORDS]
        if ht:
            title_cov[j] = sum(w in q_set for w in ht) / len(ht)

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
            ]
        )
        if n
        else np.zeros((0, len(BASE_FEATURES)))
    )

    sd = np.sort(dense)[::-1]
    qfeat = np.array(
        [
            math.log(max(n, 1)),
            math.log1p(float(n_words.mean())) if n else 0.0,
            math.log1p(len(words(question))),
            float(len(_NESTED.findall(question))),
            float(len(_RELATIVE.findall(question))),
            float(len(_COMPARISON.findall(question)) > 0),
            float(len(_OR_CHOICE.findall(question)) > 0),
            float(len(q_ents)),
            float(sd.std()) if n else 0.0,
            float(sd[0] - sd[1]) if n > 1 else 0.0,
        ],
        dtype=np.float64,
    )

    links = np.zeros((len(LINK_NAMES), n, n), dtype=np.float64)
    if n > 1:
        body_low = [" " + " ".join(words(it.text)) + " " for it in items]
        df: Counter[str] = Counter()
        for s in ent_sets:
            df.update(s)
        q_phr = entity_phrases(question)
        rare_ents = [
            {e for e in s if df[e] <= max(2, n // 5) and e not in q_set and e not in q_ents}
            for s in (capitalised_tokens(t) for t in full_texts)
        ]
        for j, (full, head) in enumerate(keys):
            for i in range(n):
                if i == j or keys[i][0] == full:
                    continue
                if _contains_phrase(body_low[i], full):
                    links[0, i, j] = 1.0
                elif head != full and _contains_phrase(body_low[i], head):
                    links[0, i, j] = 0.7
        links[1] = links[0].T
        phrases = [entity_phrases(t) - q_phr for t in full_texts]
        for i in range(n):
            for j in range(i + 1, n):
                shared = len(rare_ents[i] & rare_ents[j]) + 2 * len(phrases[i] & phrases[j])
                links[2, i, j] = links[2, j, i] = min(1.0, shared / 3.0)
        # lexical tf-idf cosine over tokens not in the question
        vocab: dict[str, int] = {}
        rows: list[dict[int, float]] = []
        dfl: Counter[str] = Counter()
        for s in doc_sets:
            dfl.update(s)
        for toks in doc_tokens:
            tf = Counter(t for t in toks if t not in q_set)
            row: dict[int, float] = {}
            for t, c in tf.items():
                row[vocab.setdefault(t, len(vocab))] = (1.0 + math.log(c)) * math.log((n + 1) / (dfl[t] + 0.5))
            rows.append(row)
        tfidf = np.zeros((n, max(1, len(vocab))), dtype=np.float64)
        for i, row in enumerate(rows):
            for k, v in row.items():
                tfidf[i, k] = v
        tfidf = l2_normalise(tfidf).astype(np.float64)
        lex = tfidf @ tfidf.T
        np.fill_diagonal(lex, 0.0)
        links[3] = _minmax_offdiag(lex)
        expanded = l2_normalise(vecs + qvec[None, :]).astype(np.float64)
        cond = expanded @ vecs.T
        np.fill_diagonal(cond, 0.0)
        links[4] = _minmax_offdiag(cond)
        for k in range(len(LINK_NAMES)):
            np.fill_diagonal(links[k], 0.0)

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
    )


def _novel_coverage(prep: Prepared, p: FloatArray) -> FloatArray:
    """Share of the question's words (all / entity words) a chunk adds beyond stronger chunks.

    "top1": beyond the most probable other chunk; "strong": beyond every other chunk with a
    higher probability that is itself >= 0.3 (or the top one). This is what lets the second
    entity of a comparison question ("Are A and B both ...?") earn its place.
    """
    n = prep.n
    out = np.zeros((n, 4), dtype=np.float64)
    hits = prep.q_hits
    if n == 0 or hits.shape[1] == 0:
        return out
    ent = prep.q_is_entity
    n_all = float(hits.shape[1])
    n_ent = float(ent.sum())
    order = np.argsort(-p, kind="stable")
    for j in range(n):
        top = int(order[0]) if int(order[0]) != j else (int(order[1]) if n > 1 else j)
        new_top = hits[j] * (1.0 - hits[top]) if top != j else hits[j]
        strong = [i for i in range(n) if i != j and p[i] > p[j] and (p[i] >= 0.3 or i == int(order[0]))]
        covered = hits[strong].max(axis=0) if strong else np.zeros(hits.shape[1])
        new_strong = hits[j] * (1.0 - covered)
        out[j, 0] = new_top.sum() / n_all
        out[j, 2] = new_strong.sum() / n_all
        if n_ent > 0:
            out[j, 1] = (new_top * ent).sum() / n_ent
            out[j, 3] = (new_strong * ent).sum() / n_ent
    return out


def stage_features(prep: Prepared, prev: FloatArray | None) -> FloatArray:
    """Builds the feature matrix of one stage.

    Args:
        prep: The prepared list.
        prev: The previous stage's probabilities, or None for stage 0.

    Returns:
        Array of shape (n, len(stage_feature_names(stage))).
    """
    n = prep.n
    qf = np.repeat(prep.qfeat[None, :], n, axis=0)
    dz = prep.base[:, BASE_FEATURES.index("dense_z")]
    top1 = (prep.base[:, BASE_FEATURES.index("dense_rank_inv")] >= 1.0).astype(np.float64)
    feats = np.hstack([prep.base, qf, np.column_stack([dz**2, np.maximum(dz, 0.0), top1]).reshape(n, 3)])
    gate = route_gate(prep.qfeat)
    if prev is None:
        return np.hstack([feats, feats * gate])
    extra = np.zeros((n, len(STAGE_EXTRA)), dtype=np.float64)
    if n:
        p = np.clip(prev, 1e-6, 1 - 1e-6)
        rinv = rank_inv(p)
        nl = len(LINK_NAMES)
        for k in range(nl):
            extra[:, k] = (p[:, None] * prep.links[k]).max(axis=0)
            extra[:, nl + k] = (rinv[:, None] * prep.links[k]).max(axis=0)
        sim = prep.vecs @ prep.vecs.T
        stronger = p[:, None] > p[None, :]
        extra[:, 2 * nl] = np.where(stronger, sim, -1.0).max(axis=0).clip(min=0.0)
        weighted = p[:, None] * prep.vecs
        total = weighted.sum(axis=0)
        psum = float(p.sum())
        soft = np.zeros(n, dtype=np.float64)
        for j in range(n):
            other = (total - weighted[j]) / max(psum - p[j], 1e-6)
            e = prep.qvec + other
            ne = float(np.linalg.norm(e))
            soft[j] = float(prep.vecs[j] @ e) / ne if ne > 0 else 0.0
        extra[:, 2 * nl + 1 : 2 * nl + 5] = _novel_coverage(prep, p)
        cmp = max(
            prep.qfeat[QUESTION_FEATURES.index("q_comparison")], prep.qfeat[QUESTION_FEATURES.index("q_or_choice")]
        )
        extra[:, 2 * nl + 5] = cmp * prep.base[:, BASE_FEATURES.index("title_in_question")]
        extra[:, 2 * nl + 6] = cmp * prep.base[:, BASE_FEATURES.index("q_entity_cov")]
        extra[:, 2 * nl + 7] = cmp * extra[:, 2 * nl + 2]
        extra[:, 2 * nl + 8] = zscore(soft)
        extra[:, 2 * nl + 9] = np.log(p / (1 - p))
        extra[:, 2 * nl + 10] = rinv
        extra[:, 2 * nl + 11] = p / float(p.max())
    feats = np.hstack([feats, extra])
    return np.hstack([feats, feats * gate])


COVERAGE_FEATURES: tuple[str, ...] = (
    "log_r",
    "r_share",
    "mass_top_r",
    "mass_tail",
    "log_mass_tail",
    "p_r",
    "p_next",
    "log_p_r",
    "log_p_next",
    "mass_total",
    "mass_top_r_minus_total",
    "p_next_over_p1",
    *QUESTION_FEATURES,
)


def coverage_features(probs: FloatArray, qfeat: FloatArray) -> FloatArray:
    """Features of the sets "top r chunks by probability", r = 1..n.

    Args:
        probs: Final chunk probabilities (n,).
        qfeat: Question-level features.

    Returns:
        Array of shape (n, len(COVERAGE_FEATURES)); row r-1 describes the top-r set.
    """
    n = probs.size
    if n == 0:
        return np.zeros((0, len(COVERAGE_FEATURES)))
    s = np.sort(probs)[::-1]
    cum = np.cumsum(s)
    tot = float(cum[-1])
    r = np.arange(1, n + 1, dtype=np.float64)
    nxt = np.append(s[1:], 0.0)
    tail = tot - cum
    cols = [
        np.log(r),
        r / n,
        cum,
        tail,
        np.log(np.maximum(tail, 0.0) + 1e-4),
        s,
        nxt,
        np.log(s + 1e-4),
        np.log(nxt + 1e-4),
        np.full(n, tot),
        cum - tot,
        nxt / max(float(s[0]), 1e-6),
    ]
    return np.hstack([np.column_stack(cols), np.repeat(qfeat[None, :], n, axis=0)])


def coverage_before(probs: FloatArray, complete: FloatArray) -> FloatArray:
    """Per chunk, the probability that the chunks ranked above it are already complete.

    Args:
        probs: Chunk probabilities (n,), which define the ranking (stable on ties).
        complete: P(top-r set complete) for r = 1..n (made non-decreasing here).

    Returns:
        Array (n,) in input order; the top-ranked chunk gets 0.
    """
    n = probs.size
    out = np.zeros(n)
    if n == 0:
        return out
    order = np.argsort(-probs, kind="stable")
    mono = np.maximum.accumulate(np.clip(complete, 0.0, 1.0))
    before = np.concatenate([[0.0], mono[:-1]])
    ranked = probs[order]
    for k in range(1, n):  # tied probabilities share the coverage of the first of the tie
        if ranked[k] == ranked[k - 1]:
            before[k] = before[k - 1]
    out[order] = before
    return out


# ------------------------------------------------------------------------------------------- model


@dataclass(frozen=True, slots=True)
class LinearStage:
    """One logistic stage: ``sigmoid(((x - mean) / scale) @ coef + intercept)``."""

    features: tuple[str, ...]
    mean: FloatArray
    scale: FloatArray
    coef: FloatArray
    intercept: float

    def predict(self, x: FloatArray) -> FloatArray:
        """Probabilities for a feature matrix.

        Args:
            x: Features, shape (n, len(features)).

        Returns:
            Probabilities, shape (n,).
        """
        if x.shape[0] == 0:
            return np.zeros(0)
        z = (x - self.mean) / self.scale
        return _sigmoid(z @ self.coef + self.intercept)

    def to_json(self) -> dict[str, Any]:
        """Serialises the stage.

        Returns:
            A JSON-able dict.
        """
        return {
            "features": list(self.features),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "coef": [round(float(v), 6) for v in self.coef],
            "intercept": round(float(self.intercept), 6),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LinearStage:
        """Loads a stage.

        Args:
            d: The dict written by :meth:`to_json`.

        Returns:
            The stage.
        """
        scale = np.asarray(d["scale"], dtype=np.float64)
        scale[scale == 0] = 1.0
        return cls(
            features=tuple(d["features"]),
            mean=np.asarray(d["mean"], dtype=np.float64),
            scale=scale,
            coef=np.asarray(d["coef"], dtype=np.float64),
            intercept=float(d["intercept"]),
        )


@dataclass(frozen=True, slots=True)
class SetwiseModel:
    """The fitted stages and grade cut points."""

    stages: tuple[LinearStage, ...]
    coverage: LinearStage | None = None
    cuts: tuple[float, float, float, float] = DEFAULT_CUTS
    meta: dict[str, Any] = field(default_factory=dict)

    def complete_probs(self, probs: FloatArray, qfeat: FloatArray) -> FloatArray:
        """P(top-r set complete), r = 1..n (falls back to a mass heuristic without a coverage stage).

        Args:
            probs: Final chunk probabilities.
            qfeat: Question-level features.

        Returns:
            Non-decreasing probabilities (n,).
        """
        if probs.size == 0:
            return np.zeros(0)
        if self.coverage is None:
            s = np.sort(probs)[::-1]
            tail = float(s.sum()) - np.cumsum(s)
            return np.maximum.accumulate(np.exp(-np.maximum(tail, 0.0) * 3.0))
        x = coverage_features(probs, qfeat)
        names = COVERAGE_FEATURES
        if tuple(self.coverage.features) != names:
            x = x[:, [names.index(f) for f in self.coverage.features]]
        return np.maximum.accumulate(self.coverage.predict(x))

    def predict(self, prep: Prepared) -> list[FloatArray]:
        """Runs all stages.

        Args:
            prep: The prepared list.

        Returns:
            The probabilities after each stage (the last one is the model's output).
        """
        out: list[FloatArray] = []
        prev: FloatArray | None = None
        for idx, stage in enumerate(self.stages):
            x = stage_features(prep, prev)
            names = stage_feature_names(0 if idx == 0 else 1)
            if tuple(stage.features) != names:
                x = x[:, [names.index(f) for f in stage.features]]
            prev = stage.predict(x)
            out.append(prev)
        return out

    def to_json(self) -> dict[str, Any]:
        """Serialises the model.

        Returns:
            A JSON-able dict.
        """
        return {
            "version": MODEL_VERSION,
            "kind": "setwise-staged-logistic",
            "cuts": [float(c) for c in self.cuts],
            "stages": [s.to_json() for s in self.stages],
            "coverage": self.coverage.to_json() if self.coverage is not None else None,
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SetwiseModel:
        """Loads a model.

        Args:
            d: The dict written by :meth:`to_json`.

        Returns:
            The model.

        Raises:
            ValueError: If the version is unsupported.
        """
        if int(d.get("version", 0)) != MODEL_VERSION:
            raise ValueError(f"unsupported setwise model version {d.get('version')!r}")
        cuts = tuple(float(c) for c in d["cuts"])
        if len(cuts) != 4 or list(cuts) != sorted(cuts, reverse=True):
            raise ValueError("cuts must be 4 decreasing coverage levels (grades 2, 3, 4, 5)")
        cov = d.get("coverage")
        return cls(
            stages=tuple(LinearStage.from_json(s) for s in d["stages"]),
            coverage=LinearStage.from_json(cov) if cov else None,
            cuts=(cuts[0], cuts[1], cuts[2], cuts[3]),
            meta=dict(d.get("meta", {})),
        )


@lru_cache(maxsize=8)
def load_model(path: str | Path = DEFAULT_MODEL_PATH) -> SetwiseModel:
    """Loads (and caches) a model file.

    Args:
        path: The JSON file.

    Returns:
        The model.
    """
    with open(path, encoding="utf-8") as fh:
        return SetwiseModel.from_json(json.load(fh))


def grade_of(coverage: float, cuts: Sequence[float]) -> int:
    """Maps a chunk's coverage-before value to a rubric grade with fixed cut points.

    A chunk gets grade ``g`` (2..5) when the probability that the chunks ranked above it already
    hold everything needed is below ``cuts[g - 2]``; the cut points decrease from grade 2 to 5,
    so grade 5 goes to the chunks the set is clearly incomplete without, grade 2 to those only a
    cautious reader would add.

    Args:
        coverage: P(the chunks ranked above this one are complete), in [0, 1].
        cuts: Four decreasing cut points for grades 2, 3, 4 and 5.

    Returns:
        The grade in 1..5.
    """
    grade = 1
    for g, c in enumerate(cuts, start=2):
        if coverage < c:
            grade = g
    return grade


def _reason(j: int, prep: Prepared, stage0: FloatArray, final: FloatArray, grade: int) -> str:
    dense_rank = round(1.0 / float(prep.base[j, BASE_FEATURES.index("dense_rank_inv")]))
    bm_rank = round(1.0 / float(prep.base[j, BASE_FEATURES.index("bm25_rank_inv")]))
    direct = f"dense rank {dense_rank}, bm25 rank {bm_rank}"
    if prep.n > 1 and final[j] - stage0[j] > 0.1:
        best_k, best_i, best_v = -1, -1, 0.0
        for k in range(len(LINK_NAMES) - 1):  # dense_cond is explained by "expanded question"
            col = stage0 * prep.links[k][:, j]
            i = int(np.argmax(col))
            if col[i] > best_v:
                best_k, best_i, best_v = k, i, float(col[i])
        if best_k >= 0 and best_v > 0.05:
            what = {0: "title named by", 1: "names title of", 2: "shares entity with", 3: "overlaps"}[best_k]
            return f"bridge: {what} {prep.labels[best_i]!r}; {direct}"
        return f"bridge: matches question expanded with strong chunks; {direct}"
    if grade <= 1:
        return f"unrelated: {direct}"
    return direct


# ------------------------------------------------------------------------------------------ scorer


class SetwiseScorer:
    """Scores a retrieved list as a set and grades each chunk on admit's 1-5 rubric.

    Args:
        embedder: The embedder (default: all-MiniLM-L6-v2, loaded lazily).
        model_path: The fitted model file (default: the shipped ``data/setwise.json``).
    """

    def __init__(self, embedder: Embedder | None = None, model_path: str | Path | None = None) -> None:
        if embedder is None:
            from admit.backends.embedders import resolve_embedder

            embedder = resolve_embedder("minilm")
        self.embedder = embedder
        self.model = load_model(str(model_path) if model_path is not None else str(DEFAULT_MODEL_PATH))

    @property
    def cuts(self) -> tuple[float, float, float, float]:
        """The grade cut points."""
        return self.model.cuts

    def warm_up(self) -> None:
        """Loads the embedding model (if it loads lazily) and runs one tiny scoring pass."""
        warm = getattr(self.embedder, "warm_up", None)
        if callable(warm):
            warm()
        self.score(
            "warm up", [SetwiseItem(id="w0", title="", text="warm up"), SetwiseItem(id="w1", title="", text="x")]
        )

    def score(self, question: str, items: Sequence[SetwiseItem]) -> SetwiseScores:
        """Scores the items for the question.

        Args:
            question: The user question.
            items: The retrieved chunks, in any order.

        Returns:
            Per-item probabilities, grades and reasons (input order) and the expected number of
            needed chunks.
        """
        if not items:
            return SetwiseScores(probs=(), grades=(), reasons=(), expected_needed=0.0)
        prep = prepare(question, items, self.embedder)
        stages = self.model.predict(prep)
        final = stages[-1]
        cov = coverage_before(final, self.model.complete_probs(final, prep.qfeat))
        grades = [grade_of(float(c), self.model.cuts) for c in cov]
        reasons = [_reason(j, prep, stages[0], final, grades[j]) for j in range(prep.n)]
        return SetwiseScores(
            probs=tuple(round(float(p), 6) for p in final),
            grades=tuple(grades),
            reasons=tuple(reasons),
            coverage=tuple(round(float(c), 6) for c in cov),
            expected_needed=round(float(final.sum()), 4),
        )

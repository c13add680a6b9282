"""Links between the chunks of one list: what lets a bridge chunk borrow the strength of another.

Each link matrix is n x n, row ``i`` pointing at column ``j``, values in [0, 1], zero diagonal:

- ``title_fwd``: ``j``'s title is named in ``i``'s text (``i`` leads to ``j``: the classic bridge);
- ``title_bwd``: the reverse;
- ``entity``: ``i`` and ``j`` share rare capitalised entities or multi-word names that the question does not
  name (the bridge entity);
- ``lexical``: tf-idf cosine over the words the question does not contain;
- ``dense_cond``: the dense similarity of ``j`` to the question expanded with ``i``.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np
import numpy.typing as npt

from admit.backends.embedders.base import l2_normalise
from admit.prune.setwise_model import text as tx

__all__ = ["LINK_NAMES", "build_links"]

FloatArray = npt.NDArray[np.float64]

LINK_NAMES: tuple[str, ...] = ("title_fwd", "title_bwd", "entity", "lexical", "dense_cond")


def _title_links(keys: Sequence[tuple[str, str]], body_low: Sequence[str]) -> FloatArray:
    """``[i, j]``: chunk ``i``'s body names chunk ``j``'s title (1.0) or its title's head (0.7)."""
    n = len(keys)
    out = np.zeros((n, n), dtype=np.float64)
    for j, (full, head) in enumerate(keys):
        # tx.contains_phrase, its padded phrase made once per title: a phrase under 3 characters never matches
        pf = f" {full} " if len(full) >= 3 else None
        ph = f" {head} " if head != full and len(head) >= 3 else None
        if pf is None and ph is None:
            continue
        for i in range(n):
            if i == j or keys[i][0] == full:
                continue
            if pf is not None and pf in body_low[i]:
                out[i, j] = 1.0
            elif ph is not None and ph in body_low[i]:
                out[i, j] = 0.7
    return out


def _shared_names(
    full_texts: Sequence[str], rare_ents: Sequence[AbstractSet[str]], q_phr: AbstractSet[str]
) -> FloatArray:
    """``[i, j]``: the rare names and entity phrases (not the question's) two chunks share, phrases counting 2."""
    n = len(full_texts)
    phrases = [tx.entity_phrases(t) - q_phr for t in full_texts]
    shared = np.zeros((n, n), dtype=np.float64)  # filled in Python, written to the links in one step
    for i in range(n):
        ri, pi = rare_ents[i], phrases[i]
        if not ri and not pi:
            continue
        for j in range(i + 1, n):
            shared[i, j] = len(ri & rare_ents[j]) + 2 * len(pi & phrases[j])
    shared += shared.T
    return shared


def _lexical_similarity(
    doc_tokens: Sequence[Sequence[str]], doc_sets: Sequence[set[str]], q_set: set[str]
) -> FloatArray:
    """The chunks' TF-IDF cosine over the words the question does not hold (diagonal zero)."""
    n = len(doc_tokens)
    dfl: Counter[str] = Counter()
    for s in doc_sets:
        dfl.update(s)
    tfs = [Counter(toks) for toks in doc_tokens]
    # the columns: every word but the question's, in the order the chunks first use them
    order = dict.fromkeys(itertools.chain.from_iterable(tfs))
    for t in q_set:
        order.pop(t, None)
    col = {t: j for j, t in enumerate(order)}
    col.update(dict.fromkeys(q_set, -1))
    # a term's idf depends on its document frequency alone, its weight on its count alone: each computed once (in
    # Python's float arithmetic, as before), then looked up; a weight is (1 + log count) * idf, one multiplication
    idf_of_df = np.array([0.0, *(math.log((n + 1) / (d + 0.5)) for d in range(1, n + 1))], dtype=np.float64)
    idf = idf_of_df[np.fromiter(map(dfl.__getitem__, order), dtype=np.intp, count=len(order))]
    most = max((max(tf.values()) for tf in tfs if tf), default=1)
    log_tf = np.array([0.0, *(1.0 + math.log(c) for c in range(1, most + 1))], dtype=np.float64)
    tfidf = np.zeros((n, max(1, len(order))), dtype=np.float64)
    for i, tf in enumerate(tfs):
        if not tf:
            continue
        cols = np.fromiter(map(col.__getitem__, tf), dtype=np.intp, count=len(tf))
        counts = np.fromiter(tf.values(), dtype=np.intp, count=len(tf))
        keep = cols >= 0
        cols, counts = cols[keep], counts[keep]
        tfidf[i, cols] = log_tf[counts] * idf[cols]
    tfidf = l2_normalise(tfidf).astype(np.float64)
    lex = tfidf @ tfidf.T
    np.fill_diagonal(lex, 0.0)
    return lex


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


def build_links(
    question: str,
    items: Sequence[Any],
    full_texts: Sequence[str],
    doc_tokens: Sequence[Sequence[str]],
    doc_sets: Sequence[set[str]],
    ent_sets: Sequence[AbstractSet[str]],
    keys: Sequence[tuple[str, str]],
    q_set: set[str],
    q_ents: set[str],
    qvec: FloatArray,
    vecs: FloatArray,
) -> FloatArray:
    """Builds the link matrices of a list (see the module docstring).

    Args:
        question: The question.
        items: The chunks (anything with ``text``).
        full_texts: Title and text of each chunk.
        doc_tokens: Content tokens of each chunk.
        doc_sets: The same as sets.
        ent_sets: Capitalised tokens and content tokens of each chunk.
        keys: Normalised (full title, title head) of each chunk.
        q_set: The question's content tokens.
        q_ents: The question's capitalised tokens.
        qvec: The question vector.
        vecs: The chunk vectors.

    Returns:
        Array of shape (len(LINK_NAMES), n, n).
    """
    n = len(items)
    links = np.zeros((len(LINK_NAMES), n, n), dtype=np.float64)
    if n < 2:
        return links
    body_low = [" " + " ".join(tx.words(it.text)) + " " for it in items]
    df: Counter[str] = Counter()
    for s in ent_sets:
        df.update(s)
    q_phr = tx.entity_phrases(question)
    rare = max(2, n // 5)
    rare_ents = [
        {e for e in s if df[e] <= rare and e not in q_set and e not in q_ents}
        for s in (tx.capitalised_tokens(t) for t in full_texts)
    ]
    links[0] = _title_links(keys, body_low)
    links[1] = links[0].T
    links[2] = np.minimum(1.0, _shared_names(full_texts, rare_ents, q_phr) / 3.0)
    lex = _lexical_similarity(doc_tokens, doc_sets, q_set)
    links[3] = _minmax_offdiag(lex)
    expanded = l2_normalise(vecs + qvec[None, :]).astype(np.float64)
    cond = expanded @ vecs.T
    np.fill_diagonal(cond, 0.0)
    links[4] = _minmax_offdiag(cond)
    for k in range(len(LINK_NAMES)):
        np.fill_diagonal(links[k], 0.0)
    return links

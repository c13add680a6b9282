"""The short-chunk cut (setwise's ``short_below``), a pure function of grades, probabilities, ranks and sizes: the
pruner applies it (:mod:`admit.prune.setwise`) and ``admit adapt`` fits its word count by replaying it on what its
pseudo-questions admitted (:func:`admit.kb.adapt.fit_short_below`; the knowledge base reaches the pruners only
through the pipeline, so the rule lives below both)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CROSS_KEEP_RANKS", "SHORT_KEEP_RANKS", "SHORT_P_SHARE", "cross_cut", "short_cut"]

#: The retriever's first this many chunks are never left out by the short-chunk cut.
SHORT_KEEP_RANKS = 2
#: A chunk whose probability is at least this share of the list's best is never left out by the short-chunk cut.
SHORT_P_SHARE = 0.5


def short_cut(
    grades: Sequence[int],
    probs: Sequence[float],
    ranks: Sequence[int],
    sizes: Sequence[int],
    ruled: Sequence[bool],
    threshold: int,
    below: int,
) -> list[int]:
    """``grades`` with each chunk graded at or above ``threshold`` that is short (``sizes``: fewer than ``below``
    words), not among the retriever's first :data:`SHORT_KEEP_RANKS` (``ranks``, 0-based), under
    :data:`SHORT_P_SHARE` of the list's best probability and not graded by a rule (``ruled``) graded one under
    ``threshold`` (at least 1); the list's most probable chunk always stays. ``below`` of 0: no cut.

    The per-knowledge-base cut ``admit adapt`` fits (setwise's ``short_below``): on documentation, a short section (a
    synopsis, a one-line lead, a link list) the model and the retriever both rank below the list's best seldom holds
    the answer its longer neighbours hold, and it dilutes the evidence handed over.
    """
    out = [int(g) for g in grades]
    if below <= 0 or not out:
        return out
    best = max(range(len(out)), key=lambda j: (probs[j], -j))
    top = float(probs[best])
    for j, g in enumerate(out):
        if (
            g >= threshold
            and j != best
            and not ruled[j]
            and sizes[j] < below
            and ranks[j] >= SHORT_KEEP_RANKS
            and float(probs[j]) < SHORT_P_SHARE * top
        ):
            out[j] = max(1, min(g, threshold - 1))
    return out


#: The retriever's first this many chunks are never left out by the cross-encoder cut.
CROSS_KEEP_RANKS = 1


def cross_cut(
    grades: Sequence[int],
    cross: Sequence[float | None],
    probs: Sequence[float],
    ranks: Sequence[int],
    ruled: Sequence[bool],
    threshold: int,
    margin: float,
) -> list[int]:
    """``grades`` with each chunk graded at or above ``threshold`` whose cross-encoder score (``cross``; ``None``: not
    read, left as it is) is more than ``margin`` under the best cross score among those chunks graded one under
    ``threshold`` (at least 1), unless it is the list's most probable (``probs``), among the retriever's first
    :data:`CROSS_KEEP_RANKS` (``ranks``, 0-based) or graded by a rule (``ruled``). ``margin`` of 0 or less: no cut.

    The per-knowledge-base cut ``admit adapt`` fits (setwise's ``cross_margin``): the cross-encoder reads the question
    and the chunk together, so among the chunks the trees admit it tells the one that answers from its neighbours
    that only share its words better than the trees' probability does; the chunks it reads as far worse than the
    best admitted one dilute the evidence.
    """
    out = [int(g) for g in grades]
    if margin <= 0 or not out:
        return out
    read = {j: float(c) for j, (g, c) in enumerate(zip(out, cross, strict=True)) if g >= threshold and c is not None}
    if len(read) < 2:
        return out
    top = max(read.values())
    best = max(range(len(out)), key=lambda j: (probs[j], -j))
    for j, c in read.items():
        if j != best and not ruled[j] and ranks[j] >= CROSS_KEEP_RANKS and c < top - margin:
            out[j] = max(1, min(out[j], threshold - 1))
    return out

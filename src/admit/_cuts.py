"""The short-chunk cut (setwise's ``short_below``), a pure function of grades, probabilities, ranks and sizes: the
pruner applies it (:mod:`admit.prune.setwise`) and ``admit adapt`` fits its word count by replaying it on what its
pseudo-questions admitted (:func:`admit.kb.adapt.fit_short_below`; the knowledge base reaches the pruners only
through the pipeline, so the rule lives below both)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SHORT_KEEP_RANKS", "SHORT_P_SHARE", "short_cut"]

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

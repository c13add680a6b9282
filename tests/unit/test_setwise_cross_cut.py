"""Issue 46 item 1, the useful share: setwise's cross-encoder cut fitted per knowledge base (``admit adapt``:
``cross_margin``).

- among the chunks graded at or above the threshold, one whose cross-encoder score is more than the margin under the
  best such chunk's is graded one under the threshold, unless it is the list's most probable, the retriever's first
  or graded by a rule; only those chunks are read by the cross-encoder; reasons and notes name the cut;
- it is a checked strategy parameter, off (0) unless a policy, a request or an adaptation sets it; without the cross
  model the grades stand and a note says so;
- the fit picks the smallest margin that still holds the pseudo-questions' sections at the share (after the
  short-chunk cut), or none; ``admit adapt`` stores it and asks again with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from admit.errors import ConfigError, RequestError
from admit.kb.adapt import CROSS_GOLD_SHARE, CROSS_GRID, CROSS_MARGIN_DEFAULT, MIN_CASES, AdaptCase, fit_cross_margin
from admit.prune.settings import PruneSettings
from admit.prune.setwise import CROSS_MARGIN, SHORT_BELOW, SetwisePruner, cross_cut
from admit.types import Chunk, Scored
from tests.unit._setwise_scripted import Scripted as _Scripted

#: (p, grade, cross) in the retriever's order: d0 is its first, d2 the list's most probable, d6 under the threshold.
LIST = [(0.05, 4, -6.0), (0.10, 3, 1.0), (0.80, 5, -1.0), (0.10, 4, 3.0), (0.20, 4, 0.5), (0.50, 4, -0.5), (0.01, 2, 9)]


def _cands() -> list[Scored]:
    return [
        Scored(chunk=Chunk(id=f"d{i}", source_id=f"s{i}", text=f"text {i}"), score=1.0 - i / 100, rank=i)
        for i in range(len(LIST))
    ]


def _pruner(ruled: Sequence[bool] = ()) -> tuple[SetwisePruner, list[list[str]]]:
    pruner = SetwisePruner(scorer=_Scripted([p for p, _, _ in LIST], [g for _, g, _ in LIST], ruled))  # type: ignore[arg-type]
    read: list[list[str]] = []
    cross = {f"d{i}": c for i, (_, _, c) in enumerate(LIST)}

    def scores(question: object, chunks: Sequence[Chunk]) -> list[float]:
        read.append([c.id for c in chunks])
        return [cross[c.id] for c in chunks]

    pruner.cross_scores = scores  # type: ignore[method-assign]
    return pruner, read


def _prune(
    params: dict[str, int], ruled: Sequence[bool] = ()
) -> tuple[list[str], dict[str, str], tuple[str, ...], list[list[str]]]:
    pruner, read = _pruner(ruled)
    out = pruner.prune("q", _cands(), PruneSettings(strategy="setwise", threshold=3, keep_top_k=0, params=params))
    return [g.chunk_id for g in out.graded if g.kept], {g.chunk_id: g.reason for g in out.graded}, out.notes, read


def test_the_cross_cut_leaves_out_chunks_the_cross_encoder_reads_far_under_the_best() -> None:
    kept, _, notes, read = _prune({})
    assert kept == ["d0", "d1", "d2", "d3", "d4", "d5"] and read == []  # shipped: no cut, the cross model not read
    assert not any("cross_margin" in n for n in notes)
    kept, why, notes, read = _prune({CROSS_MARGIN: 250})
    # best admitted cross 3.0 (d3): d1 (1.0) and d4 (0.5) are within 2.5 and stay; d5 (-0.5) is not and goes; d2
    # (-1.0) is the most probable and d0 (-6.0) the retriever's first: they stay. d6 (grade 2) is not read.
    assert kept == ["d0", "d1", "d2", "d3", "d4"]
    assert read == [["d0", "d1", "d2", "d3", "d4", "d5"]]
    assert "the fitted cross-encoder cut (cross -0.50 is more than 2.5 under" in why["d5"]
    assert "grade 2 (was 4)" in why["d5"]
    assert "cross_margin=250" in notes
    assert _prune({CROSS_MARGIN: 1000})[0] == _prune({})[0]  # every chunk within the margin
    assert _prune({CROSS_MARGIN: 100})[0] == ["d0", "d2", "d3"]


def test_a_rules_grade_stands_and_the_cut_follows_the_short_cut() -> None:
    kept, _, _, _ = _prune({CROSS_MARGIN: 100}, ruled=[False, True, False, False, False, False, False])
    assert "d1" in kept  # an identifier the question names: the rule's grade stands
    # the short-chunk cut runs first (every chunk is 2 words): the cross cut reads only what it left
    _, _, notes, read = _prune({SHORT_BELOW: 100, CROSS_MARGIN: 250})
    assert read == [["d0", "d1", "d2", "d5"]] and notes[-2:] == ("short_below=100", "cross_margin=250")


def test_without_the_cross_model_the_grades_stand_and_a_note_says_so() -> None:
    pruner, _ = _pruner()

    def missing(question: object, chunks: object) -> list[float]:
        raise ConfigError("the cross model x.npz is not installed")

    pruner.cross_scores = missing  # type: ignore[method-assign]
    out = pruner.prune(
        "q", _cands(), PruneSettings(strategy="setwise", threshold=3, keep_top_k=0, params={CROSS_MARGIN: 100})
    )
    assert [g.chunk_id for g in out.graded if g.kept] == ["d0", "d1", "d2", "d3", "d4", "d5"]
    assert any("cross_margin=100: not applied (the cross model x.npz is not installed)" in n for n in out.notes)


def test_cross_cut_never_raises_a_grade_and_reads_only_chunks_at_the_threshold() -> None:
    assert cross_cut([5, 4, 4], [0.0, 5.0, 0.5], [0.9, 0.2, 0.1], [3, 4, 5], [False] * 3, 3, 2.0) == [5, 4, 2]
    assert cross_cut([5, 2], [0.0, 9.0], [0.9, 0.1], [1, 2], [False] * 2, 3, 1.0) == [5, 2]  # d1 under: not the best
    assert cross_cut([5, 4], [5.0, None], [0.9, 0.1], [1, 2], [False] * 2, 3, 1.0) == [5, 4]  # not read: stands
    assert cross_cut([5, 5], [9.0, 0.0], [0.9, 0.1], [1, 2], [False] * 2, 1, 1.0) == [5, 1]  # at least 1
    assert cross_cut([5, 4], [0.0, 9.0], [0.9, 0.1], [1, 2], [False] * 2, 3, 0.0) == [5, 4]  # margin 0: no cut
    assert cross_cut([], [], [], [], [], 3, 1.0) == []


def test_cross_margin_is_a_checked_strategy_parameter() -> None:
    with pytest.raises(RequestError, match=CROSS_MARGIN):
        PruneSettings(strategy="setwise", params={CROSS_MARGIN: -1})
    assert PruneSettings(strategy="setwise").with_overrides({CROSS_MARGIN: 150}).params == {CROSS_MARGIN: 150}


def _case(admitted: list[tuple[float, bool, int, int, float]], best: float = 0.9) -> AdaptCase:
    return AdaptCase(
        question="q",
        kind="answerable",
        extra={
            "admitted_shape": [a[:4] for a in admitted],
            "admitted_cross": [a[4] for a in admitted],
            "best_p": best,
        },
    )


def test_the_fit_takes_the_smallest_margin_that_keeps_the_sections() -> None:
    # the section is the most probable; beside it chunks the cross-encoder reads 3 under it
    top_gold = [_case([(0.9, True, 1, 300, 4.0), (0.2, False, 3, 300, 1.0), (0.1, False, 5, 300, 0.5)])] * 80
    # the section is read 1.8 under the best chunk: a margin under 2 would lose it
    near_gold = [_case([(0.9, False, 1, 300, 4.0), (0.2, True, 4, 300, 2.2)])] * 20
    margin, fig = fit_cross_margin([*top_gold, *near_gold])
    assert margin == 200 and fig["gold_kept"] >= CROSS_GOLD_SHARE and fig["chunks"] < fig["chunks_uncut"]
    assert fig["by_margin"]["1.5"][0] == 0.8  # 20 of 100 sections lost at 1.5
    # sections the cross-encoder reads far under the best: no margin keeps the share
    assert fit_cross_margin([_case([(0.9, False, 1, 300, 9.0), (0.2, True, 4, 300, 0.0)])] * 40)[0] == 0
    assert fit_cross_margin(top_gold[: MIN_CASES - 1])[0] == 0  # too few questions
    # nothing far under the best: no cut
    assert fit_cross_margin([_case([(0.9, True, 1, 300, 4.0), (0.2, False, 3, 300, 3.9)])] * 40)[0] == 0
    # the short-chunk cut first: a section it leaves out is no question for the cross cut
    short_gold = [_case([(0.9, False, 1, 300, 4.0), (0.2, True, 4, 20, 2.2)])] * 20
    assert fit_cross_margin([*top_gold, *short_gold], short_below=100)[1]["questions_after_short"] == 80
    assert min(CROSS_GRID) > 0


def test_adapt_stores_the_fitted_cross_cut_and_asks_again_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from admit.answerability.adaptation import Adaptation
    from admit.backends.embedders import FakeEmbedder
    from admit.kb import KnowledgeBase
    from admit.kb import adapt as adapt_mod
    from admit.types import Access

    probes: list[dict[str, object]] = []

    def fake_ask(kb: object, pipe: object, plan: Any, probe: Adaptation, rec: Any = None) -> AdaptCase:
        probes.append(dict(probe.prune_params))
        extra: dict[str, Any] = {
            "admitted_shape": [(0.9, True, 1, 300), (0.2, False, 3, 300)],
            "best_p": 0.9,
            "gold_retrieved": True,
        }
        if rec is not None and rec.cross is not None:  # the pruner's cross-encoder, read on the first pass only
            extra["admitted_cross"] = [4.0, -2.0]
        return AdaptCase(
            question=plan.question,
            kind=plan.kind,
            model="setwise",
            p=0.6 if plan.kind == "answerable" else 0.01,
            state="answered",
            extra=extra,
        )

    monkeypatch.setattr(adapt_mod, "_ask", fake_ask)
    words = ["backup", "restore", "mirror", "archive", "snapshot", "rotation", "compression", "retention"]
    texts = [f"The {w} job number {i} copies the database to disk {i}." for i in range(5) for w in words]
    opts = {"sections": 30, "foreign": 20, "short": False}
    with KnowledgeBase(":memory:", embedder=FakeEmbedder()) as kb:
        kb.add_chunks(
            [
                Chunk(
                    id=f"s#{i}",
                    source_id=f"s{i}",
                    title=f"{t.split()[1].title()} {i}",
                    text=t,
                    access=Access(tenant="t"),
                )
                for i, t in enumerate(texts)
            ]
        )
        fit, cases = adapt_mod.adapt(kb, adapt_mod.AdaptOptions(**opts, cross_fit=True), save=False)  # type: ignore[arg-type]
        n = len(cases)
        del probes[:]
        ad, _ = adapt_mod.adapt(kb, adapt_mod.AdaptOptions(**opts), save=False)  # type: ignore[arg-type]
        off, _ = adapt_mod.adapt(kb, adapt_mod.AdaptOptions(**opts, cross=False), save=False)  # type: ignore[arg-type]
    # fitted: the smallest margin of the grid, asked again with it
    want = {"setwise": {"doc_rules": 1, CROSS_MARGIN: round(min(CROSS_GRID) * 100)}}
    assert fit.prune_params == want and fit.figures["cross_cut"]["cross_margin"] == round(min(CROSS_GRID) * 100)
    # by default: the default margin, stored without reading the cross-encoder or asking again (one pass)
    assert ad.prune_params == {"setwise": {"doc_rules": 1, CROSS_MARGIN: CROSS_MARGIN_DEFAULT}}
    assert probes[:n] == [{"setwise": {"doc_rules": 1}}] * n and len(probes) == 2 * n  # ad's pass, then off's
    assert ad.figures["cross_cut"] == {"fitted": False, "cross_margin": CROSS_MARGIN_DEFAULT}
    assert off.prune_params == {"setwise": {"doc_rules": 1}} and off.figures["cross_cut"] == {"fitted": False}

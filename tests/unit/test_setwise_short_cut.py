"""Issue 46 item 1, the useful share: setwise's short-chunk cut fitted per knowledge base (``admit adapt``:
``short_below``).

- a chunk graded at or above the threshold that is short, neither among the retriever's first two nor within half
  of the list's best probability, and not graded by a rule is graded one under the threshold; the list's most
  probable chunk always stays; the dropped chunks' reasons and the pruner's notes name the cut;
- it is a checked strategy parameter, off (0) unless a policy, a request or an adaptation sets it;
- the fit picks the largest word count that still holds the pseudo-questions' sections at the share, or none.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from admit.errors import RequestError
from admit.kb.adapt import CROSS_MARGIN_DEFAULT, MIN_CASES, SHORT_GOLD_SHARE, SHORT_GRID, AdaptCase, fit_short_below
from admit.prune.settings import PruneSettings
from admit.prune.setwise import CROSS_MARGIN, SHORT_BELOW, SetwisePruner, short_cut
from admit.types import Chunk, Scored
from tests.unit._setwise_scripted import Scripted as _Scripted

#: (words, p, grade) in the retriever's order: d0 and d1 are its first two, d2 the list's most probable.
LIST = [(10, 0.05, 4), (200, 0.10, 3), (300, 0.80, 5), (15, 0.10, 4), (150, 0.20, 4), (30, 0.50, 4), (8, 0.01, 2)]


def _cands() -> list[Scored]:
    return [
        Scored(chunk=Chunk(id=f"d{i}", source_id=f"s{i}", text=" ".join(["word"] * w)), score=1.0 - i / 100, rank=i)
        for i, (w, _, _) in enumerate(LIST)
    ]


def _prune(params: dict[str, int], ruled: Sequence[bool] = ()) -> tuple[list[str], dict[str, str], tuple[str, ...]]:
    pruner = SetwisePruner(scorer=_Scripted([p for _, p, _ in LIST], [g for _, _, g in LIST], ruled))  # type: ignore[arg-type]
    out = pruner.prune("q", _cands(), PruneSettings(strategy="setwise", threshold=3, keep_top_k=0, params=params))
    return [g.chunk_id for g in out.graded if g.kept], {g.chunk_id: g.reason for g in out.graded}, out.notes


def test_the_short_cut_leaves_out_short_chunks_ranked_low_by_both() -> None:
    assert _prune({})[0] == ["d0", "d1", "d2", "d3", "d4", "d5"]  # shipped: every chunk graded 3 or more
    kept, why, notes = _prune({SHORT_BELOW: 100})
    # d3 (15 words, retriever rank 4, p 0.10 under half of the best 0.80) goes; d0 is the retriever's first, d5
    # (30 words) is within half of the best (0.50 >= 0.40), d4 (150 words) is not short: they stay
    assert kept == ["d0", "d1", "d2", "d4", "d5"]
    assert "fitted short-chunk cut (15 words < 100" in why["d3"] and "grade 2 (was 4)" in why["d3"]
    assert "short_below=100" in notes
    assert _prune({SHORT_BELOW: 0})[0] == _prune({})[0]  # 0: no cut
    assert _prune({SHORT_BELOW: 10})[0] == _prune({})[0]  # no kept chunk under 10 words past the first two


def test_a_rules_grade_stands() -> None:
    kept, _, _ = _prune({SHORT_BELOW: 100}, ruled=[False, False, False, True, False, False, False])
    assert "d3" in kept  # an identifier the question names, an asked release: the rule's grade stands


def test_short_cut_never_raises_a_grade_and_keeps_the_most_probable() -> None:
    # the most probable chunk stays even when short and ranked low by the retriever
    assert short_cut([5, 4], [0.9, 0.1], [5, 6], [3, 3], [False, False], 3, 50) == [5, 2]
    assert short_cut([2, 1, 5], [0.01, 0.0, 0.9], [4, 5, 0], [3, 3, 3], [False] * 3, 3, 50) == [2, 1, 5]
    assert short_cut([5, 5], [0.5, 0.1], [0, 3], [3, 3], [False, False], 1, 50) == [5, 1]  # at least 1
    assert short_cut([], [], [], [], [], 3, 50) == []


def test_short_below_is_a_checked_strategy_parameter() -> None:
    with pytest.raises(RequestError, match=SHORT_BELOW):
        PruneSettings(strategy="setwise", params={SHORT_BELOW: -1})
    assert PruneSettings(strategy="setwise").with_overrides({SHORT_BELOW: 60}).params == {SHORT_BELOW: 60}


def _case(admitted: list[tuple[float, bool, int, int]], best: float = 0.9) -> AdaptCase:
    return AdaptCase(
        question="q",
        kind="answerable",
        extra={"admitted_shape": admitted, "best_p": best, "admitted_p": [(p, g) for p, g, _, _ in admitted]},
    )


def test_the_fit_takes_the_largest_word_count_that_keeps_the_sections() -> None:
    # the section is a long chunk; beside it short chunks of 30-70 words, ranked low, under half the best
    long_gold = [_case([(0.9, True, 0, 300), (0.2, False, 3, 30), (0.1, False, 5, 70)]) for _ in range(80)]
    # the section of these is a 90-word chunk ranked low: a cut at 100 words or more would lose it
    short_gold = [_case([(0.9, False, 0, 300), (0.2, True, 4, 90)]) for _ in range(20)]
    below, fig = fit_short_below([*long_gold, *short_gold])
    assert below == 80 and fig["gold_kept"] >= SHORT_GOLD_SHARE and fig["chunks"] < fig["chunks_uncut"]
    assert fig["by_words"]["100"][0] == 0.8  # 20 of 100 sections lost at 100 words
    # sections that are themselves short and ranked low: no count keeps the share
    assert fit_short_below([_case([(0.9, False, 0, 300), (0.2, True, 4, 10)])] * 40)[0] == 0
    assert fit_short_below(long_gold[: MIN_CASES - 1])[0] == 0  # too few questions
    assert fit_short_below([_case([(0.9, False, 0, 300), (0.1, False, 3, 10)])] * 40)[0] == 0  # no section admitted
    # nothing short to leave out: no cut
    assert fit_short_below([_case([(0.9, True, 0, 300), (0.2, False, 3, 400)])] * 40)[0] == 0
    assert max(SHORT_GRID) >= 100


def test_adapt_stores_the_fitted_short_cut_and_asks_again_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from typing import Any

    from admit.answerability.adaptation import Adaptation
    from admit.backends.embedders import FakeEmbedder
    from admit.kb import KnowledgeBase
    from admit.kb import adapt as adapt_mod
    from admit.types import Access

    probes: list[dict[str, object]] = []

    def fake_ask(kb: object, pipe: object, plan: Any, probe: Adaptation, rec: object = None) -> AdaptCase:
        probes.append(dict(probe.prune_params))
        return AdaptCase(
            question=plan.question,
            kind=plan.kind,
            model="setwise",
            p=0.6 if plan.kind == "answerable" else 0.01,
            state="answered",
            extra={
                "admitted_shape": [(0.9, True, 0, 300), (0.2, False, 3, 30)],
                "best_p": 0.9,
                "gold_retrieved": True,
            },
        )

    monkeypatch.setattr(adapt_mod, "_ask", fake_ask)
    words = ["backup", "restore", "mirror", "archive", "snapshot", "rotation", "compression", "retention"]
    texts = [f"The {w} job number {i} copies the database to disk {i}." for i in range(5) for w in words]
    with KnowledgeBase(":memory:", embedder=FakeEmbedder()) as kb:
        kb.add_chunks(
            [
                Chunk(
                    id=f"s#{i}",
                    source_id=f"s{i}",
                    title=f"{t.split()[1].title()} settings {i}",
                    text=t,
                    access=Access(tenant="t"),
                )
                for i, t in enumerate(texts)
            ]
        )
        ad, cases = adapt_mod.adapt(kb, adapt_mod.AdaptOptions(sections=30, foreign=20), save=False)
        off, _ = adapt_mod.adapt(kb, adapt_mod.AdaptOptions(sections=30, foreign=20, short=False), save=False)
    n = len(cases)
    top = max(SHORT_GRID)
    # the cross-encoder cut's default margin is stored beside it (not asked with: tests/unit/test_setwise_cross_cut.py)
    cross = {CROSS_MARGIN: CROSS_MARGIN_DEFAULT}
    assert ad.prune_params == {"setwise": {"doc_rules": 1, SHORT_BELOW: top, **cross}}
    assert probes[n : 2 * n] == [{"setwise": {"doc_rules": 1, SHORT_BELOW: top}}] * n  # asked again with the cut
    assert ad.figures["short_cut"]["short_below"] == top
    assert off.prune_params == {"setwise": {"doc_rules": 1, **cross}}


def test_admit_adapt_show_names_the_short_cut_and_no_short_cut_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from admit.answerability.adaptation import Adaptation
    from admit.cli import adapt as cli_adapt
    from admit.cli import main

    def ad(params: dict[str, int]) -> Adaptation:
        fig = {"short_cut": {"questions": 80, "gold_kept": 1.0, "chunks": 2.5, "chunks_uncut": 2.7}}
        return Adaptation(
            thresholds={}, made="2026-12-07T10:00:00+00:00", chunks=100, figures=fig, prune_params={"setwise": params}
        )

    text = cli_adapt.summary(ad({"doc_rules": 1, SHORT_BELOW: 60}))
    assert "leaves out chunks of fewer than 60 words" in text and "most probable chunks" not in text
    assert "pruner" not in cli_adapt.summary(ad({"doc_rules": 1}))  # the rules alone: no cut to name
    seen: list[bool] = []

    def fake_run(kb: object, **kw: object) -> Adaptation:
        seen.append(bool(kw["short"]))
        return ad({})

    monkeypatch.setattr(cli_adapt, "run_adapt", fake_run)
    for flags, want in (([], True), (["--no-short-cut"], False), (["--short-cut"], True)):
        out = CliRunner().invoke(main, ["adapt", "--kb", ":memory:", *flags, "--json"])
        assert out.exit_code == 0, out.output
        assert seen[-1] is want


def test_a_knowledge_base_s_search_prunes_with_its_fitted_short_cut_and_the_trace_says_so() -> None:
    from admit.answerability.adaptation import Adaptation
    from admit.backends.embedders import FakeEmbedder
    from admit.kb import KnowledgeBase
    from admit.types import Access, Principal

    texts = [f"The backup job copies the database every night, step {i}, to the backup disk." for i in range(12)]
    with KnowledgeBase(":memory:", embedder=FakeEmbedder()) as kb:
        kb.add_chunks(
            [Chunk(id=f"b#{i}", source_id=f"b{i}", text=t, access=Access(tenant="t")) for i, t in enumerate(texts)]
        )
        who = Principal(tenant="t")
        q = "How does the backup job copy the database?"
        shipped = kb.search(q, who, prune="setwise")
        assert not any("short_below" in n for n in shipped.trace["pruner"]["notes"])
        ad = Adaptation(
            thresholds={},
            made="2026-12-07T10:00:00+00:00",
            chunks=kb.count(),
            prune_params={"setwise": {SHORT_BELOW: 100}},
        )
        kb.save_adaptation(ad, kb.fingerprint())
        cut = kb.search(q, who, prune="setwise")
        assert "short_below=100" in cut.trace["pruner"]["notes"]
        assert len(cut.admitted) < len(shipped.admitted)  # every chunk is 14 words: short for a cut at 100
        dropped = [d for d in cut.decisions if "the fitted short-chunk cut (14 words < 100" in (d.detail or "")]
        assert dropped and all(d.state == "dropped" for d in dropped)

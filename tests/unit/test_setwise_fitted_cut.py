"""Issue 46 item 1, the pruner's cut fitted per knowledge base (``admit adapt``: setwise's ``keep_most``).

- the cut keeps the ``keep_most`` most probable of the chunks graded at or above the threshold, a rule's grade
  standing (and counted), and names itself in the dropped chunks' reasons and the pruner's notes;
- it is a strategy parameter (a policy or request may set it; a bad value is a clear error);
- an adaptation stores it, reads it back, shows it, and hands it to the pruner unless the policy set it; without an
  adaptation (or a stale one) the settings are the shipped ones;
- the fit picks the smallest count that still holds the pseudo-questions' sections at the share, or none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from admit.answerability.adaptation import Adaptation
from admit.errors import ModelFileError, RequestError
from admit.kb.adapt import CUT_GOLD_SHARE, MIN_CASES, AdaptCase, fit_keep_most
from admit.pipeline import adapted_prune
from admit.prune.settings import PruneSettings
from admit.prune.setwise import SetwisePruner, keep_most_cut
from admit.types import Chunk, Scored
from tests.unit._setwise_scripted import Scripted as _Scripted


def _cands(n: int) -> list[Scored]:
    return [
        Scored(chunk=Chunk(id=f"d{i}", source_id=f"s{i}", text=f"text {i}"), score=1.0 - i / 100, rank=i)
        for i in range(n)
    ]


PROBS = [0.05, 0.9, 0.2, 0.6, 0.1, 0.02, 0.02, 0.02, 0.02, 0.02]
GRADES = [3, 5, 4, 4, 3, 2, 2, 2, 2, 2]


def _prune(params: dict[str, int], ruled: Sequence[bool] = ()) -> tuple[list[str], dict[str, str], tuple[str, ...]]:
    pruner = SetwisePruner(scorer=_Scripted(PROBS, GRADES, ruled))  # type: ignore[arg-type]
    out = pruner.prune("q", _cands(10), PruneSettings(strategy="setwise", threshold=3, keep_top_k=0, params=params))
    return [g.chunk_id for g in out.graded if g.kept], {g.chunk_id: g.reason for g in out.graded}, out.notes


def test_the_cut_keeps_the_most_probable_chunks_above_the_threshold() -> None:
    assert _prune({})[0] == ["d0", "d1", "d2", "d3", "d4"]  # shipped: every chunk graded 3 or more
    kept, why, notes = _prune({"keep_most": 2})
    assert kept == ["d1", "d3"]  # p 0.9 and 0.6, not the retriever's first (p 0.05)
    assert "the fitted cut keeps the 2 most probable" in why["d2"] and "grade 2 (was 4)" in why["d2"]
    assert "keep_most=2" in notes
    assert _prune({"keep_most": 0})[0] == _prune({})[0]  # 0: no cut


def test_a_rules_grade_stands_and_counts_among_the_kept() -> None:
    kept, _, _ = _prune({"keep_most": 2}, ruled=[True] + [False] * 9)
    assert kept == ["d0", "d1"]  # the identifier the question names stays, then the most probable


def test_keep_most_cut_never_raises_a_grade_and_never_goes_under_one() -> None:
    assert keep_most_cut([5, 4, 3, 2, 1], [0.1, 0.5, 0.9, 0.2, 0.0], [False] * 5, 3, 1) == [2, 2, 3, 2, 1]
    assert keep_most_cut([5, 5], [0.5, 0.4], [False, False], 1, 1) == [5, 1]


def test_keep_most_is_a_checked_strategy_parameter() -> None:
    with pytest.raises(RequestError, match="keep_most"):
        PruneSettings(strategy="setwise", params={"keep_most": -1})
    assert PruneSettings(strategy="setwise").with_overrides({"keep_most": 3}).params == {"keep_most": 3}


def _ad(**kw: object) -> Adaptation:
    base: dict[str, object] = {"thresholds": {}, "made": "2026-12-07T10:00:00+00:00", "chunks": 100}
    return Adaptation(**{**base, **kw})  # type: ignore[arg-type]


def test_the_adaptation_stores_the_cut_and_hands_it_to_the_pruner() -> None:
    ad = _ad(prune_params={"setwise": {"keep_most": 3}})
    back = Adaptation.from_json(ad.to_json())
    assert back.prune_params == {"setwise": {"keep_most": 3}}
    shipped = PruneSettings(strategy="setwise", threshold=3)
    assert adapted_prune(shipped, back).params == {"keep_most": 3}
    assert adapted_prune(shipped, None) == shipped  # no adaptation: today's settings
    assert adapted_prune(shipped, back.marked_stale("changed")) == shipped
    assert adapted_prune(shipped, _ad()) == shipped  # an adaptation without a cut
    own = PruneSettings(strategy="setwise", params={"keep_most": 6})
    assert adapted_prune(own, back).params == {"keep_most": 6}  # the policy's own value wins
    other = PruneSettings(strategy="top_n", params={"n": 2})
    assert adapted_prune(other, back) == other  # fitted for setwise only
    bad = ad.to_json().replace('"keep_most": 3', '"keep_most": -2')
    with pytest.raises(ModelFileError):
        Adaptation.from_json(bad)


def test_admit_adapt_show_names_the_cut() -> None:
    from admit.cli.adapt import summary

    ad = _ad(
        prune_params={"setwise": {"keep_most": 3}},
        figures={"cut": {"questions": 80, "gold_kept": 0.99, "chunks": 2.6, "chunks_uncut": 3.4}},
    )
    assert "setwise pruner: keeps at most its 3 most probable chunks" in summary(ad)
    assert "pruner" not in summary(_ad())


def test_both_cuts_state_their_figures_in_one_clause() -> None:
    """The fitted count and the short-chunk cut each give their own figures in the same words (one helper)."""
    from admit.cli.adapt import summary

    ad = _ad(
        prune_params={"setwise": {"keep_most": 3, "short_below": 60}},
        figures={
            "cut": {"questions": 80, "gold_kept": 0.99, "chunks": 2.6, "chunks_uncut": 3.4},
            "short_cut": {"questions": 70, "gold_kept": 1.0},
        },
    )
    lines = [line for line in summary(ad).splitlines() if "pruner:" in line]
    assert len(lines) == 2
    assert lines[0].endswith(
        "above the threshold (the section of 0.99 of 80 answerable pseudo-questions; 2.6 chunks a question, uncut 3.4)"
    )
    assert lines[1].endswith(
        "probability reach (the section of 1.0 of 70 answerable pseudo-questions; - chunks a question, uncut -)"
    )


def _case(admitted: list[tuple[float, bool]]) -> AdaptCase:
    return AdaptCase(question="q", kind="answerable", extra={"admitted_p": admitted})


def test_the_fit_takes_the_smallest_count_that_keeps_the_sections() -> None:
    first = [_case([(0.9, True), (0.3, False), (0.2, False), (0.1, False)]) for _ in range(60)]
    second = [_case([(0.9, False), (0.5, True), (0.2, False), (0.1, False)]) for _ in range(40)]
    most, fig = fit_keep_most([*first, *second])
    assert most == 2 and fig["gold_kept"] >= CUT_GOLD_SHARE and fig["chunks"] < fig["chunks_uncut"]
    # a knowledge base whose sections sit anywhere in the kept list: no count keeps the share with fewer chunks
    spread = [_case([(0.9 - j / 10, j == i % 4) for j in range(4)]) for i in range(100)]
    assert fit_keep_most(spread)[0] == 0
    assert fit_keep_most(first[: MIN_CASES - 1])[0] == 0  # too few questions
    assert fit_keep_most([_case([(0.9, False), (0.1, False)])] * 40)[0] == 0  # no section admitted: nothing to fit


def test_a_knowledge_base_s_search_prunes_with_its_fitted_cut_and_the_trace_says_so() -> None:
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
        assert not any("keep_most" in n for n in shipped.trace["pruner"]["notes"])
        kb.save_adaptation(_ad(chunks=kb.count(), prune_params={"setwise": {"keep_most": 1}}), kb.fingerprint())
        cut = kb.search(q, who, prune="setwise")
        assert "keep_most=1" in cut.trace["pruner"]["notes"]
        assert len(cut.admitted) <= 2 <= len(shipped.admitted)  # the most probable (and the reranked first)


def test_adapt_fits_the_verdicts_thresholds_on_what_the_fitted_cut_admits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict reads the admitted chunks: once a cut is fitted, every pseudo-question is asked again with it,
    and the thresholds are fitted on those answers (fitted uncut, they said "not answered" to answerable questions
    whose admitted set the cut had shrunk)."""
    from admit.backends.embedders import FakeEmbedder
    from admit.kb import KnowledgeBase
    from admit.kb import adapt as adapt_mod
    from admit.kb.adapt import CROSS_MARGIN_DEFAULT
    from admit.types import Access

    probes: list[dict[str, object]] = []

    def fake_ask(kb: object, pipe: object, plan: Any, probe: Adaptation, rec: object = None) -> AdaptCase:
        probes.append(dict(probe.prune_params))
        cut = bool(probe.prune_params)
        kind = plan.kind
        return AdaptCase(
            question=plan.question,
            kind=kind,
            model="setwise",
            p=(0.2 if cut else 0.6) if kind == "answerable" else 0.01,
            state="answered",
            extra={"admitted_p": [(0.9, False), (0.5, True), (0.2, False), (0.1, False)], "gold_retrieved": True},
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
        ad, cases = adapt_mod.adapt(kb, adapt_mod.AdaptOptions(sections=30, foreign=20, cut=True), save=False)
    n = len(cases)
    # the documentation rules on; the cross-encoder cut's default margin stored beside, not asked with
    assert ad.prune_params == {"setwise": {"doc_rules": 1, "keep_most": 2, "cross_margin": CROSS_MARGIN_DEFAULT}}
    rules = {"doc_rules": 1}  # the documentation rules on while fitting too
    assert probes[:n] == [{"setwise": rules}] * n and probes[n:] == [{"setwise": {**rules, "keep_most": 2}}] * n
    assert ad.thresholds["setwise"][0] <= 0.2  # fitted on the cut's probabilities (0.2), not the uncut ones (0.6)


def test_no_cut_fits_the_verdict_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from admit.cli import adapt as cli_adapt
    from admit.cli import main

    seen: list[bool] = []

    def fake_run(kb: object, **kw: object) -> Adaptation:
        seen.append(bool(kw["cut"]))
        return _ad()

    monkeypatch.setattr(cli_adapt, "run_adapt", fake_run)
    for flag, want in (("--no-cut", False), ("--cut", True)):  # the default is --no-cut: below
        out = CliRunner().invoke(main, ["adapt", "--kb", ":memory:", flag, "--json"])
        assert out.exit_code == 0, out.output
        assert seen[-1] is want

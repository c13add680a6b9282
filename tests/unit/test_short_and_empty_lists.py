"""Deep and short lists (issue 46, item 4): an empty candidate list is "not answered", and ``top_k`` keeps the
documents the pruner graded best, not the first ones the retriever ranked among those kept."""

from __future__ import annotations

from admit.adapters._core import AdmitFilter, Doc
from admit.prune.fake import FakeGrader


def test_an_empty_candidate_list_is_not_answered() -> None:
    run = AdmitFilter().run("How do I rotate the audit log?", [])
    assert run.verdicts == ()
    assert run.answer_state == "not_answered"
    assert run.answerable is False


def test_top_k_keeps_the_best_graded_not_the_first_ranked_of_those_kept() -> None:
    docs = [Doc(id=f"d{i}", text=f"section {i} of the guide") for i in range(10)]
    grades = {"d0": 3, "d1": 3, "d2": 3, "d3": 3, "d7": 5}
    f = AdmitFilter(pruner=FakeGrader(grades=grades), keep_top_k=1, top_k=3)
    kept = [docs[v.index].id for v in f.run("q", docs).kept]
    assert "d7" in kept  # graded 5 at rank 8: a rank cut over the kept ones (d0, d1, d2) lost it
    assert "d0" in kept  # keep_top_k still comes first
    assert len(kept) == 3

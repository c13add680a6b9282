"""The clear-answer cap (issue 46: keep fewer chunks where the list has a clear answer), opt-in.

The coverage stage, fitted on lists that are mostly two-hop, kept 3-5 chunks of a 10-chunk documentation list whose
answer is one section (p 0.9 beside p 0.03). With the cap, a chunk far below a clear answer is graded at most 2; a
rule (an identifier the question names) still lifts it, a list without a clear answer keeps its grades, and a short
list still keeps the retriever's first.

The model is a stub (fixed probabilities per chunk; the coverage stage never sure): these test the grading logic.
"""

from __future__ import annotations

import numpy as np

from admit.backends.embedders.fake import FakeEmbedder
from admit.prune.settings import PruneSettings
from admit.prune.setwise import SetwisePruner
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer
from admit.prune.setwise_model.coverage import CLEAR_BEST_P, CLEAR_CAP_GRADE, CLEAR_RATIO, clear_answer_cap
from admit.types import Chunk, Scored


class _FixedModel:
    """The shipped model's cuts and clamps; probabilities read off each chunk's title (``p=0.30``); the coverage
    stage never sure (0.5)."""

    def __init__(self, real: object) -> None:
        self.cuts = real.cuts  # type: ignore[attr-defined]
        self.keep_bounds = real.keep_bounds  # type: ignore[attr-defined]

    def predict(self, prep: object) -> list[np.ndarray]:
        ps = [float(str(t).split("p=")[1].split()[0]) for t in prep.labels]  # type: ignore[attr-defined]
        return [np.array(ps)]

    def complete_probs(self, probs: np.ndarray, qfeat: np.ndarray) -> np.ndarray:
        return np.full(probs.size, 0.5)


def _scorer() -> SetwiseScorer:
    s = SetwiseScorer(embedder=FakeEmbedder(), cross=False, multilingual=False)
    s.model = _FixedModel(s.model)  # type: ignore[assignment]
    s.clear_answer = True  # off by default (it cost R@68 on ../shared/data): the cap's own logic is tested here
    return s


def _items(ps: list[float], text: str = "The replication queue keeps entries for a while.") -> list[SetwiseItem]:
    return [SetwiseItem(id=f"c{i}", title=f"p={p:.2f} replication queue part {i}", text=text) for i, p in enumerate(ps)]


QUESTION = "How long does the replication queue keep entries?"


def test_the_cap_lowers_only_chunks_far_below_a_clear_answer() -> None:
    under, over = 0.9 * CLEAR_RATIO * 0.99, 0.9 * CLEAR_RATIO * 1.01
    probs = np.array([0.9, 0.01, 0.2, under, over])
    assert clear_answer_cap(probs, [5, 4, 4, 3, 3]) == [5, CLEAR_CAP_GRADE, 4, CLEAR_CAP_GRADE, 3]
    assert clear_answer_cap(probs, [5, 1, 4, 2, 1]) == [5, 1, 4, 2, 1]  # never lifts
    unsure = np.array([CLEAR_BEST_P - 0.01, 0.01, 0.01])
    assert clear_answer_cap(unsure, [5, 4, 3]) == [5, 4, 3]  # no clear answer: the list's grades stand
    assert clear_answer_cap(np.array([]), []) == []
    assert CLEAR_CAP_GRADE < 3 <= CLEAR_CAP_GRADE + 1 and 0 < CLEAR_RATIO < 1


def test_a_ten_chunk_list_with_a_clear_answer_keeps_it_alone() -> None:
    scorer = _scorer()
    ps = [0.9, *[0.03] * 9]
    capped = scorer.score(QUESTION, _items(ps))
    assert [g >= 3 for g in capped.grades] == [True, *[False] * 9]
    assert "clear answer" in capped.reasons[1]
    scorer.clear_answer = False  # the coverage stage alone kept four (its 45% clamp at threshold 3)
    assert sum(g >= 3 for g in scorer.score(QUESTION, _items(ps)).grades) == 4


def test_a_chunk_near_the_clear_answer_and_a_list_without_one_are_graded_as_before() -> None:
    scorer = _scorer()
    near = scorer.score(QUESTION, _items([0.9, 0.3, *[0.03] * 8]))
    assert near.grades[1] >= 3  # 0.3 is a third of the best: a second section the answer may need
    unsure = scorer.score(QUESTION, _items([0.3, *[0.02] * 9]))
    plain = _scorer()
    plain.clear_answer = False
    assert unsure.grades == plain.score(QUESTION, _items([0.3, *[0.02] * 9])).grades


def test_a_rule_still_lifts_a_chunk_under_a_clear_answer() -> None:
    items = _items([0.9, *[0.03] * 9])
    items[4] = SetwiseItem(id="c4", title="p=0.03 error codes", text="E4012: the replication queue is full.")
    out = _scorer().score("What does E4012 mean for the replication queue?", items)
    assert out.grades[4] >= 4  # names the identifier the question asks about


def test_a_short_list_still_keeps_the_retrievers_first() -> None:
    pruner = SetwisePruner(scorer=_scorer())
    cands = [
        Scored(chunk=Chunk(id=it.id, source_id=it.id, title=it.title, text=it.text), score=1.0 - i / 10, rank=i)
        for i, it in enumerate(_items([0.03, 0.9, 0.02, 0.02]))
    ]
    out = pruner.prune(QUESTION, cands, PruneSettings(threshold=3, keep_top_k=0))
    assert [g.chunk_id for g in out.graded if g.kept] == ["c0", "c1"]


def test_the_cap_is_off_by_default() -> None:
    plain = SetwiseScorer(embedder=FakeEmbedder(), cross=False, multilingual=False)
    assert plain.clear_answer is False  # measured, not shipped: R@68 fell on all three ../shared/data sets

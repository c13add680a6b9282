"""Deep and short lists, and the retriever's order as the floor (issue 46, items 4 and 5).

- a deep list's cut-off never drops a chunk the model grades as answering by its own probability (a 500-chunk list
  dropped the answer a 100-chunk list kept: "set by the deep-list cut-off");
- a list of at most four keeps the retriever's first (LangChain's default ``k=4`` lost rank-1 answers graded 2);
- when the model is unsure of a list (no chunk reaches p 0.4), the retriever's first two are kept;
- a rule's grade (an identifier the question names, a release) and the unrelated floor still stand.

The model is a stub here (fixed probabilities per chunk): these are tests of the grading logic around it.
"""

from __future__ import annotations

import numpy as np

from admit.backends.embedders.fake import FakeEmbedder
from admit.prune.settings import PruneSettings
from admit.prune.setwise import (
    SetwisePruner,
    retriever_floor,
    retriever_keeps,
)
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer
from admit.types import Chunk, Scored
from tests.unit._setwise_scripted import Scripted as _Scripted


class _FixedModel:
    """The shipped model's cuts and clamps; probabilities read off each chunk's title (``p=0.30``); the coverage
    stage never sure (0.5), as on a deep on-topic list."""

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
    return s


def _item(i: int, p: float) -> SetwiseItem:
    return SetwiseItem(id=f"c{i}", title=f"p={p:.2f} part {i}", text=f"The replication queue, part {i}.")


def test_a_deep_list_keeps_the_answer_the_hundred_chunk_list_keeps() -> None:
    first = [_item(0, 0.30), *(_item(i, 0.05) for i in range(1, 100))]  # the answer, p=0.30, in the first 100
    more = [_item(i, 0.60) for i in range(100, 160)] + [_item(i, 0.02) for i in range(160, 500)]
    scorer = _scorer()
    hundred = scorer.score("How long are queue entries kept?", first)
    assert hundred.grades[0] >= 3
    deep = scorer.score("How long are queue entries kept?", [*first, *more])
    assert deep.grades[0] >= 3  # 60 chunks above it by p: outside the best 50, it was graded 1
    kept = sum(g >= 3 for g in deep.grades)
    assert kept <= 61  # the answer and the 60 the model grades answering; not a share of 500


def test_the_deep_cut_off_still_bounds_chunks_the_model_does_not_grade_answering() -> None:
    items = [_item(i, 0.10 - i / 10_000) for i in range(500)]  # p alone: grade 2 for all
    kept = sum(g >= 3 for g in _scorer().score("How long are queue entries kept?", items).grades)
    assert 1 <= kept <= 22


def _cands(n: int) -> list[Scored]:
    return [
        Scored(chunk=Chunk(id=f"d{i}", source_id=f"s{i}", text=f"text {i}"), score=1.0 - i / 100, rank=i)
        for i in range(n)
    ]


def _kept(scripted: _Scripted, n: int, keep_top_k: int = 0) -> list[str]:
    pruner = SetwisePruner(scorer=scripted)  # type: ignore[arg-type]
    out = pruner.prune("q", _cands(n), PruneSettings(threshold=3, keep_top_k=keep_top_k))
    return [g.chunk_id for g in out.graded if g.kept]


def test_a_four_candidate_list_keeps_the_retrievers_first_graded_two() -> None:
    kept = _kept(_Scripted([0.3, 0.9, 0.05, 0.05], [2, 5, 2, 2]), 4)
    assert kept == ["d0", "d1"]  # d0 was dropped: grade 2 < 3
    # a longer list where the model is sure: the model decides
    assert _kept(_Scripted([0.3, 0.9, *[0.05] * 8], [2, 5, *[2] * 8]), 10) == ["d1"]


def test_an_unsure_list_falls_back_towards_the_retrievers_order() -> None:
    kept = _kept(_Scripted([0.1, 0.2, 0.3, *[0.05] * 7], [2, 2, 5, *[2] * 7]), 10)
    assert kept == ["d0", "d1", "d2"]  # best p 0.3 < 0.4: the retriever's first two kept beside the model's


def test_the_unrelated_floor_and_a_rules_grade_stand() -> None:
    assert _kept(_Scripted([0.01, 0.9, 0.05, 0.05], [1, 5, 2, 2]), 4) == ["d1"]  # unrelated: never lifted
    ruled = _Scripted([0.1, 0.2, 0.3, *[0.05] * 7], [2, 2, 5, *[2] * 7], ruled=[True, False, *[False] * 8])
    assert _kept(ruled, 10) == ["d1", "d2"]  # d0's grade 2 was a rule's (another identifier): it stands


def test_the_floor_counts() -> None:
    assert retriever_keeps(0, []) == 0
    assert retriever_keeps(1, [0.9]) == 1 and retriever_keeps(4, [0.9] * 4) == 1
    assert retriever_keeps(5, [0.9] * 5) == 0
    assert retriever_keeps(10, [0.39] * 10) == 2
    assert retriever_floor([0, 1, 2], [2, 1, 2], [False, True, False], [0.1, 0.1, 0.1]) == [3, 1, 2]

"""The per-source cap runs after pruning: a useful chunk is not capped away while a weaker one survives."""

from __future__ import annotations

from typing import Any

from admit.pipeline import PackRequest, Pipeline
from admit.prune.fake import FakeGrader
from admit.types import Principal
from tests.helpers import chunk

TEXTS = [
    "The registry keeps its data under the data directory named in the configuration file.",
    "Backups copy the metadata database and the blob store to another disk every night.",
    "Error E4012 means the repository reached its storage quota; delete unused tags to fix it.",
    "Restores read the nightly copy back and restart the service once the copy is complete.",
]


def test_the_answer_ranked_third_of_its_source_is_admitted_over_weaker_chunks_ranked_above() -> None:
    cands = [chunk(f"guide#{i}", t, source="guide", score=1.0 - i / 10) for i, t in enumerate(TEXTS)]
    grader = FakeGrader(grades={"guide#0": 3, "guide#1": 3, "guide#2": 5, "guide#3": 1})
    res = Pipeline(pruner=grader).pack(
        PackRequest(
            question="What does E4012 mean?",
            principal=Principal(tenant="acme"),
            candidates=cands,
            prune="setwise",
            query_class="point_lookup",
        )
    )
    why = {d.chunk_id: d for d in res.decisions}
    assert "guide#2" in res.admitted_ids  # rank 3 of its source, the best graded
    capped = [cid for cid, d in why.items() if d.reason == "source_cap"]
    assert capped and all(why[c].grade is not None and why[c].grade <= 3 for c in capped)
    assert why["guide#3"].reason == "pruned"


class _ProbGrader:
    """Grades every chunk 3 and reports its own probability per chunk (as ``setwise`` does in ``signals``)."""

    name = "fake"

    def __init__(self, probs: dict[str, float]) -> None:
        self.probs = probs

    def prune(self, question: str, candidates: Any, settings: Any) -> Any:
        from dataclasses import replace

        from admit.prune.base import apply_threshold

        out = apply_threshold(self.name, candidates, [3] * len(candidates), settings)
        return replace(out, signals={c.chunk.id: (0.5, self.probs[c.chunk.id]) for c in candidates})


def test_within_a_grade_the_cap_keeps_the_pruners_most_probable_not_the_best_ranked() -> None:
    # three sections of one page, all graded 3: the pruner's probability, not the retriever's rank, picks the two
    cands = [chunk(f"guide#{i}", t, source="guide", score=1.0 - i / 10) for i, t in enumerate(TEXTS[:3])]
    grader = _ProbGrader({"guide#0": 0.05, "guide#1": 0.02, "guide#2": 0.10})
    res = Pipeline(pruner=grader).pack(
        PackRequest(
            question="What does E4012 mean?",
            principal=Principal(tenant="acme"),
            candidates=cands,
            prune="setwise",
            query_class="point_lookup",
        )
    )
    assert set(res.admitted_ids) == {"guide#0", "guide#2"}
    why = {d.chunk_id: d for d in res.decisions}
    assert why["guide#1"].reason == "source_cap"

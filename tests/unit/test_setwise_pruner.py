from __future__ import annotations

from admit.prune.setwise import SetwisePruner
from admit.prune.setwise_model import SetwiseScores
from admit.route import PruneSettings
from admit.types import Chunk, Scored


class ScriptedScorer:
    def __init__(self, grades):
        self.grades = grades
        self.seen = None

    def score(self, question, items):
        self.seen = (question, [i.id for i in items])
        n = len(items)
        return SetwiseScores(
            probs=tuple(g / 5 for g in self.grades[:n]),
            grades=tuple(self.grades[:n]),
            reasons=tuple(f"r{i}" for i in range(n)),
            expected_needed=2.0,
        )


def scored(n):
    return [Scored(chunk=Chunk(id=f"c{i}", source_id="s", text=f"t{i}"), score=1 - i / 10, rank=i) for i in range(n)]


def test_setwise_keeps_grade_at_or_above_threshold_and_top_k():
    scorer = ScriptedScorer([1, 5, 2, 4, 3])
    out = SetwisePruner(scorer=scorer).prune("q", scored(5), PruneSettings(threshold=4, keep_top_k=1))
    assert scorer.seen == ("q", ["c0", "c1", "c2", "c3", "c4"])
    assert out.kept_ids == ["c0", "c1", "c3"]
    assert out.graded[0].reason.startswith("keep_top_k")
    assert out.graded[2].reason == "grade 2 < threshold 4; p=0.40; r2"
    assert out.notes == ("expected_needed=2.00",)


def test_threshold_means_the_same_for_every_strategy():
    from admit.prune.fake import FakeGrader

    grades = [5, 4, 3, 2, 1]
    a = SetwisePruner(scorer=ScriptedScorer(grades)).prune("q", scored(5), PruneSettings(threshold=3, keep_top_k=0))
    b = FakeGrader(grades={f"c{i}": g for i, g in enumerate(grades)}).prune(
        "q", scored(5), PruneSettings(threshold=3, keep_top_k=0)
    )
    assert a.kept_ids == b.kept_ids == ["c0", "c1", "c2"]

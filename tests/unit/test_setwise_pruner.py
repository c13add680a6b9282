from __future__ import annotations

from admit.prune import PruneSettings
from admit.prune.setwise import SetwisePruner
from admit.prune.setwise_model import SetwiseScores
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
    scorer = ScriptedScorer([2, 5, 2, 4, 3])
    out = SetwisePruner(scorer=scorer).prune("q", scored(5), PruneSettings(threshold=4, keep_top_k=1))
    assert scorer.seen == ("q", ["c0", "c1", "c2", "c3", "c4"])
    assert out.kept_ids == ["c0", "c1", "c3"]
    assert out.graded[0].reason.startswith("keep_top_k")
    assert out.graded[2].reason == "grade 2 < threshold 4; p=0.40; r2"
    # issue 25: keep_top_k does not keep a top chunk setwise grades 1 (unrelated)
    out1 = SetwisePruner(scorer=ScriptedScorer([1, 5, 2, 4, 3])).prune("q", scored(5), PruneSettings(keep_top_k=1))
    assert "c0" not in out1.kept_ids
    assert out.notes == ("expected_needed=2.00",)


def test_threshold_means_the_same_for_every_strategy():
    from admit.prune.fake import FakeGrader

    grades = [5, 4, 3, 2, 1]
    a = SetwisePruner(scorer=ScriptedScorer(grades)).prune("q", scored(5), PruneSettings(threshold=3, keep_top_k=0))
    b = FakeGrader(grades={f"c{i}": g for i, g in enumerate(grades)}).prune(
        "q", scored(5), PruneSettings(threshold=3, keep_top_k=0)
    )
    assert a.kept_ids == b.kept_ids == ["c0", "c1", "c2"]


def test_identifiers_named_in_the_question():
    from admit.prune.setwise import identifiers

    assert identifiers("How do I fix error E4012 with HL_MAX_CONN on v2.1?") == {"E4012", "HL_MAX_CONN", "v2.1"}
    assert identifiers("Who won the 2nd prize in 1998 and the 20th?") == set()
    assert identifiers("Which aircraft, the FB-111A or the CP-400?") == {"FB-111A", "CP-400"}
    assert identifiers("Material UI v5 on S3 after WW2, the MP4 and the M1") == set()  # too short to be exact


def test_identifiers_lift_the_asked_code_and_demote_its_neighbours():
    """The real scorer (fake embedder): E4012 named -> >= 4; another code of the same shape -> <= 2."""
    from admit.backends.embedders.fake import FakeEmbedder
    from admit.prune.setwise_model import SetwiseScorer

    cands = [
        Scored(chunk=Chunk(id="e4044", source_id="s", text="E4044 unknown digest: push again."), score=0.9, rank=0),
        Scored(
            chunk=Chunk(id="e4012", source_id="s", text="E4012 quota exceeded: raise the quota."), score=0.8, rank=1
        ),
        Scored(chunk=Chunk(id="e40120", source_id="s", text="E40120 is a code of another shape."), score=0.7, rank=2),
        Scored(chunk=Chunk(id="quota", source_id="s", text="Quotas are set per project."), score=0.6, rank=3),
    ]
    pruner = SetwisePruner(scorer=SetwiseScorer(embedder=FakeEmbedder(dim=32)))
    out = pruner.prune("How do I fix error E4012?", cands, PruneSettings(threshold=3, keep_top_k=0))
    grade = {g.chunk_id: g for g in out.graded}
    assert grade["e4012"].grade >= 4 and "names E4012 from the question" in grade["e4012"].reason
    assert grade["e4044"].grade <= 2 and "another identifier" in grade["e4044"].reason
    assert "another identifier" not in grade["e40120"].reason  # a different shape is not a rival code
    assert "e4012" in out.kept_ids and "e4044" not in out.kept_ids
    # without the asked code anywhere in the list, a rival code is not demoted
    alone = pruner.prune("How do I fix error E4012?", [cands[0], cands[3]], PruneSettings(threshold=1, keep_top_k=0))
    assert all("another identifier" not in g.reason for g in alone.graded)

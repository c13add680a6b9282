"""The pruner, not a fixed rerank cut, decides among the retrieved list (issue 46, item 3): an answer the retriever
ranked 15th of 20 reached no pruner under ``rerank_count = 12``; without a pruner the cut still applies."""

from __future__ import annotations

from admit.pipeline import PackRequest, Pipeline
from admit.prune.fake import FakeGrader
from admit.types import Principal
from tests.helpers import chunk

FILLER = "The registry keeps its settings in a file named in the service unit."


def _cands() -> list:
    out = [chunk(f"d{i}#0", f"{FILLER} Section {i}.", score=1.0 - i / 100) for i in range(20)]
    out[14] = chunk("d14#0", "Error E4012 means the repository reached its storage quota.", score=1.0 - 14 / 100)
    return out


def _pack(prune: str, grader: FakeGrader) -> dict:
    res = Pipeline(pruner=grader).pack(
        PackRequest(
            question="What does E4012 mean?",
            principal=Principal(tenant="acme"),
            candidates=_cands(),
            prune=prune,
            query_class="default",  # rerank_count 12
        )
    )
    return {"admitted": res.admitted_ids, "why": {d.chunk_id: d for d in res.decisions}, "trace": res.trace}


def test_the_pruner_grades_a_candidate_ranked_below_the_rerank_count() -> None:
    seen: list[int] = []

    def grade(question: str, c: object) -> int:
        seen.append(1)
        return 5 if "E4012" in getattr(c, "text", "") else 1

    out = _pack("setwise", FakeGrader(fn=grade))
    assert len(seen) == 20  # every candidate graded, not the top 12
    assert "d14#0" in out["admitted"]
    assert not any(d.reason == "rerank_cut" for d in out["why"].values())


def test_without_a_pruner_the_rerank_count_still_cuts() -> None:
    out = _pack("none", FakeGrader(grades={}))
    assert "d14#0" not in out["admitted"]
    assert out["why"]["d14#0"].reason == "rerank_cut"


def test_setwise_takes_the_rerank_count_its_trees_were_fitted_on() -> None:
    """``setwise`` declares ``grades_whole_list = False``: it gets the policy's best 12 of 20, so an answer ranked
    15th is cut at rerank (graded over 30, the demo's bridging release note gave way to off-topic chunks)."""
    from admit.backends.embedders.fake import FakeEmbedder
    from admit.prune.setwise import SetwisePruner

    pruner = SetwisePruner(embedder=FakeEmbedder(dim=384), cross=False, multilingual=False)
    assert pruner.grades_whole_list is False
    res = Pipeline(pruner=pruner).pack(
        PackRequest(
            question="What does E4012 mean?",
            principal=Principal(tenant="acme"),
            candidates=_cands(),
            prune="setwise",
            query_class="default",
        )
    )
    why = {d.chunk_id: d for d in res.decisions}
    assert why["d14#0"].reason == "rerank_cut" and why["d19#0"].reason == "rerank_cut"

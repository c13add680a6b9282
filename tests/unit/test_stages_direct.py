"""Direct tests of small stages: authorize (retrieve.py), rerank, the one prune path, and the text helpers."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from admit import _text
from admit.errors import BackendError, RequestError
from admit.pipeline import Pipeline, check_unique_ids, prune_candidates
from admit.prune import PruneSettings
from admit.prune.top_n import TopNPruner
from admit.rerank import rank_order, ranked_by, rerank
from admit.retrieve import authorize
from admit.types import Access, Chunk, Principal


def _c(cid: str, text: str = "text", access: Access | None = None, score: float | None = None) -> Chunk:
    return Chunk(id=cid, source_id=cid, text=text, access=access, score=score)


class Fixed:
    """A reranker that returns the scores it is given."""

    name = "fixed"

    def __init__(self, scores: Sequence[float | None]) -> None:
        self.scores = list(scores)

    def score(self, question: str, chunks: Sequence[Chunk]) -> list[float | None]:
        return self.scores[: len(chunks)]


# ---------------------------------------------------------------- authorize


def test_authorize_keeps_readable_and_drops_the_rest_with_reasons() -> None:
    acme, eng = Access(tenant="acme"), Access(tenant="acme", groups=("eng",))
    cands = [_c("open", access=acme), _c("eng", access=eng), _c("other", access=Access(tenant="globex")), _c("none")]
    readable, dropped = authorize(cands, Principal(tenant="acme"))
    assert [c.id for c in readable] == ["open"]
    assert [(d.chunk_id, d.stage, d.reason) for d in dropped] == [
        ("eng", "authorize", "acl"),
        ("other", "authorize", "acl"),
        ("none", "authorize", "acl"),
    ]
    assert dropped[-1].detail == "no access label (fail closed)"
    assert dropped[0].detail == "not readable by principal"
    readable, _ = authorize(cands, Principal(tenant="acme", groups=("eng",)))
    assert [c.id for c in readable] == ["open", "eng"]


def test_authorize_fails_closed_for_a_principal_without_tenant() -> None:
    readable, dropped = authorize([_c("a", access=Access(tenant="acme"))], Principal(tenant=""))
    assert readable == [] and [d.chunk_id for d in dropped] == ["a"]


def test_authorize_drop_decisions_carry_no_text() -> None:
    _, dropped = authorize([_c("a", text="SECRET-PAYLOAD", access=Access(tenant="x"))], Principal(tenant="acme"))
    assert "SECRET-PAYLOAD" not in repr(dropped)


# ---------------------------------------------------------------- rerank


def test_rerank_orders_best_first_keeps_ties_in_input_order_and_cuts() -> None:
    chunks = [_c("a"), _c("b"), _c("c"), _c("d")]
    kept, cut = rerank("q", chunks, Fixed([0.2, 0.9, 0.2, 0.5]), keep=3)
    assert [(s.chunk.id, s.rank) for s in kept] == [("b", 0), ("d", 1), ("a", 2)]
    assert [(d.chunk_id, d.reason, d.stage) for d in cut] == [("c", "rerank_cut", "rerank")]
    assert cut[0].detail == "rank 4 > rerank_count 3"


def test_rerank_puts_missing_and_non_finite_scores_last() -> None:
    chunks = [_c("nan"), _c("none"), _c("ok"), _c("inf")]
    kept, _ = rerank("q", chunks, Fixed([math.nan, None, 0.1, math.inf]), keep=4)
    assert [s.chunk.id for s in kept] == ["ok", "nan", "none", "inf"]
    assert all(s.score == -math.inf for s in kept[1:])


def test_rerank_wraps_a_failing_reranker_and_a_wrong_count() -> None:
    class Broken:
        name = "broken"

        def score(self, question: str, chunks: Sequence[Chunk]) -> list[float]:
            raise RuntimeError("model gone")

    with pytest.raises(BackendError, match=r"broken.*model gone"):
        rerank("q", [_c("a")], Broken(), keep=1)
    with pytest.raises(BackendError, match="1 scores for 2 chunks"):
        rerank("q", [_c("a"), _c("b")], Fixed([0.5]), keep=2)
    assert rerank("q", [], Fixed([]), keep=3) == ([], [])


def test_ranked_by_matches_rerank_and_rank_order() -> None:
    chunks = [_c("a"), _c("b"), _c("c")]
    scores = [0.1, 0.3, 0.3]
    assert rank_order(scores) == [1, 2, 0]
    assert ranked_by(chunks, scores) == rerank("q", chunks, Fixed(scores), keep=3)[0]


# ---------------------------------------------------------------- the one prune path


def test_check_unique_ids_names_the_repeated_candidate() -> None:
    check_unique_ids(["a", "b"])
    with pytest.raises(RequestError, match="Duplicate candidate id 'a'") as err:
        check_unique_ids(["a", "b", "a"])
    assert err.value.field == "candidates[2].id"


def test_prune_candidates_decides_per_candidate_in_input_order() -> None:
    chunks = [_c("a"), _c("b"), _c("c")]
    run = prune_candidates(
        "q",
        chunks,
        settings=PruneSettings(strategy="top_n", keep_top_k=0, params={"n": 1}),
        reranker=Fixed([0.1, 0.9, 0.5]),
        pruner=TopNPruner(),
    )
    assert [v.chunk.id for v in run.verdicts] == ["a", "b", "c"]
    assert run.kept_ids == ["b"] and run.strategy == "top_n"
    assert [v.rank for v in run.verdicts] == [2, 0, 1]
    assert run.outcome is not None and run.outcome.fallback is None


def test_prune_candidates_with_scores_skips_the_reranker_and_none_keeps_all() -> None:
    chunks = [_c("a"), _c("b")]
    run = prune_candidates(
        "q", chunks, settings=PruneSettings(strategy="none"), reranker=None, pruner=None, scores=[0.2, math.nan]
    )
    assert run.strategy == "none" and run.outcome is None and run.kept_ids == ["a", "b"]
    assert [v.score for v in run.verdicts] == [0.2, None]  # not finite -> None
    assert {v.reason for v in run.verdicts} == {"strategy none"}
    with pytest.raises(RequestError, match="Duplicate"):
        prune_candidates("q", [_c("a"), _c("a")], settings=PruneSettings(strategy="none"), reranker=None, pruner=None)


def test_pipeline_prune_uses_the_pipeline_reranker_and_pruner() -> None:
    pipe = Pipeline(reranker=Fixed([0.1, 0.9, 0.5]))
    run = pipe.prune("q", [_c("a"), _c("b"), _c("c")], PruneSettings(strategy="top_n", keep_top_k=0, params={"n": 2}))
    assert run.kept_ids == ["b", "c"]


# ---------------------------------------------------------------- _text


def test_normalize_and_content_words() -> None:
    assert _text.normalize("  Ｆｕｌｌ-width,\tTEXT!  ") == "full width text"
    words = _text.content_words("What are the policies for the queries?")
    assert words == frozenset({"policy", "query"})  # stopwords gone, plurals stemmed
    assert "the" in _text.STOPWORDS


def test_shingles_overlap_and_minhash_agree_on_similarity() -> None:
    a = "the server listens on port 8080 by default"
    b = "the server listens on port 8080 by default today"
    c = "backups are taken every six hours without fail"
    sa, sb, sc = _text.shingles(a), _text.shingles(b), _text.shingles(c)
    assert _text.overlap(sa, sa) == 1.0
    assert _text.overlap(sa, sb) > 0.5 > _text.overlap(sa, sc)
    est = _text.jaccard_estimates(_text.signatures([a, b, c]))
    assert est.shape == (3, 3) and est[0, 1] > est[0, 2]
    assert _text.shingles("").size == 0


def test_norm_hash_ignores_case_and_spacing() -> None:
    assert _text.norm_hash("Hello,  World") == _text.norm_hash("hello world")
    assert _text.norm_hash("hello world") != _text.norm_hash("hello there")


def test_sentences_split_on_paragraphs_and_periods() -> None:
    out = _text.sentences("First sentence here. Second one follows.\n\nA new paragraph")
    assert out == ["First sentence here.", "Second one follows.", "A new paragraph"]


def test_bm25_matrix_rewards_rare_matching_terms() -> None:
    docs = [["port", "8080", "server"], ["server", "backup"], ["quota", "storage"]]
    m = _text.bm25_matrix([["port", "server"], ["nothing"]], docs)
    assert m.shape == (2, 3)
    assert m[0, 0] > m[0, 1] > m[0, 2] == 0.0
    assert np.all(m[1] == 0.0)
    assert _text.bm25_matrix([["x"]], []).shape == (1, 0)

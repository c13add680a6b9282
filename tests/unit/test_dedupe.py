from __future__ import annotations

from dataclasses import replace

from admit.dedupe import dedupe
from admit.policy import load_policy_set
from admit.types import Scored
from tests.helpers import at, chunk

POLICY = load_policy_set().policy("default")
POLICY_PAGE = (
    "Refunds are issued within 14 days of a return being received. Items must be unused and in their original "
    "packaging. Digital goods are not refundable once downloaded. Contact support with your order number."
)


def ranked(*chunks):
    return [Scored(chunk=c, score=1.0 - i / 10, rank=i) for i, c in enumerate(chunks)]


def test_exact_duplicate_keeps_the_most_authoritative_copy():
    a = chunk("mirror#1", POLICY_PAGE, authority=0.2)
    b = chunk("policy#refunds", POLICY_PAGE, authority=0.9)
    kept, dropped = dedupe(ranked(a, b), POLICY)
    assert [s.chunk.id for s in kept] == ["policy#refunds"]
    assert dropped[0].chunk_id == "mirror#1" and dropped[0].reason == "duplicate"
    assert dropped[0].related_id == "policy#refunds" and "duplicate_of policy#refunds" in dropped[0].detail


def test_copied_page_with_small_edits_is_a_near_duplicate():
    edited = POLICY_PAGE.replace("Contact support", "Please contact our support team")
    kept, dropped = dedupe(ranked(chunk("a#1", POLICY_PAGE), chunk("b#1", edited + " (copied)")), POLICY)
    assert [s.chunk.id for s in kept] == ["a#1"]
    assert dropped[0].reason == "duplicate" and dropped[0].related_id == "a#1"


def test_overlapping_adjacent_chunk_is_a_near_duplicate_by_containment():
    longer = POLICY_PAGE + " Refunds go back to the original payment method."
    kept, dropped = dedupe(ranked(chunk("p#1", longer, source="p"), chunk("p#2", POLICY_PAGE, source="p")), POLICY)
    assert [s.chunk.id for s in kept] == ["p#1"]
    assert dropped[0].reason == "duplicate"


def test_different_texts_both_stay():
    kept, dropped = dedupe(
        ranked(chunk("a#1", POLICY_PAGE), chunk("b#1", "The API server listens on port 8080 by default.")), POLICY
    )
    assert len(kept) == 2 and dropped == []


def test_old_version_is_superseded_by_the_newest():
    old = chunk(
        "guide@1#install", "Install with apt-get install harbor.", source="guide", version="1.9", title="Install"
    )
    new = chunk(
        "guide@2#install", "Install with the harbor installer script.", source="guide", version="2.0", title="Install"
    )
    kept, dropped = dedupe(ranked(old, new), POLICY)
    assert [s.chunk.id for s in kept] == ["guide@2#install"]
    assert dropped[0].reason == "superseded" and dropped[0].related_id == "guide@2#install"
    assert "superseded_by guide@2#install" in dropped[0].detail


def test_dates_decide_when_there_is_no_version():
    old = chunk("faq#a", "Old answer about refunds.", source="faq", updated_at=at(2023))
    new = chunk("faq#b", "New answer about refunds.", source="faq", updated_at=at(2025))
    kept, dropped = dedupe(ranked(old, new), POLICY)
    assert [s.chunk.id for s in kept] == ["faq#b"] and dropped[0].reason == "superseded"


def test_history_class_keeps_both_versions_of_a_near_identical_section():
    old = chunk("g#1", POLICY_PAGE, source="g", version="1")
    new = chunk("g#2", POLICY_PAGE.replace("14 days", "30 days"), source="g", version="2")
    history = load_policy_set().policy("history")
    kept, dropped = dedupe(ranked(old, new), history)
    assert {s.chunk.id for s in kept} == {"g#1", "g#2"} and dropped == []
    kept, dropped = dedupe(ranked(old, new), POLICY)
    assert [s.chunk.id for s in kept] == ["g#2"] and dropped[0].reason == "superseded"


def test_per_source_cap_keeps_the_best_ranks():
    texts = ["alpha beta gamma delta", "epsilon zeta eta theta", "iota kappa lambda mu", "nu xi omicron pi"]
    chunks = [chunk(f"s#{i}", t * 3, source="s") for i, t in enumerate(texts)]
    kept, dropped = dedupe(ranked(*chunks), replace(POLICY, per_source_limit=2))
    assert [s.chunk.id for s in kept] == ["s#0", "s#1"]
    assert [d.reason for d in dropped] == ["source_cap", "source_cap"]


def test_every_input_is_kept_or_dropped_exactly_once():
    chunks = [
        chunk(f"c#{i}", POLICY_PAGE if i % 2 else f"unique text number {i} " * 5, source=f"s{i}") for i in range(8)
    ]
    kept, dropped = dedupe(ranked(*chunks), POLICY)
    ids = [s.chunk.id for s in kept] + [d.chunk_id for d in dropped]
    assert sorted(ids) == sorted(c.id for c in chunks)


def test_source_cap_keeps_the_best_graded_not_the_best_ranked():
    from admit.dedupe import source_cap

    texts = ["alpha beta gamma delta", "epsilon zeta eta theta", "iota kappa lambda mu"]
    chunks = [chunk(f"s#{i}", t * 3, source="s") for i, t in enumerate(texts)]
    kept, dropped = source_cap(ranked(*chunks), replace(POLICY, per_source_limit=2), {"s#0": 2, "s#1": 5, "s#2": 4})
    assert [s.chunk.id for s in kept] == ["s#1", "s#2"]  # input order kept
    assert [(d.chunk_id, d.reason, d.grade) for d in dropped] == [("s#0", "source_cap", 2)]


def test_dedupe_without_the_cap_leaves_it_to_after_pruning():
    texts = ["alpha beta gamma delta", "epsilon zeta eta theta", "iota kappa lambda mu"]
    chunks = [chunk(f"s#{i}", t * 3, source="s") for i, t in enumerate(texts)]
    kept, dropped = dedupe(ranked(*chunks), replace(POLICY, per_source_limit=1), cap=False)
    assert len(kept) == 3 and dropped == []

"""A version named in the question: the section titled with it ranks first; the lexical search sees it whole."""

from __future__ import annotations

from admit._text import versions
from admit.backends.rerankers.fake import FakeReranker
from admit.kb.store import fts_terms
from admit.rerank import rerank
from tests.helpers import chunk


def test_versions_are_found_whole_without_a_leading_v() -> None:
    assert versions("What changed in v3.2.0 and 2.1?") == ["3.2.0", "2.1"]
    assert versions("port 5000, E4012, 1990s, 3.") == []


def test_fts_terms_keep_a_version_whole_beside_its_parts() -> None:
    assert fts_terms("What changed in 3.2.0?") == ["3.2.0", "changed", "3", "2", "0"]


def test_the_chunk_titled_with_the_asked_version_is_ranked_first() -> None:
    old = chunk("cl#3-1-0", "Changed: it prepares the 3.2 line; 2 flags removed, 0 remain.", title="Changelog › 3.1.0")
    new = chunk("cl#3-2-0", "Added: bulk export.", title="Changelog › 3.2.0")
    other = chunk("guide#x", "Exports write files.", title="Guide")
    scores = {"cl#3-1-0": 0.9, "guide#x": 0.5, "cl#3-2-0": 0.2}
    ranked, _ = rerank("What changed in 3.2.0?", [old, new, other], FakeReranker(scores=scores), keep=3)
    assert [s.chunk.id for s in ranked] == ["cl#3-2-0", "cl#3-1-0", "guide#x"]
    assert [s.rank for s in ranked] == [0, 1, 2]
    ranked, _ = rerank("What changed in 3.2?", [old, new, other], FakeReranker(scores=scores), keep=3)
    assert ranked[0].chunk.id == "cl#3-2-0"  # 3.2 names 3.2.0
    ranked, _ = rerank("What changed recently?", [old, new, other], FakeReranker(scores=scores), keep=3)
    assert [s.chunk.id for s in ranked] == ["cl#3-1-0", "guide#x", "cl#3-2-0"]  # no version asked: scores rule

"""Issue 39 item 3 in retrieval: a question naming a release gets that release's sections among its candidates
(an exact match on the version string, at most ``VERSION_HITS`` in place of the fused list's last ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.backends.embedders import FakeEmbedder
from admit.kb import KnowledgeBase, parse_principal
from admit.kb.store import VERSION_HITS, asked_version_strings
from admit.question import read_question, releases_in

SITE = Path(__file__).resolve().parents[1] / "data" / "changelog_site"
Q = "What changed in 1.2.4?"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Version 1.2.4 (2023-03-24)", True),
        ("v1.2.4.", True),
        ("1.2.4.1", True),  # a patch of 1.2.4, as 3.2 names 3.2.0 (the one rule: admit.question)
        ("1.2.40", False),
        ("11.2.4", False),
        ("1.2.4a1 1.2.4rc1 1.2.4-beta 1.2.4.post1", False),  # pre- and post-releases are their own releases
    ],
)
def test_a_text_names_the_asked_release_by_the_one_rule(text: str, names: bool) -> None:
    q = read_question(Q)
    assert (q.asked_in(releases_in(text)) is not None) is names


@pytest.mark.parametrize(
    ("question", "want"),
    [
        (Q, ["1.2.4"]),
        ("new in v2.3", ["2.3"]),
        ("2.4.0 release notes", ["2.4.0"]),
        ("since version 3.0", ["3.0"]),
        ("What changed in 1.2.4rc1?", ["1.2.4rc1"]),
        ("What changed in v4?", ["4"]),
    ],
)
def test_asked_version_strings(question: str, want: list[str]) -> None:
    assert asked_version_strings(question) == want


@pytest.fixture(params=["sqlite", "memory"])
def kb(request: pytest.FixtureRequest, tmp_path: Path) -> KnowledgeBase:
    where = tmp_path / "kb.sqlite" if request.param == "sqlite" else "memory://"
    k = KnowledgeBase(where, embedder=FakeEmbedder(dim=32))
    k.ingest(SITE, tenant="t")
    return k


def _ids(kb: KnowledgeBase, question: str, k: int) -> list[str]:
    return [h.record.id for h in kb.hits(question, parse_principal("tenant:t"), k=k)]


def test_the_asked_release_sections_are_among_the_candidates(kb: KnowledgeBase) -> None:
    got = _ids(kb, Q, 2)
    assert len(got) == 2
    assert {"changelog#version-1-2-4-2023-03-24/fixes", "changelog#version-1-2-4-2023-03-24/other-changes"} <= set(got)
    added = [h for h in kb.hits(Q, parse_principal("tenant:t"), k=1) if h.version is not None]
    assert len(added) <= min(VERSION_HITS, 1) and all(h.as_dict()["version"] == "1.2.4" for h in added)


def test_a_pre_release_is_not_the_release(kb: KnowledgeBase) -> None:
    got = _ids(kb, "What changed in 1.2.4rc1?", 2)
    assert not any(i.startswith("changelog#version-1-2-4-2023") for i in got)
    # nothing names 1.2.40 exactly: nothing is added, the list is the fused one
    hits = kb.hits("What changed in 1.2.40?", parse_principal("tenant:t"), k=3)
    assert all(h.version is None for h in hits)


def test_a_question_without_a_release_is_unchanged(kb: KnowledgeBase) -> None:
    hits = kb.hits("What changed in the changelog?", parse_principal("tenant:t"), k=5)
    assert len(hits) == 5 and all(h.version is None and "version" not in h.as_dict() for h in hits)

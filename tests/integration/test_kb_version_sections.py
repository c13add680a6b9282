"""Issue 39 item 3 end to end: a tiny docs folder (a changelog whose releases have "Fixes" and "Other changes"
subsections, and usage pages that all say "changed") ingested into a real knowledge base (sqlite, MiniLM); "What
changed in 1.2.4?" admits 1.2.4's sections and no other release's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from admit.kb import KnowledgeBase, parse_principal

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SITE = Path(__file__).resolve().parents[1] / "data" / "changelog_site"
V124 = {"changelog#version-1-2-4-2023-03-24/fixes", "changelog#version-1-2-4-2023-03-24/other-changes"}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    pytest.importorskip("sqlite_vec")
    pytest.importorskip("sentence_transformers")
    with KnowledgeBase(tmp_path_factory.mktemp("changelog") / "kb.sqlite", embedder="minilm") as k:
        k.ingest(SITE, tenant="t")
        yield k


@pytest.mark.parametrize("k", [None, 8])
def test_what_changed_in_a_release_admits_its_sections(kb: KnowledgeBase, k: int | None) -> None:
    res = kb.search("What changed in 1.2.4?", parse_principal("tenant:t"), prune=True, k=k)
    admitted = {p.chunk.id for p in res.admitted}
    assert admitted >= V124, admitted  # before: with 8 candidates, 1.2.4's "Other changes" was not among them
    others = {i for i in admitted if i.startswith("changelog#") and i not in V124}
    assert not others, others

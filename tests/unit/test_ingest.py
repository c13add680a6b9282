"""Ingest: parsing, chunk ids, registry, re-ingest diff, removal and atomicity (FakeEmbedder, embedded store)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.backends.embedders import FakeEmbedder
from admit.errors import AuthorizationError, ConfigError
from admit.kb import KnowledgeBase, parse_principal
from admit.kb.ingest import chunk_document, load_registry, parse_html, parse_markdown, slugify

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "examples" / "docs"
REGISTRY = ROOT / "examples" / "sources.toml"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    shutil.copytree(DOCS, d)
    return d


@pytest.fixture
def kb(tmp_path: Path):
    k = KnowledgeBase(tmp_path / "kb.sqlite", embedder=FakeEmbedder(dim=32))
    yield k
    k.close()


def test_markdown_sections_fences_and_front_matter() -> None:
    text = (
        "---\ntitle: Guide\nversion: 3\n---\n# Guide\n\nIntro para.\n\n"
        "## Setup\n\n```sh\n# not a heading\n\necho hi\n```\n\n### Linux\n\nUse apt.\n"
    )
    doc = parse_markdown(text, fallback_title="x")
    assert doc.title == "Guide"
    assert doc.front_matter["version"] == "3"
    assert [s.headings for s in doc.sections] == [(), ("Setup",), ("Setup", "Linux")]
    assert "# not a heading" in doc.sections[1].paragraphs[0]
    assert "echo hi" in doc.sections[1].paragraphs[0]  # a blank line inside a fence does not split it


def test_chunk_ids_are_collision_safe_and_split_long_sections() -> None:
    text = "# T\n\n## A\n\none\n\n## A\n\ntwo\n\n## Long\n\n" + "\n\n".join(
        f"Sentence number {i} is here." for i in range(60)
    )
    chunks = chunk_document(parse_markdown(text, fallback_title="t"), max_tokens=40)
    ids = [c.section_path for c in chunks]
    assert ids[:2] == ["a", "a-2"]
    assert ids[2] == "long" and ids[3] == "long~2"
    assert len(ids) == len(set(ids))
    assert slugify("Upgrade & Rollback (v2)") == "upgrade-rollback-v2"


def test_html_parser_drops_navigation_and_keeps_structure() -> None:
    doc = parse_html((DOCS / "backup.html").read_text("utf-8"), fallback_title="b")
    assert doc.title == "Backup and restore"
    assert doc.language == "en"
    heads = [s.headings for s in doc.sections]
    assert ("Taking a backup",) in heads
    text = " ".join(p for s in doc.sections for p in s.paragraphs)
    assert "maintenance on" in text
    assert "Blobs | yes" in text
    assert "Home" not in text and "documentation" not in text  # nav and footer dropped


def test_ingest_sample_corpus(kb: KnowledgeBase, docs: Path) -> None:
    rep = kb.ingest([docs], registry=REGISTRY)
    assert rep.errors == ()
    assert rep.files == 13
    assert rep.sources_added == 13
    assert rep.chunks_written == kb.count() > 20
    assert rep.chunks_added == rep.chunks_written and rep.chunks_unchanged == 0
    ids = {c.id for s in kb.sources() for c in kb.store.get_source_chunks(s.source_id, s.tenant)}
    assert "errors#e4012-quota-exceeded" in ids
    assert "install-v2#requirements" in ids
    assert "backup#taking-a-backup" in ids
    run = kb.store.get_source_chunks("internal/oncall-runbook", "acme")
    assert run and all(r.access is not None and r.access.groups == ("sre",) for r in run)
    assert kb.store.get_source_chunks("globex/pricing-notes", "globex")
    v1 = kb.store.get_source_chunks("install-v1", "acme")[0]
    assert (v1.document, v1.version, v1.authority) == ("install-guide", "1.4", 0.5)
    assert v1.heading_path[0] == "Installing Harbor Lite 1.x"
    again = kb.ingest([docs], registry=REGISTRY)
    assert again.sources_unchanged == 13 and again.chunks_embedded == 0 and again.chunks_written == 0
    # the counts add up: every chunk of the files read is added, changed or unchanged
    assert again.chunks_unchanged == kb.count() and again.chunks_added == again.chunks_changed == 0


def test_reingest_after_edit_keeps_unchanged_ids(kb: KnowledgeBase, docs: Path) -> None:
    kb.ingest([docs], registry=REGISTRY)
    before = {r.id: r for r in kb.store.get_source_chunks("errors", "acme")}
    f = docs / "errors.md"
    text = f.read_text("utf-8").replace("Log in again with", "Sign in again with")
    text += "\n## E4290 rate limited\n\nToo many requests from one token; wait and retry.\n"
    f.write_text(text, "utf-8")
    rep = kb.ingest([docs], registry=REGISTRY)
    assert rep.sources_updated == 1 and rep.sources_unchanged == 12
    assert rep.chunks_added == 1 and rep.chunks_changed == 1
    assert rep.chunks_embedded == 2  # only the new and the changed chunk are embedded again
    after = {r.id: r for r in kb.store.get_source_chunks("errors", "acme")}
    assert set(before) <= set(after)
    assert "errors#e4290-rate-limited" in after
    assert "Sign in again" in after["errors#e4031-token-expired"].text
    same = after["errors#e4012-quota-exceeded"]
    np.testing.assert_array_equal(same.embedding, before["errors#e4012-quota-exceeded"].embedding)
    assert same.metadata["content_hash"] != before["errors#e4012-quota-exceeded"].metadata["content_hash"]
    hits = kb.retrieve("Log in again", parse_principal("tenant:acme"), k=50)
    assert all("Log in again with" not in c.text for c in hits)  # the old version is gone


def test_removed_file_chunks_go(kb: KnowledgeBase, docs: Path) -> None:
    kb.ingest([docs], registry=REGISTRY)
    n = len(kb.store.get_source_chunks("faq-mirror", "acme"))
    assert n > 0
    (docs / "faq-mirror.md").unlink()
    rep = kb.ingest([docs], registry=REGISTRY)
    assert rep.sources_removed == 1 and rep.chunks_removed == n
    assert kb.store.get_source_chunks("faq-mirror", "acme") == []
    assert all(not c.id.startswith("faq-mirror#") for c in kb.retrieve("memory", parse_principal("tenant:acme"), k=60))


def test_crash_mid_ingest_leaves_previous_version(tmp_path: Path, docs: Path) -> None:
    class Boom(FakeEmbedder):
        fail = False

        def embed(self, texts):  # type: ignore[no-untyped-def]
            if self.fail:
                raise RuntimeError("embedder died")
            return super().embed(texts)

    emb = Boom(dim=32)
    kb = KnowledgeBase(tmp_path / "kb2.sqlite", embedder=emb)
    kb.ingest([docs], registry=REGISTRY)
    before = [r.text for r in kb.store.get_source_chunks("faq", "acme")]
    (docs / "faq.md").write_text("# FAQ\n\n## New\n\nCompletely new text.\n", "utf-8")
    emb.fail = True
    with pytest.raises(RuntimeError):
        kb.ingest([docs], registry=REGISTRY)
    assert [r.text for r in kb.store.get_source_chunks("faq", "acme")] == before
    kb.close()


def test_registry_and_principal_errors(tmp_path: Path, kb: KnowledgeBase, docs: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[defaults]\ntenant = "a"\ncolour = "red"\n', "utf-8")
    with pytest.raises(ConfigError, match="colour"):
        load_registry(bad)
    bad.write_text('[[sources]]\nmatch = "*"\nauthority = 3\n', "utf-8")
    with pytest.raises(ConfigError, match="authority"):
        load_registry(bad)
    with pytest.raises(ConfigError, match="tenant"):
        kb.ingest([docs / "faq.md"])
    with pytest.raises(AuthorizationError):
        parse_principal("group:sre")
    assert parse_principal("tenant:acme,group:sre,group:ops").groups == ("sre", "ops")


def test_kb_remembers_its_embedder(tmp_path: Path, docs: Path) -> None:
    path = tmp_path / "kb3.sqlite"
    with KnowledgeBase(path, embedder="fake:32") as k:
        k.ingest([docs / "faq.md"], tenant="acme")
    with KnowledgeBase(path) as k:  # reopened without naming the embedder: uses the one it was built with
        assert k.embedder.name == "fake-32"
        assert k.retrieve("memory", parse_principal("tenant:acme"), k=3)
    with pytest.raises(ConfigError):
        KnowledgeBase(path, embedder="fake:16")

"""Ingest says what it lost (issue 45, item 2) and stores one copy of each page (item 4): the pages that gave no
chunk and the pages the extraction guard kept whole are named, a re-ingest of an unchanged site changes nothing,
a folder where most pages give nothing is reported, the progress share never goes backwards, and an appendix
found in two guides is stored once with the other places recorded.

The store is the shipped in-process store (``memory://``); the embedder the shipped deterministic double (these
tests are about ingest's bookkeeping, not retrieval quality)."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import admit.kb.ingest as ingest_mod
from admit.kb import IngestReport, KnowledgeBase
from admit.kb._progress import IngestProgress
from admit.kb.parse import ParsedDocument, parse_document

DATA = Path(__file__).resolve().parents[1] / "data" / "ingest_lost"


def _kb() -> KnowledgeBase:
    return KnowledgeBase("memory://", embedder="fake:16")


def _adds_up(rep: IngestReport) -> None:
    assert rep.files == rep.sources_added + rep.sources_updated + rep.sources_unchanged + len(rep.errors), rep


def test_a_page_that_gives_no_chunk_is_named_and_a_reingest_changes_nothing() -> None:
    kb = _kb()
    first = kb.ingest([DATA / "one_empty"], tenant="t")
    _adds_up(first)
    assert [Path(p).name for p in first.no_chunk] == ["gallery.html"]
    assert (first.sources_added, first.sources_unchanged) == (3, 1)  # nothing was stored for the gallery
    assert first.mostly_empty == ()
    again = kb.ingest([DATA / "one_empty"], tenant="t")
    _adds_up(again)
    assert (again.sources_added, again.sources_updated, again.sources_unchanged) == (0, 0, 4)
    assert (again.chunks_written, again.chunks_embedded) == (0, 0)
    assert [Path(p).name for p in again.no_chunk] == ["gallery.html"]


def test_a_folder_where_most_pages_give_nothing_is_reported() -> None:
    rep = _kb().ingest([DATA / "mostly_empty"], tenant="t")
    assert rep.mostly_empty == ((str(DATA / "mostly_empty"), 3, 4),)
    assert sorted(Path(p).name for p in rep.no_chunk) == ["reference.html", "tutorial.html", "usage.html"]
    assert rep.as_dict()["mostly_empty"] == [{"folder": str(DATA / "mostly_empty"), "no_chunk": 3, "pages": 4}]


@dataclass(frozen=True, slots=True, kw_only=True)
class _GuardedDocument(ParsedDocument):
    content_guard: str = ""


def test_pages_the_extraction_guard_caught_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parser marks a page whose main content it found far below the page's text: a ``content_guard``
    reason, or an ``extract_guard`` mark."""

    def marked(text: str, fmt: str, *, fallback_title: str) -> ParsedDocument:
        doc = parse_document(text, fmt, fallback_title=fallback_title)
        if "configure" in fallback_title:
            return ParsedDocument(
                title=doc.title, sections=doc.sections, site={**doc.site, "extract_guard": "kept whole"}
            )
        if "install" in fallback_title:
            reason = "main content was 3% of the page's visible text"
            return _GuardedDocument(title=doc.title, sections=doc.sections, site=doc.site, content_guard=reason)
        return doc

    monkeypatch.setattr(ingest_mod, "parse_document", marked)
    rep = _kb().ingest([DATA / "one_empty"], tenant="t")
    assert sorted(Path(p).name for p in rep.guarded) == ["configure.html", "install.html"]


def test_the_progress_share_never_goes_backwards(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A first file of many bytes and one chunk, then files of few bytes and many chunks: an estimate from the
    bytes read so far would fall; the share, counted against the total the fast pass found, only rises."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.html").write_text(
        "<html><head><style>" + "x{}" * 20_000 + "</style></head><body><p>Only this line.</p></body></html>", "utf-8"
    )
    for i in range(3):
        body = "\n\n".join(f"## Part {k}\n\nPart {k} of note {i} says something new." for k in range(12))
        (docs / f"b{i}.md").write_text(f"# Note {i}\n\n{body}\n", "utf-8")
    out = io.StringIO()
    made: list[IngestProgress] = []

    class Every(IngestProgress):
        def __init__(self, total_bytes: int, **kw: Any) -> None:
            super().__init__(total_bytes, **{**kw, "lines": True, "interval": 0.0, "stream": out})
            made.append(self)

    monkeypatch.setattr(ingest_mod, "IngestProgress", Every)
    rep = _kb().ingest([docs], tenant="t", batch_size=1, progress=True)
    assert rep.chunks_embedded >= 30 and made
    shares = [int(m) for m in re.findall(r"chunks \((\d+)%\)", out.getvalue())]
    assert len(shares) > 5 and shares == sorted(shares), out.getvalue()
    totals = {int(m) for m in re.findall(r"/~?(\d+) chunks", out.getvalue())}
    assert totals == {rep.chunks_embedded}  # the exact total from the first line on


def test_an_appendix_in_two_guides_is_stored_once_with_the_other_places_recorded() -> None:
    kb = _kb()
    rep = kb.ingest([DATA / "appendix_twice"], tenant="t")
    _adds_up(rep)
    assert rep.chunks_copies == 2
    rows = [r for s in kb.store.list_sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)]
    glossary = [r for r in rows if "A notebook is a folder" in r.text]
    assert len(glossary) == 1
    kept = glossary[0]
    assert kept.id == "developer-guide/glossary#intro" and kept.title == "B. Glossary"
    assert kept.metadata["also_at"] == ["user-guide/glossary#intro", "user-guide/index#a-glossary"]
    assert {r.id for r in rows} >= {"user-guide/index#1-getting-started", "user-guide/index#2-searching"}
    again = kb.ingest([DATA / "appendix_twice"], tenant="t")
    assert (again.sources_unchanged, again.chunks_written, again.chunks_copies) == (3, 0, 2)


def test_a_writer_elsewhere_gets_the_copies_rule_with_each_planned_source() -> None:
    """The Ray engine's workers write what the plan says: the copies a source does not store and the
    ``also_at`` of those it keeps travel in the job (through its JSON, as to a worker)."""
    from admit.kb.ingest import IngestOptions, ingest_paths, write_source
    from admit.kb.ingest_types import SourceJob
    from admit.kb.ray_ingest import _job_from_json, _job_json

    kb = _kb()
    options = IngestOptions(tenant="t")
    sent: list[SourceJob] = []

    def writer(jobs: Any) -> Any:
        for job in jobs:
            moved = _job_from_json(_job_json(job))
            assert moved == job
            sent.append(moved)
            yield moved, write_source(kb.store, kb.embedder, moved, options)

    rep = ingest_paths(kb.store, kb.embedder, [DATA / "appendix_twice"], options, writer=writer)
    # the user guide's glossary page is all copies: nothing of it to store, nothing sent
    assert (rep.sources_added, rep.sources_unchanged, rep.chunks_copies, len(sent)) == (2, 1, 2, 2)
    by_path = {Path(j.path).relative_to(DATA / "appendix_twice").as_posix(): j for j in sent}
    assert by_path["user-guide/index.html"].drop == ("a-glossary",)
    assert by_path["developer-guide/glossary.html"].also_at == {
        "intro": ("user-guide/glossary#intro", "user-guide/index#a-glossary")
    }
    rows = [r for s in kb.store.list_sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)]
    assert sum("A notebook is a folder" in r.text for r in rows) == 1


def test_a_short_section_under_two_headings_is_stored_once_titled_with_both() -> None:
    """Two release notes that both say only "Nothing that affects upgraded systems.": one chunk, whose title
    names both releases (a search for either still finds it), the other's place and heading recorded; the same
    through a writer elsewhere (the job's JSON)."""
    from admit.kb.ingest import IngestOptions, ingest_paths, write_source
    from admit.kb.ray_ingest import _job_from_json, _job_json

    kb = _kb()
    rep = kb.ingest([DATA / "short_twice"], tenant="t")
    _adds_up(rep)
    assert rep.chunks_copies == 1
    rows = [r for s in kb.store.list_sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)]
    same = [r for r in rows if "Nothing that affects" in r.text]
    assert len(same) == 1 and len(rows) == 2
    kept = same[0]
    assert kept.id == "changes-2.4.1#intro"
    assert kept.title == "Changes from 2.4.0 to 2.4.1 (also under: Changes from 2.6.2 to 2.6.3)"
    assert kept.metadata["also_at"] == ["changes-2.6.3#intro"]
    assert kept.metadata["also_under"] == ["Changes from 2.6.2 to 2.6.3"]
    again = kb.ingest([DATA / "short_twice"], tenant="t")
    assert (again.sources_unchanged, again.chunks_written) == (3, 0)

    other = _kb()
    options = IngestOptions(tenant="t")

    def writer(jobs: Any) -> Any:
        for job in jobs:
            moved = _job_from_json(_job_json(job))
            assert moved == job
            yield moved, write_source(other.store, other.embedder, moved, options)

    ingest_paths(other.store, other.embedder, [DATA / "short_twice"], options, writer=writer)
    moved_rows = [r for s in other.store.list_sources() for r in other.store.get_source_chunks(s.source_id, s.tenant)]
    assert sorted(r.title for r in moved_rows) == sorted(r.title for r in rows)

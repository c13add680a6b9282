"""A compressed page is read as the page it holds: Debian compresses a package's larger documentation files
(python-nbclient-doc's ``changelog.html.gz`` beside its other pages, a package's ``NEWS.md.gz``); before, each
was skipped as an unsupported format. A small file that decompresses past the per-file cap is refused with the
cap's message, and a file that is not gzip data is an error line, not a crash."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from admit.kb import KnowledgeBase

PAGE = """<html><head><meta name="generator" content="Sphinx 5.3.0"><title>Changelog - nbclient 0.7.2 documentation
</title></head><body><div role="main"><h1>Changelog</h1><h2>0.7.2</h2><p>Fixed a hang when a kernel died during
execution of a cell with a timeout set.</p></div></body></html>"""


def _site(tmp_path: Path) -> Path:
    docs = tmp_path / "html"
    docs.mkdir()
    (docs / "changelog.html.gz").write_bytes(gzip.compress(PAGE.encode()))
    (docs / "NEWS.md.gz").write_bytes(gzip.compress(b"# News\n\nVersion 2 drops Python 3.7.\n"))
    install = PAGE.replace("Changelog", "Installation").replace("Fixed a hang", "Install it with pip; it needs")
    (docs / "install.html").write_text(install, "utf-8")
    return docs


def test_a_compressed_page_is_read_as_the_page_it_holds(tmp_path: Path) -> None:
    from admit.kb.files import document_name

    docs = _site(tmp_path)
    kb = KnowledgeBase("memory://", embedder="fake:16")
    rep = kb.ingest([docs], tenant="t")
    assert (rep.sources_added, rep.errors, rep.skipped) == (3, (), ())
    rows = {r.source_id: r for s in kb.store.list_sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)}
    assert set(rows) == {"changelog", "NEWS", "install"}
    assert rows["changelog"].title == "Changelog › 0.7.2" and "kernel died" in rows["changelog"].text
    assert rows["changelog"].version == "0.7.2"  # the site's, from the title's suffix, as on any page
    assert "Python 3.7" in rows["NEWS"].text
    again = kb.ingest([docs], tenant="t")
    assert again.sources_unchanged == 3
    assert document_name("changelog.html.gz") == "changelog.html" and document_name("data.gz") == "data.gz"


def test_a_compressed_page_too_large_once_decompressed_or_not_gzip_is_an_error_line(tmp_path: Path) -> None:
    docs = tmp_path / "html"
    docs.mkdir()
    big = b"<html><body><p>" + b"a" * 3_000_000 + b"</p></body></html>"
    (docs / "bomb.html.gz").write_bytes(gzip.compress(big))  # a few KB on disk
    (docs / "broken.html.gz").write_bytes(b"<html>not compressed</html>")
    rep = KnowledgeBase("memory://", embedder="fake:16").ingest([docs], tenant="t", max_file_bytes=1_000_000)
    errors = {Path(p).name: m for p, m in rep.errors}
    assert "over the 1,000,000-byte cap" in errors["bomb.html.gz"]
    assert errors["broken.html.gz"].startswith("not gzip data")


def test_a_writer_elsewhere_reads_the_compressed_page_too(tmp_path: Path) -> None:
    from admit.kb.ingest import IngestOptions, ingest_paths, write_source

    docs = _site(tmp_path)
    kb = KnowledgeBase("memory://", embedder="fake:16")
    options = IngestOptions(tenant="t")

    def writer(jobs: Any) -> Any:
        for job in jobs:
            yield job, write_source(kb.store, kb.embedder, job, options)

    rep = ingest_paths(kb.store, kb.embedder, [docs], options, writer=writer)
    assert rep.errors == () and rep.sources_added == 3
    texts = [r.text for s in kb.store.list_sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)]
    assert any("kernel died" in t for t in texts)

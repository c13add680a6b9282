"""Issue 39 item 1: ``admit ingest DIR`` on a built documentation site ingests its documentation, not the site.

Pages of five real built sites are vendored under ``tests/data/docsites/`` (from Debian's doc packages, each with
its licence file, ``copyright``, beside it; see ``tests/data/docsites/README.md``): Black (Sphinx, alabaster),
Django (Sphinx, its own theme), MkDocs (MkDocs' theme), git (AsciiDoc manual pages) and PostgreSQL (DocBook XSL).
Each is ingested into a real knowledge base (SQLite, a fake embedder) and its chunks are read back.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")
pytest.importorskip("lxml")

from admit.backends.embedders import FakeEmbedder
from admit.cli import main
from admit.kb import KnowledgeBase, parse_principal
from admit.kb.ingest_types import IngestReport
from admit.kb.store import ChunkRecord

DATA = Path(__file__).resolve().parents[1] / "data" / "docsites"

SITES: dict[str, Path] = {
    "black": DATA / "black" / "html",
    "django": DATA / "django" / "html",
    "mkdocs": DATA / "mkdocs" / "html",
    "git": DATA / "git",
    "postgresql": DATA / "postgresql" / "html",
}

CHROME: dict[str, tuple[str, ...]] = {
    # the sidebar, the footer and its "Page source" link
    "black": ("Quick search", "Related Topics", "Documentation overview", "Page source", "Powered by"),
    # the header's global navigation, the sidebar's contents and previous / next topics, the footer
    "django": ("Table of contents", "Previous topic", "Next topic", "Last update", "Browse", "Module index"),
    # the navigation bar, the sidebar, the footer, the keyboard-shortcuts dialog
    "mkdocs": ("Edit on GitHub", "Keyboard Shortcuts", "Documented using MkDocs", "Search MkDocs", "Previous"),
    # the footer
    "git": ("Last updated",),
    # the navigation rows above and below each page, the chapter's table of contents
    "postgresql": ("Prev |", "| Next", "Table of Contents", "Home |"),
}

LEFT_OUT: dict[str, dict[str, int]] = {
    # faq.md.txt, license.md.txt; custom.css, documentation_options.js, objects.inv; genindex.html, search.html
    "black": {"sphinx_sources": 2, "site_assets": 3, "search_index_pages": 2},
    # _modules/index.html; _static/basic.css; search.html
    "django": {"sphinx_modules": 1, "site_assets": 1, "search_index_pages": 1},
    # css/base.css, sitemap.xml; 404.html
    "mkdocs": {"site_assets": 2, "search_index_pages": 1},
    # git-add.txt, git-mv.txt (the AsciiDoc sources of the two pages), date-formats.txt (a fragment they include)
    "git": {"asciidoc_sources": 3},
    "postgresql": {"site_assets": 1},
}

VERSIONS = {"black": "23.1.0", "django": "3.2.25", "postgresql": "15.20"}
GENERATORS = {"black": "sphinx", "django": "sphinx", "mkdocs": "mkdocs", "git": "asciidoc", "postgresql": "docbook"}


def _ingest(tmp_path: Path, site: str) -> tuple[IngestReport, list[ChunkRecord], KnowledgeBase]:
    kb = KnowledgeBase(tmp_path / f"{site}.sqlite", embedder=FakeEmbedder(dim=16))
    rep = kb.ingest([SITES[site]], tenant="t")
    records = [r for s in kb.sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)]
    return rep, records, kb


@pytest.mark.parametrize("site", sorted(SITES))
def test_a_built_site_is_ingested_as_its_documentation(tmp_path: Path, site: str) -> None:
    rep, records, kb = _ingest(tmp_path, site)
    kb.close()
    assert not rep.errors and records
    origins = {r.origin for r in records}
    for bad in ("/_sources/", "/_modules/", "/_static/", "genindex", "search.html", "404.html", ".txt", ".css"):
        assert not [o for o in origins if bad in o], (bad, origins)
    for r in records:
        assert "¶" not in r.title and "¶" not in r.text, (r.id, r.title)
        assert not r.title.lower().endswith("documentation"), r.title
        assert " — " not in r.title, r.title
        for phrase in CHROME[site]:
            assert phrase not in r.text, (site, phrase, r.id, r.text[:300])
    assert rep.left_out_counts == LEFT_OUT[site]
    assert rep.files_seen == rep.files + len(rep.skipped) + len(rep.left_out) + len(rep.refused_links)


@pytest.mark.parametrize("site", sorted(SITES))
def test_the_site_version_is_the_sources_version_not_text(tmp_path: Path, site: str) -> None:
    _, records, kb = _ingest(tmp_path, site)
    try:
        want = VERSIONS.get(site)
        for r in records:
            assert r.version == want, (r.id, r.version)
            assert r.metadata["site"]["generator"] == GENERATORS[site]
            assert r.metadata["site"].get("version") == want
            if want:
                assert f"{want} documentation" not in r.title, r.title
        if want:  # and a retrieved chunk carries it: Chunk.version and metadata["site"]["version"]
            hit = kb.retrieve("install", parse_principal("tenant:t"), k=1)[0]
            assert hit.version == want and hit.metadata["site"]["version"] == want
    finally:
        kb.close()


def test_titles_are_the_pages_own(tmp_path: Path) -> None:
    titles: dict[str, set[str]] = {}
    for site in ("black", "django", "mkdocs", "postgresql"):
        _, records, kb = _ingest(tmp_path, site)
        kb.close()
        titles[site] = {r.title.split(" › ")[0] for r in records}
    assert "Black exceptions" in titles["black"]  # was "Black exceptions — Black 23.1.0 documentation"
    assert "Quick install guide" in titles["django"]
    assert "Installation" in titles["mkdocs"]  # was "Installation - MkDocs"
    assert {"Chapter 5. Data Definition", "5.1. Table Basics"} <= titles["postgresql"]


def test_a_docbook_section_title_is_not_repeated_as_its_first_heading(tmp_path: Path) -> None:
    _, records, kb = _ingest(tmp_path, "postgresql")
    kb.close()
    basics = [r for r in records if r.origin.endswith("ddl-basics.html")]
    assert basics and all(r.heading_path[1:2] != ("5.1. Table Basics",) for r in basics)


def _cli(args: list[str]) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, [*args, "--embedder", "fake:16", "--access", "tenant:t", "--no-progress"])
    return res.exit_code, res.stdout, res.stderr


def test_the_cli_reports_a_line_per_kind_left_out_and_excludes_globs(tmp_path: Path) -> None:
    docs = tmp_path / "black"
    shutil.copytree(SITES["black"], docs)
    kb = tmp_path / "kb.sqlite"
    code, out, _ = _cli(["ingest", str(docs), "--kb", str(kb)])
    assert code == 0
    assert "skipped 2 Sphinx source copies (_sources/)" in out
    assert "skipped 2 search/index pages" in out
    assert "skipped 3 site assets" in out
    assert "3 added" in out  # faq, license, reference_exceptions
    code, out, _ = _cli(["ingest", str(docs), "--kb", str(kb), "--exclude", "contributing", "--exclude", "lic*.html"])
    assert code == 0
    assert "skipped 2 file(s) matching --exclude" in out and "2 removed" in out
    code, out, _ = _cli(["ingest", str(docs), "--kb", str(kb), "--exclude", "contributing/*", "--json"])
    rep = json.loads(out)
    assert rep["left_out_counts"] == {"excluded": 1, "sphinx_sources": 2, "site_assets": 3, "search_index_pages": 2}
    assert "skipped 1 file(s) matching --exclude" in rep["left_out_lines"]
    excluded = [e["path"] for e in rep["left_out"] if e["kind"] == "excluded"]
    assert [Path(p).name for p in excluded] == ["reference_exceptions.html"]
    assert rep["sources_added"] == 1 and rep["kb_chunks"] > 0  # license.html is back
    with KnowledgeBase(kb, embedder=FakeEmbedder(dim=16)) as k:
        origins = {r.origin for s in k.sources() for r in k.store.get_source_chunks(s.source_id, s.tenant)}
    assert origins and not [o for o in origins if "contributing" in o or "_sources" in o]


def test_a_page_named_search_inside_the_site_is_a_page(tmp_path: Path) -> None:
    # Django's topics/db/search.html is a page on search, not the site's search page (that one sits beside
    # searchindex.js / objects.inv / _static at the site's root)
    docs = tmp_path / "site"
    (docs / "topics").mkdir(parents=True)
    (docs / "_static").mkdir()
    page = (SITES["django"] / "intro" / "install.html").read_text("utf-8")
    (docs / "topics" / "search.html").write_text(page, "utf-8")
    (docs / "search.html").write_text("<html><body><p>Please activate JavaScript</p></body></html>", "utf-8")
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=FakeEmbedder(dim=16)) as kb:
        rep = kb.ingest([docs], tenant="t")
    assert rep.sources_added == 1 and rep.left_out_counts == {"search_index_pages": 1}
    assert [Path(p).as_posix().endswith("/site/search.html") for p, _ in rep.left_out] == [True]

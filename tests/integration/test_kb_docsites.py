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
    "borgbackup": DATA / "borgbackup" / "html",
    "nut": DATA / "nut" / "html",
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
    # the relation bars, the sidebar's table of contents, the footer
    "borgbackup": ("Navigation", "Frequently asked questions", "Created using", "Copyright 2010"),
    # the navigation rows, the manual's table of contents, the footer that states the version
    "nut": ("Last updated", "Table of Contents", "Prev", "Next"),
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
    "borgbackup": {},
    "nut": {},
}

VERSIONS = {"black": "23.1.0", "django": "3.2.25", "postgresql": "15.20", "borgbackup": "1.2.4", "nut": "2.8.0"}
GENERATORS = {
    "black": "sphinx", "django": "sphinx", "mkdocs": "mkdocs", "git": "asciidoc", "postgresql": "docbook",
    "borgbackup": "sphinx", "nut": "docbook",
}  # fmt: skip


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


# ---------------------------------------------------------------------------------------------- issue 45


def test_a_theme_that_names_its_content_like_chrome_loses_no_page(tmp_path: Path) -> None:
    # BorgBackup's theme puts each page in <div class="document clearer body">: main stored nothing of it
    rep, records, kb = _ingest(tmp_path, "borgbackup")
    kb.close()
    by_page = {Path(o).name: [r for r in records if r.origin == o] for o in {r.origin for r in records}}
    assert set(by_page) == {"introduction.html", "support.html"} and all(len(v) >= 4 for v in by_page.values())
    assert not rep.errors
    titles = {r.title for r in records}
    assert {"Support › Verifying signed releases", "Introduction › What is BorgBackup? › Main features"} <= titles
    texts = " ".join(r.text for r in records)
    assert 'gpg --recv-keys "6D5B EF9A DD20 7580 5747 B70F 9F88 FB52 FAF7 B393"' in texts  # a code block
    assert "Space efficient storage" in texts  # a definition list's term
    assert {r.metadata["site"]["site"] for r in records} == {"Borg - Deduplicating Archiver"}


def test_docbook_admonitions_are_text_under_their_sections_title(tmp_path: Path) -> None:
    # NUT's manual (AsciiDoc via DocBook XSL): <div class="note"><h3 class="title">Note</h3>... made "Note" a
    # heading, and the text after a note inherited it
    _, records, kb = _ingest(tmp_path, "nut")
    kb.close()
    labels = {"note", "tip", "warning", "important", "caution"}
    assert not [r.title for r in records if labels.intersection(h.lower() for h in r.heading_path)]
    assert not [r.title for r in records if any(h.startswith("Keep in mind") for h in r.heading_path)]
    debian = [r for r in records if r.heading_path[-1] == "Debian, Ubuntu and other derivatives"]
    assert debian and debian[0].text.startswith("Note: NUT is packaged and well maintained in these systems.")
    source = [r for r in records if r.heading_path[-1] == "5.1. Installing from source"]
    # a titled admonition: its title is its label (here before a list)
    assert [r for r in source if "Keep in mind that…:\n- the paths shown below are the default" in r.text]


def test_the_sites_version_from_its_footer_and_a_title_page_chunk(tmp_path: Path) -> None:
    _, records, kb = _ingest(tmp_path, "nut")
    kb.close()
    assert {r.version for r in records} == {"2.8.0"}  # stated only in the footer of each page
    assert {r.metadata["site"].get("site") for r in records} == {"Network UPS Tools"}
    title_page = [r for r in records if Path(r.origin).name == "index.html"]
    assert [r.text for r in title_page] == ["By Russell Kroll, Arnaud Quette and Arjen de Korte\n\nVersion 2.8.0"]
    assert title_page[0].title == "Network UPS Tools User Manual"


def test_a_plain_page_with_an_auto_refresh_is_read_whole(tmp_path: Path) -> None:
    docs = tmp_path / "site"
    docs.mkdir()
    status = (
        '<html><head><title>Status</title><meta http-equiv="refresh" content="300"></head><body>'
        "Backups ran at 02:00.<div>All <span>three</span> repositories were checked.</div></body></html>"
    )
    (docs / "status.html").write_text(status, "utf-8")
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=FakeEmbedder(dim=16)) as kb:
        rep = kb.ingest([docs], tenant="t")
        assert rep.sources_added == 1 and not rep.left_out
        texts = [r.text for s in kb.sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)]
    assert texts == ["Backups ran at 02:00.\n\nAll three repositories were checked."]


def test_a_page_turned_into_a_redirect_stub_keeps_its_last_good_version(tmp_path: Path) -> None:
    docs = tmp_path / "site"
    docs.mkdir()
    guide = "<html><head><title>Guide</title></head><body><h1>Guide</h1><p>Prune weekly.</p></body></html>"
    (docs / "guide.html").write_text(guide, "utf-8")
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=FakeEmbedder(dim=16)) as kb:
        assert kb.ingest([docs], tenant="t").sources_added == 1
        stub = '<html><head><meta http-equiv="refresh" content="0; url=new/guide.html"></head><body>Moved</body></html>'
        (docs / "guide.html").write_text(stub, "utf-8")
        rep = kb.ingest([docs], tenant="t")
        assert rep.left_out_counts == {"redirects": 1} and rep.sources_removed == 0
        assert [Path(p).name for p in rep.kept_last_good] == ["guide.html"]
        texts = [r.text for s in kb.sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)]
    assert texts == ["Prune weekly."]


def test_a_page_that_states_no_version_takes_its_home_pages(tmp_path: Path) -> None:
    # git-buildpackage's manual (DocBook): "Version: 0.9.30" on the title page only
    docs = tmp_path / "manual"
    (docs / "ch").mkdir(parents=True)
    gen = '<meta name="generator" content="DocBook XSL Stylesheets V1.79.2">'
    home = f"""<html><head>{gen}<title>Building Debian Packages</title></head><body><div class="book">
    <div class="titlepage"><p class="title">Building Debian Packages</p><h2 class="subtitle">Version: 0.9.30</h2>
    <div class="author"><h3 class="author">Guido Günther</h3></div></div><div class="toc"><dl class="toc"><dt>
    <a href="ch/intro.html">Introduction</a></dt></dl></div></div></body></html>"""
    (docs / "index.html").write_text(home, "utf-8")
    page = f"""<html><head>{gen}<title>Introduction</title></head><body><div class="chapter"><div class="titlepage">
    <h2 class="title">Introduction</h2></div><p>Importing sources.</p></div></body></html>"""
    (docs / "ch" / "intro.html").write_text(page, "utf-8")
    with KnowledgeBase(tmp_path / "kb.sqlite", embedder=FakeEmbedder(dim=16)) as kb:
        kb.ingest([docs], tenant="t")
        records = {r.title: r for s in kb.sources() for r in kb.store.get_source_chunks(s.source_id, s.tenant)}
    assert set(records) == {"Building Debian Packages", "Introduction"}
    assert records["Introduction"].version == "0.9.30"
    assert records["Building Debian Packages"].text == "Building Debian Packages\n\nVersion: 0.9.30\n\nBy Guido Günther"
    assert records["Building Debian Packages"].version == "0.9.30"

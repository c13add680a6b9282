"""Issue 39 item 1: a built site's page is read for its main content, by the markup of the generator that built
it; its title loses the site's suffix; a site's files that are not documentation are recognised by path.

The real built sites (Sphinx alabaster and Django's theme, MkDocs, AsciiDoc, DocBook) are in
``tests/integration/test_kb_docsites.py``; these are the shapes of the other themes and generators, each page
cut down to the elements that matter: the main content element and the chrome around and inside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("lxml")

from admit.kb.docsite import SiteFilter, clean_title, skip_line
from admit.kb.parse import parse_html, strip_cgi_header

BODY = "<p>The body text of the page.</p><h2>Options{anchor}</h2><p>Set <code>line-length</code> to 100.</p>"


def _texts(html: str) -> tuple[str, list[str], list[tuple[str, ...]], dict[str, str]]:
    doc = parse_html(html, fallback_title="fallback")
    return (
        doc.title,
        [p for s in doc.sections for p in s.paragraphs],
        [s.headings for s in doc.sections],
        dict(doc.site),
    )


PAGES: dict[str, tuple[str, str, dict[str, str]]] = {
    "furo": (
        """<html><head><title>Configuration - Black 23.1.0 documentation</title></head><body>
        <div class="sidebar-drawer"><div class="sidebar-container"><a class="sidebar-brand">Black</a>
        <form class="sidebar-search-container"><input name="q"></form><ul><li>SIDEBAR LINK</li></ul></div></div>
        <div class="main"><div class="content"><div class="article-container">
        <div class="edit-this-page"><a href="https://github.com/x/edit">Edit this page</a></div>
        <article role="main" id="furo-main-content"><h1>Configuration<a class="headerlink" href="#c">#</a></h1>
        {body}</article>
        <footer><div class="related-pages"><a class="next-page">NEXT PAGE</a></div></footer></div>
        <aside class="toc-drawer"><div class="toc-tree"><ul><li>TOC ENTRY</li></ul></div></aside></div></div>
        </body></html>""",
        "Configuration",
        {"generator": "sphinx", "site": "Black", "version": "23.1.0"},
    ),
    "sphinx_rtd_theme": (
        """<html><head><title>Configuration &mdash; Proj 2.0 documentation</title></head><body>
        <nav data-toggle="wy-nav-shift" class="wy-nav-side"><div class="wy-side-nav-search"><p>SEARCH DOCS</p>
        </div><div role="navigation"><ul><li>SIDEBAR LINK</li></ul></div></nav>
        <section class="wy-nav-content-wrap"><div class="wy-nav-content"><div class="rst-content">
        <div role="navigation" aria-label="breadcrumbs"><ul class="wy-breadcrumbs"><li>BREADCRUMB</li>
        <li class="wy-breadcrumbs-aside"><a class="fa fa-github">Edit on GitHub</a></li></ul></div>
        <div role="main" class="document" itemscope="itemscope"><div itemprop="articleBody">
        <section id="c"><h1>Configuration<a class="headerlink" href="#c" title="Permalink to this heading">¶</a>
        </h1>{body}</section></div></div>
        <footer><div class="rst-footer-buttons">NEXT BUTTON</div><p>COPYRIGHT</p></footer></div></div></section>
        </body></html>""",
        "Configuration",
        {"generator": "sphinx", "site": "Proj", "version": "2.0"},
    ),
    "pydata": (
        """<html><head><title>Configuration &#8212; Proj 0.9 documentation</title>
        <meta name="docsearch:version" content="0.9"></head><body>
        <nav class="bd-header navbar"><a>NAVBAR</a></nav><div class="bd-container"><div class="bd-sidebar-primary">
        <p>SIDEBAR LINK</p></div><main class="bd-main"><div class="bd-content"><div class="bd-article-container">
        <div class="bd-header-article"><nav aria-label="Breadcrumb"><ul><li>BREADCRUMB</li></ul></nav></div>
        <article class="bd-article" role="main"><section><h1>Configuration<a class="headerlink" href="#c">#</a>
        </h1>{body}</section></article><footer class="prev-next-footer">NEXT PAGE</footer></div>
        <div class="bd-sidebar-secondary"><p>ON THIS PAGE</p></div></div></main></div></body></html>""",
        "Configuration",
        {"generator": "sphinx", "site": "Proj", "version": "0.9"},
    ),
    "mkdocs-material": (
        """<html><head><meta name="generator" content="mkdocs-1.5.3, mkdocs-material-9.4.6">
        <title>Configuration - My Project</title></head><body>
        <header class="md-header"><nav class="md-header__inner"><div class="md-search">SEARCH</div></nav></header>
        <div class="md-container"><main class="md-main"><div class="md-main__inner">
        <div class="md-sidebar md-sidebar--primary"><nav class="md-nav"><p>SIDEBAR LINK</p></nav></div>
        <div class="md-sidebar md-sidebar--secondary"><nav class="md-nav md-nav--secondary">TOC ENTRY</nav></div>
        <div class="md-content"><article class="md-content__inner md-typeset">
        <a href="https://github.com/x/edit" title="Edit this page" class="md-content__button">Edit this page</a>
        <h1 id="c">Configuration<a class="headerlink" href="#c" title="Permanent link">¶</a></h1>{body}
        <aside class="md-source-file">Last update: 2023-01-01</aside></article></div></div></main>
        <footer class="md-footer"><nav class="md-footer__inner">NEXT PAGE</nav></footer></div></body></html>""",
        "Configuration",
        {"generator": "mkdocs-material", "site": "My Project"},
    ),
    "docusaurus": (
        """<html><head><meta name="generator" content="Docusaurus v2.4.1">
        <meta name="docusaurus_version" content="2.4"><title>Configuration | My Site</title></head><body>
        <div id="__docusaurus"><nav class="navbar"><a>NAVBAR</a></nav><div class="main-wrapper">
        <aside class="theme-doc-sidebar-container"><nav aria-label="Docs sidebar"><p>SIDEBAR LINK</p></nav></aside>
        <main class="docMainContainer"><div class="row"><div class="col">
        <nav class="theme-doc-breadcrumbs" aria-label="Breadcrumbs"><ul><li>BREADCRUMB</li></ul></nav>
        <div class="theme-doc-toc-mobile">TOC ENTRY</div>
        <article><div class="theme-doc-markdown markdown"><header><h1>Configuration</h1></header>
        {body_hash}</div><footer class="theme-doc-footer"><a class="theme-edit-this-page">Edit this page</a>
        </footer></article><nav class="pagination-nav">NEXT PAGE</nav></div>
        <div class="col col--3"><div class="theme-doc-toc-desktop table-of-contents">TOC ENTRY</div></div></div>
        </main></div><footer class="footer">COPYRIGHT</footer></div></body></html>""",
        "Configuration",
        {"generator": "docusaurus", "site": "My Site", "version": "2.4"},
    ),
    "hugo": (
        """<html><head><meta name="generator" content="Hugo 0.120.4"><title>Configuration | My Site</title>
        </head><body><header><nav><a>NAVBAR</a></nav></header><div class="container">
        <aside class="sidebar-nav"><nav><p>SIDEBAR LINK</p></nav></aside>
        <main><nav class="breadcrumb">BREADCRUMB</nav><h1>Configuration</h1>{body_anchor}</main></div>
        <footer>COPYRIGHT</footer></body></html>""",
        "Configuration",
        {"generator": "hugo", "site": "My Site"},
    ),
    "javadoc": (
        """<html><head><meta name="generator" content="javadoc/ClassWriterImpl">
        <title>Configuration (My API 1.0 API)</title></head><body>
        <header role="banner"><nav role="navigation"><div class="top-nav">OVERVIEW PACKAGE CLASS</div>
        <div class="sub-nav">SEARCH</div></nav></header><div class="flex-content"><main role="main">
        <div class="header"><h1 title="Class Configuration">Configuration</h1></div>{body}</main>
        <footer role="contentinfo"><p class="legal-copy">COPYRIGHT</p></footer></div></body></html>""",
        "Configuration",  # Javadoc's "Class (doctitle API)": the class, the site and its release
        {"generator": "javadoc", "site": "My API", "version": "1.0"},
    ),
    "plain": (
        """<html><head><title>Configuration</title></head><body><header><nav>NAVBAR</nav>
        <p>SITE BANNER</p></header><main><h1>Configuration</h1>{body}</main>
        <div id="sidebar"><p>SIDEBAR LINK</p></div><footer>COPYRIGHT</footer></body></html>""",
        "Configuration",
        {},
    ),
}

CHROME = ("SIDEBAR", "TOC ENTRY", "NEXT", "BREADCRUMB", "Edit", "SEARCH", "COPYRIGHT", "NAVBAR", "BANNER", "OVERVIEW")


@pytest.mark.parametrize("theme", sorted(PAGES))
def test_the_main_content_of_each_theme_without_its_chrome(theme: str) -> None:
    html, want_title, want_site = PAGES[theme]
    body = BODY.format(anchor='<a class="headerlink" href="#o">¶</a>')
    html = html.format(
        body=body,
        body_hash=BODY.format(anchor='<a href="#o" class="hash-link" title="Direct link to Options">\u200b</a>'),
        body_anchor=BODY.format(anchor='<a class="anchor" href="#o">#</a>'),
    )
    title, texts, headings, site = _texts(html)
    assert title == want_title
    assert site == want_site
    assert texts == ["The body text of the page.", "Set line-length to 100."], texts
    assert headings == [(), ("Options",)]
    joined = " ".join(texts) + title + " ".join(h for hs in headings for h in hs)
    assert not [c for c in CHROME if c in joined]
    assert "¶" not in joined and "#" not in joined and "\u200b" not in joined


@pytest.mark.parametrize(
    ("raw", "heading", "generator", "want"),
    [
        ("Configuration — Black 23.1.0 documentation", "Configuration", "sphinx", ("Configuration", "Black", "23.1.0")),
        ("Black 23.1.0 documentation", "Welcome", "sphinx", ("Welcome", "Black", "23.1.0")),
        ("<no title> — Black 23.1.0 documentation", "", "sphinx", ("", "Black", "23.1.0")),
        ("A - B — Django 3.2.25 documentation", "A - B", "sphinx", ("A - B", "Django", "3.2.25")),
        ("Proj documentation", "Intro", "sphinx", ("Intro", "Proj", "")),
        (
            "3.11.2 Documentation",
            "Python 3.11.2 documentation",
            "sphinx",
            ("Python 3.11.2 documentation", "", "3.11.2"),
        ),
        ("os.path — Python 3.11.2 documentation", "os.path", "sphinx", ("os.path", "Python", "3.11.2")),
        # issue 45: the Pallets projects' docstitle gives its version in brackets
        ("Quickstart — Flask Documentation (2.2.x)", "Quickstart", "sphinx", ("Quickstart", "Flask", "2.2.x")),
        ("Click Documentation (8.1.x)", "Welcome", "sphinx", ("Welcome", "Click", "8.1.x")),
        ("Configuration - MkDocs", "Configuration", "mkdocs", ("Configuration", "MkDocs", "")),
        # a first heading that is the start of a word of the title (DRF's "Schema" on "Schemas - ...")
        ("Schemas - Django REST framework", "Schema", "mkdocs", ("Schemas", "Django REST framework", "")),
        ("Intro | Docusaurus", "Introduction", "docusaurus", ("Intro", "Docusaurus", "")),
        ("Chapter 5. Data Definition", "Chapter 5. Data Definition", "docbook", ("Chapter 5. Data Definition", "", "")),
        ("Python Language Reference", "", None, ("Python Language Reference", "", "")),
        ("Error handling - a guide", "", None, ("Error handling - a guide", "", "")),
        ("Using C# - Guide", "Using C#", None, ("Using C#", "Guide", "")),
    ],
)
def test_titles_lose_the_sites_suffix(raw: str, heading: str, generator: str | None, want: tuple[str, ...]) -> None:
    t = clean_title(raw, heading=heading, generator=generator)
    assert (t.title, t.site, t.version) == want


def test_docbook_home_link_names_the_site_and_version() -> None:
    t = clean_title("5.1. Table Basics", heading="5.1. Table Basics", generator="docbook",
                    home_title="PostgreSQL 15.20 Documentation")  # fmt: skip
    assert (t.title, t.site, t.version) == ("5.1. Table Basics", "PostgreSQL", "15.20")


def test_a_home_links_title_names_the_release_before_the_rest() -> None:
    # old DocBook (DSSSL) pages: <LINK REL="HOME" TITLE="Privoxy 3.0.34 User Manual">, class names in capitals
    html = """<HTML><HEAD><TITLE>Filter Files</TITLE><META NAME="GENERATOR" CONTENT="Modular DocBook HTML Stylesheet
    Version 1.79"><LINK REL="HOME" TITLE="Privoxy 3.0.34 User Manual" HREF="index.html"></HEAD><BODY CLASS="SECT1">
    <DIV CLASS="NAVHEADER"><TABLE><TR><TH>Privoxy 3.0.34 User Manual</TH></TR><TR><TD><A HREF="a.html" ACCESSKEY="P">
    Prev</A></TD></TR></TABLE></DIV><DIV CLASS="SECT1"><H1 CLASS="SECT1">9. Filter Files</H1><P>On-the-fly text
    substitutions need to be defined in a filter file, and can then be invoked as an action.</P></DIV></BODY></HTML>"""
    title, texts, _, site = _texts(html)
    assert title == "Filter Files" and site == {"generator": "docbook", "site": "Privoxy", "version": "3.0.34"}
    assert texts == [
        "On-the-fly text substitutions need to be defined in a filter file, and can then be invoked as an action."
    ]
    t = clean_title("Building", heading="", generator="docbook", home_title="Building Debian Packages with gbp")
    assert (t.site, t.version) == ("", "")


def test_a_heading_ending_in_a_hash_keeps_it() -> None:
    title, _, headings, _ = _texts("<html><body><h1>F#</h1><p>x</p><h2>Using C#</h2><p>y</p></body></html>")
    assert title == "F#" and headings == [(), ("Using C#",)]


def test_a_site_page_kind_is_recognised_by_its_markup() -> None:
    genindex = '<html><body><div role="main"><h1>Index</h1><table class="indextable genindextable"></table>'
    assert parse_html(genindex + "</div></body></html>", fallback_title="x").page_kind == "index"
    search = '<html><body><div role="main"><h1>Search</h1><div id="search-results"></div></div></body></html>'
    assert parse_html(search, fallback_title="x").page_kind == "search"
    listing = "<html><head><title>Index of /docs</title></head><body><h1>Index of /docs</h1></body></html>"
    assert parse_html(listing, fallback_title="x").page_kind == "listing"
    redirect = '<html><head><meta http-equiv="refresh" content="0; url=new/"></head><body>Moved</body></html>'
    assert parse_html(redirect, fallback_title="x").page_kind == "redirect"
    assert (
        parse_html("<html><body><h1>Search</h1><p>How to search.</p></body></html>", fallback_title="x").page_kind
        is None
    )


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("_sources/faq.md.txt", "sphinx_sources"),
        ("guide/_sources/usage.rst.txt", "sphinx_sources"),
        ("_modules/black.html", "sphinx_modules"),
        ("_static/pygments.css", "site_assets"),
        ("_images/diagram.png", "site_assets"),
        ("searchindex.js", "site_assets"),
        ("objects.inv", "site_assets"),
        ("sitemap.xml", "site_assets"),
        ("search/search_index.json", "site_assets"),
        ("fonts/roboto.woff2", "site_assets"),
        ("html/doxygen_graph.png", "site_assets"),  # Doxygen and Texinfo keep images beside the pages
        ("figures/arch.SVG", "site_assets"),
        ("genindex.html", "search_index_pages"),
        ("genindex-A.html", "search_index_pages"),
        ("py-modindex.html", "search_index_pages"),
        ("404.html", "search_index_pages"),
        ("guide/usage.html", None),
        ("notes.md", None),
        ("notes.txt", None),
    ],
)
def test_site_files_are_recognised_by_path(tmp_path: Path, rel: str, kind: str | None) -> None:
    f = tmp_path / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("x", "utf-8")
    assert SiteFilter().kind(f, rel, in_folder=True) == kind
    assert SiteFilter().kind(f, rel, in_folder=False) is None  # a file named on the command line is wanted


def test_search_html_is_the_sites_search_page_only_at_its_root(tmp_path: Path) -> None:
    (tmp_path / "topics").mkdir()
    (tmp_path / "searchindex.js").write_text("x", "utf-8")
    for rel in ("search.html", "topics/search.html"):
        (tmp_path / rel).write_text("x", "utf-8")
    site = SiteFilter()
    assert site.kind(tmp_path / "search.html", "search.html", in_folder=True) == "search_index_pages"
    assert site.kind(tmp_path / "topics/search.html", "topics/search.html", in_folder=True) is None


def test_text_files_are_sources_only_in_a_folder_of_twins(tmp_path: Path) -> None:
    for n in ("git-add.txt", "git-add.html", "git-mv.txt", "git-mv.html", "config.txt"):
        (tmp_path / "doc" / n).parent.mkdir(exist_ok=True)
        (tmp_path / "doc" / n).write_text("x", "utf-8")
    (tmp_path / "notes").mkdir()
    for n in ("a.txt", "a.html", "b.txt", "c.txt", "d.txt"):
        (tmp_path / "notes" / n).write_text("x", "utf-8")
    site = SiteFilter()
    for n in ("git-add.txt", "config.txt"):
        assert site.kind(tmp_path / "doc" / n, f"doc/{n}", in_folder=True) == "asciidoc_sources"
    assert site.kind(tmp_path / "notes/b.txt", "notes/b.txt", in_folder=True) is None  # one twin in four


def test_exclude_globs_match_the_path_or_a_folder_above_it(tmp_path: Path) -> None:
    site = SiteFilter(("releases", "*.rst", "api/*/internal.html"))
    assert site.kind(tmp_path / "x", "releases/1.0.html", in_folder=True) == "excluded"
    assert site.kind(tmp_path / "x", "guide/intro.rst", in_folder=True) == "excluded"
    assert site.kind(tmp_path / "x", "api/v1/internal.html", in_folder=True) == "excluded"
    assert site.kind(tmp_path / "x", "guide/releases.html", in_folder=True) is None
    assert site.kind(tmp_path / "x", "intro.rst", in_folder=False) == "excluded"  # a named file: its name
    assert skip_line("excluded", 2) == "skipped 2 file(s) matching --exclude"


@pytest.mark.parametrize(
    "unit",
    [
        '<div class="sphinxsidebar">',  # nested chrome: marked once, at the outside
        '<p>x<a class="headerlink" href="#a">¶</a>tail',  # side by side: no tail text moved along
        '<div role="main"><article>',  # nested candidates for the main content
        '<h2>t<a class="anchor" href="#t">#</a></h2><div class="toc">',
        '<div class="document clearer body"><p>x</p>',  # the descent to the element holding the text
        '<div class="admonition note"><p class="admonition-title">Note</p>loose',  # nested admonitions
        '<div style="display:none">x<span aria-hidden="true">',  # nested hidden regions
        "<section>loose<span>text<b>in</b>",  # text outside blocks
    ],
)
def test_the_page_scan_is_linear_in_the_page(unit: str) -> None:
    from tests.security.test_linear_time import RATIO, work

    def page(n: int) -> str:
        return "<html><head><title>T — P 1.0 documentation</title></head><body>" + unit * n + "</body></html>"

    small = work(lambda t: parse_html(t, fallback_title="x"), page(100))
    large = work(lambda t: parse_html(t, fallback_title="x"), page(1000))  # under the parser's depth limit (2,048)
    assert large <= RATIO * small, (small, large)


def test_a_pydoc_page_loses_its_local_path_and_title_prefix() -> None:
    html = """<html><head><title>Python: module json.decoder</title></head><body>
    <table class="heading"><tr class="heading-text decor"><td class="title"><strong class="title">
    <a href="json.html">json</a>.decoder</strong></td><td class="extra"><a href=".">index</a><br>
    <a href="file:/usr/lib/python3.11/json/decoder.py">/usr/lib/python3.11/json/decoder.py</a></td></tr></table>
    <p><span class="code">Implementation of JSONDecoder</span></p></body></html>"""
    title, texts, _, site = _texts(html)
    assert title == "json.decoder" and site == {"generator": "pydoc", "site": "Python"}
    assert "Implementation of JSONDecoder" in texts and not [t for t in texts if "/usr/lib" in t or "index" in t]


def test_a_section_titled_like_chrome_is_content() -> None:
    html = """<html><head><title>Themes — Proj 1.0 documentation</title></head><body><div class="body" role="main">
    <section id="themes"><h1>Themes</h1><p>Intro.</p><section id="sidebar"><h2 id="toc">Sidebar</h2>
    <p>The sidebar lists the pages.</p></section></section></div>
    <div class="sphinxsidebar" role="navigation"><p>SIDEBAR LINK</p></div></body></html>"""
    title, texts, headings, _ = _texts(html)
    assert title == "Themes" and texts == ["Intro.", "The sidebar lists the pages."]
    assert headings == [(), ("Sidebar",)]


def test_inline_elements_join_their_neighbours() -> None:
    # Sphinx's signatures and Black's rendering of "psf/black@stable": one span per token, no spaces between
    sig = (
        '<span class="sig-prename descclassname"><span class="pre">black.</span></span><span class="sig-name '
        'descname"><span class="pre">format_str</span></span><span class="sig-paren">(</span><em class="sig-param">'
        '<span class="n"><span class="pre">src</span></span></em><span class="sig-paren">)</span>'
    )
    html = f"""<html><body><div role="main"><dl class="py function"><dt class="sig sig-object py">{sig}</dt></dl>
    <ul><li><p>uses: <a href="mailto:x">psf/black<span>&#64;</span>stable</a></p></li></ul>
    <p>one<br>two</p><table><tr><td>cell<div>below</div></td></tr></table></div></body></html>"""
    _, texts, _, _ = _texts(html)
    assert texts == ["black.format_str(src)", "- uses: psf/black@stable", "one two", "cell below"]


# ---------------------------------------------------------------------------------------------- issue 45

PARA = "<p>" + "Every backup is checked against the repository before it is pruned. " * 3 + "</p>"


def test_a_theme_class_word_on_the_content_container_does_not_erase_the_page() -> None:
    # BorgBackup's theme: the content sits in <div class="document clearer body"> with no role="main", and
    # "clearer" is a chrome word elsewhere (Sphinx's empty float-clearing div): it erased every page
    html = f"""<html><head><title>Quick Start — Borg - Deduplicating Archiver 1.2.4 documentation</title></head><body>
    <div class="related" role="navigation"><a href="a">previous</a></div><div class="container-wrapper">
    <div id="left-column"><div class="sphinxsidebar"><h3>Table Of Contents</h3><ul><li><a href="a">Installation</a>
    </li><li><a href="b">Quick Start</a></li><li><a href="c">Usage</a></li><li><a href="d">Deployment</a></li>
    </ul></div></div><div id="right-column"><div role="navigation" aria-label="breadcrumbs"><a href="i">Docs</a>
    </div><div class="document clearer body"><section id="q"><h1>Quick Start</h1>{PARA}<section id="s">
    <h2>A step by step example</h2>{PARA}<div class="highlight"><pre>borg init --encryption=repokey /repo</pre>
    </div><dl><dt>--stats</dt><dd>print statistics</dd></dl><table><tr><th>Option</th><th>Meaning</th></tr>
    <tr><td>-v</td><td>verbose</td></tr></table></section></section></div><div class="footer-relations">
    <a href="p">previous</a></div><div class="clearer"></div></div></div><div class="footer">© Copyright 2023</div>
    </body></html>"""
    doc = parse_html(html, fallback_title="x")
    texts = [p for s in doc.sections for p in s.paragraphs]
    assert doc.title == "Quick Start" and not doc.content_guard
    assert dict(doc.site) == {"generator": "sphinx", "site": "Borg - Deduplicating Archiver", "version": "1.2.4"}
    assert [s.headings for s in doc.sections] == [(), ("A step by step example",)]
    # headings, code blocks, definition lists and tables survive
    assert "borg init --encryption=repokey /repo" in texts
    assert {"--stats", "print statistics", "| Option | Meaning |\n| --- | --- |\n| -v | verbose |"} <= set(texts)
    joined = " ".join(texts)
    assert "Table Of Contents" not in joined and "Installation" not in joined and "Copyright" not in joined


def test_the_guard_keeps_the_whole_page_when_the_main_content_is_a_sliver_of_it() -> None:
    # a theme's role="main" on a skip-link target: the page's text lies outside it
    html = f"""<html><head><title>Guide — Proj 1.0 documentation</title></head><body>
    <div class="sphinxsidebar" role="navigation"><a href="a">Guide</a></div>
    <div role="main" class="skip-target"><p>Skip to content</p></div>
    <div class="content"><h1>Guide</h1>{PARA}<h2>Pruning</h2>{PARA}</div></body></html>"""
    doc = parse_html(html, fallback_title="x")
    texts = [p for s in doc.sections for p in s.paragraphs]
    assert doc.content_guard.startswith("main content was 4% of the page's visible text"), doc.content_guard
    assert sum("Every backup is checked" in t for t in texts) == 2
    assert ("Pruning",) in [s.headings for s in doc.sections]
    # a page read by its main content is not marked
    assert parse_html(html.replace('role="main" ', ""), fallback_title="x").content_guard == ""


@pytest.mark.parametrize(
    ("kind", "html"),
    [
        (
            "docbook",
            """<div class="section"><div class="titlepage"><h2 class="title">6. Configuration notes</h2></div>
            <p>Intro.</p><div class="note" style="margin-left: 0"><h3 class="title">Note</h3><p>Careful here.</p>
            </div><p>After the note.</p><div class="section"><h3 class="title">6.1. Drivers</h3><p>Sub.</p></div>
            </div>""",
        ),
        (
            "asciidoc",
            """<div class="sect1"><h2>6. Configuration notes</h2><div class="paragraph"><p>Intro.</p></div>
            <div class="admonitionblock"><table><tr><td class="icon"><div class="title">Note</div></td>
            <td class="content">Careful here.</td></tr></table></div><div class="paragraph"><p>After the note.</p>
            </div><h3>6.1. Drivers</h3><p>Sub.</p></div>""",
        ),
        (
            "sphinx",
            """<section><h2>6. Configuration notes</h2><p>Intro.</p><div class="admonition note">
            <p class="admonition-title">Note</p><p>Careful here.</p></div><p>After the note.</p>
            <section><h3>6.1. Drivers</h3><p>Sub.</p></section></section>""",
        ),
        (
            "mkdocs",  # !!! note
            """<h2 id="c">6. Configuration notes</h2><p>Intro.</p><div class="admonition note">
            <p class="admonition-title">Note</p><p>Careful here.</p></div><p>After the note.</p>
            <h3 id="d">6.1. Drivers</h3><p>Sub.</p>""",
        ),
        (
            "material-collapsible",  # ??? note
            """<h2 id="c">6. Configuration notes</h2><p>Intro.</p><details class="note"><summary>Note</summary>
            <p>Careful here.</p></details><p>After the note.</p><h3 id="d">6.1. Drivers</h3><p>Sub.</p>""",
        ),
    ],
    ids=["docbook", "asciidoc", "sphinx", "mkdocs", "material-collapsible"],
)
def test_an_admonition_is_content_under_its_sections_title(kind: str, html: str) -> None:
    page = f"<html><head><title>Manual</title></head><body><h1>Manual</h1>{html}</body></html>"
    _, texts, headings, _ = _texts(page)
    assert texts == ["Intro.", "Note: Careful here.", "After the note.", "Sub."], (kind, texts)
    assert headings == [("6. Configuration notes",), ("6. Configuration notes", "6.1. Drivers")], (kind, headings)


def test_a_titled_admonition_keeps_its_title_as_its_label() -> None:
    html = """<html><body><div class="section"><h2 class="title">C. Recording</h2><div class="note">
    <h3 class="title">RFC xxxx Recording Document</h3><p>This document is defined by RFC xxxx.</p></div></div>
    </body></html>"""
    _, texts, headings, _ = _texts(html)
    assert texts == ["RFC xxxx Recording Document: This document is defined by RFC xxxx."]
    assert headings == [()]


def test_plain_html_is_read_whole() -> None:
    # an outside tester's hand-written page: text directly in body, div, section and span, and classes a docs
    # theme would call chrome, with no generator to say they are
    html = """<html><head><title>Notes</title></head><body>Loose in body.
    <div>Directly in a div. <span>In a span</span> beside <b>bold</b>.<p>A paragraph.</p>After the paragraph.</div>
    <section>Directly in a section.<h2>Later</h2>Under the heading.</section>
    <div class="footer">A footer-classed note.</div><div class="nav">A nav-classed note.</div>
    <div class="toc">A toc-classed note.</div><div id="sidebar">A sidebar note.</div></body></html>"""
    _, texts, headings, site = _texts(html)
    assert site == {}
    assert texts == [
        "Loose in body.", "Directly in a div. In a span beside bold.", "A paragraph.", "After the paragraph.",
        "Directly in a section.", "Under the heading.", "A footer-classed note.", "A nav-classed note.",
        "A toc-classed note.", "A sidebar note.",
    ]  # fmt: skip
    assert headings == [(), ("Later",)]


def test_hidden_regions_are_dropped() -> None:
    html = """<html><body><p>Shown.</p><div style="display: none">HIDDEN STYLE</div><p hidden>HIDDEN ATTRIBUTE</p>
    <div aria-hidden="true"><p>HIDDEN FROM READERS</p></div><span style="VISIBILITY:hidden">HIDDEN TOO</span>
    <div role="tabpanel" hidden="true"><p>A tab's panel, shown by a click.</p></div><p>Also shown.</p></body></html>"""
    _, texts, _, _ = _texts(html)
    assert texts == ["Shown.", "A tab's panel, shown by a click.", "Also shown."]


@pytest.mark.parametrize(
    ("content", "redirect"),
    [
        ("0; url=new/", True),
        ("0;URL='https://example.org/new.html'", True),
        ("3; url=moved.html", True),
        ("300", False),  # a plain auto-refresh: the page itself, reloaded
        ("0", False),
        ("600; url=index.html", False),  # a slow one leaves the page to be read
        ("5; url=", False),
    ],
)
def test_a_redirect_is_a_refresh_with_a_target_and_a_short_delay(content: str, redirect: bool) -> None:
    head = f'<head><meta http-equiv="refresh" content="{content}"></head>'
    html = f"<html>{head}<body><p>Status: all fine.</p></body></html>"
    doc = parse_html(html, fallback_title="x")
    assert (doc.page_kind == "redirect") is redirect
    if not redirect:
        assert [p for s in doc.sections for p in s.paragraphs] == ["Status: all fine."]


@pytest.mark.parametrize(
    ("html", "site"),
    [
        (  # NUT's footer: "Last updated ... -- Network UPS Tools 2.8.0"
            """<body><div class="section"><h2 class="title">3. Overview</h2><p>Text.</p></div>
            <div class="navfooter nut_footer"><hr/>Last updated 2023-01-25 09:27:30 -- Network UPS Tools 2.8.0</div>
            <div class="navfooter"><a accesskey="p" href="a.html">Prev</a></div></body>""",
            {"generator": "docbook", "site": "Network UPS Tools", "version": "2.8.0"},
        ),
        (  # a footer that names the version in words; the tool's own version is not the site's
            """<body><main><h1>Guide</h1><p>Text.</p></main><footer>Proj docs, version 4.1.2. Built with
            Sphinx 7.2.6</footer></body>""",
            {"version": "4.1.2"},
        ),
        (
            """<body><main><h1>Guide</h1><p>Text.</p></main><footer>Created using -- Sphinx 7.2.6</footer></body>""",
            {},
        ),
        (  # a DocBook title page's releaseinfo
            """<body><div class="book"><div class="titlepage"><h1 class="title">Manual</h1>
            <p class="releaseinfo">Version 1.3.0</p></div><p>Text.</p></div></body>""",
            {"version": "1.3.0"},
        ),
        ("""<head><meta name="version" content="2.0.1"></head><body><p>Text.</p></body>""", {"version": "2.0.1"}),
        (  # Doxygen's title area
            """<head><meta name="generator" content="Doxygen 1.9.4"></head><body><div id="top"><div id="titlearea">
            <div id="projectname">json-c<span id="projectnumber">&#160;0.16</span></div></div></div>
            <div class="contents"><p>Text.</p></div><address class="footer">Generated by doxygen 1.9.4</address>
            </body>""",
            {"generator": "doxygen", "version": "0.16"},
        ),
    ],
    ids=["docbook-footer", "footer-words", "tool-version", "title-page", "meta", "doxygen"],
)
def test_the_sites_version_is_read_wherever_the_page_states_it(html: str, site: dict[str, str]) -> None:
    doc = parse_html(f"<html>{html}</html>", fallback_title="x")
    assert dict(doc.site) == site
    kept = [p for s in doc.sections for p in s.paragraphs]
    assert [p for p in kept if p not in ("Text.", "Version 1.3.0")] == []  # no footer, no title area


def test_a_title_page_gives_its_title_authors_and_version() -> None:
    html = """<html><head><meta name="generator" content="DocBook XSL Stylesheets Vsnapshot">
    <title>Network UPS Tools User Manual</title></head><body><div class="navheader"><a accesskey="n" href="n.html">
    Next</a></div><div class="article"><div class="titlepage"><div><div><h2 class="title">Network UPS Tools User
    Manual</h2></div><div><div class="author"><h3 class="author"><span class="firstname">Russell Kroll, Arnaud
    Quette and Arjen de Korte</span></h3></div></div></div><hr/></div><div class="toc"><p><strong>Table of
    Contents</strong></p><dl class="toc"><dt><span class="section"><a href="a.html">1. Introduction</a></span>
    </dt></dl></div></div><div class="navfooter nut_footer"><hr/>Last updated 2023-01-25 09:27:30 -- Network UPS
    Tools 2.8.0</div></body></html>"""
    title, texts, headings, site = _texts(html)
    assert title == "Network UPS Tools User Manual" and site["version"] == "2.8.0"
    assert texts == ["By Russell Kroll, Arnaud Quette and Arjen de Korte", "Version 2.8.0"]
    assert headings == [()]


def test_a_doxygen_pages_header_block_is_chrome() -> None:
    """Issue 45: a project's own Doxygen header (a table of links in ``div#top``) reached every page's chunk."""
    html = """<html><head><meta name="generator" content="Doxygen 1.9.1"><title>JsonCpp: Class Members</title>
    </head><body><div id="top"><div id="titlearea"><table><tr></tr></table></div><table><tr><td>
    <a href="https://github.com/x/jsoncpp">JsonCpp project page</a></td><td><a href="hierarchy.html">Classes</a>
    </td><td><a href="namespace_json.html">Namespace</a></td></tr></table><hr><div id="main-nav"></div></div>
    <div class="contents"><h3>- a -</h3><ul><li>asBool() : <a class="el" href="v.html">Json::Value</a></li></ul>
    </div><address class="footer">Generated by doxygen 1.9.1</address></body></html>"""
    _, texts, _, _ = _texts(html)
    assert not any("project page" in t or "Namespace" in t for t in texts)
    assert any("asBool()" in t for t in texts)


def test_a_javadoc_package_line_is_the_classes_text_not_a_chunk_of_its_own() -> None:
    """Issue 45: Javadoc's package line above a class's title was a section of its own, the same on every class
    of the package (17.7% of atinject's chunks were copies); a package tree's "All Packages" links were text."""
    page = """<html><head><meta name="generator" content="javadoc (1.8.0)"><title>Car (JSR 330)</title></head>
    <body><div class="topNav"><ul class="navList"><li><a href="o.html">Overview</a></li></ul></div>
    <div class="header"><div class="subTitle">org.atinject.tck.auto</div>
    <h2 title="Interface Car" class="title">Interface Car</h2></div>
    <div class="contentContainer"><div class="description"><p>A car.</p></div></div></body></html>"""
    _, texts, headings, _ = _texts(page)
    assert headings == [("Interface Car",)]
    assert texts[:2] == ["org.atinject.tck.auto", "A car."]
    tree = """<html><head><meta name="generator" content="javadoc (1.8.0)"><title>javax.inject Class Hierarchy
    </title></head><body><div class="header"><h1 class="title">Hierarchy For Package javax.inject</h1>
    <span class="packageHierarchyLabel">Package Hierarchies:</span><ul class="horizontal"><li>
    <a href="../../overview-tree.html">All Packages</a></li></ul></div><div class="contentContainer">
    <h2>Interface Hierarchy</h2><ul><li>javax.inject.Provider&lt;T&gt;</li></ul></div></body></html>"""
    _, texts, _, _ = _texts(tree)
    assert texts == ["- javax.inject.Provider<T>"]


@pytest.mark.parametrize(
    ("html", "site"),
    [
        (  # Pygments' sidebar
            """<head><title>Welcome! — Pygments</title></head><body><div class="document"><div class="body">
            <h1>Welcome!</h1><p>Text.</p></div></div><div class="sphinxsidebar" role="navigation"><h3>Download</h3>
            <p>Current version: <b>2.14.0</b><br><a href="docs/changelog.html">Changelog</a></p></div></body>""",
            {"generator": "sphinx", "site": "Pygments", "version": "2.14.0"},
        ),
        (  # Sphinx's own site: the tool's version is the site's
            """<head><title>Welcome — Sphinx documentation</title></head><body><div class="body" role="main">
            <h1>Welcome</h1><p>Text.</p></div><div class="footer" role="contentinfo">© Copyright 2007-2023.
            Created using <a href="https://www.sphinx-doc.org/">Sphinx</a> 5.3.0.</div></body>""",
            {"site": "Sphinx", "version": "5.3.0"},
        ),
        (  # any other site: the tool's version is not the site's
            """<head><title>Welcome — Proj documentation</title></head><body><div class="body" role="main">
            <h1>Welcome</h1><p>Text.</p></div><div class="footer" role="contentinfo">© Copyright 2023.
            Created using <a href="https://www.sphinx-doc.org/">Sphinx</a> 5.3.0.</div></body>""",
            {"site": "Proj"},
        ),
    ],
    ids=["sidebar-current-version", "tool-is-the-site", "tool-is-not-the-site"],
)
def test_a_sidebar_or_the_tools_own_site_states_the_version(html: str, site: dict[str, str]) -> None:
    """Issue 45: Pygments states its version only in its sidebar, Sphinx's own site only as its builder's."""
    doc = parse_html(f"<html>{html}</html>", fallback_title="x")
    assert dict(doc.site) == site


def test_a_page_that_is_only_a_toctree_is_read_as_its_list_of_pages() -> None:
    """Issue 45: a Sphinx page whose body is its title and a toctree (simpy's Manuals, borg's book) was stored
    empty; a toctree beside the page's own text stays navigation."""
    toc = """<div class="toctree-wrapper compound"><ul><li class="toctree-l1"><a class="reference internal"
    href="Manuals/Manual.html">SimPy Manual</a></li><li class="toctree-l1"><a class="reference internal"
    href="Manuals/Tracing.html">Simulation with Tracing</a></li></ul></div>"""
    page = """<html><head><title>Manuals — SimPy 2.3.1 documentation</title></head><body><div class="body"
    role="main"><section id="manuals"><h1>Manuals<a class="headerlink" href="#manuals">¶</a></h1>{}{}</section>
    </div><div class="sphinxsidebar" role="navigation"><ul><li><a href="a.html">Other</a></li></ul></div></body>
    </html>"""
    _, texts, _, _ = _texts(page.format(toc, ""))
    assert texts == ["- SimPy Manual", "- Simulation with Tracing"]
    _, texts, _, _ = _texts(page.format(toc, "<p>The manuals of SimPy.</p>"))
    assert texts == ["The manuals of SimPy."]
    # borg's bootstrap theme: no main element; the toctree is inside a chrome-named container ("document body")
    borg = f"""<html><head><title>Borg documentation — Borg 1.2.4 documentation</title></head><body>
    <div class="related" role="navigation"><ul><li><a href="index.html">Borg</a></li></ul></div>
    <div class="sphinxsidebar"><ul><li><a href="i.html">Installation</a></li></ul></div><div id="right-column">
    <div class="document clearer body"><section id="borg"><h1>Borg documentation</h1>{toc}</section></div></div>
    <div class="footer">© Copyright 2010-2023 The Borg Collective.</div></body></html>"""
    _, texts, _, _ = _texts(borg)
    assert texts == ["- SimPy Manual", "- Simulation with Tracing"]


def test_a_docbook_page_that_is_only_its_table_of_contents_is_read_as_it() -> None:
    """Issue 45: nut-doc's FAQ index (its title and a ``div.toc``) was stored empty."""
    html = """<html><head><meta name="generator" content="DocBook XSL Stylesheets V1.79.2"><title>FAQ</title></head>
    <body><div class="navheader"><a accesskey="n" href="ar01s01.html">Next</a></div><div class="article">
    <div class="titlepage"><h2 class="title">FAQ</h2></div><div class="toc"><p><b>Table of Contents</b></p>
    <dl class="toc"><dt><span class="section"><a href="ar01s01.html">1. I just upgraded, and …</a></span></dt>
    <dt><span class="section"><a href="ar01s02.html">2. Which UPS should I buy?</a></span></dt></dl></div></div>
    </body></html>"""
    _, texts, _, _ = _texts(html)
    assert "2. Which UPS should I buy?" in texts


# A single-page makeinfo manual (libtool-doc's libtool.html, GNU Texinfo 6.8), cut down: the Top node with its
# Next/Previous/Up row, the table of contents, a chapter with its own row and list of sections, a section.
MAKEINFO_PAGE = """<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">
<html><!-- Created by GNU Texinfo 6.8, https://www.gnu.org/software/texinfo/ -->
<head><title>Libtool</title><meta name="Generator" content="makeinfo">
<link href="#SEC_Contents" rel="contents" title="Table of Contents"></head>
<body lang="en"><h1 class="settitle" align="center">Libtool</h1>
<div class="top" id="Top">
<div class="header"><p>Next: <a href="#Introduction" accesskey="n" rel="next">Introduction</a>, Previous:
<a href="dir.html#Top" accesskey="p" rel="prev">(dir)</a>, Up: <a href="dir.html#Top" accesskey="u" rel="up">(dir)</a>
&nbsp; [<a href="#SEC_Contents" title="Table of contents" rel="contents">Contents</a>][<a href="#Combined-Index"
title="Index" rel="index">Index</a>]</p></div>
<span id="Shared-library-support-for-GNU"></span><h1 class="top">Shared library support for GNU</h1>
<p>This file documents GNU Libtool, a script that allows package developers to provide generic shared library
support.  This edition documents version 2.4.7.</p>
<div class="Contents_element" id="SEC_Contents"><h2 class="contents-heading">Table of Contents</h2>
<div class="contents"><ul class="no-bullet">
<li><a id="toc-Introduction-1" href="#Introduction">1 Introduction</a><ul class="no-bullet">
<li><a id="toc-Motivation" href="#Motivation">1.1 Motivation for writing libtool</a></li></ul></li>
<li><a id="toc-Index" href="#Combined-Index" rel="index">Combined Index</a></li></ul></div></div>
<div class="Overview_element" id="SEC_Overview"><h2 class="shortcontents-heading">Short Table of Contents</h2>
<div class="shortcontents"><ul class="no-bullet"><li><a href="#Introduction">1 Introduction</a></li></ul></div>
</div>
<hr>
<div class="chapter" id="Introduction">
<div class="header"><p>Next: <a href="#Libtool-paradigm" accesskey="n" rel="next">The libtool paradigm</a>, Up:
<a href="#Top" accesskey="u" rel="up">Shared library support for GNU</a> &nbsp; [<a href="#SEC_Contents"
title="Table of contents" rel="contents">Contents</a>][<a href="#Combined-Index" rel="index">Index</a>]</p></div>
<span id="Introduction-1"></span><h2 class="chapter">1 Introduction</h2>
<p>In the past, if you were a source code package developer and wanted to take advantage of the power of shared
libraries, you needed to write custom support code for each platform on which your package ran.</p>
<ul class="section-toc"><li><a href="#Motivation" accesskey="1">Motivation for writing libtool</a></li></ul>
<hr>
<div class="section" id="Motivation">
<div class="header"><p>Next: <a href="#Issues" accesskey="n" rel="next">Implementation issues</a>, Up:
<a href="#Introduction" accesskey="u" rel="up">Introduction</a> &nbsp; [<a href="#SEC_Contents"
rel="contents">Contents</a>][<a href="#Combined-Index" rel="index">Index</a>]</p></div>
<span id="Motivation-for-writing-libtool"></span><h3 class="section">1.1 Motivation for writing libtool</h3>
<p>Since early 1995, several different GNU developers have recognized the importance of having shared library
support for their packages.</p>
<table class="menu" border="0" cellspacing="0"><tr><td align="left" valign="top">&bull;
<a href="#Issues" accesskey="1">Implementation issues</a>:</td><td>&nbsp;&nbsp;</td></tr></table>
</div></div></div>
</body></html>"""

# A texi2html page (gettext-doc's gettext_1.html, texi2html 1.78a), cut down: its rows of buttons above and
# below, a section, the "generated by" footer.
TEXI2HTML_PAGE = """<html><!-- Created on July, 26 2020 by texi2html 1.78a -->
<head><title>GNU gettext utilities: 1. Introduction</title><meta name="Generator" content="texi2html 1.78a"></head>
<body lang="en" bgcolor="#FFFFFF">
<table cellpadding="1" cellspacing="1" border="0">
<tr><td valign="middle" align="left">[<a href="gettext_28.html#INDEX1" title="Previous chapter"> &lt;&lt; </a>]</td>
<td valign="middle" align="left">[<a href="gettext_2.html#SEC7" title="Next chapter"> &gt;&gt; </a>]</td>
<td valign="middle" align="left"> &nbsp; </td>
<td valign="middle" align="left">[<a href="gettext_toc.html#SEC_Top" title="Cover (top) of document">Top</a>]</td>
<td valign="middle" align="left">[<a href="gettext_toc.html#SEC_Contents" title="Table of contents">Contents</a>]</td>
<td valign="middle" align="left">[<a href="gettext_abt.html#SEC_About" title="About (help)"> ? </a>]</td>
</tr></table>
<hr size="2">
<a name="Why"></a><a name="SEC2"></a>
<h2 class="section"> <a href="gettext_toc.html#TOC2">1.1 The Purpose of GNU <code>gettext</code></a> </h2>
<p>Usually, programs are written and documented in English, and use English at execution time to interact with
users.</p>
<table><tr><td>&nbsp;</td><td><pre class="example">#define _(String) gettext (String)
</pre></td></tr></table>
<hr size="6">
<table cellpadding="1" cellspacing="1" border="0">
<tr><td valign="middle" align="left">[<a href="#SEC1" title="Beginning of this chapter"> &lt;&lt; </a>]</td>
<td valign="middle" align="left">[<a href="gettext_toc.html#SEC_Contents" title="Table of contents">Contents</a>]</td>
</tr></table>
<p>
 <font size="-1">
  This document was generated by <em>Bruno Haible</em> on <em>July, 26 2020</em> using
  <a href="https://www.nongnu.org/texi2html/"><em>texi2html 1.78a</em></a>.
 </font>
 <br>
</p>
</body></html>"""


def test_a_texinfo_manuals_navigation_and_tables_of_contents_are_chrome() -> None:
    title, paragraphs, headings, site = _texts(MAKEINFO_PAGE)
    text = "\n".join(paragraphs)
    assert title == "Libtool" and site == {"generator": "texinfo", "version": "2.4.7"}
    for chrome in ("Next:", "Previous:", "Up:", "[Contents]", "Table of Contents", "1.1 Motivation for writing",
                   "Implementation issues", "Short Table"):  # fmt: skip
        assert chrome not in text, chrome
    assert not [h for h in headings if any("Contents" in x for x in h)], headings
    assert "This edition documents version 2.4.7." in text
    assert any("shared library support for their packages" in p for p in paragraphs)
    assert ("Shared library support for GNU", "1 Introduction", "1.1 Motivation for writing libtool") in headings
    title, paragraphs, headings, site = _texts(TEXI2HTML_PAGE)
    text = "\n".join(paragraphs)
    assert (title, site) == ("1. Introduction", {"generator": "texinfo", "site": "GNU gettext utilities"})
    for chrome in ("<<", ">>", "[Top]", "[Contents]", "[ ? ]", "This document was generated"):
        assert chrome not in text, chrome
    assert "Usually, programs are written" in text and "#define _(String) gettext (String)" in text
    assert headings[-1] == ("1.1 The Purpose of GNU gettext",)


# bash-doc's bashref.html (makeinfo 6.8), cut down: a section, then the Indexes appendix with one @printindex
# (its "Jump to:" rows of summary letters around a table of entry -> section links).
MAKEINFO_INDEX_PAGE = """<html><head><title>Bash Reference Manual</title><meta name="Generator" content="makeinfo">
</head><body lang="en"><div class="section" id="Special-Parameters"><h3 class="section">3.4.2 Special Parameters</h3>
<p>The shell treats several parameters specially.  These parameters may only be referenced.</p></div>
<div class="appendix" id="Indexes"><h2 class="appendix">Appendix D Indexes</h2>
<div class="appendixsec" id="Variable-Index"><h3 class="appendixsec">D.3 Parameter and Variable Index</h3>
<table><tr><th valign="top">Jump to: &nbsp; </th><td><a class="summary-letter" href="#Variable-Index_vr_symbol-1">
<b>!</b></a> &nbsp; <a class="summary-letter" href="#Variable-Index_vr_letter-B"><b>B</b></a> &nbsp;
<a class="summary-letter" href="#Variable-Index_vr_letter-P"><b>P</b></a></td></tr></table>
<table class="index-vr" border="0">
<tr><td></td><th align="left">Index Entry</th><td>&nbsp;</td><th align="left"> Section</th></tr>
<tr><th id="Variable-Index_vr_symbol-1">!</th><td></td><td></td></tr>
<tr><td></td><td valign="top"><a href="#index-_0021-1"><code>!</code></a>:</td><td>&nbsp;</td>
<td valign="top"><a href="#Special-Parameters">Special Parameters</a></td></tr>
<tr><th id="Variable-Index_vr_letter-B">B</th><td></td><td></td></tr>
<tr><td></td><td valign="top"><a href="#index-BASH_005fALIASES"><code>BASH_ALIASES</code></a>:</td><td>&nbsp;</td>
<td valign="top"><a href="#Bash-Variables">Bash Variables</a></td></tr>
<tr><th id="Variable-Index_vr_letter-P">P</th><td></td><td></td></tr>
<tr><td></td><td valign="top"><a href="#index-PATH"><code>PATH</code></a>:</td><td>&nbsp;</td>
<td valign="top"><a href="#Bourne-Shell-Variables">Bourne Shell Variables</a></td></tr></table>
<table><tr><th valign="top">Jump to: &nbsp; </th><td><a class="summary-letter" href="#Variable-Index_vr_symbol-1">
<b>!</b></a> &nbsp; <a class="summary-letter" href="#Variable-Index_vr_letter-B"><b>B</b></a></td></tr></table>
</div></div></body></html>"""

# bash-doc's bash.html (man2html), cut down: a section, then the page's index (a list of links to its own
# sections) under its heading, and the credit line.
MAN2HTML_PAGE = """Content-type: text/html; charset=UTF-8

<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">
<HTML><HEAD><TITLE>Man page of BASH</TITLE></HEAD><BODY><H1>BASH</H1>
Section: User Commands  (1)<BR>Updated: 2022 September 19<BR><A HREF="#index">Index</A>
<A HREF="/cgi-bin/man/man2html">Return to Main Contents</A><HR>
<A NAME="lbAB">&nbsp;</A><H2>NAME</H2>bash - GNU Bourne-Again SHell
<A NAME="lbAC">&nbsp;</A><H2>SYNOPSIS</H2><B>bash</B> [options] [command_string | file]
<A NAME="lbAK">&nbsp;</A><H2>SHELL GRAMMAR</H2><A NAME="lbAL">&nbsp;</A><H3>Simple Commands</H3><P>
A <I>simple command</I> is a sequence of optional variable assignments followed by blank-separated words.
<HR><A NAME="index">&nbsp;</A><H2>Index</H2>
<DL>
<DT><A HREF="#lbAB">NAME</A><DD>
<DT><A HREF="#lbAC">SYNOPSIS</A><DD>
<DT><A HREF="#lbAK">SHELL GRAMMAR</A><DD>
<DL>
<DT><A HREF="#lbAL">Simple Commands</A><DD>
</DL>
</DL>
<HR>
This document was created by
<A HREF="/cgi-bin/man/man2html">man2html</A>,
using the manual pages.<BR>
Time: 12:06:21 GMT, January 02, 2023
</BODY></HTML>"""


def test_a_texinfo_manuals_generated_index_is_chrome() -> None:
    """The newcomer test after issue 45: bashref.html's five @printindex tables were stored as 21 chunks titled
    ``Appendix D Indexes › D.3 Parameter and Variable Index`` (and admitted as evidence)."""
    _, paragraphs, headings, _ = _texts(MAKEINFO_INDEX_PAGE)
    text = "\n".join(paragraphs)
    for chrome in ("Jump to", "Index Entry", "BASH_ALIASES", "Bourne Shell Variables"):
        assert chrome not in text, chrome
    assert not [h for h in headings if "D.3 Parameter and Variable Index" in h], headings
    assert "The shell treats several parameters specially." in text
    # the same table on a page no Texinfo made is a table like any other
    plain = MAKEINFO_INDEX_PAGE.replace('<meta name="Generator" content="makeinfo">', "")
    assert "Index Entry" in "\n".join(_texts(plain)[1])


def test_man2html_page_header_is_no_text() -> None:
    """bash.html's first chunk was man2html's header, ``Section: User Commands (1) Updated: 2022 September 19
    Index Return to Main Contents`` (a link to the CGI that served the page). A page that only names man2html in
    its text keeps that text."""
    _, paragraphs, _, _ = _texts(MAN2HTML_PAGE)
    text = " ".join(" ".join(paragraphs).split())
    for chrome in ("Return to Main Contents", "Section: User Commands", "Updated: 2022"):
        assert chrome not in text, chrome
    assert paragraphs[0].startswith("bash - GNU Bourne-Again SHell"), paragraphs[:2]
    prose = """<html><body><h1>Tools</h1><p>Pages were converted with <a href="/cgi-bin/man/man2html">man2html</a>
    over the years.</p><h2>More</h2><p>Text.</p></body></html>"""
    assert "converted with man2html over the years" in " ".join(" ".join(_texts(prose)[1]).split())


def test_a_list_of_links_to_the_pages_own_sections_is_chrome() -> None:
    """man2html's page index (``<H2>Index</H2>`` over a ``<DL>`` of ``#lbAB`` links): chrome on any page, with
    the heading that heads only it; a list of links to other pages, or with text of its own, stays."""
    _, paragraphs, headings, _ = _texts(MAN2HTML_PAGE)
    text = "\n".join(paragraphs)
    assert not [h for h in headings if h and h[-1] == "Index"], headings
    assert "NAME SYNOPSIS" not in " ".join(text.split()), text
    assert "bash - GNU Bourne-Again SHell" in text and "optional variable assignments" in text
    assert ("SHELL GRAMMAR", "Simple Commands") in headings
    assert "man2html" not in text and "12:06:21" not in text  # the credit line after it is no section's text
    links = MAN2HTML_PAGE.replace('HREF="#lbA', 'HREF="other.html#lbA')
    assert "SHELL GRAMMAR" in " ".join(" ".join(_texts(links)[1]).split())
    described = MAN2HTML_PAGE.replace("</A><DD>", "</A><DD>what this section of the manual says")
    assert "what this section of the manual says" in "\n".join(_texts(described)[1])
    # aiohttp's "Hierarchy of exceptions": links to the classes the page documents, written by its authors
    hierarchy = """<html><body><h2>Client exceptions</h2><p>Exceptions the client raises.</p>
    <h3>Hierarchy of exceptions</h3><ul><li><a href="#aiohttp.ClientError"><code>ClientError</code></a><ul>
    <li><a href="#aiohttp.ClientResponseError"><code>ClientResponseError</code></a></li>
    <li><a href="#aiohttp.ClientPayloadError"><code>ClientPayloadError</code></a></li></ul></li></ul></body></html>"""
    _, paragraphs, headings, _ = _texts(hierarchy)
    assert "ClientPayloadError" in "\n".join(paragraphs) and headings[-1][-1] == "Hierarchy of exceptions"


def test_a_split_texinfo_pages_title_is_its_nodes_and_names_the_manual_and_version() -> None:
    named = clean_title(
        "Patterns (Lexical Analysis With Flex, for Flex 2.6.4)", heading="6 Patterns", generator="texinfo"
    )
    assert (named.title, named.site, named.version) == ("Patterns", "Lexical Analysis With Flex, for Flex", "2.6.4")
    top = clean_title("Top (The GNU Awk User's Guide)", heading="General Introduction", generator="texinfo")
    assert (top.title, top.site, top.version) == ("General Introduction", "The GNU Awk User's Guide", "")
    # a node whose own name ends in brackets, on a page no Texinfo made, is left as it is
    assert clean_title("Options (advanced)", heading="Options (advanced)", generator=None).title == "Options (advanced)"


def test_a_texinfo_page_that_is_only_a_heading_and_its_list_of_sections_is_read_as_it() -> None:
    """flex-doc's Appendices.html: the node's row, its heading, its ``ul.section-toc``."""
    page = """<html><head><title>Appendices (The Flex Manual)</title><meta name="Generator" content="makeinfo">
    </head><body><div class="appendix" id="Appendices"><div class="header"><p>Next: <a href="Indices.html">Indices
    </a>, Up: <a href="index.html">flex</a></p></div><hr><h2 class="appendix">Appendix A Appendices</h2>
    <ul class="section-toc"><li><a href="Makefiles-and-Flex.html" accesskey="1">Makefiles and Flex</a></li>
    <li><a href="Bison-Bridge.html" accesskey="2">C Scanners with Bison Parsers</a></li></ul></div></body></html>"""
    _, paragraphs, _, _ = _texts(page)
    text = "\n".join(paragraphs)
    assert "C Scanners with Bison Parsers" in text and "Next:" not in text


def test_a_texinfo_page_that_is_only_its_table_of_contents_is_read_as_it() -> None:
    """texi2html's gettext_toc.html: the buttons, the title, "Table of Contents" and the list of nodes."""
    page = """<html><head><title>GNU gettext utilities: Table of Contents</title>
    <meta name="Generator" content="texi2html 1.78a"></head><body>
    <table cellpadding="1" cellspacing="1" border="0"><tr><td>[<a href="#SEC_Top">Top</a>]</td></tr></table>
    <h1 class="settitle">GNU <code>gettext</code> utilities</h1><a name="SEC_Contents"></a><h1>Table of Contents</h1>
    <div class="contents"><ul class="toc"><li><a name="TOC1" href="gettext_1.html#SEC1">1. Introduction</a>
    <ul class="toc"><li><a name="TOC2" href="gettext_1.html#SEC2">1.1 The Purpose of GNU gettext</a></li></ul></li>
    </ul></div></body></html>"""
    _, paragraphs, _, _ = _texts(page)
    text = "\n".join(paragraphs)
    assert "1.1 The Purpose of GNU gettext" in text and "[Top]" not in text
    # the real page holds the Top node's paragraph after it: that is its text, and states the version
    top = """</div><a name="Top"></a><a name="SEC_Top"></a><p>This manual documents the GNU gettext tools and the
    GNU libintl library, version 0.21.</p></body>"""
    _, paragraphs, _, site = _texts(page.replace("</div></body>", top))
    assert site["version"] == "0.21"  # the Top node's paragraph, after texi2html's <a name="Top">
    assert paragraphs == ["This manual documents the GNU gettext tools and the GNU libintl library, version 0.21."]


def test_a_doxygen_pages_title_sign_and_generated_indexes() -> None:
    """libxkbcommon-doc (Doxygen 1.9, a C library): ``libxkbcommon: Keymap Components`` is the page
    ``Keymap Components`` of the site ``libxkbcommon``; each member's ``◆`` permalink is no part of its heading."""
    html = """<html><head><meta name="generator" content="Doxygen 1.9.4"><title>libxkbcommon: Keymap Components
    </title></head><body><div class="header"><div class="headertitle"><div class="title">Keymap Components</div>
    </div></div><div class="contents"><p>Enumeration of state components in a keymap.</p>
    <h2 class="memtitle"><span class="permalink"><a href="#ga331a902b6b73defba931115e684b4180">&#9670;&nbsp;</a>
    </span>xkb_keymap_min_keycode()</h2><div class="memitem"><p>Get the minimum keycode in the keymap.</p></div>
    </div></body></html>"""
    title, texts, headings, site = _texts(html)
    assert (title, site.get("site")) == ("Keymap Components", "libxkbcommon")
    assert ("xkb_keymap_min_keycode()",) in headings
    assert not any("◆" in h for hs in headings for h in hs) and not any("◆" in t for t in texts)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("globals_func.html", "search_index_pages"),
        ("functions.html", "search_index_pages"),
        ("functions_vars.html", "search_index_pages"),
        ("graph_legend.html", "search_index_pages"),
        ("classes.html", "search_index_pages"),
        ("group__keymap.html", None),
        ("structxkb__state.html", None),
        ("annotated.html", None),
    ],
)
def test_doxygens_generated_indexes_are_index_pages(tmp_path: Path, name: str, kind: str | None) -> None:
    (tmp_path / "doxygen.css").write_text("", "utf-8")
    f = tmp_path / name
    f.write_text("<html></html>", "utf-8")
    assert SiteFilter().kind(f, name, in_folder=True) == kind
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / name).write_text("<html></html>", "utf-8")  # no doxygen.css beside it: a page of that name
    assert SiteFilter().kind(plain / name, f"plain/{name}", in_folder=True) is None


def test_a_page_named_for_its_language_takes_its_languages_home_page_version(tmp_path: Path) -> None:
    """maint-guide (DocBook, one build per language): ``dreq.en.html`` states no version; ``index.en.html``'s
    title page does."""
    from admit.kb.home import HomeVersions

    gen = '<meta name="generator" content="DocBook XSL Stylesheets Vsnapshot">'
    (tmp_path / "index.en.html").write_text(
        f"""<html><head>{gen}<title>Debian New Maintainers' Guide</title></head><body><div class="book">
        <div class="titlepage"><h1 class="title">Debian New Maintainers' Guide</h1>
        <p class="releaseinfo">version 1.2.53</p></div><p>Text.</p></div></body></html>""",
        "utf-8",
    )
    (tmp_path / "index.fr.html").write_text(
        f"""<html><head>{gen}<title>Guide</title></head><body><div class="book"><div class="titlepage">
        <p class="releaseinfo">version 1.2.52</p></div><p>Texte.</p></div></body></html>""",
        "utf-8",
    )
    homes = HomeVersions()
    assert homes.version_for(tmp_path / "dreq.en.html", tmp_path) == "1.2.53"
    assert homes.version_for(tmp_path / "dreq.fr.html", tmp_path) == "1.2.52"
    assert homes.version_for(tmp_path / "dreq.html", tmp_path) == ""  # no index.html: no home page


def test_a_title_page_that_states_its_version_is_not_given_it_twice() -> None:
    html = """<html><head><meta name="generator" content="DocBook XSL Stylesheets Vsnapshot">
    <title>Debian New Maintainers' Guide</title></head><body><div class="book"><div class="titlepage">
    <h1 class="title">Debian New Maintainers' Guide</h1><div class="author"><h3 class="author">Josip Rodin</h3>
    </div><p class="releaseinfo">version 1.2.53</p></div></div></body></html>"""
    _, texts, _, site = _texts(html)
    assert site["version"] == "1.2.53"
    assert sum("1.2.53" in t for t in texts) == 1, texts


def test_a_definition_terms_classifier_follows_a_colon() -> None:
    """python-nbclient-doc's config_options page: ``NbClientApp.allow_errors : Bool`` (docutils'
    ``span.classifier``, its colon drawn by CSS) was stored ``NbClientApp.allow_errorsBool``."""
    html = """<html><head><meta name="generator" content="Docutils 0.19: https://docutils.sourceforge.io/">
    <title>Options - nbclient 0.7.2 documentation</title></head><body><div role="main"><h1>Options</h1><dl>
    <dt>NbClientApp.allow_errors<span class="classifier">Bool</span></dt><dd><p>Default: <code>False</code></p>
    </dd></dl></div></body></html>"""
    _, texts, _, _ = _texts(html)
    assert "NbClientApp.allow_errors : Bool" in texts


def test_a_split_pages_numbered_heading_that_says_its_title_is_the_title_not_a_section() -> None:
    """flex-doc's ``A Note About yytext And Memory`` page opens with ``21.3 A Note About yytext And Memory``: its
    chunks were titled ``A Note About yytext And Memory › 21.3 A Note About yytext And Memory``."""
    page = """<html><head><title>{title} (Lexical Analysis With Flex, for Flex 2.6.4)</title>
    <meta name="Generator" content="makeinfo"></head><body><div class="section" id="x"><div class="header"><p>
    Next: <a href="n.html">Next</a></p></div><h3 class="section">{heading}</h3><p>Body text.</p></div></body></html>"""
    for title, heading in (
        ("A Note About yytext And Memory", "21.3 A Note About yytext And Memory"),
        ("Appendices", "Appendix A Appendices"),
        ("Actions", "8 Actions"),
    ):
        got, texts, headings, site = _texts(page.format(title=title, heading=heading))
        assert (got, texts, headings, site["version"]) == (title, ["Body text."], [()], "2.6.4")
    # a heading that only starts like a number is another section
    _, _, headings, _ = _texts(page.format(title="Wanted", heading="I Wanted"))
    assert headings == [("I Wanted",)]


def test_a_project_theme_with_mkdocs_search_is_read_as_mkdocs() -> None:
    """Django REST framework's own MkDocs theme names no generator: its search box says MkDocs, so the page's title
    loses the site's suffix and the navigation bar is no chunk (before: 'Views - Django REST framework' and a
    'GitHub Next Previous Search ...' chunk on every page)."""
    page = """<html><head><title>Views - Django REST framework</title></head><body>
    <div class="navbar"><div class="container"><a href="https://github.com/x">GitHub</a>
      <ul class="nav"><li><a href="../x/">Next</a></li><li><a href="../y/">Previous</a></li>
      <li><a href="#mkdocs_search_modal">Search</a></li></ul>
      <a class="brand" href="/">Django REST framework</a>
      <ul class="dropdown-menu"><li><a href="/a/">Home</a></li><li><a href="/b/">Tutorial</a></li>
      <li><a href="/c/">Serializers</a></li><li><a href="/d/">Views</a></li></ul></div></div>
    <div class="container"><div class="side-nav"><ul><li><a href="#cbv">Class-based Views</a></li></ul></div>
    <div id="main-content" class="span9">
      <h1 id="class-based-views">Class-based Views</h1>
      <p>REST framework provides an APIView class, which subclasses Django's View class, and differs from it.</p>
      <p>Requests passed to the handler methods will be REST framework's Request instances.</p>
    </div></div>
    <div class="modal" id="mkdocs_search_modal"><input id="mkdocs-search-query" placeholder="Search"></div>
    </body></html>"""
    doc = parse_html(page, fallback_title="views")
    assert doc.title == "Views"
    assert doc.site.get("generator") == "mkdocs" and doc.site.get("site") == "Django REST framework"
    text = " ".join(str(s) for s in doc.sections)
    assert "APIView class" in text
    assert "Previous" not in text and "Tutorial" not in text


def test_a_cgi_header_before_the_markup_is_no_text() -> None:
    """bash-doc's bash.html opens with man2html's ``Content-type: text/html; charset=UTF-8`` line and a blank
    line: it was the first words of the page's first chunk. Header lines before markup go; a page that opens with
    prose, or a header with no markup after it, keeps its text."""
    assert "Content-type" not in "\n".join(_texts(MAN2HTML_PAGE)[1])
    assert strip_cgi_header("\ufeffContent-Type: text/html\r\nStatus: 200\r\n\r\n<html><p>x</p>") == "<html><p>x</p>"
    for kept in ("Note: read this first\n\n<p>x</p>", "Content-type: text/html\n\nplain words", "<p>a</p>\n\n<p>"):
        assert strip_cgi_header(kept) == kept


def test_a_sphinx_sites_release_is_read_from_its_documentation_options(tmp_path: Path) -> None:
    """python-pytest-doc 7.2.1 (Sphinx): no page states the release; ``_static/documentation_options.js`` does
    (``VERSION: '7.2'``), and every chunk of the site was stored with no version."""
    from admit.kb.home import HomeVersions

    (tmp_path / "index.html").write_text(
        "<html><head><title>pytest documentation</title></head><body><h1>pytest</h1><p>Text.</p></body></html>",
        "utf-8",
    )
    (tmp_path / "how-to").mkdir()
    (tmp_path / "_static").mkdir()
    options = tmp_path / "_static" / "documentation_options.js"
    options.write_text("var DOCUMENTATION_OPTIONS = {\n    URL_ROOT: '',\n    VERSION: '7.2',\n    LANGUAGE: 'en',\n};")
    assert HomeVersions().version_for(tmp_path / "how-to" / "fixtures.html", tmp_path) == "7.2"
    options.write_text("var DOCUMENTATION_OPTIONS = {VERSION: '', LANGUAGE: 'en'};")  # none stated: none read
    assert HomeVersions().version_for(tmp_path / "how-to" / "fixtures.html", tmp_path) == ""
    options.write_text("var DOCUMENTATION_OPTIONS = {VERSION: '" + "9" * 5000 + "'};")  # not a release
    assert HomeVersions().version_for(tmp_path / "how-to" / "fixtures.html", tmp_path) == ""


# sqlite3-doc 3.40.1's wal.html, cut down: the site's banner, menus and search box, and the page's own table of
# contents, each inside ``<div class=nosearch>`` (what sqlite.org's own search leaves out); no generator is named.
SQLITE_PAGE = """<!DOCTYPE html><html><head><title>Write-Ahead Logging</title></head><body>
<div class=nosearch><a href="index.html"><img class="logo" src="images/sqlite370_banner.gif" alt="SQLite"></a>
<div class="tagline desktoponly">Small. Fast. Reliable.<br>Choose any three.</div>
<div class="menu mainmenu"><ul><li><a href="index.html">Home</a><li><a href='about.html'>About</a>
<li><a href="docs.html">Documentation</a><li><a href="download.html">Download</a></ul></div>
<div class="searchmenu" id="searchmenu"><form method="GET" action="search"><input type="text" name="q"></form></div>
</div>
<div class=fancy><div class=nosearch><div class="fancy_title">Write-Ahead Logging</div>
<div class="fancy_toc"><a onclick="toggle_toc()"><span class="fancy_toc_mark">&#x25ba;</span>Table Of Contents</a>
<div id="toc_sub"><div class="fancy-toc1"><a href="#overview">1. Overview</a></div>
<div class="fancy-toc1"><a href="#activating">2. Activating And Configuring WAL Mode</a></div></div></div></div>
<h1 id="overview"><span>1. </span>Overview</h1>
<p>The default method by which SQLite implements atomic commit and rollback is a rollback journal.</p>
<h1 id="activating"><span>2. </span>Activating And Configuring WAL Mode</h1>
<p>An SQLite database connection defaults to journal_mode=DELETE. To convert to WAL mode, use the following
pragma: PRAGMA journal_mode=WAL;</p></div></body></html>"""


def test_what_a_sites_own_search_leaves_out_is_chrome() -> None:
    """sqlite3-doc: 139 of its chunks began with the banner and menus (``Small. Fast. Reliable. Choose any
    three. - Home - Menu - About ...``), and each page's table of contents was text."""
    title, paragraphs, headings, _ = _texts(SQLITE_PAGE)
    text = "\n".join(paragraphs)
    for chrome in ("Small. Fast. Reliable", "Home", "Download", "Table Of Contents", "1. Overview"):
        assert chrome not in text, chrome
    assert title == "Write-Ahead Logging"
    assert "PRAGMA journal_mode=WAL;" in text and "rollback journal" in text
    assert ("2. Activating And Configuring WAL Mode",) in headings
    # the same page without the mark keeps its words (no generator: a theme's class words are not trusted)
    assert "Small. Fast. Reliable" in "\n".join(_texts(SQLITE_PAGE.replace("nosearch", "banner-box"))[1])

"""Built documentation sites: their documentation, not the site around it.

A folder built by Sphinx, MkDocs, Docusaurus, Hugo, DocBook XSL, AsciiDoc or Javadoc holds, besides its pages,
copies of the sources (Sphinx ``_sources/``), highlighted code (``_modules/``), assets, search and index pages;
and each page wraps its text in navigation, sidebars, headers, footers, breadcrumbs, tables of contents and
permalink signs (``¶``). Ingesting that as it is stores the sidebar in a hundred chunks and ``¶`` in every title.

Two parts, both linear in their input:

* :class:`SiteFilter` decides, from a file's path under the ingested folder (and the names beside it), whether
  the file is not documentation at all, and of which kind (:data:`SKIP_KINDS`); ``--exclude GLOB`` adds the
  user's own.
* :func:`scan_page` reads a parsed HTML page once: which generator made it (the ``generator`` meta tag or the
  classes and ids its themes use), its main content element, the elements to drop (navigation, sidebars, search
  boxes, "edit on GitHub", breadcrumbs, tables of contents, permalink anchors), the site's name and version,
  and whether the page is a search, index or directory-listing page. :func:`clean_title` takes the site-name
  and version suffix off the page's title (``Configuration — Black 23.1.0 documentation`` -> ``Configuration``).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from admit import _linear

__all__ = [
    "SKIP_KINDS",
    "PageScan",
    "SiteFilter",
    "SiteTitle",
    "clean_title",
    "count_kinds",
    "drop_chrome",
    "scan_page",
    "site_info",
    "skip_line",
    "strip_signs",
]

SKIP_KINDS: dict[str, str] = {
    "excluded": "file(s) matching --exclude",
    "sphinx_sources": "Sphinx source copies (_sources/)",
    "sphinx_modules": "Sphinx highlighted-source pages (_modules/)",
    "asciidoc_sources": "AsciiDoc sources beside the HTML pages they build (.txt)",
    "site_assets": "site assets (_static/, _images/, search indexes, sitemaps, scripts, styles, fonts)",
    "search_index_pages": "search/index pages (search, genindex, module index, 404, directory listings)",
    "redirects": "redirect stubs (meta refresh)",
}
"""Kinds of files an ingest run leaves out as not documentation -> what the report calls them."""


def skip_line(kind: str, n: int) -> str:
    """The report's line for ``n`` files of one kind: ``skipped 37 Sphinx source copies (_sources/)``."""
    return f"skipped {n} {SKIP_KINDS.get(kind, kind)}"


# ---------------------------------------------------------------------------------------------------- files

_ASSET_DIRS = frozenset({"_static", "_images", "_downloads"})
"""Folders of a Sphinx build that hold no page (``_downloads``: files the pages link to)."""
_ASSET_NAMES = frozenset(
    {"objects.inv", "searchindex.js", "search_index.json", "sitemap.xml", "sitemap.xml.gz", ".buildinfo"}
)
_ASSET_SUFFIXES = frozenset({".js", ".mjs", ".css", ".map", ".woff", ".woff2", ".ttf", ".eot", ".otf", ".inv"})
_INDEX_PAGES = frozenset({"genindex.html", "py-modindex.html", "modindex.html", "404.html", "404.htm"})
_SITE_MARKERS = frozenset({"searchindex.js", "objects.inv", "sitemap.xml", "_static", "search"})
"""Names beside a site's root page: a ``search.html`` there is the site's search page (not a page on search)."""
_SOURCE_SUFFIXES = (".txt",)


@dataclass(slots=True)
class SiteFilter:
    """Which walked files are not documentation: a kind of :data:`SKIP_KINDS`, or ``None`` to ingest the file.

    Args:
        exclude: Globs (``fnmatch``) matched against the path relative to the ingested folder (a named file: its
            name); a glob that matches a folder leaves out what it holds (``--exclude 'releases'``).
    """

    exclude: Sequence[str] = ()
    _listing: dict[Path, frozenset[str]] = field(default_factory=dict)
    _sources: dict[Path, bool] = field(default_factory=dict)

    def _names(self, folder: Path) -> frozenset[str]:
        names = self._listing.get(folder)
        if names is None:
            try:
                names = frozenset(os.listdir(folder))
            except OSError:
                names = frozenset()
            self._listing[folder] = names
        return names

    def excluded(self, rel: str) -> bool:
        """Whether ``rel`` (or a folder above it) matches an ``--exclude`` glob."""
        if not self.exclude:
            return False
        parts = rel.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(fnmatch.fnmatchcase(p, g) for g in self.exclude for p in prefixes)

    def kind(self, f: Path, rel: str, *, in_folder: bool) -> str | None:
        """The kind of file ``f`` (``rel``: its path under the ingested folder) is, when it is not documentation.

        A file named on the command line (``in_folder`` false) is left out only by ``--exclude``: naming it says
        it is wanted.
        """
        if self.excluded(rel):
            return "excluded"
        if not in_folder:
            return None
        parts = rel.split("/")
        dirs, name = parts[:-1], parts[-1].lower()
        if "_sources" in dirs:
            return "sphinx_sources"
        if "_modules" in dirs:
            # Sphinx's viewcode pages: the package's source, highlighted, one span per token; the API pages
            # already carry the docstrings, and the code is better ingested from the code itself
            return "sphinx_modules"
        if _ASSET_DIRS.intersection(dirs) or name in _ASSET_NAMES or f.suffix.lower() in _ASSET_SUFFIXES:
            return "site_assets"
        if dirs and dirs[-1] == "search" and name.endswith((".json", ".js")):
            return "site_assets"
        if name in _INDEX_PAGES or (name.startswith("genindex") and name.endswith(".html")):
            return "search_index_pages"
        if name.endswith("-modindex.html"):
            return "search_index_pages"
        if name in ("search.html", "search.htm") and _SITE_MARKERS.intersection(self._names(f.parent)):
            return "search_index_pages"
        if f.suffix.lower() in _SOURCE_SUFFIXES and self._source_folder(f.parent):
            # git-add.txt beside git-add.html: the page's AsciiDoc source; config.txt in that folder: a fragment
            # the pages include (git-config.html holds its text)
            return "asciidoc_sources"
        return None

    def _source_folder(self, folder: Path) -> bool:
        """Whether ``folder``'s ``.txt`` files are the sources of its HTML pages: at least two have an ``.html``
        twin, and at least half of them do (the others are fragments those pages include)."""
        known = self._sources.get(folder)
        if known is None:
            names = self._names(folder)
            txt = [n for n in names if n.endswith(".txt")]
            twins = sum(1 for n in txt if f"{n[:-4]}.html" in names)
            known = self._sources[folder] = twins >= 2 and 2 * twins >= len(txt)
        return known


# ---------------------------------------------------------------------------------------------------- pages

_DROP_CLASSES = frozenset(
    {
        # permalink anchors
        "headerlink", "hash-link", "anchorjs-link", "header-anchor", "heading-anchor", "anchor-link",
        # Sphinx: sidebars, relation bars, toctrees, local contents, footers, search boxes
        "sphinxsidebar", "sphinxsidebarwrapper", "related", "relbar", "relbar-top", "relbar-bottom",
        "toctree-wrapper", "footer", "searchbox", "clearer", "globaltoc", "localtoc",
        # read-the-docs theme
        "wy-nav-side", "wy-side-nav-search", "wy-breadcrumbs", "wy-nav-top", "rst-footer-buttons", "rst-versions",
        # furo
        "sidebar-drawer", "toc-drawer", "related-pages", "edit-this-page", "view-this-page", "mobile-header",
        "sidebar-container", "sidebar-tree", "bottom-of-page", "skip-to-content", "back-to-top",
        # pydata
        "bd-sidebar", "bd-sidebar-primary", "bd-sidebar-secondary", "bd-header", "bd-footer", "bd-header-article",
        "header-article", "prev-next-area", "prev-next-footer", "bd-footer-article", "bd-search",
        # MkDocs themes and Material
        "bs-sidebar", "navbar", "md-sidebar", "md-header", "md-footer", "md-search", "md-source-file",
        "md-content__button", "md-top", "md-skip", "md-tabs", "md-path", "md-nav",
        # Docusaurus
        "theme-doc-breadcrumbs", "theme-edit-this-page", "theme-doc-toc-mobile", "theme-doc-toc-desktop",
        "table-of-contents", "pagination-nav", "theme-doc-footer", "theme-last-updated", "theme-doc-version-badge",
        "theme-doc-version-banner", "breadcrumbs", "breadcrumb",
        # DocBook XSL, AsciiDoc: navigation rows, tables of contents
        "navheader", "navfooter", "toc",
        # Javadoc
        "topNav", "subNav", "bottomNav", "navList", "top-nav", "sub-nav", "bottom-nav", "flex-header",
        # Django's theme: previous / up / next rows
        "nav",
        # screen-reader-only text ("Skip to content", "Toggle navigation")
        "sr-only", "visually-hidden", "screen-reader-text",
        # dialogs (MkDocs' keyboard-shortcut and search modals)
        "modal",
    }
)  # fmt: skip
_DROP_IDS = frozenset(
    {"hd", "ft", "footer", "footer-text", "sidebar", "searchbox", "toc", "toctitle", "global-nav", "navbar",
     "rtd-search-form", "search-form", "breadcrumbs", "skip-link", "docs-sidebar", "related", "navigation"}
)  # fmt: skip
_SECTIONS = frozenset({"section", "h1", "h2", "h3", "h4", "h5", "h6", "dt"})
_DROP_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary"})
_DROP_TAGS = frozenset({"form", "button", "input", "select", "dialog"})
_PERMALINK_SIGNS = frozenset({"¶", "#", "🔗", "§", "\u200b", "🔗︎", "link"})
_PERMALINK_TITLES = ("permalink", "permanent link", "direct link", "link to this")

_MAIN_CLASSES = frozenset({"md-content__inner", "theme-doc-markdown", "bd-article", "document-content"})
"""Main content, by class, before any ``role="main"``: Material's article, Docusaurus', pydata's."""

_GENERATORS = (
    ("mkdocs-material", "mkdocs-material"),
    ("mkdocs", "mkdocs"),
    ("sphinx", "sphinx"),
    ("docusaurus", "docusaurus"),
    ("hugo", "hugo"),
    ("docbook", "docbook"),
    ("asciidoc", "asciidoc"),
    ("javadoc", "javadoc"),
    ("jekyll", "jekyll"),
    ("pydoc", "pydoc"),
)
"""Substrings of a ``<meta name="generator">`` -> the generator's name (first match wins)."""

_DOCS_TITLE = _linear.compile(
    r"(?i)^(?:(.*\S)\s+(?:—|–|-|\||·|::)\s+)?(\S.*?)\s+documentation$",
    name="docsite.title_suffix",
)
"""``Page — Site 1.2 documentation`` (Sphinx's ``title — docstitle``) or the docstitle alone."""
_SITE_VERSION = _linear.compile(r"(?i)^(.*?\S)\s+v?(\d+(?:\.[0-9A-Za-z+-]+)*)$", name="docsite.site_version")
"""``Black 23.1.0`` -> ``Black``, ``23.1.0``."""
_BARE_VERSION = _linear.compile(r"(?i)^v?(\d+(?:\.[0-9A-Za-z+-]+)*)$", name="docsite.bare_version")
"""A docstitle that is a version alone (Python's ``3.11.2 Documentation``)."""
_SEPARATOR = _linear.compile(r"^\s*(?:—|–|-|\||·|::|:)\s*(\S.*)$", name="docsite.separator")
_TRAILING_SIGNS = _linear.compile(r"(?:\s*[¶§\x{200b}\x{fe0f}🔗]|\s+#)+\s*$", name="docsite.trailing_signs")
_PYDOC_TITLE = _linear.compile(
    r"^Python:\s+(?:(?:built-in\s+)?(?:module|package|class|function|object)\s+)?(\S.*)$", name="docsite.pydoc_title"
)
"""pydoc's ``Python: module json.decoder``."""
_NO_TITLE = frozenset({"<no title>", "untitled", "no title"})


@dataclass(slots=True)
class PageScan:
    """What one pass over an HTML page found (see :func:`scan_page`)."""

    generator: str | None = None
    """``sphinx``, ``mkdocs``, ``mkdocs-material``, ``docusaurus``, ``hugo``, ``docbook``, ``asciidoc``,
    ``javadoc``, ``pydoc`` ... (``None``: plain HTML)."""
    main: Any = None
    """The main content element (``None``: the body, less what :attr:`drop` holds)."""
    drop: list[Any] = field(default_factory=list)
    """Chrome to remove: navigation, sidebars, headers, footers, search boxes, tables of contents, anchors."""
    page_kind: str | None = None
    """``search``, ``index`` or ``listing`` for a page that lists the site rather than documents it, ``redirect``
    for a stub that sends the reader elsewhere (``<meta http-equiv="refresh">``)."""
    home_title: str = ""
    """DocBook's "Home" link title (``PostgreSQL 15.20 Documentation``): the site's name and version."""
    version_meta: str = ""
    """A version a meta tag declares (``docsearch:version``, ``docusaurus_version``)."""


def _generator_of(content: str) -> str | None:
    low = content.lower()
    return next((name for key, name in _GENERATORS if key in low), None)


def _is_permalink(el: Any, classes: Sequence[str]) -> bool:
    """An ``<a>`` that is only a permalink sign (``¶``, ``#``, ``🔗``) or an anchor class's link."""
    href = el.get("href") or ""
    if not href.startswith("#"):
        return False
    if "anchor" in classes or "permalink" in classes:
        return True
    text = (el.text or "").strip()
    title = (el.get("title") or el.get("aria-label") or "").lower()
    if len(el) == 0 and text in _PERMALINK_SIGNS:
        return True
    return not text and len(el) <= 1 and any(t in title for t in _PERMALINK_TITLES)


def scan_page(root: Any) -> PageScan:
    """One pass over the page's elements: generator, main content, chrome to drop, the site's name and version.

    Each element is looked at once, with constant work (its tag, classes, id, role), so the pass is linear in
    the page, however it nests. What lies inside an element already marked to drop is neither marked again nor
    taken as the main content.
    """
    from lxml import etree

    out = PageScan()
    mains: dict[int, Any] = {}
    articles = 0
    markers: set[str] = set()
    open_drops: list[Any] = []  # the marked element being walked through, if any (never more than one)
    pydoc_extra: list[Any] = []
    for event, el in etree.iterwalk(root, events=("start", "end")):
        if event == "end":
            if open_drops and open_drops[-1] is el:
                open_drops.pop()
            continue
        tag = el.tag
        if not isinstance(tag, str):
            continue
        tag = tag.lower()
        classes = (el.get("class") or "").split()
        el_id = el.get("id") or ""
        role = (el.get("role") or "").lower()
        if tag == "meta":
            _read_meta(el, out, markers)
            continue
        for c in classes:
            if c in ("sphinxsidebar", "toctree-wrapper", "sphinxsidebarwrapper", "bd-article", "rst-content"):
                markers.add("sphinx")
            elif c in ("md-content", "md-content__inner"):
                markers.add("mkdocs-material")
            elif c == "bs-sidebar":
                markers.add("mkdocs")
            elif c.startswith("theme-doc-"):
                markers.add("docusaurus")
            elif c in ("navheader", "navfooter"):
                markers.add("docbook")
            elif c in ("genindextable", "genindex-jumpbox", "modindextable"):
                out.page_kind = "index"
            elif c == "heading-text" and tag == "tr":
                markers.add("pydoc")
        if tag == "td" and "extra" in classes:  # pydoc's heading cell: the index link and the file's local path
            pydoc_extra.append(el)
        if el_id in ("furo-main-content", "documentation_options"):
            markers.add("sphinx")
        elif el_id == "search-results":
            out.page_kind = "search"
        elif el_id == "__docusaurus":
            markers.add("docusaurus")
        if tag == "a":
            if el.get("accesskey") == "h" and not out.home_title:
                out.home_title = " ".join((el.get("title") or "").split())
            if (el.get("title") or "").startswith("Permalink to this"):  # Sphinx's wording (MkDocs': Permanent)
                markers.add("sphinx")
        if open_drops:
            continue
        if (tag == "a" and _is_permalink(el, classes)) or _is_chrome(el, tag, classes, el_id, role):
            out.drop.append(el)
            open_drops.append(el)
            continue
        # main content candidates, by rank (lower wins; the first in document order within a rank)
        rank = None
        if _MAIN_CLASSES.intersection(classes) or el.get("itemprop") == "articleBody":
            rank = 0
        elif role == "main":
            rank = 1
        elif tag == "main":
            rank = 2
        elif tag == "article":
            articles += 1
            rank = 3
        if rank is not None and rank not in mains:
            mains[rank] = el
    if out.generator is None and markers:
        order = ("mkdocs-material", "docusaurus", "mkdocs", "sphinx", "docbook", "pydoc")
        out.generator = next((g for g in order if g in markers), None)
    if out.generator is None and "docutils" in markers:
        out.generator = "docutils"
    if out.generator == "pydoc":
        out.drop.extend(pydoc_extra)
    if 3 in mains and articles > 1:  # a page of many articles (a blog's list): none of them is the page
        del mains[3]
    out.main = mains[min(mains)] if mains else None
    return out


def _read_meta(el: Any, out: PageScan, markers: set[str]) -> None:
    """A ``<meta>``: a redirect, the generator, a declared version."""
    name = (el.get("name") or el.get("property") or "").lower()
    content = (el.get("content") or "").strip()
    if (el.get("http-equiv") or "").lower() == "refresh":
        out.page_kind = out.page_kind or "redirect"
    elif name == "generator" and out.generator is None:
        out.generator = _generator_of(content)
        if "docutils" in content.lower():
            markers.add("docutils")
    elif name in ("docsearch:version", "docusaurus_version", "version") and content not in ("", "current"):
        out.version_meta = out.version_meta or content


def _is_chrome(el: Any, tag: str, classes: Sequence[str], el_id: str, role: str) -> bool:
    """Navigation, a sidebar, a header or footer, a search box, a table of contents, a breadcrumb trail."""
    if tag in _DROP_TAGS or role in _DROP_ROLES:
        return True
    if el_id in _DROP_IDS and tag not in _SECTIONS and "section" not in classes:
        return True  # (a section or heading titled "Sidebar" or "Navigation" has that id: it is content)
    if classes and not _DROP_CLASSES.isdisjoint(classes):
        return True
    # a <header> is kept unless it says it is the page's banner (role="banner"): a header inside the content
    # holds the page's title, and a page with a <main> leaves the banner outside what is read anyway
    return "contents" in classes and ("topic" in classes or "local" in classes)  # Sphinx's local contents


def drop_chrome(scan: PageScan) -> None:
    """Empty what :func:`scan_page` marked, keeping each element's tail (the text after it).

    Each marked element becomes an empty ``span`` in place: no text moves, so the work is the size of what is
    dropped, however many marked elements stand side by side.
    """
    for el in scan.drop:
        tail = el.tail
        el.clear()
        el.tag = "span"
        el.tail = tail


def strip_signs(text: str) -> str:
    """A heading's text without a trailing permalink sign (``¶``, ``#``, ``🔗``) its anchor left as text."""
    m = _TRAILING_SIGNS.search(text)
    return text[: m.start()] if m is not None else text


@dataclass(frozen=True, slots=True)
class SiteTitle:
    """A page title split from its site's suffix."""

    title: str
    site: str = ""
    version: str = ""


def clean_title(raw: str, *, heading: str, generator: str | None, home_title: str = "") -> SiteTitle:
    """The page's own title, the site's name and its version, from ``<title>`` (and the page's first heading).

    * ``Configuration — Black 23.1.0 documentation`` (Sphinx's ``title — docstitle``): ``Configuration``,
      ``Black``, ``23.1.0``; a docstitle alone (``Black 23.1.0 documentation``) leaves the heading as title.
    * a title that is the page's first heading and a suffix (``Configuration - MkDocs``, ``Intro | Docusaurus``,
      ``Page · Site``): the heading, the suffix as the site.
    * ``<no title>`` (a Sphinx page with no heading): the heading, or nothing (the caller falls back to the
      file name).
    * DocBook's "Home" link (``PostgreSQL 15.20 Documentation``) names the site and version; the title stays.
    """
    title = " ".join(raw.split())
    heading = " ".join(heading.split())
    site = version = ""
    if title.lower() in _NO_TITLE:
        title = ""
    if generator == "pydoc":
        pm = _PYDOC_TITLE.search(title)
        return SiteTitle(title=pm.group(1) if pm is not None else title or heading, site="Python")
    m = _DOCS_TITLE.search(title) if title else None
    alone = m is not None and not m.group(1)  # the docstitle alone: only a Sphinx site's, or one with a version
    if m is not None and (not alone or generator in ("sphinx", "docutils") or _SITE_VERSION.search(m.group(2))):
        page = m.group(1) or ""
        site, version = _site_and_version(m.group(2))
        title = page if page.lower() not in _NO_TITLE else ""
        if not title:
            title = heading
    elif heading and title.startswith(heading) and title != heading:
        rest = _SEPARATOR.search(title[len(heading) :])
        if rest is not None:
            title, site = heading, rest.group(1)
    elif generator in ("mkdocs", "mkdocs-material", "docusaurus", "hugo") and title:
        sep = " | " if generator in ("docusaurus", "hugo") else " - "
        if sep in title:
            title, site = title.rsplit(sep, 1)
    if home_title and not version:
        hm = _DOCS_TITLE.search(home_title)
        if hm is not None:
            home_site, version = _site_and_version(hm.group(2))
            site = site or home_site
    return SiteTitle(title=title or heading, site=site, version=version)


def _site_and_version(docstitle: str) -> tuple[str, str]:
    """``Black 23.1.0`` -> ``("Black", "23.1.0")``; ``3.11.2`` -> ``("", "3.11.2")``; ``Proj`` -> ``("Proj", "")``."""
    bare = _BARE_VERSION.search(docstitle)
    if bare is not None:
        return "", bare.group(1)
    sv = _SITE_VERSION.search(docstitle)
    return (sv.group(1), sv.group(2)) if sv is not None else (docstitle, "")


def site_info(scan: PageScan, title: SiteTitle) -> dict[str, str]:
    """The site facts kept with the document (``generator``, ``site``, ``version``; empty ones left out)."""
    info = {"generator": scan.generator or "", "site": title.site, "version": title.version or scan.version_meta}
    return {k: v for k, v in info.items() if v}


def count_kinds(pairs: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Counts per kind of ``(path, kind)`` pairs, in :data:`SKIP_KINDS` order."""
    counts: dict[str, int] = {}
    for _, k in pairs:
        counts[k] = counts.get(k, 0) + 1
    order = list(SKIP_KINDS)
    return dict(sorted(counts.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))

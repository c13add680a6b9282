"""Built documentation sites: their documentation, not the site around it.

A folder built by Sphinx, MkDocs, Docusaurus, Hugo, DocBook XSL, AsciiDoc or Javadoc holds, besides its pages,
copies of the sources (Sphinx ``_sources/``), highlighted code (``_modules/``), assets, search and index pages;
and each page wraps its text in navigation, sidebars, headers, footers, breadcrumbs, tables of contents and
permalink signs (``¶``). Ingesting that as it is stores the sidebar in a hundred chunks and ``¶`` in every title.

Three parts, each linear in its input:

* :class:`SiteFilter` decides, from a file's path under the ingested folder (and the names beside it), whether
  the file is not documentation at all, and of which kind (:data:`SKIP_KINDS`); ``--exclude GLOB`` adds the
  user's own.
* :func:`scan_page` reads a parsed HTML page: which generator made it (the ``generator`` meta tag or the
  classes and ids its themes use), its main content, chosen by structure and text so that no theme's class word
  can erase a page, the elements to drop inside it (hidden regions, navigation, permalink anchors, and a theme's
  sidebars, breadcrumbs, tables of contents where they are provably chrome), the guard (a page whose kept text
  is under half its visible text is read whole, :attr:`PageScan.guard`), the site's name and version wherever
  the page states them (title, meta tags, home link, title page, footer), and whether the page is a search,
  index, directory-listing page or a redirect stub. :func:`clean_title` takes the site-name and version suffix
  off the page's title (``Configuration — Black 23.1.0 documentation`` -> ``Configuration``).
* :class:`~admit.kb.home.HomeVersions` gives a page that states no version the one its site's home page states.
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
    "GUARD_MIN_CHARS",
    "GUARD_SHARE",
    "INLINE_TAGS",
    "REDIRECT_MAX_DELAY",
    "SKIP_KINDS",
    "PageScan",
    "SiteFilter",
    "SiteTitle",
    "clean_title",
    "count_kinds",
    "drop_chrome",
    "is_redirect",
    "javadoc_header",
    "scan_page",
    "site_info",
    "skip_line",
    "strip_signs",
]

SKIP_KINDS: dict[str, str] = {
    "excluded": "file(s) matching --exclude",
    "sphinx_sources": "Sphinx source copies (_sources/)",
    "sphinx_modules": "Sphinx highlighted-source pages (_modules/)",
    "haddock_source": "Haddock highlighted-source pages (src/)",
    "javadoc_indexes": "Javadoc indexes (class-use/, package-use, index-all, all classes, class trees, its help page)",
    "asciidoc_sources": "AsciiDoc sources beside the HTML pages they build (.txt)",
    "site_assets": "site assets (_static/, _images/, images, search indexes, sitemaps, scripts, styles, fonts)",
    "search_index_pages": "search/index pages (search, genindex, module index, 404, directory listings)",
    "redirects": "redirect stubs (a meta refresh to another page)",
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
_ASSET_SUFFIXES = frozenset(
    {".js", ".mjs", ".css", ".map", ".woff", ".woff2", ".ttf", ".eot", ".otf", ".inv"}
    | {".png", ".svg", ".gif", ".jpg", ".jpeg", ".webp", ".ico", ".bmp"}  # a page's images, wherever they sit
)
_INDEX_PAGES = frozenset({"genindex.html", "py-modindex.html", "modindex.html", "404.html", "404.htm"})
_JAVADOC_INDEXES = frozenset(
    {"index-all.html", "allclasses-index.html", "allclasses.html", "allclasses-frame.html", "allclasses-noframe.html",
     "allpackages-index.html", "overview-tree.html", "package-tree.html", "help-doc.html", "overview-frame.html",
     "package-frame.html", "all-classes-index.html", "all-packages-index.html", "package-use.html"}
)  # fmt: skip
"""Javadoc's generated indexes and its help page, by name (:meth:`SiteFilter._javadoc_index`)."""
_SITE_MARKERS = frozenset({"searchindex.js", "objects.inv", "sitemap.xml", "_static", "search"})
"""Names beside a site's root page: a ``search.html`` there is the site's search page (not a page on search)."""
_SOURCE_SUFFIXES = (".txt",)
_DOXYGEN_INDEX = _linear.compile(
    r"^(?:globals|functions|namespacemembers|classes|graph_legend)(?:_[a-z0-9~]+)*\.html$", name="docsite.doxygen_index"
)
"""Doxygen's generated indexes beside ``doxygen.css``: every global, every member, every class by letter (each a
link to the page that documents it), and the legend of its graphs (the same on every Doxygen site)."""


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
        if _DOXYGEN_INDEX.match(name) and "doxygen.css" in self._names(f.parent):
            return "search_index_pages"
        generated = self._generated(f, dirs, name)
        if generated is not None:
            return generated
        if name in ("search.html", "search.htm") and _SITE_MARKERS.intersection(self._names(f.parent)):
            return "search_index_pages"
        if f.suffix.lower() in _SOURCE_SUFFIXES and self._source_folder(f.parent):
            # git-add.txt beside git-add.html: the page's AsciiDoc source; config.txt in that folder: a fragment
            # the pages include (git-config.html holds its text)
            return "asciidoc_sources"
        return None

    def _haddock(self, folder: Path) -> bool:
        """Whether ``folder`` is a Haddock site's: its script bundle and its index beside the pages."""
        names = self._names(folder)
        return "haddock-bundle.min.js" in names or ("doc-index.html" in names and "quick-jump.css" in names)

    def _generated(self, f: Path, dirs: Sequence[str], name: str) -> str | None:
        """The kind of a file an API generator (Haddock, Javadoc) writes beside its pages that is not a page of
        documentation, ``None`` for the rest."""
        if self._haddock(f.parent):
            if name.startswith("doc-index") and name.endswith(".html"):
                return "search_index_pages"  # Haddock's index of every name, by letter
            if f.suffix.lower() == ".txt" or name == "meta.json":
                return "site_assets"  # its Hoogle database (the same declarations, as search data)
        if dirs and dirs[-1] == "src" and name.endswith(".html") and self._haddock(f.parent.parent):
            return "haddock_source"
        if name.endswith(".html") and self._javadoc_index(f, dirs, name):
            return "javadoc_indexes"
        return None

    def _javadoc_index(self, f: Path, dirs: Sequence[str], name: str) -> bool:
        """A Javadoc site's generated index page: a class's or package's "Uses of" page (``class-use/``,
        ``package-use.html``), the index of every
        name (``index-all.html``, ``index-files/``), the lists of all classes and packages, the class trees and
        Javadoc's own help page (the same on every Javadoc site); each beside a package's or the site's list."""
        if dirs and dirs[-1] in ("class-use", "index-files"):
            return self._javadoc(f.parent.parent)
        return name in _JAVADOC_INDEXES and self._javadoc(f.parent)

    def _javadoc(self, folder: Path) -> bool:
        """Whether ``folder`` is a Javadoc package's or the site's root: its ``package-summary.html`` or the
        site's package list (``element-list``, before Java 10 ``package-list``)."""
        names = self._names(folder)
        return "package-summary.html" in names or (
            ("element-list" in names or "package-list" in names) and "overview-tree.html" in names
        )

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
        "topNav", "subNav", "bottomNav", "navList", "top-nav", "sub-nav", "bottom-nav", "flex-header", "skipNav",
        "subNavList", "legalCopy",
        # Doxygen
        "navpath", "tabs", "tabs2", "tabs3",
        # Django's theme: previous / up / next rows
        "nav",
        # screen-reader-only text ("Skip to content", "Toggle navigation")
        "sr-only", "visually-hidden", "screen-reader-text",
        # dialogs (MkDocs' keyboard-shortcut and search modals)
        "modal",
    }
)  # fmt: skip
_DROP_CLASSES = frozenset(c.lower() for c in _DROP_CLASSES)
"""(Matched against an element's classes in lower case: Javadoc's ``topNav``, DSSSL's ``NAVHEADER``.)"""
_DROP_IDS = frozenset(
    {"hd", "ft", "footer", "footer-text", "sidebar", "searchbox", "toc", "toctitle", "global-nav", "navbar",
     "rtd-search-form", "search-form", "breadcrumbs", "skip-link", "docs-sidebar", "related", "navigation",
     "titlearea", "main-nav", "nav-path", "navrow1", "navrow2", "MSearchSelectWindow", "MSearchResultsWindow",
     "side-nav", "nav-tree"}
)  # fmt: skip
_DROP_IDS = frozenset(i.lower() for i in _DROP_IDS)
_SECTIONS = frozenset({"section", "h1", "h2", "h3", "h4", "h5", "h6", "dt"})
_DROP_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary"})
_NOT_SEARCHED = frozenset({"nosearch", "no-search"})
"""A site's own mark for what its search leaves out (sqlite.org's banner, menus and a page's table of contents):
chrome on any page, as ``<nav>`` is (the page's title is its ``<title>``)."""
_DROP_TAGS = frozenset({"button", "input", "select", "dialog", "nav", "footer"})
"""Tags that are chrome on any page (``nav`` and ``footer``: the page's navigation and footer by HTML's own word)."""
_QUIET_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head", "title"})
"""Tags whose text a reader never sees as the page's text."""
_PERMALINK_SIGNS = frozenset({"¶", "#", "🔗", "§", "\u200b", "🔗︎", "link", "◆"})
_PERMALINK_TITLES = ("permalink", "permanent link", "direct link", "link to this")
INLINE_TAGS = frozenset(
    {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "i", "kbd", "mark", "q", "s", "samp",
     "small", "span", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr", "del", "ins", "font", "big", "nobr"}
)  # fmt: skip
"""Elements that add no space around their text (``psf/black<span>@</span>stable`` reads ``psf/black@stable``)."""
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

_TEXINFO_CLASSES = frozenset(
    {
        # each node's Next / Previous / Up row (makeinfo 6: div.header; 7: div.nav-panel)
        "header", "nav-panel",
        # the table of contents and the short one, with their headings (6: Contents_element, Overview_element;
        # 7: element-contents, element-shortcontents)
        "contents_element", "element-contents", "contents", "contents-heading",
        "overview_element", "element-shortcontents", "shortcontents", "shortcontents-heading",
        # a node's list of its subnodes (section-toc, mini-toc) and its menu
        "section-toc", "mini-toc", "menu",
    }
)  # fmt: skip
"""A Texinfo manual's navigation (makeinfo / texi2any, texi2html), chrome only on a page Texinfo made."""
_TEXINFO_GENERATED = "this document was generated"
"""texi2html's footer line (``This document was generated by ... using texi2html 1.78a.``)."""

_MAIN_CLASSES = frozenset({"md-content__inner", "theme-doc-markdown", "bd-article", "document-content"})
"""Main content, by class, before any ``role="main"``: Material's article, Docusaurus', pydata's."""

GUARD_SHARE = 0.5
"""The guard: main content under this share of the page's visible text (outside navigation, footers, hidden
regions) is not trusted; the page's whole visible text is kept instead."""
GUARD_MIN_CHARS = 200
"""... when at least this many visible characters (not counting spaces) would be lost: a short page beside a
footer is not a lost page."""
_DESCEND_SHARE = 0.9
"""With no main element, the content is the element that holds at least this share of its parent's text."""

_GENERATORS = (
    ("mkdocs-material", "mkdocs-material"),
    ("mkdocs", "mkdocs"),
    ("sphinx", "sphinx"),
    ("docusaurus", "docusaurus"),
    ("hugo", "hugo"),
    ("gtk-doc", "gtk-doc"),
    ("docbook", "docbook"),
    ("asciidoc", "asciidoc"),
    ("javadoc", "javadoc"),
    ("doxygen", "doxygen"),
    ("jekyll", "jekyll"),
    ("pydoc", "pydoc"),
    ("makeinfo", "texinfo"),
    ("texi2any", "texinfo"),
    ("texi2html", "texinfo"),
)
"""Substrings of a ``<meta name="generator">`` -> the generator's name (first match wins; GTK-Doc's page names
DocBook XSL first and GTK-Doc after it: GTK-Doc, the more specific, wins)."""
_GTKDOC_SUMMARY_CELLS = frozenset({"function_name", "property_name", "signal_name"})
"""GTK-Doc's summary tables at a page's top (``Functions``, ``Types and Values``, ``Properties``, ``Signals``):
each row a return type or keyword and a link to the item's own section below, an index of the page: chrome."""

_DOCS_TITLE = _linear.compile(
    r"(?i)^(?:(.*\S)\s+(?:—|–|-|\||·|::)\s+)?(\S.*?)\s+documentation$",
    name="docsite.title_suffix",
)
"""``Page — Site 1.2 documentation`` (Sphinx's ``title — docstitle``) or the docstitle alone."""
_DOCSTITLE = _linear.compile(r"(?i)^(\S.*?)\s+documentation$", name="docsite.docstitle")
"""Sphinx's docstitle alone (``Borg - Deduplicating Archiver 1.2.4 documentation``)."""
_PAREN_VERSION = _linear.compile(
    r"(?i)^(.*\sdocumentation)\s+\(v?(\d+(?:\.[0-9A-Za-z+-]+)*)\)$", name="docsite.paren_version"
)
"""A docstitle whose version follows in brackets (the Pallets projects': ``Flask Documentation (2.2.x)``)."""
_SITE_VERSION = _linear.compile(r"(?i)^(.*?\S)\s+v?(\d+(?:\.[0-9A-Za-z+-]+)*)$", name="docsite.site_version")
"""``Black 23.1.0`` -> ``Black``, ``23.1.0``."""
_HOME_VERSION = _linear.compile(
    r"^(.*?\S)\s+v?(\d+(?:\.\d+)+[0-9A-Za-z.+-]*)(?:\s+\S.*)?$", name="docsite.home_version"
)
"""A home page's title that names the site and its release before the rest: ``Privoxy 3.0.34 User Manual``."""
_BARE_VERSION = _linear.compile(r"(?i)^v?(\d+(?:\.[0-9A-Za-z+-]+)*)$", name="docsite.bare_version")
"""A docstitle that is a version alone (Python's ``3.11.2 Documentation``)."""
_SEPARATOR = _linear.compile(r"^\s*(?:—|–|-|\||·|::|:)\s*(\S.*)$", name="docsite.separator")
_SEPARATOR_END = _linear.compile(r"^(\S.*?)\s*(?:—|–|-|\||·|::|:)\s*$", name="docsite.separator_end")
_TRAILING_SIGNS = _linear.compile(r"(?:\s*[¶§\x{200b}\x{fe0f}🔗]|\s+#)+\s*$", name="docsite.trailing_signs")
_PYDOC_TITLE = _linear.compile(
    r"^Python:\s+(?:(?:built-in\s+)?(?:module|package|class|function|object)\s+)?(\S.*)$", name="docsite.pydoc_title"
)
"""pydoc's ``Python: module json.decoder``."""
_MAKEINFO_TITLE = _linear.compile(r"^(\S.*?)\s+\(([^()]+)\)$", name="docsite.makeinfo_title")
"""makeinfo's split page title: ``Patterns (Lexical Analysis With Flex, for Flex 2.6.4)``: node (manual)."""
_JAVADOC_VERSION = _linear.compile(r"^(.*?\S)\s+v?(\d+(?:\.\d+)+[0-9A-Za-z.+-]*)$", name="docsite.javadoc_version")
"""A Javadoc doctitle's release (``jsoup Java HTML Parser 1.15.3``; ``JSR 330`` names no release)."""
_TEXI2HTML_TITLE = _linear.compile(r"^([^:]{3,80}):\s+(\S.*)$", name="docsite.texi2html_title")
"""texi2html's: ``GNU gettext utilities: 1. Introduction``: manual: node."""
_NO_TITLE = frozenset({"<no title>", "untitled", "no title"})
_REFRESH = _linear.compile(
    r"(?i)^\s*(\d+(?:\.\d*)?)?\s*[;,]?\s*(?:url\s*=\s*)?['\"]?\s*([^'\"\s][^'\"]*)?", name="docsite.refresh"
)
"""``<meta http-equiv="refresh" content="0; url=new/">``: the delay and the target (none: a plain reload)."""
REDIRECT_MAX_DELAY = 10.0
"""A refresh with a target within this many seconds is a redirect stub; a slower one, or one with no target
(``content="300"``: reload every five minutes), is a normal page."""
_FOOTER_PRODUCT = _linear.compile(
    r"(?:--|—|–)\s*([A-Z][\w.+ ]{0,60}?)\s+v?(\d+(?:\.\d+)+[0-9A-Za-z.+-]*)\s*$", name="docsite.footer_product"
)
"""A footer's ``Last updated 2023-01-25 09:27:30 -- Network UPS Tools 2.8.0``: the site and its version."""
_STATED_VERSION = _linear.compile(
    r"(?i)\b(?:version|release|revision)\s*:?\s*v?(\d+(?:\.\d+)+[0-9A-Za-z.+-]*)", name="docsite.stated_version"
)
"""``Version 2.8.0``, ``Release: 1.4`` in a footer or on a title page."""
_CURRENT_VERSION = _linear.compile(
    r"(?i)\bcurrent\s+(?:version|release)\s*:?\s*v?(\d+(?:\.\d+)+[0-9A-Za-z.+-]*)", name="docsite.current_version"
)
"""A sidebar's ``Current version: 2.14.0`` (Pygments')."""
_TOOL_VERSION = _linear.compile(
    r"(?i)\b(?:created|built|generated|produced)\s+(?:using|with|by)\s+([A-Za-z][\w ]{0,30}?)\s+v?(\d+(?:\.\d+)+)",
    name="docsite.tool_version",
)
"""A footer's ``Created using Sphinx 5.3.0``: the tool's version, the site's only on the tool's own site."""
_TOOL_NAMES = frozenset(
    {"sphinx", "mkdocs", "docutils", "asciidoc", "asciidoctor", "docbook", "docbook xsl stylesheets", "hugo",
     "jekyll", "doxygen", "javadoc", "docusaurus", "alabaster", "furo", "material", "read the docs", "pydata"}
)  # fmt: skip
"""Names a footer's ``-- Name 1.2`` may give that are the site's tools, not the site."""
_HADDOCK_CAPTION = _linear.compile(r"^([A-Za-z][\w.-]*?)-(\d+(?:\.\d+)+):", name="docsite.haddock_caption")
"""Haddock's package caption, ``aeson-2.0.3.0: Fast JSON parsing and encoding``: the package and its version."""
_VERSION_CLASSES = frozenset({"releaseinfo", "revnumber", "edition", "productnumber", "version"})
"""Title-page elements that state a version (DocBook's ``releaseinfo``, AsciiDoc's ``revnumber``; by id:
AsciiDoc's ``revnumber``, Doxygen's ``projectnumber``)."""


@dataclass(slots=True)
class PageScan:
    """What :func:`scan_page` found on an HTML page."""

    generator: str | None = None
    """``sphinx``, ``mkdocs``, ``mkdocs-material``, ``docusaurus``, ``hugo``, ``docbook``, ``asciidoc``,
    ``javadoc``, ``pydoc`` ... (``None``: plain HTML)."""
    main: Any = None
    """The main content element chosen by structure or text (``None``: none, the body is read)."""
    container: Any = None
    """The element that is read: :attr:`main`, or the body (no main content, or the guard caught the page)."""
    drop: list[Any] = field(default_factory=list)
    """Chrome to remove inside :attr:`container`: hidden regions, navigation, permalinks, and (on a generator's
    page) its chrome by class where it is provably chrome (mostly links, or no heading and under half the
    content's text)."""
    page_kind: str | None = None
    """``search``, ``index`` or ``listing`` for a page that lists the site rather than documents it, ``redirect``
    for a stub that sends the reader elsewhere (a refresh with a target and a short delay)."""
    home_title: str = ""
    """DocBook's "Home" link title or the head's ``<link rel="home" title=...>`` (``PostgreSQL 15.20
    Documentation``, ``Privoxy 3.0.34 User Manual``): the site's name and version."""
    version_meta: str = ""
    """A version a meta tag declares (``docsearch:version``, ``docusaurus_version``, ``version``)."""
    version_stated: str = ""
    """A version the page states on a title page (``releaseinfo``, ``revnumber``) or in its footer
    (``... -- Network UPS Tools 2.8.0``, ``Version 1.4``)."""
    site_stated: str = ""
    tool_version: tuple[str, str] = ("", "")
    """The tool and its version a footer states (``Created using Sphinx 5.3.0``): the site's version only where
    the site is the tool itself (Sphinx's own documentation)."""
    """The site's name a footer states with its version (``Network UPS Tools``)."""
    guard: str = ""
    """Non-empty when the guard caught the page: why (the main content was under half its visible text); the
    whole visible text is read then."""
    credit: Any = None
    """man2html's closing rule: the ``<hr>`` after which its parent holds only the credit line (``This document
    was created by man2html, using the manual pages. Time: ...``), dropped with it."""
    man_head: Any = None
    """man2html's header link (``Return to Main Contents``, to the CGI that served the page): it and what stands
    between the page's ``<h1>`` and it (``Section: User Commands (1)``, ``Updated: ...``, the ``Index`` link) are
    dropped; the ``<hr>`` after it closes the header."""


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


def _is_hidden(el: Any, role: str) -> bool:
    """A region the reader does not see: ``hidden``, ``aria-hidden="true"``, ``display:none`` or
    ``visibility:hidden`` in its inline style (a tab panel, shown by a click, is not hidden)."""
    if role == "tabpanel":
        return False
    if el.get("hidden") is not None or (el.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = el.get("style")
    if not style:
        return False
    s = "".join(style.lower().split())
    return "display:none" in s or "visibility:hidden" in s


def _nonspace(text: str | None) -> int:
    """Characters of ``text`` that are not white space."""
    return len("".join(text.split())) if text else 0


_HIDDEN, _PERMALINK, _STRUCTURAL, _WORD = "hidden", "permalink", "structural", "word"
"""Why an element is chrome: the first three on every page; ``word`` (a class or id a generator's theme gives
its chrome) only on a recognised generator's page, and only where the element is provably chrome."""
_IN_PAGE = "in-page"
"""A list whose text is nothing but links to the page's own anchors (a page index, an in-page table of
contents: man2html's ``Index``): chrome on every page, found when the list closes (:meth:`_Walk.end`)."""
_LIST_TAGS = frozenset({"ul", "ol", "dl", "table", "menu"})
_IN_PAGE_SHARE = 0.9
"""... at least this share of the list's visible characters inside ``href="#..."`` links (separators, a
"Jump to:" label may stand between them) ..."""
_IN_PAGE_MIN_LINKS = 3
"""... and at least this many such links."""
_CODE_TAGS = ("code", "tt", "samp", "kbd", "var")


def _names_code(link: Any) -> bool:
    """A link whose text is code: a cross-reference to an API object documented on the page (aiohttp's
    "Hierarchy of exceptions", a nested list of ``ClientError`` links), content rather than a page's index."""
    return any(isinstance(c.tag, str) and c.tag.lower() in _CODE_TAGS for c in link.iterdescendants())


@dataclass(slots=True)
class _Counts:
    """Per element: visible characters (no spaces; hidden, structural chrome and invisible tags not counted),
    of them inside links, and headings."""

    chars: dict[Any, int] = field(default_factory=dict)
    links: dict[Any, int] = field(default_factory=dict)
    heads: dict[Any, int] = field(default_factory=dict)

    def words(self, el: Any) -> int:
        """Visible characters outside links: the text a reader reads, not the links to elsewhere."""
        return self.chars.get(el, 0) - self.links.get(el, 0)

    def link_dense(self, el: Any) -> bool:
        return 2 * self.links.get(el, 0) >= self.chars.get(el, 0)


def scan_page(root: Any) -> PageScan:
    """Generator, main content, chrome to drop, the site's name and version: a pass over the page's elements
    (each looked at once, with constant work: its tag, classes, id, role, attributes, own text), then a pass
    over the main content.

    The main content is chosen by structure and text, never erased by a class word: a generator's known
    container, ``role="main"``, ``<main>``, a lone ``<article>``; on a generator's page with none of those, the
    element that holds most of the page's text (:func:`_descend`). Inside it, what is chrome on any page is
    dropped (hidden regions, ``nav``, ``footer``, navigation roles, form controls, permalinks); a theme's chrome
    class only where the element is mostly links, or holds no heading and at most half the content's text.
    Last, the guard: when what is kept is under :data:`GUARD_SHARE` of the page's visible text, the whole
    visible text is read and :attr:`PageScan.guard` says so.
    """
    from lxml import etree

    walk = _Walk()
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        if event == "end":
            walk.end(el, tag)
        else:
            walk.start(el, tag)
    walk.settle_generator()
    return walk.choose_main(root)


@dataclass(slots=True)
class _Walk:
    """The state of :func:`scan_page`'s pass over the page's elements."""

    out: PageScan = field(default_factory=PageScan)
    marks: dict[Any, str] = field(default_factory=dict)
    counts: _Counts = field(default_factory=_Counts)
    # [element, chars, link chars, headings, in-page link chars, in-page links] of the open elements
    frames: list[list[Any]] = field(default_factory=list)
    quiet: Any = None  # the outermost open element whose text is not counted (hidden, chrome, script...)
    footer: Any = None  # the outermost open footer
    footers: list[Any] = field(default_factory=list)
    stated: list[Any] = field(default_factory=list)
    sidebars: list[Any] = field(default_factory=list)
    mains: dict[int, Any] = field(default_factory=dict)
    articles: int = 0
    markers: set[str] = field(default_factory=set)
    pydoc_extra: list[Any] = field(default_factory=list)
    haddock: dict[Any, str] = field(default_factory=dict)
    haddock_caption: str = ""
    javadoc_summaries: list[Any] = field(default_factory=list)
    javadoc_details: bool = False

    def end(self, el: Any, tag: str) -> None:
        """An element closes: its counts go to its parent."""
        chars, links, heads, anchors, n_anchors = self.frames.pop()[1:]
        if tag == "a":
            links = chars
            if (el.get("href") or "").startswith("#") and chars and not _names_code(el):
                anchors, n_anchors = chars, 1
        self.counts.chars[el], self.counts.links[el], self.counts.heads[el] = chars, links, heads
        if (
            tag in _LIST_TAGS
            and n_anchors >= _IN_PAGE_MIN_LINKS
            and anchors >= _IN_PAGE_SHARE * chars
            and el not in self.marks
        ):
            self._in_page(el)
        if self.quiet is el:
            self.quiet = None
        if self.footer is el:
            self.footer = None
        if self.frames:
            parent = self.frames[-1]
            parent[1] += chars + (_nonspace(el.tail) if self.quiet is None else 0)
            parent[2] += links
            parent[3] += heads
            parent[4] += anchors
            parent[5] += n_anchors

    def _in_page(self, el: Any) -> None:
        """A list of links to the page's own anchors is chrome; so is a heading right above it that heads nothing
        else (the list is its parent's last element, or a rule follows it: man2html's ``<H2>Index</H2><DL>``)."""
        self.marks[el] = _IN_PAGE
        after = el.getnext()
        if after is not None and not (isinstance(after.tag, str) and after.tag.lower() == "hr"):
            return
        head = el.getprevious()
        if (
            head is not None
            and isinstance(head.tag, str)
            and head.tag.lower() in _HEADING_TAGS
            and not (head.tail or "").strip()
            and head not in self.marks
        ):
            self.marks[head] = _IN_PAGE

    def start(self, el: Any, tag: str) -> None:
        """An element opens: its mark, its own text, what it says about the page, and whether it is main content."""
        classes = (el.get("class") or "").lower().split() if tag else []  # DSSSL's DocBook: CLASS="NAVHEADER"
        el_id = (el.get("id") or "").lower() if tag else ""
        role = (el.get("role") or "").lower() if tag else ""
        kind = _mark(el, tag, classes, el_id, role)
        if kind is None and self.out.generator is not None:
            kind = self._generator_mark(el, tag, classes, el_id)
        if kind is not None:
            self.marks[el] = kind
        if self.quiet is None and (tag in _QUIET_TAGS or not tag or kind in (_HIDDEN, _PERMALINK, _STRUCTURAL)):
            self.quiet = el
        counted = self.quiet is None
        self.frames.append(
            [el, _nonspace(el.text) if counted else 0, 0, 1 if counted and tag in _HEADING_TAGS else 0, 0, 0]
        )
        if not tag:
            return
        if tag == "meta":
            _read_meta(el, self.out, self.markers)
            return
        self._note(el, tag, classes, el_id, role)
        if self.quiet is None:
            self._candidate(el, tag, classes, role)

    def _generator_mark(self, el: Any, tag: str, classes: list[str], el_id: str) -> str | None:
        """Why ``el`` is chrome on its generator's page (Texinfo, Doxygen, GTK-Doc), if it is; an element whose
        mark goes to an ancestor (Texinfo's index row, GTK-Doc's summary section) is marked here."""
        generator = self.out.generator
        if generator == "texinfo":
            if "summary-letter" in classes:  # an index's "Jump to: A B C" row: the table that holds it
                row = next(el.iterancestors("table", "TABLE"), None)
                if row is not None and row not in self.marks:
                    self.marks[row] = _WORD
            return _texinfo_mark(el, tag, classes)
        if generator == "doxygen":
            return _WORD if el_id == "top" else None  # the header block (title area, menus, a project's links)
        if generator != "gtk-doc" or tag != "td":
            return None
        if "listing_lines" in classes:
            return _STRUCTURAL  # a code listing's line numbers
        if _GTKDOC_SUMMARY_CELLS.intersection(classes):
            table = _table_of(el)  # the summary (an index of the page): chrome, with its heading
            part = _summary_section(table) if table is not None else None
            if part is not None and part not in self.marks:
                self.marks[part] = _STRUCTURAL
            elif table is not None and table not in self.marks:
                self.marks[table] = _WORD
        return None

    def _note(self, el: Any, tag: str, classes: list[str], el_id: str, role: str) -> None:
        """What the element says about the page: a footer, a stated version, a sidebar, the generator, home."""
        if self.footer is None and (
            tag == "footer" or role == "contentinfo" or el_id in ("footer", "ft", "footer-text")
            or any("footer" in c for c in classes)
        ):  # fmt: skip
            self.footer = el
            self.footers.append(el)
        if len(self.stated) < 4 and (
            el_id in ("revnumber", "projectnumber") or not _VERSION_CLASSES.isdisjoint(classes) or "subtitle" in classes
        ):
            self.stated.append(el)
        if len(self.sidebars) < 2 and "sphinxsidebar" in classes:
            self.sidebars.append(el)
        _read_markers(el, tag, classes, el_id, self.markers, self.out)
        if tag == "a" and self.out.credit is None and (el.get("href") or "").endswith("/man2html"):
            if self.out.man_head is None and _man2html_head(el):
                self.out.man_head = el
            else:
                self.out.credit = _man2html_credit(el)
        if tag == "td" and "extra" in classes:  # pydoc's heading cell: the index link and the file's local path
            self.pydoc_extra.append(el)
        if "haddock" in self.markers:
            self._haddock(el, tag, classes, el_id)
        self._javadoc(el, tag, classes)
        if not self.out.home_title and (
            (tag == "a" and (el.get("accesskey") or "").lower() == "h")
            or (tag == "link" and (el.get("rel") or "").lower() == "home")
        ):  # DocBook's "Home" link and the page head's <link rel="home" title="...">
            self.out.home_title = " ".join((el.get("title") or "").split())

    def _javadoc(self, el: Any, tag: str, classes: list[str]) -> None:
        """Javadoc's member summaries (``div.summary``, Java 16 on: ``section.summary``), kept aside until the
        generator is settled, and whether the page has the details they index (``div.details``)."""
        if tag not in ("div", "section"):
            return
        if "summary" in classes:
            self.javadoc_summaries.append(el)
        elif "details" in classes:
            self.javadoc_details = True

    def _haddock(self, el: Any, tag: str, classes: list[str], el_id: str) -> None:
        """Haddock's chrome, kept aside until the generator is settled: the package header (its caption read
        for the site and version), the module's contents and synopsis (indexes of the page), each type's
        instance list (generated, collapsed on the page) and each declaration's ``Source`` link."""
        if el_id == "package-header":
            self.haddock[el] = _WORD
            cap = el.find("span")
            if cap is not None and "caption" in (cap.get("class") or "").split():
                self.haddock_caption = " ".join("".join(cap.itertext()).split())
        elif el_id in ("table-of-contents", "synopsis"):
            self.haddock[el] = _WORD
        elif (
            tag in ("table", "p")
            and ("info" in classes or "caption" in classes)
            and el.getparent() is not None
            and (el.getparent().get("id") in ("module-header", "description"))
        ):  # the module's boilerplate (copyright, licence, stability, portability ... the same on every module)
            self.haddock[el] = _STRUCTURAL  # and the captions "Data.Aeson" (the title) and "Description"
        elif (tag == "div" and "instances" in classes and "subs" in classes) or (
            tag == "a" and "link" in classes and (el.text or "").strip() == "Source"
        ):
            self.haddock[el] = _STRUCTURAL

    def _candidate(self, el: Any, tag: str, classes: list[str], role: str) -> None:
        """Main content candidates, by rank (lower wins; the first in document order within a rank)."""
        rank = None
        if _MAIN_CLASSES.intersection(classes) or el.get("itemprop") == "articleBody":
            rank = 0
        elif tag == "div" and el.get("id") == "content" and "haddock" in self.markers:
            rank = 0  # Haddock's content: the module's header and description above its interface
        elif role == "main":
            rank = 1
        elif tag == "main":
            rank = 2
        elif tag == "article":
            self.articles += 1
            rank = 3
        if rank is not None and rank not in self.mains:
            self.mains[rank] = el

    def settle_generator(self) -> None:
        """The generator from the markers seen, when no meta tag named it."""
        out = self.out
        if out.generator is None and self.markers:
            order = ("mkdocs-material", "docusaurus", "mkdocs", "sphinx", "docbook", "javadoc", "pydoc", "haddock")
            out.generator = next((g for g in order if g in self.markers), None)
        if out.generator is None and "docutils" in self.markers:
            out.generator = "docutils"
        if out.generator == "pydoc":
            self.marks.update(dict.fromkeys(self.pydoc_extra, _STRUCTURAL))
        if out.generator == "javadoc" and self.javadoc_details:
            # a class page's member summaries (``Method Summary``: each member's signature and first sentence,
            # ``Methods inherited from class java.lang.Object``): an index of the details below, chrome, as
            # GTK-Doc's summary tables are (a package page's class table, with no details, stays)
            self.marks.update(dict.fromkeys(self.javadoc_summaries, _STRUCTURAL))
        if out.generator == "haddock":
            self.marks.update(self.haddock)  # its package menu, contents, synopsis, instance lists, Source links
            if self.haddock_caption and not out.version_stated:
                hm = _HADDOCK_CAPTION.search(self.haddock_caption)  # "aeson-2.0.3.0: Fast JSON parsing ..."
                if hm is not None:
                    out.site_stated, out.version_stated = hm.group(1), hm.group(2)

    def choose_main(self, root: Any) -> PageScan:
        """The main content, what to drop inside it, and the guard (see :func:`scan_page`)."""
        out, mains, marks, counts = self.out, self.mains, self.marks, self.counts
        if 3 in mains and self.articles > 1:  # a page of many articles (a blog's list): none of them is the page
            del mains[3]
        _read_stated(out, self.footers, self.stated, self.sidebars)
        if out.generator == "texinfo" and not out.version_stated:
            out.version_stated = _texinfo_version(root)
        body = root.find("body")
        body = body if body is not None else root
        out.main = mains[min(mains)] if mains else None
        known = out.generator is not None
        if out.main is None and known:
            found = _descend(body, counts, marks)
            out.main = found if found is not body else None
        out.container = out.main if out.main is not None else body
        out.drop, kept = _drops(out.container, marks, counts, words=known)
        out.drop = _keep_lone_toctrees(out.container, out.drop, marks, counts)
        visible = counts.words(body) - _link_chrome(body, marks, counts)
        if kept < GUARD_SHARE * visible and visible - kept >= GUARD_MIN_CHARS:
            out.guard = (
                f"main content was {kept / visible:.0%} of the page's visible text; its whole visible text is kept"
            )
            out.main = None
            out.container = body
            out.drop, _ = _drops(body, marks, counts, words=False)
        return out


def _mark(el: Any, tag: str, classes: Sequence[str], el_id: str, role: str) -> str | None:
    """Why ``el`` is chrome, if it is (see :data:`_HIDDEN` ...)."""
    if not tag:
        return None
    if _is_hidden(el, role):
        return _HIDDEN
    if tag == "a" and _is_permalink(el, classes):
        return _PERMALINK
    if tag in _DROP_TAGS or role in _DROP_ROLES or _NOT_SEARCHED.intersection(classes):
        return _STRUCTURAL
    if tag == "form":
        return _WORD  # a search box's form on a site; on a plain page, what a form holds is its text
    if el_id in _DROP_IDS and tag not in _SECTIONS and "section" not in classes:
        return _WORD  # (a section or heading titled "Sidebar" or "Navigation" has that id: it is content)
    if classes and not _DROP_CLASSES.isdisjoint(classes):
        return _WORD
    if "contents" in classes and ("topic" in classes or "local" in classes):  # Sphinx's local contents
        return _WORD
    return None


def _texinfo_mark(el: Any, tag: str, classes: Sequence[str]) -> str | None:
    """A Texinfo page's navigation (:data:`_TEXINFO_CLASSES`; texi2html's row of ``[ << ] [ >> ] [Top]``
    buttons, a table with no class, and its "This document was generated" footer): dropped where provably
    chrome, as a theme's chrome words are."""
    if not _TEXINFO_CLASSES.isdisjoint(classes):
        return _WORD
    if any(c.startswith("index-") or c.endswith("printindex") for c in classes) and tag in ("table", "div"):
        return _WORD  # @printindex's table of entries (index-cp, index-fn, custom index-bt; 7: cp-entries-printindex)
    if tag == "table" and (el.get("cellpadding"), el.get("cellspacing"), el.get("border")) == ("1", "1", "0"):
        return _WORD
    if tag in ("font", "p") and (el.text or "").strip().lower().startswith(_TEXINFO_GENERATED):
        return _WORD
    return None


_MAN_HEAD_SPAN = 8
"""Elements at most between man2html's ``<h1>`` and its header link."""


def _man2html_head(link: Any) -> bool:
    """Whether ``link`` closes man2html's header: an ``<hr>`` follows it and an ``<h1>`` stands a few elements
    before it in the same parent (``<H1>BASH</H1>Section: ...<BR>Updated: ...<BR><A>Index</A> <A>Return to Main
    Contents</A><HR>``)."""
    after = link.getnext()
    if after is None or not isinstance(after.tag, str) or after.tag.lower() != "hr":
        return False
    for _, el in zip(range(_MAN_HEAD_SPAN), link.itersiblings(preceding=True), strict=False):
        if isinstance(el.tag, str) and el.tag.lower() == "h1":
            return True
    return False


def _drop_man_head(link: Any) -> None:
    """Remove man2html's header: ``link`` and everything between the ``<h1>`` before it and it."""
    parent = link.getparent()
    for el in list(link.itersiblings(preceding=True)):
        if isinstance(el.tag, str) and el.tag.lower() == "h1":
            el.tail = None
            break
        parent.remove(el)
    link.tail = None
    parent.remove(link)


def _man2html_credit(link: Any) -> Any:
    """The ``<hr>`` before man2html's credit (``<HR>This document was created by <A HREF=".../man2html">``) when
    only the credit's last lines follow it in its parent (the link, a break, the time), else ``None``."""
    rule = link.getprevious()
    if rule is None or rule.tag != "hr" or "created by" not in (rule.tail or "").lower():
        return None
    return rule if sum(1 for _ in zip(range(5), rule.itersiblings(), strict=False)) <= 4 else None


def _texinfo_version(root: Any) -> str:
    """The version a Texinfo manual's Top node states (``This edition documents version 2.4.7.``, ``... documents
    flex version 2.6.4``): in its first paragraphs only, where a manual says what it documents. makeinfo's Top
    node is ``div#Top``; texi2html's, the paragraphs after ``<a name="Top">``."""
    paragraphs: list[Any] = []
    for el in root.iter("div", "a"):
        if el.tag == "div" and el.get("id") == "Top":
            paragraphs = [p for _, p in zip(range(4), el.iter("p"), strict=False)]
            break
        if el.tag == "a" and el.get("name") == "Top":
            paragraphs = [p for _, p in zip(range(6), el.itersiblings(), strict=False) if p.tag == "p"]
            break
    for p in paragraphs:
        m = _STATED_VERSION.search(" ".join(" ".join(p.itertext()).split())[:300])
        if m is not None:
            return str(m.group(1)).rstrip(".-+")
    return ""


def _table_of(cell: Any) -> Any:
    """The table a cell is in (its row's parent, or that ``tbody``'s parent), ``None`` otherwise: three steps at
    most, so the page's walk stays linear."""
    up = cell.getparent()
    for _ in range(2):
        up = up.getparent() if up is not None else None
        if up is not None and isinstance(up.tag, str) and up.tag.lower() == "table":
            return up
    return None


def _summary_section(table: Any) -> Any:
    """GTK-Doc's summary section that holds ``table`` (``<div class="refsect1"><a name="p.functions"></a><h2>
    Functions</h2><div class="informaltable"><table>``), ``None`` when the table stands elsewhere: the section is
    nothing but the summary, so its heading goes with it (two steps up, constant work)."""
    holder = table.getparent()
    part = holder.getparent() if holder is not None else None
    if part is None or not isinstance(part.tag, str) or "refsect1" not in (part.get("class") or "").split():
        return None
    kids = [c for c in part if isinstance(c.tag, str)]
    return part if len(kids) <= 3 and kids[-1] is holder else None


def _read_markers(el: Any, tag: str, classes: Sequence[str], el_id: str, markers: set[str], out: PageScan) -> None:
    """The classes and ids that say which generator built the page, or that it is a search or index page."""
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
        elif c in ("topnav", "subnav", "bottomnav", "skipnav"):
            markers.add("javadoc")
        elif c in ("genindextable", "genindex-jumpbox", "modindextable", "indexdiv"):
            out.page_kind = "index"  # Sphinx's general and module index; DocBook XSL's (GTK-Doc's) index letters
        elif c == "heading-text" and tag == "tr":
            markers.add("pydoc")
    if el_id in ("package-header", "module-header") and tag == "div":
        markers.add("haddock")  # Haddock's header: the package's caption and menu; a module's information
    if el_id in ("furo-main-content", "documentation_options"):
        markers.add("sphinx")
    elif el_id == "search-results":
        out.page_kind = "search"
    elif el_id == "__docusaurus":
        markers.add("docusaurus")
    elif el_id in ("mkdocs_search_modal", "mkdocs-search-query", "mkdocs-search-results"):
        markers.add("mkdocs")  # MkDocs' search box, in a project's own theme too (Django REST framework's)
    if tag == "a" and (el.get("title") or "").startswith("Permalink to this"):  # Sphinx's (MkDocs': Permanent)
        markers.add("sphinx")


def _descend(body: Any, counts: _Counts, marks: dict[Any, str]) -> Any:
    """The element that holds most of the page's text: from the body down, into the child that holds
    :data:`_DESCEND_SHARE` of its parent's text (outside links and chrome), while no other child holds a
    heading (a title or an introduction beside the content is the content's). Each level looks at its children
    once: linear in the page."""
    node = body
    while True:
        total = counts.words(node)
        best = None
        best_words = 0
        for child in node:
            if isinstance(child.tag, str) and counts.words(child) > best_words:
                best, best_words = child, counts.words(child)
        if best is None or total <= 0 or best_words < _DESCEND_SHARE * total:
            return node
        for child in node:
            if child is best or not isinstance(child.tag, str) or not counts.heads.get(child, 0):
                continue
            if marks.get(child) == _WORD and counts.link_dense(child):
                continue  # a theme's sidebar with its own headings ("Navigation", "Related topics")
            return node
        node = best


def _drops(container: Any, marks: dict[Any, str], counts: _Counts, *, words: bool) -> tuple[list[Any], int]:
    """The outermost chrome inside ``container`` to drop, and the visible characters outside links left.

    Hidden regions, structural chrome and permalinks always go; a theme's chrome word (``words``: on a
    recognised generator's page) only where the element is provably chrome: mostly links, or no heading and at
    most half the content's text (or under :data:`GUARD_MIN_CHARS`: a footer beside a page of links). The
    container itself is never dropped, whatever its classes say.
    """
    from lxml import etree

    drops: list[Any] = []
    total = counts.words(container)
    kept = total
    inside: Any = None
    for event, el in etree.iterwalk(container, events=("start", "end")):
        if event == "end":
            if inside is el:
                inside = None
            continue
        if inside is not None or el is container:
            continue
        kind = marks.get(el)
        if kind is None:
            continue
        if kind == _WORD:
            if not words:
                continue
            w = counts.words(el)
            small = 2 * w <= total or w < GUARD_MIN_CHARS
            if not (counts.link_dense(el) or (small and not counts.heads.get(el, 0))):
                continue  # a content container a theme's class word names ("document clearer body")
            kept -= w
        drops.append(el)
        inside = el
    return drops, kept


_CREDIT_CLASSES = frozenset({"author", "editor", "corpauthor", "othercredit", "collab", "subtitle"})
"""A DocBook title page's headings that are text, not sections (as :mod:`admit.kb.parse` reads them)."""


def _is_toctree(el: Any) -> bool:
    """Sphinx's toctree (``div.toctree-wrapper``), DocBook's table of contents (``div.toc``) or Texinfo's
    (``div.contents``, the short ``div.shortcontents``; a node's list of its sections, ``ul.section-toc``,
    ``ul.mini-toc``, or its menu, ``table.menu``)."""
    if not isinstance(el.tag, str):
        return False
    classes = (el.get("class") or "").lower().split()
    if el.tag.lower() != "div":
        return not {"section-toc", "mini-toc", "menu"}.isdisjoint(classes)
    return not {"toctree-wrapper", "toc", "contents", "shortcontents"}.isdisjoint(classes)


def _keep_lone_toctrees(container: Any, drops: list[Any], marks: dict[Any, str], counts: _Counts) -> list[Any]:
    """``drops`` less the page's toctrees (Sphinx's ``toctree-wrapper``, DocBook's ``toc``) when nothing but
    headings would be left without them: a page that is a table of contents (Sphinx's ``Manuals``, ``Essays``, a
    book's page of chapters, a DocBook FAQ's index) is read as its list of pages, not stored empty (a title
    page's author or subtitle heading is text). A theme's chrome that holds the toctree (the body of a page of
    links) is read with what it holds dropped but the toctree. Linear in the container."""
    skip = set(drops)
    stack = [container]
    while stack:
        el = stack.pop()
        if el in skip or not isinstance(el.tag, str):
            continue
        credit = not _CREDIT_CLASSES.isdisjoint((el.get("class") or "").lower().split())
        if (el.tag.lower() not in _HEADING_TAGS or credit) and el.tag.lower() not in _QUIET_TAGS:
            if (el.text or "").strip():
                return drops
            stack.extend(el)
        if el is not container and (el.tail or "").strip():
            return drops
    out: list[Any] = []
    for el in drops:
        if _is_toctree(el):
            continue
        if marks.get(el) == _WORD and any(_is_toctree(d) for d in el.iter("div")):
            inner, _ = _drops(el, marks, counts, words=True)
            out.extend(i for i in inner if not _is_toctree(i))
            continue
        out.append(el)
    return out


def _link_chrome(body: Any, marks: dict[Any, str], counts: _Counts) -> int:
    """The visible characters outside links of the outermost chrome-word elements that are mostly links (a
    table of contents, a sidebar of pages): what the guard does not count as the page's text."""
    from lxml import etree

    total = 0
    inside: Any = None
    for event, el in etree.iterwalk(body, events=("start", "end")):
        if event == "end":
            if inside is el:
                inside = None
        elif inside is None and marks.get(el) == _WORD and counts.link_dense(el):
            total += counts.words(el)
            inside = el
    return total


def _read_meta(el: Any, out: PageScan, markers: set[str]) -> None:
    """A ``<meta>``: a redirect, the generator, a declared version."""
    name = (el.get("name") or el.get("property") or "").lower()
    content = (el.get("content") or "").strip()
    if (el.get("http-equiv") or "").lower() == "refresh":
        if is_redirect(content):
            out.page_kind = out.page_kind or "redirect"
    elif name == "generator" and (out.generator is None or out.generator == "docbook"):
        named = _generator_of(content)
        if out.generator is None or named == "gtk-doc":  # GTK-Doc's second meta refines DocBook XSL's
            out.generator = named
        if "docutils" in content.lower():
            markers.add("docutils")
    elif name in ("docsearch:version", "docusaurus_version", "version") and content not in ("", "current"):
        out.version_meta = out.version_meta or content


def is_redirect(refresh: str) -> bool:
    """Whether a ``<meta http-equiv="refresh">``'s content sends the reader elsewhere: a target URL, within
    :data:`REDIRECT_MAX_DELAY` seconds (``0; url=new/``). A refresh with no target reloads the page itself
    (``300``) and a slow one leaves the page to be read: both are normal pages."""
    m = _REFRESH.search(refresh)
    if m is None or not m.group(2):
        return False
    try:
        delay = float(m.group(1) or 0)
    except ValueError:
        return False
    return delay <= REDIRECT_MAX_DELAY


def _read_stated(out: PageScan, footers: Sequence[Any], stated: Sequence[Any], sidebars: Sequence[Any]) -> None:
    """A version stated on a title page (``releaseinfo``, ``revnumber``), in a footer or as a sidebar's
    ``Current version: 2.14.0``, and the site's name a footer gives with it (``-- Network UPS Tools 2.8.0``); a
    tool's own (``Sphinx 5.3``) is not the site's (it is kept as :attr:`PageScan.tool_version`)."""
    for el in footers[:4]:
        tm = _TOOL_VERSION.search(" ".join("".join(el.itertext()).split())[-300:])
        if tm is not None:
            out.tool_version = (tm.group(1).strip(), tm.group(2))
            break
    for el in stated:
        text = " ".join("".join(el.itertext()).split())[:200]
        m = _STATED_VERSION.search(text)
        if m is None and "subtitle" not in (el.get("class") or "").split():  # a subtitle says "Version" first
            m = _BARE_VERSION.search(text)
        if m is not None:
            out.version_stated = m.group(1).rstrip(".-+")
            return
    for el in footers[:4]:
        text = " ".join("".join(el.itertext()).split())
        for line in (text[-300:],):
            pm = _FOOTER_PRODUCT.search(line)
            if pm is not None and pm.group(1).strip().lower() not in _TOOL_NAMES:
                out.site_stated, out.version_stated = pm.group(1).strip(), pm.group(2).rstrip(".-+")
                return
            vm = _STATED_VERSION.search(line)
            if vm is not None and vm.group(1) != out.tool_version[1]:  # "Produced by Haddock version 2.25.1"
                out.version_stated = vm.group(1).rstrip(".-+")
                return
    for el in sidebars:
        cm = _CURRENT_VERSION.search(" ".join(" ".join(el.itertext()).split())[:2000])
        if cm is not None:
            out.version_stated = cm.group(1).rstrip(".-+")
            return


def drop_chrome(scan: PageScan) -> None:
    """Empty what :func:`scan_page` marked, keeping each element's tail (the text after it).

    Each marked element becomes an empty element in place (a ``span`` for an inline one, which joins its
    neighbours; a ``div``, a break, for any other): no text moves, so the work is the size of what is dropped,
    however many marked elements stand side by side.
    """
    if scan.man_head is not None:
        _drop_man_head(scan.man_head)
    if scan.credit is not None:
        scan.credit.tail = None
        for el in list(scan.credit.itersiblings()):
            el.getparent().remove(el)
    for el in scan.drop:
        tail = el.tail
        inline = isinstance(el.tag, str) and el.tag.lower() in INLINE_TAGS
        el.clear()
        el.tag = "span" if inline else "div"
        el.tail = tail


def javadoc_header(container: Any) -> None:
    """A Javadoc page's header block (``div.header``), read as the page's section: the package line over the
    class's title (``div.subTitle``: ``org.atinject.tck.auto``) and a package's annotation line
    (``<p>@NonnullByDefault</p>``) move under the title, where they are the page's own text (above it, each was
    a chunk of its own, the same on every class of the package); a package tree's "Package Hierarchies: All
    Packages" links (``span.packageHierarchyLabel`` and the list after it) go."""
    for header in list(container.iter("div")):
        if "header" not in (header.get("class") or "").split():
            continue
        title = next((c for c in header if isinstance(c.tag, str) and c.tag.lower() in _HEADING_TAGS), None)
        before_title = title is not None
        moved: list[Any] = []
        for child in list(header):
            if child is title:
                before_title = False
            if not isinstance(child.tag, str) or child.getparent() is not header:
                continue
            classes = (child.get("class") or "").lower().split()
            if before_title and ("subtitle" in classes or "sub-title" in classes or child.tag.lower() == "p"):
                header.remove(child)  # (its tail, white space in a Javadoc header, moves with it)
                assert title is not None
                anchor = moved[-1] if moved else title
                anchor.addnext(child)  # in their order
                moved.append(child)
            elif "packagehierarchylabel" in classes:
                nxt = child.getnext()
                if nxt is not None and isinstance(nxt.tag, str) and nxt.tag.lower() == "ul":
                    header.remove(nxt)
                header.remove(child)


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
    * DocBook's "Home" link (``PostgreSQL 15.20 Documentation``, ``Privoxy 3.0.34 User Manual``) names the site
      and version; the title stays.
    """
    title = " ".join(raw.split())
    heading = " ".join(heading.split())
    site = version = ""
    if title.lower() in _NO_TITLE:
        title = ""
    pv = _PAREN_VERSION.search(title) if title else None
    if pv is not None:  # "Welcome to Flask — Flask Documentation (2.2.x)": the version, then the plain docstitle
        title, version = pv.group(1), pv.group(2)
    generated = _generator_title(title, heading, generator)
    if generated is not None:
        return generated
    m = _DOCS_TITLE.search(title) if title else None
    alone = m is not None and not m.group(1)  # the docstitle alone: only a Sphinx site's, or one with a version
    if m is not None and (not alone or generator in ("sphinx", "docutils") or _SITE_VERSION.search(m.group(2))):
        page, docstitle = m.group(1) or "", m.group(2)
        if " — " in title:  # Sphinx's own separator: the docstitle may hold a dash ("Borg - Deduplicating ...")
            left, _, right = title.rpartition(" — ")
            dm = _DOCSTITLE.search(right)
            if dm is not None:
                page, docstitle = left, dm.group(1)
        site, own = _site_and_version(docstitle)
        version = own or version
        title = page if page.lower() not in _NO_TITLE else ""
        if not title:
            title = heading
    elif heading and title.startswith(heading) and (rest := _SEPARATOR.search(title[len(heading) :])) is not None:
        title, site = heading, rest.group(1)  # a heading that is a word of the title ("Schema") goes on below
    elif generator in ("mkdocs", "mkdocs-material", "docusaurus", "hugo") and title:
        sep = " | " if generator in ("docusaurus", "hugo") else " - "
        if sep in title:
            title, site = title.rsplit(sep, 1)
    if home_title and not version:
        site, version = _from_home(home_title, site)
    if home_title:
        title, site = _without_home(title, site, home_title)
    return SiteTitle(title=title or heading, site=site, version=version)


def _without_home(title: str, site: str, home_title: str) -> tuple[str, str]:
    """A title that ends in a separator and the home link's title (GTK-Doc's ``cairo_t: Cairo: A Vector Graphics
    Library``) without them, that title the site when none is known; other titles as they are."""
    if title == home_title or not title.endswith(home_title):
        return title, site
    rest = _SEPARATOR_END.search(title[: -len(home_title)])
    return (rest.group(1), site or home_title) if rest is not None else (title, site)


def _generator_title(title: str, heading: str, generator: str | None) -> SiteTitle | None:
    """A title in a generator's own form (Texinfo's ``node (manual)``, Doxygen's ``project: page``, Javadoc's
    ``Class (doctitle API)``, pydoc's), ``None`` for the rest."""
    if generator == "texinfo" and title:
        mk = _MAKEINFO_TITLE.search(title)
        th = _TEXI2HTML_TITLE.search(title) if mk is None else None
        if mk is not None or th is not None:
            node, manual = (mk.group(1), mk.group(2)) if mk is not None else (th.group(2), th.group(1))  # type: ignore[union-attr]
            site, version = _site_and_version(manual)
            return SiteTitle(title=node if node != "Top" else heading or node, site=site, version=version)
    if generator == "doxygen" and title:
        dm = _TEXI2HTML_TITLE.search(title)  # "libxkbcommon: Keymap Components": project: page
        if dm is not None:
            return SiteTitle(title=dm.group(2), site=dm.group(1))
    if generator == "javadoc" and title:
        jm = _MAKEINFO_TITLE.search(title)  # "Jsoup (jsoup Java HTML Parser 1.15.3 API)": page (doctitle)
        if jm is not None:
            doc = jm.group(2)
            doc = doc[: -len(" API")] if doc.endswith(" API") else doc
            vm = _JAVADOC_VERSION.search(doc)
            site, version = (vm.group(1), vm.group(2)) if vm is not None else (doc, "")
            return SiteTitle(title=jm.group(1), site=site if site != "Untitled" else "", version=version)
    if generator == "pydoc":
        pm = _PYDOC_TITLE.search(title)
        return SiteTitle(title=pm.group(1) if pm is not None else title or heading, site="Python")
    return None


def _from_home(home_title: str, site: str) -> tuple[str, str]:
    """The site (``site`` when known) and the version a home link's title names (DocBook's "Home")."""
    version = ""
    hm = _DOCS_TITLE.search(home_title)
    if hm is not None:
        home_site, version = _site_and_version(hm.group(2))
        site = site or home_site
    else:
        nm = _HOME_VERSION.search(home_title)  # "Privoxy 3.0.34 User Manual"
        if nm is not None:
            site, version = site or nm.group(1), nm.group(2).rstrip(".-+")
    return site, version


def _site_and_version(docstitle: str) -> tuple[str, str]:
    """``Black 23.1.0`` -> ``("Black", "23.1.0")``; ``3.11.2`` -> ``("", "3.11.2")``; ``Proj`` -> ``("Proj", "")``."""
    bare = _BARE_VERSION.search(docstitle)
    if bare is not None:
        return "", bare.group(1)
    sv = _SITE_VERSION.search(docstitle)
    return (sv.group(1), sv.group(2)) if sv is not None else (docstitle, "")


def site_info(scan: PageScan, title: SiteTitle) -> dict[str, str]:
    """The site facts kept with the document (``generator``, ``site``, ``version``; empty ones left out)."""
    site = title.site or scan.site_stated
    tool, tool_version = scan.tool_version
    info = {
        "generator": scan.generator or "",
        "site": site,
        "version": title.version
        or scan.version_meta
        or scan.version_stated
        or (tool_version if site and site.casefold() == tool.casefold() else ""),
    }
    return {k: v for k, v in info.items() if v}


def count_kinds(pairs: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Counts per kind of ``(path, kind)`` pairs, in :data:`SKIP_KINDS` order."""
    counts: dict[str, int] = {}
    for _, k in pairs:
        counts[k] = counts.get(k, 0) + 1
    order = list(SKIP_KINDS)
    return dict(sorted(counts.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))

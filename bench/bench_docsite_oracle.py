"""The Sphinx-source oracle: how much of each page's own text a built documentation site gives the store.

A Sphinx site ships its sources (``_sources/*.txt``), the exact text each page was built from: an oracle for
content that no hand labelling gives. Each site is read with admit's own path (the ingest's walk, site filter,
parser and chunker, then the cross-page copies rule :func:`admit.kb.copies.one_copy` where the tree has it; no
embedding), and per site the bench prints:

- ``pages``: pages the ingest takes up (source copies, assets, search and index pages left out as the ingest does);
- ``no chunk``: pages that give no chunk although their source shows text besides its titles (:func:`shows_text`;
  a page with no source counts too);
- ``stored``: the share of the sources' word 5-grams (casefolded words) that reach the stored chunks (title path
  and text; a chunk stored once for several pages counts for each of them), over all pages with a source. The
  source is read as its page could show it (:func:`source_text`): comments, link targets, substitution
  definitions, directive options and their values, the argument of a directive whose argument is no text (a
  path, a language, a module; every ``auto*`` directive, whose text comes from the code), the body of a toctree,
  ``raw``, ``index`` or hidden test code, roles' and links' targets and a role whose text is a number (an
  issue link shown as ``GH7362``) are left out; and its 5-grams are taken section by section
  (:func:`source_grams`: none runs from one section's title into the next); Markdown's markup is read as markup
  or as text, whichever the page shows more of (:func:`page_source_grams`);
- ``ceiling``: the same share in the page's own visible text (its ``<body>``'s text, scripts and styles left
  out): what any extraction could keep (reST markup, generated text and 5-grams across chunk edges are not in it);
- ``thin``: pages whose stored share is under half their ceiling;
- ``chrome``: the share of the chunks' 5-grams (every page's, before copies are dropped) that repeat on most pages
  and are in no page's source: navigation, footers, sidebars that reached the store;
- ``dup before``/``dup stored``: chunks that are an exact copy (same normalised text) of another, before and after
  the copies rule;
- ``adm. titles``: chunks whose heading path holds an admonition label (``Note``, ``Warning`` ...);
- ``version``: the site version the pages record (the most common; a page that states none takes its home
  page's, as the ingest does) and how many pages record one, ``-`` for none.

Then a hand-made check of non-Sphinx generators (DocBook/AsciiDoc: ``nut-doc``; MkDocs: ``mkdocs-doc``; Javadoc;
Doxygen), which ship no sources: pages, pages with no chunk, admonition titles, duplicates (also with each
chunk's title path, as it is embedded: the same short text under two headings is two passages), version, and
how many of a few strings known to be on their pages reach the chunks.

Packages are fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` into ``--cache`` (default
``/work/debdocs``; a folder ``CACHE/PACKAGE`` already there is used as it is; ``flock CACHE/.lock`` around it).
It measures whatever tree ``PYTHONPATH`` points at (a tree without the copies rule is read without it).

Run: ``python bench/bench_docsite_oracle.py`` (``--sites black flask ...`` for some, ``--json PATH`` for the rows
with the page names, ``--no-generators`` to skip the second table).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SITES: dict[str, str] = {
    "black": "python-black-doc",
    "requests": "python-requests-doc",
    "aiohttp": "python-aiohttp-doc",
    "flask": "python-flask-doc",
    "click": "python-click-doc",
    "jinja2": "python-jinja2-doc",
    "werkzeug": "python-werkzeug-doc",
    "attrs": "python-attr-doc",
    "cryptography": "python-cryptography-doc",
    "hypothesis": "python-hypothesis-doc",
    "structlog": "python-structlog-doc",
    "h5py": "python-h5py-doc",
    "simpy": "python-simpy-doc",
    "sqlalchemy-utils": "python-sqlalchemy-utils-doc",
    "pygments": "python-pygments-doc",
    "sphinx": "sphinx-doc",
    "traitlets": "python-traitlets-doc",
    "pint": "python-pint-doc",
    "borgbackup": "borgbackup-doc",
    "xarray": "python-xarray-doc",
    "nbclient": "python-nbclient-doc",
    "tornado": "python-tornado-doc",
}
"""Site -> Debian package (each ships a built Sphinx site with its ``_sources``); ``PACKAGE:FOLDER`` where the
package holds more than one site (groonga-doc: one per language)."""


@dataclass(frozen=True)
class Generator:
    """A non-Sphinx site for the hand-made check: its package, folder in it, and strings known to be on its pages."""

    package: str
    folder: str
    generator: str
    known: tuple[str, ...]


GENERATORS: dict[str, Generator] = {
    "nut": Generator(
        "nut-doc",
        "usr/share/doc/nut-doc/html",
        "AsciiDoc via DocBook XSL",
        ("upsmon", "upsd.conf", "NOTIFYFLAG", "LISTEN 127.0.0.1 3493", "MONITOR myups@localhost"),
    ),
    "mkdocs": Generator(
        "mkdocs-doc",
        "usr/share/doc/mkdocs/html",
        "MkDocs",
        ("mkdocs serve", "site_name", "nav:", "mkdocs gh-deploy", "use_directory_urls"),
    ),
    "atinject": Generator(
        "libatinject-jsr330-api-java-doc",
        "usr/share/doc/libatinject-jsr330-api-java/api",
        "Javadoc",
        ("@Inject", "Provider", "Qualifier", "Singleton", "Named"),
    ),
    "jsoncpp": Generator(
        "libjsoncpp-doc",
        "usr/share/doc/libjsoncpp-doc",
        "Doxygen",
        ("CharReaderBuilder", "StreamWriterBuilder", "isMember", "getMemberNames", "Json::Value"),
    ),
    "xkbcommon": Generator(
        "libxkbcommon-doc",
        "usr/share/doc/libxkbcommon-doc/html",
        "Doxygen (C)",
        (
            "xkb_keymap_new_from_names",
            "xkb_state_update_key",
            "xkb_compose_table_new_from_locale",
            "XKB_KEYSYM_CASE_INSENSITIVE",
            "xkb_context_new",
        ),
    ),
    "libtool": Generator(
        "libtool-doc",
        "usr/share/doc/libtool-doc",
        "Texinfo (makeinfo, one page)",
        ("libtool --mode=link", "-version-info", "LT_INIT", "libltdl", "lt_dlopen"),
    ),
    "flex": Generator(
        "flex-doc",
        "usr/share/doc/flex-doc/html",
        "Texinfo (makeinfo, split)",
        ("yylex", "%option reentrant", "YY_BUFFER_STATE", "yy_scan_string", "REJECT"),
    ),
    "gettext": Generator(
        "gettext-doc",
        "usr/share/doc/gettext",
        "Texinfo (texi2html), man pages",
        ("xgettext", "msgfmt", "bindtextdomain", "ngettext", "LINGUAS"),
    ),
    "groonga": Generator(
        "groonga-doc",
        "usr/share/doc/groonga-doc/en/html",
        "Sphinx (pydata), no sources shipped",
        ("table_create", "column_create", "load --table", "TokenBigram", "select --table"),
    ),
    "maint-guide": Generator(
        "maint-guide",
        "usr/share/doc/maint-guide/html",
        "DocBook (xsltproc)",
        ("dh_make", "debian/control", "debian/rules", "dpkg-buildpackage", "lintian"),
    ),
}

ADMONITION = re.compile(
    r"(?i)^(?:notes?|tips?|hint|warning|caution|danger|important|attention|error|see also|todo|deprecated)\s*:?$"
)
"""An admonition's label as a whole heading."""

_WORD = re.compile(r"\w+")


_MYST_FENCE = re.compile(r"(?m)^(\s*(?:```+|~~~+|:::+))\s*(?:\{([\w:-]+)\}\s*(.*)|[\w+-]+\s*)$")
_MYST_ROLE_TARGET = re.compile(r"\{[\w:-]+\}`([^`<]*?)\s*<[^<>`]*>`")
_MYST_BARE_REF = re.compile(r"\{(?:ref|doc|numref|any)\}`[^`<]*`")
_MYST_ROLE = re.compile(r"\{[\w:-]+\}`!?(?:~(?:[\w.]*\.)?)?([^`]*)`")
_MD_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\([^()\s]*\)")
_MYST_LINE = re.compile(r"(?m)^\s*(?:\([\w:.-]+\)=|%.*|<!--.*-->)\s*$")
_EXPLICIT = re.compile(r"^(\s*)\.\.(?:\s+(.*))?$")
_DIRECTIVE_LINE = re.compile(r"^([\w:.-]+)::(?:\s+(.*))?$")
_OPTION_LINE = re.compile(r"^\s*:[\w -]+:(?=\s|$)")
_FIELD = re.compile(r"(?m)^(\s*):[^:`\n]+:(?=\s|$)")
_VERSION_LEADS = {
    "versionadded": "New in version ",
    "versionchanged": "Changed in version ",
    "deprecated": "Deprecated since version ",
}
"""What Sphinx shows before a version directive's argument."""
_ROLE_TARGET = re.compile(r":[\w-]+(?::[\w-]+)*:`([^`<]*?)\s*<[^<>`]*>`")
_ROLE_BARE_REF = re.compile(r":(?:ref|doc|numref|term-ref|any):`[^`<]*`")
_ROLE = re.compile(r":[\w-]+(?::[\w-]+)*:`!?(?:~(?:[\w.]*\.)?)?([^`]*)`")
_ROLE_NUMBER = re.compile(r":[\w-]+(?::[\w-]+)*:`#?\d+`")
"""A role whose text is a number: an issue or pull-request link (extlinks' ``:issue:`7362```, shown as its caption,
``GH7362``), a PEP or an RFC (``PEP 8``): the page shows a word the source does not hold; no 5-gram runs across it."""
_LINK = re.compile(r"`([^`<]*?)\s*<[^<>`]*>`__?")
_SUBST = re.compile(r"\|[\w .-]+\|_?")

SHOWN_ARGUMENT_NOT = frozenset(
    {"currentmodule", "module", "highlight", "index", "toctree", "include", "literalinclude", "image", "figure",
     "code-block", "sourcecode", "code", "raw", "only", "ifconfig", "contents", "tabularcolumns", "default-role",
     "role", "autosummary", "testsetup", "testcleanup", "testcode", "testoutput", "doctest", "plot", "graphviz",
     "ipython", "jupyter-execute", "click:example", "click:run", "meta", "sectionauthor", "codeauthor",
     "program", "default-domain", "tab", "include-bit"}
)  # fmt: skip
"""Directives whose argument is no text of the page (a path, a language, a module, a condition); ``auto*``
directives too (their text comes from the code)."""
HIDDEN_BODY = frozenset(
    {"toctree", "raw", "index", "testsetup", "testcleanup", "tabularcolumns", "meta", "autosummary"}
)
"""Directives whose body is not the page's text (document names, raw HTML, index entries, hidden test code)."""


_BREAK = "\x00"
"""Where the page starts a block of its own (a directive, a field of a field list): no 5-gram runs across it."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _fence(m: re.Match[str]) -> str:
    """A MyST fence's opening line: its language or directive name goes, a shown directive's argument stays."""
    name = (m.group(2) or "").lower()
    short = name.split(":")[-1]
    shown = name and not (short.startswith("auto") or name in SHOWN_ARGUMENT_NOT or short in SHOWN_ARGUMENT_NOT)
    return m.group(1) + " " + (_VERSION_LEADS.get(short, "") + (m.group(3) or "") if shown else "")


def source_text(raw: str, *, myst: bool = True) -> str:
    """:func:`_source_text` without its block breaks."""
    return _source_text(raw, myst=myst).replace(_BREAK, " ")


def _notebook(raw: str) -> str | None:
    """A Jupyter notebook's source (``.ipynb.txt``: JSON) as its cells' text and their outputs' text, each a block;
    ``None`` for a source that is not a notebook."""
    if not raw.lstrip().startswith("{"):
        return None
    try:
        nb = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None

    def text(v: Any) -> str:
        return "".join(v) if isinstance(v, list) else v if isinstance(v, str) else ""

    parts: list[str] = []
    for cell in nb["cells"]:
        if not isinstance(cell, dict):
            continue
        parts.append(text(cell.get("source")))
        for out in cell.get("outputs") or []:
            if isinstance(out, dict):
                parts.append(text(out.get("text")) or text((out.get("data") or {}).get("text/plain")))
    return ("\n" + _BREAK + "\n").join(parts)


def _source_text(raw: str, *, myst: bool = True) -> str:
    """A reST source as its page could show it: the markup's words and what no page shows left out.

    * explicit markup: a comment (``.. any text``) and its indented block; a link target (``.. _label: URL``)
      and a substitution definition (``.. |name| replace:: ...``) with theirs; a directive's options
      (``:maxdepth: 2``, ``:members:``) with their values; the argument of a directive whose argument is no text
      of the page (:data:`SHOWN_ARGUMENT_NOT`: a path, a language, a module name; every ``auto*`` directive:
      its text comes from the code); the body of a directive whose body is not text (:data:`HIDDEN_BODY`:
      a toctree's document names, raw HTML, index entries, hidden test code);
    * inline: a role's or link's target (``:ref:`text <label>``` -> ``text``; ``:ref:`label``` and
      ``:doc:`path```, whose shown text is another page's title, go; ``:class:`~a.b.C``` -> ``C``), a
      substitution's reference (``|name|``), a field's name (``:param x:``);
    * a Jupyter notebook (``.ipynb``): its cells' text and outputs, not its JSON;
    * MyST (``.md`` sources): a fence's language or directive name (and the argument where a reST directive's
      would go), roles' and links' targets (``{doc}`text <page>```, ``[text](page.md)``), targets
      (``(label)=``) and comments.
    """
    raw = _notebook(raw) or raw
    out: list[str] = []
    lines = raw.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _EXPLICIT.match(line)
        if m is None:
            out.append(line)
            i += 1
            continue
        base = len(m.group(1))
        rest = (m.group(2) or "").strip()
        d = _DIRECTIVE_LINE.match(rest)
        keep_body = True
        if d is not None and not rest.startswith("|"):
            name = d.group(1).lower()
            short = name.split(":")[-1] if name.count(":") == 1 and not name.startswith("click") else name
            shown = not (short.startswith("auto") or name in SHOWN_ARGUMENT_NOT or short in SHOWN_ARGUMENT_NOT)
            lead = _VERSION_LEADS.get(short, "")
            out.append(" " * base + _BREAK + lead + ((d.group(2) or "") if shown else ""))
            keep_body = name not in HIDDEN_BODY and short not in HIDDEN_BODY
            i += 1
            while i < len(lines) and _indent(lines[i]) > base and _OPTION_LINE.match(lines[i]):
                i += 1  # the directive's options
            if keep_body:
                continue  # its body is read as the page's text, its own markup included
        elif rest.startswith("[") and "]" in rest:  # a footnote or citation: its text is shown
            out.append(" " * base + rest.split("]", 1)[1])
            i += 1
            continue
        else:  # a comment, a link target, a substitution definition
            keep_body = False
            i += 1
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
            if keep_body:
                out.append(lines[i])
            elif not lines[i].strip():
                out.append("")
            i += 1
    text = "\n".join(out)
    subs: list[tuple[re.Pattern[str], str]] = [
        (_ROLE_NUMBER, _BREAK),
        (_ROLE_TARGET, r"\1"),
        (_ROLE_BARE_REF, ""),
        (_ROLE, r"\1"),
        (_LINK, r"\1"),
        (_SUBST, ""),
        (_FIELD, r"\1" + _BREAK),
    ]
    if myst:
        text = _MYST_FENCE.sub(_fence, text)
        subs += [(_MYST_ROLE_TARGET, r"\1"), (_MYST_BARE_REF, ""), (_MYST_ROLE, r"\1"), (_MD_LINK, r"\2")]
        subs += [(_MYST_LINE, "")]
    for pat, rep in subs:
        text = pat.sub(rep, text)
    return text


_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+:.<>_])\1{2,}\s*$")


def source_grams(raw: str, *, myst: bool = True) -> set[tuple[str, ...]]:
    """The word 5-grams of a page's source as its page could show it (:func:`source_text`), section by
    section: no 5-gram runs from one section's title or text into the next section's title (a run of titles
    whose sections' text comes from the code, ``cast_if escape_like get_bind ...``, is no text any chunk holds),
    nor into a directive or a field of a field list (the page shows each as a block of its own: a signature, a
    parameter's name and type before its text)."""
    lines = _source_text(raw, myst=myst).splitlines()
    blocks: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not _UNDERLINE.match(line) and _UNDERLINE.match(nxt):
            blocks.append([])
        blocks[-1].append(line)
    out: set[tuple[str, ...]] = set()
    for b in blocks:
        for part in "\n".join(b).split(_BREAK):
            out |= grams(part)
    return out


_MD_TITLE = re.compile(r"^\s{0,3}#{1,6}\s")


def shows_text(raw: str) -> bool:
    """Whether a page's source, as its page could show it (:func:`source_text`), has text besides its section
    titles: a page whose source is a title over an ``automodule`` the build could not fill (hypothesis'
    ``ghostwriter``) shows only its title, and giving no chunk is right for it (the ingest report names it)."""
    lines = source_text(raw).splitlines()
    body: list[str] = []
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if _UNDERLINE.match(line) or _MD_TITLE.match(line) or (line.strip() and _UNDERLINE.match(nxt)):
            continue
        body.append(line)
    return bool(_WORD.search("\n".join(body)))


def page_source_grams(raw: str, visible: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """:func:`source_grams` of a page's source, its Markdown markup read as markup (MyST) or as text, whichever
    of the two the page shows more of: a Markdown source built without a Markdown parser shows
    ``[text](page.md)`` as it is (Debian's Black)."""
    a, b = source_grams(raw), source_grams(raw, myst=False)
    return a if len(a & visible) * len(b) >= len(b & visible) * len(a) else b


def grams(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """The word ``n``-grams of ``text`` (casefolded words)."""
    w = _WORD.findall(text.casefold())
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def fetch(package: str, cache: Path) -> Path:
    """``CACHE/PACKAGE``, unpacked from the package (``apt-get download`` + ``dpkg-deb -x``) when not there."""
    out = cache / package
    if out.is_dir():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    debs = cache / "cache"
    debs.mkdir(exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.is_dir():
            if not sorted(debs.glob(f"{package}_*.deb")):
                subprocess.run(["apt-get", "download", "-qq", package], cwd=debs, check=True)
            deb = sorted(debs.glob(f"{package}_*.deb"))[-1]
            tmp = cache / f"{package}.tmp"
            subprocess.run(["rm", "-rf", str(tmp)], check=True)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
            tmp.rename(out)
    return out


def sphinx_root(tree: Path) -> Path:
    """The built site's folder: the one holding ``_sources`` (the shallowest)."""
    found = sorted(tree.rglob("_sources"), key=lambda p: len(p.parts))
    if not found:
        raise SystemExit(f"no _sources folder under {tree}: not a Sphinx site with its sources")
    return found[0].parent


def theme_of(root: Path) -> str:
    """The Sphinx theme a site's home page uses, from its stylesheets and markup."""
    try:
        html = (root / "index.html").read_text("utf-8", "replace")
    except OSError:
        return "?"
    css = re.findall(r'href="_static/([\w./-]+)\.css', html)
    for mark, name in (
        ("furo", "furo"),
        ("pydata", "pydata"),
        ("alabaster", "alabaster"),
        ("bootstrap", "bootstrap"),
        ("classic", "classic"),
    ):
        if any(mark in c for c in css):
            return name
    if "bd-sidebar" in html:
        return "pydata"
    if "css/theme" in css and "wy-nav" in html:
        return "read-the-docs"
    skip = {"pygments", "basic", "copybutton", "tabs", "graphviz", "custom"}
    own = [c.rsplit("/", 1)[-1] for c in css if c.rsplit("/", 1)[-1] not in skip]
    return f"project ({own[0]})" if own else "?"


@dataclass
class Page:
    rel: str
    title: str
    chunks: list[tuple[str, tuple[str, ...], str]]
    """``(id, headings, text)``."""
    version: str = ""
    source: str | None = None
    visible: str = ""
    guarded: bool = False


@dataclass
class SiteRead:
    pages: list[Page] = field(default_factory=list)
    seconds: float = 0.0
    copies: Any = None
    """The copies rule's decision (``None``: the tree has none)."""


def read_site(root: Path, *, sources: bool, max_tokens: int = 350) -> SiteRead:
    """Every page of the site at ``root`` as the ingest reads it (walk, filter, parse, chunk; copies rule)."""
    from admit.backends.tokenizers import resolve_tokenizer
    from admit.kb.chunking import chunk_document
    from admit.kb.docsite import SiteFilter
    from admit.kb.ingest import _walk
    from admit.kb.parse import FORMATS, parse_document

    tok = resolve_tokenizer("cl100k_base")
    site = SiteFilter(())
    try:  # a page that states no version takes its home page's, as the ingest does
        from admit.kb.docsite import HomeVersions

        homes: Any = HomeVersions()
    except ImportError:
        homes = None
    out = SiteRead()
    t0 = time.process_time()
    for f, base in _walk([root]):
        assert base is not None
        rel = f.relative_to(base).as_posix()
        try:  # a compressed page (changelog.html.gz) is read as the page it holds, as the ingest reads it
            from admit.kb.files import document_name, page_text
        except ImportError:  # a tree that reads none
            document_name, page_text = (lambda n: n), (lambda raw, n, m: raw.decode("utf-8-sig"))
        name = document_name(f.name)
        fmt = FORMATS.get(Path(name).suffix.lower())
        if fmt is None or site.kind(f, rel, in_folder=True) is not None:
            continue
        rel = rel[: len(rel) - len(f.name)] + name
        try:
            text = page_text(f.read_bytes(), f.name, 64 << 20)
            doc = parse_document(text, fmt, fallback_title=Path(name).stem.replace("-", " ").replace("_", " "))
        except (OSError, ValueError):
            continue
        if getattr(doc, "page_kind", None) is not None:
            continue
        pieces = chunk_document(doc, tokenizer=tok, max_tokens=max_tokens)
        sid = rel.rsplit(".", 1)[0]
        site_meta = dict(getattr(doc, "site", {}) or {})
        meta = dict(getattr(doc, "metadata", {}) or {})
        page = Page(
            rel=rel,
            title=doc.title,
            chunks=[(f"{sid}#{p.section_path}", tuple(p.headings), p.text) for p in pieces],
            version=site_meta.get("version", "")
            or dict(doc.front_matter).get("version", "")
            or (homes.version_for(f, base) if homes is not None and fmt == "html" else ""),
            guarded=bool(
                getattr(doc, "content_guard", "") or meta.get("extract_guard") or site_meta.get("extract_guard")
            ),
        )
        out.pages.append(page)
        if sources and fmt == "html":
            page.source = _source_of(base, rel)
            page.visible = _visible_text(text)
    out.seconds = time.process_time() - t0
    try:
        from admit.kb.copies import PageChunks, one_copy
    except ImportError:  # a tree without the copies rule: every chunk is stored
        return out
    out.copies = one_copy([PageChunks("site", p.title, p.chunks) for p in out.pages])
    return out


def _source_of(root: Path, rel: str) -> str | None:
    stem = rel.rsplit(".", 1)[0]
    src = root / "_sources"
    for cand in (f"{stem}.rst.txt", f"{stem}.txt", f"{stem}.md.txt", f"{stem}.ipynb.txt"):
        p = src / cand
        if p.is_file():
            return p.read_text("utf-8", "replace")
    folder, _, name = f"_sources/{stem}".rpartition("/")
    hits = sorted((root / folder).glob(f"{name}.*.txt")) if (root / folder).is_dir() else []
    return hits[0].read_text("utf-8", "replace") if hits else None


def _visible_text(html: str) -> str:
    from lxml import etree
    from lxml import html as lxml_html

    try:
        root = lxml_html.document_fromstring(html.encode("utf-8", "surrogatepass"))
    except (etree.ParserError, ValueError):
        return ""
    etree.strip_elements(root, "script", "style", "noscript", "template", with_tail=False)
    body = root.find("body")
    return " ".join((body if body is not None else root).itertext())


def stored_streams(read: SiteRead) -> dict[str, list[str]]:
    """Per page, the texts of the stored chunks that hold its text (its kept chunks, and for a chunk not stored
    as a copy, the kept copy): title path (with the other sections a short chunk stands for, its ``also under``
    titles) and text, one string per chunk."""
    kept: dict[str, str] = {}
    under = getattr(read.copies, "also_under", {}) if read.copies is not None else {}
    for p in read.pages:
        for cid, heads, text in p.chunks:
            kept[cid] = " ".join((p.title, *heads, *under.get(cid, ()), text))
    dropped = read.copies.dropped if read.copies is not None else {}
    return {p.rel: [kept[dropped.get(cid, cid)] for cid, _, _ in p.chunks] for p in read.pages}


def duplicates(texts: Iterable[str]) -> tuple[int, int]:
    """``(chunks, chunks that repeat another's normalised text)``."""
    from admit._text import normalize

    c = Counter(normalize(t) for t in texts)
    n = sum(c.values())
    return n, n - len(c)


def measure_sphinx(name: str, package: str, cache: Path) -> dict[str, Any]:
    package, _, folder = package.partition(":")
    root = sphinx_root(fetch(package, cache) / folder)
    read = read_site(root, sources=True)
    streams = stored_streams(read)
    src_total = src_stored = src_visible = thin = 0
    no_chunk: list[str] = []
    all_src: set[tuple[str, ...]] = set()
    page_grams: list[set[tuple[str, ...]]] = []
    for p in read.pages:
        sg = page_source_grams(p.source, grams(p.visible)) if p.source else set()
        all_src |= sg
        chunk_grams: set[tuple[str, ...]] = set()
        for s in streams[p.rel]:
            chunk_grams |= grams(s)
        page_grams.append({g for _, _, t in p.chunks for g in grams(t)})
        ceiling_grams = sg & grams(p.visible)
        if not p.chunks and (p.source is None or shows_text(p.source)):
            no_chunk.append(p.rel)
        if not sg:
            continue
        stored, ceiling = len(sg & chunk_grams), len(ceiling_grams)
        src_total += len(sg)
        src_stored += stored
        src_visible += ceiling
        thin += stored < ceiling / 2
    df: Counter[tuple[str, ...]] = Counter(g for pg in page_grams for g in pg)
    most = len(read.pages) / 2
    chrome_grams = {g for g, k in df.items() if k > most and g not in all_src} if len(read.pages) >= 3 else set()
    chunk_total = chunk_chrome = 0
    for p in read.pages:
        for _, _, t in p.chunks:
            cg = grams(t)
            chunk_total += len(cg)
            chunk_chrome += len(cg & chrome_grams)
    texts = [t for p in read.pages for _, _, t in p.chunks]
    dropped = read.copies.dropped if read.copies is not None else {}
    stored_texts = [t for p in read.pages for cid, _, t in p.chunks if cid not in dropped]
    n_before, dup_before = duplicates(texts)
    n_stored, dup_stored = duplicates(stored_texts)
    adm = sum(
        1
        for p in read.pages
        for cid, heads, _ in p.chunks
        if cid not in dropped and any(ADMONITION.match(h) for h in heads)
    )
    versions = Counter(p.version for p in read.pages if p.version)
    return {
        "site": name,
        "package": package,
        "theme": theme_of(root),
        "pages": len(read.pages),
        "no_chunk": len(no_chunk),
        "no_chunk_pages": no_chunk,
        "guarded": sum(p.guarded for p in read.pages),
        "chunks_stored": n_stored,
        "stored": src_stored / src_total if src_total else 0.0,
        "ceiling": src_visible / src_total if src_total else 0.0,
        "thin": thin,
        "chrome": chunk_chrome / chunk_total if chunk_total else 0.0,
        "dup_before": dup_before / n_before if n_before else 0.0,
        "dup_stored": dup_stored / n_stored if n_stored else 0.0,
        "admonition_titles": adm,
        "version": _version_cell(versions, len(read.pages)),
        "cpu_s": read.seconds,
    }


def measure_generator(name: str, gen: Generator, cache: Path) -> dict[str, Any]:
    root = fetch(gen.package, cache) / gen.folder
    read = read_site(root, sources=False)
    dropped = read.copies.dropped if read.copies is not None else {}
    texts = [t for p in read.pages for _, _, t in p.chunks]
    stored = [(p, cid, heads, t) for p in read.pages for cid, heads, t in p.chunks if cid not in dropped]
    n_before, dup_before = duplicates(texts)
    n_stored, dup_stored = duplicates(t for *_, t in stored)
    _, dup_titled = duplicates(" ".join((p.title, *heads, t)) for p, _, heads, t in stored)
    adm = sum(1 for _, _, heads, _ in stored if any(ADMONITION.match(h) for h in heads))
    blob = "\n".join(t for *_, t in stored)
    versions = Counter(p.version for p in read.pages if p.version)
    return {
        "site": name,
        "package": gen.package,
        "generator": gen.generator,
        "pages": len(read.pages),
        "no_chunk": sum(not p.chunks for p in read.pages),
        "no_chunk_pages": [p.rel for p in read.pages if not p.chunks],
        "chunks_stored": n_stored,
        "admonition_titles": adm,
        "admonition_share": adm / n_stored if n_stored else 0.0,
        "dup_before": dup_before / n_before if n_before else 0.0,
        "dup_stored": dup_stored / n_stored if n_stored else 0.0,
        "dup_titled": dup_titled / n_stored if n_stored else 0.0,
        "version": _version_cell(versions, len(read.pages)),
        "known": f"{sum(k in blob for k in gen.known)}/{len(gen.known)}",
        "known_missing": [k for k in gen.known if k not in blob],
        "cpu_s": read.seconds,
    }


def _version_cell(versions: Counter[str], pages: int) -> str:
    """The version most pages record, and how many pages record one: ``2.8.0 (186/186)``; ``-`` for none."""
    if not versions:
        return "-"
    return f"{versions.most_common(1)[0][0]} ({sum(versions.values())}/{pages})"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = (
        "| site | theme | pages | no chunk | stored | ceiling | thin | chrome | dup before | dup stored "
        "| adm. titles | version | chunks | CPU s |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        lines.append(
            f"| {r['site']} | {r['theme']} | {r['pages']} | {r['no_chunk']} | {_pct(r['stored'])} | "
            f"{_pct(r['ceiling'])} | {r['thin']} | {_pct(r['chrome'])} | {_pct(r['dup_before'])} | "
            f"{_pct(r['dup_stored'])} | {r['admonition_titles']} | {r['version']} | {r['chunks_stored']} | "
            f"{r['cpu_s']:.1f} |"
        )
    return "\n".join(lines)


def gen_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| site | generator | pages | no chunk | adm. titles | dup before | dup stored | dup stored, with title path "
        "| version | known strings | chunks |",
        "|" + "---|" * 11,
    ]
    for r in rows:
        lines.append(
            f"| {r['site']} | {r['generator']} | {r['pages']} | {r['no_chunk']} | {r['admonition_titles']} "
            f"({_pct(r['admonition_share'])}) | {_pct(r['dup_before'])} | {_pct(r['dup_stored'])} | "
            f"{_pct(r['dup_titled'])} | {r['version']} | "
            f"{r['known']} | {r['chunks_stored']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=Path("/work/debdocs"), help="where packages are unpacked")
    ap.add_argument("--sites", nargs="*", default=list(SITES), help=f"of {', '.join(SITES)}")
    ap.add_argument("--generators", nargs="*", default=list(GENERATORS), help=f"of {', '.join(GENERATORS)}")
    ap.add_argument("--no-generators", action="store_true")
    ap.add_argument("--json", type=Path, help="write every row (with page names) here")
    args = ap.parse_args(argv)
    rows = [measure_sphinx(s, SITES[s], args.cache) for s in args.sites]
    have_copies = True
    try:
        import admit.kb.copies  # noqa: F401
    except ImportError:
        have_copies = False
    print(f"tree: {'with' if have_copies else 'without'} the copies rule (admit.kb.copies)")
    print(table(rows))
    if rows:
        tot_pages = sum(r["pages"] for r in rows)
        print(
            f"\n{len(rows)} sites, {tot_pages} pages: {sum(r['no_chunk'] for r in rows)} with no chunk; stored "
            f"{_pct(min(r['stored'] for r in rows))}-{_pct(max(r['stored'] for r in rows))}; chrome at most "
            f"{_pct(max(r['chrome'] for r in rows))}; dup stored at most {_pct(max(r['dup_stored'] for r in rows))}; "
            f"{sum(r['cpu_s'] for r in rows):.1f} CPU-s"
        )
    gens = [] if args.no_generators else [measure_generator(g, GENERATORS[g], args.cache) for g in args.generators]
    if gens:
        print()
        print(gen_table(gens))
        for g in gens:
            if g["known_missing"] or g["no_chunk_pages"]:
                print(f"  {g['site']}: missing {g['known_missing']}; no chunk: {g['no_chunk_pages'][:8]}")
    if args.json:
        args.json.write_text(json.dumps({"sphinx": rows, "generators": gens}, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

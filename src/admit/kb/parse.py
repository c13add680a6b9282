"""Parsers: Markdown (a line-based heading splitter that respects fenced code and front matter), HTML
(libxml2 through ``lxml``, linear in the input), man pages (their roff source: :mod:`admit.kb.manpage`), plain
text. PDF is not supported (no parser is shipped).

Every parser is linear in the document: the patterns are RE2 (:mod:`admit._linear`), the Markdown splitter
reads each line once, and the HTML walk visits each element once (``tests/security/test_linear_time.py``
counts it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from admit import _linear
from admit.errors import ConfigError, InputError, MissingExtraError
from admit.kb import docsite, manpage

__all__ = [
    "FORMATS",
    "PARSER_REVISIONS",
    "SUPPORTED",
    "ParsedDocument",
    "Section",
    "format_of",
    "parse_document",
    "parse_html",
    "parse_markdown",
    "parse_text",
]

FORMATS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
}
"""File suffix -> parser. A man page's suffix (``.1`` .. ``.9``, ``.3ssl``) is read by ``man``: :func:`format_of`."""

SUPPORTED = (*sorted(FORMATS), "man pages (.1 to .9)")
"""What an error about an unsupported file names as supported."""


def format_of(name: str) -> str | None:
    """The parser for a file of this name (its ``.gz`` already removed: ``document_name``), or ``None``."""
    dot = name.rfind(".")
    if dot < 0:
        return None
    fmt = FORMATS.get(name[dot:].lower())
    if fmt is None and manpage.is_man_name(name):
        return "man"
    return fmt


PARSER_REVISIONS: dict[str, str] = {"html": "docsite-6", "markdown": "md-2"}
"""Parsers whose output changed for the same file (HTML: a built site's main content, titles without the site's
suffix, inline elements joined; docsite-2: main content by structure and text with the guard, text outside
blocks, hidden regions, admonitions as text, the version from a footer or title page; docsite-3: Texinfo's and
Doxygen's navigation and titles, a definition term's classifier after a colon, MkDocs known by its search
box; docsite-4: a ``nosearch`` block is chrome on any page, a CGI's header lines and man2html's page header
(``Section: ... Return to Main Contents``) are dropped; docsite-5: GTK-Doc's summary tables, index pages and
page titles, its ``Parameters`` and ``Returns`` as labels, an empty last table cell; docsite-6: a list item or
definition that holds a heading, code or a table read as its parts (Javadoc's member entries, code keeping its
lines), a table with a header row as one Markdown table (split with its header repeated), zero-width spaces
gone, Javadoc's member summaries and titles (``Jsoup (jsoup 1.15.3 API)``); Markdown md-2: HTML
comments ``<!-- ... -->`` are no text): part of a source's ingest key, so a re-ingest re-reads files it would
otherwise call unchanged."""

_HEADING = _linear.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", name="ingest.heading")
_FENCE = _linear.compile(r"^[ \t]{0,3}(`{3,}|~{3,})", name="ingest.fence")
_ANCHOR = _linear.compile(r"\{#[^}]*\}\s*$", name="ingest.heading_anchor")
_PARAGRAPH_BREAK = _linear.compile(r"\n\s*\n", name="ingest.paragraph_break")
_EMPHASIS = str.maketrans("", "", "*_`")


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """A run of paragraphs under one heading path (the document title excluded)."""

    headings: tuple[str, ...]
    """Headings from the top section down to this one (``()`` for text before any heading)."""
    paragraphs: tuple[str, ...]
    """Paragraph texts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedDocument:
    """A parsed document."""

    title: str
    """Document title (front matter, the single H1, ``<title>``, or the file name)."""
    sections: tuple[Section, ...]
    """Sections in document order."""
    front_matter: Mapping[str, str] = field(default_factory=dict)
    """Markdown front matter (``key: value`` lines)."""
    language: str | None = None
    """Language declared by the document (HTML ``lang``, front matter)."""
    site: Mapping[str, str] = field(default_factory=dict)
    """A page of a built documentation site: ``generator`` (``sphinx``, ``mkdocs``, ``docbook`` ...), ``site``
    (its name) and ``version`` where the page says them (:mod:`admit.kb.docsite`); empty for other documents."""
    page_kind: str | None = None
    """``search``, ``index``, ``listing`` (a page that lists a site rather than documents it) or ``redirect`` (a
    stub that sends the reader elsewhere): not ingested from a folder."""
    content_guard: str = ""
    """HTML only: empty when the page was read as its main content; otherwise the guard caught the page (what
    was taken as main content was under half the page's visible text, so the page's whole visible text was
    read instead) and this says so in one line (``main content was 3% of the page's visible text; ...``), for
    the ingest report to name the page."""


def _front_matter(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    if not lines or lines[0].strip() != "---":
        return {}, lines
    for i in range(1, min(len(lines), 60)):
        if lines[i].strip() in {"---", "..."}:
            meta: dict[str, str] = {}
            for raw in lines[1:i]:
                if ":" in raw:
                    k, v = raw.split(":", 1)
                    meta[k.strip().lower()] = v.strip().strip("\"'")
            return meta, lines[i + 1 :]
    return {}, lines


def _clean_heading(text: str) -> str:
    m = _ANCHOR.search(text)  # {#custom-anchor} at the end
    if m is not None:
        text = text[: m.start()]
    return text.translate(_EMPHASIS).strip()


def _uncommented(line: str, in_comment: bool) -> tuple[str | None, bool]:
    """``line`` without its HTML comments (``<!-- ... -->``, which a renderer never shows), and whether a comment
    is still open at its end. ``None``: the whole line was inside a comment (no text, not even a blank line).
    A ``<!--`` inside an inline code span (an odd number of backticks before it) is text. Linear: each character
    is looked at a bounded number of times."""
    if not in_comment and "<!--" not in line:
        return line, False
    opens_block = not in_comment and len(line) - len(line.lstrip(" ")) < 4 and line.lstrip(" ").startswith("<!--")
    out: list[str] = []
    pos, n = 0, len(line)
    ticks = 0  # backticks seen in the text kept so far: odd means inside an inline code span
    while pos < n:
        if in_comment:
            end = line.find("-->", pos)
            if end < 0:
                break
            pos, in_comment = end + 3, False
            continue
        start = line.find("<!--", pos)
        if start < 0:
            out.append(line[pos:])
            break
        ticks += line.count("`", pos, start)
        if ticks % 2:
            out.append(line[pos : start + 4])
            pos = start + 4
            continue
        out.append(line[pos:start])
        pos, in_comment = start + 4, True
    kept = "".join(out)
    if not kept.strip():  # a comment alone on its line is an HTML block (it ends a paragraph); inside one, nothing
        return ("" if opens_block else None), in_comment
    return kept, in_comment


def _markdown_blocks(lines: list[str], *, comments: bool) -> tuple[list[tuple[int, str] | list[str]], bool]:
    """Headings (``(level, text)``) and paragraphs (their lines) of Markdown ``lines``, code fences kept whole;
    ``comments``: HTML comments outside fences are left out. Also: whether a comment was still open at the end."""
    blocks: list[tuple[int, str] | list[str]] = []
    para: list[str] = []
    fence: str | None = None
    in_comment = False

    def flush() -> None:
        if para and any(x.strip() for x in para):
            blocks.append(list(para))
        para.clear()

    for raw in lines:
        if fence is not None:
            para.append(raw)
            if raw.strip().startswith(fence):
                fence = None
            continue
        line = raw
        if comments:
            kept, in_comment = _uncommented(raw, in_comment)
            if kept is None:  # inside a comment that a line before opened
                continue
            line = kept
        m = _FENCE.match(line)
        if m:
            if para and not para[-1].strip():
                flush()
            fence = m.group(1)[0] * len(m.group(1))
            para.append(line)
            continue
        h = _HEADING.match(line)
        if h:
            flush()
            blocks.append((len(h.group(1)), _clean_heading(h.group(2))))
            continue
        if not line.strip():
            flush()
            continue
        para.append(line)
    flush()
    return blocks, in_comment


def parse_markdown(text: str, *, fallback_title: str) -> ParsedDocument:
    """Split Markdown into sections by ATX headings (``#``..``######``), ignoring headings inside code fences.

    HTML comments (``<!-- ... -->``, on one line or several) are no text, outside code fences and inline code
    spans. A ``<!--`` that no ``-->`` closes is read as text (the document is read again with comments kept), so
    a stray one never hides the rest of a page."""
    meta, lines = _front_matter(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    blocks, unclosed = _markdown_blocks(lines, comments=True)
    if unclosed:
        blocks, _ = _markdown_blocks(lines, comments=False)
    h1 = [b for b in blocks if isinstance(b, tuple) and b[0] == 1]
    title = meta.get("title", "")
    drop_h1 = False
    first_heading = next((b for b in blocks if isinstance(b, tuple)), None)
    if len(h1) == 1 and first_heading is not None and first_heading[0] == 1:
        drop_h1 = True
        title = title or h1[0][1]
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    current: list[str] = []

    def close() -> None:
        if current:
            sections.append(Section(headings=tuple(t for _, t in stack), paragraphs=tuple(current)))
        current.clear()

    for b in blocks:
        if isinstance(b, tuple):
            close()
            level, heading = b
            if drop_h1 and level == 1:
                stack = []
                continue
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading))
        else:
            current.append("\n".join(x.rstrip() for x in b).strip("\n"))
    close()
    return ParsedDocument(
        title=title or fallback_title,
        sections=tuple(sections),
        front_matter=meta,
        language=meta.get("language") or meta.get("lang"),
    )


_HTML_BLOCKS = ("p", "li", "pre", "blockquote", "tr", "dt", "dd", "figcaption")
_HTML_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


_DROPPED = ("script", "style", "noscript", "nav", "footer", "template", "svg")
_INVISIBLE = _linear.compile(r"[\x{200b}\x{2060}\x{feff}]", name="ingest.invisible")
"""Zero-width spaces and joiners: no text, a browser's line-break hint (Javadoc's ``connect&#8203;(String url)``);
left in, a name copied from the page would not match the stored one."""


def _words(parts: Iterable[str]) -> str:
    """Text pieces as one line: whitespace runs become one space."""
    return " ".join(" ".join(parts).split())


_INLINE = docsite.INLINE_TAGS
"""Elements that add no space around their text (``psf/black<span>@</span>stable`` reads ``psf/black@stable``)."""

_ADMONITION_KINDS = frozenset(
    {"note", "tip", "hint", "warning", "important", "caution", "danger", "attention", "error", "seealso", "todo",
     "info", "abstract", "summary", "success", "question", "failure", "bug", "example", "quote"}
)  # fmt: skip
"""Class words an admonition carries beside its container's (``admonition note``, DocBook's ``note``)."""
_CREDITS = {"author": "By ", "editor": "Edited by ", "corpauthor": "By ", "othercredit": "", "collab": "",
            "subtitle": ""}  # fmt: skip
"""A title page's headings that are not sections (DocBook's ``<h3 class="author">``, ``<h2 class="subtitle">``
``Version: 0.9.30``): paragraphs, with the prefix that says what they are."""


def _text_of(el: Any) -> str:
    """An element's text as a browser lays it out, on one line: inline elements join their neighbours
    (``<code>f</code>(<em>x</em>)`` is ``f(x)``), any other element is a word break; whitespace runs become one
    space; a definition term's classifier (``<span class="classifier">``) follows a colon, as the page shows it
    (``allow_errors : Bool``). One walk over the element's subtree, each text and tail read once."""
    from lxml import etree

    parts: list[str] = []
    for event, sub in etree.iterwalk(el, events=("start", "end")):
        tag = sub.tag
        gap = not (isinstance(tag, str) and tag.lower() in _INLINE)
        if event == "start":
            if gap:
                parts.append(" ")
            elif "classifier" in _classes(sub):  # docutils' "term : classifier", its colon drawn by the theme's CSS
                parts.append(" : ")
            if sub.text and isinstance(tag, str):
                parts.append(sub.text)
        else:
            if gap:
                parts.append(" ")
            if sub.tail and sub is not el:
                parts.append(sub.tail)
    return " ".join("".join(parts).split())


_SECTION_NUMBER = _linear.compile(
    r"^\s*(?:(?i:appendix|chapter|part)\s+[A-Z0-9]+\.?|[A-Z]\.(?:[0-9]+\.?)*|[0-9]+(?:\.[0-9]+)*\.?)\s+(\S.*)$",
    name="ingest.section_number",
)
"""A section's number before its title: ``21.3 ``, ``A.1. ``, ``Appendix A ``, ``Chapter 5. `` (a lone capital is a
word: ``A Note About yytext``)."""


def _unnumbered(heading: str) -> str:
    """A heading without its number, casefolded: a split Texinfo page's ``8 Actions`` or ``Appendix A Appendices``
    says its title ``Actions``, ``Appendices``."""
    m = _SECTION_NUMBER.search(heading)
    return (m.group(1) if m is not None else heading).casefold()


def _classes(el: Any) -> list[str]:
    return (el.get("class") or "").lower().split()


def _gtkdoc_part(el: Any, name: str) -> tuple[str, Any, Any] | None:
    """GTK-Doc's ``Parameters`` and ``Returns`` of a function (``<div class="refsect3"><h4>Parameters</h4>``): a
    part of the function's section, not a section of their own (a chunk of ``cr | a cairo context`` alone names
    no function); read like an admonition, the heading's text as the label of its first paragraph."""
    if name != "div" or "refsect3" not in _classes(el):
        return None
    head = next((c for c in el if isinstance(c.tag, str) and c.tag.lower() in _HTML_HEADINGS), None)
    return (docsite.strip_signs(_text_of(head)), head, el) if head is not None else None


def _generator_element(el: Any, name: str, generator: str, acc: _Blocks) -> bool:
    """A generator's element read its own way by :func:`_html_blocks`; ``True`` when it is read whole here.

    Haddock: a declaration starts its section (:func:`_haddock_declaration`; its text is read by the walk), a
    declaration's collapsible ``Examples`` heading is a paragraph of it, not a section beside it. GTK-Doc: the
    ``Description`` heading is none (:func:`_gtkdoc_description`)."""
    if generator == "haddock":
        if _haddock_declaration(el, name, acc):
            return False
        if name in _HTML_HEADINGS and "subheading" in _classes(el):
            acc.flush()
            acc.emit(docsite.strip_signs(_text_of(el)))
        else:
            return False
    elif generator != "gtk-doc" or name not in _HTML_HEADINGS or not _gtkdoc_description(el):
        return False
    if el.tail:
        acc.loose.append(el.tail)
    return True


def _haddock_declaration(el: Any, name: str, acc: _Blocks) -> bool:
    """A Haddock declaration (``<div class="top"><p class="src"><a id="v:decode" class="def">decode</a> :: ...``)
    starts a section named by what it declares (``decode``), under the module's group headings (a level-6
    heading, below any group's), so that a question about ``decode`` finds a chunk titled with it."""
    if name != "div" or "top" not in _classes(el):
        return False
    src = next((c for c in el if isinstance(c.tag, str)), None)
    if src is None or src.tag.lower() != "p" or "src" not in _classes(src):
        return False
    named = next((a for a in src.iter("a") if "def" in _classes(a)), None)
    text = _text_of(named) if named is not None else ""
    if not text:
        return False
    acc.flush()
    acc.out.append((6, text))
    return True


def _gtkdoc_description(head: Any) -> bool:
    """GTK-Doc's ``Description`` heading (after ``<a name="cairo-cairo-t.description">``): no section of its
    own, so the page's purpose line (``cairo_t — The cairo drawing context``) and its description are one chunk
    (a chunk of the purpose alone was a page's best-graded and crowded the page's other chunks out)."""
    anchor = head.getprevious()
    return (
        anchor is not None
        and isinstance(anchor.tag, str)
        and anchor.tag.lower() == "a"
        and (anchor.get("name") or anchor.get("id") or "").endswith(".description")
    )


_LAYOUT_IN_CELL = frozenset({*_HTML_HEADINGS, "pre"})


def _holds_heading(row: Any) -> bool:
    """A layout table's row: one of its cells holds a heading (GTK-Doc's page title beside an image cell) or a
    code block (GTK-Doc's and Pygments' listings: line numbers beside the code), read as its parts so the code
    keeps its lines. Constant work per element: the row's cells and their children."""
    return any(
        isinstance(g.tag, str) and g.tag.lower() in _LAYOUT_IN_CELL
        for cell in row
        if isinstance(cell.tag, str)
        for g in cell
    )


def _admonition(el: Any, name: str) -> tuple[str, Any, Any] | None:
    """An admonition's label, the element that shows it (not read again) and the element holding its text;
    ``None`` when ``el`` is not an admonition.

    Sphinx and MkDocs: ``<div class="admonition note"><p class="admonition-title">Note</p>...``; Material's
    collapsible ones: ``<details class="note"><summary>``; DocBook: ``<div class="note"><h3 class="title">``;
    AsciiDoc: ``<div class="admonitionblock">`` holding a table of an icon cell (its title or image text) and a
    content cell. Constant work: the first child (AsciiDoc: a fixed path through its table).
    """
    classes = _classes(el)
    if not classes or name not in ("div", "aside", "details", "section"):
        return None
    if "admonitionblock" in classes:  # AsciiDoc, Asciidoctor
        return _asciidoc_admonition(el)
    kinds = _ADMONITION_KINDS.intersection(classes)
    if "admonition" not in classes and not kinds:
        return None
    first = next((c for c in el if isinstance(c.tag, str)), None)
    if first is None:
        return None
    fname, fclasses = first.tag.lower(), _classes(first)
    titled = (
        "admonition-title" in fclasses
        or fname == "summary"
        or (fname in _HTML_HEADINGS and ("title" in fclasses or "admonition" in classes))
        or ("title" in fclasses and fname in ("p", "div", "span"))
    )
    if not titled:
        if "admonition" in classes:  # an admonition with no title: its text, no label
            return "", None, el
        return None  # a "note" class on something else
    return docsite.strip_signs(_text_of(first)), first, el


def _asciidoc_admonition(el: Any) -> tuple[str, Any, Any] | None:
    """AsciiDoc's admonition: a table of an icon cell (its title or image text) and a content cell."""
    table = next((c for c in el if isinstance(c.tag, str) and c.tag.lower() == "table"), None)
    row = table.find(".//tr") if table is not None else None
    if row is None:
        return None
    cells = [c for c in row if isinstance(c.tag, str)]
    icon = next((c for c in cells if "icon" in _classes(c)), None)
    content = next((c for c in cells if "content" in _classes(c)), None)
    if icon is None or content is None:
        return None
    img = icon.find(".//img")
    label = _text_of(icon) or (img.get("alt") or "" if img is not None else "")
    return label, icon, content


def _rows(table: Any) -> list[Any]:
    """A table's own rows (``tr`` children of it or of its ``thead``, ``tbody``, ``tfoot``), not a nested table's."""
    rows: list[Any] = []
    for child in table:
        if not isinstance(child.tag, str):
            continue
        tag = child.tag.lower()
        if tag == "tr":
            rows.append(child)
        elif tag in ("thead", "tbody", "tfoot"):
            rows.extend(r for r in child if isinstance(r.tag, str) and r.tag.lower() == "tr")
    return rows


def _cells(row: Any) -> list[Any]:
    return [c for c in row if isinstance(c.tag, str) and c.tag.lower() in ("td", "th")]


def _row_headings(row: Any) -> list[Any]:
    """The headings a table row's cells hold as their children (jsoup's selector table: ``<tr><th colspan="3">
    <h3>Combinators</h3></th></tr>`` between its rows)."""
    return [g for cell in _cells(row) for g in cell if isinstance(g.tag, str) and g.tag.lower() in _HTML_HEADINGS]


def _header_table(table: Any) -> list[tuple[int, str] | str] | None:
    """A table whose first row is a header (every cell a ``th``, two or more) as paragraphs in Markdown's form
    (``| Name | Description |``, a ``| --- |`` rule, a line a row), so that the chunker splits it between rows and
    repeats the header in each part: a row in a later chunk keeps its column names. A row that holds a heading
    ends a part: the heading heads the rows after it, under the same header. ``None`` for a table without a
    header row or one whose cells hold code (read row by row, a code cell as its parts, as before). Each row and
    cell is read once (the table is not entered again)."""
    rows = _rows(table)
    head = _cells(rows[0]) if rows else []
    if len(rows) < 2 or len(head) < 2 or any(c.tag.lower() != "th" for c in head) or _holds_heading(rows[0]):
        return None
    out: list[tuple[int, str] | str] = []
    header: list[str] = []
    lines: list[str] = []
    for i, row in enumerate(rows):
        headings = _row_headings(row) if i else []
        if headings or (i and _holds_heading(row)):
            if not headings or _text_of(row) != " ".join(_text_of(h) for h in headings):
                return None  # a code cell, or text beside the heading: a layout table, read as its parts
            if len(lines) > len(header):
                out.append("\n".join(lines))
            out.extend((int(h.tag[1]), docsite.strip_signs(_text_of(h))) for h in headings)
            lines = list(header)
            continue
        cells = [_text_of(c) for c in _cells(row)]
        while cells and not cells[-1]:  # an empty last column adds only " | "
            cells.pop()
        if any(cells):
            lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + " --- |" * len(cells))
            header = list(lines)
    if len(lines) > len(header):
        out.append("\n".join(lines))
    return out if any(isinstance(x, str) for x in out) else None


class _Blocks:
    """What :func:`_html_blocks` has emitted, the loose text it is gathering and the open admonitions' labels."""

    def __init__(self, credits: list[int] | None) -> None:
        self.out: list[tuple[int, str] | str] = []
        self.loose: list[str] = []
        self.label: list[str] = []  # the open admonition's label, until its first paragraph takes it
        self.bullet = False  # a list item read as its parts: its first paragraph starts "- "
        self.credits = credits

    def emit(self, text: str) -> None:
        if _INVISIBLE.search(text) is not None:  # Javadoc's "parse&#8203;(String html)": a line-break hint only
            text = _INVISIBLE.sub("", text)
        if self.bullet:
            self.bullet = False
            if not text.startswith(("- ", "| ")):
                text = "- " + text
        if self.label and self.label[-1]:
            lines = text.startswith(("- ", "| "))  # a list stays a list, a table a table
            text = f"{self.label[-1]}:{chr(10) if lines else ' '}{text}"
            self.label[-1] = ""
        self.out.append(text)

    def flush(self) -> None:
        t = " ".join("".join(self.loose).split())
        self.loose.clear()
        if t:
            self.emit(t)

    def leave(self, el: Any, step: int, body: Any) -> None:
        """The end of an element :func:`_html_blocks` entered."""
        if step != _LEAVE_INLINE:
            self.flush()
        if step == _LEAVE_ADMONITION:
            self.label.pop()
        elif step == _LEAVE_BLOCK and el.tag == "li":
            self.bullet = False  # an item that gave no paragraph
        if el is not body and el.tail:
            self.loose.append(el.tail)

    def table(self, el: Any) -> bool:
        """A table with a header row, read whole as one Markdown table (:func:`_header_table`): ``False`` for
        another table (entered, row by row)."""
        parts = _header_table(el)
        if parts is None:
            return False
        self.flush()
        self.bullet = False  # a list item that holds a table is a layout's, not a point of a list
        caption = next((c for c in el if isinstance(c.tag, str) and c.tag.lower() == "caption"), None)
        said = _text_of(caption) if caption is not None else ""
        if said:
            self.emit(said)  # Javadoc's "Class Summary": a paragraph before the table, not a row of it
        for part in parts:
            if isinstance(part, str):
                self.emit(part)
            else:
                self.out.append(part)  # a heading inside the table: the rows after it are its section
        if el.tail:
            self.loose.append(el.tail)
        return True

    def block(self, el: Any, name: str) -> None:
        """A heading or block element, taken whole."""
        self.flush()
        if name in _HTML_HEADINGS:
            text = docsite.strip_signs(_text_of(el))
            credit = next((_CREDITS[c] for c in _classes(el) if c in _CREDITS), None)
            if credit is None:
                self.out.append((int(name[1]), text))
            elif text:
                self.emit(f"{credit}{text}")
                if self.credits is not None:
                    self.credits.append(len(self.out) - 1)
        elif name == "tr":
            cells = [_text_of(c) for c in el if isinstance(c.tag, str) and c.tag.lower() in ("td", "th")]
            while cells and not cells[-1]:  # an empty last column (GTK-Doc's annotations) adds only " | "
                cells.pop()
            if any(cells):
                self.emit(" | ".join(cells))
        elif name == "pre":
            t = "".join(el.itertext()).strip("\n").replace("\xa0", " ")  # Javadoc's "static&nbsp;Document"
            self.bullet = False  # code keeps its first line as it is
            if t.strip():
                self.emit(t)
        else:
            t = _text_of(el)
            if name == "dt":
                t = docsite.strip_signs(t)
            if t:
                self.emit(("- " + t) if name == "li" else t)
        if el.tail:
            self.loose.append(el.tail)


def _holders(body: Any, *tags: str) -> set[Any]:
    """The elements inside ``body`` that hold an element of one of ``tags``. Linear: each such element's ancestors
    are walked up to the first one already found."""
    found: set[Any] = set()
    for el in body.iter(*tags):
        for up in el.iterancestors():
            if up is body or up in found:
                break
            found.add(up)
    return found


_ENTER, _LEAVE_BLOCK, _LEAVE_INLINE, _LEAVE_ADMONITION = 0, 1, 2, 3
"""The steps of :func:`_html_blocks`' walk: an element to read, and the end of one it entered."""


class _Parts:
    """Which paragraph-like elements (a list item, a definition) are read as their parts: those that hold a
    heading, a code block, a table or a definition list. A heading inside one heads a section (Javadoc's
    ``<li class="blockList"><h4>parse</h4>``), code keeps its lines, a table its rows, a class's methods (Sphinx's
    ``dd``) are each their own paragraphs; other elements are taken whole, as before."""

    def __init__(self, body: Any) -> None:
        self.holders = _holders(body, *_HTML_HEADINGS, "pre", "table", "dl")
        self.headed = _holders(body, *_HTML_HEADINGS) if self.holders else set()

    def whole(self, el: Any, name: str) -> bool:
        """Whether ``el`` is one block, read whole (a table row: unless a cell holds a heading or code)."""
        if name in _HTML_HEADINGS:
            return True
        if name not in _HTML_BLOCKS:
            return False
        return not _holds_heading(el) if name == "tr" else el not in self.holders

    def bulleted(self, el: Any, name: str) -> bool:
        """A list item read as its parts whose first paragraph keeps the item's ``- `` (not Javadoc's layout
        items, which hold headings)."""
        return name == "li" and el not in self.headed


def _html_blocks(
    body: Any, credits: list[int] | None = None, *, generator: str | None = None
) -> list[tuple[int, str] | str]:
    """The headings (``(level, text)``) and paragraphs of an HTML body, in document order, in one walk.

    Each node is visited once and each text read once, whatever the nesting: a block or heading is taken whole
    (its text covers what it contains) and never entered; a table row is its own cells (``td``, ``th``), each
    cell's text read once (a table nested in a cell is part of that cell's text, not read again for the row).
    Text anywhere else is kept too: text directly in a ``div``, ``section``, ``span`` or the body, and inline
    elements outside any block, run together into paragraphs that any other element breaks. An admonition is
    content, not a section: its label (``Note``) starts its first paragraph (``Note: ...``). A title page's
    author heading is a paragraph (``By ...``); its index goes to ``credits``. A table row whose cell holds a
    heading is layout, read as its parts. On a GTK-Doc page (``generator``), a function's ``Parameters`` and
    ``Returns`` are labels, like an admonition's (:func:`_gtkdoc_part`). A paragraph-like element that holds
    a heading, a code block, a table or a definition list is read as its parts (a list item's first paragraph
    keeps its ``- ``). A table with a header row is read in Markdown's form (:func:`_header_table`).
    """
    acc = _Blocks(credits)
    loose, label, flush = acc.loose, acc.label, acc.flush
    parts = _Parts(body)
    stack: list[tuple[Any, int]] = [(body, _ENTER)]
    while stack:
        el, step = stack.pop()
        if step != _ENTER:
            acc.leave(el, step, body)
            continue
        tag = el.tag
        if not isinstance(tag, str):
            if el.tail:
                loose.append(el.tail)
            continue
        name = tag.lower()
        if name in _INLINE or name in ("br", "img", "label"):
            loose.append(" " if name == "br" else (el.text or ""))
            stack.append((el, _LEAVE_INLINE))
            stack.extend((c, _ENTER) for c in reversed(el))
            continue
        if generator is not None and _generator_element(el, name, generator, acc):
            continue  # read whole (a heading that is a paragraph, or no heading at all)
        admonition = _admonition(el, name)
        if admonition is None and generator == "gtk-doc":
            admonition = _gtkdoc_part(el, name)
        if admonition is not None and el is not body:
            flush()
            text, shown, holder = admonition
            label.append(text)
            stack.append((el, _LEAVE_ADMONITION))
            stack.extend((c, _ENTER) for c in reversed(holder) if c is not shown)
            if holder.text:
                loose.append(holder.text)
            continue
        if name == "table" and el is not body and acc.table(el):
            continue
        if not parts.whole(el, name) or el is body:
            flush()
            if el is not body and parts.bulleted(el, name):
                acc.bullet = True  # its first paragraph starts "- ", as the whole item's did
            if el.text:
                loose.append(el.text)
            stack.append((el, _LEAVE_BLOCK))
            stack.extend((c, _ENTER) for c in reversed(el))
            continue
        acc.block(el, name)
    flush()
    return acc.out


_HEADER_NAME = _linear.compile(r"[A-Za-z][A-Za-z0-9-]*:", name="cgi-header")


def strip_cgi_header(text: str) -> str:
    """The page without HTTP header lines a CGI wrote before its markup (man2html's ``Content-type: text/html``).

    Only header lines at the very start (at most 8), with a ``Content-Type`` among them, ending at a blank line
    and followed by markup: a page that starts with prose such as ``Note: ...`` keeps it.
    """
    lines = text[:4096].split("\n", 9)
    for i, line in enumerate(lines[:9]):
        if line.strip():
            if not _HEADER_NAME.match(line.lstrip("\ufeff")):
                return text
            continue
        heads = [h.lstrip("\ufeff").lower() for h in lines[:i]]
        if not any(h.startswith("content-type:") for h in heads):
            return text
        body = text[sum(len(h) + 1 for h in lines[: i + 1]) :]
        return body if body.lstrip()[:1] == "<" else text
    return text


def parse_html(text: str, *, fallback_title: str) -> ParsedDocument:
    """Split HTML into sections by ``h1``..``h6``; paragraphs are ``p``, ``li``, ``pre``, table rows, ...

    Parsed by libxml2's HTML parser (``lxml``), which is linear in the input, hostile shapes included (``<a``
    repeated, unclosed comments, deeply nested tables); the walk over the tree is linear too (:func:`_html_blocks`).
    """
    try:
        from lxml import etree
        from lxml import html as lxml_html
    except ImportError as exc:
        raise MissingExtraError("lxml", "kb") from exc
    text = strip_cgi_header(text)
    if not text.strip():
        return ParsedDocument(title=fallback_title, sections=())
    parser = lxml_html.HTMLParser(encoding="utf-8", huge_tree=True, remove_comments=True, remove_pis=True)
    try:
        root = lxml_html.document_fromstring(text.encode("utf-8", "surrogatepass"), parser=parser)
    except (etree.ParserError, ValueError):  # nothing but whitespace or comments once parsed
        return ParsedDocument(title=fallback_title, sections=())
    if any("Excessive depth" in e.message for e in parser.error_log):
        # libxml2 stops building the tree at its depth limit and drops what lies deeper: refuse the file
        # (one error line, the rest of the run ingested) rather than store it with text silently missing
        raise InputError("HTML nested deeper than the parser's limit (2,048 elements); flatten it to ingest it")
    # a built documentation site's page: its main content, without navigation, sidebars, anchors (one pass;
    # before the scripts go, as Sphinx's documentation_options script says it is Sphinx)
    scan = docsite.scan_page(root)
    etree.strip_elements(root, *_DROPPED, with_tail=False)
    docsite.drop_chrome(scan)
    if scan.generator == "javadoc":
        docsite.javadoc_header(scan.container)
    lang = root.get("lang")
    lang = lang.split("-")[0].lower() if lang else None
    title_el = root.find(".//title")
    raw_title = _words(title_el.itertext()) if title_el is not None else ""
    credits: list[int] = []
    blocks = _html_blocks(scan.container, credits, generator=scan.generator)
    heads = [b for b in blocks if isinstance(b, tuple)]
    h1 = [b for b in heads if b[0] == 1]
    first_heading = heads[0] if heads else None
    named = docsite.clean_title(
        raw_title,
        heading=h1[0][1] if h1 else (first_heading[1] if first_heading else ""),
        generator=scan.generator,
        home_title=scan.home_title,
    )
    title = named.title
    drop_level = _title_level(heads, title, leading=scan.generator == "gtk-doc")
    site = docsite.site_info(scan, named)
    version = site.get("version", "")
    if credits and version and not any(version in b for b in blocks if isinstance(b, str)):
        blocks.insert(credits[-1] + 1, f"Version {version}")  # a title page: its title, authors and version
    sections = _html_sections(blocks, first_heading if drop_level else None)
    kind = scan.page_kind or ("listing" if raw_title.startswith("Index of /") else None)
    return ParsedDocument(
        title=title or fallback_title,
        sections=tuple(sections),
        front_matter={"version": site["version"]} if "version" in site else {},
        language=lang,
        site=site,
        page_kind=kind,
        content_guard=scan.guard,
    )


def _title_level(heads: Sequence[tuple[int, str]], title: str, *, leading: bool = False) -> int:
    """The level of the heading that is the page's title (left out of the heading paths), 0 when none is: the
    single h1 that comes first, or a heading that says the title with no heading at its level or above after it
    (DocBook's h2 sections); ``leading``: a first heading that says the title, whatever follows (GTK-Doc's h2
    title, then h2 ``Description``, h2 ``Functions``)."""
    if not heads:
        return 0
    first = heads[0]
    if first[0] == 1 and sum(1 for b in heads if b[0] == 1) == 1:
        return 1
    same = _unnumbered(first[1]) == _unnumbered(title)
    if same and (leading or all(b[0] > first[0] for b in heads[1:])):
        return first[0]
    return 0


def _html_sections(blocks: Sequence[tuple[int, str] | str], title_heading: tuple[int, str] | None) -> list[Section]:
    """The blocks as sections under their heading paths; ``title_heading`` (the page's title) starts no path."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    current: list[str] = []
    dropped = False
    for b in blocks:
        if isinstance(b, tuple):
            if current:
                sections.append(Section(headings=tuple(t for _, t in stack), paragraphs=tuple(current)))
                current = []
            if title_heading is not None and not dropped and b is title_heading:
                dropped = True
                stack = []
                continue
            while stack and stack[-1][0] >= b[0]:
                stack.pop()
            stack.append(b)
        else:
            current.append(b)
    if current:
        sections.append(Section(headings=tuple(t for _, t in stack), paragraphs=tuple(current)))
    return sections


def parse_text(text: str, *, fallback_title: str) -> ParsedDocument:
    """Plain text: paragraphs separated by blank lines; a short first line is the title."""
    paras = [p.strip() for p in _PARAGRAPH_BREAK.split(text.replace("\r\n", "\n")) if p.strip()]
    title = fallback_title
    if paras and "\n" not in paras[0] and len(paras[0]) <= 100 and len(paras) > 1:
        title = paras.pop(0)
    return ParsedDocument(title=title, sections=(Section(headings=(), paragraphs=tuple(paras)),) if paras else ())


_VERSION = _linear.compile(r"\d+(?:\.\d+)+", name="ingest.man_version")


def parse_man_page(text: str, *, fallback_title: str) -> ParsedDocument:
    """A man page's roff source (:func:`admit.kb.manpage.parse_man`); text with no roff request is plain text.

    The title is ``.TH``'s ``NAME(SECTION)``; the version the one its source field names (``libcurl 7.88.1``); a
    page that only includes another (``.so man3/other.3``) is a redirect, left out as an HTML refresh stub is.
    """
    got = manpage.parse_man(text)
    if got is None:
        return parse_text(text, fallback_title=fallback_title)
    title, source, sections, redirect = got
    if redirect is not None and not sections:
        return ParsedDocument(title=title or fallback_title, sections=(), page_kind="redirect")
    m = _VERSION.search(source)
    site = {"generator": "man", **({"version": m.group(0)} if m is not None else {})}
    return ParsedDocument(
        title=title or fallback_title,
        sections=tuple(Section(headings=h, paragraphs=tuple(p)) for h, p in sections),
        front_matter={"version": site["version"]} if "version" in site else {},
        site=site,
    )


def parse_document(text: str, fmt: str, *, fallback_title: str) -> ParsedDocument:
    """Parse ``text`` in ``fmt`` (``markdown``, ``html``, ``man``, ``text``)."""
    if fmt == "markdown":
        return parse_markdown(text, fallback_title=fallback_title)
    if fmt == "html":
        return parse_html(text, fallback_title=fallback_title)
    if fmt == "text":
        return parse_text(text, fallback_title=fallback_title)
    if fmt == "man":
        return parse_man_page(text, fallback_title=fallback_title)
    raise ConfigError(f"Unknown document format {fmt!r}; known: markdown, html, man, text.")

"""Parsers: Markdown (a line-based heading splitter that respects fenced code and front matter), HTML
(BeautifulSoup, ``html.parser``), plain text. PDF is not supported (no parser is shipped).

Every parser is linear in the document: the patterns are RE2 (:mod:`admit._linear`), the Markdown splitter
reads each line once, and the HTML walk visits each element once (``tests/security/test_linear_time.py``
counts it).
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from admit import _linear
from admit.errors import ConfigError, MissingExtraError

__all__ = [
    "FORMATS",
    "ParsedDocument",
    "Section",
    "parse_document",
    "parse_html",
    "parse_markdown",
    "parse_text",
    "safe_markup",
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
"""File suffix -> parser."""

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


def parse_markdown(text: str, *, fallback_title: str) -> ParsedDocument:
    """Split Markdown into sections by ATX headings (``#``..``######``), ignoring headings inside code fences."""
    meta, lines = _front_matter(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    blocks: list[tuple[int, str] | list[str]] = []  # (level, heading) or paragraph lines
    para: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if para and any(x.strip() for x in para):
            blocks.append(list(para))
        para.clear()

    for line in lines:
        if fence is not None:
            para.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
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


_BRACKETS = _linear.simple(r"[<>]")
_TAG_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ/!?")


def safe_markup(text: str) -> str:
    """HTML in which every ``<`` opens a construct that closes before the next ``<`` (else it becomes ``&lt;``).

    Python's ``html.parser`` rescans from an unclosed ``<``, ``</``, ``<!--`` or ``<![`` to the end of the
    text each time it meets one, which is quadratic in a hostile page ("<a" repeated). One pass over the
    brackets decides which ``<`` start a tag (a letter, ``/``, ``!`` or ``?`` next, and a ``>`` before any
    other ``<``) or a comment closed later by ``-->``; the others are escaped, so the parser never waits for
    an end that does not come. ``<![`` (CDATA) is always escaped. The pass is linear: each bracket is
    looked at once, and a comment's end is searched for only when one exists after it.
    """
    if "<" not in text:
        return text
    marks = [m.start() for m in _BRACKETS.finditer(text)]
    last_close = text.rfind("-->")
    out: list[str] = []
    i = 0  # text[:i] is done
    k = 0  # marks[k:] are ahead of i
    while k < len(marks):
        j = marks[k]
        k += 1
        if text[j] == ">" or j < i:
            continue
        if text.startswith("<!--", j):
            end = text.find("-->", j + 4) if last_close >= j + 4 else -1
            if end >= 0:
                out.append(text[i : end + 3])
                i = end + 3
                while k < len(marks) and marks[k] < i:
                    k += 1
                continue
        elif (
            text[j + 1 : j + 2] in _TAG_START
            and not text.startswith("<![", j)
            and k < len(marks)
            and text[marks[k]] == ">"
        ):
            out.append(text[i : marks[k] + 1])
            i = marks[k] + 1
            k += 1
            continue
        out.append(text[i:j])
        out.append("&lt;")
        i = j + 1
    out.append(text[i:])
    return "".join(out)


def _outermost(root: Any, wanted: set[str]) -> Iterator[Any]:
    """The wanted elements under ``root`` in document order that no other wanted element contains.

    One walk over the tree, never entering a taken element: a block or heading is taken whole (its text
    covers what it contains), so each node is visited once and its text read once. (Asking every element
    for a block ancestor instead costs the nesting depth per element: quadratic in a deep document.)
    """
    stack = list(reversed([c for c in root.children if getattr(c, "name", None)]))
    while stack:
        el = stack.pop()
        if el.name in wanted:
            yield el
            continue
        stack.extend(reversed([c for c in el.children if getattr(c, "name", None)]))


def parse_html(text: str, *, fallback_title: str) -> ParsedDocument:
    """Split HTML into sections by ``h1``..``h6``; paragraphs are ``p``, ``li``, ``pre``, table rows, ..."""
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:
        raise MissingExtraError("beautifulsoup4", "kb") from exc
    soup = BeautifulSoup(safe_markup(text), "html.parser")
    for tag in soup(["script", "style", "noscript", "nav", "footer", "template", "svg"]):
        tag.decompose()
    lang = None
    html_tag = soup.find("html")
    if html_tag is not None and html_tag.get("lang"):
        lang = str(html_tag.get("lang")).split("-")[0].lower()
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    body = soup.body or soup
    wanted = set(_HTML_BLOCKS) | set(_HTML_HEADINGS)
    blocks: list[tuple[int, str] | str] = []
    for el in _outermost(body, wanted):
        name = el.name or ""
        if name in _HTML_HEADINGS:
            blocks.append((int(name[1]), " ".join(el.get_text(" ", strip=True).split())))
        elif name == "tr":
            cells = [" ".join(c.get_text(" ", strip=True).split()) for c in el.find_all(["td", "th"])]
            if any(cells):
                blocks.append(" | ".join(cells))
        elif name == "pre":
            blocks.append(el.get_text().strip("\n"))
        else:
            t = " ".join(el.get_text(" ", strip=True).split())
            if t:
                blocks.append(("- " + t) if name == "li" else t)
    h1 = [b for b in blocks if isinstance(b, tuple) and b[0] == 1]
    first_heading = next((b for b in blocks if isinstance(b, tuple)), None)
    drop_h1 = len(h1) == 1 and first_heading is not None and first_heading[0] == 1
    if drop_h1 and not title:
        title = h1[0][1]
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    current: list[str] = []
    for b in blocks:
        if isinstance(b, tuple):
            if current:
                sections.append(Section(headings=tuple(t for _, t in stack), paragraphs=tuple(current)))
                current = []
            if drop_h1 and b[0] == 1:
                stack = []
                continue
            while stack and stack[-1][0] >= b[0]:
                stack.pop()
            stack.append(b)
        else:
            current.append(html.unescape(b))
    if current:
        sections.append(Section(headings=tuple(t for _, t in stack), paragraphs=tuple(current)))
    return ParsedDocument(title=title or fallback_title, sections=tuple(sections), language=lang)


def parse_text(text: str, *, fallback_title: str) -> ParsedDocument:
    """Plain text: paragraphs separated by blank lines; a short first line is the title."""
    paras = [p.strip() for p in _PARAGRAPH_BREAK.split(text.replace("\r\n", "\n")) if p.strip()]
    title = fallback_title
    if paras and "\n" not in paras[0] and len(paras[0]) <= 100 and len(paras) > 1:
        title = paras.pop(0)
    return ParsedDocument(title=title, sections=(Section(headings=(), paragraphs=tuple(paras)),) if paras else ())


def parse_document(text: str, fmt: str, *, fallback_title: str) -> ParsedDocument:
    """Parse ``text`` in ``fmt`` (``markdown``, ``html``, ``text``)."""
    if fmt == "markdown":
        return parse_markdown(text, fallback_title=fallback_title)
    if fmt == "html":
        return parse_html(text, fallback_title=fallback_title)
    if fmt == "text":
        return parse_text(text, fallback_title=fallback_title)
    raise ConfigError(f"Unknown document format {fmt!r}; known: markdown, html, text.")

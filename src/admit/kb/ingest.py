"""Ingest: parse documents, split them by structure, embed, and write them source by source.

* Parsers: Markdown (a line-based heading splitter that respects fenced code and front matter), HTML
  (BeautifulSoup, ``html.parser``), plain text. PDF is not supported (no parser is shipped).
* Chunker: sections by headings, then paragraphs packed up to ``max_tokens`` cl100k tokens; a paragraph longer
  than that is split at sentence boundaries.
* Ids: ``<source_id>#<section-path>`` from heading slugs (``install#upgrade/rollback``); a repeated path gets
  ``-2``, a section split in parts gets ``~2``, ``~3``. Unchanged text under unchanged headings keeps its id.
* Re-ingest: a file whose content and settings are unchanged is skipped; a changed one is re-chunked, unchanged
  chunks reuse their stored embeddings, and the source is replaced in one transaction (readers see the old or the
  new version); a file that is gone from an ingested folder has its chunks deleted.
* Registry (``sources.toml``): ``[defaults]`` and ``[[sources]]`` entries matched by path glob or source id that
  set tenant, groups, label, authority, document, version, language, updated.
"""

from __future__ import annotations

import fnmatch
import hashlib
import html
import json
import logging
import re
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from admit.backends.embedders.base import Embedder, text_key
from admit.backends.tokenizers import Tokenizer, resolve_tokenizer
from admit.errors import ConfigError, MissingExtraError
from admit.features import FEATURES_KEY, FEATURES_VERSION, chunk_features
from admit.kb.store import ChunkRecord, Store
from admit.passages import PASSAGE_VECTORS_KEY, decode_vectors, encode_vectors, passages
from admit.types import Access

__all__ = [
    "FORMATS",
    "IngestReport",
    "Registry",
    "Section",
    "SourceJob",
    "SourceSettings",
    "SourceWriter",
    "TextChunk",
    "chunk_document",
    "ingest_paths",
    "load_registry",
    "parse_document",
    "slugify",
    "write_source",
]

logger = logging.getLogger(__name__)

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

DEFAULT_MAX_TOKENS = 350
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])")
_REGISTRY_KEYS = {"match", "id", "tenant", "groups", "authority", "label", "document", "version", "language", "updated"}


# -- parsing -----------------------------------------------------------------------------------------------
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
    text = re.sub(r"\{#[^}]*\}\s*$", "", text)  # {#custom-anchor}
    return re.sub(r"[*_`]", "", text).strip()


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


def parse_html(text: str, *, fallback_title: str) -> ParsedDocument:
    """Split HTML into sections by ``h1``..``h6``; paragraphs are ``p``, ``li``, ``pre``, table rows, ..."""
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:
        raise MissingExtraError("beautifulsoup4", "kb") from exc
    soup = BeautifulSoup(text, "html.parser")
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
    for el in body.find_all(list(wanted)):
        if el.find_parent(list(_HTML_BLOCKS)) is not None:
            continue  # nested inside a block we already take whole
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
    paras = [p.strip() for p in re.split(r"\n\s*\n", text.replace("\r\n", "\n")) if p.strip()]
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


# -- chunking ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class TextChunk:
    """A chunk before embedding."""

    section_path: str
    """The id suffix after ``#``."""
    headings: tuple[str, ...]
    """Section headings (document title excluded)."""
    text: str
    """The passage."""
    ordinal: int
    """Position in the document."""


def slugify(text: str) -> str:
    """``"Upgrade & Rollback (v2)"`` -> ``"upgrade-rollback-v2"``; ``"section"`` when nothing is left."""
    s = re.sub(r"[^\w]+", "-", text.lower(), flags=re.UNICODE).strip("-_")
    return s[:60].rstrip("-") or "section"


def _split_long(text: str, tok: Tokenizer, max_tokens: int) -> list[str]:
    """Split an over-long paragraph at sentence (else line, else word) boundaries."""
    pieces = _SENT.split(text)
    if len(pieces) == 1:
        pieces = text.split("\n")
    out: list[str] = []
    cur = ""
    for piece in pieces:
        if tok.count(piece) > max_tokens:
            words = piece.split(" ")
            sub: list[str] = []
            for w in words:
                if sub and tok.count(" ".join([*sub, w])) > max_tokens:
                    out.append(" ".join(sub))
                    sub = []
                sub.append(w)
            piece = " ".join(sub)
        cand = f"{cur} {piece}".strip() if cur else piece
        if cur and tok.count(cand) > max_tokens:
            out.append(cur)
            cur = piece
        else:
            cur = cand
    if cur:
        out.append(cur)
    return out


def chunk_document(
    doc: ParsedDocument, *, tokenizer: Tokenizer | str = "cl100k_base", max_tokens: int = DEFAULT_MAX_TOKENS
) -> list[TextChunk]:
    """Sections, then paragraphs packed up to ``max_tokens``; ids from heading slugs, collision-safe."""
    if max_tokens < 16:
        raise ConfigError(f"max_tokens must be at least 16, got {max_tokens}.")
    tok = resolve_tokenizer(tokenizer)
    out: list[TextChunk] = []
    used: set[str] = set()
    ordinal = 0
    for sec in doc.sections:
        base = "/".join(slugify(h) for h in sec.headings) or "intro"
        path = base
        n = 2
        while path in used:
            path = f"{base}-{n}"
            n += 1
        used.add(path)
        parts: list[str] = []
        cur: list[str] = []
        cur_tokens = 0
        for para in sec.paragraphs:
            pieces = _split_long(para, tok, max_tokens) if tok.count(para) > max_tokens else [para]
            for piece in pieces:
                t = tok.count(piece)
                if cur and cur_tokens + t + 1 > max_tokens:
                    parts.append("\n\n".join(cur))
                    cur, cur_tokens = [], 0
                cur.append(piece)
                cur_tokens += t + 1
        if cur:
            parts.append("\n\n".join(cur))
        for i, text in enumerate(parts):
            sp = path if i == 0 else f"{path}~{i + 1}"
            used.add(sp)
            out.append(TextChunk(section_path=sp, headings=sec.headings, text=text, ordinal=ordinal))
            ordinal += 1
    return out


# -- registry ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSettings:
    """What the registry (and the command line) say about one source."""

    source_id: str
    tenant: str
    groups: tuple[str, ...] = ()
    label: str = ""
    authority: float | None = None
    document: str = ""
    version: str | None = None
    language: str | None = None
    updated: datetime | None = None

    def key(self) -> str:
        """A stable digest of the settings (a change re-ingests the source)."""
        d = {
            "source_id": self.source_id,
            "tenant": self.tenant,
            "groups": list(self.groups),
            "label": self.label,
            "authority": self.authority,
            "document": self.document,
            "version": self.version,
            "language": self.language,
            "updated": self.updated.isoformat() if self.updated else None,
        }
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True, kw_only=True)
class Registry:
    """A parsed ``sources.toml``: defaults and entries matched by path glob or source id."""

    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Settings for every source."""
    entries: tuple[Mapping[str, Any], ...] = ()
    """``[[sources]]`` entries, applied in file order (later wins)."""
    source: str = ""
    """Where it was loaded from."""

    def matching(self, rel_path: str, source_id: str) -> list[Mapping[str, Any]]:
        """The entries that apply to a file (glob on the relative path, or the exact source id)."""
        out = []
        for e in self.entries:
            pat = e.get("match")
            if (pat and (fnmatch.fnmatchcase(rel_path, pat) or fnmatch.fnmatchcase(source_id, pat))) or (
                not pat and e.get("id") == source_id
            ):
                out.append(e)
        return out


def _check_registry_table(t: Any, where: str) -> dict[str, Any]:
    if not isinstance(t, Mapping):
        raise ConfigError(f"{where}: must be a table, got {type(t).__name__} {t!r}.")
    unknown = set(t) - _REGISTRY_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(_REGISTRY_KEYS)}.")
    d = dict(t)
    for key in ("match", "id", "tenant", "label", "document", "language"):
        if key in d and (not isinstance(d[key], str) or not d[key].strip()):
            raise ConfigError(f"{where}: `{key}` must be a non-empty string, got {d[key]!r}.")
    if "authority" in d:
        a = d["authority"]
        if isinstance(a, bool) or not isinstance(a, int | float) or not 0.0 <= float(a) <= 1.0:
            raise ConfigError(f"{where}: authority must be a number between 0 and 1, got {a!r}.")
        d["authority"] = float(a)
    if "groups" in d:
        g = d["groups"]
        if isinstance(g, str):
            g = [x for x in g.split(",") if x.strip()]
        if not isinstance(g, list) or not all(isinstance(x, str) for x in g):
            raise ConfigError(f"{where}: groups must be a list of strings, got {d['groups']!r}.")
        d["groups"] = tuple(x.strip() for x in g)
    if "updated" in d:
        u = d["updated"]
        if isinstance(u, str):
            try:
                u = datetime.fromisoformat(u)
            except ValueError as exc:
                raise ConfigError(f"{where}: updated must be an ISO date, got {u!r}.") from exc
        elif isinstance(u, date) and not isinstance(u, datetime):  # TOML dates without time
            u = datetime(u.year, u.month, u.day)
        elif not isinstance(u, datetime):  # a TOML time of day (12:00:00), a number, ...
            raise ConfigError(f"{where}: updated must be a date or date-time (2026-01-31), got {u!r}.")
        d["updated"] = u if u.tzinfo else u.replace(tzinfo=UTC)
    if "version" in d:
        v = d["version"]
        if isinstance(v, bool) or not isinstance(v, str | int | float) or not str(v).strip():
            raise ConfigError(f"{where}: version must be a string or a number, got {v!r}.")
        d["version"] = str(v)
    return d


def load_registry(path: str | Path | None) -> Registry:
    """Load a ``sources.toml`` registry (``None``: an empty one)."""
    if path is None:
        return Registry()
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"Source registry {str(path)!r} does not exist.")
    try:
        data = tomllib.loads(p.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Source registry {p} is not valid TOML: {exc}") from exc
    unknown = set(data) - {"defaults", "sources"}
    if unknown:
        raise ConfigError(f"Source registry {p}: unknown table(s) {sorted(unknown)}; use [defaults] and [[sources]].")
    defaults = _check_registry_table(data.get("defaults", {}), f"{p} [defaults]")
    for key in ("match", "id"):
        if key in defaults:
            raise ConfigError(f"{p} [defaults]: `{key}` belongs in a [[sources]] entry, not in [defaults].")
    entries_raw = data.get("sources", [])
    if not isinstance(entries_raw, list):
        raise ConfigError(f"Source registry {p}: `sources` must be an array of tables ([[sources]]).")
    entries = []
    for i, e in enumerate(entries_raw):
        d = _check_registry_table(e, f"{p} [[sources]] #{i + 1}")
        if "match" not in d and "id" not in d:
            raise ConfigError(f"{p} [[sources]] #{i + 1}: give `match` (a path glob) or `id` (a source id).")
        entries.append(d)
    return Registry(defaults=defaults, entries=tuple(entries), source=str(p))


def _settings(
    registry: Registry, rel: str, default_id: str, overrides: Mapping[str, Any], front: Mapping[str, str]
) -> SourceSettings:
    merged: dict[str, Any] = {**registry.defaults, **{k: v for k, v in overrides.items() if v is not None}}
    for k in ("version", "language", "document"):
        if front.get(k) and k not in merged:
            merged[k] = front[k]
    source_id = default_id
    for e in registry.matching(rel, default_id):
        merged.update({k: v for k, v in e.items() if k != "match"})
    source_id = str(merged.pop("id", source_id))
    tenant = merged.get("tenant")
    if not tenant:
        raise ConfigError(
            f"No tenant for {rel!r}: pass --tenant or set `tenant` in the registry's [defaults] or a [[sources]] entry."
        )
    return SourceSettings(
        source_id=source_id,
        tenant=str(tenant),
        groups=tuple(merged.get("groups") or ()),
        label=str(merged.get("label") or ""),
        authority=merged.get("authority"),
        document=str(merged.get("document") or source_id),
        version=merged.get("version"),
        language=merged.get("language"),
        updated=merged.get("updated"),
    )


# -- the ingest run ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class IngestReport:
    """What one ingest run did."""

    files: int = 0
    """Files read."""
    sources_added: int = 0
    sources_updated: int = 0
    sources_unchanged: int = 0
    sources_removed: int = 0
    chunks_added: int = 0
    """Chunks with a new id."""
    chunks_changed: int = 0
    """Chunks whose id stayed but whose text changed."""
    chunks_unchanged: int = 0
    """Chunks kept as they were: all of an unchanged source's, and the unchanged ones of an updated source."""
    chunks_removed: int = 0
    """Chunks deleted (gone from an updated source, or of a removed source)."""
    chunks_embedded: int = 0
    """Chunks the embedder had to encode."""
    chunks_written: int = 0
    """Chunks this run stored: every chunk of an added or updated source (unchanged ones keep their embedding).

    ``chunks_added + chunks_changed + chunks_unchanged`` is the number of chunks the files read now have."""
    skipped: tuple[str, ...] = ()
    """Files skipped (unsupported format)."""
    refused_links: tuple[str, ...] = ()
    """Symbolic links under an ingested folder whose target lies outside that folder: not followed, not read."""
    errors: tuple[tuple[str, str], ...] = ()
    """``(path, message)`` of files that could not be read."""
    seconds: float = 0.0
    """Wall time."""

    @property
    def chunks_per_second(self) -> float:
        """Written chunks per second."""
        return self.chunks_written / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["skipped"] = list(self.skipped)
        d["refused_links"] = list(self.refused_links)
        d["errors"] = [{"path": p, "error": e} for p, e in self.errors]
        d["seconds"] = round(self.seconds, 3)
        d["chunks_per_second"] = round(self.chunks_per_second, 1)
        return d


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceJob:
    """One source an ingest run must (re)write: planned by :func:`ingest_paths`, written by :func:`write_source`
    here or by a :data:`SourceWriter` elsewhere (the Ray engine, :mod:`admit.kb.ray_ingest`)."""

    path: str
    """The file (absolute)."""
    fmt: str
    """Its parser (a :data:`FORMATS` value)."""
    settings: SourceSettings
    """What the registry and the command line say about it."""
    content_hash: str
    """Hash of the content planned on (a file changed since is refused, not half-written)."""
    ingest_key: str
    """Digest of content, settings, chunker and embedder."""
    new: bool
    """Whether the store had no version of the source."""


SourceWriter = Callable[[Sequence[SourceJob]], Iterable[tuple[SourceJob, "Mapping[str, int] | str"]]]
"""Writes planned sources; yields each job with its chunk counts (``chunks_added`` ..., ``chunks_written``) or an
error message. Each source is written whole (one ``replace_source``), so a run cut short leaves every source old
or new and re-running does the rest."""


def _walk(paths: Sequence[str | Path], refused: list[str] | None = None) -> list[tuple[Path, Path | None]]:
    """``(file, root)`` for every file under the paths (root: the folder it was found under, None if named).

    A symbolic link found in a folder is followed only when its target lies inside that folder; others go to
    ``refused`` (and the log), so a link such as ``docs/passwd.txt -> /etc/passwd`` is never read.
    """
    out: list[tuple[Path, Path | None]] = []
    for raw in paths:
        p = Path(raw).expanduser()
        if p.is_dir():
            root = p.resolve()
            for f in sorted(root.rglob("*")):
                if any(part.startswith(".") for part in f.relative_to(root).parts):
                    continue
                if f.is_symlink() or f.resolve() != f:
                    target = f.resolve()
                    if not target.is_relative_to(root):
                        logger.warning("ingest: not following %s: its target lies outside %s", f, root)
                        if refused is not None:
                            refused.append(str(f))
                        continue
                if f.is_file():
                    out.append((f, root))
        elif p.is_file():
            out.append((p.resolve(), None))
        else:
            raise ConfigError(f"Ingest path {str(raw)!r} does not exist.")
    return out


def _default_source_id(f: Path, root: Path | None) -> str:
    rel = f.relative_to(root) if root is not None else Path(f.name)
    return rel.with_suffix("").as_posix()


def _embed_input(title: str, text: str, ps: Sequence[str]) -> str:
    """The text embedded for a chunk: for a chunk that is one passage (``ps``: its passages), exactly the passage
    the setwise pruner embeds (so the stored vector serves both retrieval and pruning); else title and text."""
    if len(ps) == 1 and ps[0]:
        return ps[0]
    return f"{title}\n{text}" if title else text


def ingest_paths(
    store: Store,
    embedder: Embedder,
    paths: Sequence[str | Path],
    *,
    tenant: str | None = None,
    groups: Sequence[str] | None = None,
    authority: float | None = None,
    label: str | None = None,
    registry: Registry | str | Path | None = None,
    tokenizer: Tokenizer | str = "cl100k_base",
    max_tokens: int = DEFAULT_MAX_TOKENS,
    progress: bool | Callable[[str], None] = False,
    batch_size: int = 64,
    writer: SourceWriter | None = None,
) -> IngestReport:
    """Ingest files and folders into ``store``; see the module docstring for the rules.

    Args:
        store: The store.
        embedder: Embeds passages (title and headings prepended).
        paths: Files and folders (folders are walked; hidden files skipped).
        tenant: Default tenant (the registry's entries override it).
        groups: Default groups.
        authority: Default authority 0..1.
        label: Default access label.
        registry: A :class:`Registry` or a ``sources.toml`` path.
        tokenizer: Tokenizer of ``max_tokens``.
        max_tokens: The most tokens a chunk may have.
        progress: ``True`` for a rich progress bar on stderr, or a callback given each file's path.
        batch_size: Embedding batch size.
        writer: Writes the sources that need it once the walk has planned them all (default: each is chunked,
            embedded and written here as it is found).
    """
    if authority is not None and not 0.0 <= authority <= 1.0:
        raise ConfigError(f"authority must be between 0 and 1, got {authority}.")
    reg = registry if isinstance(registry, Registry) else load_registry(registry)
    overrides: dict[str, Any] = {"tenant": tenant, "authority": authority, "label": label}
    if groups is not None:
        overrides["groups"] = tuple(g for g in groups if g)
    t0 = time.perf_counter()
    refused: list[str] = []
    files = _walk(paths, refused)
    roots = {r for _, r in files if r is not None}
    counts: dict[str, int] = dict.fromkeys(
        (
            "files",
            "sources_added",
            "sources_updated",
            "sources_unchanged",
            "sources_removed",
            "chunks_added",
            "chunks_changed",
            "chunks_unchanged",
            "chunks_removed",
            "chunks_embedded",
            "chunks_written",
        ),
        0,
    )
    skipped: list[str] = []
    errors: list[tuple[str, str]] = []
    existing = {(s.source_id, s.tenant): s for s in store.list_sources()}
    seen: set[tuple[str, str]] = set()
    seen_ids: dict[str, str] = {}
    tok = resolve_tokenizer(tokenizer)
    jobs: list[SourceJob] = []

    bar: Any = None
    task: Any = None
    if progress is True:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
            transient=False,
        )
        bar.start()
        task = bar.add_task("", total=len(files))
    try:
        for f, root in files:
            rel = f.relative_to(root).as_posix() if root is not None else f.name
            if bar is not None:
                bar.update(task, description=rel)
            elif callable(progress):
                progress(rel)
            try:
                fmt = FORMATS.get(f.suffix.lower())
                if fmt is None:
                    if root is None:
                        errors.append((str(f), f"unsupported format {f.suffix!r}; supported: {sorted(FORMATS)}"))
                    else:
                        skipped.append(str(f))
                    continue
                counts["files"] += 1
                raw = f.read_bytes()
                try:
                    text = raw.decode("utf-8-sig")
                except UnicodeDecodeError as exc:
                    errors.append((str(f), f"not UTF-8 text (byte {exc.start})"))
                    continue
                default_id = _default_source_id(f, root)
                if default_id in seen_ids and seen_ids[default_id] != str(f):
                    default_id = rel  # a.md and a.html: keep the suffix of the second
                doc = parse_document(text, fmt, fallback_title=f.stem.replace("-", " ").replace("_", " "))
                st = _settings(reg, rel, default_id, overrides, doc.front_matter)
                if st.source_id in seen_ids and seen_ids[st.source_id] != str(f):
                    raise ConfigError(
                        f"Source id {st.source_id!r} is used by both {seen_ids[st.source_id]} and {f}; "
                        "give one an `id` in the registry."
                    )
                seen_ids[st.source_id] = str(f)
                key_src = (st.source_id, st.tenant)
                seen.add(key_src)
                content_hash = hashlib.sha256(raw).hexdigest()[:16]
                ingest_key = hashlib.sha256(
                    f"{content_hash}:{st.key()}:{max_tokens}:{getattr(tok, 'name', '')}:{embedder.name}".encode()
                ).hexdigest()[:16]
                old_src = existing.get(key_src)
                if old_src is not None and old_src.ingest_key == ingest_key and old_src.origin == str(f):
                    counts["sources_unchanged"] += 1
                    counts["chunks_unchanged"] += old_src.chunks
                    continue
                if writer is not None:
                    jobs.append(
                        SourceJob(
                            path=str(f),
                            fmt=fmt,
                            settings=st,
                            content_hash=content_hash,
                            ingest_key=ingest_key,
                            new=old_src is None,
                        )
                    )
                    continue
                n = _ingest_one(
                    store, embedder, doc, f, st, fmt, content_hash, ingest_key, tok, max_tokens, batch_size, counts
                )
                counts["sources_updated" if old_src is not None else "sources_added"] += 1
                counts["chunks_written"] += n
            except ConfigError:
                raise
            except (OSError, ValueError) as exc:
                errors.append((str(f), str(exc)))
                logger.warning("ingest: %s: %s", f, exc)
            finally:
                if bar is not None:
                    bar.advance(task)
        if writer is not None and jobs:
            for job, outcome in writer(jobs):
                if isinstance(outcome, str):
                    errors.append((job.path, outcome))
                    continue
                for k, v in outcome.items():
                    counts[k] += int(v)
                counts["sources_added" if job.new else "sources_updated"] += 1
        # files gone from an ingested folder (or now under another id / tenant): their chunks go
        for (sid, ten), info in existing.items():
            if (sid, ten) in seen or not info.origin:
                continue
            origin = Path(info.origin)
            under = any(origin.is_relative_to(r) for r in roots)
            named = any(origin == f for f, r in files if r is None)
            if under or named:
                counts["chunks_removed"] += store.delete_source(sid, ten)
                counts["sources_removed"] += 1
    finally:
        if bar is not None:
            bar.stop()
    return IngestReport(
        **counts,
        skipped=tuple(skipped),
        refused_links=tuple(refused),
        errors=tuple(errors),
        seconds=time.perf_counter() - t0,
    )


def write_source(
    store: Store,
    embedder: Embedder,
    job: SourceJob,
    *,
    tokenizer: Tokenizer,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    batch_size: int = 64,
) -> dict[str, int]:
    """Parse, chunk, embed (what changed) and replace one planned source; return its chunk counts.

    Raises:
        ValueError: The file changed since it was planned, or is no longer UTF-8 (run the ingest again).
    """
    f = Path(job.path)
    raw = f.read_bytes()
    if hashlib.sha256(raw).hexdigest()[:16] != job.content_hash:
        raise ValueError("the file changed during the ingest run; run it again")
    text = raw.decode("utf-8-sig")
    doc = parse_document(text, job.fmt, fallback_title=f.stem.replace("-", " ").replace("_", " "))
    counts = dict.fromkeys(
        ("chunks_added", "chunks_changed", "chunks_unchanged", "chunks_removed", "chunks_embedded"), 0
    )
    counts["chunks_written"] = _ingest_one(
        store, embedder, doc, f, job.settings, job.fmt, job.content_hash, job.ingest_key, tokenizer, max_tokens,
        batch_size, counts,
    )  # fmt: skip
    return counts


def _ingest_one(
    store: Store,
    embedder: Embedder,
    doc: ParsedDocument,
    f: Path,
    st: SourceSettings,
    fmt: str,
    content_hash: str,
    ingest_key: str,
    tok: Tokenizer,
    max_tokens: int,
    batch_size: int,
    counts: dict[str, int],
) -> int:
    """Chunk, embed what changed, and replace the source in one store transaction; return the chunk count."""
    pieces = chunk_document(doc, tokenizer=tok, max_tokens=max_tokens)
    old = {r.id: r for r in store.get_source_chunks(st.source_id, st.tenant)}
    updated = st.updated or datetime.fromtimestamp(f.stat().st_mtime, UTC)
    access = Access(tenant=st.tenant, groups=st.groups, label=st.label)
    language = st.language or doc.language
    drafts: list[dict[str, Any]] = []
    to_embed: list[int] = []
    for p in pieces:
        cid = f"{st.source_id}#{p.section_path}"
        heading_path = (doc.title, *p.headings)
        title = " › ".join(heading_path) if p.headings else doc.title
        th = text_key(p.text)
        prev = old.get(cid)
        reuse = prev is not None and prev.text_hash == th and prev.title == title
        if prev is None:
            counts["chunks_added"] += 1
        elif prev.text_hash != th:
            counts["chunks_changed"] += 1
        else:
            counts["chunks_unchanged"] += 1
        drafts.append(
            {
                "id": cid,
                "text": p.text,
                "text_hash": th,
                "title": title,
                "heading_path": heading_path,
                "ordinal": p.ordinal,
                "embedding": prev.embedding if (reuse and prev is not None) else None,
            }
        )
        if not reuse:
            to_embed.append(len(drafts) - 1)
    new_ids = {d["id"] for d in drafts}
    counts["chunks_removed"] += sum(1 for i in old if i not in new_ids)
    for d in drafts:
        d["passages"] = passages(d["title"], d["text"])
    for i in range(0, len(to_embed), batch_size):
        idx = to_embed[i : i + batch_size]
        vecs = np.asarray(
            embedder.embed([_embed_input(drafts[j]["title"], drafts[j]["text"], drafts[j]["passages"]) for j in idx]),
            dtype=np.float32,
        )
        for j, v in zip(idx, vecs, strict=True):
            drafts[j]["embedding"] = v
    counts["chunks_embedded"] += len(to_embed)
    meta = {"content_hash": content_hash, "ingest_key": ingest_key, "format": fmt}
    for d in drafts:
        # what the pipeline computes on a chunk's first sight (token counts, injection flags, MinHash
        # signature), computed once here and stored with the chunk (handed back on retrieval); a chunk longer
        # than one passage also keeps one vector per passage (the pruner's units), so pruning a search never
        # encodes a stored chunk again. An unchanged chunk keeps what it has.
        prev = old.get(d["id"])
        unchanged = prev is not None and prev.text_hash == d["text_hash"] and prev.title == d["title"]
        stored = prev.metadata.get(FEATURES_KEY) if unchanged and prev is not None else None
        fresh = not isinstance(stored, dict) or stored.get("v") != FEATURES_VERSION
        d["features"] = chunk_features(d["title"], d["text"]) if fresh else stored
        n_ps = len(d["passages"])
        kept = prev.metadata.get(PASSAGE_VECTORS_KEY) if unchanged and prev is not None and n_ps > 1 else None
        d["passage_vectors"] = kept if decode_vectors(kept, embedder.name, n_ps) is not None else None
    multi = [d for d in drafts if len(d["passages"]) > 1 and d["passage_vectors"] is None]
    for i in range(0, len(multi), batch_size):
        part = multi[i : i + batch_size]
        vecs = np.asarray(embedder.embed([p or "-" for d in part for p in d["passages"]]), dtype=np.float32)
        k = 0
        for d in part:
            m = len(d["passages"])
            d["passage_vectors"] = encode_vectors(embedder.name, vecs[k : k + m])
            k += m
    records = [
        ChunkRecord(
            id=d["id"],
            source_id=st.source_id,
            text=d["text"],
            embedding=d["embedding"],
            text_hash=d["text_hash"],
            title=d["title"],
            heading_path=d["heading_path"],
            document=st.document,
            version=st.version,
            updated_at=updated,
            access=access,
            authority=st.authority,
            language=language,
            origin=str(f),
            ordinal=d["ordinal"],
            metadata={
                **meta,
                FEATURES_KEY: d["features"],
                **({PASSAGE_VECTORS_KEY: d["passage_vectors"]} if d["passage_vectors"] else {}),
            },
        )
        for d in drafts
    ]
    store.replace_source(st.source_id, st.tenant, records)
    return len(records)

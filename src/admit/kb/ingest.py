"""Ingest: parse documents, split them by structure, embed, and write them source by source.

The steps live in their own modules: :mod:`admit.kb.parse` (parsers), :mod:`admit.kb.chunking` (chunker, ids),
:mod:`admit.kb.registry` (``sources.toml``), :mod:`admit.kb.files` (reading without following links); this
:mod:`admit.kb.ingest_types` (options, plan, report), :mod:`admit.kb.writing` (embed and write a source); this
module walks the files and runs the ingest, step by step. Their names are re-exported here.

* Parsers: Markdown (a line-based heading splitter that respects fenced code and front matter), HTML
  (BeautifulSoup, ``html.parser``), plain text. PDF is not supported (no parser is shipped).
* Chunker: sections by headings, then paragraphs packed up to ``max_tokens`` cl100k tokens; a paragraph longer
  than that is split at sentence boundaries.
* Ids: ``<source_id>#<section-path>`` from heading slugs (``install#upgrade/rollback``); a repeated path gets
  ``-2``, a section split in parts gets ``~2``, ``~3``. Unchanged text under unchanged headings keeps its id.
* Re-ingest: a file whose content and settings are unchanged is skipped; a changed one is re-chunked, unchanged
  chunks reuse their stored embeddings, and the source is replaced in one transaction (readers see the old or the
  new version); a file that is gone from an ingested folder has its chunks deleted (the folder's last one too).
  A FIFO, socket or device in a folder is refused (never opened); one, or a directory, standing where a stored
  document was keeps that document's last good version (a refusal in the report), it is not deleted.
* A built documentation site is ingested as its documentation (:mod:`admit.kb.docsite`): each page's main
  content, titles without the site's suffix, the site's version as the source's; source copies, highlighted
  source, assets, search and index pages, redirect stubs and ``exclude`` globs are left out, counted per kind in
  :attr:`IngestReport.left_out`.
* Every file is read, parsed and chunked first (a fast pass, nothing embedded): then each chunk is stored once
  (exact and near copies across pages, :mod:`admit.kb.copies`; the kept copy's ``also_at`` names the others),
  the number of chunks to embed is known (the progress share never goes backwards), and what changed is embedded
  and written. A page that gives no chunk stores nothing, is counted unchanged and is named in
  :attr:`IngestReport.no_chunk`; a folder where most pages give none is in :attr:`IngestReport.mostly_empty`.
* A file over ``max_file_bytes`` is an error of its own (one line); the rest of the run is ingested.
* Registry (``sources.toml``): ``[defaults]`` and ``[[sources]]`` entries matched by path glob or source id that
  set tenant, groups, label, authority, document, version, language, updated.
"""

from __future__ import annotations

import hashlib
import logging
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Literal

from admit.backends.embedders.base import Embedder
from admit.backends.tokenizers import Tokenizer, resolve_tokenizer
from admit.errors import ConfigError
from admit.kb._progress import IngestProgress
from admit.kb.chunking import DEFAULT_MAX_TOKENS, TextChunk, chunk_document, slugify
from admit.kb.copies import PageChunks, one_copy
from admit.kb.docsite import SiteFilter
from admit.kb.files import RefusedFileError, document_name, page_text, read_no_follow
from admit.kb.home import HomeVersions
from admit.kb.ingest_types import DEFAULT_MAX_FILE_BYTES, IngestOptions, IngestReport, SourceJob, SourceWriter
from admit.kb.parse import (
    FORMATS,
    PARSER_REVISIONS,
    SUPPORTED,
    ParsedDocument,
    Section,
    format_of,
    parse_document,
    parse_html,
    parse_markdown,
    parse_text,
)
from admit.kb.registry import Registry, SourceSettings, load_registry
from admit.kb.registry import settings_for as _settings
from admit.kb.store import SourceInfo, Store
from admit.kb.writing import EmbedQueue, PendingSource, prepare_source, records_from_chunks, write_source

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_TOKENS",
    "FORMATS",
    "IngestOptions",
    "IngestReport",
    "ParsedDocument",
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
    "parse_html",
    "parse_markdown",
    "parse_text",
    "records_from_chunks",
    "slugify",
    "write_source",
]

logger = logging.getLogger(__name__)

_COUNTS = tuple(f.name for f in fields(IngestReport) if f.type in ("int", int))
"""The report's counts (its ``int`` fields), each kept by the run as it goes."""


def ingest_paths(
    store: Store,
    embedder: Embedder,
    paths: Sequence[str | Path],
    options: IngestOptions | None = None,
    *,
    progress: bool | Literal["auto"] | Callable[[str], None] = False,
    writer: SourceWriter | None = None,
) -> IngestReport:
    """Ingest files and folders into ``store``; see the module docstring for the rules.

    The run, step by step: walk the paths (:func:`_walk`), read, parse and chunk each file
    (:meth:`_Run.plan_file`), decide over all of them which chunks are copies and which files changed
    (:meth:`_Run.decide`), write what changed (here, embedded in batches across files, or by ``writer``:
    :meth:`_Run.write_planned`), then remove the sources gone from the ingested folders (:meth:`_Run.remove_gone`).

    Args:
        store: The store.
        embedder: Embeds passages (title and headings prepended).
        paths: Files and folders (folders are walked; hidden files skipped).
        options: Access defaults, registry, chunker, batch size, file cap (default: :class:`IngestOptions()`).
        progress: ``True`` for progress on stderr (a rich bar on a terminal, else a line every few seconds and
            a final one), ``"auto"`` for the same without the final line when no line fell due (the CLI's
            default: a short run into a log writes nothing), or a callback given each file's path.
        writer: Writes the sources that need it once the walk has planned them all (default: each is chunked,
            embedded and written here as it is found).
    """
    run = _Run(store, embedder, options or IngestOptions(), writer)
    t0 = time.perf_counter()
    files = _walk(paths, run.refused)
    site = SiteFilter(run.options.exclude)
    run.refused = _links_left_out(run.refused, _folders(paths), site, run.left_out)
    taken: list[tuple[Path, Path | None, str]] = []
    for f, root in files:
        rel = f.relative_to(root).as_posix() if root is not None else f.name
        kind = site.kind(f, rel, in_folder=root is not None)
        if kind is None:
            taken.append((f, root, rel))
        else:  # not documentation: a site's source copy, asset, search page, or an --exclude match
            run.left_out.append((str(f), kind))
    shown = progress is True or progress == "auto"
    bar = IngestProgress(sum(_size(f) for f, _, _ in taken), enabled=shown, final=progress is True)
    run.queue = EmbedQueue(store, embedder, run.options.batch_size, run.counts, run.errors, bar)
    try:
        for f, root, rel in taken:  # the fast pass: read, parse and chunk every file (nothing embedded)
            bar.file(rel, _size(f))
            if callable(progress):
                progress(rel)
            run.plan_file(f, root, rel)
        pending = run.decide()  # one copy of each chunk; what is unchanged; the exact number to embed
        bar.known(sum(p.chunks_to_embed() for p, _ in pending))
        for p, added in pending:
            run.queue.add(p, added=added)
        run.queue.flush()
        run.write_planned()
        run.remove_gone(_folders(paths), [f for f, r in files if r is None])
    finally:
        bar.stop()
    return IngestReport(
        **run.counts,
        skipped=tuple(run.skipped),
        left_out=tuple(run.left_out),
        refused_links=tuple(p for p, _ in run.refused),
        refusals=tuple(run.refused),
        errors=tuple(run.errors),
        no_chunk=tuple(run.no_chunk),
        copies_only=tuple(run.copies_only),
        guarded=tuple(run.guarded),
        mostly_empty=run.mostly_empty(),
        kept_last_good=tuple(run.kept),
        seconds=time.perf_counter() - t0,
    )


MOSTLY_EMPTY_MIN = 2
"""The fewest pages of a folder that must give no chunk (and more than half its pages) for the folder to be
reported as mostly empty (:attr:`IngestReport.mostly_empty`)."""

GUARD_KEY = "extract_guard"
"""A parsed document's mark for a page the extraction guard caught (its whole text kept), besides its
``content_guard`` field (the one-line reason, where the parser has that field): read from the document's
``metadata`` mapping, its ``site`` mapping or an attribute of that name, whichever it has."""


def _guarded(doc: ParsedDocument) -> str:
    """Why the parser's extraction guard caught the page (``""``: it did not; see :data:`GUARD_KEY`)."""
    reason = getattr(doc, "content_guard", "")
    if reason:
        return str(reason)
    for where in (getattr(doc, "metadata", None), doc.site):
        if isinstance(where, Mapping) and where.get(GUARD_KEY):
            return str(where[GUARD_KEY])
    mark = getattr(doc, GUARD_KEY, "")
    return str(mark) if mark else ""


@dataclass(slots=True, kw_only=True)
class _Planned:
    """A file read, parsed and chunked by the fast pass, waiting for the copies rule and the change check."""

    f: Path
    root: Path | None
    fmt: str
    doc: ParsedDocument
    st: SourceSettings
    content_hash: str
    base_key: str
    """The ingest key before the copies rule's share of it."""
    pieces: list[TextChunk]
    old: SourceInfo | None


@dataclass(slots=True)
class _Run:
    """One ingest run's state: what the store held, what the walk saw, the counts, the planned jobs."""

    store: Store
    embedder: Embedder
    options: IngestOptions
    writer: SourceWriter | None
    registry: Registry = field(init=False)
    tokenizer: Tokenizer = field(init=False)
    existing: dict[tuple[str, str], SourceInfo] = field(init=False)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    skipped: list[str] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    seen_ids: dict[str, str] = field(default_factory=dict)
    jobs: list[SourceJob] = field(default_factory=list)
    queue: EmbedQueue | None = None
    kept: list[str] = field(default_factory=list)
    by_origin: dict[str, list[tuple[str, str]]] | None = None
    home: HomeVersions = field(default_factory=HomeVersions)
    planned: list[_Planned] = field(default_factory=list)
    no_chunk: list[str] = field(default_factory=list)
    copies_only: list[str] = field(default_factory=list)
    guarded: list[str] = field(default_factory=list)
    pages: dict[str, list[int]] = field(default_factory=dict)
    """Ingested folder -> ``[pages, pages that gave no chunk]``."""

    def __post_init__(self) -> None:
        reg = self.options.registry
        self.registry = reg if isinstance(reg, Registry) else load_registry(reg)
        self.tokenizer = resolve_tokenizer(self.options.tokenizer)
        self.existing = {(s.source_id, s.tenant): s for s in self.store.list_sources()}

    def fail(self, f: Path, message: str) -> None:
        """Record a file's error (the file counts as taken up: ``files`` = sources + errors)."""
        self.errors.append((str(f), message))
        logger.info("ingest: %s: %s", f, message)  # the report carries it; the CLI prints it once

    def plan_file(self, f: Path, root: Path | None, rel: str) -> None:
        """Read and parse one file, and plan what it needs: nothing (unchanged), a write here, or a job."""
        fmt = format_of(document_name(f.name))
        if fmt is None:
            if root is None:  # a file named on the command line: an error; one met in a folder: skipped
                self.counts["files"] += 1
                self.fail(f, f"unsupported format {f.suffix!r}; supported: {', '.join(SUPPORTED)}")
            else:
                self.skipped.append(str(f))
            return
        try:
            doc_and_raw = self._read_document(f, root, fmt)
            if doc_and_raw is None:
                return
            raw, doc = doc_and_raw
            if doc.page_kind is not None and root is not None:  # a search, index or listing page of a site
                self.counts["files"] -= 1
                self.left_out.append((str(f), "redirects" if doc.page_kind == "redirect" else "search_index_pages"))
                if doc.page_kind == "redirect":
                    self.keep_stored(f)
                return
            if fmt == "html" and root is not None and "version" not in doc.front_matter:
                doc = self._home_version(f, root, doc)
            st = self._source_settings(f, root, rel, doc)
            self._plan_source(f, root, fmt, raw, doc, st)
        except (OSError, ValueError) as exc:
            self.fail(f, str(exc))

    def _home_version(self, f: Path, root: Path, doc: ParsedDocument) -> ParsedDocument:
        """A site's page that states no version takes the one its home page states (:class:`HomeVersions`)."""
        version = self.home.version_for(f, root)
        if not version:
            return doc
        return replace(
            doc, front_matter={**doc.front_matter, "version": version}, site={**doc.site, "version": version}
        )

    def keep_stored(self, f: Path) -> None:
        """Keep what the store holds from ``f`` (a page that now redirects elsewhere): its last good version is
        not deleted for a redirect stub, which holds no text of its own (a refresh with a target and a short
        delay: :func:`admit.kb.docsite.is_redirect`)."""
        if self.by_origin is None:
            self.by_origin = {}
            for key, info in self.existing.items():
                self.by_origin.setdefault(info.origin, []).append(key)
        for key in self.by_origin.get(str(f), ()):
            if key not in self.seen:
                self.seen.add(key)
                if str(f) not in self.kept:
                    self.kept.append(str(f))
                    logger.info("ingest: %s is now a redirect stub; its last good version is kept", f)

    def _read_document(self, f: Path, root: Path | None, fmt: str) -> tuple[bytes, ParsedDocument] | None:
        """The file's bytes and parsed document (``None``: refused, or an error recorded)."""
        size = _size(f)
        if size > self.options.max_file_bytes:
            self.counts["files"] += 1
            cap = self.options.max_file_bytes
            self.fail(f, f"{size:,} bytes, over the {cap:,}-byte cap per file (raise --max-file-mb to read it)")
            return None
        try:
            raw = _read(f, root)
        except RefusedFileError as exc:
            logger.info("ingest: not reading %s", exc)
            self.refused.append((str(f), str(exc).removeprefix(f"{f}: ")))
            return None
        self.counts["files"] += 1
        try:
            text = page_text(raw, f.name, self.options.max_file_bytes)
        except UnicodeDecodeError as exc:
            self.fail(f, f"not UTF-8 text (byte {exc.start})")
            return None
        return raw, parse_document(text, fmt, fallback_title=_fallback_title(f))

    def _source_settings(self, f: Path, root: Path | None, rel: str, doc: ParsedDocument) -> SourceSettings:
        """The source's settings (registry, options, front matter); its id must be the file's alone."""
        default_id = _default_source_id(f, root)
        if default_id in self.seen_ids and self.seen_ids[default_id] != str(f):
            default_id = rel  # a.md and a.html: keep the suffix of the second
        st = _settings(self.registry, rel, default_id, self.options.overrides(), doc.front_matter)
        if st.source_id in self.seen_ids and self.seen_ids[st.source_id] != str(f):
            raise ConfigError(
                f"Source id {st.source_id!r} is used by both {self.seen_ids[st.source_id]} and {f}; "
                "give one an `id` in the registry."
            )
        self.seen_ids[st.source_id] = str(f)
        self.seen.add((st.source_id, st.tenant))
        return st

    def _plan_source(
        self, f: Path, root: Path | None, fmt: str, raw: bytes, doc: ParsedDocument, st: SourceSettings
    ) -> None:
        """Chunk the source and keep it for :meth:`decide` (which needs every page's chunks)."""
        o = self.options
        content_hash = hashlib.sha256(raw).hexdigest()[:16]
        tok_name = getattr(self.tokenizer, "name", "")
        parser = f":{PARSER_REVISIONS[fmt]}" if fmt in PARSER_REVISIONS else ""  # a parser that reads more now
        base_key = hashlib.sha256(
            f"{content_hash}:{st.key()}:{o.max_tokens}:{tok_name}:{self.embedder.name}{parser}".encode()
        ).hexdigest()[:16]
        pieces = chunk_document(doc, tokenizer=self.tokenizer, max_tokens=o.max_tokens)
        old = self.existing.get((st.source_id, st.tenant))
        self.planned.append(
            _Planned(f=f, root=root, fmt=fmt, doc=doc, st=st, content_hash=content_hash, base_key=base_key,
                     pieces=pieces, old=old)
        )  # fmt: skip

    def decide(self) -> list[tuple[PendingSource, bool]]:
        """Over every planned file: which chunks are copies of others (stored once, :mod:`admit.kb.copies`),
        which files gave nothing, which are unchanged (counted), and what must be written: planned jobs for the
        writer, or the sources to embed here (returned with whether each is new)."""
        pages = [
            PageChunks(
                (p.st.tenant, tuple(p.st.groups), p.st.label, p.st.authority, p.st.version),
                p.doc.title,
                [(f"{p.st.source_id}#{c.section_path}", c.headings, c.text) for c in p.pieces],
            )
            for p in self.planned
        ]
        copies = one_copy(pages)
        self.counts["chunks_copies"] += len(copies.dropped)
        out: list[tuple[PendingSource, bool]] = []
        for p, page in zip(self.planned, pages, strict=True):
            ids = [cid for cid, _, _ in page.chunks]
            guard = _guarded(p.doc)
            if guard:
                self.guarded.append(str(p.f))
                logger.info("ingest: %s was kept whole: %s", p.f, guard)
            if p.root is not None:
                tally = self.pages.setdefault(str(p.root), [0, 0])
                tally[0] += 1
                tally[1] += not p.pieces
            if not p.pieces:
                self.no_chunk.append(str(p.f))
                logger.info("ingest: %s gave no chunk (no text found in it)", p.f)
            digest = copies.digest(ids)
            key = p.base_key if not digest else hashlib.sha256(f"{p.base_key}:{digest}".encode()).hexdigest()[:16]
            drop, also = copies.of_page(ids)
            dropped = set(drop)
            kept = [c for c, cid in zip(p.pieces, ids, strict=True) if cid not in dropped]
            old = p.old
            if old is not None and old.ingest_key == key and old.origin == str(p.f):
                self.counts["sources_unchanged"] += 1
                self.counts["chunks_unchanged"] += old.chunks
                continue
            if not kept and old is None:  # nothing stored before, nothing to store now: unchanged
                self.counts["sources_unchanged"] += 1
                if p.pieces:  # every chunk stored with another page (its also_at names this one)
                    self.copies_only.append(str(p.f))
                    logger.info("ingest: every chunk of %s is stored as another page's copy", p.f)
                continue
            sid = p.st.source_id
            also_at = {cid.removeprefix(f"{sid}#"): v for cid, v in also.items()}
            under = {cid.removeprefix(f"{sid}#"): v for cid, v in copies.under_of_page(ids).items()}
            if self.writer is not None:
                self.jobs.append(
                    SourceJob(
                        path=str(p.f),
                        fmt=p.fmt,
                        settings=p.st,
                        content_hash=p.content_hash,
                        ingest_key=key,
                        new=old is None,
                        drop=tuple(cid.removeprefix(f"{sid}#") for cid in drop),
                        also_at=also_at,
                        also_under=under,
                    )
                )
                continue
            try:
                pending = prepare_source(
                    self.store, self.embedder, p.doc, p.f, p.st, p.fmt, p.content_hash, key, self.tokenizer,
                    self.options.max_tokens, pieces=kept, also_at=also_at, also_under=under,
                )  # fmt: skip
            except (OSError, ValueError) as exc:
                self.fail(p.f, str(exc))
                continue
            out.append((pending, old is None))
        self.planned = []
        return out

    def mostly_empty(self) -> tuple[tuple[str, int, int], ...]:
        """The ingested folders where most pages gave no chunk: ``(folder, no chunk, pages)``."""
        return tuple(
            (folder, empty, n)
            for folder, (n, empty) in self.pages.items()
            if empty >= MOSTLY_EMPTY_MIN and 2 * empty > n
        )

    def write_planned(self) -> None:
        """Hand the planned jobs to the writer; add up what it reports."""
        if self.writer is None or not self.jobs:
            return
        for job, outcome in self.writer(self.jobs):
            if isinstance(outcome, str):
                self.fail(Path(job.path), outcome)
                continue
            for k, v in outcome.items():
                self.counts[k] += int(v)
            self.counts["sources_added" if job.new else "sources_updated"] += 1

    def remove_gone(self, folders: Sequence[Path], named: Sequence[Path]) -> None:
        """Delete the sources read before from an ingested folder (or a named file) that this run did not see:
        files removed since (the folder's last one too), or now under another id or tenant. A file that is
        still there but failed or was refused this run keeps its last good chunks (reported in ``kept``)."""
        failed = {p for p, _ in self.errors} | {p for p, _ in self.refused}
        for (sid, ten), info in self.existing.items():
            if (sid, ten) in self.seen or not info.origin:
                continue
            if info.origin in failed:
                if info.origin not in self.kept:
                    self.kept.append(info.origin)
                    logger.warning("ingest: %s failed this run; its last good version is kept", info.origin)
                continue
            origin = Path(info.origin)
            if any(origin.is_relative_to(r) for r in folders) or origin in named:
                odd = _not_a_file(origin)
                if odd:  # a directory or a FIFO where the document was: refused, never taken for a removal
                    cause = f"{odd} stands where a document was; its last good version is kept"
                    logger.warning("ingest: %s: %s", info.origin, cause)
                    self.refused.append((info.origin, cause))
                    self.kept.append(info.origin)
                    continue
                self.counts["chunks_removed"] += self.store.delete_source(sid, ten)
                self.counts["sources_removed"] += 1


def _folders(paths: Sequence[str | Path]) -> list[Path]:
    """The folders among the ingested paths, resolved: what removals are judged against (not the files found
    under them, so a folder emptied since the last run still has its sources removed)."""
    return [Path(p).expanduser().resolve() for p in paths if Path(p).expanduser().is_dir()]


def _links_left_out(
    refused: list[tuple[str, str]], folders: Sequence[Path], site: SiteFilter, left_out: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The refused links that are documentation; the others (a site's assets: Debian links a theme's ``_static``
    files to other packages, dangling once unpacked alone) go to ``left_out`` under their kind, counted with the
    files of that kind rather than listed one by one as refusals. None of them is followed either way."""
    kept: list[tuple[str, str]] = []
    for path, cause in refused:
        f = Path(path)
        root = next((r for r in folders if f.is_relative_to(r)), None)
        kind = site.kind(f, f.relative_to(root).as_posix(), in_folder=True) if root is not None else None
        if kind is None:
            kept.append((path, cause))
        else:
            left_out.append((path, kind))
    return kept


def _link_refusal(f: Path, root: Path) -> str:
    """Why the link ``f`` under ``root`` is not followed (``""``: it is, its target is a file inside ``root``)."""
    target = f.resolve()
    if not target.exists():
        return f"a dangling symbolic link: its target {target} does not exist"
    if not target.is_relative_to(root):
        return f"a symbolic link whose target {target} lies outside {root}"
    return ""


def _walk(paths: Sequence[str | Path], refused: list[tuple[str, str]] | None = None) -> list[tuple[Path, Path | None]]:
    """``(file, root)`` for every file under the paths (root: the folder it was found under, None if named).

    A symbolic link found in a folder is followed only when its target lies inside that folder; others go to
    ``refused`` with their cause (and the log), so a link such as ``docs/passwd.txt -> /etc/passwd`` is never read.
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
                    cause = _link_refusal(f, root)
                    if cause:
                        logger.info("ingest: not following %s: %s", f, cause)
                        if refused is not None:
                            refused.append((str(f), cause))
                        continue
                if f.is_file():
                    out.append((f, root))
                elif not f.is_dir():  # a FIFO, a socket, a device: never opened, refused with its kind
                    cause = f"{_not_a_file(f) or 'not a regular file'}, not a document"
                    logger.info("ingest: not reading %s: %s", f, cause)
                    if refused is not None:
                        refused.append((str(f), cause))
        elif p.is_file():
            out.append((p.resolve(), None))
        else:
            raise ConfigError(f"Ingest path {str(raw)!r} does not exist.")
    return out


def _not_a_file(p: Path) -> str:
    """What stands at ``p`` when it is neither a regular file nor a link nor gone ("a directory", "a FIFO", ...),
    else ``""``."""
    try:
        mode = p.lstat().st_mode
    except OSError:
        return ""
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return ""
    kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")]
    kinds += [(stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _read(f: Path, root: Path | None) -> bytes:
    """A walked file's bytes, opened without following links (a link swapped in after the walk is refused)."""
    target = f.resolve() if root is not None else f
    if root is not None and not target.is_relative_to(root):
        raise RefusedFileError(f"{f}: its target lies outside {root} (changed after the folder walk)")
    return read_no_follow(target, root)


def _default_source_id(f: Path, root: Path | None) -> str:
    rel = f.relative_to(root) if root is not None else Path(f.name)
    return rel.with_name(document_name(rel.name)).with_suffix("").as_posix()


def _fallback_title(f: Path) -> str:
    """A document's title when it states none: its file's name, less its suffixes (``.html.gz`` too)."""
    return Path(document_name(f.name)).stem.replace("-", " ").replace("_", " ")


def _size(f: Path) -> int:
    try:
        return f.stat().st_size
    except OSError:
        return 0

"""Ingest: parse documents, split them by structure, embed, and write them source by source.

The steps live in their own modules: :mod:`admit.kb.parse` (parsers), :mod:`admit.kb.chunking` (chunker, ids),
:mod:`admit.kb.registry` (``sources.toml``), :mod:`admit.kb.files` (reading without following links); this
module walks the files and runs the ingest. Their names are re-exported here.

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

import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from admit.backends.embedders.base import Embedder, text_key
from admit.backends.tokenizers import Tokenizer, resolve_tokenizer
from admit.errors import ConfigError
from admit.features import FEATURES_KEY, FEATURES_VERSION, chunk_features
from admit.kb._progress import IngestProgress
from admit.kb.chunking import DEFAULT_MAX_TOKENS, TextChunk, chunk_document, slugify
from admit.kb.files import RefusedFileError, read_no_follow
from admit.kb.parse import FORMATS, ParsedDocument, Section, parse_document, parse_html, parse_markdown, parse_text
from admit.kb.registry import Registry, SourceSettings, load_registry
from admit.kb.registry import settings_for as _settings
from admit.kb.store import ChunkRecord, Store
from admit.passages import PASSAGE_VECTORS_KEY, decode_vectors, encode_vectors, passages
from admit.types import Access, Chunk

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "FORMATS",
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
    "slugify",
    "write_source",
]

logger = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]


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
    """Files not read because of a link: symbolic links under an ingested folder whose target lies outside it,
    files swapped for a link after the walk, and files with more than one hard link (see :mod:`admit.kb.files`)."""
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


def _read(f: Path, root: Path | None) -> bytes:
    """A walked file's bytes, opened without following links (a link swapped in after the walk is refused)."""
    target = f.resolve() if root is not None else f
    if root is not None and not target.is_relative_to(root):
        raise RefusedFileError(f"{f}: its target lies outside {root} (changed after the folder walk)")
    return read_no_follow(target, root)


def _default_source_id(f: Path, root: Path | None) -> str:
    rel = f.relative_to(root) if root is not None else Path(f.name)
    return rel.with_suffix("").as_posix()


def _embed_input(title: str, text: str, ps: Sequence[str]) -> str:
    """The text embedded for a chunk: for a chunk that is one passage (``ps``: its passages), exactly the passage
    the setwise pruner embeds (so the stored vector serves both retrieval and pruning); else title and text."""
    if len(ps) == 1 and ps[0]:
        return ps[0]
    return f"{title}\n{text}" if title else text


def records_from_chunks(chunks: Sequence[Chunk], embedder: Embedder, *, batch_size: int = 64) -> list[ChunkRecord]:
    """Records of chunks that are already split: the vector ingest computes, the features, the passage vectors.

    Raises:
        ConfigError: A chunk without an access label (it could never be read), or ids repeated within a tenant.
    """
    seen: set[tuple[str, str]] = set()
    for c in chunks:
        if c.access is None or not c.access.tenant:
            raise ConfigError(f"Chunk {c.id!r} has no access label (tenant); it could never be read.")
        if (c.access.tenant, c.id) in seen:
            raise ConfigError(f"Chunk id {c.id!r} is repeated in tenant {c.access.tenant!r}.")
        seen.add((c.access.tenant, c.id))
    texts: list[str] = []
    slots: list[tuple[int, int]] = []  # (chunk, -1 for the chunk vector or the passage's index)
    all_ps = [passages(c.title, c.text) for c in chunks]
    for i, (c, ps) in enumerate(zip(chunks, all_ps, strict=True)):
        texts.append(_embed_input(c.title, c.text, ps))
        slots.append((i, -1))
        if len(ps) > 1:
            texts.extend(p or "-" for p in ps)
            slots.extend((i, k) for k in range(len(ps)))
    vecs: list[FloatArray] = []
    for start in range(0, len(texts), max(batch_size, 1)):
        vecs.extend(np.asarray(embedder.embed(texts[start : start + batch_size]), dtype=np.float32))
    chunk_vec: dict[int, FloatArray] = {}
    per_passage: dict[int, list[FloatArray]] = {}
    for (i, k), v in zip(slots, vecs, strict=True):
        if k < 0:
            chunk_vec[i] = v
        else:
            per_passage.setdefault(i, []).append(v)
    records = []
    for i, c in enumerate(chunks):
        meta: dict[str, Any] = {
            **dict(c.metadata),
            "content_hash": text_key(c.text),
            FEATURES_KEY: chunk_features(c.title, c.text),
        }
        if i in per_passage:
            meta[PASSAGE_VECTORS_KEY] = encode_vectors(embedder.name, np.stack(per_passage[i]))
        records.append(
            ChunkRecord(
                id=c.id,
                source_id=c.source_id,
                text=c.text,
                embedding=chunk_vec[i],
                text_hash=text_key(c.text),
                title=c.title,
                heading_path=(c.title,) if c.title else (),
                document=c.source_id,
                version=c.version,
                updated_at=c.updated_at,
                access=c.access,
                authority=c.authority,
                language=c.language,
                origin=str(c.metadata.get("origin", "")),
                ordinal=i,
                metadata=meta,
            )
        )
    return records


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

    bar = IngestProgress(sum(_size(f) for f, _ in files), enabled=progress is True)
    queue = _EmbedQueue(store, embedder, batch_size, counts, errors, bar)
    try:
        for f, root in files:
            rel = f.relative_to(root).as_posix() if root is not None else f.name
            bar.file(rel, _size(f))
            if callable(progress):
                progress(rel)
            try:
                fmt = FORMATS.get(f.suffix.lower())
                if fmt is None:
                    if root is None:
                        errors.append((str(f), f"unsupported format {f.suffix!r}; supported: {sorted(FORMATS)}"))
                    else:
                        skipped.append(str(f))
                    continue
                try:
                    raw = _read(f, root)
                except RefusedFileError as exc:
                    logger.warning("ingest: not reading %s", exc)
                    refused.append(str(f))
                    continue
                counts["files"] += 1
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
                pending = _prepare_source(store, embedder, doc, f, st, fmt, content_hash, ingest_key, tok, max_tokens)
                queue.add(pending, added=old_src is None)  # embedded with other files' chunks, then written
            except ConfigError:
                queue.flush()  # the files before this one are written, as they were before batching
                raise
            except (OSError, ValueError) as exc:
                errors.append((str(f), str(exc)))
                logger.warning("ingest: %s: %s", f, exc)
        queue.flush()
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
        ValueError: The file changed since it was planned, is no longer UTF-8, or could not be embedded or
            written (run the ingest again).
    """
    f = Path(job.path)
    raw = read_no_follow(f)  # never through a link swapped in since the walk
    if hashlib.sha256(raw).hexdigest()[:16] != job.content_hash:
        raise ValueError("the file changed during the ingest run; run it again")
    text = raw.decode("utf-8-sig")
    doc = parse_document(text, job.fmt, fallback_title=f.stem.replace("-", " ").replace("_", " "))
    keys = ("chunks_added", "chunks_changed", "chunks_unchanged", "chunks_removed", "chunks_embedded", "chunks_written")
    counts = dict.fromkeys((*keys, "sources_added", "sources_updated"), 0)
    errors: list[tuple[str, str]] = []
    queue = _EmbedQueue(store, embedder, batch_size, counts, errors, IngestProgress(0, enabled=False))
    pending = _prepare_source(
        store, embedder, doc, f, job.settings, job.fmt, job.content_hash, job.ingest_key, tokenizer, max_tokens
    )
    queue.add(pending, added=job.new)
    queue.flush()  # the same embed-and-write path as a local run (one replace_source)
    if errors:
        raise ValueError(errors[0][1])
    return {k: counts[k] for k in keys}


def _size(f: Path) -> int:
    try:
        return f.stat().st_size
    except OSError:
        return 0


@dataclass(slots=True, kw_only=True)
class _Pending:
    """A chunked source waiting for its vectors: what :func:`_write_source` needs, and the texts to embed."""

    f: Path
    st: SourceSettings
    drafts: list[dict[str, Any]]
    to_embed: list[int]
    """Drafts whose chunk vector is computed (new or changed)."""
    multi: list[int]
    """Drafts of more than one passage that need one vector per passage."""
    meta: dict[str, Any]
    updated: datetime
    access: Access
    language: str | None

    def texts(self) -> list[tuple[int, str, int]]:
        """``(draft, text, slot)`` to embed, a draft's texts together; slot -1 is the chunk vector, else a passage."""
        need = set(self.to_embed)
        out: list[tuple[int, str, int]] = []
        for j in sorted(need | set(self.multi)):
            d = self.drafts[j]
            if j in need:
                out.append((j, _embed_input(d["title"], d["text"], d["passages"]), -1))
            if j in self.multi:
                out.extend((j, p or "-", k) for k, p in enumerate(d["passages"]))
        return out


class _EmbedQueue:
    """Collects chunked sources and embeds their texts in batches across sources, then writes each source.

    Texts wait until ``batch_size`` of them are queued (the chunks of one file or of many small ones), so a file
    of one chunk does not cost a forward pass of its own; each source is still replaced in one transaction once
    all its vectors are in.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        batch_size: int,
        counts: dict[str, int],
        errors: list[tuple[str, str]],
        bar: IngestProgress,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.batch_size = max(1, batch_size)
        self.counts = counts
        self.errors = errors
        self.bar = bar
        self.waiting: list[tuple[_Pending, bool]] = []
        self.queued = 0

    def add(self, pending: _Pending, *, added: bool) -> None:
        texts = pending.texts()
        self.bar.found(len({j for j, _, _ in texts}))
        self.waiting.append((pending, added))
        self.queued += len(texts)
        if self.queued >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if not self.waiting:
            return
        waiting, self.waiting, self.queued = self.waiting, [], 0
        items = [(w, j, text, slot) for w, (p, _) in enumerate(waiting) for j, text, slot in p.texts()]
        vecs = np.zeros((len(items), self.embedder.dim), dtype=np.float32)
        try:
            for i in range(0, len(items), self.batch_size):
                part = items[i : i + self.batch_size]
                vecs[i : i + len(part)] = np.asarray(self.embedder.embed([t for _, _, t, _ in part]), dtype=np.float32)
                # a chunk counts as done once its last text is embedded
                last = i + len(part)
                self.bar.done(sum(1 for k in range(i, last) if k + 1 == len(items) or items[k + 1][:2] != items[k][:2]))
        except (OSError, ValueError) as exc:
            for p, _ in waiting:
                self.errors.append((str(p.f), f"embedding failed: {exc}"))
            logger.warning("ingest: embedding failed for %d file(s): %s", len(waiting), exc)
            return
        by_source: dict[int, list[tuple[int, int, FloatArray]]] = {}
        for (w, j, _, slot), v in zip(items, vecs, strict=True):
            by_source.setdefault(w, []).append((j, slot, v))
        for w, (p, added) in enumerate(waiting):
            try:
                n = _write_source(self.store, self.embedder, p, by_source.get(w, []))
            except (OSError, ValueError) as exc:
                self.errors.append((str(p.f), str(exc)))
                logger.warning("ingest: %s: %s", p.f, exc)
                continue
            self.counts["chunks_embedded"] += len(p.to_embed)
            for d in p.drafts:
                self.counts[d["counted"]] += 1
            self.counts["chunks_removed"] += p.meta["removed"]
            self.counts["sources_added" if added else "sources_updated"] += 1
            self.counts["chunks_written"] += n


def _prepare_source(
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
) -> _Pending:
    """Chunk a source and find what changed (the chunk and passage vectors to compute); nothing is written."""
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
            counts_key = "chunks_added"
        elif prev.text_hash != th:
            counts_key = "chunks_changed"
        else:
            counts_key = "chunks_unchanged"
        drafts.append(
            {
                "id": cid,
                "text": p.text,
                "text_hash": th,
                "title": title,
                "heading_path": heading_path,
                "ordinal": p.ordinal,
                "embedding": prev.embedding if (reuse and prev is not None) else None,
                "counted": counts_key,
            }
        )
        if not reuse:
            to_embed.append(len(drafts) - 1)
    new_ids = {d["id"] for d in drafts}
    removed = sum(1 for i in old if i not in new_ids)
    for d in drafts:
        d["passages"] = passages(d["title"], d["text"])
    meta = {"content_hash": content_hash, "ingest_key": ingest_key, "format": fmt, "removed": removed}
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
    multi = [j for j, d in enumerate(drafts) if len(d["passages"]) > 1 and d["passage_vectors"] is None]
    return _Pending(
        f=f,
        st=st,
        drafts=drafts,
        to_embed=to_embed,
        multi=multi,
        meta=meta,
        updated=updated,
        access=access,
        language=language,
    )


def _write_source(
    store: Store, embedder: Embedder, pending: _Pending, vectors: Sequence[tuple[int, int, FloatArray]]
) -> int:
    """Put the computed vectors in place and replace the source in one store transaction; return the chunk count."""
    p = pending
    st, drafts, f = p.st, p.drafts, p.f
    per_passage: dict[int, dict[int, FloatArray]] = {}
    for j, slot, v in vectors:
        if slot < 0:
            drafts[j]["embedding"] = v
        else:
            per_passage.setdefault(j, {})[slot] = v
    for j, vs in per_passage.items():
        drafts[j]["passage_vectors"] = encode_vectors(embedder.name, np.stack([vs[k] for k in range(len(vs))]))
    updated, access, language = p.updated, p.access, p.language
    meta = {k: v for k, v in p.meta.items() if k != "removed"}
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

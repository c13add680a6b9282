"""Ingest's writing half: chunk a parsed source, embed what changed (batched across sources), replace it.

:func:`write_source` writes one planned :class:`~admit.kb.ingest_types.SourceJob` (the Ray engine's workers
call it); :func:`records_from_chunks` turns already split chunks into records (``KnowledgeBase.add_chunks``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from admit.backends.embedders.base import Embedder, text_key
from admit.backends.tokenizers import Tokenizer
from admit.errors import ConfigError, InputError
from admit.features import FEATURES_KEY, chunk_features, features_current
from admit.kb._progress import IngestProgress
from admit.kb.chunking import TextChunk, chunk_document
from admit.kb.copies import ALSO_AT_KEY, ALSO_UNDER_KEY, also_under_title
from admit.kb.files import document_name, page_text, read_no_follow
from admit.kb.ingest_types import IngestOptions, SourceJob
from admit.kb.parse import ParsedDocument, parse_document
from admit.kb.registry import SourceSettings
from admit.kb.store import ChunkRecord, Store
from admit.passages import PASSAGE_VECTORS_KEY, decode_vectors, encode_vectors, passages
from admit.types import Access, Chunk

__all__ = ["REMEMBERED_VECTORS", "EmbedQueue", "prepare_source", "records_from_chunks", "write_source"]

logger = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float32]


def bulk_embed(embedder: Embedder) -> Callable[[Sequence[str]], Any]:
    """The embedder's call for a bulk of texts: its ``embed_many`` where it has one (MiniLM on onnxruntime runs
    the batches side by side, :meth:`~admit.backends.embedders.minilm.MiniLMEmbedder.embed_many`), else ``embed``."""
    many = getattr(embedder, "embed_many", None)
    return many if callable(many) else embedder.embed


def _embed_input(title: str, text: str, ps: Sequence[str]) -> str:
    """The text embedded for a chunk's own vector: its first passage (``ps``: its passages), exactly what the setwise
    pruner embeds, so one encoding serves retrieval and pruning. A chunk of several passages is retrieved by its
    opening, as when its whole text was encoded (MiniLM read only its first 256 word pieces), and that passage's
    vector is one of those it stores anyway: it costs no encoding of its own."""
    if ps and ps[0]:
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
        if len(ps) > 1:  # the chunk's vector is its first passage's (_embed_input): encoded once, as a passage
            texts.extend(p or "-" for p in ps)
            slots.extend((i, k) for k in range(len(ps)))
        else:
            texts.append(_embed_input(c.title, c.text, ps))
            slots.append((i, -1))
    vecs: list[FloatArray] = []
    embed = bulk_embed(embedder)
    for start in range(0, len(texts), max(batch_size, 1)):
        vecs.extend(np.asarray(embed(texts[start : start + batch_size]), dtype=np.float32))
    chunk_vec: dict[int, FloatArray] = {}
    per_passage: dict[int, list[FloatArray]] = {}
    for (i, k), v in zip(slots, vecs, strict=True):
        if k < 0:
            chunk_vec[i] = v
        else:
            per_passage.setdefault(i, []).append(v)
            if k == 0:
                chunk_vec[i] = v
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
            ChunkRecord.from_chunk(c, embedding=chunk_vec[i], text_hash=text_key(c.text), ordinal=i, metadata=meta)
        )
    return records


def write_source(store: Store, embedder: Embedder, job: SourceJob, options: IngestOptions) -> dict[str, int]:
    """Parse, chunk, embed (what changed) and replace one planned source; return its chunk counts.

    Raises:
        ValueError: The file changed since it was planned, is no longer UTF-8, or could not be embedded or
            written (run the ingest again).
    """
    from admit.backends.tokenizers import resolve_tokenizer

    f = Path(job.path)
    raw = read_no_follow(f)  # never through a link swapped in since the walk
    if hashlib.sha256(raw).hexdigest()[:16] != job.content_hash:
        raise InputError("the file changed during the ingest run; run it again")
    text = page_text(raw, f.name, options.max_file_bytes)
    doc = parse_document(
        text, job.fmt, fallback_title=Path(document_name(f.name)).stem.replace("-", " ").replace("_", " ")
    )
    keys = ("chunks_added", "chunks_changed", "chunks_unchanged", "chunks_removed", "chunks_embedded", "chunks_written")
    counts = dict.fromkeys((*keys, "sources_added", "sources_updated"), 0)
    errors: list[tuple[str, str]] = []
    queue = EmbedQueue(store, embedder, options.batch_size, counts, errors, IngestProgress(0, enabled=False))
    tok = resolve_tokenizer(options.tokenizer)
    pieces = [
        p for p in chunk_document(doc, tokenizer=tok, max_tokens=options.max_tokens) if p.section_path not in job.drop
    ]
    pending = prepare_source(
        store,
        embedder,
        doc,
        f,
        job.settings,
        job.fmt,
        job.content_hash,
        job.ingest_key,
        tok,
        options.max_tokens,
        pieces=pieces,
        also_at=job.also_at,
        also_under=job.also_under,
    )
    queue.add(pending, added=job.new)
    queue.flush()  # the same embed-and-write path as a local run (one replace_source)
    if errors:
        raise InputError(errors[0][1])
    return {k: counts[k] for k in keys}


@dataclass(slots=True, kw_only=True)
class PendingSource:
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

    def chunks_to_embed(self) -> int:
        """Chunks of the source that need a vector computed (a new or changed chunk, or passages)."""
        return len({j for j, _, _ in self.texts()})

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


REMEMBERED_VECTORS = 20_000
"""Vectors an ingest run keeps by text (about 30 MB at 384 dimensions), so a text met again (a page's boilerplate
paragraph, a chunk repeated across files) is not encoded again."""


class EmbedQueue:
    """Collects chunked sources and embeds their texts in batches across sources, then writes each source.

    Texts wait until ``batch_size`` of them are queued (the chunks of one file or of many small ones), so a file
    of one chunk does not cost a forward pass of its own; each source is still replaced in one transaction once
    all its vectors are in. A flush encodes each distinct text once (and none the run encoded before, within
    :data:`REMEMBERED_VECTORS`), longest first, so the texts of one embedding call are of about one length and
    pad little.
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
        self.waiting: list[tuple[PendingSource, bool]] = []
        self.queued = 0
        self.remembered: dict[str, FloatArray] = {}
        """Text key -> vector of the texts this run encoded (the newest :data:`REMEMBERED_VECTORS`)."""
        self.texts_encoded = 0
        """Texts handed to the embedder so far."""
        self._embed = bulk_embed(embedder)

    def add(self, pending: PendingSource, *, added: bool) -> None:
        texts = pending.texts()
        self.bar.found(pending.chunks_to_embed())
        self.waiting.append((pending, added))
        self.queued += len(texts)
        if self.queued >= self.batch_size:
            self.flush()

    def _encode(self, items: Sequence[tuple[int, int, str, int]]) -> dict[str, FloatArray]:
        """The vector of every item's text by its key: remembered ones looked up, the rest encoded once each,
        longest first in calls of at most ``batch_size``; progress counts a chunk once its last text is in."""
        keys = [text_key(t) for _, _, t, _ in items]
        got: dict[str, FloatArray] = {}
        todo: dict[str, str] = {}
        for k, (_, _, text, _) in zip(keys, items, strict=True):
            if k in self.remembered:
                got[k] = self.remembered[k]
            elif k not in todo:
                todo[k] = text
        # a chunk (source, draft) is done when none of its texts is still to encode
        left: dict[tuple[int, int], set[str]] = {}
        for k, (w, j, _, _) in zip(keys, items, strict=True):
            left.setdefault((w, j), set())
            if k in todo:
                left[(w, j)].add(k)
        waiters: dict[str, list[tuple[int, int]]] = {}
        for chunk, ks in left.items():
            for k in ks:
                waiters.setdefault(k, []).append(chunk)
        ready = sum(1 for ks in left.values() if not ks)
        if ready:
            self.bar.done(ready)
        order = sorted(todo, key=lambda k: -len(todo[k]))
        for i in range(0, len(order), self.batch_size):
            part = order[i : i + self.batch_size]
            vecs = np.asarray(self._embed([todo[k] for k in part]), dtype=np.float32)
            self.texts_encoded += len(part)
            finished = 0
            for k, v in zip(part, vecs, strict=True):
                got[k] = v
                for chunk in waiters.get(k, ()):
                    left[chunk].discard(k)
                    finished += not left[chunk]
            self.bar.done(finished)
        for k in order:
            self.remembered.pop(k, None)
            self.remembered[k] = got[k]
        while len(self.remembered) > REMEMBERED_VECTORS:
            del self.remembered[next(iter(self.remembered))]
        return got

    def flush(self) -> None:
        if not self.waiting:
            return
        waiting, self.waiting, self.queued = self.waiting, [], 0
        items = [(w, j, text, slot) for w, (p, _) in enumerate(waiting) for j, text, slot in p.texts()]
        try:
            got = self._encode(items)
        except (OSError, ValueError) as exc:
            for p, _ in waiting:
                self.errors.append((str(p.f), f"embedding failed: {exc}"))
            logger.warning("ingest: embedding failed for %d file(s): %s", len(waiting), exc)
            return
        by_source: dict[int, list[tuple[int, int, FloatArray]]] = {}
        for w, j, text, slot in items:
            by_source.setdefault(w, []).append((j, slot, got[text_key(text)]))
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


def _draft(
    p: TextChunk,
    source_id: str,
    doc_title: str,
    old: Mapping[str, ChunkRecord],
    also_at: Mapping[str, Sequence[str]] | None,
    also_under: Mapping[str, Sequence[str]] | None = None,
) -> tuple[dict[str, Any], bool]:
    """One chunk's draft (its vector reused when its text and title are unchanged), and whether it is reused."""
    cid = f"{source_id}#{p.section_path}"
    heading_path = (doc_title, *p.headings)
    title = " › ".join(heading_path) if p.headings else doc_title
    under = list(also_under.get(p.section_path, ())) if also_under else []
    title = also_under_title(title, under)
    th = text_key(p.text)
    prev = old.get(cid)
    reuse = prev is not None and prev.text_hash == th and prev.title == title
    if prev is None:
        counts_key = "chunks_added"
    elif prev.text_hash != th:
        counts_key = "chunks_changed"
    else:
        counts_key = "chunks_unchanged"
    draft = {
        "id": cid,
        "text": p.text,
        "text_hash": th,
        "title": title,
        "heading_path": heading_path,
        "ordinal": p.ordinal,
        "embedding": prev.embedding if (reuse and prev is not None) else None,
        "counted": counts_key,
        "also_at": list(also_at.get(p.section_path, ())) if also_at else [],
        "also_under": under,
    }
    return draft, reuse


def _features_and_vectors(d: dict[str, Any], prev: ChunkRecord | None, embedder: Embedder) -> None:
    """What the pipeline computes on a chunk's first sight (token counts, injection flags, MinHash signature),
    computed once here and stored with the chunk (handed back on retrieval); a chunk longer than one passage also
    keeps one vector per passage (the pruner's units), so pruning a search never encodes a stored chunk again. An
    unchanged chunk keeps what it has."""
    unchanged = prev is not None and prev.text_hash == d["text_hash"] and prev.title == d["title"]
    stored = prev.metadata.get(FEATURES_KEY) if unchanged and prev is not None else None
    fresh = not features_current(stored)
    d["features"] = chunk_features(d["title"], d["text"]) if fresh else stored
    n_ps = len(d["passages"])
    kept = prev.metadata.get(PASSAGE_VECTORS_KEY) if unchanged and prev is not None and n_ps > 1 else None
    d["passage_vectors"] = kept if decode_vectors(kept, embedder.name, n_ps) is not None else None


def prepare_source(
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
    *,
    pieces: Sequence[TextChunk] | None = None,
    also_at: Mapping[str, Sequence[str]] | None = None,
    also_under: Mapping[str, Sequence[str]] | None = None,
) -> PendingSource:
    """Chunk a source and find what changed (the chunk and passage vectors to compute); nothing is written.

    ``pieces``: the source's chunks when the caller has them (the ingest's plan, less the copies it does not
    store); ``also_at``: section path -> the ids of the chunk's copies not stored (its ``also_at`` metadata);
    ``also_under``: section path -> the section titles a short chunk's copies were under (added to its title,
    :func:`admit.kb.copies.also_under_title`; its ``also_under`` metadata).
    """
    if pieces is None:
        pieces = chunk_document(doc, tokenizer=tok, max_tokens=max_tokens)
    old = {r.id: r for r in store.get_source_chunks(st.source_id, st.tenant)}
    updated = st.updated or datetime.fromtimestamp(f.stat().st_mtime, UTC)
    access = Access(tenant=st.tenant, groups=st.groups, label=st.label)
    language = st.language or doc.language
    drafts: list[dict[str, Any]] = []
    to_embed: list[int] = []
    for p in pieces:
        draft, reuse = _draft(p, st.source_id, doc.title, old, also_at, also_under)
        drafts.append(draft)
        if not reuse:
            to_embed.append(len(drafts) - 1)
    new_ids = {d["id"] for d in drafts}
    removed = sum(1 for i in old if i not in new_ids)
    for d in drafts:
        d["passages"] = passages(d["title"], d["text"])
    meta: dict[str, Any] = {"content_hash": content_hash, "ingest_key": ingest_key, "format": fmt, "removed": removed}
    if doc.site:  # a built documentation site's page: its generator, site name and version
        meta["site"] = dict(doc.site)
    for d in drafts:
        _features_and_vectors(d, old.get(d["id"]), embedder)
    multi = [j for j, d in enumerate(drafts) if len(d["passages"]) > 1 and d["passage_vectors"] is None]
    return PendingSource(
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
    store: Store, embedder: Embedder, pending: PendingSource, vectors: Sequence[tuple[int, int, FloatArray]]
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
                **({ALSO_AT_KEY: d["also_at"]} if d["also_at"] else {}),
                **({ALSO_UNDER_KEY: d["also_under"]} if d["also_under"] else {}),
                FEATURES_KEY: d["features"],
                **({PASSAGE_VECTORS_KEY: d["passage_vectors"]} if d["passage_vectors"] else {}),
            },
        )
        for d in drafts
    ]
    store.replace_source(st.source_id, st.tenant, records)
    return len(records)

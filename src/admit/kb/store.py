"""The knowledge-base store contract: records, filters, hits and the :class:`Store` protocol.

Every backend (embedded SQLite, Qdrant, PostgreSQL + pgvector) implements :class:`Store`. Authorization is part of
each backend's query (an SQL ``WHERE`` joined before ranking, or a Qdrant payload filter), never a filter applied
to results afterwards: a principal's top-k holds k chunks it may read whenever k exist. A chunk without an access
label (no tenant) never matches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import numpy.typing as npt

from admit import _linear
from admit._text import STOPWORDS, versions
from admit.backends.rerankers.fusion import RRF_K, rrf_fuse
from admit.errors import ConfigError
from admit.features import FEATURES_KEY
from admit.kb.acronyms import initials
from admit.kb.spelling import variants
from admit.passages import PASSAGE_VECTORS_KEY
from admit.question import Question, Release, read_question, release_text, releases_in
from admit.types import Access, Chunk, Principal

__all__ = [
    "OPEN_GROUP",
    "RRF_K",
    "ChunkRecord",
    "Hit",
    "HybridSearch",
    "ReadFilter",
    "SearchFilters",
    "SourceInfo",
    "Store",
    "StoreSpec",
    "acl_tokens",
    "fts_terms",
    "principal_tokens",
    "public_origin",
    "rrf_fuse",
    "visible",
]

OPEN_GROUP = "*"
"""ACL token stored for a chunk readable by every principal of its tenant (no groups)."""

FloatVector = npt.NDArray[np.float32]

_TERM = _linear.simple(r"[\w]+")


_CHUNK_FIELDS = ("text", "title", "version", "updated_at", "access", "authority", "language")
"""The :class:`~admit.types.Chunk` fields a :class:`ChunkRecord` carries as they are."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkRecord:
    """A chunk as stored in a knowledge base: the :class:`~admit.types.Chunk` fields plus what retrieval needs."""

    id: str
    """Stable chunk id ``<source_id>#<section-path>``."""
    source_id: str
    """The stored document (one file) the chunk belongs to."""
    text: str
    """The passage text."""
    embedding: FloatVector = field(compare=False, repr=False)
    """L2-normalised float32 vector of the passage (title and heading path included)."""
    text_hash: str
    """Hex SHA-1 of ``text`` (the :func:`admit.backends.embedders.text_key`); unchanged chunks keep it."""
    title: str = ""
    """Document title and section heading."""
    heading_path: tuple[str, ...] = ()
    """Headings from the document title down to the chunk's section."""
    document: str = ""
    """The logical document the chunk is a version of (``Chunk.source_id``); default: ``source_id``."""
    version: str | None = None
    """Document version from the registry or front matter."""
    updated_at: datetime | None = None
    """Modification time (UTC)."""
    access: Access | None = None
    """Who may read it; ``None`` is stored but never matches a query."""
    authority: float | None = None
    """Authority 0..1 from the source registry."""
    language: str | None = None
    """ISO language code."""
    origin: str = ""
    """Where the document was read from (absolute path or URL); used to notice removed files. It stays inside:
    a chunk handed out carries :func:`public_origin` instead."""
    ordinal: int = 0
    """Position of the chunk in its document."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free metadata (content hash, format, ...)."""

    @property
    def tenant(self) -> str:
        """The owning tenant, or ``""`` when the chunk has no access label."""
        return self.access.tenant if self.access else ""

    def to_chunk(self, *, score: float | None = None, extra: Mapping[str, Any] | None = None) -> Chunk:
        """Return the :class:`~admit.types.Chunk` handed to the pipeline (``source_id`` is the document)."""
        meta = {
            # stored features and passage vectors stay inside
            **{k: v for k, v in self.metadata.items() if k not in (FEATURES_KEY, PASSAGE_VECTORS_KEY)},
            "kb_source_id": self.source_id,
            "heading_path": list(self.heading_path),
            "ordinal": self.ordinal,
            "origin": public_origin(self.origin, self.source_id),
        }
        if extra:
            meta.update(extra)
        shared = {f: getattr(self, f) for f in _CHUNK_FIELDS}
        return Chunk(id=self.id, source_id=self.document or self.source_id, score=score, metadata=meta, **shared)

    @classmethod
    def from_chunk(
        cls, c: Chunk, *, embedding: FloatVector, text_hash: str, ordinal: int, metadata: Mapping[str, Any]
    ) -> ChunkRecord:
        """The record of a chunk handed to ingest whole: its title the heading path, its source the document, its
        ``metadata["origin"]`` where it was read from."""
        shared = {f: getattr(c, f) for f in _CHUNK_FIELDS}
        return cls(
            id=c.id,
            source_id=c.source_id,
            embedding=embedding,
            text_hash=text_hash,
            heading_path=(c.title,) if c.title else (),
            document=c.source_id,
            origin=str(c.metadata.get("origin", "")),
            ordinal=ordinal,
            metadata=metadata,
            **shared,
        )


def public_origin(origin: str, source_id: str) -> str:
    """What a chunk handed out says it was read from: never a path on the server.

    A web address stays (without any user name or password in it); a file's path becomes its path under the
    ingested folder when the source id is that path without its suffix (the default id: ``/srv/docs/ops/a.md``
    with id ``ops/a`` -> ``ops/a.md``), else the source id itself.

    Example:
        >>> public_origin("/srv/docs/ops/quota.md", "ops/quota")
        'ops/quota.md'
        >>> public_origin("/srv/docs/ops/quota.md", "runbook")
        'runbook'
        >>> public_origin("https://bot:pw@docs.example.com/a.html", "a")
        'https://docs.example.com/a.html'
    """
    url = urlsplit(origin)
    if url.scheme in ("http", "https") and url.hostname:
        host = url.hostname if ":" not in url.hostname else f"[{url.hostname}]"
        netloc = host + (f":{url.port}" if url.port else "")
        return urlunsplit((url.scheme, netloc, url.path, url.query, ""))
    parts = PurePosixPath(origin.replace("\\", "/")).parts
    want = PurePosixPath(source_id).parts
    if want and len(parts) >= len(want):
        tail = parts[len(parts) - len(want) :]
        if (*tail[:-1], PurePosixPath(tail[-1]).stem) == want or tail == want:
            return "/".join(tail)
    return source_id


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchFilters:
    """Filters applied inside the store's query, before any ranking (the principal's ACL always applies too)."""

    languages: tuple[str, ...] | None = None
    """Only chunks in one of these languages (``None``: any)."""
    updated_after: datetime | None = None
    """Only chunks modified at or after this time (``None``: any)."""
    groups: tuple[str, ...] | None = None
    """Only chunks labelled with at least one of these groups (narrows; never widens the principal's rights)."""
    source_ids: tuple[str, ...] | None = None
    """Only chunks of these stored sources."""

    def updated_after_ts(self) -> float | None:
        """``updated_after`` as a POSIX timestamp (naive datetimes are taken as UTC)."""
        if self.updated_after is None:
            return None
        dt = self.updated_after if self.updated_after.tzinfo else self.updated_after.replace(tzinfo=UTC)
        return dt.timestamp()

    def matches_nothing(self) -> bool:
        """Whether a filter given as an empty set (no group, no language, no source) rules out every chunk: the
        store is not asked then (:class:`HybridSearch`)."""
        return any(f is not None and not f for f in (self.groups, self.languages, self.source_ids))


@dataclass(frozen=True, slots=True)
class ReadFilter:
    """Who asks and the search filters as one predicate over stored records: the scope a store without a query
    language applies itself (``memory://``, a plug-in store over a plain key-value service, a post-filter).

    It is the same rule as the SQL stores' ``WHERE`` and Qdrant's payload filter: the record's tenant is the
    principal's, one of its ACL tokens is the principal's (:func:`acl_tokens`, :func:`principal_tokens`; a record
    without an access label never matches), and it passes each filter given (its groups, language, modification
    time, source).

    Example:
        >>> from admit.types import Access, Principal
        >>> r = ChunkRecord(id="a#1", source_id="a", text="x", embedding=np.zeros(2, np.float32), text_hash="",
        ...                 access=Access(tenant="acme", groups=("support",)))
        >>> ReadFilter.of(Principal(tenant="acme", groups=("support",))).matches(r)
        True
        >>> visible(r, Principal(tenant="acme"))
        False
    """

    tenant: str
    """The principal's tenant."""
    tokens: frozenset[str]
    """The ACL tokens the principal matches."""
    filters: SearchFilters
    """The search filters."""
    after: float | None
    """``filters.updated_after`` as a timestamp."""

    @classmethod
    def of(cls, principal: Principal, filters: SearchFilters | None = None) -> ReadFilter:
        """The filter of ``principal`` reading under ``filters`` (default: none)."""
        f = filters or SearchFilters()
        return cls(principal.tenant, frozenset(principal_tokens(principal)), f, f.updated_after_ts())

    def matches(self, r: ChunkRecord) -> bool:
        """Whether the principal may read ``r`` and it passes the filters."""
        f = self.filters
        if not self.tenant or r.access is None or r.tenant != self.tenant:
            return False
        if self.tokens.isdisjoint(acl_tokens(r.access)):
            return False
        if f.groups is not None and set(f.groups).isdisjoint(r.access.groups):
            return False
        if f.languages is not None and r.language not in f.languages:
            return False
        if self.after is not None and (r.updated_at is None or _timestamp(r.updated_at) < self.after):
            return False
        return f.source_ids is None or r.source_id in f.source_ids


def visible(record: ChunkRecord, principal: Principal, filters: SearchFilters | None = None) -> bool:
    """Whether ``principal`` may read ``record`` and it passes ``filters``: :meth:`ReadFilter.matches` once (build
    one :class:`ReadFilter` to test many records)."""
    return ReadFilter.of(principal, filters).matches(record)


def _timestamp(dt: datetime) -> float:
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    """One retrieved chunk with its ranks in the lexical and vector lists and the fused score."""

    record: ChunkRecord
    """The stored chunk."""
    fused: float
    """Reciprocal-rank-fusion score (higher is better)."""
    bm25_rank: int | None = None
    """0-based rank in the lexical (BM25) list, ``None`` if the chunk was not in it."""
    vector_rank: int | None = None
    """0-based rank in the vector list, ``None`` if the chunk was not in it."""
    bm25: float | None = None
    """The backend's lexical score (higher is better)."""
    similarity: float | None = None
    """Cosine similarity to the question."""
    version: str | None = None
    """The release the question names that this chunk was added for (:func:`with_version_hits`): its heading or
    text holds that exact version; ``None`` for a chunk of the ranked lists."""

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (no text)."""
        d: dict[str, Any] = {
            "id": self.record.id,
            "fused": round(self.fused, 6),
            "bm25_rank": self.bm25_rank,
            "vector_rank": self.vector_rank,
            "bm25": None if self.bm25 is None or not math.isfinite(self.bm25) else round(self.bm25, 6),
            "similarity": None if self.similarity is None else round(self.similarity, 6),
        }
        if self.version is not None:
            d["version"] = self.version
        return d


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceInfo:
    """A stored document."""

    source_id: str
    """The stored source id."""
    tenant: str
    """Its tenant."""
    origin: str
    """Where it was read from."""
    content_hash: str
    """Hash of the document content at ingest."""
    ingest_key: str
    """Digest of content, settings, chunker and embedder at ingest (equal: nothing to do)."""
    chunks: int
    """How many chunks it has."""


@runtime_checkable
class Store(Protocol):
    """A knowledge-base store: chunks with vectors, full text and access labels."""

    dim: int
    """Embedding dimension."""

    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        """Insert or replace records by id."""
        ...

    def replace_source(self, source_id: str, tenant: str, records: Sequence[ChunkRecord]) -> None:
        """Replace every chunk of a source with ``records``; readers see the old or the new version, never a mix
        (one transaction where the backend has them)."""
        ...

    def delete_source(self, source_id: str, tenant: str) -> int:
        """Delete every chunk of a source; return how many went."""
        ...

    def search(
        self,
        query_text: str,
        query_vec: FloatVector,
        *,
        principal: Principal,
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[Hit]:
        """Hybrid search (lexical + vector, fused by reciprocal rank) over the chunks ``principal`` may read."""
        ...

    release_query: bool
    """Whether :meth:`release_records` searches (the release-candidate query). ``False``: it returns nothing, and
    the knowledge base records the feature as absent (``retrieval.absent`` in the trace) when a question names a
    release. Built-ins: SQLite, memory and pgvector search; Qdrant does not."""

    def release_records(
        self, releases: Sequence[str], *, principal: Principal, n: int, filters: SearchFilters | None = None
    ) -> list[ChunkRecord]:
        """The release-candidate query: at most ``n`` chunks ``principal`` may read (under ``filters``, applied
        inside the query as for :meth:`search`) whose title or text may name one of ``releases`` (dotted,
        :func:`admit.question.release_text`: ``"1.2.4"``, ``"1.2.4rc1"``, ``"4"`` for ``v4``), best first. The
        caller checks each chunk by :mod:`admit.question`'s rule, so a store may return more than name one (a
        substring or phrase match), never a chunk outside the principal's scope.

        The knowledge base adds the sections of the release a question names to the fused candidates
        (:func:`with_version_hits`): the fused lists rank "What changed in 1.2.4?" near any changelog entry.
        """
        ...

    def get_source_chunks(self, source_id: str, tenant: str) -> list[ChunkRecord]:
        """Return a source's chunks in document order."""
        ...

    def list_sources(self, tenant: str | None = None) -> list[SourceInfo]:
        """Return the stored sources (of one tenant, or all)."""
        ...

    def count(self, tenant: str | None = None) -> int:
        """Number of chunks (of one tenant, or all)."""
        ...

    def get_meta(self, key: str) -> str | None:
        """Read a store-level setting (embedder name, ...)."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Write a store-level setting."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreSpec:
    """One store's facts, declared beside it (its module's ``SPEC``) and read by the store catalogue
    (:mod:`admit.kb.stores`), as a strategy's :class:`~admit.prune.spec.StrategySpec` is by the strategy catalogue.

    Example:
        >>> from admit.kb.memory_store import MemoryStore
        >>> spec = StoreSpec(schemes=("mine",), open=lambda url, *, dim: MemoryStore(dim=dim))
        >>> spec.open("mine://x", dim=4).dim
        4
    """

    schemes: tuple[str, ...]
    """The URL schemes it opens (``qdrant``, ``qdrant+local`` ...), lower case."""
    open: Callable[..., Store]
    """``open(url, *, dim) -> Store``: opens (or creates) the store at ``url``."""
    stored_embedder: Callable[[str], str | None] | None = None
    """``stored_embedder(url)``: the embedder spec the knowledge base at ``url`` was built with, read without
    creating anything (``None``: the store cannot tell; the caller names the embedder or takes the default)."""
    summary: str = ""
    """One line for help texts."""

    def __post_init__(self) -> None:
        """Check the schemes and the callables."""
        if not self.schemes or any(not isinstance(x, str) or not x or x != x.lower() for x in self.schemes):
            raise ConfigError(f"a store's schemes must be non-empty lower-case names, got {self.schemes!r}.")
        if not callable(self.open):
            raise ConfigError(f"store {self.schemes[0]!r}: open must be callable, got {type(self.open).__name__}.")
        if self.stored_embedder is not None and not callable(self.stored_embedder):
            raise ConfigError(f"store {self.schemes[0]!r}: stored_embedder must be callable or None.")


def group_token(group: str) -> str:
    """The ACL token of a group: the name itself, except that a name starting with ``*`` or ``\\`` is escaped
    with a leading ``\\``, so a group literally named ``*`` is a group, never :data:`OPEN_GROUP`."""
    return "\\" + group if group.startswith(("*", "\\")) else group


def acl_tokens(access: Access | None) -> list[str]:
    """The ACL tokens stored with a chunk: its groups, or :data:`OPEN_GROUP` when the whole tenant may read it."""
    if access is None or not access.tenant:
        return []
    return [group_token(g) for g in access.groups] if access.groups else [OPEN_GROUP]


def principal_tokens(principal: Principal) -> list[str]:
    """The ACL tokens a principal matches: :data:`OPEN_GROUP` and its groups (a group named ``*`` as itself)."""
    return [OPEN_GROUP, *sorted({group_token(g) for g in principal.groups})]


def record_vector(r: ChunkRecord, dim: int) -> FloatVector:
    """A record's embedding as a flat float32 vector, checked against the store's dimension.

    Raises:
        StoreError: The embedding has another dimension.
    """
    from admit.errors import StoreError

    vec = np.asarray(r.embedding, dtype=np.float32).reshape(-1)
    if vec.shape[0] != dim:
        raise StoreError(f"Chunk {r.id!r} has a {vec.shape[0]}-d embedding; this store holds {dim}-d.")
    return vec


def query_vector(query_vec: FloatVector, dim: int, k: int) -> tuple[npt.NDArray[np.float32], int]:
    """Check the query vector's size and return it flat, with the depth each ranked list goes to (``n``).

    Every backend ranks lexically and by vector to ``n = min(2k, k + 50)`` before fusing the two lists.
    """
    from admit.errors import StoreError

    qv = np.asarray(query_vec, dtype=np.float32).reshape(-1)
    if qv.shape[0] != dim:
        raise StoreError(f"Query vector is {qv.shape[0]}-d; this store holds {dim}-d.")
    return qv, min(2 * k, k + 50)


def fts_terms(text: str, *, limit: int = 32) -> list[str]:
    """Lower-cased query terms for the lexical search: word characters (``_`` kept), stop words dropped, and each
    dotted version (``3.2.0``) whole, which a store searches as a phrase; after the first ``limit`` terms, the
    other spellings of each (:func:`admit.kb.spelling.variants`: ``licence`` adds ``license``, ``colour``
    ``color``), so a question spelt one way finds the chunk spelt the other way in every store, and the initials of
    each name the question writes out in full (:func:`admit.kb.acronyms.initials`: "Network Time Security" adds
    ``nts``), so it finds the docs that use the acronym."""
    # a version is searched as one phrase too, not only as its parts, so the chunk titled "3.2.0" outranks one
    # that merely holds the digits 3, 2 and 0 somewhere
    seen: dict[str, None] = dict.fromkeys(versions(text))
    for t in _TERM.findall(text.lower()):
        if t not in STOPWORDS and t not in seen:
            seen[t] = None
    terms = list(seen)
    if not terms:  # a question made only of stop words still searches
        terms = list(dict.fromkeys(_TERM.findall(text.lower())))
    terms = terms[:limit]
    return list(dict.fromkeys([*terms, *(v for t in terms for v in variants(t)), *initials(text)]))


#: At most this many chunks naming a release the question names are added to a search's candidates
#: (:func:`with_version_hits`), in place of the fused list's last ones.
VERSION_HITS = 4
#: At most this many of the releases a question names are searched for (:meth:`Store.release_records`): a question
#: naming thousands asks the store a bounded query.
RELEASE_QUERY_LIMIT = 32
RELEASE_FEATURE = "release_records"
"""The name the trace gives the release-candidate query when a store lacks it (``retrieval.absent``)."""


def asked_version_strings(question: str | Question) -> list[str]:
    """The releases a question names, written dotted (``"What changed in 1.2.4?"`` -> ``["1.2.4"]``), in order:
    :mod:`admit.question`'s one rule (``v4`` -> ``"4"``, ``1.2.4rc1`` whole)."""
    return list(read_question(question).release_strings)


def version_heading(record: ChunkRecord, question: Question) -> tuple[bool, Release] | None:
    """Whether a chunk names a release ``question`` asks about in its headings (title, heading path or its first
    line: ``(True, release)``), only in its text (``(False, release)``), or not at all (``None``); ``release`` is
    the asked one it names. Matching is :meth:`admit.question.Question.names_release`'s (``3.2`` names ``3.2.0``;
    ``1.2.4rc1`` is not ``1.2.4``)."""
    lines = [ln.strip() for ln in record.text.splitlines() if ln.strip()]
    first = lines[:1] if lines and len(lines[0]) < 80 and not lines[0].endswith(".") else []  # a heading line
    head = "\n".join([record.title, *record.heading_path, *first])
    asked = question.asked_for(releases_in(head))
    if asked is not None:
        return True, asked
    asked = question.asked_for(releases_in(record.text))
    return None if asked is None else (False, asked)


def with_version_hits(hits: Sequence[Hit], found: Sequence[tuple[ChunkRecord, str]], k: int) -> list[Hit]:
    """The fused hits with the chunks found for the question's releases among them.

    ``found``: chunks holding an asked release exactly, best first (a heading naming it before a text naming it).
    Those the fused list lacks (at most :data:`VERSION_HITS`) take the places of its last ones, so the list stays
    at most ``k`` long and the release's own section is among the candidates even when every page of the site
    names some release (BM25 and the vectors rank "What changed in 1.2.4?" near any changelog entry)."""
    have = {h.record.id for h in hits}
    extra: list[tuple[ChunkRecord, str]] = []
    for rec, v in found:
        if rec.id not in have and len(extra) < min(VERSION_HITS, k):
            have.add(rec.id)
            extra.append((rec, v))
    if not extra:
        return list(hits)
    kept = list(hits[: max(0, k - len(extra))])
    floor = min((h.fused for h in kept), default=1.0)
    return kept + [Hit(record=r, fused=floor * 0.999 ** (i + 1), version=v) for i, (r, v) in enumerate(extra)]


def rank_version_records(records: Sequence[ChunkRecord], question: Question) -> list[tuple[ChunkRecord, str]]:
    """Of ``records`` (in the store's order), those naming a release ``question`` asks about in a heading (the
    release's own sections), with that release written dotted; those naming it in their text only where none does.
    Each record is read once, whatever the number of releases asked."""
    heads: list[tuple[ChunkRecord, str]] = []
    texts: list[tuple[ChunkRecord, str]] = []
    seen: set[str] = set()
    for r in records:
        if r.id in seen:
            continue
        seen.add(r.id)
        where = version_heading(r, question)
        if where is None:
            continue
        (heads if where[0] else texts).append((r, release_text(where[1])))
    return heads or texts  # a text naming the release only where no heading does


class HybridSearch:
    """The search skeleton the stores share: no tenant, ``k <= 0`` or a filter that matches nothing
    (:meth:`SearchFilters.matches_nothing`), nothing; authorization and filters become the store's scope
    (``None``: nothing can match); then both ranked lists, fused by reciprocal rank.

    A store gives :meth:`_scope` (its filter: SQL, a Qdrant filter, or :class:`ReadFilter` for a store that
    filters records itself) and :meth:`_ranked` (the two queries); one that answers the release-candidate query
    (:meth:`release_records`) gives :meth:`_version_records` and sets :attr:`release_query`.
    """

    dim: int
    release_query: bool = False
    """Whether :meth:`release_records` searches (:attr:`Store.release_query`); ``False`` here."""

    def search(
        self,
        query_text: str,
        query_vec: FloatVector,
        *,
        principal: Principal,
        k: int,
        filters: SearchFilters | None = None,
    ) -> list[Hit]:
        """Hybrid search (lexical + vector, fused by reciprocal rank) over the chunks ``principal`` may read."""
        filters = filters or SearchFilters()
        if k <= 0 or not principal.tenant or filters.matches_nothing():
            return []
        scope = self._scope(principal, filters)
        if scope is None:
            return []
        qv, n = query_vector(query_vec, self.dim, k)
        return self._ranked(scope, principal, fts_terms(query_text), qv, n, k)

    def release_records(
        self, releases: Sequence[str], *, principal: Principal, n: int, filters: SearchFilters | None = None
    ) -> list[ChunkRecord]:
        """The release-candidate query (:meth:`Store.release_records`) over the principal's scope: nothing without
        a tenant, releases or room, or under a filter that matches nothing; else :meth:`_version_records`."""
        filters = filters or SearchFilters()
        asked = [v for v in releases if v][:RELEASE_QUERY_LIMIT]
        if not self.release_query or n <= 0 or not asked or not principal.tenant or filters.matches_nothing():
            return []
        scope = self._scope(principal, filters)
        if scope is None:
            return []
        return self._version_records(scope, principal, asked, n)

    def _scope(self, principal: Principal, filters: SearchFilters) -> Any | None:
        raise NotImplementedError

    def _version_records(self, scope: Any, principal: Principal, asked: list[str], n: int) -> list[ChunkRecord]:
        """Readable chunks that may name one of the ``asked`` releases (at most ``n``; the caller checks each by
        the one rule). A store without it (the default) adds nothing."""
        return []

    def _ranked(self, scope: Any, principal: Principal, terms: list[str], qv: FloatVector, n: int, k: int) -> list[Hit]:
        raise NotImplementedError

"""Qdrant store: dense cosine vectors plus a BM25-style sparse vector, fused by rank.

Authorization and filters are a Qdrant payload filter (``tenant``, ``acl`` tokens, language, ``updated_at``,
groups, source) given to both searches, so Qdrant ranks only the points the principal may read.

The lexical list's IDF is computed over that same scope, never over the collection: each point carries its hashed
terms (the ``lex`` payload), the query counts the readable points and those holding each query term, and sends
each term's IDF as the query vector's weight (the sparse vector has no Qdrant modifier, whose IDF would count
every tenant's points). Another tenant's points therefore never move a score or the order of results. A
collection made with Qdrant's IDF modifier (older versions) is converted when opened. Works against a
Qdrant server (``QdrantStore(url=...)``) or the official client's embedded local mode (``path=`` / ``":memory:"``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import threading
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, urlparse

from admit import _linear
from admit.errors import ConfigError, MissingExtraError, StoreError
from admit.kb import store as _s
from admit.kb._rows import record_from_payload, record_payload
from admit.kb.store import ChunkRecord, FloatVector, Hit, HybridSearch, SearchFilters, SourceInfo, StoreSpec
from admit.types import Principal

__all__ = ["SPEC", "QdrantStore", "from_url", "sparse_terms"]

logger = logging.getLogger(__name__)

_WORD = _linear.simple(r"\w+")
_NS = uuid.UUID("5b0f3c1e-8f7e-4f0e-9a52-6d1d3c1a0a11")
_K1 = 1.2
_TIE_SLACK = 16
"""How far past a ranked list's depth a query asks, to order equal scores at the cut by chunk id."""
_TIE_MAX = 10_000
"""At most this many points tied at the cut are read to order them by id (past it, Qdrant's order stands)."""


def _term_index(term: str) -> int:
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=4).digest(), "little")


def _idf(n: int, df: int) -> float:
    """BM25's IDF of a term ``df`` of ``n`` points hold (Qdrant's formula, over the caller's scope)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def sparse_terms(text: str) -> tuple[list[int], list[float]]:
    """A BM25-style document vector: hashed terms with saturated term frequency (Qdrant adds the IDF)."""
    tf = Counter(_WORD.findall(text.lower()))
    idx: dict[int, float] = {}
    for t, n in tf.items():
        i = _term_index(t)
        idx[i] = idx.get(i, 0.0) + n * (_K1 + 1) / (n + _K1)
    return list(idx), [float(v) for v in idx.values()]


def _lex_terms(text: str) -> list[int]:
    """The hashed terms of a text (the ``lex`` payload: which points hold a term, for the scope's IDF)."""
    return sorted(sparse_terms(text)[0])


def _point_id(chunk_id: str, tenant: str = "") -> str:
    return str(uuid.uuid5(_NS, f"{tenant}\0{chunk_id}"))


class QdrantStore(HybridSearch):
    """A :class:`~admit.kb.store.Store` on Qdrant.

    Args:
        url: A Qdrant server URL (``http://127.0.0.1:6333``).
        path: Local-mode storage folder, or ``":memory:"`` (the official client's embedded implementation).
        collection: Collection name (a ``<collection>_meta`` collection holds settings).
        dim: Embedding dimension.
        api_key: Server API key, if any.
    """

    release_query = False
    """It does not answer the release-candidate query (:meth:`~admit.kb.store.Store.release_records` returns
    nothing): a payload substring match needs a full-text index this store does not build. The knowledge base
    records ``release_records`` under ``retrieval.absent`` in the trace when a question names a release."""

    def __init__(
        self,
        *,
        dim: int,
        url: str | None = None,
        path: str | None = None,
        collection: str = "admit_chunks",
        api_key: str | None = None,
    ) -> None:
        try:
            from qdrant_client import QdrantClient, models
        except ImportError as exc:
            raise MissingExtraError("qdrant-client", "qdrant") from exc
        if (url is None) == (path is None):
            raise ConfigError("QdrantStore needs exactly one of url= (a server) or path= (local mode).")
        self._m = models
        self.dim = int(dim)
        self.collection = collection
        self._meta = f"{collection}_meta"
        self._lock = threading.RLock()
        self.local = path is not None
        """Whether this is the client's embedded local mode (no server)."""
        try:
            if path is not None:
                self.client = QdrantClient(location=":memory:") if path == ":memory:" else QdrantClient(path=path)
            else:
                self.client = QdrantClient(url=url, api_key=api_key, timeout=30)
            self._ensure()
        except (ConfigError, StoreError):
            raise
        except Exception as exc:
            raise StoreError(f"Cannot open Qdrant collection {collection!r} at {url or path}: {exc}") from exc

    def _ensure(self) -> None:
        m = self._m
        with self._lock:
            if not self.client.collection_exists(self.collection):
                self.client.create_collection(
                    self.collection,
                    vectors_config={"dense": m.VectorParams(size=self.dim, distance=m.Distance.COSINE)},
                    sparse_vectors_config={"lexical": m.SparseVectorParams()},
                )
                for key, schema in (
                    ("tenant", m.PayloadSchemaType.KEYWORD),
                    ("acl", m.PayloadSchemaType.KEYWORD),
                    ("source_id", m.PayloadSchemaType.KEYWORD),
                    ("language", m.PayloadSchemaType.KEYWORD),
                    ("groups", m.PayloadSchemaType.KEYWORD),
                    ("updated_at", m.PayloadSchemaType.FLOAT),
                    ("lex", m.PayloadSchemaType.INTEGER),
                ):
                    try:
                        self.client.create_payload_index(self.collection, key, field_schema=schema)
                    except Exception:  # local mode ignores payload indexes
                        logger.debug("payload index %s not created", key)
            else:
                info = self.client.get_collection(self.collection)
                vecs = info.config.params.vectors
                size = vecs["dense"].size if isinstance(vecs, dict) and "dense" in vecs else None
                if size is not None and size != self.dim:
                    raise ConfigError(
                        f"Qdrant collection {self.collection!r} holds {size}-d vectors, not {self.dim}-d; "
                        "use the embedder it was built with or another collection."
                    )
                sparse = info.config.params.sparse_vectors or {}
                if "lexical" in sparse and sparse["lexical"].modifier == m.Modifier.IDF:
                    self._drop_collection_idf()
            if not self.client.collection_exists(self._meta):
                self.client.create_collection(
                    self._meta, vectors_config=m.VectorParams(size=1, distance=m.Distance.DOT)
                )

    def _drop_collection_idf(self) -> None:
        """Convert a collection made with Qdrant's IDF modifier (collection-wide statistics): give every point
        its ``lex`` terms, then drop the modifier (a search meanwhile still sees the old weights)."""
        m = self._m
        offset = None
        while True:
            pts, offset = self.client.scroll(self.collection, limit=256, offset=offset, with_payload=True)
            for p in pts:
                pl = p.payload or {}
                lex = _lex_terms(" ".join([pl.get("title") or "", pl.get("text") or ""]))
                self.client.set_payload(self.collection, {"lex": lex}, points=[p.id], wait=True)
            if offset is None:
                break
        self.client.update_collection(
            self.collection, sparse_vectors_config={"lexical": m.SparseVectorParams(modifier=m.Modifier.NONE)}
        )
        logger.info("Qdrant collection %s: lexical IDF now computed per caller scope", self.collection)

    # -- meta ----------------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """Read a setting."""
        with self._lock:
            pts = self.client.retrieve(self._meta, ids=[_point_id("meta:" + key)], with_payload=True)
        return str(pts[0].payload["value"]) if pts and pts[0].payload else None

    def set_meta(self, key: str, value: str) -> None:
        """Write a setting."""
        with self._lock:
            self.client.upsert(
                self._meta,
                [self._m.PointStruct(id=_point_id("meta:" + key), vector=[1.0], payload={"key": key, "value": value})],
            )

    # -- writes --------------------------------------------------------------------------------------------
    def _point(self, r: ChunkRecord) -> Any:
        vec = _s.record_vector(r, self.dim)
        idx, vals = sparse_terms(" ".join([r.title, r.text]))
        payload = record_payload(r)
        payload["lex"] = sorted(idx)  # the same terms as the sparse vector
        payload["acl"] = _s.acl_tokens(r.access)
        payload["tenant"] = r.access.tenant if r.access and r.access.tenant else None
        return self._m.PointStruct(
            id=_point_id(r.id, r.tenant),
            vector={"dense": vec.tolist(), "lexical": self._m.SparseVector(indices=idx, values=vals)},
            payload=payload,
        )

    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        """Insert or replace records by id."""
        if not records:
            return
        pts = [self._point(r) for r in records]
        try:
            with self._lock:
                for i in range(0, len(pts), 256):
                    self.client.upsert(self.collection, pts[i : i + 256], wait=True)
        except Exception as exc:
            raise StoreError(f"Qdrant upsert failed: {exc}") from exc

    def _source_filter(self, source_id: str, tenant: str) -> Any:
        m = self._m
        conds = [m.FieldCondition(key="source_id", match=m.MatchValue(value=source_id))]
        if tenant:
            conds.append(m.FieldCondition(key="tenant", match=m.MatchValue(value=tenant)))
        else:
            conds.append(m.IsNullCondition(is_null=m.PayloadField(key="tenant")))
        return m.Filter(must=conds)

    def replace_source(self, source_id: str, tenant: str, records: Sequence[ChunkRecord]) -> None:
        """Write the new version, then delete the old version's other points (Qdrant has no transactions: a
        reader may briefly see the new chunks beside old ones that are about to go, never neither)."""
        m = self._m
        with self._lock:
            self.upsert(records)
            keep = [_point_id(r.id, r.tenant) for r in records]
            flt = self._source_filter(source_id, tenant)
            if keep:
                flt = m.Filter(must=flt.must, must_not=[m.HasIdCondition(has_id=keep)])
            try:
                self.client.delete(self.collection, points_selector=m.FilterSelector(filter=flt), wait=True)
            except Exception as exc:
                raise StoreError(f"Qdrant delete failed: {exc}") from exc

    def delete_source(self, source_id: str, tenant: str) -> int:
        """Delete a source's chunks; return how many."""
        m = self._m
        flt = self._source_filter(source_id, tenant)
        with self._lock:
            n = self.client.count(self.collection, count_filter=flt, exact=True).count
            self.client.delete(self.collection, points_selector=m.FilterSelector(filter=flt), wait=True)
        return int(n)

    # -- reads ---------------------------------------------------------------------------------------------
    def _scroll(self, flt: Any, *, vectors: bool) -> list[Any]:
        out: list[Any] = []
        offset = None
        with self._lock:
            while True:
                pts, offset = self.client.scroll(
                    self.collection,
                    scroll_filter=flt,
                    limit=512,
                    offset=offset,
                    with_payload=True,
                    with_vectors=["dense"] if vectors else False,
                )
                out.extend(pts)
                if offset is None:
                    return out

    @staticmethod
    def _rec(p: Any) -> ChunkRecord:
        vec = p.vector["dense"] if isinstance(p.vector, dict) else p.vector
        return record_from_payload(p.payload, vec)

    def get_source_chunks(self, source_id: str, tenant: str) -> list[ChunkRecord]:
        """A source's chunks in document order."""
        recs = [self._rec(p) for p in self._scroll(self._source_filter(source_id, tenant), vectors=True)]
        return sorted(recs, key=lambda r: (r.ordinal, r.id))

    def list_sources(self, tenant: str | None = None) -> list[SourceInfo]:
        """Stored sources."""
        m = self._m
        flt = None
        if tenant is not None:
            flt = m.Filter(must=[m.FieldCondition(key="tenant", match=m.MatchValue(value=tenant))])
        agg: dict[tuple[str, str], list[Any]] = {}
        for p in self._scroll(flt, vectors=False):
            pl = p.payload
            key = (pl["source_id"], pl.get("tenant") or "")
            meta = record_from_payload(pl, [0.0]).metadata
            if key not in agg:
                agg[key] = [pl.get("origin") or "", meta.get("content_hash", ""), meta.get("ingest_key", ""), 0]
            agg[key][3] += 1
        return [
            SourceInfo(source_id=s, tenant=t, origin=v[0], content_hash=v[1], ingest_key=v[2], chunks=v[3])
            for (s, t), v in sorted(agg.items())
        ]

    def count(self, tenant: str | None = None) -> int:
        """Number of chunks."""
        m = self._m
        flt = None
        if tenant is not None:
            flt = m.Filter(must=[m.FieldCondition(key="tenant", match=m.MatchValue(value=tenant))])
        with self._lock:
            return int(self.client.count(self.collection, count_filter=flt, exact=True).count)

    def _scope(self, principal: Principal, filters: SearchFilters) -> Any | None:
        m = self._m
        must: list[Any] = [
            m.FieldCondition(key="tenant", match=m.MatchValue(value=principal.tenant)),
            m.FieldCondition(key="acl", match=m.MatchAny(any=_s.principal_tokens(principal))),
        ]
        if filters.groups is not None:
            must.append(m.FieldCondition(key="acl", match=m.MatchAny(any=list(filters.groups))))
        if filters.languages is not None:
            must.append(m.FieldCondition(key="language", match=m.MatchAny(any=list(filters.languages))))
        ts = filters.updated_after_ts()
        if ts is not None:
            must.append(m.FieldCondition(key="updated_at", range=m.Range(gte=ts)))
        if filters.source_ids is not None:
            must.append(m.FieldCondition(key="source_id", match=m.MatchAny(any=list(filters.source_ids))))
        return m.Filter(must=must)

    def _scope_idf(self, scope: Any, terms: list[str]) -> dict[int, float]:
        """Each query term's IDF over the points of ``scope`` (the caller's readable, filtered points), by term
        index; a term no such point holds is left out. Counted exactly, so only the caller's points count.

        On a server each count is one indexed ``count`` call (the scope's, then one per term); in local mode,
        which filters by reading every point, one pass over the scope's ``lex`` payloads counts them all.
        """
        m = self._m
        want = sorted({_term_index(t) for t in terms})
        if self.local:
            n = 0
            df = dict.fromkeys(want, 0)
            offset = None
            while True:
                pts, offset = self.client.scroll(
                    self.collection, scroll_filter=scope, limit=10_000, offset=offset, with_payload=["lex"]
                )
                for p in pts:
                    n += 1
                    for i in (p.payload or {}).get("lex") or ():
                        if i in df:
                            df[i] += 1
                if offset is None:
                    break
        else:
            n = int(self.client.count(self.collection, count_filter=scope, exact=True).count)
            df = {}
            for i in want if n else ():
                holds = m.Filter(must=[*scope.must, m.FieldCondition(key="lex", match=m.MatchValue(value=i))])
                df[i] = int(self.client.count(self.collection, count_filter=holds, exact=True).count)
        return {i: _idf(n, d) for i, d in df.items() if d}

    def _ranked(self, scope: Any, principal: Principal, terms: list[str], qv: FloatVector, n: int, k: int) -> list[Hit]:
        """Both Qdrant queries, with the payload filter (tenant, ACL, filters) of ``scope``."""
        recs: dict[str, ChunkRecord] = {}

        def query(vector: Any, using: str) -> list[tuple[str, float]]:
            # Qdrant orders equal scores by where the points sit in its storage, which other tenants' points
            # move: ask past the depth, and for the whole tie at the cut when it runs on, then order by id
            def points(limit: int, at_least: float | None = None) -> list[Any]:
                return list(
                    self.client.query_points(
                        self.collection,
                        query=vector,
                        using=using,
                        query_filter=scope,
                        limit=limit,
                        score_threshold=at_least,
                        with_payload=True,
                        with_vectors=["dense"],
                    ).points
                )

            got = points(2 * n + _TIE_SLACK)
            if len(got) > n and float(got[-1].score) == float(got[n - 1].score):
                got = points(_TIE_MAX, at_least=float(got[n - 1].score))
            got.sort(key=lambda p: (-float(p.score), str((p.payload or {}).get("id", ""))))
            ranked = []
            for p in got[:n]:
                r = self._rec(p)
                recs[r.id] = r
                ranked.append((r.id, float(p.score)))
            return ranked

        try:
            with self._lock:
                lexical = []
                weights = self._scope_idf(scope, terms) if terms else {}
                if weights:
                    idx = sorted(weights)
                    lexical = query(self._m.SparseVector(indices=idx, values=[weights[i] for i in idx]), "lexical")
                vector = query(qv.tolist(), "dense")
        except Exception as exc:
            raise StoreError(f"Qdrant search failed: {exc}") from exc
        fused = _s.rrf_fuse(lexical, vector, k=k)
        return [
            Hit(
                record=recs[cid],
                fused=score,
                bm25_rank=lr,
                vector_rank=vr,
                bm25=ls,
                similarity=None if sim is None or not math.isfinite(sim) else sim,
            )
            for cid, score, lr, vr, ls, sim in fused
        ]

    def close(self) -> None:
        """Close the client."""
        with self._lock:
            try:
                self.client.close()
            except Exception:  # closing twice, or a server already gone
                logger.debug("qdrant close failed", exc_info=True)


def from_url(url: str, *, dim: int) -> QdrantStore:
    """``qdrant://host:6333/collection`` (``qdrant+https://`` over TLS, ``?api_key=``), or the client's embedded
    local mode: ``qdrant+local:///dir?collection=c``, ``qdrant+local://:memory:``."""
    u = urlparse(url)
    q = {k: v[-1] for k, v in parse_qs(u.query).items()}
    if u.scheme == "qdrant+local":
        loc = ":memory:" if url.startswith("qdrant+local://:memory:") else (u.path or "")
        return QdrantStore(path=loc, collection=q.get("collection", "admit_chunks"), dim=dim)
    from admit.kb.urls import qdrant_target

    server, collection, api_key = qdrant_target(url)  # parsed once, rebuilt losslessly (IPv6, no userinfo)
    return QdrantStore(url=server, collection=collection, dim=dim, api_key=api_key)


def stored_embedder(url: str) -> str | None:
    """The ``embedder_spec`` the collection at ``url`` was built with, read without creating anything."""
    try:
        from qdrant_client import QdrantClient
    except ImportError as exc:
        raise MissingExtraError("qdrant-client", "qdrant") from exc
    u = urlparse(url)
    q = {k: v[-1] for k, v in parse_qs(u.query).items()}
    if u.scheme == "qdrant+local":
        if url.startswith("qdrant+local://:memory:") or not u.path or not os.path.isdir(u.path):
            return None  # nothing stored there (and asking creates nothing)
        collection = q.get("collection", "admit_chunks")
        client = QdrantClient(path=u.path)
    else:
        from admit.kb.urls import qdrant_target

        server, collection, api_key = qdrant_target(url)
        client = QdrantClient(url=server, api_key=api_key, timeout=30)
    try:
        meta = f"{collection}_meta"
        if not client.collection_exists(meta):
            return None
        pts = client.retrieve(meta, ids=[_point_id("meta:embedder_spec")], with_payload=True)
    except Exception as exc:
        raise StoreError(f"Cannot read the knowledge base's settings from Qdrant at {url}: {exc}") from exc
    finally:
        with contextlib.suppress(Exception):
            client.close()
    return str(pts[0].payload["value"]) if pts and pts[0].payload else None


SPEC = StoreSpec(
    schemes=("qdrant", "qdrant+local", "qdrant+https"),
    open=from_url,
    stored_embedder=stored_embedder,
    summary="a Qdrant server, or the client's embedded local mode",
)
"""This store in the store catalogue (:mod:`admit.kb.stores`)."""

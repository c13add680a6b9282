"""An in-process store (``memory://``): dicts behind a lock, BM25 and exact cosine search, nothing on disk.

For tests, notebooks and short-lived services that ingest at start. It passes the same
:class:`~admit.testing.store_contract.StoreContract` as the server stores: authorization and filters decide
which records are ranked at all (the scope is computed first), never a filter of the ranked results.
``memory://NAME`` opens the process's store of that name (so a second :class:`~admit.kb.KnowledgeBase` on the
same URL sees the first one's chunks); ``memory://`` alone is a fresh, private store.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from admit import _linear
from admit.errors import StoreError
from admit.kb import store as _s
from admit.kb.store import ChunkRecord, FloatVector, Hit, HybridSearch, ReadFilter, SearchFilters, SourceInfo, StoreSpec
from admit.types import Principal

__all__ = ["SPEC", "MemoryStore", "from_url", "stored_embedder"]

_WORD = _linear.simple(r"\w+")
_K1, _B = 1.2, 0.75


@dataclass(slots=True)
class _Row:
    record: ChunkRecord
    vector: FloatVector
    terms: Counter[str]
    length: int
    lowered: str


@dataclass(slots=True)
class _Data:
    """The state one named store holds (shared by every :class:`MemoryStore` opened on that name)."""

    dim: int
    rows: dict[tuple[str, str], _Row] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)


_NAMED: dict[str, _Data] = {}
_NAMED_LOCK = threading.Lock()


class MemoryStore(HybridSearch):
    """A store in this process's memory (see the module docstring).

    Args:
        dim: Embedding dimension.
        name: A name shared across opens in this process (``None``: a private store).

    Example:
        >>> s = MemoryStore(dim=4)
        >>> s.count()
        0
    """

    release_query = True
    """It answers the release-candidate query (:meth:`~admit.kb.store.Store.release_records`): a substring scan."""

    def __init__(self, *, dim: int, name: str | None = None) -> None:
        self.dim = int(dim)
        self.name = name
        if name is None:
            self._data = _Data(dim=self.dim)
            return
        with _NAMED_LOCK:
            data = _NAMED.get(name)
            if data is None:
                data = _NAMED[name] = _Data(dim=self.dim)
        if data.dim != self.dim:
            raise StoreError(f"memory://{name} holds {data.dim}-d vectors, not {self.dim}-d.")
        self._data = data

    # -- writes ----------------------------------------------------------------------------------------------
    def _row(self, r: ChunkRecord) -> _Row:
        vec = _s.record_vector(r, self.dim)
        norm = float(np.linalg.norm(vec))
        words = _WORD.findall(f"{r.title}\n{r.text}".lower())
        return _Row(
            record=r,
            vector=vec / norm if norm > 0 else vec,
            terms=Counter(words),
            length=len(words),
            lowered=f"{r.title}\n{r.text}".lower(),
        )

    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        """Insert or replace records by id (within their tenant)."""
        rows = [self._row(r) for r in records]
        with self._data.lock:
            for row in rows:
                self._data.rows[(row.record.tenant, row.record.id)] = row

    def replace_source(self, source_id: str, tenant: str, records: Sequence[ChunkRecord]) -> None:
        """Replace a source's chunks under the lock (readers see the old or the new version)."""
        rows = [self._row(r) for r in records]
        with self._data.lock:
            self._delete(source_id, tenant)
            for row in rows:
                self._data.rows[(row.record.tenant, row.record.id)] = row

    def delete_source(self, source_id: str, tenant: str) -> int:
        """Delete a source's chunks; return how many went."""
        with self._data.lock:
            return self._delete(source_id, tenant)

    def _delete(self, source_id: str, tenant: str) -> int:
        rows = self._data.rows
        gone = [k for k, row in rows.items() if row.record.source_id == source_id and row.record.tenant == tenant]
        for k in gone:
            del rows[k]
        return len(gone)

    # -- reads -----------------------------------------------------------------------------------------------
    def _snapshot(self) -> list[_Row]:
        with self._data.lock:
            return list(self._data.rows.values())

    def get_source_chunks(self, source_id: str, tenant: str) -> list[ChunkRecord]:
        """A source's chunks in document order."""
        got = [r.record for r in self._snapshot() if r.record.source_id == source_id and r.record.tenant == tenant]
        return sorted(got, key=lambda r: (r.ordinal, r.id))

    def list_sources(self, tenant: str | None = None) -> list[SourceInfo]:
        """The stored sources (of one tenant, or all), by source id."""
        by: dict[tuple[str, str], list[ChunkRecord]] = {}
        for row in self._snapshot():
            r = row.record
            if tenant is None or r.tenant == tenant:
                by.setdefault((r.source_id, r.tenant), []).append(r)
        return [
            SourceInfo(
                source_id=sid,
                tenant=ten,
                origin=max(r.origin for r in recs),
                content_hash=str(max(str(r.metadata.get("content_hash", "")) for r in recs)),
                ingest_key=str(max(str(r.metadata.get("ingest_key", "")) for r in recs)),
                chunks=len(recs),
            )
            for (sid, ten), recs in sorted(by.items())
        ]

    def count(self, tenant: str | None = None) -> int:
        """Number of chunks (of one tenant, or all)."""
        return sum(1 for r in self._snapshot() if tenant is None or r.record.tenant == tenant)

    def get_meta(self, key: str) -> str | None:
        """Read a store-level setting."""
        with self._data.lock:
            return self._data.meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        """Write a store-level setting."""
        with self._data.lock:
            self._data.meta[key] = value

    def close(self) -> None:
        """Nothing to release (a named store lives as long as the process)."""

    # -- search ----------------------------------------------------------------------------------------------
    def _scope(self, principal: Principal, filters: SearchFilters) -> list[_Row]:
        """The rows the principal may read that pass the filters (:class:`~admit.kb.store.ReadFilter`)."""
        readable = ReadFilter.of(principal, filters)
        return [row for row in self._snapshot() if readable.matches(row.record)]

    def _ranked(
        self, scope: list[_Row], principal: Principal, terms: list[str], qv: FloatVector, n: int, k: int
    ) -> list[Hit]:
        """BM25 over the scope's words (a dotted version as a phrase) and exact cosine, fused by RRF."""
        rows = scope
        if not rows:
            return []
        avg = sum(r.length for r in rows) / len(rows) or 1.0
        df = {t: sum(1 for r in rows if self._tf(r, t)) for t in terms}
        lexical: list[tuple[str, float]] = []
        for i, row in enumerate(rows):
            s = 0.0
            for t in terms:
                tf = self._tf(row, t)
                if tf:
                    idf = math.log(1 + (len(rows) - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * row.length / avg))
            if s > 0:
                lexical.append((str(i), s))
        lexical.sort(key=lambda x: -x[1])
        sims = np.stack([r.vector for r in rows]) @ qv
        order = np.argsort(-sims, kind="stable")[:n]
        vector = [(str(int(i)), float(sims[i])) for i in order]
        fused = _s.rrf_fuse(lexical[:n], vector, k=k)
        return [
            Hit(record=rows[int(cid)].record, fused=score, bm25_rank=lr, vector_rank=vr, bm25=ls, similarity=sim)
            for cid, score, lr, vr, ls, sim in fused
        ]

    def _version_records(self, scope: list[_Row], principal: Principal, asked: list[str], n: int) -> list[ChunkRecord]:
        """The readable rows whose words hold one of the releases (checked exactly by the caller)."""
        return [r.record for r in scope if any(v in r.lowered for v in asked)]

    @staticmethod
    def _tf(row: _Row, term: str) -> int:
        if "." in term:  # a version: searched as a phrase
            return row.lowered.count(term)
        return row.terms.get(term, 0)


def from_url(url: str, *, dim: int) -> MemoryStore:
    """``memory://`` (a private store) or ``memory://NAME`` (the process's store of that name)."""
    name = url.partition("://")[2].strip("/")
    return MemoryStore(dim=dim, name=name or None)


def stored_embedder(url: str) -> str | None:
    """The embedder spec a named store was built with (``None``: a fresh or private store)."""
    name = url.partition("://")[2].strip("/")
    with _NAMED_LOCK:
        data = _NAMED.get(name) if name else None
    return data.meta.get("embedder_spec") if data is not None else None


SPEC = StoreSpec(
    schemes=("memory",),
    open=from_url,
    stored_embedder=stored_embedder,
    summary="in this process's memory, nothing on disk (tests, notebooks)",
)
"""This store in the store catalogue (:mod:`admit.kb.stores`)."""

"""The embedded store: one SQLite file with FTS5 (BM25) and sqlite-vec (cosine), no server.

Retrieval is hybrid: a BM25 list from FTS5 and an exact cosine list from ``vec_distance_cosine``, fused by
reciprocal rank. Both lists are computed over the rows that survive the tenant, ACL, language, freshness and
source filters, which are part of the same SQL statement: the authorized rowset drives the scan
(``chunk_acl`` is keyed by tenant and group), so ranking never sees a chunk the principal may not read.

Each tenant has its own full-text index (one FTS5 table per tenant, :func:`fts_table`), as each has its own
partition of the vector table: a query matches only its tenant's rows, and BM25's statistics (row count, average
length, how many rows hold a term) are the tenant's own. Another tenant's rows therefore never move a score, the
order of results or the time a match takes. A file written before the index was split is split when opened.

The stock ``sqlite3`` of many Python builds cannot load extensions, so this module uses ``sqlean.py`` (a SQLite
build with FTS5 and extension loading) and the ``sqlite-vec`` wheel.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from admit.errors import ConfigError, MissingExtraError, StoreError
from admit.kb import store as _s
from admit.kb._rows import COLUMNS, record_columns, record_from_row, source_info
from admit.kb.connections import PerThreadConnections, ThreadConnections
from admit.kb.store import ChunkRecord, FloatVector, Hit, HybridSearch, SearchFilters, SourceInfo, StoreSpec
from admit.types import Principal

__all__ = ["SPEC", "SqliteStore", "from_url", "fts_table"]

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    source_id TEXT NOT NULL,
    tenant TEXT NOT NULL,
    document TEXT NOT NULL,
    text TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    title TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    version TEXT,
    updated_at REAL,
    groups TEXT NOT NULL,
    label TEXT NOT NULL,
    has_access INTEGER NOT NULL,
    authority REAL,
    language TEXT,
    origin TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    metadata TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS chunks_id ON chunks (tenant, id);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks (source_id, tenant);
CREATE TABLE IF NOT EXISTS chunk_acl (
    tenant TEXT NOT NULL, grp TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (tenant, grp, rid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunk_acl_rid ON chunk_acl (rid);
"""

_FTS = "fts5(title, body, content='', contentless_delete=1, tokenize=\"porter unicode61 tokenchars '_'\")"
"""Each tenant's full-text table (:func:`fts_table`)."""

_SHARED_FTS = "chunks_fts"
"""The one full-text table of files written before the index was split per tenant (split when opened)."""


def fts_table(tenant: str) -> str:
    """The name of a tenant's full-text table: ``fts_`` and a digest of the tenant (any string is a valid name)."""
    return "fts_" + hashlib.sha256(tenant.encode("utf-8", "surrogatepass")).hexdigest()[:32]


_COLS = COLUMNS


def _marks(values: Sequence[Any]) -> str:
    """``?,?,?``: one placeholder per value."""
    return ",".join("?" * len(values))


def _connect_module() -> Any:
    try:
        import sqlean
    except ImportError as exc:
        raise MissingExtraError("sqlean.py", "kb") from exc
    try:
        import sqlite_vec
    except ImportError as exc:
        raise MissingExtraError("sqlite-vec", "kb") from exc
    return sqlean, sqlite_vec


class SqliteStore(PerThreadConnections, HybridSearch):
    """The embedded default store: one SQLite file (or ``:memory:``), safe for concurrent readers.

    Each thread gets its own connection (WAL journal, so readers do not block the writer); writes take a lock and
    run in one transaction each.

    Args:
        path: Database file, or ``":memory:"`` (shared by the threads of this process).
        dim: Embedding dimension; checked against the file's when it exists.
    """

    release_query = True
    """It answers the release-candidate query (:meth:`~admit.kb.store.Store.release_records`): FTS5 phrases."""

    def __init__(self, path: str | Path, *, dim: int) -> None:
        self._sqlean, self._vec = _connect_module()
        self.dim = int(dim)
        self._memory = str(path) == ":memory:"
        if self._memory:
            self._uri = f"file:admit-kb-{uuid.uuid4().hex}?mode=memory&cache=shared"
        else:
            p = Path(path).expanduser()
            if p.exists() and p.is_dir():
                raise ConfigError(f"Knowledge base path {str(path)!r} is a directory; give a file such as kb.sqlite.")
            if not p.parent.exists():
                p.parent.mkdir(parents=True, exist_ok=True)
            self._uri = p.resolve().as_uri()
        self.path = str(path)
        self._conns = ThreadConnections(self._open, label=f"knowledge base {self.path!r}")
        self._write_lock = threading.RLock()
        self._fts_made: set[str] = set()
        conn = self._conn()
        with self._write_lock:
            conn.executescript(_SCHEMA)
            self._split_shared_fts()
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0("
                f"embedding float[{self.dim}] distance_metric=cosine, tenant text partition key)"
            )
            stored = self.get_meta("dim")
            if stored is None:
                self.set_meta("dim", str(self.dim))
            elif int(stored) != self.dim:
                raise ConfigError(
                    f"Knowledge base {self.path!r} holds {stored}-d vectors but the embedder gives {self.dim}-d; "
                    "use the embedder it was built with or ingest into a new file."
                )

    # -- connections ---------------------------------------------------------------------------------------
    def _open(self) -> Any:
        conn = self._sqlean.connect(self._uri, uri=True, check_same_thread=False, timeout=30.0)
        conn.enable_load_extension(True)
        self._vec.load(conn)
        conn.enable_load_extension(False)
        conn.isolation_level = None  # explicit transactions
        if not self._memory:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("PRAGMA cache_size=-65536")
        return conn

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Any]:
        conn = self._conn()
        with self._write_lock:
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    # -- the per-tenant full-text tables -------------------------------------------------------------------
    @staticmethod
    def _fts_row(title: str, heading_path: Sequence[str], text: str) -> tuple[str, str]:
        """The indexed columns of a chunk: its title with its heading path, and its text."""
        return " ".join([title, *heading_path]), text

    def _fts_for(self, conn: Any, tenant: str) -> str:
        """The tenant's full-text table, created if missing (inside the caller's write transaction)."""
        name = fts_table(tenant)
        if name not in self._fts_made:
            conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING {_FTS}")
            self._fts_made.add(name)
        return name

    @staticmethod
    def _fts_exists(conn: Any, tenant: str) -> str | None:
        """The tenant's full-text table if it has one (``None``: the tenant never had a chunk indexed)."""
        name = fts_table(tenant)
        row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
        return name if row is not None else None

    def _split_shared_fts(self) -> None:
        """Move a file's one shared full-text table (older files) into per-tenant tables, in one transaction."""
        conn = self._conn()
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (_SHARED_FTS,)).fetchone():
            return
        with self._tx() as tx:
            if not tx.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (_SHARED_FTS,)).fetchone():
                return  # another process split it first
            rows = tx.execute("SELECT rid, tenant, title, heading_path, text FROM chunks WHERE tenant != ''")
            for rid, tenant, title, heading_path, text in rows.fetchall():
                tx.execute(
                    f"INSERT INTO {self._fts_for(tx, tenant)} (rowid, title, body) VALUES (?, ?, ?)",
                    (rid, *self._fts_row(title, json.loads(heading_path), text)),
                )
            tx.execute(f"DROP TABLE {_SHARED_FTS}")
        logger.info("knowledge base %s: full-text index split per tenant", self.path)

    # -- meta ----------------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """Read a store-level setting."""
        row = self._conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Write a store-level setting."""
        with self._tx() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    # -- writes --------------------------------------------------------------------------------------------
    def _check(self, r: ChunkRecord) -> bytes:
        vec = _s.record_vector(r, self.dim)
        return vec.tobytes()

    def _delete_rids(self, conn: Any, rids: Sequence[int], tenant: str) -> None:
        """Delete rows of one tenant (its full-text rows from its own table)."""
        fts = self._fts_exists(conn, tenant) if tenant else None
        for i in range(0, len(rids), 500):
            part = list(rids[i : i + 500])
            marks = _marks(part)
            if fts is not None:
                conn.execute(f"DELETE FROM {fts} WHERE rowid IN ({marks})", part)
            conn.execute(f"DELETE FROM chunk_acl WHERE rid IN ({marks})", part)
            conn.execute(f"DELETE FROM chunks_vec WHERE rowid IN ({marks})", part)
            conn.execute(f"DELETE FROM chunks WHERE rid IN ({marks})", part)

    def _insert(self, conn: Any, records: Sequence[ChunkRecord]) -> None:
        keys = [(r.tenant, r.id) for r in records]
        if len(set(keys)) != len(keys):
            raise StoreError("Duplicate chunk ids in one write.")
        old: dict[str, list[int]] = {}
        for ten, cid in keys:
            row = conn.execute("SELECT rid FROM chunks WHERE tenant = ? AND id = ?", (ten, cid)).fetchone()
            if row is not None:
                old.setdefault(ten, []).append(row[0])
        for ten, rids in old.items():
            self._delete_rids(conn, rids, ten)
        for r in records:
            blob = self._check(r)
            tenant = r.tenant
            cur = conn.execute(
                f"INSERT INTO chunks ({_COLS}) VALUES ({_marks(_COLS.split(','))})",
                record_columns(r, json_groups=True),
            )
            rid = cur.lastrowid
            conn.execute("INSERT INTO chunks_vec (rowid, embedding, tenant) VALUES (?, ?, ?)", (rid, blob, tenant))
            if tenant:
                conn.executemany(
                    "INSERT INTO chunk_acl (tenant, grp, rid) VALUES (?, ?, ?)",
                    [(tenant, g, rid) for g in dict.fromkeys(_s.acl_tokens(r.access))],
                )
                # a chunk without a tenant is stored but never matched: it has no full-text row
                conn.execute(
                    f"INSERT INTO {self._fts_for(conn, tenant)} (rowid, title, body) VALUES (?, ?, ?)",
                    (rid, *self._fts_row(r.title, r.heading_path, r.text)),
                )

    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        """Insert or replace records by id, in one transaction."""
        if not records:
            return
        try:
            with self._tx() as conn:
                self._insert(conn, records)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Upsert into {self.path!r} failed: {exc}") from exc

    def replace_source(self, source_id: str, tenant: str, records: Sequence[ChunkRecord]) -> None:
        """Replace a source's chunks atomically (one transaction)."""
        try:
            with self._tx() as conn:
                self._delete_source(conn, source_id, tenant)
                self._insert(conn, records)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Replacing source {source_id!r} in {self.path!r} failed: {exc}") from exc

    def delete_source(self, source_id: str, tenant: str) -> int:
        """Delete a source's chunks; return how many."""
        with self._tx() as conn:
            return self._delete_source(conn, source_id, tenant)

    def _delete_source(self, conn: Any, source_id: str, tenant: str) -> int:
        sql = "SELECT rid FROM chunks WHERE source_id = ? AND tenant = ?"
        rids = [row[0] for row in conn.execute(sql, (source_id, tenant or ""))]
        self._delete_rids(conn, rids, tenant or "")
        return len(rids)

    # -- reads ---------------------------------------------------------------------------------------------
    @staticmethod
    def _row_to_record(row: Sequence[Any], blob: bytes) -> ChunkRecord:
        return record_from_row(row, np.frombuffer(blob, dtype=np.float32).copy())

    def _fetch(self, conn: Any, rids: Sequence[int]) -> dict[int, ChunkRecord]:
        out: dict[int, ChunkRecord] = {}
        for i in range(0, len(rids), 500):
            part = list(rids[i : i + 500])
            marks = _marks(part)
            for row in conn.execute(
                f"SELECT c.rid, {', '.join('c.' + c.strip() for c in _COLS.split(','))}, v.embedding "
                f"FROM chunks c JOIN chunks_vec v ON v.rowid = c.rid WHERE c.rid IN ({marks})",
                part,
            ):
                out[row[0]] = self._row_to_record(row[1:-1], row[-1])
        return out

    def get_source_chunks(self, source_id: str, tenant: str) -> list[ChunkRecord]:
        """Return a source's chunks in document order."""
        conn = self._conn()
        rids = [
            r[0]
            for r in conn.execute(
                "SELECT rid FROM chunks WHERE source_id = ? AND tenant = ? ORDER BY ordinal, id",
                (source_id, tenant or ""),
            )
        ]
        got = self._fetch(conn, rids)
        return [got[r] for r in rids]

    def list_sources(self, tenant: str | None = None) -> list[SourceInfo]:
        """Return the stored sources."""
        sql = (
            "SELECT source_id, tenant, max(origin), max(json_extract(metadata, '$.content_hash')), "
            "max(json_extract(metadata, '$.ingest_key')), count(*) FROM chunks "
            + ("WHERE tenant = ? " if tenant is not None else "")
            + "GROUP BY source_id, tenant ORDER BY source_id"
        )
        rows = self._conn().execute(sql, (tenant,) if tenant is not None else ()).fetchall()
        return [source_info(r) for r in rows]

    def count(self, tenant: str | None = None) -> int:
        """Number of chunks."""
        if tenant is None:
            row = self._conn().execute("SELECT count(*) FROM chunks").fetchone()
        else:
            row = self._conn().execute("SELECT count(*) FROM chunks WHERE tenant = ?", (tenant,)).fetchone()
        return int(row[0])

    @staticmethod
    def _scope(principal: Principal, filters: SearchFilters) -> tuple[str, list[Any]]:
        """A subquery of the rids the principal may read that pass the filters (an empty filter never comes here:
        :meth:`~admit.kb.store.SearchFilters.matches_nothing`).

        It is the first thing both ranked lists are restricted by, so ranking only ever sees readable rows.
        """
        toks = _s.principal_tokens(principal)
        acl = f"SELECT rid FROM chunk_acl WHERE tenant = ? AND grp IN ({_marks(toks)})"
        acl_params: list[Any] = [principal.tenant, *toks]
        clauses: list[str] = []
        params: list[Any] = []
        if filters.groups is not None:
            groups = _marks(filters.groups)
            clauses.append(f"c.rid IN (SELECT rid FROM chunk_acl WHERE tenant = ? AND grp IN ({groups}))")
            params += [principal.tenant, *filters.groups]
        if filters.languages is not None:
            clauses.append(f"c.language IN ({_marks(filters.languages)})")
            params += filters.languages
        ts = filters.updated_after_ts()
        if ts is not None:
            clauses.append("c.updated_at >= ?")
            params.append(ts)
        if filters.source_ids is not None:
            clauses.append(f"c.source_id IN ({_marks(filters.source_ids)})")
            params += filters.source_ids
        if not clauses:
            return acl, acl_params
        sql = f"SELECT c.rid FROM chunks c WHERE c.tenant = ? AND c.rid IN ({acl}) AND " + " AND ".join(clauses)
        return sql, [principal.tenant, *acl_params, *params]

    def _ranked(self, scope: Any, principal: Principal, terms: list[str], qv: FloatVector, n: int, k: int) -> list[Hit]:
        """Both ranked queries over the rows the principal may read (``scope``: the filters, inside the SQL)."""
        sub, params = scope
        conn = self._conn()
        lexical: list[tuple[int, float]] = []
        # one read transaction: the lexical, vector and row reads see the same snapshot, so a source being
        # replaced concurrently is seen wholly old or wholly new, never missing
        try:
            conn.execute("BEGIN")
            try:
                fts = self._fts_exists(conn, principal.tenant)
                if terms and fts is not None:
                    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
                    # the tenant's own table: only its rows are matched, and BM25's statistics are its own
                    lexical = [
                        (int(r[0]), -float(r[1]))
                        for r in conn.execute(
                            f"SELECT rowid, bm25({fts}, 1.0, 1.0) AS s FROM {fts} "
                            f"WHERE {fts} MATCH ? AND +rowid IN ({sub}) ORDER BY s LIMIT ?",
                            [match, *params, n],
                        )
                    ]
                # exact KNN inside the tenant's partition, restricted to the allowed rowids before distances rank
                vector = [
                    (int(r[0]), 1.0 - float(r[1]))
                    for r in conn.execute(
                        "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ? AND tenant = ? "
                        f"AND rowid IN ({sub})",
                        [qv.tobytes(), n, principal.tenant, *params],
                    )
                ]
                fused = _s.rrf_fuse([(str(a), b) for a, b in lexical], [(str(a), b) for a, b in vector], k=k)
                recs = self._fetch(conn, [int(f[0]) for f in fused])
            finally:
                conn.execute("COMMIT")
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Search in {self.path!r} failed: {exc}") from exc
        return [
            Hit(record=recs[int(cid)], fused=score, bm25_rank=lr, vector_rank=vr, bm25=ls, similarity=sim)
            for cid, score, lr, vr, ls, sim in fused
            if int(cid) in recs
        ]

    def _version_records(self, scope: Any, principal: Principal, asked: list[str], n: int) -> list[_s.ChunkRecord]:
        """FTS5 phrase search for each release (``"1.2.4"`` and ``"v1.2.4"``; the tokenizer splits them at the
        dots), headings weighted over text, over the rows the principal may read."""
        sub, params = scope
        # a release is digits, letters (a pre-release suffix: 1.2.4rc1) and dots, so each phrase is safe to quote
        match = " OR ".join(f'"{v}" OR "v{v}"' for v in asked if v and all(ch.isalnum() or ch == "." for ch in v))
        if not match:
            return []
        conn = self._conn()
        try:
            fts = self._fts_exists(conn, principal.tenant)
            if fts is None:
                return []
            rids = [
                int(r[0])
                for r in conn.execute(
                    f"SELECT rowid, bm25({fts}, 4.0, 1.0) AS s FROM {fts} "
                    f"WHERE {fts} MATCH ? AND +rowid IN ({sub}) ORDER BY s LIMIT ?",
                    [match, *params, n],
                )
            ]
            got = self._fetch(conn, rids)
        except Exception as exc:
            raise StoreError(f"Version search in {self.path!r} failed: {exc}") from exc
        return [got[r] for r in rids if r in got]


def from_url(url: str, *, dim: int) -> SqliteStore:
    """A file path, ``:memory:``, or ``sqlite:///path/kb.sqlite``."""
    path = url[len("sqlite://") :] if url.startswith("sqlite://") else url
    return SqliteStore(path or ":memory:", dim=dim)


def stored_embedder(url: str) -> str | None:
    """The ``embedder_spec`` a knowledge-base file was built with, read-only (``None``: no such file or key)."""
    path = url[len("sqlite://") :] if url.startswith("sqlite://") else url
    if not path or path == ":memory:":
        return None
    p = Path(path).expanduser()
    if not p.is_file():
        return None
    try:
        sqlean, _ = _connect_module()
        conn = sqlean.connect(p.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'embedder_spec'").fetchone()
        finally:
            conn.close()
    except Exception:  # not a knowledge base yet, or not readable: opening it will say so
        return None
    return str(row[0]) if row else None


SPEC = StoreSpec(
    schemes=("sqlite",),
    open=from_url,
    stored_embedder=stored_embedder,
    summary="the embedded default: SQLite with FTS5 and sqlite-vec, one file",
)
"""This store in the store catalogue (:mod:`admit.kb.stores`)."""

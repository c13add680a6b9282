"""PostgreSQL + pgvector store: full text (``tsvector``, ``ts_rank_cd``) and exact cosine KNN, fused by rank.

The tenant, ACL (``acl && principal_tokens``), language, freshness, group and source conditions are the ``WHERE``
of both ranked queries, so PostgreSQL ranks only readable rows. By default the vector list is an exact scan over
the filtered rows, which keeps top-k exact under any filter. On hundreds of thousands of rows and more, give the
table an HNSW index (``PgvectorStore(..., vector_index="hnsw")`` once, or :meth:`PgvectorStore.create_hnsw_index`):
every store opened on the table afterwards finds the index. Each vector query is then planned
(:meth:`PgvectorStore.vector_plan`) from PostgreSQL's own estimate of the rows the ``WHERE`` leaves:

- at most ``exact_rows`` (a small tenant, a narrow group or language): an exact scan over those rows, found
  through the btree/GIN indexes on the filter columns (recall 1.0, and cheaper than walking the graph past
  rows the filter rejects);
- more: the HNSW index with ``hnsw.iterative_scan = relaxed_order``, ``hnsw.ef_search`` and
  ``hnsw.max_scan_tuples`` sized to the filter's selectivity, all ``SET LOCAL`` (this transaction only), so a
  filter that rejects most rows near the query still fills top-k; the rows found are re-ordered exactly.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from admit import _linear
from admit.errors import ConfigError, MissingExtraError, StoreError
from admit.kb import store as _s
from admit.kb._rows import COLUMNS, record_columns, record_from_row, source_info
from admit.kb.connections import PerThreadConnections, ThreadConnections
from admit.kb.store import ChunkRecord, FloatVector, Hit, HybridSearch, SearchFilters, SourceInfo, StoreSpec
from admit.types import Principal

__all__ = ["SPEC", "PgvectorStore", "VectorPlan", "from_url"]

logger = logging.getLogger(__name__)

_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,50}$")
_COLS = f"{COLUMNS}, embedding"
_SCANS = frozenset({"Seq Scan", "Bitmap Heap Scan", "Index Scan", "Index Only Scan"})
_NOT_BITMAP = ("enable_seqscan", "enable_indexscan", "enable_indexonlyscan")
_MAX_SCAN_TUPLES = 20_000
"""pgvector's default ``hnsw.max_scan_tuples``: the least an indexed query is given."""


@dataclass(frozen=True, slots=True)
class VectorPlan:
    """How one vector query runs (:meth:`PgvectorStore.vector_plan`)."""

    kind: Literal["exact", "hnsw"]
    """``"exact"``: a scan of the filtered rows ordered by distance; ``"hnsw"``: the HNSW index, iteratively."""
    estimated_rows: int
    """PostgreSQL's estimate of the rows the ``WHERE`` (tenant, ACL, filters) leaves (``-1``: not asked, the
    table has no HNSW index)."""
    scanned_rows: int = -1
    """Its estimate of the rows an exact scan reads to find them: those its indexes match (the tenant, the ACL,
    a source), before the conditions no index serves (a language, a modification time) are checked. The plan is
    exact when this is at most ``exact_rows``."""
    settings: dict[str, str] = field(default_factory=dict)
    """The ``SET LOCAL`` settings of the query's transaction (none for an exact scan)."""


class PgvectorStore(PerThreadConnections, HybridSearch):
    """A :class:`~admit.kb.store.Store` on PostgreSQL with the ``vector`` extension.

    Args:
        dsn: A libpq connection string or ``postgresql://`` URL.
        table: Table name (``<table>_meta`` holds settings).
        dim: Embedding dimension.
        vector_index: ``"auto"`` (default): search through the table's HNSW index when it has one, else exactly;
            ``"hnsw"``: create the index if missing and use it; ``"exact"``: always the exact scan.
        ef_search: ``hnsw.ef_search`` for indexed searches (at least the ranked list's depth is used; more when
            the filter leaves a small share of the rows). At 1M rows (m 16, ef_construction 64) 100 found 0.81 of
            an unfiltered top-30, 400 about 0.97, but 0.946 of a tenant of 24% of the rows; 600 is the default.
        exact_rows: With an HNSW index, a query whose ``WHERE`` PostgreSQL estimates at no more than this many
            rows is answered by an exact scan of them instead (``0``: always the index).
    """

    release_query = True
    """It answers the release-candidate query (:meth:`~admit.kb.store.Store.release_records`): ``strpos`` over
    the title and the text, inside the principal's ``WHERE``."""

    def __init__(
        self,
        dsn: str,
        *,
        dim: int,
        table: str = "admit_chunks",
        vector_index: Literal["auto", "hnsw", "exact"] = "auto",
        ef_search: int = 600,
        exact_rows: int = 20_000,
    ) -> None:
        try:
            import psycopg
            from pgvector.psycopg import register_vector
        except ImportError as exc:
            raise MissingExtraError("psycopg / pgvector", "pgvector") from exc
        if not _IDENT.match(table):
            raise ConfigError(f"Table name {table!r} must be lower-case letters, digits and underscores.")
        self._psycopg = psycopg
        self._register = register_vector
        self.dsn = dsn
        self.table = table
        self.dim = int(dim)
        self._conns = ThreadConnections(self._open, label="PgvectorStore", usable=lambda c: not c.closed)
        if vector_index not in ("auto", "hnsw", "exact"):
            raise ConfigError(f"`vector_index` must be 'auto', 'hnsw' or 'exact', got {vector_index!r}.")
        if ef_search <= 0:
            raise ConfigError(f"`ef_search` must be greater than 0, got {ef_search}.")
        self.ef_search = int(ef_search)
        if exact_rows < 0:
            raise ConfigError(f"`exact_rows` must be 0 or more, got {exact_rows}.")
        self.exact_rows = int(exact_rows)
        self.hnsw = False
        """Whether searches go through the HNSW index."""
        self._iterative: bool | None = None
        t = table
        with self._tx() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        self._conns.forget_current()  # re-register the vector type now that the extension exists
        with self._tx() as cur:
            cur.execute("SELECT to_regclass(%s)", (t,))
            row = cur.fetchone()
            new_table = row is None or row[0] is None
            cur.execute(f"""
                CREATE TABLE IF NOT EXISTS {t} (
                    id text NOT NULL,
                    source_id text NOT NULL,
                    tenant text NOT NULL,
                    document text NOT NULL,
                    text text NOT NULL,
                    text_hash text NOT NULL,
                    title text NOT NULL,
                    heading_path jsonb NOT NULL,
                    version text,
                    updated_at double precision,
                    groups text[] NOT NULL,
                    acl text[] NOT NULL,
                    label text NOT NULL,
                    has_access boolean NOT NULL,
                    authority double precision,
                    language text,
                    origin text NOT NULL,
                    ordinal integer NOT NULL,
                    metadata jsonb NOT NULL,
                    embedding vector({self.dim}) NOT NULL,
                    tsv tsvector GENERATED ALWAYS AS (
                        setweight(to_tsvector('english', title), 'B') || to_tsvector('english', text)
                    ) STORED,
                    PRIMARY KEY (tenant, id)
                )""")
            if new_table:
                # vectors stay in the row (moved out only when a row would not fit a page): an exact scan over a
                # tenant's rows then reads heap pages, not one TOAST lookup per row
                cur.execute(f"ALTER TABLE {t} ALTER COLUMN embedding SET STORAGE MAIN")
            cur.execute(f"CREATE INDEX IF NOT EXISTS {t}_tsv ON {t} USING gin (tsv)")
            cur.execute(f"CREATE INDEX IF NOT EXISTS {t}_acl ON {t} USING gin (acl)")
            cur.execute(f"CREATE INDEX IF NOT EXISTS {t}_tenant ON {t} (tenant)")
            cur.execute(f"CREATE INDEX IF NOT EXISTS {t}_source ON {t} (source_id, tenant)")
            cur.execute(f"CREATE TABLE IF NOT EXISTS {t}_meta (key text PRIMARY KEY, value text NOT NULL)")
            cur.execute(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'embedding'", (t,)
            )
            row = cur.fetchone()
            if row and row[0] and int(row[0]) != self.dim:
                raise ConfigError(f"Table {t!r} holds {row[0]}-d vectors, not {self.dim}-d.")
        if vector_index == "hnsw":
            self.create_hnsw_index()
        elif vector_index == "auto":
            self.hnsw = self.has_hnsw_index()

    # -- the ANN index -------------------------------------------------------------------------------------
    def has_hnsw_index(self) -> bool:
        """Whether the table has its HNSW index (``<table>_hnsw``)."""
        with self._tx() as cur:
            cur.execute(
                "SELECT 1 FROM pg_indexes WHERE tablename = %s AND indexname = %s", (self.table, f"{self.table}_hnsw")
            )
            return cur.fetchone() is not None

    def create_hnsw_index(self, *, m: int = 16, ef_construction: int = 64) -> None:
        """Build the HNSW index on the embeddings (cosine) if missing, and search through it from now on.

        Building after a bulk load is much faster than inserting into an indexed table.
        """
        with self._tx() as cur:
            cur.execute(
                f"CREATE INDEX IF NOT EXISTS {self.table}_hnsw ON {self.table} "
                f"USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
            )
        self.hnsw = True

    # -- connections ---------------------------------------------------------------------------------------
    def _open(self) -> Any:
        try:
            conn = self._psycopg.connect(self.dsn, autocommit=True)
        except Exception as exc:
            raise StoreError(f"Cannot connect to PostgreSQL: {exc}") from exc
        with contextlib.suppress(Exception):  # before CREATE EXTENSION the type does not exist yet
            self._register(conn)
        return conn

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Any]:
        conn = self._conn()
        try:
            with conn.transaction(), conn.cursor() as cur:
                yield cur
        except (ConfigError, StoreError):
            raise
        except Exception as exc:
            raise StoreError(f"PostgreSQL statement failed: {exc}") from exc

    # -- meta ----------------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """Read a setting."""
        with self._tx() as cur:
            cur.execute(f"SELECT value FROM {self.table}_meta WHERE key = %s", (key,))
            row = cur.fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Write a setting."""
        with self._tx() as cur:
            cur.execute(
                f"INSERT INTO {self.table}_meta (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (key, value),
            )

    # -- writes --------------------------------------------------------------------------------------------
    def _row(self, r: ChunkRecord) -> tuple[Any, ...]:
        vec = _s.record_vector(r, self.dim)
        values = record_columns(r, json_groups=False)
        at = _COLS.split(", ").index("groups") + 1
        return (*values[:at], _s.acl_tokens(r.access), *values[at:], vec)

    def _insert(self, cur: Any, records: Sequence[ChunkRecord]) -> None:
        cols = _COLS.replace("groups,", "groups, acl,")
        marks = ", ".join(["%s"] * 20)
        updates = ", ".join(
            f"{c.strip()} = EXCLUDED.{c.strip()}" for c in cols.split(",") if c.strip() not in {"id", "tenant"}
        )
        cur.executemany(
            f"INSERT INTO {self.table} ({cols}) VALUES ({marks}) ON CONFLICT (tenant, id) DO UPDATE SET {updates}",
            [self._row(r) for r in records],
        )

    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        """Insert or replace records by id (one transaction)."""
        if not records:
            return
        with self._tx() as cur:
            self._insert(cur, records)

    def replace_source(self, source_id: str, tenant: str, records: Sequence[ChunkRecord]) -> None:
        """Replace a source's chunks in one transaction."""
        with self._tx() as cur:
            cur.execute(
                f"DELETE FROM {self.table} WHERE source_id = %s AND tenant = %s",
                (source_id, tenant or ""),
            )
            if records:
                self._insert(cur, records)

    def delete_source(self, source_id: str, tenant: str) -> int:
        """Delete a source's chunks; return how many."""
        with self._tx() as cur:
            cur.execute(
                f"DELETE FROM {self.table} WHERE source_id = %s AND tenant = %s",
                (source_id, tenant or ""),
            )
            return int(cur.rowcount)

    # -- reads ---------------------------------------------------------------------------------------------
    @staticmethod
    def _record(row: Sequence[Any]) -> ChunkRecord:
        *columns, embedding = row
        return record_from_row(columns, embedding.to_numpy() if hasattr(embedding, "to_numpy") else embedding)

    def get_source_chunks(self, source_id: str, tenant: str) -> list[ChunkRecord]:
        """A source's chunks in document order."""
        with self._tx() as cur:
            cur.execute(
                f"SELECT {_COLS} FROM {self.table} WHERE source_id = %s AND tenant = %s ORDER BY ordinal, id",
                (source_id, tenant or ""),
            )
            return [self._record(r) for r in cur.fetchall()]

    def list_sources(self, tenant: str | None = None) -> list[SourceInfo]:
        """Stored sources."""
        sql = (
            f"SELECT source_id, tenant, max(origin), max(metadata->>'content_hash'), max(metadata->>'ingest_key'), "
            f"count(*) FROM {self.table} "
            + ("WHERE tenant = %s " if tenant is not None else "")
            + "GROUP BY source_id, tenant ORDER BY source_id"
        )
        with self._tx() as cur:
            cur.execute(sql, (tenant,) if tenant is not None else ())
            rows = cur.fetchall()
        return [source_info(r) for r in rows]

    def count(self, tenant: str | None = None) -> int:
        """Number of chunks."""
        with self._tx() as cur:
            if tenant is None:
                cur.execute(f"SELECT count(*) FROM {self.table}")
            else:
                cur.execute(f"SELECT count(*) FROM {self.table} WHERE tenant = %s", (tenant,))
            row = cur.fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _scope(principal: Principal, filters: SearchFilters) -> tuple[str, list[Any]] | None:
        # the principal's ACL always holds the open token, so it matches about every open row of every tenant:
        # as ``IS TRUE`` no index serves it (ANDing the ACL index's bitmap of half the table with the tenant's
        # took 360 ms of a 3k-row tenant's 420 ms exact scan at 1M rows); it filters the tenant's rows instead
        clauses = ["tenant = %s", "(acl && %s::text[]) IS TRUE"]
        params: list[Any] = [principal.tenant, _s.principal_tokens(principal)]
        if filters.groups is not None:
            clauses.append("acl && %s::text[]")
            params.append(list(filters.groups))
        if filters.languages is not None:
            clauses.append("language = ANY(%s::text[])")
            params.append(list(filters.languages))
        ts = filters.updated_after_ts()
        if ts is not None:
            clauses.append("updated_at >= %s")
            params.append(ts)
        if filters.source_ids is not None:
            clauses.append("source_id = ANY(%s::text[])")
            params.append(list(filters.source_ids))
        return " AND ".join(clauses), params

    def _ranked(self, scope: Any, principal: Principal, terms: list[str], qv: FloatVector, n: int, k: int) -> list[Hit]:
        """Both ranked queries, with authorization and filters as their ``WHERE`` (``scope``)."""
        where, params = scope
        recs: dict[str, ChunkRecord] = {}
        lexical: list[tuple[str, float]] = []
        with self._tx() as cur:
            if terms:
                tsq = " | ".join(f"'{t}'" for t in terms if "'" not in t)
                cur.execute(
                    f"SELECT {_COLS}, ts_rank_cd(tsv, q) AS s FROM {self.table}, to_tsquery('english', %s) q "
                    f"WHERE tsv @@ q AND {where} ORDER BY s DESC, id LIMIT %s",
                    [tsq, *params, n],
                    binary=True,  # vectors as bytes: parsing 384 floats from text cost 0.5 ms a row
                )
                for row in cur.fetchall():
                    r = self._record(row[:-1])
                    recs[r.id] = r
                    lexical.append((r.id, float(row[-1])))
            self._vector_query(cur, where, params, qv, n)
            vector: list[tuple[str, float]] = []
            for row in cur.fetchall():
                r = self._record(row[:-1])
                recs[r.id] = r
                vector.append((r.id, float(row[-1])))
        fused = _s.rrf_fuse(lexical, vector, k=k)
        return [
            Hit(record=recs[cid], fused=score, bm25_rank=lr, vector_rank=vr, bm25=ls, similarity=sim)
            for cid, score, lr, vr, ls, sim in fused
        ]

    # -- the vector query's plan ---------------------------------------------------------------------------
    def vector_plan(self, principal: Principal, filters: SearchFilters | None = None, *, k: int = 30) -> VectorPlan:
        """How a top-``k`` search by ``principal`` under ``filters`` would run its vector query (exact scan or
        HNSW, with the estimate and settings behind the choice); ``None`` scope (nothing readable): exact."""
        scope = self._scope(principal, filters or SearchFilters())
        if scope is None:
            return VectorPlan("exact", 0)
        where, params = scope
        with self._tx() as cur:
            return self._plan(cur, where, params, min(2 * k, k + 50))

    def _estimate(self, cur: Any, where: str, params: list[Any]) -> tuple[int, int, float]:
        """PostgreSQL's estimates (its statistics; no rows are read): the rows ``where`` leaves, the rows its best
        indexed scan reads to find them (a bitmap scan: the rows its indexes match; with no index to use, the
        table), and the table's rows. ``-1``: no estimate."""
        # the plan through the filter columns' indexes as a bitmap scan, whose index nodes say how many rows they
        # match (a sequential scan, which the planner picks on a small table, would count every row as read)
        cur.execute(
            "SELECT reltuples, " + ", ".join(f"current_setting('{name}')" for name in _NOT_BITMAP) + " FROM pg_class "
            "WHERE oid = %s::regclass",
            (self.table,),
        )
        got = cur.fetchone()
        total = float(got[0]) if got and got[0] is not None else -1.0
        _set_local(cur, dict.fromkeys(_NOT_BITMAP, "off"))
        cur.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {self.table} WHERE {where}", params)
        row = cur.fetchone()
        _set_local(cur, dict(zip(_NOT_BITMAP, got[1:], strict=True)) if got else dict.fromkeys(_NOT_BITMAP, "on"))
        try:
            node = (json.loads(row[0]) if isinstance(row[0], str) else row[0])[0]["Plan"]
            rows = int(node["Plan Rows"])
        except (TypeError, KeyError, IndexError, ValueError):
            return -1, -1, total
        while node.get("Node Type") not in _SCANS and node.get("Plans"):
            node = node["Plans"][0]
        if node.get("Node Type") == "Bitmap Heap Scan" and node.get("Plans"):
            read = _matched(node["Plans"][0], total)
        elif node.get("Node Type") == "Seq Scan":
            read = max(int(total), rows)
        else:
            read = rows
        return rows, max(read, rows), max(total, float(rows))

    def _plan(self, cur: Any, where: str, params: list[Any], n: int) -> VectorPlan:
        if not self.hnsw:
            return VectorPlan("exact", -1)
        rows, read, total = self._estimate(cur, where, params)
        if 0 <= read <= self.exact_rows:
            return VectorPlan("exact", rows, read)
        share = min(1.0, max(rows, 1) / total) if rows > 0 and total > 0 else 1.0
        # about n / share tuples hold n matching rows: the first candidate list should (at 1M rows, a quarter of
        # the candidates that held n matches left recall at 0.81; the iterative scan's later batches miss more),
        # and the scan's budget grows with it
        ef = min(1000, max(self.ef_search, n, round(n / share)))
        scan = max(_MAX_SCAN_TUPLES, round(20 * n / share))
        iterative = (
            {"hnsw.iterative_scan": "relaxed_order", "hnsw.max_scan_tuples": str(scan)}
            if self._iterative_scans(cur)
            else {}  # pgvector before 0.8: the settings do not exist (setting one is an error); the candidate list only
        )
        return VectorPlan(
            "hnsw",
            rows,
            read,
            {
                **iterative,
                "hnsw.ef_search": str(ef),
                # the plan is the graph, not a sort of every row the filter leaves (read by a sequential, bitmap
                # or btree scan), which the planner may price lower on a small table or under a skewed estimate
                "enable_seqscan": "off",
                "enable_bitmapscan": "off",
                "enable_sort": "off",
            },
        )

    def _iterative_scans(self, cur: Any) -> bool:
        """Whether the server's pgvector has iterative index scans (0.8 and later); read once per store."""
        if self._iterative is None:
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cur.fetchone()
            self._iterative = bool(row) and _version_at_least(str(row[0]), (0, 8))
        return self._iterative

    def _vector_query(self, cur: Any, where: str, params: list[Any], qv: FloatVector, n: int) -> VectorPlan:
        """Run the vector list's query on ``cur`` (its rows: the columns and the similarity) as planned."""
        plan = self._plan(cur, where, params, n)
        if plan.kind == "hnsw":
            _set_local(cur, plan.settings)
            # ordered by distance alone, so the index serves it; iterative scanning keeps filling past rows
            # the WHERE rejects; the rows found are then ordered exactly (relaxed_order may swap neighbours)
            cur.execute(
                f"WITH c AS MATERIALIZED (SELECT {_COLS}, embedding <=> %s AS d FROM {self.table} "
                f"WHERE {where} ORDER BY embedding <=> %s LIMIT %s) "
                f"SELECT {_COLS}, 1 - d AS sim FROM c ORDER BY d, id",
                [qv, *params, qv, n],
                binary=True,
            )
        else:
            # the distance is ordered outside a fenced subquery (OFFSET 0), so the planner reads the filtered rows
            # through the filter columns' indexes and never the HNSW graph; only the top n rows are then fetched
            cols = ", ".join(f"t.{c.strip()}" for c in _COLS.split(","))
            cur.execute(
                f"WITH top AS (SELECT id, d FROM (SELECT id, embedding <=> %s AS d FROM {self.table} "
                f"WHERE {where} OFFSET 0) s ORDER BY d, id LIMIT %s) "
                f"SELECT {cols}, 1 - top.d AS sim FROM top JOIN {self.table} t ON t.tenant = %s AND t.id = top.id "
                "ORDER BY top.d, top.id",
                [qv, *params, n, params[0]],
                binary=True,
            )
        return plan

    def _version_records(self, scope: Any, principal: Principal, asked: list[str], n: int) -> list[ChunkRecord]:
        """Readable rows whose title or text holds one of the releases as a substring (``strpos``, no pattern
        syntax), those with it in the title first, inside the principal's ``WHERE`` (checked by the caller)."""
        where, params = scope
        lowered = [v.lower() for v in asked if v]
        if not lowered:
            return []
        in_title = " OR ".join(["strpos(lower(title), %s) > 0"] * len(lowered))
        in_text = " OR ".join(["strpos(lower(text), %s) > 0"] * len(lowered))
        with self._tx() as cur:
            cur.execute(
                f"SELECT {_COLS} FROM {self.table} WHERE ({in_title} OR {in_text}) AND {where} "
                f"ORDER BY ({in_title}) DESC, source_id, ordinal, id LIMIT %s",
                [*lowered, *lowered, *params, *lowered, n],
            )
            return [self._record(row) for row in cur.fetchall()]


_DIGITS = _linear.simple(r"\d+")


def _version_at_least(version: str, least: tuple[int, ...]) -> bool:
    """Whether an extension's version (``0.8.0``, ``0.7.4``, ``1.0.0-dev``) is at least ``least``."""
    return tuple(int(x) for x in _DIGITS.findall(version))[: len(least)] >= least


def _set_local(cur: Any, settings: dict[str, str]) -> None:
    """``SET LOCAL`` each setting (this transaction only), in one round trip."""
    if settings:
        calls = ", ".join(["set_config(%s, %s, true)"] * len(settings))
        cur.execute(f"SELECT {calls}", [x for kv in settings.items() for x in kv])


def _matched(node: dict[str, Any], total: float) -> int:
    """The rows a bitmap plan's index nodes match, of ``total``: a ``BitmapAnd`` (whose own estimate is 0) the
    product of its inputs' shares (the planner's independence), a ``BitmapOr`` the sum of its inputs'."""
    kids = [_matched(k, total) for k in node.get("Plans") or ()]
    kind = node.get("Node Type")
    if kind == "BitmapAnd" and kids and total > 0:
        share = 1.0
        for k in kids:
            share *= min(1.0, k / total)
        return round(share * total)
    if kind == "BitmapOr" and kids:
        return sum(kids)
    return int(node.get("Plan Rows", 0))


def from_url(url: str, *, dim: int) -> PgvectorStore:
    """``postgresql://user@host:port/db?table=admit_chunks`` (``postgres://`` too); other query keys stay in the DSN."""
    from admit.kb.urls import pg_dsn

    dsn, table = pg_dsn(url)  # query values stay encoded: one value never becomes a new parameter
    return PgvectorStore(dsn, table=table, dim=dim)


def stored_embedder(url: str) -> str | None:
    """The ``embedder_spec`` the table at ``url`` was built with, read without creating anything."""
    from admit.kb.urls import pg_dsn

    dsn, table = pg_dsn(url)
    if not _IDENT.match(table):
        return None
    try:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            exists = conn.execute("SELECT to_regclass(%s)", (f"{table}_meta",)).fetchone()
            if not exists or exists[0] is None:
                return None
            row = conn.execute(f"SELECT value FROM {table}_meta WHERE key = 'embedder_spec'").fetchone()
    except ImportError as exc:
        raise MissingExtraError("psycopg / pgvector", "pgvector") from exc
    except Exception as exc:
        raise StoreError(f"Cannot read the knowledge base's settings from PostgreSQL: {exc}") from exc
    return None if row is None else str(row[0])


SPEC = StoreSpec(
    schemes=("postgresql", "postgres"),
    open=from_url,
    stored_embedder=stored_embedder,
    summary="PostgreSQL with pgvector (and an HNSW index when the table has one)",
)
"""This store in the store catalogue (:mod:`admit.kb.stores`)."""

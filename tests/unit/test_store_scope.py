"""The public scope helper of stores without a query language (:class:`ReadFilter`, :func:`visible`) and the
store catalogue's :class:`StoreSpec`."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from admit.errors import ConfigError
from admit.kb.memory_store import MemoryStore
from admit.kb.store import ChunkRecord, ReadFilter, SearchFilters, StoreSpec, visible
from admit.kb.stores import BUILTIN_SCHEMES, store_spec
from admit.types import Access, Principal


def rec(
    *,
    tenant: str | None = "acme",
    groups: tuple[str, ...] = (),
    language: str | None = "en",
    updated: datetime | None = None,
    source: str = "s1",
) -> ChunkRecord:
    return ChunkRecord(
        id=f"{source}#1",
        source_id=source,
        text="x",
        embedding=np.zeros(4, np.float32),
        text_hash="h",
        access=None if tenant is None else Access(tenant=tenant, groups=groups),
        language=language,
        updated_at=updated,
    )


SUPPORT = Principal(tenant="acme", groups=("support",))


def test_the_principal_reads_its_tenant_and_its_groups_only() -> None:
    assert visible(rec(), Principal(tenant="acme"))  # no group on the chunk: the whole tenant
    assert visible(rec(groups=("support",)), SUPPORT)
    assert not visible(rec(groups=("support",)), Principal(tenant="acme"))
    assert not visible(rec(groups=("support",)), Principal(tenant="globex", groups=("support",)))
    assert not visible(rec(tenant=None), SUPPORT)  # no access label: never
    assert not visible(rec(), Principal(tenant=""))
    assert not visible(rec(groups=("*",)), Principal(tenant="acme"))  # a group named "*" is a group


def test_each_filter_narrows() -> None:
    jan, mar = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)
    flt = ReadFilter.of(
        SUPPORT,
        SearchFilters(languages=("en",), updated_after=datetime(2026, 2, 1), groups=("support",), source_ids=("s1",)),
    )
    assert flt.matches(rec(groups=("support",), updated=mar))
    assert not flt.matches(rec(groups=("support",), updated=jan))
    assert not flt.matches(rec(groups=("support",)))  # no time: not known to be after
    assert not flt.matches(rec(groups=("support",), updated=mar, language="de"))
    assert not flt.matches(rec(groups=("support",), updated=mar, source="s2"))
    assert not flt.matches(rec(updated=mar))  # the group filter asks for a labelled group


def test_an_empty_filter_matches_nothing_and_the_store_is_not_asked() -> None:
    assert SearchFilters(source_ids=()).matches_nothing() and SearchFilters(groups=()).matches_nothing()
    assert not SearchFilters().matches_nothing() and not SearchFilters(languages=("en",)).matches_nothing()
    store = MemoryStore(dim=4)
    store.upsert([rec()])
    q = np.ones(4, np.float32)
    assert store.search("x", q, principal=SUPPORT, k=3)
    assert store.search("x", q, principal=SUPPORT, k=3, filters=SearchFilters(languages=())) == []


def test_every_builtin_scheme_has_a_spec_that_names_it() -> None:
    for scheme in BUILTIN_SCHEMES:
        spec = store_spec(scheme)
        assert isinstance(spec, StoreSpec) and scheme in spec.schemes and spec.summary
        assert spec.stored_embedder is not None
    assert store_spec("QDRANT") is store_spec("qdrant")
    with pytest.raises(ConfigError, match="No store opens nope://"):
        store_spec("nope")


def test_a_spec_checks_its_facts() -> None:
    with pytest.raises(ConfigError, match="lower-case"):
        StoreSpec(schemes=("Mine",), open=lambda url, *, dim: MemoryStore(dim=dim))
    with pytest.raises(ConfigError, match="lower-case"):
        StoreSpec(schemes=(), open=lambda url, *, dim: MemoryStore(dim=dim))
    with pytest.raises(ConfigError, match="open must be callable"):
        StoreSpec(schemes=("mine",), open="nope")  # type: ignore[arg-type]

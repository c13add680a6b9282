"""The service's one boundary (:class:`admit.service.core.Service`): its three operations, who they answer for,
where ``read`` and ``reply`` run, and a search's single resolution."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

pytest.importorskip("fastapi")

from admit.errors import AuthorizationError
from admit.kb import KnowledgeBase
from admit.pipeline import PackRequest
from admit.service.config import ServiceSettings
from admit.service.core import Caller, PruneQuery, SearchQuery, Service
from admit.service.state import build_state
from admit.types import Access, Chunk, PackResult, Principal

ACME = Access(tenant="acme")
CHUNKS = [
    Chunk(id="e4012", source_id="errors", title="E4012", text="Error E4012: set audit.sink.tls=true.", access=ACME),
    Chunk(id="sink", source_id="config", title="Sink", text="The audit sink lives under audit.sink.", access=ACME),
]


def _kb() -> KnowledgeBase:
    kb = KnowledgeBase("memory://", embedder="fake:16")
    kb.add_chunks(CHUNKS)
    return kb


def test_a_search_or_a_pack_without_a_principal_is_refused_before_any_work() -> None:
    service = Service(build_state(ServiceSettings(), kb=_kb()))
    read_calls: list[str] = []

    def read() -> SearchQuery:
        read_calls.append("read")
        return SearchQuery(question="How do I fix E4012?")

    with pytest.raises(AuthorizationError):
        anyio.run(service.search, Caller(None), read, lambda _q, r: r)
    with pytest.raises(AuthorizationError):
        anyio.run(service.pack, Caller(None), lambda: PackRequest(question="q", principal=None), lambda _q, r: r)
    assert read_calls == []


def test_a_pack_answers_for_the_callers_principal_not_the_one_its_request_carries() -> None:
    service = Service(build_state(ServiceSettings()))
    forged = PackRequest(question="How do I fix E4012?", principal=Principal(tenant="globex"), candidates=CHUNKS)
    res: PackResult = anyio.run(service.pack, Caller(Principal(tenant="acme")), lambda: forged, lambda _q, r: r)
    assert set(res.admitted_ids) == {"e4012", "sink"}  # read as acme: globex could read neither
    as_globex = anyio.run(service.pack, Caller(Principal(tenant="globex")), lambda: forged, lambda _q, r: r)
    assert as_globex.admitted_ids == []


def test_read_and_reply_run_in_the_worker_and_reply_gets_the_query_read_built() -> None:
    service = Service(build_state(ServiceSettings()))
    threads: dict[str, int] = {}
    query = PruneQuery(question="How do I fix E4012?", candidates=CHUNKS, strategy="top_n")

    def read() -> PruneQuery:
        threads["read"] = threading.get_ident()
        return query

    def reply(got: PruneQuery, answer: Any) -> tuple[PruneQuery, list[str]]:
        threads["reply"] = threading.get_ident()
        return got, list(answer.run.kept_ids)

    async def call() -> tuple[PruneQuery, list[str]]:
        threads["loop"] = threading.get_ident()
        return await service.prune(Caller(None), read, reply)

    got, kept = anyio.run(call)
    assert got is query and kept and set(kept) <= {"e4012", "sink"}
    assert threads["read"] == threads["reply"] != threads["loop"]


def test_a_search_resolves_on_the_services_pipeline_never_through_the_knowledge_base(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb = _kb()

    def crossing(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the search resolved its settings through the knowledge base")

    monkeypatch.setattr(KnowledgeBase, "resolve", staticmethod(crossing))
    service = Service(build_state(ServiceSettings(), kb=kb))
    query = SearchQuery(question="How do I fix E4012?", prune=False)
    res = anyio.run(service.search, Caller(Principal(tenant="acme")), lambda: query, lambda _q, r: r)
    assert "e4012" in res.admitted_ids and res.trace["pruner"] is None

"""One search path: the service resolves a search once, the real knowledge base (over the shipped ``memory://``
store, the real MiniLM) retrieves once for that resolution, and a shadow policy packs the same candidates."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("fastapi")

from admit.kb import KnowledgeBase
from admit.pipeline import Pipeline
from admit.service.config import settings_from_dict
from admit.service.core import Caller, SearchQuery, Service
from admit.service.state import build_state
from admit.types import Access, Chunk, Principal

A = Access(tenant="acme")
CORPUS = [
    Chunk(id="e4012", source_id="errors", title="E4012", text="Error E4012: set audit.sink.tls=true.", access=A),
    Chunk(id="sink", source_id="config", title="Sink", text="The audit sink lives under audit.sink.", access=A),
    Chunk(id="picnic", source_id="blog", title="Picnic", text="The picnic is on Friday.", access=A),
]


class CountingKB(KnowledgeBase):
    """The real knowledge base, counting its store searches."""

    searches = 0

    def hits(self, *args: Any, **kwargs: Any) -> Any:
        type(self).searches += 1
        return super().hits(*args, **kwargs)


def _state(tmp: Path, kb: KnowledgeBase) -> Any:
    shadow = resources.files("admit.policies").joinpath("default.toml").read_text("utf-8")
    shadow = shadow.replace('[defaults.prune]\nstrategy = "none"', '[defaults.prune]\nstrategy = "top_n"\nn = 1')
    (tmp / "shadow.toml").write_text(shadow, "utf-8")
    cfg = {"service": {"prune_strategy": "top_n", "shadow_policy": str(tmp / "shadow.toml")}}
    return build_state(settings_from_dict(cfg, base_dir=tmp), kb=kb)


def test_a_search_resolves_once_retrieves_once_and_the_shadow_reuses_the_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = CountingKB("memory://")
    kb.add_chunks(CORPUS)
    state = _state(tmp_path, kb)
    resolves: list[str] = []
    real = Pipeline.resolve

    def counting(self: Pipeline, *a: Any, **k: Any) -> Any:
        resolves.append("shadow" if self is state.shadow else "current")
        return real(self, *a, **k)

    monkeypatch.setattr(Pipeline, "resolve", counting)
    CountingKB.searches = 0
    query = SearchQuery(question="How do I fix E4012?", prune=True)
    res = anyio.run(Service(state).search, Caller(Principal(tenant="acme")), lambda: query, lambda _q, r: r)
    assert CountingKB.searches == 1  # the shadow packed the same candidates: no second store query
    assert resolves == ["current", "shadow"]  # once for the request; the shadow resolves its own policies
    metrics = state.metrics.render().decode()
    assert 'admit_shadow_runs_total{outcome="same"} 1.0' in metrics or (
        'admit_shadow_runs_total{outcome="differs"} 1.0' in metrics
    )
    assert res.trace["pruner"] is not None and res.trace["pruner"]["strategy"] == "top_n"  # prune=true: the service's
    assert res.trace["retrieval"]["store"] == "MemoryStore"
    assert "e4012" in res.admitted_ids


def test_prune_false_and_the_policy_default() -> None:
    kb = KnowledgeBase("memory://")
    kb.add_chunks(CORPUS)
    p = Principal(tenant="acme")
    off = kb.search("How do I fix E4012?", p, prune=False)
    assert off.trace["pruner"] is None
    assert off.trace["route"]["policy_version"]
    assert {d.chunk_id for d in off.decisions} == {"e4012", "sink", "picnic"}
    assert kb.search("How do I fix E4012?", Principal(tenant="other")).admitted == ()


def test_every_store_reports_its_own_embedder(tmp_path: Path) -> None:
    path = tmp_path / "kb.sqlite"
    with KnowledgeBase(path, embedder="fake:16") as built:
        built.add_chunks(CORPUS)
    with KnowledgeBase(path) as reopened:  # nothing named: the file says which embedder built it
        assert reopened.embedder.dim == 16 and reopened.embedder_spec == "fake:16"
    shared = KnowledgeBase("memory://embedder-report", embedder="fake:16")
    shared.add_chunks(CORPUS)
    again = KnowledgeBase("memory://embedder-report")
    assert again.embedder_spec == "fake:16" and again.count() == 3
    given = KnowledgeBase("label", store=shared.store)
    assert given.embedder_spec == "fake:16"

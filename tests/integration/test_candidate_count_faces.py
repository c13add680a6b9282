"""One default candidate count on every face (issue 46, item 3): the library, ``admit search``, HTTP ``/v1/search``
and the MCP tool retrieve the routed policy's ``candidate_count`` (:data:`admit.policy.DEFAULT_CANDIDATE_COUNT`)
when the request names none. HTTP used to retrieve 8 and the CLI 30: the same question got different evidence."""

from __future__ import annotations

import inspect
from pathlib import Path

import anyio
import pytest

pytest.importorskip("fastapi")

from admit.cli.search import search_cmd
from admit.kb import KnowledgeBase
from admit.policy import DEFAULT_CANDIDATE_COUNT, Policy
from admit.service.config import settings_from_dict
from admit.service.core import Caller, SearchQuery, Service
from admit.service.schemas import SearchBody
from admit.service.state import build_state
from admit.types import Access, Chunk, Principal

A = Access(tenant="acme")
CORPUS = [
    Chunk(id=f"c{i}", source_id=f"s{i}", title=f"Setting {i}", text=f"Setting HL_{i} controls part {i}.", access=A)
    for i in range(40)
]


def test_the_default_is_defined_once_and_every_face_reads_it() -> None:
    assert Policy(name="x").candidate_count == DEFAULT_CANDIDATE_COUNT == 30
    assert inspect.signature(KnowledgeBase.hits).parameters["k"].default == DEFAULT_CANDIDATE_COUNT
    assert inspect.signature(KnowledgeBase.retrieve).parameters["k"].default == DEFAULT_CANDIDATE_COUNT
    assert SearchBody(question="q").query().top_k is None  # the policy's
    assert settings_from_dict({}).mcp.top_k is None  # the policy's
    k_opt = next(p for p in search_cmd.params if p.name == "candidates")
    assert k_opt.default is None  # the policy's


def test_http_and_library_retrieve_the_same_number_of_candidates(tmp_path: Path) -> None:
    kb = KnowledgeBase("memory://")
    kb.add_chunks(CORPUS)
    who = Principal(tenant="acme")
    lib = kb.search("Which setting controls part 7?", who, prune=False)
    state = build_state(settings_from_dict({}, base_dir=tmp_path), kb=kb)
    body = SearchBody.model_validate({"question": "Which setting controls part 7?"})
    http = anyio.run(Service(state).search, Caller(who), body.query, lambda _q, r: r)
    mcp_query = SearchQuery(question="Which setting controls part 7?", top_k=state.settings.mcp.top_k, prune=True)
    mcp = anyio.run(Service(state).search, Caller(who), lambda: mcp_query, lambda _q, r: r)
    ks = [r.trace["retrieval"]["k"] for r in (lib, http, mcp)]
    assert ks == [DEFAULT_CANDIDATE_COUNT] * 3
    assert [r.trace["retrieval"]["returned"] for r in (lib, http, mcp)] == [DEFAULT_CANDIDATE_COUNT] * 3

"""Trace records written by the HTTP service (pack, search, shadow, logged requests, /v1/prune) and by the MCP
server (streamable-http) match ``schemas/trace.schema.json``: real servers on loopback ports."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

from admit.service.config import settings_from_dict
from admit.service.http import create_app
from admit.service.loopback import LoopbackServer
from admit.service.mcp import build_mcp_server, mcp_http_app
from admit.service.state import build_state
from admit.testing.kb import memory_kb
from admit.trace import MemorySink
from admit.types import Access, Chunk
from tests.trace_schema_check import check_record

pytestmark = pytest.mark.integration

KEY = "trace-key-0123456789"
ENV = {"ADMIT_TRACE_TEST_KEY": KEY}
H = {"X-API-Key": KEY}
A = Access(tenant="acme")
CORPUS = [
    Chunk(id="e4012", source_id="errors", title="E4012", text="Error E4012: set audit.sink.tls=true.", access=A),
    Chunk(id="sink", source_id="config", title="Sink", text="The audit sink lives under audit.sink.", access=A),
    Chunk(id="picnic", source_id="blog", title="Picnic", text="The picnic is on Friday.", access=A),
]

PRUNE_KEYS = {
    "strategy", "kept_ids", "dropped_ids", "decisions", "fallback", "error", "usage", "notes", "answerable",
    "answerability", "answer_state",
}  # fmt: skip
"""The one prune answer (PruneRun.as_dict): /v1/prune, MCP prune_context and admit prune's lines."""


def test_admit_prune_lines_are_the_same_answer(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from admit.cli import main

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rec = {"id": "r1", "question": "E4012", "candidates": [{"id": c.id, "text": c.text} for c in CORPUS]}
    src.write_text(json.dumps(rec) + "\n", "utf-8")
    res = CliRunner().invoke(main, ["prune", "--input", str(src), "--output", str(out), "--prune", "top_n"])
    assert res.exit_code == 0, res.output
    (row,) = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert set(row) == {*PRUNE_KEYS, "id", "kept", "latency_s"}


def _settings(tmp: Path, **service: Any) -> Any:
    shadow = resources.files("admit.policies").joinpath("default.toml").read_text("utf-8")
    shadow = shadow.replace('[defaults.prune]\nstrategy = "none"', '[defaults.prune]\nstrategy = "top_n"\nn = 1')
    (tmp / "shadow.toml").write_text(shadow, "utf-8")
    base: dict[str, Any] = {
        "keys": {"acme": {"key_env": "ADMIT_TRACE_TEST_KEY", "tenant": "acme"}},
        "prune_strategy": "top_n",
        "trace_file": str(tmp / "trace.jsonl"),
        "trace_requests": True,
        "shadow_policy": str(tmp / "shadow.toml"),
        **service,
    }
    return settings_from_dict({"service": base}, base_dir=tmp)


def test_http_records_match_the_schema(tmp_path: Path) -> None:
    pack = {
        "question": "How do I fix E4012?",
        "candidates": [
            {"id": c.id, "source_id": c.source_id, "text": c.text, "access": {"tenant": "acme"}} for c in CORPUS
        ],
        "prune": "top_n",
    }
    app = create_app(_settings(tmp_path), kb=memory_kb(CORPUS), environ=ENV)
    with LoopbackServer(app) as srv:
        assert httpx.post(f"{srv.url}/v1/pack", json=pack, headers=H, timeout=60).status_code == 200
        s = httpx.post(f"{srv.url}/v1/search", json={"question": "E4012", "prune": True}, headers=H, timeout=60)
        assert s.status_code == 200
        body = {"question": "E4012", "candidates": [{"id": c.id, "text": c.text} for c in CORPUS]}
        p = httpx.post(f"{srv.url}/v1/prune", json=body, headers=H, timeout=60)
        assert p.status_code == 200
    assert set(p.json()) == {*PRUNE_KEYS, "trace"}
    assert len(s.json()["decisions"]) == s.json()["trace"]["candidate_count"]  # /v1/search: every candidate's fate
    assert s.json()["trace"]["tools"] == []  # and the tool summary, as the MCP tool gives
    check_record(p.json()["trace"])  # the prune record: the same type, the same latency shape
    assert set(p.json()["trace"]["latency_ms"]) == {"prune", "total"}
    # /v1/search: the same shape, the knowledge base's retrieval stages inside it and inside its total
    search_ms = s.json()["trace"]["latency_ms"]
    assert {"embed_query", "retrieve", "rerank", "pack", "total"} <= set(search_ms), search_ms
    assert search_ms["total"] >= search_ms["embed_query"] + search_ms["retrieve"]
    lines = [json.loads(x) for x in (tmp_path / "trace.jsonl").read_text("utf-8").splitlines()]
    assert {"request" in rec for rec in lines if not rec.get("shadow")} == {True}
    assert any(rec.get("shadow") for rec in lines)
    for rec in lines:
        check_record(rec)


def test_mcp_records_match_the_schema(tmp_path: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    settings = _settings(tmp_path, trace_file=None, trace_requests=False, shadow_policy=None)
    sink = MemorySink()
    kb = memory_kb(CORPUS)
    state = build_state(settings, kb=kb, environ=ENV, sink=sink)
    state.warm_up()
    server = build_mcp_server(settings, kb=kb, state=state, transport="streamable-http")

    async def main(url: str) -> Any:
        with anyio.fail_after(120):
            async with (
                create_mcp_http_client(headers=H) as client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                search = await session.call_tool("search_knowledge_base", {"question": "How do I fix E4012?"})
                chunks = [{"id": c.id, "text": c.text} for c in CORPUS]
                pruned = await session.call_tool("prune_context", {"question": "E4012", "chunks": chunks})
                return search, pruned

    with LoopbackServer(mcp_http_app(server), ready_path=None) as srv:
        result, pruned = anyio.run(main, f"{srv.url}/mcp")
    assert not result.is_error, result.content
    assert len(sink.records) == 1
    check_record(sink.records[0])
    # prune_context answers as POST /v1/prune does (the same keys, plus the kept chunks), its trace the prune record
    assert not pruned.is_error, pruned.content
    answer = pruned.structured_content
    assert set(answer) == {*PRUNE_KEYS, "trace", "kept"}
    check_record(answer["trace"])
    assert set(answer["trace"]["latency_ms"]) == {"prune", "total"}
    # the search answer carries a decision per candidate and the tool summary, as /v1/search does
    evidence = result.structured_content
    assert len(evidence["decisions"]) == sink.records[0]["candidate_count"]
    assert evidence["trace"]["tools"] == []

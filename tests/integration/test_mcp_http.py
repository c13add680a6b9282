"""``admit mcp --transport streamable-http``: a real uvicorn server on a loopback port, driven by the SDK's client.

Every request needs an API key mapped to a principal (as ``/v1`` does), and the tools share the service's
limits and deadline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from admit.errors import ConfigError
from admit.prune.fake import FakeGrader
from admit.service.config import settings_from_dict
from admit.service.loopback import LoopbackServer
from admit.service.mcp import build_mcp_server, mcp_http_app
from admit.service.state import build_state
from admit.testing.kb import memory_kb
from admit.types import Access, Chunk

pytestmark = pytest.mark.integration

ACME_KEY = "mcp-acme-key-0123456789"
GLOBEX_KEY = "mcp-globex-key-9876543210"
ENV = {"ADMIT_MCP_ACME": ACME_KEY, "ADMIT_MCP_GLOBEX": GLOBEX_KEY}

CORPUS = [
    Chunk(
        id="acme#e4012",
        source_id="acme-docs",
        title="Audit export errors",
        text="Error E4012 means the audit log export sink rejected the request; set audit.sink.tls=true.",
        access=Access(tenant="acme"),
    ),
    Chunk(
        id="globex#audit",
        source_id="globex-docs",
        title="Globex audit",
        text="Globex audit log export uses the legacy exporter on port 9000.",
        access=Access(tenant="globex"),
    ),
]


def _settings(**limits: Any) -> Any:
    return settings_from_dict(
        {
            "service": {
                "keys": {
                    "acme": {"key_env": "ADMIT_MCP_ACME", "tenant": "acme"},
                    "globex": {"key_env": "ADMIT_MCP_GLOBEX", "tenant": "globex"},
                },
                "prune_strategy": "top_n",
                "limits": {
                    "max_top_k": 10,
                    "max_candidates": 5,
                    "max_text_chars": 1000,
                    "request_timeout_s": 20,
                    **limits,
                },
            }
        }
    )


def _serve(settings: Any, **state_kw: Any) -> LoopbackServer:
    kb = memory_kb(CORPUS)
    state = build_state(settings, kb=kb, environ=ENV, **state_kw)
    state.warm_up()
    server = build_mcp_server(settings, kb=kb, state=state, transport="streamable-http")
    return LoopbackServer(mcp_http_app(server), ready_path=None)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with _serve(_settings()) as srv:
        yield f"{srv.url}/mcp"


def _call(url: str, key: str | None, fn: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        headers = {"X-API-Key": key} if key else None
        with anyio.fail_after(60):
            async with (
                create_mcp_http_client(headers=headers) as client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await fn(session)

    return anyio.run(main)


def _structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return json.loads(result.content[0].text)  # type: ignore[no-any-return]


_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize("headers", [{}, {"X-API-Key": "guess"}, {"Authorization": "Bearer guess"}])
def test_no_valid_key_no_answer(url: str, headers: dict[str, str]) -> None:
    r = httpx.post(url, json=_INIT, headers={**_ACCEPT, **headers}, timeout=120)
    assert r.status_code == 401
    assert r.json()["error"] == "unauthorized"
    assert "guess" not in r.text


def test_the_key_names_the_principal(url: str) -> None:
    async def script(s: ClientSession) -> Any:
        return await s.call_tool("search_knowledge_base", {"question": "audit log export", "prune": False})

    acme = _structured(_call(url, ACME_KEY, script))
    globex = _structured(_call(url, GLOBEX_KEY, script))
    assert acme["citations"] == ["acme#e4012"]
    assert globex["citations"] == ["globex#audit"]


def test_tools_are_held_to_the_service_limits(url: str) -> None:
    async def script(s: ClientSession) -> Any:
        big_k = await s.call_tool("search_knowledge_base", {"question": "audit", "top_k": 1000})
        many = await s.call_tool("prune_context", {"question": "audit", "chunks": [f"chunk {i}" for i in range(6)]})
        long = await s.call_tool("prune_context", {"question": "q" * 2000, "chunks": ["a"]})
        return big_k, many, long

    big_k, many, long = _call(url, ACME_KEY, script)
    assert big_k.is_error and "max_top_k=10" in big_k.content[0].text
    assert many.is_error and "max_candidates=5" in many.content[0].text
    assert long.is_error and "max_text_chars=1000" in long.content[0].text


def test_tools_share_the_request_deadline() -> None:
    def slow(question: str, chunk: Chunk) -> int:
        time.sleep(1.5)
        return 5

    with _serve(_settings(request_timeout_s=0.3), pruner=FakeGrader(fn=slow)) as srv:

        async def script(s: ClientSession) -> Any:
            return await s.call_tool("prune_context", {"question": "audit", "chunks": ["a", "b"]})

        res = _call(f"{srv.url}/mcp", ACME_KEY, script)
    assert res.is_error
    assert "request_timeout_s=0.3" in res.content[0].text


def test_streamable_http_without_keys_is_refused() -> None:
    settings = settings_from_dict({"service": {}})
    with pytest.raises(ConfigError, match=r"needs API keys"):
        build_mcp_server(settings, kb=memory_kb(CORPUS), transport="streamable-http")


def test_the_cli_refuses_streamable_http_without_keys(tmp_path: Path) -> None:
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-c", "from admit.cli import main; main()", "mcp", "--transport", "streamable-http"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 2, r.stderr[-1000:]
    assert "needs API keys" in r.stderr

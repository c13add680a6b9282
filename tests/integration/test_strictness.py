"""One strictness on every surface: a misspelled setting and a bad argument give the same one-line message and the
same error kind in the library, the CLI (exit 2, one line), HTTP (4xx JSON with ``kind``), MCP (a tool error with
the same text, no traceback) and the three adapters (at construction and on assignment). Real servers on loopback
ports; the MCP client is the SDK's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

from admit.cli import main
from admit.errors import ConfigError, RequestError
from admit.pipeline import Pipeline
from admit.service.config import settings_from_dict
from admit.service.http import create_app
from admit.service.loopback import LoopbackServer
from admit.service.mcp import build_mcp_server, mcp_http_app
from admit.service.state import build_state
from admit.testing.kb import memory_kb
from admit.types import Access, Chunk

pytestmark = pytest.mark.integration

KEY = "strict-key-0123456789"
ENV = {"ADMIT_STRICT_KEY": KEY}
H = {"X-API-Key": KEY}
CHUNKS = [{"id": "a", "text": "The port is 8080."}, {"id": "b", "text": "The picnic is on Friday."}]
TWICE = [{"id": "a", "text": "The port is 8080."}, {"id": "a", "text": "Another text."}]


def _settings() -> Any:
    keys = {"k": {"key_env": "ADMIT_STRICT_KEY", "tenant": "acme"}}
    return settings_from_dict({"service": {"keys": keys, "prune_strategy": "top_n"}})


def _library_message(overrides: dict[str, Any], chunks: list[dict[str, str]]) -> tuple[str, str]:
    with pytest.raises(RequestError) as err:
        Pipeline().prune(
            "What port?",
            [Chunk(id=c["id"], source_id=c["id"], text=c["text"]) for c in chunks],
            Pipeline().resolve("What port?", strategy="top_n", overrides=overrides, request_id="r").prune,
        )
    return str(err.value), type(err.value).__name__


def _cli(tmp: Path, chunks: list[dict[str, str]], *opts: str) -> Any:
    f = tmp / "in.jsonl"
    f.write_text(json.dumps({"id": "r1", "question": "What port?", "candidates": chunks}) + "\n", "utf-8")
    out = tmp / "out.jsonl"
    return CliRunner().invoke(main, ["prune", "--input", str(f), "--output", str(out), "--prune", "top_n", *opts])


def test_a_usage_error_is_one_line() -> None:
    out = CliRunner().invoke(main, ["prune", "--prune", "top_n"])
    assert out.exit_code == 2
    assert out.stderr == "error: Missing option '--input'. (see `main prune --help`)\n", out.stderr


def test_a_misspelled_setting_reads_the_same_in_the_library_cli_and_http(tmp_path: Path) -> None:
    with pytest.raises(RequestError) as err:
        Pipeline().resolve("What port?", strategy="top_n", overrides={"treshold": 4}, request_id="r")
    message = str(err.value)
    assert "did you mean `threshold`?" in message and "\n" not in message
    out = _cli(tmp_path, CHUNKS, "--set", "treshold=4")
    assert out.exit_code == 2 and out.stderr == f"error: {message}\n", out.stderr
    with LoopbackServer(create_app(_settings(), kb=memory_kb([]), environ=ENV)) as srv:
        body = {"question": "What port?", "candidates": CHUNKS, "strategy": "top_n", "params": {"treshold": 4}}
        r = httpx.post(f"{srv.url}/v1/prune", json=body, headers=H, timeout=60)
    assert r.status_code == 422
    assert r.json() == {"error": "invalid_request", "kind": "RequestError", "detail": message, "field": "treshold"}


def test_a_bad_argument_reads_the_same_in_the_library_cli_http_and_mcp(tmp_path: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    message, kind = _library_message({}, TWICE)  # candidate ids repeated
    assert kind == "RequestError" and "\n" not in message
    out = _cli(tmp_path, TWICE)
    assert out.exit_code == 2 and out.stderr.endswith(f"{message}\n") and out.stderr.count("\n") == 1, out.stderr
    settings = _settings()
    kb = memory_kb([Chunk(id="d", source_id="d", text="The port is 8080.", access=Access(tenant="acme"))])
    with LoopbackServer(create_app(settings, kb=kb, environ=ENV)) as srv:
        r = httpx.post(f"{srv.url}/v1/prune", json={"question": "What port?", "candidates": TWICE}, headers=H)
    assert r.status_code == 422 and r.json()["kind"] == kind and r.json()["detail"] == message
    state = build_state(settings, kb=kb, environ=ENV)
    server = build_mcp_server(settings, kb=kb, state=state, transport="streamable-http")

    async def call(url: str) -> Any:
        with anyio.fail_after(60):
            async with (
                create_mcp_http_client(headers=H) as client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await session.call_tool("prune_context", {"question": "What port?", "chunks": TWICE})

    with LoopbackServer(mcp_http_app(server), ready_path=None) as srv:
        result = anyio.run(call, f"{srv.url}/mcp")
    assert result.is_error
    (content,) = result.content
    # the same text (after the SDK's own "Error executing tool NAME: "), one line, no traceback
    assert content.text == f"Error executing tool prune_context: {message}"


@pytest.mark.parametrize("name", ["treshold", "max_token", "topk"])
def test_the_adapters_refuse_a_misspelled_setting_at_construction_and_on_assignment(name: str) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    pytest.importorskip("haystack")
    from admit.adapters.haystack import AdmitPruner
    from admit.adapters.langchain import AdmitCompressor
    from admit.adapters.llamaindex import AdmitNodePostprocessor

    right = {"treshold": "threshold", "max_token": "max_tokens", "topk": "top_k"}[name]
    for cls in (AdmitCompressor, AdmitNodePostprocessor, AdmitPruner):
        with pytest.raises(ConfigError, match=rf"unknown setting '{name}'; did you mean '{right}'\?"):
            cls(**{name: 3})
        made = cls(strategy="top_n", params={"n": 2})
        with pytest.raises(ConfigError, match=rf"unknown setting '{name}'; did you mean '{right}'\?"):
            setattr(made, name, 3)
        setattr(made, right, 3)  # the right name still works
        assert getattr(made, right) == 3


def test_an_unknown_tenant_reads_the_same_in_the_library_the_cli_and_the_mcp_server(tmp_path: Path) -> None:
    from admit.kb import KnowledgeBase

    path = tmp_path / "kb.sqlite"
    with KnowledgeBase(path, embedder="fake:16") as kb:
        kb.add_chunks([Chunk(id="d", source_id="d", text="The port is 8080.", access=Access(tenant="acme"))])
        with pytest.raises(ConfigError) as err:
            kb.check_tenant("acmee", label=str(path))
    message = str(err.value)
    assert "Did you mean tenant:acme?" in message and "\n" not in message
    search = CliRunner().invoke(main, ["search", "What port?", "--kb", str(path), "--principal", "tenant:acmee"])
    assert search.exit_code == 2 and search.stderr == f"error: {message}\n", search.stderr
    mcp = CliRunner().invoke(main, ["mcp", "--kb", str(path), "--principal", "tenant:acmee"])
    assert mcp.exit_code == 2 and mcp.stderr == f"error: {message}\n", mcp.stderr


def _adapters() -> tuple[Any, Any, Any]:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    pytest.importorskip("haystack")
    from admit.adapters.haystack import AdmitPruner
    from admit.adapters.langchain import AdmitCompressor
    from admit.adapters.llamaindex import AdmitNodePostprocessor

    return AdmitCompressor, AdmitNodePostprocessor, AdmitPruner


def test_a_wrong_type_for_a_setting_is_admits_config_error_in_every_adapter() -> None:
    for cls in _adapters():
        with pytest.raises(ConfigError, match=r"`threshold` must be an integer"):
            cls(threshold="high")


def test_a_query_that_is_no_string_is_one_config_error_line_in_every_adapter() -> None:
    from haystack import Document as HDoc
    from langchain_core.documents import Document as LDoc
    from llama_index.core.schema import NodeWithScore, TextNode

    lc, li, hs = _adapters()
    with pytest.raises(ConfigError, match=r"query must be a string .*got NoneType"):
        lc(strategy="top_n").compress_documents([LDoc(page_content="port 80")], None)
    with pytest.raises(ConfigError, match=r"query must be a string .*got NoneType"):
        hs(strategy="top_n").run(None, [HDoc(content="port 80")])
    with pytest.raises(ConfigError, match=r"query must be a string .*got int"):
        li(strategy="top_n").decide([NodeWithScore(node=TextNode(text="port 80"))], 3)
    with pytest.raises(ConfigError, match=r"needs the query"):
        li(strategy="top_n").postprocess_nodes([NodeWithScore(node=TextNode(text="port 80"))])


def test_documents_that_are_no_list_of_the_frameworks_documents_are_one_config_error_line_in_every_adapter() -> None:
    from haystack import Document as HDoc
    from langchain_core.documents import Document as LDoc
    from llama_index.core.schema import NodeWithScore, TextNode

    from admit.adapters._core import AdmitFilter, Doc

    lc, li, hs = _adapters()
    calls = {
        "langchain": (lambda d: lc(strategy="top_n").compress_documents(d, "port?"), LDoc(page_content="port 80")),
        "haystack": (lambda d: hs(strategy="top_n").run("port?", d), HDoc(content="port 80")),
        "llamaindex": (
            lambda d: li(strategy="top_n").postprocess_nodes(d, query_str="port?"),
            NodeWithScore(node=TextNode(text="port 80")),
        ),
        "core": (lambda d: AdmitFilter(strategy="top_n").run("port?", d), Doc(id="a", text="port 80")),
    }
    for name, (call, good) in calls.items():
        for bad, got in ((None, "NoneType"), ("port 80", "str")):
            with pytest.raises(ConfigError, match=rf"must be a list of .* got {got}\."):
                call(bad)
        other = LDoc(page_content="x") if name != "langchain" else HDoc(content="x")
        for wrong in ({"text": "port 80"}, other):
            with pytest.raises(ConfigError, match=r"\[1\]: got .*, not .*: make each one as .*\(") as err:
                call([good, wrong])
            assert "\n" not in str(err.value), name
        assert call((good,)) is not None  # a tuple is a list here


def test_model_copy_refuses_an_unknown_or_bad_field_instead_of_ignoring_it() -> None:
    lc, li, _ = _adapters()
    for cls in (lc, li):
        made = cls(strategy="top_n", top_k=5)
        with pytest.raises(ConfigError, match=r"unknown setting 'topk'; did you mean 'top_k'\?"):
            made.model_copy(update={"topk": 3})
        with pytest.raises(ConfigError, match=r"`top_k` must be a positive integer"):
            made.model_copy(update={"top_k": 0})
        good = made.model_copy(update={"top_k": 3})
        assert good.top_k == 3 and good.admit_filter.top_k == 3 and made.top_k == 5


def test_a_mapping_a_reranker_or_a_pruner_of_the_wrong_kind_is_one_config_error_line_in_every_adapter() -> None:
    """``params="n=3"`` was a bare ValueError from ``dict()``, ``params=3`` a TypeError; ``reranker=3`` and
    ``pruner="setwise"`` were taken and failed on the first call (a BackendError, an AttributeError); the copy of a
    filter with a misspelt name (``with_(topk=1)``) a TypeError. Now each is refused when the setting is made,
    with admit's ConfigError naming it and what to give instead."""
    from admit.adapters._core import AdmitFilter

    makers = [*_adapters(), AdmitFilter]
    bad = {
        "params": ("n=3", r"`params` must be a mapping \(a dict, e\.g\. params=\{'n': 3\}\), got str"),
        "reranker": (3, r"`reranker` must be a reranker's name \(one of .*bm25.*\) or an instance .* got int"),
    }
    for make in makers:
        for name, (value, message) in bad.items():
            with pytest.raises(ConfigError, match=message) as err:
                make(strategy="top_n", **{name: value})
            assert "\n" not in str(err.value), (make, name)
    with pytest.raises(ConfigError, match=r"`params` must be a mapping .* got int"):
        AdmitFilter(params=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"`pruner_options` must be a mapping .* got str"):
        AdmitFilter(pruner_options="llm")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"`pruner` must be a pruner instance .* got str; name .* strategy="):
        AdmitFilter(pruner="setwise")  # type: ignore[arg-type]
    made = AdmitFilter(strategy="top_n", params={"n": 1})
    with pytest.raises(ConfigError, match=r"unknown setting 'topk'; did you mean 'top_k'\?"):
        made.with_(topk=1)
    with pytest.raises(ConfigError, match=r"`reranker` must be"):
        made.reranker = object()
    assert made.with_(top_k=1).top_k == 1 and made.top_k is None
    for wrong in ("n=3", 3):  # a wrong type: admit's InvalidType, a TypeError too (as Python's own)
        with pytest.raises(TypeError):
            AdmitFilter(params=wrong)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="topk"):
        made.with_(topk=1)


def test_haystack_run_returns_a_typed_dict_with_every_socket() -> None:
    from typing import get_type_hints

    from haystack import Document as HDoc

    from admit.adapters import haystack as hs_mod

    hints = get_type_hints(hs_mod.PrunerOutput, globalns=vars(hs_mod))
    assert set(hints) == {"documents", "dropped", "answerable", "answerability", "answer_state"}
    out = hs_mod.AdmitPruner(strategy="top_n", params={"n": 1}).run(
        "port", [HDoc(content="port 80"), HDoc(content="x")]
    )
    assert set(out) == set(hints)
    assert [d.content for d in out["documents"]] == ["port 80"]

"""LLM backends: the scripted fake, spec resolution, pricing, and the OpenAI-compatible client's protocol logic
(structured-output fallback, retries with backoff, timeouts, error wrapping, key handling) against a scripted
HTTP server on loopback. The real llama.cpp server is exercised in tests/integration."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from admit.backends.llms import LLM, FakeLLM, Price, PriceTable, resolve_llm
from admit.errors import BackendError, BackendTimeout, ConfigError
from admit.types import Message

pytest.importorskip("openai", reason="needs admit[llm]")

from admit.backends.llms.openai_compat import OpenAICompatLLM

MSGS = [Message(role="user", content="hello there")]
SCHEMA = {"type": "object", "properties": {"C1": {"type": "integer"}}, "required": ["C1"]}


def _completion(text: str, model: str = "m") -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


Handler = Callable[[dict[str, Any], dict[str, str]], tuple[int, dict[str, Any], dict[str, str]]]


class _Server:
    def __init__(self, script: Handler) -> None:
        self.requests: list[tuple[dict[str, Any], dict[str, str]]] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append((body, headers))
                status, payload, extra = script(body, headers)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], _Server]]:
    servers: list[_Server] = []

    def start(script: Handler) -> _Server:
        s = _Server(script)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


def _client(url: str, **kw: Any) -> tuple[OpenAICompatLLM, list[float]]:
    slept: list[float] = []
    return OpenAICompatLLM("m", base_url=url, sleep=slept.append, **kw), slept


# -- fake and resolution -----------------------------------------------------------------------------------


def test_fake_llm_scripts() -> None:
    f = FakeLLM(["first", ValueError("boom"), "last"])
    assert f.complete(MSGS).text == "first"
    with pytest.raises(ValueError, match="boom"):
        f.complete(MSGS)
    assert f.complete(MSGS).text == "last"
    assert f.complete(MSGS).text == "last"  # the last reply repeats
    g = FakeLLM(lambda msgs, schema: f"{len(msgs)}:{sorted(schema or {})}")
    r = g.complete(MSGS, json_schema={"type": "object"})
    assert r.text == "1:['type']" and r.prompt_tokens == 2 + 4 and r.completion_tokens == 1
    assert g.calls[0].json_schema == {"type": "object"} and g.calls[0].prompt == "hello there"
    assert isinstance(f, LLM)


def test_fake_llm_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    import admit.backends.llms.fake as fake_mod

    slept: list[float] = []
    monkeypatch.setattr(fake_mod.time, "sleep", slept.append)
    FakeLLM("x", sleep_s=0.05).complete(MSGS)
    FakeLLM("x").complete(MSGS)
    assert slept == [0.05]  # the delay is requested once, and only when asked for (no clock is read)


def test_resolve_llm_specs() -> None:
    assert isinstance(resolve_llm("fake"), FakeLLM)
    f = FakeLLM()
    assert resolve_llm(f) is f
    o = resolve_llm("openai:my-model@http://127.0.0.1:9/v1")
    assert isinstance(o, OpenAICompatLLM) and o.model == "my-model" and o.base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError, match="base URL"):
        resolve_llm("openai:m@localhost")
    with pytest.raises(ConfigError, match="Unknown LLM spec"):
        resolve_llm("gpt-4o")
    with pytest.raises(ConfigError, match="not an LLM"):
        resolve_llm(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not found"):
        resolve_llm("llama:/nonexistent/model.gguf")


def test_price_table() -> None:
    t = PriceTable()
    assert t.lookup("gpt-4o-mini-2024-07-18") == t.lookup("gpt-4o-mini")
    assert t.lookup("gpt-4o-2024-08-06") == t.lookup("gpt-4o") != t.lookup("gpt-4o-mini")
    assert t.lookup("openai/gpt-4o-mini") == t.lookup("gpt-4o-mini")
    usd, note = t.cost("gpt-4o-mini", 1_000_000, 1_000_000)
    assert usd == pytest.approx(0.15 + 0.60) and note is None
    usd, note = t.cost("my-local-model", 5000, 100)
    assert usd == 0.0 and note is not None and "my-local-model" in note
    t2 = PriceTable({"my-local-model": {"prompt": 1.0, "completion": 2.0}, "other": (3, 4)}, include_defaults=False)
    assert t2.cost("my-local-model", 1000, 500)[0] == pytest.approx(0.002)
    assert t2.lookup("other") == Price(prompt=3.0, completion=4.0)
    assert t2.lookup("gpt-4o") is None
    with pytest.raises(ConfigError, match="bad"):
        PriceTable({"bad": {"prompt": 1}})


# -- the OpenAI-compatible client ----------------------------------------------------------------------------


def test_json_schema_request_and_reply(serve: Callable[[Handler], _Server], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY_VAR", "sk-secret-123")
    s = serve(lambda body, h: (200, _completion('{"C1": 5}'), {}))
    llm = OpenAICompatLLM("m", base_url=s.url, api_key_env="MY_KEY_VAR")
    r = llm.complete(MSGS, json_schema=SCHEMA, max_tokens=7, temperature=0.0)
    assert r.text == '{"C1": 5}' and r.prompt_tokens == 11 and r.completion_tokens == 3
    assert r.structured == "json_schema" and r.attempts == 1 and r.finish_reason == "stop"
    body, headers = s.requests[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert body["max_tokens"] == 7 and body["messages"] == [{"role": "user", "content": "hello there"}]
    assert headers["authorization"] == "Bearer sk-secret-123"
    assert "sk-secret" not in repr(llm)


def test_no_schema_means_no_response_format(serve: Callable[[Handler], _Server]) -> None:
    s = serve(lambda body, h: (200, _completion("hi"), {}))
    llm, _ = _client(s.url)
    llm.complete(MSGS)
    assert "response_format" not in s.requests[0][0]


def test_structured_fallback_ladder_is_remembered(serve: Callable[[Handler], _Server]) -> None:
    def script(body: dict[str, Any], h: dict[str, str]) -> tuple[int, dict[str, Any], dict[str, str]]:
        rf = body.get("response_format", {})
        if rf.get("type") == "json_schema":  # what llama-cpp-python's server answers
            return 500, {"error": {"message": "Input should be 'text' or 'json_object' (response_format)"}}, {}
        return 200, _completion('{"C1": 4}'), {}

    s = serve(script)
    llm, slept = _client(s.url)
    r = llm.complete(MSGS, json_schema=SCHEMA)
    assert r.text == '{"C1": 4}' and r.structured == "json_object_schema" and r.attempts == 2
    assert s.requests[1][0]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert slept == []  # a format rejection is not a retry
    llm.complete(MSGS, json_schema=SCHEMA)
    assert len(s.requests) == 3  # remembered: no second rejection
    assert llm.structured_mode == "json_object_schema"


def test_ladder_reaches_prompt_only(serve: Callable[[Handler], _Server]) -> None:
    def script(body: dict[str, Any], h: dict[str, str]) -> tuple[int, dict[str, Any], dict[str, str]]:
        if "response_format" in body:
            return 400, {"error": {"message": "response_format is not supported"}}, {}
        return 200, _completion('{"C1": 1}'), {}

    s = serve(script)
    llm, _ = _client(s.url)
    r = llm.complete(MSGS, json_schema=SCHEMA)
    assert r.structured == "prompt" and r.attempts == 4


def test_forced_mode_does_not_downgrade(serve: Callable[[Handler], _Server]) -> None:
    s = serve(lambda body, h: (400, {"error": {"message": "response_format json_schema unsupported"}}, {}))
    llm, _ = _client(s.url, structured="json_schema")
    with pytest.raises(BackendError, match="HTTP 400"):
        llm.complete(MSGS, json_schema=SCHEMA)
    assert len(s.requests) == 1


def test_retries_429_and_503_with_backoff(serve: Callable[[Handler], _Server]) -> None:
    answers = [
        (429, {"error": {"message": "slow down"}}, {"retry-after": "0.25"}),
        (503, {"error": {"message": "overloaded"}}, {}),
        (200, _completion("ok"), {}),
    ]

    s = serve(lambda body, h: answers[min(len(s.requests) - 1, 2)])
    llm, slept = _client(s.url, max_retries=3, backoff_s=0.1)
    r = llm.complete(MSGS)
    assert r.text == "ok" and r.attempts == 3 and len(s.requests) == 3
    assert slept[0] == pytest.approx(0.25)  # Retry-After honoured
    assert 0.15 <= slept[1] <= 0.25  # 0.1 * 2 with jitter


def test_retries_are_bounded(serve: Callable[[Handler], _Server]) -> None:
    s = serve(lambda body, h: (503, {"error": {"message": "down"}}, {"retry-after": "100"}))
    llm, slept = _client(s.url, max_retries=2, max_backoff_s=1.5)
    with pytest.raises(BackendError, match="HTTP 503"):
        llm.complete(MSGS)
    assert len(s.requests) == 3 and slept == [1.5, 1.5]


def test_client_errors_are_not_retried(serve: Callable[[Handler], _Server]) -> None:
    s = serve(lambda body, h: (401, {"error": {"message": "bad key"}}, {}))
    llm, slept = _client(s.url)
    with pytest.raises(BackendError, match=r"HTTP 401.*bad key"):
        llm.complete(MSGS, json_schema=SCHEMA)
    assert len(s.requests) == 1 and slept == []


def test_timeout_becomes_backend_timeout(serve: Callable[[Handler], _Server]) -> None:
    def slow(body: dict[str, Any], h: dict[str, str]) -> tuple[int, dict[str, Any], dict[str, str]]:
        time.sleep(1.0)
        return 200, _completion("late"), {}

    s = serve(slow)
    llm, _ = _client(s.url)
    with pytest.raises(BackendTimeout, match=r"did not answer within 0\.2s"):
        llm.complete(MSGS, timeout=0.2)


def test_unreachable_endpoint_is_backend_error() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm, slept = _client(f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(BackendError, match="unreachable after 2"):
        llm.complete(MSGS)
    assert len(slept) == 1


def test_key_required_for_default_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADMIT_LLM_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ADMIT_LLM_API_KEY"):
        OpenAICompatLLM("gpt-4o-mini")


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"max_retries": 11}, "max_retries"), ({"structured": "xml"}, "structured"), ({"timeout": 0}, "timeout")],
)
def test_bad_options(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        OpenAICompatLLM("m", base_url="http://127.0.0.1:9/v1", **kw)

"""A fault-injecting OpenAI-compatible chat server on a real loopback socket, for reliability tests.

It speaks enough of ``POST /v1/chat/completions`` for the ``openai`` SDK and answers every grader request the
way the current *mode* says: a valid grade map, an HTTP error, a dropped connection, broken JSON, wrong ids,
out-of-range grades, or a valid answer after a delay. Modes can be scripted per request (a queue consumed in
order, then the default mode), and every request is recorded (time, mode, body) for assertions on retries,
backoff and circuit breaking.

Example:
    >>> with FaultServer(default="status:503") as srv:  # doctest: +SKIP
    ...     llm = OpenAICompatLLM("m", base_url=srv.base_url, max_retries=2)
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from admit.errors import InvalidType, InvalidValue

__all__ = ["MODES", "FaultServer", "RecordedRequest"]

logger = logging.getLogger(__name__)

MODES: tuple[str, ...] = (
    "ok",
    "timeout",
    "status:429",
    "status:500",
    "status:503",
    "close",
    "invalid_json",
    "bad_body",
    "unknown_ids",
    "missing_ids",
    "out_of_range",
    "slow",
    "drip",
    "continue_drip",
    "header_drip",
    "nested",
)
"""The modes: ``ok`` (every id graded ``grade``), ``timeout`` (hold the request ``hang_s`` then drop it),
``status:NNN`` (that HTTP status, any 4xx/5xx; ``Retry-After: retry_after`` when set), ``close`` (drop the
connection without a response), ``invalid_json`` (a 200 whose message is not JSON), ``bad_body`` (a 200 whose
HTTP body is not a chat completion), ``unknown_ids`` (grades for ids that were not asked), ``missing_ids``
(only the first id graded), ``out_of_range`` (grades like 9 and -3), ``slow`` (a valid answer after
``delay_s``), ``drip`` (a valid answer sent one byte every ``drip_s``), ``continue_drip`` (``100 Continue``
lines every ``drip_s``, without end), ``header_drip`` (the status line and then header bytes, one every
``drip_s``, without end), ``nested`` (a 200 whose message is
``nested_chars`` characters of nested brackets)."""

_ID = re.compile(r"^### (C\d+) ", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """One request the server received."""

    t: float
    """``time.monotonic()`` when it arrived."""
    mode: str
    """The mode it was answered with."""
    body: Mapping[str, Any] = field(default_factory=dict)
    """The parsed JSON body (empty if it was not JSON)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FaultServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # a client that gave up (its deadline): expected
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without TCP_NODELAY the body waits for the client's delayed ACK
    # (~40 ms a request), which a benchmark would charge to the client library
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("fault server: %s", format % args)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fault-model", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        t0 = time.perf_counter()
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        mode = owner._next_mode()
        owner._record(RecordedRequest(t=time.monotonic(), mode=mode, body=body))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"unknown path {self.path}"}})
            return
        ids = _ids_of(body)
        if mode == "timeout":
            owner._stop.wait(owner.hang_s)
            self.close_connection = True
            _hard_close(self.connection)
            return
        if mode == "close":
            self.close_connection = True
            _hard_close(self.connection)
            return
        if mode.startswith("status:"):
            status = int(mode.split(":", 1)[1])
            headers = {"Retry-After": str(owner.retry_after)} if owner.retry_after is not None else {}
            self._json(status, {"error": {"message": f"injected fault {status}", "type": "fault"}}, headers)
            return
        if mode == "bad_body":
            self._raw(200, b"<html>upstream proxy error</html>", "application/json")
            return
        if mode == "slow":
            owner._stop.wait(owner.delay_s)
        if mode in {"continue_drip", "header_drip"}:
            self._drip_head(mode, owner)
            return
        if mode == "drip":
            self._drip(json.dumps(_completion(_content("ok", ids, owner.grade), "fault-model")).encode(), owner)
            return
        custom = owner.answer(body) if owner.answer is not None and mode == "ok" else None
        if isinstance(custom, Mapping):  # a whole assistant message (e.g. with tool calls)
            payload = _completion("", body.get("model", "fault-model"))
            payload["choices"][0]["message"] = {"role": "assistant", "content": None, **custom}
        else:
            content = custom if isinstance(custom, str) else _content(mode, ids, owner.grade)
            payload = _completion(content, body.get("model", "fault-model"))
        self._json(200, payload)
        owner._served(time.perf_counter() - t0)

    def _json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        self._raw(status, json.dumps(payload).encode("utf-8"), "application/json", headers)

    def _raw(self, status: int, data: bytes, ctype: str, headers: Mapping[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): fine
            pass

    def _drip(self, data: bytes, owner: FaultServer) -> None:
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            for i in range(len(data)):
                if owner._stop.wait(owner.drip_s):
                    break
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):  # the client gave up (its deadline): fine
            self.close_connection = True

    def _drip_head(self, mode: str, owner: FaultServer) -> None:
        """Never finish the response head: ``100 Continue`` lines, or one more header byte, every ``drip_s``."""
        self.close_connection = True
        try:
            if mode == "header_drip":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
                self.wfile.flush()
            while not owner._stop.wait(owner.drip_s):
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n" if mode == "continue_drip" else b"X")
                self.wfile.flush()
        except OSError:  # the client gave up (its deadline): fine
            pass


def _hard_close(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)
    conn.close()


def _ids_of(body: Mapping[str, Any]) -> list[str]:
    """The short ids the grader asked for: from the JSON schema when there is one, else from the prompt."""
    rf = body.get("response_format") or {}
    schema = (rf.get("json_schema") or {}).get("schema") if isinstance(rf, Mapping) else None
    if schema is None and isinstance(rf, Mapping):
        schema = rf.get("schema")
    if isinstance(schema, Mapping) and isinstance(schema.get("required"), list) and schema["required"]:
        return [str(i) for i in schema["required"]]
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, Mapping))
    return list(dict.fromkeys(_ID.findall(text)))


def _content(mode: str, ids: list[str], grade: int) -> str:
    if mode == "nested":
        return "[" * 60_000 + '{"C1": 5' + "[" * 40_000
    if mode == "invalid_json":
        return "Sure! Here are the grades: C1 is great, C2 is fine {{{ not json"
    if mode == "unknown_ids":
        return json.dumps({"C999": 5, "X7": 3, "chunk-zzz": 4})
    if mode == "missing_ids":
        return json.dumps({ids[0]: grade} if ids else {})
    if mode == "out_of_range":
        return json.dumps({i: (9 if n % 2 == 0 else -3) for n, i in enumerate(ids)})
    return json.dumps(dict.fromkeys(ids, grade))


def _completion(content: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@dataclass(eq=False, repr=False)
class FaultServer:
    """The fault-injecting server. Use as a context manager; ``base_url`` is ``http://127.0.0.1:PORT/v1``.

    Args:
        default: The mode used when the script is empty (see :data:`MODES`).
        script: Modes for the next requests, in order.
        grade: The grade a valid answer gives every id.
        delay_s: Delay of ``slow`` answers.
        hang_s: How long ``timeout`` holds a request before dropping it.
        retry_after: ``Retry-After`` seconds sent with error statuses (``None``: no header).
        drip_s: Pause between the bytes of a ``drip`` answer.
        answer: In ``ok`` mode, a function of the request body that returns the reply's content (a string),
            a whole assistant message (a mapping, e.g. with ``tool_calls``), or ``None`` for the grade map.
            Lets other clients' prompt formats (benchmarks of other libraries) get answers they parse.
    """

    default: str = "ok"
    _: KW_ONLY
    script: InitVar[Iterable[str]] = ()
    grade: int = 4
    delay_s: float = 2.0
    hang_s: float = 30.0
    retry_after: float | None = None
    drip_s: float = 0.2
    answer: Callable[[Mapping[str, Any]], str | Mapping[str, Any] | None] | None = None
    served_s: float = field(init=False, default=0.0)
    """Seconds spent on ``ok`` requests, from reading the body to the last byte written (the server's time)."""
    _script: deque[str] = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _stop: threading.Event = field(init=False, default_factory=threading.Event)
    requests: list[RecordedRequest] = field(init=False, default_factory=list)
    _httpd: _Server | None = field(init=False, default=None)
    _thread: threading.Thread | None = field(init=False, default=None)

    def __post_init__(self, script: Iterable[str]) -> None:
        for m in [self.default, *script]:
            _check_mode(m)
        self._script = deque(script)

    # -- control ---------------------------------------------------------------------------------------------
    def set(self, default: str | None = None, *, script: Iterable[str] = (), **options: Any) -> None:
        """Change the default mode, queue scripted modes, or change ``grade``/``delay_s``/``hang_s``/``retry_after``."""
        with self._lock:
            if default is not None:
                _check_mode(default)
                self.default = default
            for m in script:
                _check_mode(m)
                self._script.append(m)
            for k, v in options.items():
                if k not in {"grade", "delay_s", "hang_s", "retry_after"}:
                    raise InvalidType(f"unknown option {k!r}")
                setattr(self, k, v)

    def reset(self) -> None:
        """Forget recorded requests and scripted modes."""
        with self._lock:
            self.requests.clear()
            self._script.clear()

    @property
    def count(self) -> int:
        """Requests received so far."""
        with self._lock:
            return len(self.requests)

    def _next_mode(self) -> str:
        with self._lock:
            return self._script.popleft() if self._script else self.default

    def _served(self, seconds: float) -> None:
        with self._lock:
            self.served_s += seconds

    def _record(self, r: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(r)

    # -- lifecycle -------------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL."""
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FaultServer:
        """Bind a free loopback port and serve in a daemon thread."""
        self._stop.clear()
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release held requests, stop serving and close the socket."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _check_mode(mode: str) -> None:
    if mode in MODES:
        return
    if mode.startswith("status:") and mode[7:].isdigit() and 400 <= int(mode[7:]) <= 599:
        return
    raise InvalidValue(f"unknown fault mode {mode!r}; use one of {', '.join(MODES)} (or status:NNN for any 4xx/5xx)")

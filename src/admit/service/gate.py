"""The ASGI gate in front of the service's routes: API-key auth, the body-size limit, and request metrics.

Pure ASGI (no framework): the HTTP app puts it before ``/v1/*``, the MCP server's streamable-HTTP transport
before every path. A key maps to a principal (:class:`~admit.service.config.KeyRing`); the gate stores it in
``scope["state"]["principal"]`` for the routes, so no body and no tool argument can name one.

Metric labels are bounded: a route template the app knows (else ``/v1/*`` or ``other``), a standard HTTP
method (else ``other``) and a status code, so random methods or paths cannot grow ``/metrics``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection
from dataclasses import KW_ONLY, dataclass

import anyio
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from admit.service.admission import Admission, Refusal
from admit.service.config import KeyRing
from admit.service.metrics import ServiceMetrics
from admit.service.schemas import ErrorBody
from admit.service.timing import STAGES, server_timing

__all__ = [
    "API_CSP",
    "KNOWN_METHODS",
    "Gate",
    "Liveness",
    "SecurityHeaders",
    "error_response",
    "method_label",
    "status_label",
]

KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})
"""The HTTP methods a metric label may carry; anything else is counted as ``other``."""


def method_label(method: object) -> str:
    """A bounded metric label for an HTTP method."""
    m = str(method or "").upper()
    return m if m in KNOWN_METHODS else "other"


def status_label(status: int) -> str:
    """A bounded metric label for a status code."""
    return str(status) if 100 <= status <= 599 else "other"


_KINDS = {
    "invalid_request": "RequestError",
    "not_found": "RequestError",
    "method_not_allowed": "RequestError",
    "payload_too_large": "LimitExceeded",
    "unauthorized": "AuthorizationError",
    "forbidden": "AuthorizationError",
    "unavailable": "MissingExtraError",
    "overloaded": "Overloaded",
}
"""The library's error class of an answer the gate or the framework gives (no exception of admit's behind it)."""


def error_response(
    status: int,
    error: str,
    detail: str,
    field: str | None = None,
    headers: dict[str, str] | None = None,
    *,
    kind: str | None = None,
) -> JSONResponse:
    """The service's error shape: ``{"error", "kind", "detail", "field"}`` (``kind``: the library's error class,
    as :mod:`admit.service.errors` names it)."""
    body = ErrorBody(error=error, kind=kind or _KINDS.get(error, "AdmitError"), detail=detail, field=field).model_dump()
    return JSONResponse(body, status_code=status, headers=headers)


async def _send(send: Send, resp: JSONResponse) -> None:
    await send({"type": "http.response.start", "status": resp.status_code, "headers": resp.raw_headers})
    await send({"type": "http.response.body", "body": resp.body})


def _presented_key(scope: Scope) -> str | None:
    """``X-API-Key``, else a bearer token (the headers scanned once; nothing built per header)."""
    key: str | None = None
    auth = ""
    for k, v in scope.get("headers", []):
        name = k.lower()
        if name == b"x-api-key" and key is None:
            key = v.decode("latin-1")
        elif name == b"authorization" and not auth:
            auth = v.decode("latin-1")
    if key is None and auth[:7].lower() == "bearer ":
        key = auth[7:].strip()
    return key


def _content_length(scope: Scope) -> str | None:
    for k, v in scope.get("headers", []):
        if k.lower() == b"content-length":
            return str(v.decode("latin-1"))
    return None


UNREAD_BODY_CLOSES = 65_536
"""An answer given before a request's body is read (401, 413, 429) closes the connection when the body is over
this many bytes, or of no declared length: the body is never read (the HTTP server stops reading the connection
and closes it, :func:`admit.service.server.guarded_protocol`). A body under it is already in the server's buffer
and is passed over, the connection kept alive: a client that reconnects costs more than a few bytes skipped."""


def _unread_body_closes(scope: Scope, declared: str | None) -> bool:
    """Whether an early answer to this request closes its connection (:data:`UNREAD_BODY_CLOSES`)."""
    if scope.get("method") in ("GET", "HEAD", "DELETE", "OPTIONS"):
        return False
    if declared is None:
        return any(k.lower() == b"transfer-encoding" for k, _ in scope.get("headers", []))
    return not declared.isdigit() or int(declared) > UNREAD_BODY_CLOSES


async def _send_closing(send: Send, resp: JSONResponse) -> None:
    """Send an early answer with ``Connection: close`` (its request's body left unread)."""
    headers = [*resp.raw_headers, (b"connection", b"close")]
    await send({"type": "http.response.start", "status": resp.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": resp.body})


@dataclass(eq=False, repr=False)
class Gate:
    """API-key auth and a bounded body for protected paths; metrics for every request (when given).

    Args:
        app: The wrapped ASGI app.
        keyring: Returns the configured keys, read per request (a rotated key ring applies at once).
        max_body_bytes: Largest accepted body on a protected path (413 over it, with or without Content-Length).
        protected: Which paths need a key (default: every path).
        metrics: Where request counts and latency go (``None``: not counted).
        known_routes: Paths that are their own metric label when the router did not name a route.
        admission: Requests in flight by key, tenant and in all (``None``: not bounded here); a request over a
            bound is answered 429 with ``Retry-After`` before its body is read.
        refusal_delay_s: The longest a refused request waits before its 429 goes out: it waits its
            ``Retry-After`` up to this, holding no slot and no body, and its answer's ``Retry-After`` is what is
            left of it (at least 1 s): a client that retries at once cannot keep the event loop answering it, a
            tenant holding many requests in flight is refused at most once per connection per ``Retry-After``.
        server_timing: Answer with a ``Server-Timing`` header: where the request's time went on the server
            (:mod:`admit.service.timing`).
        connections_per_key: Most connections one key may hold (``0``: no cap): a request on a connection
            beyond it is answered 429 (``Retry-After``, ``Connection: close``) before its body is read, and the
            connection closed (the HTTP server counts each connection as its latest request's key's:
            :class:`~admit.service.server.Owners`). A connection of another key or tenant is never refused for it.
        connections_per_tenant: The same, for all of one tenant's keys together.
        connection_refusal_delay_s: How long a request refused for its connection waits before its 429 (its
            ``Retry-After``): the connection, counted as no one's, costs nothing while it waits, and a client that
            reconnects at once makes the server accept, read and refuse a connection at most once per this.
    """

    app: ASGIApp
    _: KW_ONLY
    keyring: Callable[[], KeyRing]
    max_body_bytes: int
    protected: Callable[[str], bool] = lambda path: True
    metrics: ServiceMetrics | None = None
    known_routes: Collection[str] = ()
    admission: Admission | None = None
    refusal_delay_s: float = 5.0
    server_timing: bool = False
    connections_per_key: int = 0
    connections_per_tenant: int = 0
    connection_refusal_delay_s: float = 5.0

    def __post_init__(self) -> None:
        self.known_routes = frozenset(self.known_routes)
        self._answers: dict[object, JSONResponse] = {}
        """The gate's own answers (413, and 429 by reason), built once."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.server_timing:
            send = self._timed(scope, send)
        if self.metrics is None:
            await self._handle(scope, receive, send)
            return
        t0 = time.perf_counter()
        status_box = [500]

        async def send_wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = int(message["status"])
            await send(message)

        try:
            await self._handle(scope, receive, send_wrapped)
        finally:
            route = self.route_label(scope)
            m = self.metrics
            m.requests.labels(
                route=route, method=method_label(scope.get("method")), status=status_label(status_box[0])
            ).inc()
            m.latency.labels(route=route).observe(time.perf_counter() - t0)

    def _timed(self, scope: Scope, send: Send) -> Send:
        """Start the request's marks (:mod:`admit.service.timing`); its answer carries them as ``Server-Timing``."""
        now = time.monotonic()
        stages = {"received": float(scope.get("admit.received", now)), "app": now}
        STAGES.set(stages)

        async def send_timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                stages["response"] = time.monotonic()
                headers = [*message.get("headers", []), (b"server-timing", server_timing(stages))]
                message = {**message, "headers": headers}
            await send(message)

        return send_timed

    def route_label(self, scope: Scope) -> str:
        """The route template the router matched, else a bounded label for the path."""
        template = getattr(scope.get("route"), "path", None)
        if isinstance(template, str) and template in self.known_routes:
            return template
        path = str(scope.get("path", ""))
        if path in self.known_routes:
            return path
        return "/v1/*" if path.startswith("/v1/") else "other"

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.protected(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        key = _presented_key(scope)
        found = self.keyring().lookup(key)
        if found is None:
            why = "missing API key" if not key else "unknown API key"
            resp = error_response(
                401,
                "unauthorized",
                f"{why}: send X-API-Key: KEY (or Authorization: Bearer KEY)",
                headers={"WWW-Authenticate": 'ApiKey header="X-API-Key"'},
            )
            await (_send_closing if _unread_body_closes(scope, _content_length(scope)) else _send)(send, resp)
            return
        label, principal = found
        scope.setdefault("state", {})
        scope["state"]["principal"] = principal
        scope["state"]["key_label"] = label
        over = self._connection_over(scope, label, principal.tenant)
        if over is not None:
            await self._refuse(send, over, unread=scope.get("admit.unread"))
            return
        limit = self.max_body_bytes
        declared = _content_length(scope)
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _send_closing(send, self._too_big())  # over the limit: never read
            return
        if scope.get("method") in ("GET", "HEAD", "DELETE"):
            await self.app(scope, receive, send)  # no body to bound (a GET may hold an event stream open)
            return
        if self.admission is None:
            await self._read_and_run(scope, receive, send)
            return
        size = int(declared) if declared is not None and declared.isdigit() else limit
        ticket = self.admission.enter(f"key:{label}", principal.tenant, size)
        if isinstance(ticket, Refusal):
            close = _unread_body_closes(scope, declared)
            await self._refuse(send, ticket, close=close, unread=scope.get("admit.unread") if close else None)
            return
        try:
            await self._read_and_run(scope, receive, send)
        finally:
            self.admission.release(ticket)

    def _connection_over(self, scope: Scope, label: str, tenant: str) -> Refusal | None:
        """Claim the request's connection for its key and tenant; a :class:`Refusal` when that is over a cap."""
        claim = scope.get("admit.connection")
        if claim is None or not (self.connections_per_key or self.connections_per_tenant):
            return None
        per_key, per_tenant = self.connections_per_key or 1 << 30, self.connections_per_tenant or 1 << 30
        over = claim(f"key:{label}", tenant, per_key, per_tenant)
        if over is None:
            return None
        cap = per_key if over == "key" else per_tenant
        retry = max(1, round(self.connection_refusal_delay_s))
        return Refusal(over, f"too many connections of this {over} open ({cap}); reuse one", retry, close=True)

    def _too_big(self) -> JSONResponse:
        """The 413 answer (built once: a request under the limit builds nothing)."""
        resp = self._answers.get(413)
        if resp is None:
            limit = self.max_body_bytes
            detail = f"request body over max_body_bytes={limit}; send fewer or shorter candidates"
            resp = self._answers[413] = error_response(413, "payload_too_large", detail)
        return resp

    async def _refuse(
        self, send: Send, why: Refusal, *, close: bool = False, unread: Callable[[], None] | None = None
    ) -> None:
        """429 with ``Retry-After``, the body unread; sent after a short wait that holds no slot. The answer is
        built once per reason and reused (a flood's refusals build nothing on the loop). ``close``: the request's
        body is large (:data:`UNREAD_BODY_CLOSES`): the answer closes the connection and the body is never read.
        ``unread``: the HTTP server's ``scope["admit.unread"]``, called for an answer that closes: it stops
        reading the connection and drops what it had read of the body, before the wait (which holds nothing)."""
        if unread is not None and (close or why.close):
            unread()
        if self.metrics is not None:
            self.metrics.refused.labels(scope=why.scope).inc()
        delay = min(self.connection_refusal_delay_s if why.close else self.refusal_delay_s, why.retry_after_s)
        await anyio.sleep(delay)
        # an admission refusal's Retry-After counts from its answer: what is left of the wait (at least 1 s)
        left = why.retry_after_s if why.close else max(1, why.retry_after_s - int(delay))
        close = close or why.close
        resp = self._answers.get((why, left, close))
        if resp is None:
            if len(self._answers) > 64:  # bounded: the reasons are a handful of fixed texts
                self._answers.clear()
            headers = {"Retry-After": str(left)}
            if close:
                headers["Connection"] = "close"
            resp = self._answers[(why, left, close)] = error_response(
                429, "overloaded", f"{why.detail}; retry after {left} s", headers=headers
            )
        await _send(send, resp)

    async def _read_and_run(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.max_body_bytes
        # buffer the body (bounded), so a body without Content-Length is held to the limit too
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await _send_closing(send, self._too_big())  # the rest is never read
                return
            chunks.append(body)
            more = bool(message.get("more_body", False))
        data = b"".join(chunks)
        sent = False
        stages = STAGES.get()
        if stages is not None:
            stages["admitted"] = time.monotonic()

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": data, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
"""The Content-Security-Policy of every answer that sets none itself: JSON and text load nothing and run nothing."""


class Liveness:
    """``GET /healthz`` (and ``HEAD``) answered at the ASGI layer, outermost: before the gate, the router and any
    middleware that reads a body or takes a lock, so a liveness probe waits behind nothing the app does. The
    answer is ``body()`` as JSON, with the headers every answer carries (:class:`SecurityHeaders`'), counted in
    ``metrics`` like any request.

    The HTTP server answers the same probe earlier still (:func:`admit.service.server.guarded_protocol`, given
    :meth:`answer` through ``app.state.liveness``): where its bytes are read, with no task started and no turn of
    the event loop waited for; this class answers a probe that did not come in one piece.

    Args:
        app: The wrapped ASGI app (every other request goes to it).
        body: The answer's fields, read per probe (cheap: no I/O, no lock).
        metrics: Where the probe is counted (``None``: not counted).
        server_timing: Answer with ``Server-Timing`` (``read``: the loop's backlog before the probe ran, ``total``).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        body: Callable[[], dict[str, object]],
        metrics: ServiceMetrics | None = None,
        path: str = "/healthz",
        csp: str = API_CSP,
        server_timing: bool = False,
        ready: Callable[[], dict[str, object] | None] | None = None,
    ) -> None:
        self.app = app
        self.body = body
        self.metrics = metrics
        self.path = path
        self.csp = csp.encode("latin-1")
        self.server_timing = server_timing
        self.ready = ready

    def _json(self, body: dict[str, object], *extra: tuple[bytes, bytes]) -> tuple[list[tuple[bytes, bytes]], bytes]:
        data = json.dumps(body, separators=(",", ":")).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
            *extra,
            (b"x-content-type-options", b"nosniff"),
            (b"content-security-policy", self.csp),
        ]
        return headers, data

    def probe_answers(self, server: list[tuple[bytes, bytes]]) -> dict[str, tuple[str, str]]:
        """The answers the probe helper process may give now (:mod:`admit.service.probe_proc`): this probe's, and
        ``/readyz``'s while ``ready()`` says the server is ready (its ``/readyz`` body; ``None``: not ready, the
        server answers it), as ``{path: (head, body)}``: the status line and the headers (``server``'s first,
        without ``date``), each line ending ``\r\n``, and the body, both latin-1 text. Not counted."""
        answers = {self.path: self._json(self.body(), (b"cache-control", b"no-store"))}
        ready = self.ready() if self.ready is not None else None
        if ready is not None:  # as the route's JSONResponse sends it: its length first
            headers, data = self._json(ready)
            answers["/readyz"] = ([headers[1], headers[0], *headers[2:]], data)
        out: dict[str, tuple[str, str]] = {}
        for path, (headers, data) in answers.items():
            lines = [b"HTTP/1.1 200 OK\r\n"] + [k + b": " + v + b"\r\n" for k, v in (*server, *headers)]
            out[path] = (b"".join(lines).decode("latin-1"), data.decode("latin-1"))
        return out

    def counted(self, path: str, method: str, n: int) -> None:
        """``n`` probes of ``path`` answered 200 elsewhere (the probe helper process), counted in ``metrics``."""
        if self.metrics is not None and n > 0:
            self.metrics.requests.labels(route=path, method=method, status="200").inc(n)

    def answer(self, method: str, received: float | None = None) -> tuple[list[tuple[bytes, bytes]], bytes]:
        """The probe's answer (headers, body; no body for ``HEAD``), counted; ``received``: when its bytes came
        in (``Server-Timing``)."""
        t0 = time.monotonic()
        headers, data = self._json(self.body(), (b"cache-control", b"no-store"))
        if self.server_timing:
            stages = {"received": t0 if received is None else received, "app": t0, "response": time.monotonic()}
            headers.append((b"server-timing", server_timing(stages)))
        if self.metrics is not None:
            self.metrics.requests.labels(route=self.path, method=method, status="200").inc()
            self.metrics.latency.labels(route=self.path).observe(time.monotonic() - t0)
        return headers, data if method == "GET" else b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        if scope["type"] != "http" or scope.get("path") != self.path or method not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        received = scope.get("admit.received")
        headers, data = self.answer(str(method), float(received) if received is not None else None)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": data})


class SecurityHeaders:
    """Headers every HTTP answer carries, whoever gives it (a route, the gate's 401 and 413, an error handler):
    ``X-Content-Type-Options: nosniff`` (a browser never reads a JSON body as HTML or script) and a
    ``Content-Security-Policy`` (:data:`API_CSP` unless the answer has its own, as ``/inspect`` does).

    Pure ASGI, outermost in the app, so nothing answers without them.
    """

    def __init__(self, app: ASGIApp, *, csp: str = API_CSP) -> None:
        self.app = app
        self.csp = csp.encode("latin-1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {bytes(k).lower() for k, _ in headers}
                if b"x-content-type-options" not in names:
                    headers.append((b"x-content-type-options", b"nosniff"))
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", self.csp))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)

"""The HTTP server itself: uvicorn with a header read timeout, a body read deadline and a connection cap.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but not a connection whose request
headers never end, nor one whose body drips: 19,985 such connections used every descriptor of an
``admit serve`` (issue 26). :func:`guarded_protocol` is uvicorn's h11 protocol with three additions:

* **header read timeout** (``header_timeout_s``): from the connection (or the first byte of a keep-alive
  request) to the end of the request headers; past it the connection is closed;
* **body read deadline** (``body_timeout_s``): from the end of the headers to the end of the body, whatever
  the pace of the bytes; past it the connection is closed (the route sees a disconnect);
* **connection cap** (``max_connections``): every connection counts, with a key or without: at the cap, a new
  connection first evicts the oldest connection still sending its request (headers or body: the slow ones, and
  one answered early, a 401 or 413, whose body still drips in), else the oldest idle keep-alive connection,
  else it is closed at once; a request whose body is in (being answered) is never cut;
* **connections by key and tenant** (:class:`Owners`): each connection belongs to the key (and tenant) of its
  latest request, from that request's headers until it closes; the gate asks (:meth:`Owners.claim`, through
  ``scope["admit.connection"]``) before it reads a request's body, and answers a request on a connection over
  its key's or tenant's cap (``max_connections_per_key``, ``max_connections_per_tenant``) 429 with
  ``Retry-After`` and closes the connection: a key's flood of connections holds at most its cap, and another
  tenant's connection is never refused for it;
* **an answer before the body is never followed by reading it**: when a request is answered ``Connection: close``
  while its body is still coming (the gate's 401, 413 and 429 to a large body), the connection stops being read
  at once, says it has nothing more to send (a half-close, so the answer is not lost to a reset) and is closed
  ``ServerLimits.unread_linger_s`` later. uvicorn read and parsed such a body to its end to keep the connection:
  a flood of 1.8 MB bodies refused 429 kept the event loop busy reading what it had refused.

``admit serve``, ``admit mcp --transport streamable-http`` and :class:`~admit.service.loopback.LoopbackServer`
all run through :func:`uvicorn_config`. Behind a proxy, set the proxy's own timeouts as well (``deploy/``).
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["GuardedServer", "Owners", "ServerLimits", "guarded_protocol", "uvicorn_config"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """The connection limits of the server (``[service.limits]``: ``header_timeout_s``, ``body_timeout_s``,
    ``max_connections``, ``keep_alive_s``)."""

    header_timeout_s: float = 10.0
    """Longest time to receive a request's headers."""
    body_timeout_s: float = 30.0
    """Longest time to receive a request's body once its headers are in."""
    max_connections: int = 2048
    """Most open connections; at the cap the oldest one still sending its request makes room."""
    keep_alive_s: float = 5.0
    """An idle keep-alive connection is closed after this (uvicorn's ``timeout_keep_alive``)."""
    probe_thread: bool = True
    """Serve a kept-alive liveness-probe connection from a thread of its own, off the event loop
    (:mod:`admit.service.probes`)."""
    unread_linger_s: float = 1.0
    """How long a connection answered before its body was read is kept (half-closed, not read) before it is
    closed: the client's time to read the answer before the close resets the connection."""
    probe_process: bool = False
    """Accept connections in a helper process that answers liveness and readiness probes itself and passes every
    other connection to the event loop (:mod:`admit.service.probe_proc`; ``[service.limits] probe_process``, on in
    ``admit serve``)."""
    probe_stale_s: float = 5.0
    """The helper answers a probe only while the event loop's latest heartbeat is younger than this."""

    @classmethod
    def from_settings(cls, settings: Any) -> ServerLimits:
        """From a :class:`~admit.service.config.ServiceSettings`."""
        lim = settings.limits
        return cls(
            header_timeout_s=lim.header_timeout_s,
            body_timeout_s=lim.body_timeout_s,
            max_connections=lim.max_connections,
            keep_alive_s=lim.keep_alive_s,
            probe_process=lim.probe_process,
            probe_stale_s=lim.probe_stale_s,
        )


class Owners:
    """The connections of a server by key and by tenant: each belongs to its latest request's, until it closes.
    Used on the event loop only."""

    def __init__(self) -> None:
        self.by_key: Counter[str] = Counter()
        self.by_tenant: Counter[str] = Counter()
        self._of: dict[object, tuple[str, str]] = {}

    def claim(self, conn: object, key: str, tenant: str, per_key: int, per_tenant: int) -> str | None:
        """``conn`` carries a request of ``key`` (``tenant``'s): it counts as theirs, or ``"key"`` / ``"tenant"``
        when that would take the key or the tenant past its cap (the connection is then counted as no one's: it
        is to be answered 429 and closed)."""
        owner = self._of.get(conn)
        if owner == (key, tenant):
            return None
        self.release(conn)
        if self.by_key[key] >= per_key:
            return "key"
        if self.by_tenant[tenant] >= per_tenant:
            return "tenant"
        self._of[conn] = (key, tenant)
        self.by_key[key] += 1
        self.by_tenant[tenant] += 1
        return None

    def release(self, conn: object) -> None:
        """``conn`` closed (or carries another's request now): it no longer counts."""
        owner = self._of.pop(conn, None)
        if owner is None:
            return
        for counter, name in ((self.by_key, owner[0]), (self.by_tenant, owner[1])):
            counter[name] -= 1
            if counter[name] <= 0:
                del counter[name]


class _Transport:
    """A connection's transport as uvicorn sees it: everything passes through, but its ``close`` is the
    protocol's (:meth:`close_unread`), so a connection answered before its request's body is in is never read
    again."""

    def __init__(self, raw: Any, close: Any) -> None:
        self._raw = raw
        self.close = close
        self.lingering = False
        """Answered and half-closed, to be closed: closing, as far as uvicorn is concerned (it reads no more)."""

    def is_closing(self) -> bool:
        return self.lingering or bool(self._raw.is_closing())

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._raw, name)
        if callable(value):
            setattr(self, name, value)  # looked up once per connection
        return value


class _Claim:
    """What the gate finds in ``scope["admit.connection"]``: the request's connection, to be claimed for a key."""

    __slots__ = ("conn", "owners")

    def __init__(self, owners: Owners, conn: object) -> None:
        self.owners = owners
        self.conn = conn

    def __call__(self, key: str, tenant: str, per_key: int, per_tenant: int) -> str | None:
        return self.owners.claim(self.conn, key, tenant, per_key, per_tenant)


def guarded_protocol(limits: ServerLimits, probe: Any = None) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with ``limits`` applied (one class per server: the slow set is its own).

    ``probe``: a :class:`~admit.service.gate.Liveness` whose ``GET``/``HEAD`` of its path is answered where the
    request's bytes are read (the whole request in one read, no body): no task, no ASGI scope, no turn of the
    event loop waited for, so a liveness probe is not queued behind the requests the loop has in hand."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    live: OrderedDict[Any, None] = OrderedDict()  # every connection this server holds, keyed or not, oldest first
    slow: OrderedDict[Any, None] = OrderedDict()  # connections still sending a request (headers or body), oldest first
    idle: OrderedDict[Any, None] = OrderedDict()  # keep-alive connections between requests, oldest first
    owners = Owners()  # connections by key and tenant (claimed by the gate)
    probes: list[Any] = []  # the server's ProbeThread, made with its first kept-alive probe connection

    class GuardedH11Protocol(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _phase = "headers"
        _refused = False
        _first: float | None = None  # when the current request's first bytes came in (Server-Timing's start)
        _cycle: Any = None
        _claim: Any = None
        _raw: Any = None  # the connection's own transport (uvicorn is given a :class:`_Transport`)
        _lingering: asyncio.TimerHandle | None = None
        _others = 0  # requests other than a probe this connection has carried
        _pending = b""  # a connection given back by the probe thread: the bytes it read

        def connection_made(self, transport: Any) -> None:
            self._claim = _Claim(owners, self)
            self._raw = transport
            # the cap counts every connection the server holds (``live``), not uvicorn's set, which a closed but
            # not yet lost connection still sits in: an evicted connection's slot is free at once
            if len(live) >= limits.max_connections:
                victim = next(iter(slow), None) or next(iter(idle), None)
                if victim is None:  # every connection is being answered: none is cut, the new one is refused
                    self._refused = True
                    transport.close()
                    return
                victim._evict()
            super().connection_made(_Transport(transport, self._close_unread))  # type: ignore[arg-type]
            live[self] = None
            self._headers_phase()
            if self._pending:  # back from the probe thread: what it read comes first
                pending, self._pending = self._pending, b""
                self._others += 1
                self.data_received(pending)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            if self._lingering is not None:
                self._lingering.cancel()
                self._lingering = None
            self._cancel()
            self._forget()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused or self._lingering is not None:
                return
            if probe is not None and self._probe_answered(data):
                return
            if self._first is None and self.conn.their_state is h11.IDLE:
                self._first = time.monotonic()
            super().data_received(data)
            if self.cycle is not None and self.cycle is not self._cycle:  # a request begun: its scope has the time
                self._cycle = self.cycle
                self._others += 1
                scope: dict[str, Any] = self.cycle.scope  # type: ignore[assignment]
                scope["admit.connection"] = self._claim
                scope["admit.unread"] = self._stop_reading
                if self._first is not None:
                    scope["admit.received"] = self._first
                self._first = None
            state = self.conn.their_state
            if state is h11.IDLE:
                if self._phase != "headers":  # a keep-alive request's first bytes: its headers are timed
                    self._headers_phase()
            elif state is h11.SEND_BODY:
                if self._phase != "body":  # still unfinished: it stays among the slow, oldest first
                    self._phase = "body"
                    self._arm(limits.body_timeout_s)
            elif self._phase != "done":
                slow.pop(self, None)
                idle.pop(self, None)
                self._phase = "done"
                self._cancel()

        def _probe_answered(self, data: bytes) -> bool:
            """Answer a liveness probe that came in one piece, here; ``False``: not one (uvicorn reads it)."""
            if self.conn.their_state is not h11.IDLE or self.conn.our_state is not h11.IDLE:
                return False
            if self.cycle is not None and not self.cycle.response_complete:
                return False
            head, sep, rest = data.partition(b"\r\n\r\n")
            if not sep or rest:
                return False
            method, _, tail = head.partition(b"\r\n")[0].partition(b" ")
            if method not in (b"GET", b"HEAD") or tail.partition(b" ")[0] != probe.path.encode():
                return False
            lowered = head.lower()
            if b"content-length" in lowered or b"transfer-encoding" in lowered or b"upgrade" in lowered:
                return False
            received = time.monotonic()
            self._unset_keepalive_if_required()
            self.conn.receive_data(data)
            try:
                request = self.conn.next_event()
                end = self.conn.next_event()
            except h11.RemoteProtocolError:
                self.transport.close()  # a malformed probe: closed (uvicorn would answer 400 and close)
                return True
            if not isinstance(request, h11.Request) or not isinstance(end, h11.EndOfMessage):
                self.transport.close()
                return True
            self._cancel()
            slow.pop(self, None)
            idle.pop(self, None)
            self._phase = "done"
            headers, body = probe.answer(method.decode(), received)
            head_out = self.conn.send(
                h11.Response(status_code=200, headers=self.server_state.default_headers + headers)
            )
            out = [head_out or b""]
            if body:
                out.append(self.conn.send(h11.Data(data=body)) or b"")
            out.append(self.conn.send(h11.EndOfMessage()) or b"")
            self.transport.write(b"".join(out))
            if self.conn.our_state is h11.MUST_CLOSE:  # type: ignore[comparison-overlap]  # changed by the sends
                self.transport.close()
            self.on_response_complete()
            if not self._others and limits.probe_thread and not self._raw.is_closing():
                self._to_probe_thread()
            return True

        def _to_probe_thread(self) -> None:
            """Hand this connection (it has carried only probes, each answered) to the probe thread: it serves
            the next probes off the event loop; the loop forgets the connection (its descriptor closed, the
            thread's duplicate kept). Stays here when the answer is not all sent or the thread is full."""
            from admit.service.probes import ProbeThread

            raw = self._raw
            if raw.get_write_buffer_size():
                return
            if not probes:
                cls, config, state, loop = type(self), self.config, self.server_state, self.loop
                app_state = self.app_state

                def reconnect(sock: socket.socket, data: bytes) -> None:
                    serve_accepted(loop, cls, sock, data, config=config, server_state=state, app_state=app_state)

                probes.append(
                    ProbeThread(
                        answer=probe.answer,
                        path=probe.path,
                        loop=loop,
                        reconnect=reconnect,
                        default_headers=lambda: list(state.default_headers),
                        idle_s=limits.keep_alive_s,
                    )
                )
            try:
                dup = socket.socket(fileno=os.dup(raw.get_extra_info("socket").fileno()))
            except OSError:
                return
            if not probes[0].adopt(dup):
                dup.close()
                return
            self._cancel()
            self._forget()
            raw.close()  # this descriptor only: the connection lives on in the thread's

        def _stop_reading(self) -> None:
            """The gate refused this request and will close the connection with its answer (``scope["admit.unread"]``):
            read no more of it, and drop what was read of its body, while the refusal waits."""
            self.flow.pause_reading()
            if self.cycle is not None:
                self.cycle.body = bytearray()

        def _close_unread(self) -> None:
            """Close the connection; one whose request's body is still coming (answered early, ``Connection:
            close``) is first half-closed and no longer read, then closed ``unread_linger_s`` later: its body is
            never read, and the client has the answer before the close resets the connection."""
            raw = self._raw
            if raw.is_closing() or self._lingering is not None:
                return
            if self.conn.their_state is not h11.SEND_BODY or limits.unread_linger_s <= 0:
                raw.close()
                return
            self.transport.lingering = True  # type: ignore[attr-defined]
            raw.pause_reading()
            if raw.can_write_eof():
                raw.write_eof()  # after what is queued: the answer, then the end of the connection's output
            self._lingering = self.loop.call_later(limits.unread_linger_s, raw.close)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self not in live:
                return
            state = self.conn.their_state
            if state is h11.SEND_BODY:
                # answered before its body was in (a 401 for a missing key, a 413): the body still drips in, so
                # the connection stays among the slow, under its body deadline, and is evicted first at the cap
                if self._phase != "body":
                    self._phase = "body"
                    self._arm(limits.body_timeout_s)
                slow[self] = None
            elif state is h11.IDLE:
                self._phase = "idle"  # uvicorn's keep-alive timer covers the idle wait; at the cap it may go
                slow.pop(self, None)
                idle[self] = None

        def _headers_phase(self) -> None:
            self._phase = "headers"
            idle.pop(self, None)
            slow[self] = None
            self._arm(limits.header_timeout_s)

        def _arm(self, seconds: float) -> None:
            self._cancel()
            self._timer = self.loop.call_later(seconds, self._expire)

        def _cancel(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _forget(self) -> None:
            owners.release(self)
            live.pop(self, None)
            slow.pop(self, None)
            idle.pop(self, None)

        def _expire(self) -> None:
            self._cancel()
            slow.pop(self, None)
            if self._phase in ("headers", "body") and not self._raw.is_closing():
                self._forget()
                self._raw.close()

        def _evict(self) -> None:
            """Close this connection to make room at the cap (it is sending a request, or idle between two)."""
            self._cancel()
            self._forget()
            if not self._raw.is_closing():
                self._raw.close()

    return GuardedH11Protocol


def serve_accepted(loop: Any, cls: Any, sock: socket.socket, data: bytes, **kwargs: Any) -> None:
    """Serve ``sock`` (accepted elsewhere: the probe thread, the probe helper process) on ``loop`` as a new
    connection of protocol ``cls`` (``kwargs``: its uvicorn arguments), its first bytes ``data``."""

    def factory() -> Any:
        proto = cls(_loop=loop, **kwargs)
        proto._pending = data
        return proto

    async def connect() -> None:
        try:
            await loop.connect_accepted_socket(factory, sock)
        except OSError:
            sock.close()

    loop.create_task(connect())


def _uvicorn_server() -> type:
    import uvicorn

    return uvicorn.Server


class GuardedServer(_uvicorn_server()):  # type: ignore[misc]
    """``uvicorn.Server`` that, with ``ServerLimits.probe_process``, hands its listening socket to the probe
    helper process once it listens (:mod:`admit.service.probe_proc`), and ends the helper first when it shuts
    down. ``limits``: the server's :class:`ServerLimits` (``None``: no helper)."""

    def __init__(self, config: Any, limits: ServerLimits | None = None) -> None:
        super().__init__(config)
        self.limits = limits
        self._resumed: Any = None
        self.probe_process: Any = None
        """The running :class:`~admit.service.probe_proc.ProbeProcess`, if any."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        limits, config = self.limits, self.config
        probe = getattr(getattr(config.app, "state", None), "liveness", None)
        if limits is None or not limits.probe_process or probe is None or config.ssl is not None:
            return
        listeners = [sock for server in self.servers for sock in (server.sockets or ())]
        if len(listeners) != 1 or listeners[0].family not in (socket.AF_INET, socket.AF_INET6):
            return
        from admit.service.probe_proc import ProbeProcess

        loop = asyncio.get_running_loop()
        proto = {"config": config, "server_state": self.server_state, "app_state": self.lifespan.state}
        listener = listeners[0]

        def serve(sock: socket.socket, data: bytes) -> None:
            serve_accepted(loop, config.http_protocol_class, sock, data, **proto)

        def resume() -> None:
            async def again() -> None:
                dup = socket.socket(fileno=os.dup(listener.fileno()))
                self.servers.append(await loop.create_server(lambda: config.http_protocol_class(**proto), sock=dup))

            self._resumed = loop.create_task(again())

        def answers() -> dict[str, tuple[str, str]]:
            # before uvicorn's first tick its default headers are still empty: the configured ones (``server``)
            headers = self.server_state.default_headers or config.encoded_headers
            server = [(k, v) for k, v in headers if k.lower() != b"date"]
            return probe.probe_answers(server)  # type: ignore[no-any-return]

        helper = ProbeProcess(
            listener=listener,
            loop=loop,
            serve=serve,
            answers=answers,
            counted=probe.counted,
            resume=resume,
            keep_alive_s=limits.keep_alive_s,
            stale_s=limits.probe_stale_s,
        )
        helper.start()
        self.probe_process = helper

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.probe_process is not None:
            self.probe_process.stop()
            self.probe_process = None
        await super().shutdown(sockets)


def uvicorn_config(app: Any, *, host: str, port: int = 0, limits: ServerLimits, **kwargs: Any) -> Any:
    """A ``uvicorn.Config`` for ``app`` with :func:`guarded_protocol` and ``limits``' keep-alive."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded_protocol(limits, getattr(getattr(app, "state", None), "liveness", None)),
        timeout_keep_alive=max(1, round(limits.keep_alive_s)),
        **kwargs,
    )

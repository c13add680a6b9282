"""Issue 47 (Serving VII): a request answered before its body is read never has its body read.

The gate answered a 401, a 413 or a 429 before reading the body, but kept the connection: uvicorn then read and
parsed the rest of the body (to its declared end) to reach the next request. Under ``bench_fairness.py``'s
``bodies:8`` (8 tenants x 70 connections of 1.8 MB bodies) that was most of the event loop's time: a sampler on
the loop found 20% of it in ``recv`` and 15% in h11 reading bodies it had refused. Now such an answer says
``Connection: close`` and the connection is half-closed at once, never read again, and closed a moment later;
a small body (already in the server's buffer) keeps its connection alive. Real server on a free loopback port,
waited for on ``/readyz``; nothing reads the clock.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.security._rawhttp import BODY, answer, head, loopback_server

KEYS = {
    "evil1": {"key_env": "K_EVIL1", "tenant": "evil"},
    "evil2": {"key_env": "K_EVIL2", "tenant": "evil"},
}
ENV = {"K_EVIL1": "evil-key-1", "K_EVIL2": "evil-key-2"}
BIG = 1_800_000


def _server(**limits: Any) -> Any:
    return loopback_server(KEYS, ENV, **limits)


def _closed_unread(s: socket.socket) -> None:
    """The server has said it sends nothing more (a half-close) though the body was never sent: it is not
    waiting for the body (a server that read it would wait, and this ``recv`` with it)."""
    assert s.recv(1) == b""


def test_a_refused_large_body_closes_its_connection_unread(held: list[socket.socket]) -> None:
    """A key's one request in flight holds its slot (its body half sent); the key's next request, declaring a
    1.8 MB body and sending none of it, is answered 429 with ``Retry-After`` and ``Connection: close``, and the
    connection half-closed without the body."""
    with _server(max_in_flight_per_key=1) as srv:
        a = socket.create_connection(("127.0.0.1", srv.port), timeout=120)
        held.append(a)
        a.sendall(head("evil-key-1", 5000) + b"{")  # in flight: the gate reads its body
        # another key's request answered after it: the gate has taken the first one's slot by then
        with socket.create_connection(("127.0.0.1", srv.port), timeout=120) as c:
            c.sendall(head("evil-key-2", len(BODY)) + BODY)
            assert answer(c)[0] == 200
        with socket.create_connection(("127.0.0.1", srv.port), timeout=120) as s:
            s.sendall(head("evil-key-1", BIG))
            status, headers, _ = answer(s)
            assert status == 429 and int(headers["retry-after"]) >= 1
            assert headers.get("connection") == "close"
            _closed_unread(s)


def test_a_refused_small_body_keeps_its_connection() -> None:
    """A refusal of a small body (in the server's buffer already) keeps the connection: a client that
    reconnects costs the server more than the few bytes skipped."""
    with _server(max_in_flight_per_key=1) as srv:
        a = socket.create_connection(("127.0.0.1", srv.port), timeout=120)
        try:
            a.sendall(head("evil-key-1", 5000) + b"{")
            with socket.create_connection(("127.0.0.1", srv.port), timeout=120) as c:
                c.sendall(head("evil-key-2", len(BODY)) + BODY)
                assert answer(c)[0] == 200
            with socket.create_connection(("127.0.0.1", srv.port), timeout=120) as s:
                s.sendall(head("evil-key-1", len(BODY)) + BODY)
                status, headers, _ = answer(s)
                assert status == 429 and headers.get("connection") != "close"
                a.close()  # the slot is free: the same connection carries the next request
                for _ in range(200):  # bounded: until the server has seen the close
                    s.sendall(head("evil-key-1", len(BODY)) + BODY)
                    if answer(s)[0] == 200:
                        break
                else:
                    raise AssertionError("the refused connection never carried another request")
        finally:
            a.close()


@pytest.mark.parametrize(("key", "length", "status"), [("wrong-key", BIG, 401), ("evil-key-1", 50_000_000, 413)])
def test_an_early_401_or_413_closes_the_connection_unread(key: str, length: int, status: int) -> None:
    """An unknown key's 1.8 MB body and a body declared over ``max_body_bytes`` are answered at once with
    ``Connection: close``; neither body is read (uvicorn read both to their declared end before)."""
    with _server() as srv, socket.create_connection(("127.0.0.1", srv.port), timeout=120) as s:
        s.sendall(head(key, length))
        got, headers, _ = answer(s)
        assert got == status and headers.get("connection") == "close"
        _closed_unread(s)


def test_a_connection_answered_early_is_half_closed_and_not_read() -> None:
    """The protocol's close of a connection whose body is still coming: reading stops, the output is ended
    after the answer (a half-close), and the real close waits ``unread_linger_s``."""
    import asyncio

    import h11

    from admit.service.server import ServerLimits, guarded_protocol

    calls: list[str] = []

    class Raw:
        def is_closing(self) -> bool:
            return False

        def pause_reading(self) -> None:
            calls.append("pause")

        def can_write_eof(self) -> bool:
            return True

        def write_eof(self) -> None:
            calls.append("eof")

        def close(self) -> None:
            calls.append("close")

    class Conn:
        their_state = h11.SEND_BODY

    later: list[float] = []
    real = asyncio.new_event_loop()

    class Loop:
        def call_later(self, delay: float, fn: Any) -> asyncio.TimerHandle:
            later.append(delay)
            return real.call_later(delay, fn)

    proto = guarded_protocol(ServerLimits(unread_linger_s=2.5))
    p = object.__new__(proto)
    p._raw, p.conn, p.loop = Raw(), Conn(), Loop()
    from admit.service.server import _Transport

    p.transport = _Transport(p._raw, p._close_unread)
    p.transport.close()
    assert calls == ["pause", "eof"] and later == [2.5]
    assert p.transport.is_closing()  # uvicorn reads no more, nor resumes reading
    p.data_received(b"x" * 65536)  # whatever still arrives is dropped, never parsed
    real.close()


def test_a_refusal_that_closes_stops_reading_before_its_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused large body waits its ``Retry-After`` before the answer (no slot held), but the server read on
    meanwhile into the request's buffer (up to 320 KB a connection, 8 x 66 connections under ``bodies:8``): the
    gate now has the server stop reading it and drop what it read before the wait."""
    import asyncio

    import anyio

    from admit.service.admission import Refusal
    from admit.service.gate import Gate

    events: list[str] = []

    async def no_sleep(s: float) -> None:
        events.append("wait")

    monkeypatch.setattr(anyio, "sleep", no_sleep)
    gate = Gate(lambda *a: None, keyring=lambda: None, max_body_bytes=1000)  # type: ignore[arg-type,return-value]
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    why = Refusal("tenant", "too many body bytes of this tenant in flight", 2)
    asyncio.run(gate._refuse(send, why, close=True, unread=lambda: events.append("unread")))
    assert events == ["unread", "wait"]
    assert dict(sent[0]["headers"])[b"connection"] == b"close"
    events.clear()
    asyncio.run(gate._refuse(send, why, unread=lambda: events.append("unread")))  # kept alive: read on
    assert events == ["wait"]


def test_the_server_stops_reading_a_refused_request_and_drops_its_body() -> None:
    from admit.service.server import ServerLimits, guarded_protocol

    paused: list[bool] = []

    class Flow:
        def pause_reading(self) -> None:
            paused.append(True)

    class Cycle:
        body = bytearray(b"x" * 300_000)

    p = object.__new__(guarded_protocol(ServerLimits()))
    p.flow, p.cycle = Flow(), Cycle()
    p._stop_reading()
    assert paused == [True] and p.cycle.body == bytearray()

"""Issue 47 (Serving VII): ``/healthz`` on a kept-alive connection does not wait for the event loop.

The probe was answered where its bytes were read, but the event loop read them in its turn, behind every other
connection's reads, refusals and answers: ``/healthz`` p99 100-907 ms under ``bench_fairness.py``'s
``flood:17,bodies:8`` while the answer took 0.2-6 ms at the server. A connection that has carried only probes
is now served by a thread of its own (:mod:`admit.service.probes`); anything else on it goes back to the loop.
Real server on a free loopback port, waited for on ``/readyz``; the loop is held by an event, not a clock.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import pytest

from tests.security._rawhttp import BODY, answer, loopback_server

PROBE = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
KEYS = {"quiet": {"key_env": "K_QUIET", "tenant": "acme"}}
ENV = {"K_QUIET": "quiet-key"}


def _server(**limits: Any) -> Any:
    return loopback_server(KEYS, ENV, **limits)


def test_a_probe_is_answered_while_the_event_loop_is_held() -> None:
    """The server's event loop is held (a callback waits on an event); a probe on a connection that carried a
    probe before is answered meanwhile, with the headers every answer carries."""
    with _server() as srv, socket.create_connection(("127.0.0.1", srv.port), timeout=120) as s:
        s.sendall(PROBE)
        assert answer(s)[0] == 200
        loop = srv._server.servers[0].get_loop()
        release = threading.Event()
        loop.call_soon_threadsafe(release.wait, 120)
        try:
            s.settimeout(60)  # bounded: a probe that waits for the loop is never answered while it is held
            for _ in range(3):
                s.sendall(PROBE)
                status, headers, body = answer(s)
                assert status == 200 and json.loads(body)["status"] == "ok"
                assert headers["x-content-type-options"] == "nosniff" and "content-security-policy" in headers
            assert not release.is_set()
        finally:
            release.set()


def test_a_probe_connection_that_carries_anything_else_goes_back_to_the_loop() -> None:
    """Probes, then a ``/v1`` request and ``/metrics`` on the same connection: served as on any connection, and
    probes after them still answered."""
    with _server() as srv, socket.create_connection(("127.0.0.1", srv.port), timeout=120) as s:
        for _ in range(2):
            s.sendall(PROBE)
            assert answer(s)[0] == 200
        head = (
            "POST /v1/prune HTTP/1.1\r\nHost: x\r\nX-API-Key: quiet-key\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(BODY)}\r\n\r\n"
        )
        s.sendall(head.encode() + BODY)
        status, _, body = answer(s)
        assert status == 200 and json.loads(body)["decisions"]
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer(s)[0] == 200
        s.sendall(PROBE)
        assert answer(s)[0] == 200


@pytest.mark.parametrize(
    ("data", "probe"),
    [
        (PROBE, True),
        (b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n", True),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", False),
        (b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n", False),
        (b"GET /healthz?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", False),
        (b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n", False),
        (b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", False),
        (PROBE + PROBE, False),  # pipelined: the loop serves both, in order
        (PROBE[:-2], False),  # in pieces
    ],
)
def test_what_the_probe_thread_answers_itself(data: bytes, probe: bool) -> None:
    from admit.service.probes import is_probe

    assert is_probe(data, b"/healthz") is probe

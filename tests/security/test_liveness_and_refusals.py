"""Issue 47, ``/healthz`` under every flood: the probe is answered at the ASGI layer before any middleware.

Every server here runs on a free loopback port and is waited for on ``/readyz``; nothing reads the clock.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

pytest.importorskip("fastapi")

import httpx

from admit.service import gate as gate_module
from admit.service.config import settings_from_dict
from admit.service.http import create_app
from admit.service.loopback import LoopbackServer
from admit.service.server import ServerLimits

KEYS = {"evil": {"key_env": "K_EVIL", "tenant": "evil"}, "quiet": {"key_env": "K_QUIET", "tenant": "acme"}}
ENV = {"K_EVIL": "evil-key", "K_QUIET": "quiet-key"}
SLOW = ServerLimits(header_timeout_s=300, body_timeout_s=300, max_connections=500, keep_alive_s=300)


def _app(**limits: Any) -> Any:
    settings = settings_from_dict({"service": {"limits": {"worker_processes": 0, **limits}, "keys": KEYS}})
    return create_app(settings, environ=ENV)


def _head(key: str, length: int) -> bytes:
    return (
        f"POST /v1/pack HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def _pending(port: int, n: int, held: list[socket.socket], state: Any) -> None:
    """``n`` requests (100 kB each) whose headers are in and whose bodies never come: each sits in the gate."""
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.sendall(_head("evil-key", 100_000) + b'{"question": ')
        held.append(s)
    import time

    for _ in range(600):  # bounded: until the gate holds every one of them
        if state.admission.in_flight() >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{state.admission.in_flight()} requests in the gate, expected {n}")


def test_healthz_is_answered_before_every_middleware_while_the_gate_holds_pending_bodies(
    held: list[socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    entered: list[str] = []
    real = gate_module.Gate.__call__

    async def spy(self: Any, scope: Any, receive: Any, send: Any) -> None:
        entered.append(str(scope.get("path")))
        await real(self, scope, receive, send)

    monkeypatch.setattr(gate_module.Gate, "__call__", spy)
    app = _app(max_in_flight_per_tenant=64, max_in_flight_per_key=64)
    state = app.state.admit
    with LoopbackServer(app, limits=SLOW, ready_path="/readyz") as srv:
        _pending(srv.port, 12, held, state)
        entered.clear()
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            answers = [c.get("/healthz") for _ in range(5)]
            head = c.head("/healthz")
            metrics = c.get("/metrics").text
    assert "/healthz" not in entered, entered  # no probe went through the gate (nor anything inside it)
    assert [r.status_code for r in answers] == [200] * 5 and head.status_code == 200
    assert answers[0].json()["status"] == "ok" and answers[0].json()["ready"] is True
    assert answers[0].headers["x-content-type-options"] == "nosniff"
    assert "default-src 'none'" in answers[0].headers["content-security-policy"]
    assert 'admit_http_requests_total{method="GET",route="/healthz",status="200"} 5.0' in metrics
    assert state.admission.in_flight() == 12  # the pending bodies were still held while it answered

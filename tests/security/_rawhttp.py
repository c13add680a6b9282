"""Raw-socket HTTP helpers the serving tests share: a loopback server with slow client timeouts, a request head
written by hand and an answer read off the socket (the tests control exactly what is sent and when)."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

import pytest

BODY = b'{"question": "What is alpha?", "candidates": [{"id": "a", "text": "alpha is a letter"}]}'


def loopback_server(keys: Mapping[str, Any], env: Mapping[str, str], **limits: Any) -> Any:
    """A loopback server of the HTTP app with ``keys`` (their secrets in ``env``) and ``limits`` in
    ``[service.limits]``, no worker processes, and client timeouts long enough that a busy machine cannot end a
    connection the test holds open on purpose."""
    pytest.importorskip("fastapi")
    from admit.service.config import settings_from_dict
    from admit.service.http import create_app
    from admit.service.loopback import LoopbackServer
    from admit.service.server import ServerLimits

    settings = settings_from_dict({"service": {"limits": {"worker_processes": 0, **limits}, "keys": dict(keys)}})
    slow = ServerLimits(header_timeout_s=300, body_timeout_s=300, max_connections=500, keep_alive_s=300)
    return LoopbackServer(create_app(settings, environ=dict(env)), limits=slow, ready_path="/readyz")


def head(key: str, length: int, path: str = "/v1/prune") -> bytes:
    """The head of a ``POST`` to ``path`` of ``length`` body bytes with the API key ``key``."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def answer(s: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One answer read off ``s``: its status, its headers (lower-case names) and its body."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        part = s.recv(65536)
        if not part:
            break
        raw += part
    top, _, rest = raw.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    want = int(headers.get("content-length", "0"))
    while len(rest) < want:
        part = s.recv(65536)
        if not part:
            break
        rest += part
    return int(lines[0].split()[1]), headers, rest

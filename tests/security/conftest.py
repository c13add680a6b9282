"""Fixtures the security tests share."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture()
def held() -> Iterator[list[socket.socket]]:
    """Sockets a test holds open on purpose, closed when it ends."""
    socks: list[socket.socket] = []
    yield socks
    for s in socks:
        s.close()

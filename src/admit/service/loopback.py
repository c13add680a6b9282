"""Run an ASGI app with uvicorn on a free loopback port, in a background thread (tests, benchmarks)."""

from __future__ import annotations

import time
from typing import Any

from admit.errors import BackendTimeout

__all__ = ["LoopbackServer"]


class LoopbackServer:
    """Run an ASGI app with uvicorn in a background thread on a free loopback port (tests, benchmarks).

    Example:
        >>> with LoopbackServer(create_app()) as srv:  # doctest: +SKIP
        ...     httpx.get(f"{srv.url}/healthz").json()["status"]
        'ok'
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        startup_timeout_s: float = 20.0,
        ready_path: str | None = "/healthz",
        limits: Any = None,
    ) -> None:
        """Prepare the server; it starts on ``__enter__``.

        ``ready_path`` is polled until it answers 200 (``/readyz`` waits for the models); ``None`` waits for
        any HTTP answer (an app without a health route). ``limits``: the server's
        :class:`~admit.service.server.ServerLimits` (default: the app's settings', else the defaults).
        """
        self.limits = limits
        self.app = app
        self.host = host
        self.ready_path = ready_path
        self.port = 0
        self.startup_timeout_s = startup_timeout_s
        self._server: Any = None
        self._thread: Any = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321``."""
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> LoopbackServer:
        """Bind a free port, start uvicorn (with the app's lifespan), and wait (bounded) until it answers."""
        import dataclasses
        import socket
        import threading

        import httpx

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        from admit.service.server import GuardedServer, ServerLimits, uvicorn_config

        limits = self.limits
        if limits is None:
            state = getattr(getattr(self.app, "state", None), "admit", None)
            limits = ServerLimits.from_settings(state.settings) if state is not None else ServerLimits()
            limits = dataclasses.replace(limits, probe_process=False)  # in-process: a helper only when asked
        config = uvicorn_config(
            self.app, host=self.host, limits=limits, log_level="warning", access_log=False, lifespan="on"
        )
        self._server = GuardedServer(config, limits)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            try:
                r = httpx.get(f"{self.url}{self.ready_path or '/'}", timeout=1.0)
                if self.ready_path is None or r.status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.__exit__(None, None, None)
                raise BackendTimeout(f"server on {self.url} did not answer in {self.startup_timeout_s}s")
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        """Ask uvicorn to exit and join its thread (bounded)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

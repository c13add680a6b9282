"""Helpers for tests that drive the real ``admit`` command: a subprocess runner and a live ``admit serve``."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
ADMIT = [sys.executable, "-c", "from admit.cli import main; main()"]
"""The ``admit`` console script's entry point, run by this interpreter (the worktree's ``admit``)."""

START_S = 600.0
"""How long a server may take to load its models: generous, so a busy machine cannot fail a test."""


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env(**extra: str) -> dict[str, str]:
    """The environment of a child ``admit``: offline, wide output, no principal or KB from the caller's shell."""
    out = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "200", **extra}
    for name in ("ADMIT_PRINCIPAL", "ADMIT_KB", "ADMIT_CONFIG", "ADMIT_POLICY", "ADMIT_TRACE_FILE"):
        out.pop(name, None)
    return out


def admit(
    *args: str, stdin: str | None = None, cwd: Path = REPO, extra_env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``admit ARGS`` as a new process and wait for it."""
    return subprocess.run(
        [*ADMIT, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env(**dict(extra_env or {})),
        cwd=cwd,
        check=False,
    )


def wait_ready(url: str, proc: subprocess.Popen[bytes] | None = None, *, path: str = "/readyz") -> None:
    """Wait until ``url + path`` answers 200 (the models are loaded); fail if the process exits first."""
    deadline = time.monotonic() + START_S
    while True:
        try:
            if httpx.get(url + path, timeout=30).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise AssertionError(f"the server exited with {proc.returncode}: {err[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{url}{path} did not answer 200 within {START_S:.0f} s")
        time.sleep(0.2)


@contextlib.contextmanager
def serve(
    args: Sequence[str],
    *,
    port: int,
    cwd: Path = REPO,
    extra_env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> Iterator[str]:
    """Run ``admit serve ARGS --port PORT`` until the block ends; yield its URL once ``/readyz`` says ready
    (``python``: the interpreter, e.g. a virtual environment's)."""
    proc = subprocess.Popen(
        [python, *ADMIT[1:], "serve", *args, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env=env(**dict(extra_env or {})),
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        yield url
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate a child server and reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr:
        proc.stderr.close()

